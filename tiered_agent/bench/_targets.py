"""Issue 18's targets, checked against the bench document: the one place their thresholds live.

The issue names a policy (``tiered``, the default) and sets of runs (the ``swe-shell`` family;
the ``real-sessions`` group, ``_groups.py``), and for each a few totals with a threshold. The
check reads the totals the document already holds (``families`` / ``groups``); a set of runs
the bench did not replay is reported as not measured, never as met or missed. Report side
only: nothing in ``tiered_agent/context`` reads these numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ._groups import REAL_SESSIONS

__all__ = [
    "ISSUE_18",
    "TARGET_POLICY",
    "Target",
    "TargetSet",
    "dominance_line",
    "dominating",
    "md_targets",
    "targets_dict",
    "targets_lines",
]

TARGET_POLICY = "tiered"


@dataclass(frozen=True, slots=True)
class Target:
    """One threshold on one total of the policy: met when ``value <= threshold`` (``at_most``) or
    ``value >= threshold``."""

    key: str  # a key of ``totals`` (docs/bench-json-schema.md)
    label: str
    threshold: float
    at_most: bool

    def met(self, value: float) -> bool:
        return value <= self.threshold if self.at_most else value >= self.threshold


@dataclass(frozen=True, slots=True)
class TargetSet:
    """The targets of one set of runs: ``kind`` is the document section that holds it."""

    kind: str  # "families" | "groups"
    name: str
    targets: tuple[Target, ...]


_RULERS = (
    Target("miss_rate", "salient ruler", 0.05, at_most=True),
    Target("word_miss_rate", "word ruler", 0.05, at_most=True),
    Target("line_miss_rate", "line ruler", 0.05, at_most=True),
    Target("own_miss_rate", "own ruler", 0.05, at_most=True),
)

ISSUE_18: tuple[TargetSet, ...] = (
    TargetSet(
        "families",
        "swe-shell",
        (
            Target("token_savings_vs_full", "tokens saved", 0.60, at_most=False),
            Target("input_cost_savings_vs_full", "input cost saved", 0.40, at_most=False),
            *_RULERS,
        ),
    ),
    TargetSet(
        "groups",
        REAL_SESSIONS,
        (
            Target("cost_usd_savings_vs_full", "dollars saved", 0.35, at_most=False),
            *_RULERS,
            Target("runs_costlier_than_full_share", "runs costlier than full", 0.05, at_most=True),
            Target("worst_excess_vs_full", "worst excess over full", 0.05, at_most=True),
        ),
    ),
)


def targets_dict(
    document: Mapping[str, Any], sets: Sequence[TargetSet] = ISSUE_18, policy: str = TARGET_POLICY
) -> list[dict[str, Any]]:
    """``targets`` of the document: per set of runs, each target with the measured value and whether
    it is met (``met``: None when the set, the policy or the value is absent)."""
    return [_set_entry(document, s, policy) for s in sets]


def _set_entry(document: Mapping[str, Any], target_set: TargetSet, policy: str) -> dict[str, Any]:
    entry = _at(_at(document, target_set.kind), target_set.name)
    totals = _at(_at(_at(entry, "policies"), policy), "totals")
    checks = []
    for t in target_set.targets:
        value = _number(totals.get(t.key))
        checks.append(
            {
                "key": t.key,
                "label": t.label,
                "threshold": t.threshold,
                "at_most": t.at_most,
                "value": value,
                "met": None if value is None else t.met(value),
            }
        )
    return {
        "kind": target_set.kind,
        "name": target_set.name,
        "policy": policy,
        "runs": runs if isinstance(runs := entry.get("runs"), int) and not isinstance(runs, bool) else 0,
        "targets": checks,
    }


def _at(mapping: Mapping[str, Any], key: str) -> Mapping[str, Any]:
    """``mapping[key]`` when it is a mapping, else empty (a document of another shape)."""
    value = mapping.get(key)
    return value if isinstance(value, Mapping) else {}


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _pct(value: float) -> str:
    return f"{value * 100:+.1f}%" if value < 0 else f"{value * 100:.1f}%"


def _check_text(check: Mapping[str, Any]) -> str:
    sign = "<=" if check["at_most"] else ">="
    goal = f"{sign} {check['threshold'] * 100:.0f}%"
    if check["met"] is None:
        return f"{check['label']} n/a (target {goal}: not measured)"
    return f"{check['label']} {_pct(check['value'])} (target {goal}: {'met' if check['met'] else 'not met'})"


def targets_lines(targets: Sequence[Mapping[str, Any]]) -> list[str]:
    """The document's ``targets`` as Markdown: one line per set of runs (empty: none to check)."""
    lines = []
    for entry in targets:
        head = f"- **{entry['name']}** (`{entry['policy']}`"
        if not entry["runs"]:
            lines.append(f"{head}): no run of this {_KINDS[entry['kind']]} in the bench, not measured.")
            continue
        met = sum(1 for c in entry["targets"] if c["met"])
        checks = "; ".join(_check_text(c) for c in entry["targets"])
        lines.append(f"{head}, {entry['runs']} runs; {met} of {len(entry['targets'])} met): {checks}.")
    return lines


_KINDS = {"families": "family", "groups": "group"}
_RULER_KEYS = tuple(t.key for t in _RULERS)


def dominating(document: Mapping[str, Any], policy: str = TARGET_POLICY) -> list[tuple[str, str]]:
    """Issue 18's last target, "no preset both cheaper and at most as lossy on every ruler, in any
    family": the (set of runs, preset) pairs where a preset saves more input cost than ``policy``
    and misses no more on each of the four rulers; over all runs, each family and each group."""
    sets: list[tuple[str, Mapping[str, Any]]] = [("all runs", _at(document, "policies"))]
    for kind in ("families", "groups"):
        sets += [(name, _at(entry, "policies")) for name, entry in sorted(_at(document, kind).items())]
    found = []
    for name, policies in sets:
        mine = _at(_at(policies, policy), "totals")
        for other in sorted(policies):
            theirs = _at(_at(policies, other), "totals")
            if other != policy and ":" not in other and _dominates(theirs, mine):  # presets, not ablations
                found.append((name, other))
    return found


def _dominates(theirs: Mapping[str, Any], mine: Mapping[str, Any]) -> bool:
    cost = [_number(t.get("input_cost_savings_vs_full")) for t in (theirs, mine)]
    if cost[0] is None or cost[1] is None or cost[0] <= cost[1]:
        return False
    rates = [(_number(theirs.get(k)), _number(mine.get(k))) for k in _RULER_KEYS]
    return all(a is not None and b is not None and a <= b for a, b in rates)


def dominance_line(document: Mapping[str, Any], policy: str = TARGET_POLICY) -> str:
    """The dominance target as one Markdown line."""
    found = dominating(document, policy)
    head = (
        f"- **every family and group** (`{policy}`): a preset both cheaper (input cost) and at most "
        "as lossy on every ruler"
    )
    if not found:
        return f"{head}: none (target: none: met)."
    pairs = ", ".join(f"`{other}` on {name}" for name, other in found)
    return f"{head}: {pairs} (target: none: not met)."


def md_targets(document: Mapping[str, Any]) -> list[str]:
    """report.md's section on issue 18's targets (empty when the document has none)."""
    lines = targets_lines(document.get("targets") or [])
    if not lines:
        return []
    lines.append(dominance_line(document))
    intro = (
        "Issue 18's targets, computed from the totals above (thresholds: `tiered_agent/bench/_targets.py`; "
        "the real-sessions group: docs/bench-json-schema.md, `groups`)."
    )
    return ["## Targets", "", intro, "", *lines, ""]
