"""report.md's "How far the figures could move": the default policy's figures for all runs, each
family and each group, each with its 95% interval over runs (``interval_95``; ``_spread.py``)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._report_faithful import _pct, _table
from ._targets import TARGET_POLICY  # the default preset (the bench's report imports no policy)

__all__ = ["SPREAD_HEADERS", "md_spread", "spread_rows"]

# (column, the figure's key, whether it is a saving: signed)
_FIGURES = (
    ("tokens", "token_savings_vs_full", True),
    ("input cost", "input_cost_savings_vs_full", True),
    ("USD", "cost_usd_savings_vs_full", True),
    ("salient", "miss_rate", False),
    ("word", "word_miss_rate", False),
    ("line", "line_miss_rate", False),
    ("own", "own_miss_rate", False),
)
SPREAD_HEADERS = ("runs", *(column for column, _, _ in _FIGURES))


def _cell(value: Any, interval: Sequence[float] | None, signed: bool) -> str:
    if not isinstance(value, int | float):
        return "n/a"
    if not interval:
        return _pct(value, signed)
    low, high = (f"{round(v * 100, 1) + 0.0:.1f}".replace("-", "−") for v in interval)  # no "−0.0"
    return f"{_pct(value, signed).replace('-', '−')} ({low} to {high})"


def _sets(document: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, policies) of all runs, then each family, then each group."""
    out: list[tuple[str, Mapping[str, Any]]] = [("all runs", document["policies"])]
    out += [(family, entry["policies"]) for family, entry in sorted(document["families"].items())]
    groups = document.get("groups") or {}
    out += [(f"{group} (group)", entry["policies"]) for group, entry in sorted(groups.items())]
    return out


def spread_rows(document: Mapping[str, Any], policy: str = TARGET_POLICY) -> list[list[str]]:
    """One row per set of runs: its label, its runs, and each figure of ``policy`` with its interval."""
    rows = []
    for label, policies in _sets(document):
        if policy not in policies:
            continue
        totals = policies[policy]["totals"]
        intervals = totals.get("interval_95") or {}
        cells = [_cell(totals.get(key), intervals.get(key), signed) for _, key, signed in _FIGURES]
        rows.append([label, str(totals.get("runs", 0)), *cells])
    return rows


def md_spread(document: Mapping[str, Any], policy: str = TARGET_POLICY) -> list[str]:
    """The section: the figures of ``policy`` (the default) with their 95% intervals over runs."""
    rows = spread_rows(document, policy)
    if not rows:
        return []
    return [
        "## How far the figures could move",
        "",
        f"`{policy}`'s savings against `full` and its rulers' miss rates, each with its 95% interval "
        "over runs: how much the figure could differ on other runs like the set's (the ratio "
        "estimator's with runs as the units, their leverage, skewness and effective number; none "
        "under 3 runs). It is still narrower than it says where a figure rests on a run in ten or "
        "fewer (a burst of misses, a few long sessions that save more; docs/bench-json-schema.md, "
        "`interval_95`).",
        "",
        *_table(["set", *SPREAD_HEADERS], rows),
        "",
    ]
