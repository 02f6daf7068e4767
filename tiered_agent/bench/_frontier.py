"""The frontier chart: input cost saved vs miss rate of every policy, overall and per agent family (PNG).

Each panel is one set of runs (all, then each family); each point a policy,
the dashed line its Pareto frontier (no policy to its upper left: cheaper
*and* missing less). The goal lines of issue 8 (5% misses, 40% input cost
saved) are drawn for reference. matplotlib (Agg) is imported only here.
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
    return totals["miss_rate"] * 100, (totals.get("input_cost_savings_vs_full") or 0.0) * 100


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
    return panels


def _draw(ax: Any, title: str, policies: Mapping[str, Any], highlight: Sequence[str]) -> None:
    points = {name: _point(entry["totals"]) for name, entry in policies.items()}
    edge = frontier(points)
    ax.plot([points[n][0] for n in edge], [points[n][1] for n in edge], "--", color="grey", linewidth=0.8)
    for name, (miss, saved) in sorted(points.items()):
        star = name in highlight
        ax.scatter(
            miss,
            saved,
            s=90 if star else 24,
            marker="*" if star else "o",
            color="tab:red" if star else ("black" if name == BASELINE else "tab:blue"),
            zorder=3,
        )
        ax.annotate(name, (miss, saved), fontsize=6, xytext=(3, 2), textcoords="offset points")
    ax.axvline(GOAL_MISS, color="tab:green", linewidth=0.6, linestyle=":")
    ax.axhline(GOAL_SAVED, color="tab:green", linewidth=0.6, linestyle=":")
    ax.axhline(0, color="black", linewidth=0.5)
    ax.set_title(title, fontsize=9)
    ax.set_xlabel("miss rate (% of salient strings hidden)", fontsize=8)
    ax.set_ylabel("input cost saved vs full (%)", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


def write_frontier(document: Mapping[str, Any], path: Path, highlight: Sequence[str] = ("tiered",)) -> Path:
    """Draw the frontier chart of a bench document into ``path`` (PNG) and return it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = _panels(document)
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), 4.4), squeeze=False)
    try:
        for ax, (title, policies) in zip(axes[0], panels, strict=True):
            _draw(ax, title, policies, highlight)
        fig.suptitle("Input cost saved vs information hidden (upper left is better)", fontsize=10)
        fig.tight_layout()
        path.parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110, format="png")
    finally:
        plt.close(fig)
    return path
