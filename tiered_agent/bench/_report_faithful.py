"""The rulers in the bench's outputs: their JSON totals, and report.md's "Lean and faithful" section.

Per agent family (and all runs): tokens and input cost saved (and with the
extra retrieval turns charged), USD saved where priced, the four rulers
(salient, word, line, own-writing; docs/rulers.md) and the worst of them, the
retrieval turns, the runs that cost more than ``full`` (and the worst excess),
and the peak prompt on runs of 65+ steps against ``full``'s; then the frontier
chart.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._metrics import LONG_RUN_STEPS, Totals

__all__ = ["FAITHFUL_HEADERS", "faithful_rows", "md_faithful", "ruler_totals"]

FAITHFUL_HEADERS = (
    "policy",
    "tokens saved",
    "input cost saved",
    "with retrieval turns",
    "USD saved",
    "salient",
    "word",
    "line",
    "own",
    "worst ruler",
    "retrieval turns",
    "runs costlier than full (worst)",
    f"peak vs full ({LONG_RUN_STEPS}+ steps)",
)


def _r(value: float) -> float:
    return round(value, 6)


def ruler_totals(t: Totals, full: Totals | None) -> dict[str, Any]:
    """The line and own-writing rulers, the worst ruler and the retrieval turns of a totals dict."""
    rulers = t.rulers
    base = full.input_cost if full else 0.0
    return {
        "line_needed": t.line_needed,
        "line_missed": t.line_missed,
        "line_miss_rate": _r(t.line_miss_rate),
        "line_recoverable_missed": t.line_recoverable,
        "line_miss_rate_adjusted": _r(t.line_miss_rate_adjusted),
        "own_needed": t.own_needed,
        "own_missed": t.own_missed,
        "own_miss_rate": _r(t.own_miss_rate),
        "own_recoverable_missed": t.own_recoverable,
        "own_miss_rate_adjusted": _r(t.own_miss_rate_adjusted),
        "worst_miss_rate": _r(t.worst_miss_rate),
        "worst_ruler": max(sorted(rulers), key=lambda name: rulers[name]),
        "retrieval_turns": t.retrieval_turns,
        "retrieval_turn_tokens": t.retrieval_turn_tokens,
        "retrieval_turn_output_tokens": t.retrieval_turn_output_tokens,
        "retrieval_turn_input_cost": _r(t.retrieval_turn_input_cost),
        "input_cost_adjusted": _r(t.input_cost_adjusted),
        "input_cost_adjusted_savings_vs_full": _r(1 - t.input_cost_adjusted / base) if base else None,
    }


def _pct(value: float | None, signed: bool = True) -> str:
    if value is None:
        return "n/a"
    return f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"


def _losses(t: Mapping[str, Any]) -> str:
    worst = t.get("worst_excess_vs_full")
    if worst is None:
        return "n/a"
    return f"{t['runs_costlier_than_full']} ({_pct(worst)})"


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
                _pct(t["input_cost_adjusted_savings_vs_full"]),
                _pct(t["cost_usd_savings_vs_full"]),
                _pct(t["miss_rate"], signed=False),
                _pct(t["word_miss_rate"], signed=False),
                _pct(t["line_miss_rate"], signed=False),
                _pct(t["own_miss_rate"], signed=False),
                f"{_pct(t['worst_miss_rate'], signed=False)} ({t['worst_ruler']})",
                f"{t['retrieval_turns']:,}",
                _losses(t),
                peak,
            ]
        )
    return rows


def _table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


_INTRO = (
    "Input cost is the prompt part of the cost (cached tokens at the discount, writes at the premium); "
    "*with retrieval turns* adds one extra model turn for every step whose misses an exact "
    "`context_retrieve(...)` call shown in its prompt recovers (the prompt again at its cache price, "
    "the calls and the pages they return). The rulers (docs/rulers.md) give the share of what the next "
    "action needed that the prompt hid: *salient*, code-like strings first seen in an observation, "
    "shown anywhere; *word*, every 4+ character word; *line*, names and values first seen in an "
    "observation, shown only with a line of the output that held them; *own*, names and values the "
    "agent wrote itself (edits, scripts, commands), shown with the line that held them. *Worst ruler*: "
    "the largest of the four. *Runs costlier than full*: runs on which the policy cost more than `full` "
    "(dollars where priced, else units) and the largest excess. Peak: the sum over runs of "
    f"{LONG_RUN_STEPS}+ steps of each run's largest prompt, against `full`'s."
)


def md_faithful(document: Mapping[str, Any], frontier: str | None = None) -> list[str]:
    """The section's markdown lines."""
    lines = ["## Lean and faithful: per family", "", _INTRO, ""]
    sets = [("All runs", document["policies"], document["inputs"]["run_count"])]
    sets += [
        (family, entry["policies"], entry["runs"]) for family, entry in sorted(document["families"].items())
    ]
    sets += [
        (f"{group} (group)", entry["policies"], entry["runs"])
        for group, entry in sorted((document.get("groups") or {}).items())
    ]
    for title, policies, runs in sets:
        lines += [f"**{title}** ({runs} runs)", "", *_table(FAITHFUL_HEADERS, faithful_rows(policies)), ""]
    if frontier:
        lines += [f"![input cost saved vs the worst ruler, per family]({frontier})", ""]
    return lines
