"""The benchmark chart: per-step prompt tokens on the longest run, and totals across runs (PNG).

matplotlib (with the non-interactive Agg backend) is imported only when a chart is drawn.
"""

from __future__ import annotations

import multiprocessing
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import structlog

from ._replay import BASELINE
from ._report import longest_key, policies_by_cost

__all__ = ["Drawing", "draw_charts", "longest_run", "pyplot", "save_figure", "write_chart"]

log = structlog.get_logger(__name__)

Drawing = Callable[[], Path]  # draws one chart into its file and returns the file


def longest_run(document: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """The run with the most steps (ties: the larger ``full`` input, then run id) of the document's
    ``runs`` (None: it has none)."""
    runs: list[Mapping[str, Any]] = document.get("runs", [])
    return min(runs, key=longest_key) if runs else None


def pyplot() -> Any:
    """matplotlib's pyplot on the file-only Agg backend (imported here: only the charts need it)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def save_figure(fig: Any, path: Path) -> Path:
    """Lay ``fig`` out, write it to ``path`` as PNG (folders made), close it; return ``path``."""
    plt = pyplot()
    try:
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110, format="png")
    finally:
        plt.close(fig)
    return path


_DOCUMENTS_RUN = object()


def write_chart(
    document: Mapping[str, Any], path: Path, run: Mapping[str, Any] | object | None = _DOCUMENTS_RUN
) -> Path:
    """Draw the chart into ``path`` (PNG) and return it; ``run``: the run whose steps it draws
    (default: :func:`longest_run` of the document; None: no per-step panel)."""
    import matplotlib

    plt = pyplot()
    names = policies_by_cost(document)
    palette = matplotlib.colormaps["tab20"]
    order = [*range(0, 20, 2), *range(1, 20, 2)]  # the saturated half first: distinct hues
    colors = {name: palette(order[i % 20]) for i, name in enumerate(sorted(names))}
    fig, (left, right) = plt.subplots(1, 2, figsize=(14, 5.5), gridspec_kw={"width_ratios": [3, 2]})
    try:
        shown = longest_run(document) if run is _DOCUMENTS_RUN else run
        _per_step(left, shown if isinstance(shown, Mapping) else None, names, colors)
        _totals(right, document, names)
    except BaseException:
        plt.close(fig)
        raise
    return save_figure(fig, path)


def _per_step(ax: Any, run: Mapping[str, Any] | None, names: list[str], colors: Mapping[str, Any]) -> None:
    if run is None:
        ax.set_axis_off()
        return
    for name in names:
        series = run["policies"][name]["per_step"]["prompt_tokens"]
        ax.plot(
            range(1, len(series) + 1),
            series,
            label=name,
            color=colors[name],
            linewidth=2.4 if name == BASELINE else 1.2,
            linestyle="--" if ":" in name else "-",
        )
    ax.set_title(f"Prompt tokens per step: {run['run_id']}", fontsize=10)
    ax.set_xlabel("step")
    ax.set_ylabel("prompt tokens")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2)


def _totals(ax: Any, document: Mapping[str, Any], names: list[str]) -> None:
    policies = document["policies"]
    full = policies[BASELINE]["totals"]
    tokens = [policies[n]["totals"]["input_tokens"] / max(full["input_tokens"], 1) * 100 for n in names]
    cost = [policies[n]["totals"]["effective_cost"] / max(full["effective_cost"], 1e-9) * 100 for n in names]
    rows = range(len(names))
    ax.barh([r + 0.2 for r in rows], tokens, height=0.4, label="input tokens")
    ax.barh([r - 0.2 for r in rows], cost, height=0.4, label="effective cost (with caching)")
    ax.set_yticks(list(rows), names, fontsize=8)
    ax.invert_yaxis()
    ax.axvline(100, color="grey", linewidth=0.8)
    ax.set_xlabel("% of full, all runs")
    ax.set_title(f"Totals over {document['inputs']['run_count']} runs", fontsize=10)
    ax.legend(fontsize=8)


def _drawn_quietly(drawing: Drawing) -> None:
    """A forked child's chart: a failure is its exit code alone (the parent draws it again and
    raises what it raises there), never a traceback on stderr."""
    try:
        drawing()
    except Exception:  # said by the parent, once, when it draws the chart again
        sys.exit(1)


def draw_charts(drawings: Mapping[str, tuple[Drawing, Path]]) -> dict[str, Path]:
    """Draw every chart (``{key: (drawing, the file it writes)}``) and return the files by key.

    Each chart is a second or two of one core, and the bench's workers are gone by the time the
    charts are drawn, so on Linux every chart but the first is drawn in a forked child process at
    the same time as the first is drawn here. A child that fails is logged and its chart drawn
    again here, where what it raises reaches the caller; elsewhere the charts are drawn in turn.
    """
    items = list(drawings.items())
    if sys.platform != "linux" or len(items) < 2:
        return {key: drawing() for key, (drawing, _) in items}
    context = multiprocessing.get_context("fork")
    children = [
        (key, context.Process(target=_drawn_quietly, args=(drawing,), daemon=True))
        for key, (drawing, _) in items[1:]
    ]
    for _, child in children:
        child.start()
    try:
        paths = {items[0][0]: items[0][1][0]()}
    finally:
        for _, child in children:
            child.join()
    for key, child in children:
        drawing, path = drawings[key]
        if child.exitcode != 0:
            log.warning("chart_redrawn", chart=key, exitcode=child.exitcode)
            path = drawing()
        paths[key] = path
    return paths
