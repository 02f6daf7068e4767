"""``tiered-agent bench``: replay recorded runs through every context policy and report.

Importing this module must stay cheap (the CLI's ``--help`` imports it): only
click here; the replay, rich and matplotlib are imported when the command runs.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import BrokenExecutor
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from .._text import terminal_safe
from ._options import CACHE_MODEL_CHOICES, EXIT_FAILED, EXIT_USAGE

if TYPE_CHECKING:
    from .._files import OutputFiles
    from ..bench._fleet import Fleet
    from ..bench._replay import ReplaySettings
    from ..bench._shard import Shard
    from ..bench._stream import Streamed

__all__ = ["bench"]

_TOKENIZERS = ("o200k_base", "cl100k_base")
# tiered_agent.bench._replay.ROUTINGS, spelled out for the same reason
_ROUTINGS = ("recorded", "sticky")
_RUN_DETAIL = ("jsonl", "inline", "none")


def _policy_names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    from ..bench._replay import available_policies

    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in available_policies()]
    if not names or unknown:
        what = f"unknown policy {', '.join(map(repr, unknown))}" if unknown else "no policy given"
        raise click.BadParameter(
            f"{what}; choose from {', '.join(available_policies())}", param_hint="--policies"
        )
    return names


class _BenchCommand(click.Command):
    """``bench PATHS...`` replays; ``bench merge SHARDS...`` goes to :data:`merge` and ``bench prompts
    PATHS...`` to :data:`~._bench_prompts.prompts` (a folder or file named ``merge`` or ``prompts`` is
    still a path when written as ``./merge``)."""

    def make_context(
        self,
        info_name: str | None,
        args: list[str],
        parent: click.Context | None = None,
        **extra: Any,
    ) -> click.Context:
        if args[:1] == ["merge"]:
            return merge.make_context(f"{info_name or 'bench'} merge", args[1:], parent=parent, **extra)
        if args[:1] == ["prompts"]:
            from ._bench_prompts import prompts

            return prompts.make_context(f"{info_name or 'bench'} prompts", args[1:], parent=parent, **extra)
        return super().make_context(info_name, args, parent=parent, **extra)


_DETAIL_HELP = (
    "Where each run's detail (per policy its totals and per-step series: the document's runs[]) goes: "
    "jsonl, a file beside the JSON (<stem>.runs.jsonl); inline, inside it; none, left out."
)

# The outputs of a bench and of a merge of shards (the same files, in the same places).
_JSON_OPTION = click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the results as JSON (default: OUT/bench.json; schema: docs/bench-json-schema.md).",
)
_OUT_OPTION = click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("bench-out"),
    show_default=True,
    help="Folder for report.md and the charts.",
)
_DETAIL_OPTION = click.option(
    "--run-detail",
    "run_detail",
    type=click.Choice(_RUN_DETAIL),
    default="jsonl",
    show_default=True,
    help=_DETAIL_HELP,
)


@click.command(
    "bench",
    cls=_BenchCommand,
    epilog="tiered-agent bench merge SHARD.json... combines shards (docs/fleet.md); tiered-agent bench "
    "prompts PATHS -o FILE writes the prompts a policy builds, for rulers of your own (docs/cli.md).",
)
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--policies",
    "policies_opt",
    metavar="A,B,...",
    help="Comma-separated policies to replay (default: all presets and the tiered ablations).",
)
@_JSON_OPTION
@_OUT_OPTION
@click.option("--tokenizer", type=click.Choice(_TOKENIZERS), default="o200k_base", show_default=True)
@click.option(
    "--cache-discount",
    type=click.FloatRange(0, 1),
    default=0.1,
    show_default=True,
    help="Price of a cached input token relative to an uncached one.",
)
@click.option(
    "--context-window",
    type=click.IntRange(min=1),
    default=128_000,
    show_default=True,
    help="Nominal context window (tokens) for window-relative thresholds.",
)
@click.option(
    "--output-price-ratio",
    type=click.FloatRange(min=0),
    default=4.0,
    show_default=True,
    help="Price of an output token relative to an uncached input token.",
)
@click.option(
    "--summary-model",
    help="Summarize with this litellm model instead of the offline digest (the default, also "
    "'digest'); its tokens are counted (needs the provider's API key and network).",
)
@click.option(
    "--strict",
    is_flag=True,
    help="Fail (exit 1) on an unreadable or unconvertible input file, or a run without model calls, "
    "instead of skipping it with a warning; on any context step that raised during the replay "
    "(step_errors; skipped for that prompt, with a warning, otherwise); and on a run whose replay "
    "failed (left out of the totals, with a warning, otherwise).",
)
@click.option(
    "--cache-model",
    type=click.Choice(CACHE_MODEL_CHOICES),
    default="auto",
    show_default=True,
    help="Provider prompt-cache rules to simulate; auto: those of the model each run is priced as "
    "(--price-model, else its recorded model; unknown models get openai's); ideal: every token of the "
    "longest common prefix.",
)
@click.option(
    "--price-model",
    metavar="MODEL",
    help="Price every run in USD as this litellm model (default: each run as its recorded model, "
    "where litellm's bundled price map knows it).",
)
@click.option(
    "--routing",
    type=click.Choice(_ROUTINGS),
    default="recorded",
    show_default=True,
    help="Which endpoint's cache serves each model call of runs whose router recorded it (OpenRouter's "
    "provider): the recorded one, or sticky: the endpoint of the run's first call for every call (what "
    "pinning the endpoint would have saved).",
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Worker processes (0: automatic, at most 2); with --ray, the runs in flight (0: twice the "
    "cluster's CPUs).",
)
@click.option(
    "--shard",
    "shard_opt",
    metavar="K/N",
    help="Replay only shard K of N (1 <= K <= N): a deterministic 1/N of the runs, chosen by a hash of "
    "each run's id, the same on every machine (docs/fleet.md).",
)
@click.option(
    "--ray",
    "ray_opt",
    is_flag=False,
    flag_value="local",
    metavar="[ADDRESS]",
    help="Replay on Ray: 'local' (the default value) starts Ray on this machine; HOST:PORT, ray://HOST:PORT "
    "or 'auto' joins a cluster. Needs the ray extra.",
)
@_DETAIL_OPTION
def bench(
    *,
    paths: tuple[Path, ...],
    policies_opt: str | None,
    json_path: Path | None,
    out_dir: Path,
    tokenizer: str,
    cache_discount: float,
    context_window: int,
    output_price_ratio: float,
    workers: int,
    summary_model: str | None,
    strict: bool,
    cache_model: str,
    price_model: str | None,
    routing: str,
    shard_opt: str | None,
    ray_opt: str | None,
    run_detail: str,
) -> None:
    """Replay recorded agent runs (PATH: files or folders; default: the bundled traces) through the
    context policies and report tokens, cost with prompt caching, and the information each one hid."""
    names = _policy_names(policies_opt)
    _check_price_model(price_model)
    fleet = _fleet(shard_opt, ray_opt)
    _check_outputs(json_path, out_dir, run_detail)
    from .._errors import TieredAgentError
    from ..bench._replay import ReplaySettings

    try:
        model = None if summary_model in (None, "digest") else summary_model  # None: the offline digest
        settings = ReplaySettings(
            tokenizer,
            context_window,
            cache_discount,
            output_price_ratio,
            model,
            cache_model=cache_model,
            price_model=price_model,
            routing=routing,
        )
        errors, failed = _run(
            paths,
            names,
            settings,
            json_path=json_path,
            out_dir=out_dir,
            workers=workers,
            strict=strict,
            fleet=fleet,
            run_detail=run_detail,
        )
    except BrokenPipeError:
        raise  # stdout's reader went away once every file was written: a quiet 141 (_process)
    except (TieredAgentError, OSError) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    except BrokenExecutor:
        click.echo("Error: a replay worker process died (out of memory?); rerun with --workers 1.", err=True)
        sys.exit(EXIT_FAILED)
    _say_step_errors(errors, strict=strict)
    _say_failed_runs(failed, strict=strict)
    if (errors or failed) and strict:
        sys.exit(EXIT_FAILED)


def _say_step_errors(errors: Mapping[str, int], *, strict: bool = False) -> None:
    """One line on stderr when context steps raised in the replay (an error under --strict)."""
    if not errors:
        return
    counts = ", ".join(f"{name} {count}" for name, count in errors.items())
    click.echo(
        f"{'Error' if strict else 'Warning'}: {sum(errors.values())} context step error(s) in the "
        f"replay ({counts}); each step was skipped for that prompt; see each run's "
        "policies[].step_error_list in the per-run detail (the bench JSON's runs_file, or its runs).",
        err=True,
    )


def _say_failed_runs(failed: Sequence[Mapping[str, Any]], *, strict: bool = False) -> None:
    """One line on stderr when runs' replays raised (each left out; an error under --strict)."""
    if not failed:
        return
    first = failed[0]
    click.echo(
        f"{'Error' if strict else 'Warning'}: the replay of {len(failed)} run(s) failed and "
        f"{'was' if len(failed) == 1 else 'were'} left out of the totals (inputs.failed in the bench "
        f"JSON; the first: {terminal_safe(repr(first['run_id']))}: {terminal_safe(first['reason'])}).",
        err=True,
    )


def _check_outputs(json_path: Path | None, out_dir: Path, run_detail: str) -> None:
    """Every file the bench will write can be (a regular file or none yet, in a folder that takes a
    new file): else one sentence and exit 2, before the replay rather than after it."""
    from .._errors import ConfigurationError
    from .._files import OutputFiles
    from ..bench._detail import runs_file_for

    json_path = json_path or out_dir / "bench.json"
    finals = [json_path, out_dir / "report.md", out_dir / "bench.png", out_dir / "frontier.png"]
    try:
        for final in [*finals, *([runs_file_for(json_path)] if run_detail == "jsonl" else [])]:
            OutputFiles.check(final)
    except ConfigurationError as exc:
        click.echo(f"Error: {exc}.", err=True)
        sys.exit(EXIT_USAGE)


def _check_price_model(price_model: str | None) -> None:
    """An unknown --price-model is a usage error: one sentence, exit code 2."""
    if price_model is None:
        return
    from .._providers import model_prices

    if model_prices(price_model) is None:
        click.echo(
            f"Error: litellm's price map has no model {price_model!r}, so --price-model cannot price "
            "the runs (try a name such as claude-sonnet-4-5 or gpt-5).",
            err=True,
        )
        sys.exit(EXIT_USAGE)


def _fleet(shard: str | None, ray: str | None) -> Fleet:
    """``--shard`` and ``--ray``, checked before anything is loaded (a mistake: one sentence, exit 2)."""
    from .._errors import ConfigurationError
    from ..bench._fleet import Fleet

    try:
        return Fleet.of(shard, ray)
    except ConfigurationError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)


def _run(
    paths: Sequence[Path],
    names: list[str] | None,
    settings: ReplaySettings,
    *,
    json_path: Path | None,
    out_dir: Path,
    workers: int,
    strict: bool = False,
    fleet: Fleet | None = None,
    run_detail: str = "jsonl",
) -> tuple[dict[str, int], list[dict[str, Any]]]:
    """Replay and write the outputs; the policies whose steps raised, with how many times, and
    the runs whose replay failed (``inputs.failed``)."""
    from ..bench._bundle import bundled_trace_paths
    from ..bench._fleet import Fleet
    from ..bench._replay import resolve_policies

    inputs = list(paths) or bundled_trace_paths()
    policies = resolve_policies(names)
    fleet = fleet or Fleet()
    json_path = json_path or out_dir / "bench.json"
    warming = _warm_charts()
    try:
        with _progress() as (on_start, on_run):
            from ..bench._stream import stream_bench

            streamed = stream_bench(
                inputs,
                policies,
                settings,
                workers=workers,
                strict=strict,
                shard=fleet.shard,
                ray=fleet.ray,
                detail=run_detail != "none",
                detail_dir=json_path.parent,
                on_start=on_start,
                on_run=on_run,
            )
    finally:
        warming.join()
    with streamed:
        if streamed.note:
            click.echo(streamed.note, err=True)
        document = _write_outputs(streamed, json_path, out_dir, run_detail, fleet.shard)
    from ..bench._report import step_error_counts

    return step_error_counts(document), list(document["inputs"]["failed"])


def _warm_charts() -> threading.Thread:
    """Import matplotlib (about a second) in a thread while the replay runs, mostly waiting for its
    workers, so the report at the end does not wait for it. Without matplotlib nothing is imported
    and :func:`_charts` says so."""

    def warm() -> None:
        from ..bench._chart import pyplot

        try:
            pyplot()
        except ImportError:
            return  # the charts extra is not installed: _charts reports it

    thread = threading.Thread(target=warm, name="bench-charts-import", daemon=True)
    thread.start()
    return thread


@contextmanager
def _progress() -> Iterator[tuple[Callable[[int], None], Callable[[int], None]]]:
    """A progress bar on stderr over the steps to replay: ``(on_start(total), on_run(steps))``."""
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    columns = (
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("steps"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("replay", total=None)

        def start(total: int) -> None:
            progress.update(task, total=total)

        def advance(steps: int) -> None:
            progress.advance(task, steps)

        yield start, advance


def _write_outputs(
    streamed: Streamed, json_path: Path, out_dir: Path, run_detail: str, shard: Shard | None = None
) -> dict[str, Any]:
    """bench.json (its runs inline or in the file beside it), report.md, the charts, then the
    tables; returns the document (its runs left out when they went to the detail file).

    The files are written whole or not at all (:class:`~.._files.OutputFiles`): a full disk or a
    signal leaves the previous bench's files as they were, never one half-written. They are written
    before anything is printed, so a reader of stdout that goes away (``| head``) costs nothing."""
    from .._files import OutputFiles
    from ..bench._detail import runs_file_for, write_document
    from ..bench._merge import SHARD_KEY, shard_section
    from ..bench._report import Highlights, render_markdown

    document = streamed.aggregate.document()
    if shard is not None:
        document[SHARD_KEY] = shard_section(shard.index, shard.count, streamed.aggregate)
    detail = streamed.detail
    runs_path = runs_file_for(json_path) if detail is not None and run_detail == "jsonl" else None
    with OutputFiles() as files:
        if detail is not None and runs_path is not None:
            _written(runs_path, detail.write_jsonl, files.partial(runs_path))
            document["runs_file"] = runs_path.name
        highlights = Highlights.of(document, detail.entries() if detail is not None else ())
        charts = _charts(document, out_dir, highlights.longest, files)
        report = out_dir / "report.md"
        names = {key: path.name for key, path in charts.items()}
        markdown = render_markdown(document, names.get("chart"), names.get("frontier"), highlights)
        _written(report, functools.partial(_write_text, markdown), files.partial(report))
        inline = detail.lines() if detail is not None and run_detail == "inline" else None
        write = functools.partial(write_document, document, runs=inline)
        _written(json_path, write, files.partial(json_path))
        files.commit()
    written = [report, *charts.values(), json_path, *([runs_path] if runs_path else [])]
    _print_tables(document, written, charts_drawn=bool(charts))
    return document


def _write_text(text: str, path: Path) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def _written(final: Path, write: Callable[[Path], object], partial: Path) -> Path:
    """``write(partial)``, the partial file of the output ``final``; a write that fails (a full
    disk, a file too large) is one sentence naming ``final``."""
    from .._errors import OutputWriteError

    try:
        write(partial)
    except OSError as exc:
        raise OutputWriteError(
            f"cannot write {final} ({exc.strerror or exc}); the files an earlier bench wrote there are "
            "kept as they were"
        ) from None
    return final


def _print_tables(document: Mapping[str, Any], written: Sequence[Path], *, charts_drawn: bool) -> None:
    from .._terminal import TerminalConsole
    from ..bench._report import render_family_table, render_table

    console = TerminalConsole()
    if not console.is_terminal:  # piped or captured: do not squeeze the table into 80 columns
        console = TerminalConsole(width=160)
    console.print(render_table(document))
    if len(document["families"]) > 1:
        console.print(render_family_table(document))
    console.print("wrote " + ", ".join(str(p) for p in written))
    if not charts_drawn:
        console.print(f"no charts: {CHARTS_MISSING}", style="yellow", markup=False)


CHARTS_MISSING = (
    'matplotlib is not installed; pip install "tiered-agent[charts]" to get bench.png and frontier.png'
)


def _charts(
    document: Mapping[str, Any], out_dir: Path, run: Mapping[str, Any] | None, files: OutputFiles
) -> dict[str, Path]:
    """``{"chart": bench.png, "frontier": frontier.png}`` (drawn into ``files``' partial names)
    when matplotlib (the charts extra) is installed, else nothing (the report then has no
    pictures); ``run``: the one drawn step by step."""
    try:
        import matplotlib  # noqa: F401 - only whether it is there
    except ImportError:
        return {}
    from ..bench._chart import draw_charts, write_chart
    from ..bench._frontier import write_frontier

    chart, frontier = out_dir / "bench.png", out_dir / "frontier.png"
    drawings: dict[str, tuple[Callable[[], Path], Path]] = {
        "chart": (_drawing(chart, functools.partial(write_chart, document, run=run), files), chart),
        "frontier": (_drawing(frontier, functools.partial(write_frontier, document), files), frontier),
    }
    draw_charts(drawings)
    return {"chart": chart, "frontier": frontier}


def _drawing(final: Path, draw: Callable[[Path], Path], files: OutputFiles) -> Callable[[], Path]:
    """Draws ``final``'s chart into its partial file (in a forked child, or here again)."""
    return functools.partial(_written, final, draw, files.partial(final))


@click.command("merge")
@click.argument("shards", nargs=-1, required=True, type=click.Path(dir_okay=False, path_type=Path))
@_JSON_OPTION
@_OUT_OPTION
@_DETAIL_OPTION
def merge(*, shards: tuple[Path, ...], json_path: Path | None, out_dir: Path, run_detail: str) -> None:
    """Combine the documents of every shard of one bench (SHARDS: the --json of each --shard K/N, with
    their per-run detail files beside them) into the document, report and charts the unsharded bench
    writes."""
    from .._errors import TieredAgentError
    from ..bench._merge import merge_shards

    _check_outputs(json_path, out_dir, run_detail)
    json_path = json_path or out_dir / "bench.json"
    try:
        merged = merge_shards(list(shards), detail=run_detail != "none", detail_dir=json_path.parent)
    except TieredAgentError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    try:
        with merged:
            document = _write_outputs(merged, json_path, out_dir, run_detail)
    except BrokenPipeError:
        raise  # stdout's reader went away once every file was written: a quiet 141 (_process)
    except (TieredAgentError, OSError) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    from ..bench._report import step_error_counts

    _say_step_errors(step_error_counts(document))  # the shards' own runs failed on them under --strict
    _say_failed_runs(document["inputs"].get("failed", []))
