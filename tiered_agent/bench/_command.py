"""``tiered-agent bench``: replay recorded runs through every context policy and report.

Importing this module must stay cheap (the CLI's ``--help`` imports it): only
click here; the replay, rich and matplotlib are imported when the command runs.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping, Sequence
from concurrent.futures import BrokenExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

if TYPE_CHECKING:
    from ..context._policy import Policy
    from ._recorded import RecordedRun
    from ._replay import ReplaySettings

__all__ = ["bench"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
_TOKENIZERS = ("o200k_base", "cl100k_base")
# tiered_agent._providers.CACHE_MODEL_NAMES, spelled out so --help does not import the providers module
_CACHE_MODELS = ("auto", "ideal", "gemini", "openai", "anthropic")
_PARALLEL_MIN_STEPS = 600  # below this, spawning worker processes costs more than it saves


def _policy_names(value: str | None) -> list[str] | None:
    if value is None:
        return None
    from ._replay import available_policies

    names = [n.strip() for n in value.split(",") if n.strip()]
    unknown = [n for n in names if n not in available_policies()]
    if not names or unknown:
        what = f"unknown policy {', '.join(map(repr, unknown))}" if unknown else "no policy given"
        raise click.BadParameter(
            f"{what}; choose from {', '.join(available_policies())}", param_hint="--policies"
        )
    return names


@click.command("bench")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, path_type=Path))
@click.option(
    "--policies",
    "policies_opt",
    metavar="A,B,...",
    help="Comma-separated policies to replay (default: all presets and the tiered ablations).",
)
@click.option(
    "--json",
    "json_path",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Where to write the results as JSON (default: OUT/bench.json; schema: docs/bench-json-schema.md).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("bench-out"),
    show_default=True,
    help="Folder for report.md and the chart.",
)
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
    "instead of skipping it with a warning; and on any context step that raised during the replay "
    "(step_errors; skipped for that prompt, with a warning, otherwise).",
)
@click.option(
    "--cache-model",
    type=click.Choice(_CACHE_MODELS),
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
    "--workers",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Worker processes (0: automatic, at most 2).",
)
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
) -> None:
    """Replay recorded agent runs (PATH: files or folders; default: the bundled traces) through the
    context policies and report tokens, cost with prompt caching, and the information each one hid."""
    names = _policy_names(policies_opt)
    _check_price_model(price_model)
    from .._errors import TieredAgentError
    from ._replay import ReplaySettings

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
        )
        errors = _run(
            paths, names, settings, json_path=json_path, out_dir=out_dir, workers=workers, strict=strict
        )
    except (TieredAgentError, OSError) as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_FAILED)
    except BrokenExecutor:
        click.echo("Error: a replay worker process died (out of memory?); rerun with --workers 1.", err=True)
        sys.exit(EXIT_FAILED)
    if errors:
        counts = ", ".join(f"{name} {count}" for name, count in errors.items())
        click.echo(
            f"{'Error' if strict else 'Warning'}: {sum(errors.values())} context step error(s) in the "
            f"replay ({counts}); each step was skipped for that prompt; see "
            "runs[].policies[].step_error_list in the bench JSON.",
            err=True,
        )
        if strict:
            sys.exit(EXIT_FAILED)


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


def _run(
    paths: Sequence[Path],
    names: list[str] | None,
    settings: ReplaySettings,
    *,
    json_path: Path | None,
    out_dir: Path,
    workers: int,
    strict: bool = False,
) -> dict[str, int]:
    """Replay and write the outputs; the policies whose steps raised, with how many times."""
    from .._errors import ConfigurationError
    from ._bundle import bundled_trace_paths
    from ._importers import load_runs
    from ._replay import resolve_policies

    inputs = list(paths) or bundled_trace_paths()
    loaded = load_runs(inputs, strict=strict)  # skipped inputs: one warning each on stderr
    runs = loaded.runs
    if not runs:
        count = len(loaded.skipped)
        note = f" ({count} input{'s' * (count != 1)} skipped, see the warnings)" if count else ""
        raise ConfigurationError(f"no recorded runs found in {', '.join(str(p) for p in inputs)}{note}")
    policies = resolve_policies(names)
    steps = sum(r.steps for r in runs)
    if workers == 0:
        workers = min(2, os.cpu_count() or 1) if steps >= _PARALLEL_MIN_STEPS else 1
    skipped = [s.to_dict() for s in loaded.skipped]
    document = _replay_with_progress(
        runs, policies, settings, workers, [str(p) for p in inputs], skipped=skipped
    )
    _write_outputs(document, json_path, out_dir)
    from ._report import step_error_counts

    return step_error_counts(document)


def _replay_with_progress(
    runs: Sequence[RecordedRun],
    policies: Mapping[str, Policy],
    settings: ReplaySettings,
    workers: int,
    paths: Sequence[str],
    *,
    skipped: Sequence[Mapping[str, str]] = (),
) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ._replay import RunInfo, replay_runs
    from ._report import build_document

    steps = sum(r.steps for r in runs)
    columns = (
        TextColumn("replaying"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("steps"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task("replay", total=steps)

        def advance(info: RunInfo) -> None:
            progress.advance(task, info.steps)

        result = replay_runs(runs, policies, settings, workers=workers, on_progress=advance)
    return build_document(result, paths, skipped)


def _write_outputs(document: Mapping[str, Any], json_path: Path | None, out_dir: Path) -> None:
    from rich.console import Console

    from ._chart import write_chart
    from ._frontier import write_frontier
    from ._report import render_family_table, render_markdown, render_table, write_json

    console = Console()
    if not console.is_terminal:  # piped or captured: do not squeeze the table into 80 columns
        console = Console(width=160)
    console.print(render_table(document))
    if len(document["families"]) > 1:
        console.print(render_family_table(document))
    out_dir.mkdir(parents=True, exist_ok=True)
    chart = write_chart(document, out_dir / "bench.png")
    frontier = write_frontier(document, out_dir / "frontier.png")
    report = out_dir / "report.md"
    report.write_text(render_markdown(document, chart=chart.name, frontier=frontier.name), encoding="utf-8")
    written = [report, chart, frontier, write_json(document, json_path or out_dir / "bench.json")]
    console.print("wrote " + ", ".join(str(p) for p in written))
