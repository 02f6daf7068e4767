"""The replay checked against what the providers recorded: caching, dollars and prompt sizes, per family.

Everything here compares the replayed ``full`` policy (the whole history the
agent kept, plus the prefix its log left out) with the usage the log recorded,
on the steps that recorded some (``prompt_tokens > 0``):

- caching: the simulated cached share against the recorded one
  (:func:`~tiered_agent.bench._metrics.validate_caching`, per family too);
- dollars: ``full`` priced as the recorded model against what the recorded
  usage cost, the cost the log recorded where it has one (OpenRouter's), else
  the recorded usage at the recorded model's list prices (uncached input, cache
  reads, 5-minute and 1-hour writes, output): :class:`DollarCheck`;
- fidelity: the mean relative error of the calibrated replayed prompt
  (``token_scale x replayed tokens``, the prefix included) against the recorded
  prompt: :class:`CalibratedFidelity`.

:class:`Recorded` is what the runs cost as recorded (the report's ``recorded``
row), next to what each policy would have cost on the same runs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._messages import Usage
from .._providers import model_prices
from ._metrics import PolicyRunMetrics, StepMetrics
from ._pricing import RunCosting

__all__ = [
    "CalibratedFidelity",
    "DollarCheck",
    "Recorded",
    "as_recorded",
    "calibrated_fidelity",
    "check_dollars",
    "recorded_totals",
    "recorded_usd",
]


def _recorded_pairs(
    replay: PolicyRunMetrics, usage: Sequence[Usage | None]
) -> list[tuple[StepMetrics, Usage]]:
    out = []
    for step in replay.steps:
        recorded = usage[step.step - 1] if 0 < step.step <= len(usage) else None
        if recorded is not None and recorded.prompt_tokens > 0 and step.prompt_tokens > 0:
            out.append((step, recorded))
    return out


def as_recorded(run_model: str | None, price_model: str | None) -> bool:
    """Whether a run is priced as the model it was recorded with (only then are dollars comparable)."""
    if not price_model or not run_model:
        return False
    prices = model_prices(run_model)
    return prices is not None and prices.model == price_model


def recorded_usd(costing: RunCosting, usage: Usage, writes_1h: int, step: int) -> tuple[float | None, bool]:
    """What recorded call ``step`` cost, and whether the log recorded it (else the list price of its
    usage at its model's prices)."""
    if usage.cost is not None:
        return usage.cost, True
    return costing.recorded_usd(usage, writes_1h, step), False


@dataclass(frozen=True, slots=True)
class DollarCheck:
    """``full`` priced as the recorded model vs what the recorded usage cost, on the same steps."""

    runs: int
    steps: int
    recorded_usd: float
    simulated_usd: float
    logged_steps: int  # steps whose cost the log recorded (the rest: list prices of the usage)

    @property
    def ratio(self) -> float:
        return self.simulated_usd / self.recorded_usd if self.recorded_usd else 0.0

    @property
    def source(self) -> str:
        if self.logged_steps == self.steps:
            return "recorded cost"
        return "list prices of the recorded usage" if not self.logged_steps else "mixed"


def check_dollars(
    full: Sequence[PolicyRunMetrics],
    usage: Mapping[str, Sequence[Usage | None]],
    writes_1h: Mapping[str, Sequence[int]],
    costing: Mapping[str, RunCosting],
) -> DollarCheck | None:
    """The dollar check over ``full``'s runs (those priced as their recorded model); None: no step."""
    runs = steps = logged = 0
    recorded = simulated = 0.0
    for replay in full:
        run = costing.get(replay.run_id)
        if run is None or run.prices is None:
            continue
        long = writes_1h.get(replay.run_id, ())
        counted = 0
        for step, use in _recorded_pairs(replay, usage.get(replay.run_id, ())):
            written_1h = long[step.step - 1] if step.step <= len(long) else 0
            usd, from_log = recorded_usd(run, use, written_1h, step.step)
            if usd is None:
                continue
            counted, logged = counted + 1, logged + from_log
            recorded += usd
            simulated += run.step_usd(
                step.step, step.prompt_tokens, step.cached_tokens, step.cache_write_tokens, step.output_tokens
            )
        runs, steps = runs + bool(counted), steps + counted
    return DollarCheck(runs, steps, recorded, simulated, logged) if steps else None


@dataclass(frozen=True, slots=True)
class CalibratedFidelity:
    """Mean over steps of |token_scale x replayed ``full`` prompt - recorded prompt| / recorded."""

    runs: int
    steps: int
    mean_abs_rel_error: float


def calibrated_fidelity(
    full: Sequence[PolicyRunMetrics], usage: Mapping[str, Sequence[Usage | None]], scales: Mapping[str, float]
) -> CalibratedFidelity | None:
    """``scales``: each run's recorded provider's tokens per replayed token. None: no step recorded usage."""
    errors: list[float] = []
    runs = 0
    for replay in full:
        pairs = _recorded_pairs(replay, usage.get(replay.run_id, ()))
        scale = scales.get(replay.run_id, 1.0)
        errors.extend(abs(scale * s.prompt_tokens - u.prompt_tokens) / u.prompt_tokens for s, u in pairs)
        runs += bool(pairs)
    return CalibratedFidelity(runs, len(errors), sum(errors) / len(errors)) if errors else None


@dataclass(frozen=True, slots=True)
class Recorded:
    """What runs with recorded usage cost as recorded (provider tokens, USD), next to each policy."""

    runs: int
    steps: int
    prompt_tokens: int
    cached_tokens: int
    cache_write_tokens: int
    output_tokens: int
    priced_runs: int
    cost_usd: float | None  # over the priced runs (priced as their recorded model)
    policy_usd: Mapping[str, float]  # each policy's simulated USD over the same priced runs, all steps

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0


def _policy_usd(replay: PolicyRunMetrics, run: RunCosting) -> float:
    return sum(
        run.step_usd(s.step, s.prompt_tokens, s.cached_tokens, s.cache_write_tokens, s.output_tokens)
        for s in replay.steps
    )


def recorded_totals(
    replays: Sequence[Mapping[str, PolicyRunMetrics]],
    usage: Mapping[str, Sequence[Usage | None]],
    writes_1h: Mapping[str, Sequence[int]],
    costing: Mapping[str, RunCosting],
    priced_as_recorded: frozenset[str],
) -> Recorded | None:
    """The recorded usage of the runs in ``replays`` that have some; None: none has."""
    totals = {"runs": 0, "steps": 0, "prompt": 0, "cached": 0, "written": 0, "output": 0, "priced": 0}
    cost = 0.0
    policy_usd: dict[str, float] = {}
    for policies in replays:
        run_id = next(iter(policies.values())).run_id
        recorded = [u for u in usage.get(run_id, ()) if u is not None and u.prompt_tokens > 0]
        if not recorded:
            continue
        totals["runs"] += 1
        totals["steps"] += len(recorded)
        totals["prompt"] += sum(u.prompt_tokens for u in recorded)
        totals["cached"] += sum(u.cached_tokens for u in recorded)
        totals["written"] += sum(u.cache_write_tokens for u in recorded)
        totals["output"] += sum(u.completion_tokens for u in recorded)
        run = costing.get(run_id)
        if run is None or run.prices is None or run_id not in priced_as_recorded:
            continue
        run_cost = _run_recorded_usd(run, usage.get(run_id, ()), writes_1h.get(run_id, ()))
        if run_cost is None:
            continue
        totals["priced"] += 1
        cost += run_cost
        for name, replay in policies.items():
            policy_usd[name] = policy_usd.get(name, 0.0) + _policy_usd(replay, run)
    if not totals["runs"]:
        return None
    return Recorded(
        runs=totals["runs"],
        steps=totals["steps"],
        prompt_tokens=totals["prompt"],
        cached_tokens=totals["cached"],
        cache_write_tokens=totals["written"],
        output_tokens=totals["output"],
        priced_runs=totals["priced"],
        cost_usd=cost if totals["priced"] else None,
        policy_usd=dict(sorted(policy_usd.items())),
    )


def _run_recorded_usd(
    run: RunCosting, usage: Sequence[Usage | None], writes_1h: Sequence[int]
) -> float | None:
    total = 0.0
    for index, use in enumerate(usage):
        if use is None or use.prompt_tokens <= 0:
            continue
        usd, _ = recorded_usd(run, use, writes_1h[index] if index < len(writes_1h) else 0, index + 1)
        if usd is None:
            return None
        total += usd
    return total
