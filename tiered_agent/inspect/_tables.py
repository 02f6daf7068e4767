"""Rich tables for ``trace show`` (per iteration) and ``trace stats`` (across runs)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich import box
from rich.console import Group, RenderableType
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .._trace import redact
from ._record import record_labels
from ._stats import RunStats
from ._totals import Totals
from ._values import compact, ranges
from ._view import IterationView, RunView

__all__ = ["iteration_table", "run_header", "stats_table", "totals_table"]


def run_header(run: RunView) -> Text:
    text = Text()
    text.append(f"run {run.run_id or '?'}", style="bold")
    text.append(f" · {run.model or 'unknown model'} · {run.stop_label}")
    if run.segments > 1:
        text.append(f" · {run.segments} segments (resumed)")
    if run.error:
        text.append(f" · {redact(run.error)}", style="red")
    text.append(f"\ntrace {run.path}")
    if run.task:
        task = run.task if len(run.task) <= 200 else run.task[:199] + "…"
        text.append(f"\ntask: {redact(task)}")
    return text


def _tools(names: Sequence[str]) -> str:
    counts = Counter(names)
    return ", ".join(name if n == 1 else f"{name} ×{n}" for name, n in counts.items())


def _count(outputs: int, chars: int) -> str:
    if not outputs:
        return ""
    return f"{outputs} · {compact(chars)}" if chars else str(outputs)


def _saved(totals: Totals) -> str:
    return f"{totals.savings:.0%}" if totals.full_tokens else ""


def _cost(cost: float | None) -> str:
    return "" if cost is None else f"${cost:.4f}"


def _hidden(view: IterationView) -> str:
    record = view.record
    parts = [_count(record.masked_outputs, record.masked_chars)]
    if record.windowed_out:
        parts.append(f"window {ranges(record.windowed_out)}")
    return "; ".join(p for p in parts if p)


def _summary(view: IterationView, run: RunView) -> str:
    parts = []
    if view.record.summary_range:
        first, last = view.record.summary_range
        parts.append(f"uses {first}-{last}")
    for index in view.summaries:
        summary = run.summaries[index]
        parts.append(f"new {summary.first}-{summary.last}")
    return "; ".join(parts)


def _notes(view: IterationView) -> Text:
    text = Text()
    for kind, message in view.errors:
        short = message if len(message) <= 80 else message[:79] + "…"
        text.append(f"{kind}: {redact(short)} ", style="red")
    if view.totals.tool_errors:
        text.append(f"{view.totals.tool_errors} tool error(s) ", style="red")
    if view.record.compacted:
        text.append("compacted ", style="yellow")
    if view.requests > 1:
        text.append(f"{view.requests} requests ", style="yellow")
    labels = record_labels(view.record)
    if labels:
        text.append(", ".join(labels), style="cyan")
    return text


_WIDE = 140  # narrower consoles get one "context" column instead of five, and no provider count
_CONTEXT = ("trunc.", "hidden", "dedup", "summary", "retr.")
_WRAPS = ("tools", "hidden", "summary", "notes", "context")


def _iteration_cells(view: IterationView, run: RunView) -> dict[str, str | Text]:
    totals = view.totals
    return {
        "#": str(view.iteration),
        "tools": escape(_tools(view.tool_calls)) or ("answer" if view.finish_reason else ""),
        "prompt": compact(totals.prompt_tokens) if totals.prompt_tokens else "",
        "sent": compact(totals.sent_tokens),
        "full": compact(totals.full_tokens),
        "saved": _saved(totals),
        "trunc.": _count(totals.truncated_outputs, totals.truncated_chars),
        "hidden": _hidden(view),
        "dedup": str(totals.dedup_hits or ""),
        "summary": _summary(view, run),
        "retr.": str(totals.retrievals or ""),
        "cost": _cost(totals.cost),
        "notes": _notes(view),
    }


def _merge_context(cells: dict[str, str | Text]) -> dict[str, str | Text]:
    """The five context columns as one: ``trunc. 1 · 11.3k; hidden window 1-4; dedup 1``."""
    parts = [f"{name.rstrip('.')} {cells[name]}" for name in _CONTEXT if str(cells[name])]
    merged = {k: v for k, v in cells.items() if k not in _CONTEXT}
    return {**dict(list(merged.items())[:6]), "context": "; ".join(parts), **dict(list(merged.items())[6:])}


def iteration_table(run: RunView, *, width: int = _WIDE) -> Table:
    """One row per iteration; token counts compact (``12.3k``; ``--json`` has them exact).

    Columns with nothing to show in this run are left out; below :data:`_WIDE` columns
    the context pipeline's five columns become one, and the provider's prompt count goes.
    """
    rows = [_iteration_cells(view, run) for view in run.iterations]
    if width < _WIDE:
        rows = [_merge_context(cells) for cells in rows]
    table = Table(title="iterations", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    names = (
        [name for name in rows[0] if name in ("#", "sent", "full") or any(str(r[name]) for r in rows)]
        if rows
        else ["#", "sent", "full"]
    )
    if width < _WIDE and "prompt" in names:
        names.remove("prompt")
    for name in names:
        justify = "left" if name in _WRAPS else "right"
        table.add_column(name, justify=justify, no_wrap=name not in _WRAPS)  # type: ignore[arg-type]
    for view, cells in zip(run.iterations, rows, strict=True):
        style = "on grey15" if view.errors or view.totals.tool_errors else None
        table.add_row(*(cells[name] for name in names), style=style)
    return table


def totals_table(totals: Totals, title: str = "totals") -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=box.SIMPLE, pad_edge=False)
    table.add_column(justify="left", style="bold")
    table.add_column(justify="right")
    rows: list[tuple[str, str]] = [
        ("iterations", f"{totals.iterations:,}"),
        ("prompt tokens sent (local count)", f"{totals.sent_tokens:,}"),
        ("full history would have sent", f"{totals.full_tokens:,}"),
        ("saved", f"{totals.saved_tokens:,} tokens ({totals.savings:.1%})"),
        (
            "provider prompt / cached / completion",
            f"{totals.prompt_tokens:,} / {totals.cached_tokens:,} / {totals.completion_tokens:,}",
        ),
        ("cost", _cost(totals.cost) or "unknown"),
        ("tool calls (errors)", f"{totals.tool_calls:,} ({totals.tool_errors:,})"),
        ("error events", f"{totals.errors:,}"),
        (
            "outputs truncated (cuts in prompts, chars)",
            f"{totals.outputs_truncated:,} ({totals.truncated_outputs:,}, {compact(totals.truncated_chars)})",
        ),
        ("masked / elided in prompts (chars)", f"{totals.masked_outputs:,} ({compact(totals.masked_chars)})"),
        ("dedup hits", f"{totals.dedup_hits:,}"),
        ("retrievals", f"{totals.retrievals:,}"),
        ("summaries (tokens)", f"{totals.summaries:,} ({totals.summary_tokens:,})"),
    ]
    if totals.runs > 1:
        rows.insert(0, ("runs", f"{totals.runs:,}"))
    if totals.dedup_pointers:
        pointers = f"{totals.dedup_pointers:,} ({compact(totals.dedup_pointer_chars)})"
        rows.append(("repeats shown as pointers in prompts (chars)", pointers))
    if totals.aging_epochs:
        rows.append(("aging epochs (prompts that aged further)", f"{totals.aging_epochs:,}"))
    for label, value in rows:
        table.add_row(label, value)
    return table


def stats_table(stats: RunStats, *, per_run: bool) -> RenderableType:
    parts: list[RenderableType] = []
    if per_run:
        runs = Table(title="runs", title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
        for name in ("trace", "stop", "iter.", "sent", "full", "saved", "cost", "tools", "errors"):
            runs.add_column(name, justify="left" if name in ("trace", "stop") else "right")
        for run in stats.runs:
            totals = run["totals"]
            runs.add_row(
                escape(str(run["path"])),
                escape(run["stop_reason"]),
                f"{totals['iterations']:,}",
                f"{totals['sent_tokens']:,}",
                f"{totals['full_tokens']:,}",
                f"{totals['savings']:.0%}",
                _cost(totals["cost"]),
                f"{totals['tool_calls']:,}",
                f"{totals['tool_errors'] + totals['errors']:,}",
            )
        parts.append(runs)
    parts.append(totals_table(stats.totals, title=f"totals over {stats.totals.runs} run(s)"))
    reasons = ", ".join(f"{reason} {n}" for reason, n in sorted(stats.stop_reasons.items()))
    parts.append(Text(f"stop reasons: {reasons or 'none'}"))
    return Group(*parts)
