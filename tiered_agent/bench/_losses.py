"""Money-losing runs: per policy, the runs that cost more than ``full`` and the worst of them.

A run's cost is its dollars (output included) where the run is priced, else its
effective cost in uncached-input-token units (prompts at the cache model's
prices, output at the output price ratio): the same basis for the policy and
``full`` on that run. A run *costs more* than ``full`` when its cost exceeds
``full``'s by more than one part in a million (rounding). The *excess* of a
run is ``cost / full's cost - 1``; the worst excess is the largest over the
runs (negative when the policy never costs more).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._caching import Pricing
from ._metrics import PolicyRunMetrics, Totals, totals
from ._pricing import RunCosting

__all__ = ["TOLERANCE", "costlier_than_full", "run_cost"]

TOLERANCE = 1e-6  # relative: below this a run costs the same as full


def run_cost(t: Totals, full: Totals) -> tuple[float, float]:
    """``(policy's cost, full's cost)`` of one run on one basis: USD when both are priced, else units."""
    if t.cost_usd is not None and full.cost_usd is not None:
        return t.cost_usd, full.cost_usd
    return t.effective_cost, full.effective_cost


def costlier_than_full(
    replays: Sequence[Mapping[str, PolicyRunMetrics]],
    names: Sequence[str],
    pricing: Pricing,
    costing: Mapping[str, RunCosting],
    *,
    baseline: str,
) -> dict[str, dict[str, Any]]:
    """``{policy: {runs_costlier_than_full, runs_costlier_than_full_share, worst_excess_vs_full,
    worst_excess_run}}`` over ``replays`` (each run's policies by name, ``baseline`` among them)."""
    base = [totals([r[baseline]], pricing, costing) for r in replays]
    out: dict[str, dict[str, Any]] = {}
    for name in names:
        costlier = 0
        worst: tuple[float, str] | None = None
        for replay, full in zip(replays, base, strict=True):
            cost, full_cost = run_cost(totals([replay[name]], pricing, costing), full)
            if not full_cost:
                continue
            excess = cost / full_cost - 1
            costlier += excess > TOLERANCE
            key = (excess, replay[name].run_id)
            if worst is None or key[0] > worst[0] or (key[0] == worst[0] and key[1] < worst[1]):
                worst = key
        out[name] = {
            "runs_costlier_than_full": costlier,
            "runs_costlier_than_full_share": round(costlier / len(replays), 6) if replays else None,
            "worst_excess_vs_full": None if worst is None else round(worst[0], 6),
            "worst_excess_run": None if worst is None else worst[1],
        }
    return out
