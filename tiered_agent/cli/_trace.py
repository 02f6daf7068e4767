"""``tiered-agent trace``: inspect recorded runs (``show``, ``stats``, ``html``).

Importing this module must stay cheap (``tiered-agent --help`` imports it):
only click here; rich and the views are imported when a command runs.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

if TYPE_CHECKING:
    from rich.console import Console

    from ..inspect._view import RunView

__all__ = ["trace"]

_EXISTING = click.Path(exists=True, path_type=Path)


@click.group("trace")
def trace() -> None:
    """Inspect recorded runs: per-iteration tables, totals across runs, a self-contained HTML page."""


def _consoles() -> tuple[Console, Console]:
    """stdout and stderr consoles that print a trace's control characters as escapes; a warning on
    stderr is never cut into lines (it names a file, whatever its length)."""
    from .._terminal import TerminalConsole

    return TerminalConsole(highlight=False), TerminalConsole.for_cli(stderr=True)


def _newest(folder: Path) -> Path:
    from ..inspect._load import find_traces

    found = find_traces([folder])
    if not found:
        raise click.UsageError(f"{folder} holds no trace (*.jsonl) files.")
    return max(found, key=lambda p: (p.stat().st_mtime, p.name))


def _read_run(path: Path, err: Console) -> RunView:
    """The run in ``path`` (a folder: its newest trace); one warning for what could not be read."""
    from rich.markup import escape

    from .._errors import TraceFormatError
    from ..inspect._load import load_trace
    from ..inspect._view import build_run

    if path.is_dir():
        path = _newest(path)
    try:
        loaded = load_trace(path)
    except TraceFormatError as exc:
        raise click.UsageError(str(exc)) from None
    if not loaded.is_trace:
        raise click.UsageError(f"{path} is not a tiered_agent trace (no run_start or model_request event).")
    if loaded.warning:
        err.print(f"[yellow]warning:[/] {escape(loaded.warning)}")
    return build_run(loaded)


def _echo_json(value: object) -> None:
    """``value`` as indented JSON on stdout, secrets redacted (older or imported traces may hold some)
    and the characters a terminal would act on escaped (the same JSON value)."""
    import orjson

    from .._text import json_terminal_safe
    from .._trace import redact

    data = orjson.dumps(redact(value), option=orjson.OPT_INDENT_2)
    sys.stdout.buffer.write(json_terminal_safe(data) + b"\n")
    sys.stdout.flush()


@trace.command("show")
@click.argument("path", type=_EXISTING)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
def show(path: Path, as_json: bool) -> None:
    """Per-iteration table of the run in PATH (a trace file, or a folder: its newest trace).

    Columns: tool calls, prompt tokens (provider), sent (local count), full history
    (the counterfactual), saved, truncated / masked outputs, dedup hits, summaries,
    retrievals, cost; then the run's totals.
    """
    from ..inspect._stats import iteration_dict, run_summary
    from ..inspect._tables import iteration_table, run_header, totals_table

    out, err = _consoles()
    run = _read_run(path, err)
    if as_json:
        _echo_json({**run_summary(run), "iterations": iteration_dict(run)})
        return
    out.print(run_header(run))
    out.print(iteration_table(run, width=out.width))
    out.print(totals_table(run.totals))


@trace.command("stats")
@click.argument("paths", nargs=-1, required=True, type=_EXISTING)
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")
@click.option("--runs", "per_run", is_flag=True, help="Also list each run.")
def stats(paths: tuple[Path, ...], as_json: bool, per_run: bool) -> None:
    """Totals across the runs in PATHS (trace files, or folders searched for *.jsonl).

    Runs, iterations, prompt tokens sent vs the full history, savings, cost, tool
    calls, errors and stop reasons.
    """
    from rich.markup import escape

    from ..inspect._stats import collect_stats
    from ..inspect._tables import stats_table

    out, err = _consoles()
    result = collect_stats(paths)
    for warning in result.warnings:
        err.print(f"[yellow]warning:[/] {escape(warning)}")
    if result.skipped:
        err.print(f"[yellow]skipped {len(result.skipped)} file(s) that are not traces[/]")
    if not result.runs:
        raise click.UsageError(f"no trace found in {', '.join(str(p) for p in paths)}.")
    if as_json:
        _echo_json(result.to_dict())
        return
    out.print(stats_table(result, per_run=per_run))


@trace.command("html")
@click.argument("path", type=_EXISTING)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the page (default: the trace's path with .html).",
)
@click.option(
    "--embed-chars",
    type=click.IntRange(min=200),
    default=12_000,
    show_default=True,
    help="The most characters of one message embedded in the page (its head and tail).",
)
def html(path: Path, output: Path | None, embed_chars: int) -> None:
    """Write one self-contained HTML page for the run in PATH (a trace file, or a folder: its newest).

    Inline CSS, JS and SVG; no network. Totals and savings, a chart of prompt tokens vs the
    full history, and every iteration with its messages and what the context pipeline hid.
    """
    from .._errors import ConfigurationError
    from .._files import OutputFiles
    from ..inspect._page import render_page

    out, err = _consoles()
    run = _read_run(path, err)
    target = output or run.path.with_suffix(".html")
    page = render_page(run, embed_chars=embed_chars).encode("utf-8")
    try:
        OutputFiles.check(target)  # a FIFO would block the write, a link to nothing be replaced
        with OutputFiles() as files:  # whole or not at all: an earlier page is kept on a full disk
            files.partial(target).write_bytes(page)
            files.commit()
    except ConfigurationError as exc:
        raise click.UsageError(f"{exc}.") from None
    except OSError as exc:
        raise click.UsageError(f"cannot write {target}: {exc.strerror or exc}.") from None
    out.print(f"wrote {target} ({len(page):,} bytes)", markup=False)
