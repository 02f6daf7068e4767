"""``tiered-agent batch``: run a file of tasks, many agents at once, resumable.

Importing this module must stay cheap (``--help`` imports it): click and the CLI's shared options
only; the runtime, rich and litellm are imported when the command runs.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from ._app import _check_trace_dir, agent_options
from ._options import EXIT_FAILED, EXIT_OK, EXIT_USAGE

if TYPE_CHECKING:
    from rich.console import Console

    from .._cluster import RayAddress
    from ..batch._batch import BatchReport
    from ..batch._results import TaskResult
    from ..batch._settings import BatchSettings
    from ..batch._tasks import BatchTask

__all__ = ["batch"]


@click.command("batch")
@click.argument(
    "tasks_file", metavar="TASKS.jsonl", type=click.Path(exists=True, dir_okay=False, path_type=Path)
)
@agent_options(resume=False)
@click.option(
    "--trace-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("traces/batch"),
    show_default=True,
    help="Where the traces go: one folder per task id, so a rerun finds what to resume.",
)
@click.option(
    "--out",
    "results_file",
    metavar="RESULTS.jsonl",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The results file: one JSON line per finished task, appended (a rerun skips what it holds).",
)
@click.option(
    "--concurrency", type=click.IntRange(min=1), default=8, show_default=True, help="Agents running at once."
)
@click.option(
    "--workers",
    type=click.IntRange(min=0),
    default=0,
    show_default=True,
    help="Event loops to spread the agents over: more than one are worker processes, or Ray actors "
    "with --ray (0: one per 250 concurrent agents, at most one per CPU).",
)
@click.option(
    "--ray",
    "ray_opt",
    is_flag=False,
    flag_value="local",
    metavar="[ADDRESS]",
    help="Run the agents on Ray: 'local' (the default value) starts Ray here; HOST:PORT, "
    "ray://HOST:PORT or 'auto' joins a cluster (traces and workspaces must then be on storage "
    "every node sees). Needs the ray extra.",
)
def batch(
    *, tasks_file: Path, results_file: Path, concurrency: int, workers: int, ray_opt: str | None, **run: Any
) -> None:
    """Run every task of TASKS.jsonl (one JSON object per line: "id", "task", and optionally
    "workspace", "model", "policy") with up to --concurrency agents at once, one trace and one
    result line per task. Rerun the same command to resume: finished tasks are skipped, interrupted
    ones continue from their traces. Takes run's options for every task."""
    settings, tasks, address = _prepare(tasks_file, run, ray_opt)
    from .._litellm import settle_heap_on_import
    from ._run import _run_until_signal

    settle_heap_on_import()  # this process is ours: litellm's objects need no garbage collection

    console, err = _consoles()
    from .._errors import ConfigurationError, TieredAgentError
    from .._trace import redact

    if address is None:  # Ray's workers have their own limits
        concurrency = fit_open_files(concurrency, err)
    try:
        done = _done_before(tasks, results_file)  # a results file that cannot be read: one sentence
        report, signum = _run_until_signal(
            lambda: _run(
                tasks,
                results_file,
                settings,
                concurrency=concurrency,
                workers=workers,
                address=address,
                done=done,
                err=err,
            )
        )
    except ConfigurationError as exc:  # the results file cannot be opened, Ray cannot be reached
        err.print(f"[red]error:[/] {redact(str(exc))}")
        sys.exit(EXIT_USAGE)
    except (TieredAgentError, OSError) as exc:  # the results file cannot be written, Ray lost work
        err.print(f"[red]error:[/] {redact(str(exc))}")
        sys.exit(EXIT_FAILED)
    if report is None:
        report = _report_from_file(tasks, results_file)
        console.print(_table(report, results_file, caption=False))
        number = signum or signal.SIGINT
        left = sum(1 for _, r in report.results if r is None or not r.final)
        err.print(
            f"[yellow]interrupted by {signal.Signals(number).name}[/]: {left} task(s) not finished; "
            "run the same command again to resume them"
        )
        sys.exit(128 + number)
    console.print(_table(report, results_file))
    sys.exit(EXIT_OK if report.ok else EXIT_FAILED)


def _prepare(
    tasks_file: Path, run: dict[str, Any], ray: str | None
) -> tuple[BatchSettings, tuple[BatchTask, ...], RayAddress | None]:
    """Options, tasks and --ray checked before anything runs: a mistake is one sentence, exit 2."""
    from .._cluster import RayAddress, require_ray
    from .._errors import ConfigurationError
    from ..batch._settings import BatchSettings
    from ..batch._tasks import load_tasks

    _check_trace_dir(run["trace_dir"])
    try:
        settings = BatchSettings(**run)  # run's options, every one of them (a new one must be added there)
        tasks = load_tasks(tasks_file)
        for task in tasks:
            settings.model_of(task)
        address = RayAddress(ray) if ray is not None else None
        if address is not None:
            require_ray()
    except ConfigurationError as exc:
        click.echo(f"Error: {exc}", err=True)
        sys.exit(EXIT_USAGE)
    return settings, tasks, address


def _consoles() -> tuple[Console, Console]:
    from .._terminal import TerminalConsole

    console = TerminalConsole(highlight=False, soft_wrap=True)
    if not console.is_terminal:
        console = TerminalConsole(highlight=False, width=160)
    return console, TerminalConsole.for_cli(stderr=True)


# Descriptors an agent holds at once (its trace, the trace's lock, a connection to the model, a file
# a tool reads), and those a process needs besides (imports, logging, the lanes' pipes): measured
# ~2 per agent and ~10 besides in a lane at 20 agents; twice that, for tools and imports.
FILES_PER_AGENT, FILES_RESERVED = 4, 32


def fit_open_files(concurrency: int, err: Console) -> int:
    """The agents to run at once under the open-file limit (``ulimit -n``): the soft limit is raised
    toward the hard one if that makes room; if it cannot, fewer agents run at once, said in one
    line, rather than agents failing with "Too many open files" (and litellm's tracebacks)."""
    import resource

    wanted = FILES_RESERVED + FILES_PER_AGENT * concurrency
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return concurrency
    raised = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (raised, hard))
        soft = raised
    except (ValueError, OSError) as exc:
        err.print(f"[yellow]note:[/] cannot raise the open-file limit ({exc})", markup=True)
    if soft >= wanted:
        return concurrency
    fit = max(1, (soft - FILES_RESERVED) // FILES_PER_AGENT)
    err.print(
        f"[yellow]warning:[/] the open-file limit (ulimit -n {soft}) leaves room for {fit} agent(s) at "
        f"once, not {concurrency}; running {fit} at once"
    )
    return fit


def _done_before(tasks: tuple[BatchTask, ...], results_file: Path) -> int:
    from ..batch._results import read_results

    earlier = read_results(results_file)
    return sum(1 for t in tasks if t.id in earlier and earlier[t.id].final)


async def _run(
    tasks: tuple[BatchTask, ...],
    results_file: Path,
    settings: BatchSettings,
    *,
    concurrency: int,
    workers: int,
    address: RayAddress | None,
    done: int,
    err: Console,
) -> BatchReport:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    from ..batch._batch import run_batch

    counts = {"answered": 0, "other": 0}
    columns = (
        TextColumn("batch"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("tasks · {task.fields[line]}"),
        TimeElapsedColumn(),
    )
    with Progress(*columns, console=err, transient=True) as progress:
        bar = progress.add_task("batch", total=len(tasks), completed=done, line="starting")

        def advance(result: TaskResult) -> None:
            counts["answered" if result.stop_reason == "answered" else "other"] += 1
            line = f"answered {counts['answered']} · other {counts['other']} this run"
            progress.update(bar, advance=1, line=line)

        return await run_batch(
            tasks,
            results_file,
            settings,
            concurrency=concurrency,
            workers=workers,
            ray=address,
            on_result=advance,
        )


def _report_from_file(tasks: tuple[BatchTask, ...], results_file: Path) -> BatchReport:
    from ..batch._batch import BatchReport
    from ..batch._results import read_results

    latest = read_results(results_file)
    return BatchReport(results=tuple((t, latest.get(t.id)) for t in tasks))


def _table(report: BatchReport, results_file: Path, *, caption: bool = True) -> Any:
    from rich.table import Table

    table = Table(title=f"batch: {len(report.results)} tasks → {results_file}", title_justify="left")
    for name in ("stop reason", "tasks", "iterations", "prompt tokens", "completion tokens", "cost", "saved"):
        table.add_column(name, justify="left" if name == "stop reason" else "right")
    groups: dict[str, list[TaskResult]] = {}
    for _, result in report.results:
        if result is not None:
            groups.setdefault(result.stop_reason, []).append(result)
    for reason, results in sorted(groups.items()):
        table.add_row(reason, *_cells(results))
    pending = sum(1 for _, r in report.results if r is None)
    if pending:
        table.add_row("not run yet", str(pending), "", "", "", "", "")
    table.add_row("total", *_cells([r for rs in groups.values() for r in rs]), style="bold")
    if caption:
        table.caption = f"this run: {report.ran} task(s) run, {report.skipped} already finished"
    return table


def _cells(results: list[TaskResult]) -> list[str]:
    priced = [r.dollars for r in results if r.dollars is not None]
    sent = sum(r.sent_tokens for r in results)
    full = sum(r.full_tokens for r in results)
    return [
        str(len(results)),
        f"{sum(r.iterations for r in results):,}",
        f"{sum(r.usage.prompt_tokens for r in results):,}",
        f"{sum(r.usage.completion_tokens for r in results):,}",
        f"${sum(priced):.4f}" if priced else "n/a",
        f"{1 - sent / full:.1%}" if full > 0 else "n/a",
    ]
