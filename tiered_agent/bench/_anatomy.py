"""The anatomy of ``full``'s cost: which part of it a context policy can reach at all.

Every replayed request is three stretches of tokens (``StepMetrics.fixed_tokens`` and ``new_tokens``,
measured where the request is sent: ``_replay.py``):

- **fixed**: the unrecorded prefix, the tool schemas and the request's opening messages of
  iteration 0 (system prompt, task; after a compaction, its summary), which every request sends
  first; and the reply primer (``PROMPT_OVERHEAD``) that closes every request;
- **history**: the messages between: sent by an earlier request of the run, sent again;
- **new**: the messages at the end of the request (before the primer) that no earlier request of
  the run sent.

The cache simulation bills each request as read, written and uncached tokens (``_caching.py``,
the *kinds*); its model serves reads from the start of the request (the primer is never part of
a cached prefix) and writes the tokens that follow them, so the first ``cached`` tokens are the
read ones, the next ``written`` the written ones and the rest uncached. Each cell (bucket x kind)
holds the overlap of the two splits, priced as the run's totals price it: the normalized input
cost (:class:`~._caching.Pricing`, uncached input = 1) and USD (:class:`~._pricing.RunCosting`, at
the step's price tier and write lifetime). The cells sum to the totals exactly in tokens, and to
the float rounding of the sums in costs; output tokens' dollars are their own bucket, which no
context policy changes.

**Reach**: the share of ``full``'s cost that lies in history, the most a policy can save without
hiding the system prompt, the tools or a new message. A policy's saving over the reach says how much
of what history costs it takes away.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._tokens import PROMPT_OVERHEAD
from ._caching import Pricing
from ._metrics import PolicyRunMetrics, StepMetrics, Totals
from ._pricing import RunCosting
from ._sums import ExactSum, StateError, _int, _mapping

__all__ = ["BUCKETS", "CELLS", "KINDS", "Anatomy", "AnatomySum", "anatomy_dict", "anatomy_of", "step_split"]

BUCKETS = ("fixed", "history", "new")  # where the tokens sit in the request, in order
KINDS = ("read", "written", "uncached")  # how the cache simulation billed them
_STATE_KEYS = frozenset({"runs", "priced_runs", "tokens", "input_cost", "usd", "output_usd"})

Split = tuple[tuple[int, int, int], tuple[int, int, int], tuple[int, int, int]]  # bucket -> kind -> tokens


def _overlap(start: int, end: int, low: int, high: int) -> int:
    return max(0, min(end, high) - max(start, low))


def step_split(step: StepMetrics) -> Split:
    """A step's tokens per bucket (fixed, history, new) and kind (read, written, uncached)."""
    prompt = step.prompt_tokens
    fixed = min(max(step.fixed_tokens, 0), prompt)
    new = min(max(step.new_tokens, 0), prompt - fixed)
    read = min(max(step.cached_tokens, 0), prompt)
    written = min(max(step.cache_write_tokens, 0), prompt - read)
    primer = min(PROMPT_OVERHEAD, fixed)  # the reply primer closes the request (no cache reads it)
    start, end = fixed - primer, prompt - primer  # the fixed start; where the messages end
    # The request is fixed [0, start), history [start, end - new), new [end - new, end), fixed
    # [end, prompt); the kinds are [0, read), [read, read + written), [read + written, prompt). A
    # bucket's tokens in a kind are its tokens before the kind's end less those before its start.
    cut = (read, read + written, prompt)
    fixed_at = [min(x, start) + max(x - end, 0) for x in cut]
    history_at = [min(max(x, start), end - new) - start for x in cut]
    new_at = [min(max(x, end - new), end) - (end - new) for x in cut]
    return (
        (fixed_at[0], fixed_at[1] - fixed_at[0], fixed_at[2] - fixed_at[1]),
        (history_at[0], history_at[1] - history_at[0], history_at[2] - history_at[1]),
        (new_at[0], new_at[1] - new_at[0], new_at[2] - new_at[1]),
    )


CELLS = len(BUCKETS) * len(KINDS)  # a flat grid: cell ``bucket * 3 + kind``


@dataclass(frozen=True, slots=True)
class Anatomy:
    """``full``'s cost on one run, per cell of buckets (:data:`BUCKETS`) x kinds (:data:`KINDS`)."""

    tokens: tuple[int, ...]  # per cell
    input_cost: tuple[float, ...]  # per cell, in uncached-input-token units
    usd: tuple[float, ...] | None  # per cell (None: the run is not priced)
    output_usd: float | None  # the output tokens' dollars (None: not priced)

    def bucket(self, values: Sequence[float], bucket: str) -> float:
        """The sum of a bucket's cells of ``values`` (``tokens``, ``input_cost`` or ``usd``)."""
        at = BUCKETS.index(bucket) * len(KINDS)
        return sum(values[at : at + len(KINDS)])


def anatomy_of(full: PolicyRunMetrics, pricing: Pricing, costing: RunCosting | None) -> Anatomy:
    """The anatomy of ``full``'s replay of one run (``costing``: its USD prices; None: unpriced)."""
    tokens = [0] * CELLS
    units = [0.0] * CELLS
    unit_rates = (pricing.cache_discount, full.cache_write_premium, 1.0)
    usd, output = [0.0] * CELLS, 0.0
    priced = costing if costing is not None and costing.prices is not None else None
    for step in full.steps:
        cells = [n for kinds in step_split(step) for n in kinds]
        rates = priced.input_rates(step.step, step.prompt_tokens) if priced else None
        for cell, n in enumerate(cells):
            tokens[cell] += n
            units[cell] += n * unit_rates[cell % len(KINDS)]
            if rates is not None:
                usd[cell] += n * rates[cell % len(KINDS)]
        if priced:
            output += priced.output_usd(step.step, step.prompt_tokens, step.output_tokens)
    return Anatomy(
        tokens=tuple(tokens),
        input_cost=tuple(units),
        usd=tuple(usd) if priced else None,
        output_usd=output if priced else None,
    )


class AnatomySum:
    """:class:`Anatomy` over a set of runs (a family, all runs), summed exactly (``_sums.py``)."""

    __slots__ = ("_input_cost", "_output_usd", "_priced", "_runs", "_tokens", "_usd")

    def __init__(self) -> None:
        self._runs = 0
        self._priced = 0
        self._tokens = [0] * CELLS
        self._input_cost = [ExactSum() for _ in range(CELLS)]
        self._usd = [ExactSum() for _ in range(CELLS)]
        self._output_usd = ExactSum()

    @property
    def runs(self) -> int:
        return self._runs

    def add(self, run: Anatomy | None) -> None:
        if run is None:
            return
        self._runs += 1
        for cell in range(CELLS):
            self._tokens[cell] += run.tokens[cell]
            self._input_cost[cell].add(run.input_cost[cell])
            if run.usd is not None:
                self._usd[cell].add(run.usd[cell])
        if run.usd is not None and run.output_usd is not None:
            self._priced += 1
            self._output_usd.add(run.output_usd)

    def merge(self, other: AnatomySum) -> None:
        self._runs += other._runs
        self._priced += other._priced
        for cell in range(CELLS):
            self._tokens[cell] += other._tokens[cell]
            self._input_cost[cell].merge(other._input_cost[cell])
            self._usd[cell].merge(other._usd[cell])
        self._output_usd.merge(other._output_usd)

    def result(self) -> Anatomy | None:
        """The summed anatomy (None: no run)."""
        if not self._runs:
            return None
        return Anatomy(
            tokens=tuple(self._tokens),
            input_cost=tuple(float(s.value) for s in self._input_cost),
            usd=tuple(float(s.value) for s in self._usd) if self._priced else None,
            output_usd=float(self._output_usd.value) if self._priced else None,
        )

    def state(self) -> dict[str, Any]:
        return {
            "runs": self._runs,
            "priced_runs": self._priced,
            "tokens": list(self._tokens),
            "input_cost": [s.state() for s in self._input_cost],
            "usd": [s.state() for s in self._usd],
            "output_usd": self._output_usd.state(),
        }

    @classmethod
    def from_state(cls, data: Any, what: str) -> AnatomySum:
        data = _mapping(data, what, _STATE_KEYS)
        out = cls()
        out._runs = _int(data["runs"], f"{what}.runs")
        out._priced = _int(data["priced_runs"], f"{what}.priced_runs")
        out._tokens = [_int(n, f"{what}.tokens") for n in _cells(data["tokens"], f"{what}.tokens")]
        out._input_cost = [
            ExactSum.from_state(s, f"{what}.input_cost")
            for s in _cells(data["input_cost"], f"{what}.input_cost")
        ]
        out._usd = [ExactSum.from_state(s, f"{what}.usd") for s in _cells(data["usd"], f"{what}.usd")]
        out._output_usd = ExactSum.from_state(data["output_usd"], f"{what}.output_usd")
        return out


def _cells(value: Any, what: str) -> list[Any]:
    if not isinstance(value, list) or len(value) != CELLS:
        raise StateError(f"{what} is not a list of {CELLS}")
    return value


def _round(value: float) -> float:
    return round(value, 6)


def _shares(parts: Mapping[str, float], total: float) -> dict[str, float | None]:
    return {name: _round(part / total) if total else None for name, part in parts.items()}


def _saving(full: float | None, policy: float | None, reach: float | None) -> float | None:
    """What a policy saved against ``full``, over the reach (None: unpriced, or nothing to reach)."""
    if full is None or policy is None or not reach:
        return None
    return _round((full - policy) / reach)


def _usd_of(t: Totals, full: Totals) -> float | None:
    """A policy's USD where it is comparable with ``full``'s (the same priced runs)."""
    return t.cost_usd if t.cost_usd is not None and t.priced_runs == full.priced_runs else None


def _grid(values: Sequence[float]) -> dict[str, dict[str, float]]:
    """The cells as ``{bucket: {kind: value}}`` (rounded as the document holds floats)."""
    width = len(KINDS)
    return {
        bucket: {kind: _round(values[b * width + k]) for k, kind in enumerate(KINDS)}
        for b, bucket in enumerate(BUCKETS)
    }


def _dollars(a: Anatomy) -> dict[str, Any]:
    """The USD part of an anatomy (all None: unpriced)."""
    if a.usd is None or a.output_usd is None:
        return {"usd": None, "usd_by_kind": None, "usd_shares": None, "reach_usd": None}
    usd = {b: a.bucket(a.usd, b) for b in BUCKETS} | {"output": a.output_usd}
    total = sum(usd.values())
    return {
        "usd": {name: _round(v) for name, v in usd.items()} | {"total": _round(total)},
        "usd_by_kind": _grid(a.usd),
        "usd_shares": _shares(usd, total),
        "reach_usd": _round(usd["history"] / total) if total else None,
    }


def anatomy_dict(a: Anatomy | None, policies: Mapping[str, Totals], full: str) -> dict[str, Any] | None:
    """The document's ``anatomy`` of a set of runs: ``full``'s cost per bucket (and per kind), the
    reach, and each policy's saving over the reach (``policies``: every policy's totals on the same
    runs; ``full``: the baseline's name). None: no run."""
    if a is None:
        return None
    base = policies[full]
    input_cost = {b: a.bucket(a.input_cost, b) for b in BUCKETS}
    cost = sum(input_cost.values())
    width = len(KINDS)
    out: dict[str, Any] = {
        "tokens": {
            bucket: {kind: a.tokens[b * width + k] for k, kind in enumerate(KINDS)}
            for b, bucket in enumerate(BUCKETS)
        },
        "input_cost": {name: _round(v) for name, v in input_cost.items()} | {"total": _round(cost)},
        "input_cost_by_kind": _grid(a.input_cost),
        "input_cost_shares": _shares(input_cost, cost),
        "reach_input_cost": _round(input_cost["history"] / cost) if cost else None,
        **_dollars(a),
    }
    prompt, history = sum(a.tokens), a.bucket(a.tokens, "history")
    out["reach_tokens"] = _round(history / prompt) if prompt else None
    history_usd = a.bucket(a.usd, "history") if a.usd is not None else None
    out["saving_over_reach"] = {
        name: {
            "tokens": _saving(base.input_tokens, t.input_tokens, history),
            "input_cost": _saving(base.input_cost, t.input_cost, input_cost["history"]),
            "usd": _saving(_usd_of(base, base), _usd_of(t, base), history_usd),
        }
        for name, t in sorted(policies.items())
    }
    return out
