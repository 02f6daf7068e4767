"""report.md's "Lean and faithful" section: per family, what each policy saves and what it hides.

Per agent family (and all runs): tokens and input cost saved, USD saved where
priced, the miss rate raw, retrieval-adjusted and word-level, and the peak
prompt on runs of 65+ steps against ``full``'s; then the frontier chart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._metrics import LONG_RUN_STEPS

__all__ = ["FAITHFUL_HEADERS", "faithful_rows", "md_faithful"]

FAITHFUL_HEADERS = (
    "policy",
    "tokens saved",
    "input cost saved",
    "USD saved",
    "miss",
    "miss (retrieval-adjusted)",
    "miss (word-level)",
    f"peak vs full ({LONG_RUN_STEPS}+ steps)",
)


def _pct(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"


def faithful_rows(policies: Mapping[str, Any]) -> list[list[str]]:
    """One row per policy, most input cost saved first."""
    order = sorted(policies, key=lambda n: (-(policies[n]["totals"]["input_cost_savings_vs_full"] or 0), n))
    rows = []
    for name in order:
        t = policies[name]["totals"]
        peak = _pct(t["long_run_peak_vs_full"], signed=False) if t["long_runs"] else "n/a"
        rows.append(
            [
                f"`{name}`",
                _pct(t["token_savings_vs_full"]),
                _pct(t["input_cost_savings_vs_full"]),
                _pct(t["cost_usd_savings_vs_full"]),
                _pct(t["miss_rate"], signed=False),
                _pct(t["miss_rate_adjusted"], signed=False),
                _pct(t["word_miss_rate"], signed=False),
                peak,
            ]
        )
    return rows


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def md_faithful(document: Mapping[str, Any], frontier: str | None = None) -> list[str]:
    """The section's markdown lines."""
    lines = [
        "## Lean and faithful: per family",
        "",
        "Input cost is the prompt part of the cost (cached tokens at the discount, writes at the premium). "
        "Miss: salient strings (code-like) of the next action hidden from its prompt; retrieval-adjusted: "
        "those no exact `context_retrieve(...)` call shown in that prompt recovers; word-level: the same "
        "check with every 4+ character word. Peak: the sum over runs of "
        f"{LONG_RUN_STEPS}+ steps of each run's largest prompt, against `full`'s.",
        "",
    ]
    sets = [("All runs", document["policies"], document["inputs"]["run_count"])]
    sets += [
        (family, entry["policies"], entry["runs"]) for family, entry in sorted(document["families"].items())
    ]
    for title, policies, runs in sets:
        lines += [f"**{title}** ({runs} runs)", "", *_table(FAITHFUL_HEADERS, faithful_rows(policies)), ""]
    if frontier:
        lines += [f"![input cost saved vs miss rate, per family]({frontier})", ""]
    return lines
