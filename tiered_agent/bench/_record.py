"""One replayed run reduced to what the bench document needs from it: a :class:`RunRecord`.

The replay of a run under every policy (:class:`~._replay.RunReplay`: every step's metrics) is
large; the document needs per policy the run's totals, and per run its checks against the
recorded usage, its ``inputs.runs`` entry and, optionally, its detail (``runs[]``: per-step
series). :func:`record_of` computes all of that where the run was replayed (a worker), so what
travels to the bench's main process, and what it keeps, is small and does not depend on the
run's length. Every number is computed by the same functions the document always used
(:func:`~._metrics.totals`, :func:`~._validation.recorded_totals`, ...), on this one run;
``_aggregate.py`` folds the records.
"""

from __future__ import annotations

import traceback
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .._messages import Usage
from .._providers import model_prices, provider_of
from ._anatomy import Anatomy, anatomy_of
from ._calibration import ProviderCalibration, token_scale
from ._document import inputs_entry, run_detail
from ._groups import groups_of
from ._losses import run_cost
from ._metrics import PolicyRunMetrics, RunFidelity, Totals, _recorded_steps, fidelity, totals
from ._pricing import RunCosting
from ._replay import BASELINE, ReplaySettings, RunInfo, RunReplay
from ._sums import Histogram, RunCaching, RunCalibrated
from ._validation import DollarCheck, Recorded, _recorded_pairs, as_recorded, check_dollars, recorded_totals

__all__ = ["FailedRun", "PolicyRecord", "RunRecord", "failure_reason", "record_of", "run_costing"]


@dataclass(frozen=True, slots=True)
class PolicyRecord:
    """One policy over one run: its totals, and how it compares with ``full`` there."""

    totals: Totals
    usd_void: bool = False  # the run is priced but the summarizer's tokens are not: no USD total
    excess: float | None = None  # cost / full's cost - 1 (None: full cost nothing)


@dataclass(frozen=True, slots=True)
class RunRecord:
    """Everything the bench document takes from one replayed run."""

    run_id: str
    family: str
    steps: int
    scale: float  # provider tokens per replayed token (its costing's)
    provider: str | None  # the provider its tokens are scaled to
    price_model: str | None
    cache_model: str
    inputs: Mapping[str, Any]  # its ``inputs.runs`` entry
    policies: Mapping[str, PolicyRecord]
    recorded: Recorded | None = None
    caching: RunCaching | None = None
    dollars: DollarCheck | None = None
    calibrated: RunCalibrated | None = None
    fidelity: RunFidelity | None = None
    timing: Mapping[str, Mapping[int, int]] = field(default_factory=dict)  # policy -> duration buckets
    anatomy: Anatomy | None = None  # full's cost per bucket (``_anatomy.py``)
    detail: bytes | None = None  # its ``runs[]`` entry (compact JSON, keys sorted), when asked for
    groups: tuple[str, ...] = ()  # the groups it is in besides its family (``_groups.py``)


@dataclass(frozen=True, slots=True)
class FailedRun:
    """A run whose replay raised. The bench goes on without it (fail open: one run never ends a
    bench); the document lists it under ``inputs.failed`` with the error, and counts none of it."""

    run_id: str
    steps: int  # its model calls (what the progress bar expected of it)
    reason: str  # the error's type and message


def failure_reason(error: BaseException) -> str:
    """What ``inputs.failed`` says of an error: its type, the start of its message, and where it
    was raised (the innermost frame)."""
    message = str(error)
    message = message if len(message) <= 200 else message[:197] + "..."
    frames = traceback.extract_tb(error.__traceback__)
    last = frames[-1] if frames else None
    where = f" (at {Path(last.filename).name}:{last.lineno} in {last.name})" if last is not None else ""
    return f"{type(error).__name__}: {message}{where}" if message else f"{type(error).__name__}{where}"


def run_costing(
    info: RunInfo, settings: ReplaySettings, providers: Mapping[str, ProviderCalibration]
) -> RunCosting:
    """USD pricing of one run: its model's prices and token scale (see ``_pricing.py``)."""
    summary = settings.summary_model
    return RunCosting.of(
        info.price_model,
        scale=info.token_scale,
        recorded_model=info.model,
        usage=info.usage,
        calibration=providers,
        summary_prices=model_prices(summary) if summary else None,
        writes_1h=info.cache_writes_1h,
        step_models=info.step_models,
        step_billing=info.step_billing,
        priced_as_recorded=settings.price_model is None,
    )


def record_of(
    info: RunInfo,
    replay: RunReplay,
    settings: ReplaySettings,
    providers: Mapping[str, ProviderCalibration],
    *,
    detail: bool = False,
) -> RunRecord:
    """The record of ``replay`` (the run ``info`` under every policy, ``full`` among them);
    ``providers``: the calibration the run was priced with; ``detail``: include its ``runs[]`` entry."""
    costing = run_costing(info, settings, providers)
    costs = {info.run_id: costing}
    per_run = {name: totals([m], settings.pricing, costs) for name, m in replay.policies.items()}
    full = per_run[BASELINE]
    policies = {
        name: PolicyRecord(t, _usd_void(costing, replay.policies[name]), _excess(t, full))
        for name, t in per_run.items()
    }
    usage = {info.run_id: info.usage}
    writes = {info.run_id: info.cache_writes_1h}
    baseline = replay.policies[BASELINE]
    priced = as_recorded(info.model, info.price_model)
    fidelities = fidelity([baseline], usage)
    anatomy = anatomy_of(baseline, settings.pricing, costing)
    entry = None
    if detail:
        both = {name: (replay.policies[name], t) for name, t in per_run.items()}
        entry = orjson.dumps(
            run_detail(info.run_id, len(replay.output_tokens), both, anatomy, info.uncounted_steps),
            option=orjson.OPT_SORT_KEYS,
        )
    return RunRecord(
        run_id=info.run_id,
        family=info.family,
        groups=groups_of(info.format),
        steps=info.steps,
        scale=costing.scale,
        provider=info.provider,
        price_model=info.price_model,
        cache_model=info.cache_model,
        inputs=inputs_entry(info),
        policies=policies,
        recorded=recorded_totals(
            [replay.policies], usage, writes, costs, frozenset({info.run_id} if priced else ())
        ),
        caching=_caching(baseline, info.usage),
        dollars=check_dollars([baseline], usage, writes, costs) if priced else None,
        calibrated=_calibrated(baseline, info.usage, token_scale(providers, provider_of(info.model))),
        fidelity=fidelities.per_run[0] if fidelities else None,
        timing={name: _buckets(m) for name, m in replay.policies.items()},
        detail=entry,
        anatomy=anatomy,
    )


def _usd_void(costing: RunCosting, metrics: PolicyRunMetrics) -> bool:
    """Priced, but the summarizer spent tokens of a model without a price (the USD total is null)."""
    return costing.prices is not None and costing.summary_usd(metrics.summary_usage) is None


def _excess(t: Totals, full: Totals) -> float | None:
    """``cost / full's cost - 1`` on one run (dollars where priced, else units); None: full cost 0."""
    cost, full_cost = run_cost(t, full)
    return cost / full_cost - 1 if full_cost else None


def _caching(full: PolicyRunMetrics, usage: Sequence[Usage | None]) -> RunCaching | None:
    """The run's share of cached prompt tokens, simulated against recorded, on its steps with usage."""
    pairs = _recorded_steps(full, usage)
    if not pairs:
        return None
    errors = [abs(s.cached_tokens / s.prompt_tokens - u.cached_tokens / u.prompt_tokens) for s, u in pairs]
    return RunCaching(
        steps=len(pairs),
        error_sum=sum(errors),
        simulated_cached=sum(s.cached_tokens for s, _ in pairs),
        simulated_prompt=sum(s.prompt_tokens for s, _ in pairs),
        recorded_cached=sum(u.cached_tokens for _, u in pairs),
        recorded_prompt=sum(u.prompt_tokens for _, u in pairs),
    )


def _calibrated(full: PolicyRunMetrics, usage: Sequence[Usage | None], scale: float) -> RunCalibrated | None:
    """The relative error of the calibrated replayed prompt against the recorded one, summed."""
    pairs = _recorded_pairs(full, usage)
    if not pairs:
        return None
    errors = [abs(scale * s.prompt_tokens - u.prompt_tokens) / u.prompt_tokens for s, u in pairs]
    return RunCalibrated(len(errors), sum(errors))


def _buckets(metrics: PolicyRunMetrics) -> dict[int, int]:
    return dict(Counter(Histogram.bucket(s.build_seconds) for s in metrics.steps))
