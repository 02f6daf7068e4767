"""The frontier chart: input cost saved vs the worst ruler of every policy, overall and per family (PNG).

Each panel is one set of runs (all, then each family); each point a policy at
its worst miss rate over the four rulers (salient, word, line, own-writing:
docs/rulers.md), the dashed line its Pareto frontier (no policy to its upper
left: cheaper *and* with a lower worst ruler). The goal lines (5% misses on
every ruler, 40% input cost saved) are drawn for reference. matplotlib (Agg)
is imported only here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ._replay import BASELINE

__all__ = ["frontier", "write_frontier"]

GOAL_MISS = 5.0  # percent
GOAL_SAVED = 40.0  # percent


def _point(totals: Mapping[str, Any]) -> tuple[float, float]:
    return totals["worst_miss_rate"] * 100, (totals.get("input_cost_savings_vs_full") or 0.0) * 100


def frontier(points: Mapping[str, tuple[float, float]]) -> list[str]:
    """Names on the Pareto frontier of ``(miss %, saved %)`` points, by miss rate ascending."""
    out: list[str] = []
    best = float("-inf")
    for name, (_, saved) in sorted(points.items(), key=lambda kv: (kv[1][0], -kv[1][1], kv[0])):
        if saved > best:
            out.append(name)
            best = saved
    return out


def _panels(document: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    panels = [(f"all runs ({document['inputs']['run_count']})", document["policies"])]
    for family, entry in sorted(document["families"].items()):
        panels.append((f"{family} ({entry['runs']} runs)", entry["policies"]))
    for group, entry in sorted((document.get("groups") or {}).items()):
        panels.append((f"{group} ({entry['runs']} runs, group)", entry["policies"]))
    return panels


_FLOOR = -25.0  # percent: policies costing more than this are drawn on the bottom edge


def _labels(points: Mapping[str, tuple[float, float]]) -> dict[tuple[float, float], list[str]]:
    """Names grouped by nearby points (within ~1 point of miss rate, ~3 of savings), so labels do
    not pile up; the group is labeled at its first point."""
    groups: dict[tuple[float, float], list[str]] = {}
    for name, (miss, saved) in sorted(points.items(), key=lambda kv: (kv[1], kv[0])):
        near = next((k for k in groups if abs(k[0] - miss) < 1.0 and abs(k[1] - saved) < 3.0), None)
        groups.setdefault(near or (miss, saved), []).append(name)
    return groups


def _draw(ax: Any, title: str, policies: Mapping[str, Any], highlight: Sequence[str]) -> None:
    exact = {name: _point(entry["totals"]) for name, entry in policies.items()}
    points = {name: (miss, max(saved, _FLOOR)) for name, (miss, saved) in exact.items()}
    edge = frontier(exact)
    ax.plot([points[n][0] for n in edge], [points[n][1] for n in edge], "--", color="grey", linewidth=0.8)
    for name, (miss, saved) in sorted(points.items()):
        star = name in highlight
        ax.scatter(
            miss,
            saved,
            s=110 if star else 24,
            marker="*" if star else ("v" if exact[name][1] < _FLOOR else "o"),
            color="tab:red" if star else ("black" if name == BASELINE else "tab:blue"),
            zorder=3,
        )
    for (miss, saved), names in _labels(points).items():
        shown = [n if exact[n][1] >= _FLOOR else f"{n} ({exact[n][1]:+.0f}%)" for n in names]
        text = ", ".join(shown[:4]) + (f" +{len(shown) - 4}" if len(shown) > 4 else "")
        ax.annotate(text, (miss, saved), fontsize=6.5, xytext=(4, 3), textcoords="offset points")
    ax.axvline(GOAL_MISS, color="tab:green", linewidth=0.7, linestyle=":")
    ax.axhline(GOAL_SAVED, color="tab:green", linewidth=0.7, linestyle=":")
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_ylim(_FLOOR - 3, max(55.0, max(p[1] for p in points.values()) + 5))
    ax.set_title(title, fontsize=10)
    ax.set_xlabel("worst ruler (% of what the next action needed hidden)", fontsize=8)
    ax.set_ylabel("input cost saved vs full (%)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


def write_frontier(document: Mapping[str, Any], path: Path, highlight: Sequence[str] = ("tiered",)) -> Path:
    """Draw the frontier chart of a bench document into ``path`` (PNG) and return it."""
    from ._chart import pyplot, save_figure

    plt = pyplot()
    panels = _panels(document)
    columns = min(2, len(panels))
    rows = -(-len(panels) // columns)
    fig, axes = plt.subplots(rows, columns, figsize=(7.0 * columns, 5.0 * rows), squeeze=False)
    try:
        flat = [ax for row in axes for ax in row]
        for ax, (title, policies) in zip(flat, panels, strict=False):
            _draw(ax, title, policies, highlight)
        for ax in flat[len(panels) :]:
            ax.set_axis_off()
        fig.suptitle("Input cost saved vs the worst of four rulers (upper left is better)", fontsize=10)
    except BaseException:
        plt.close(fig)
        raise
    return save_figure(fig, path)
