"""Sums over runs that do not depend on the order the runs arrive in, and merge exactly.

The bench folds each run into its totals as the run finishes (in whatever order the workers
finish them), and ``bench merge`` folds shards that were summed on other machines. For the
document to be the same whichever way the runs were added, every float is summed exactly:
:class:`ExactSum` keeps the sum as non-overlapping partials (Shewchuk's algorithm, the one
:func:`math.fsum` uses) and rounds once, when read. Integers are exact anyway; maxima break ties
by run id. Every accumulator here has ``state()`` (plain JSON, what a shard's document carries)
and ``from_state()`` (which checks what it reads: a shard document is input like any other).

The accumulators are values of one bench (never process-wide), mutated only by their owner.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from typing import Any

from ._losses import TOLERANCE
from ._metrics import Totals
from ._validation import CalibratedFidelity, DollarCheck, Recorded

__all__ = [
    "CachingSum",
    "CalibratedSum",
    "DollarSum",
    "ExactSum",
    "FidelitySum",
    "Histogram",
    "LossSum",
    "RecordedSum",
    "StateError",
    "TotalsSum",
]


class StateError(ValueError):
    """A shard document's ``shard.state`` is not what the bench writes (one sentence)."""


def _int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise StateError(f"{what} is not an integer")
    return value


def _float(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise StateError(f"{what} is not a number")
    return float(value)


def _mapping(value: Any, what: str, keys: frozenset[str] | None = None) -> Mapping[str, Any]:
    if not isinstance(value, Mapping):
        raise StateError(f"{what} is not an object")
    if keys is not None and set(value) != keys:
        wrong = sorted(keys ^ set(value))
        raise StateError(f"{what} does not have the keys the bench writes ({', '.join(wrong)})")
    return value


# --------------------------------------------------------------------------- exact floats
class ExactSum:
    """An exact sum of numbers: the same value whatever the order of :meth:`add` and :meth:`merge`.

    Like :func:`sum`, the sum of integers only (or of nothing) is an integer, else a float.
    """

    __slots__ = ("_floats", "_inexact", "_partials")

    def __init__(self) -> None:
        self._partials: list[float] = []
        self._inexact = 0.0  # infinities and NaN (never in the bench's numbers; kept, not lost)
        self._floats = False  # a float was added (else the sum is an integer)

    def add(self, value: float) -> None:
        self._floats |= isinstance(value, float)
        self._add(float(value))

    def _add(self, x: float) -> None:
        if not math.isfinite(x):
            self._inexact += x
            return
        partials = self._partials
        kept = 0
        for partial in partials:
            x, y = (partial, x) if abs(x) < abs(partial) else (x, partial)
            high = x + y
            low = y - (high - x)
            if low:
                partials[kept] = low
                kept += 1
            x = high
        partials[kept:] = [x]

    def merge(self, other: ExactSum) -> None:
        for value in other._partials:
            self._add(value)
        self._inexact += other._inexact
        self._floats |= other._floats

    @property
    def value(self) -> float:
        """The correctly rounded sum (an integer when only integers were added)."""
        total = math.fsum(self._partials) + self._inexact
        return total if self._floats else int(total)

    def state(self) -> list[float]:
        """The partials (integers when only integers were added, so that reading them back knows)."""
        values = [*self._partials, *([self._inexact] if self._inexact else [])]
        return values if self._floats else [int(v) for v in values]

    @classmethod
    def from_state(cls, data: Any, what: str) -> ExactSum:
        if not isinstance(data, list):
            raise StateError(f"{what} is not a list of numbers")
        total = cls()
        for index, value in enumerate(data):
            _float(value, f"{what}[{index}]")
            total.add(value)
        return total


def exact(values: Any) -> float:
    """The exact sum of an iterable of floats (:class:`ExactSum` at once)."""
    total = ExactSum()
    for value in values:
        total.add(value)
    return total.value


# --------------------------------------------------------------------------- totals
_FLOATS = ("effective_cost", "input_cost", "retrieval_turn_input_cost")
_SPECIAL = frozenset(
    {
        *_FLOATS,
        "peak_prompt_tokens",
        "retrieval_tokens",
        "calibrated_input_tokens",
        "calibrated_cached_tokens",
        "cost_usd",
        "priced_runs",
    }
)
# Every other field of Totals is an integer summed over runs (checked by tests/test_stream.py).
_INTS = tuple(f.name for f in dataclasses.fields(Totals) if f.name not in _SPECIAL)
_TOTALS_KEYS = frozenset({"ints", "floats", "peak", "retrieval", "calibrated", "usd", "priced", "usd_void"})


class TotalsSum:
    """One policy's :class:`~._metrics.Totals` over a set of runs, added run by run.

    What :func:`~._metrics.totals` computes over the runs at once, except that floats are summed
    exactly: calibrated tokens are each run's ``scale x tokens``, rounded once at the end; the USD
    total is null as soon as one priced run's summarizer spent tokens without a price.
    """

    __slots__ = ("_calibrated", "_floats", "_ints", "_peak", "_priced", "_retrieval", "_usd", "_usd_void")

    def __init__(self) -> None:
        self._ints = dict.fromkeys(_INTS, 0)
        self._floats = {name: ExactSum() for name in _FLOATS}
        self._peak = 0
        self._retrieval: int | None = None
        self._calibrated = (ExactSum(), ExactSum())  # prompt, cached: scale x replayed tokens
        self._usd = ExactSum()
        self._priced = 0
        self._usd_void = False

    def add(self, t: Totals, *, scale: float, usd_void: bool = False) -> None:
        """One run's totals (``totals([metrics], ...)``); ``scale``: its provider tokens per replayed
        token; ``usd_void``: it is priced but its summarizer's tokens are not."""
        for name in _INTS:
            self._ints[name] += getattr(t, name)
        for name in _FLOATS:
            self._floats[name].add(getattr(t, name))
        self._peak = max(self._peak, t.peak_prompt_tokens)
        if t.retrieval_tokens is not None:
            self._retrieval = (self._retrieval or 0) + t.retrieval_tokens
        self._calibrated[0].add(scale * t.prompt_tokens)
        self._calibrated[1].add(scale * t.cached_tokens)
        if t.cost_usd is not None:
            self._usd.add(t.cost_usd)
        self._priced += t.priced_runs
        self._usd_void |= usd_void

    def merge(self, other: TotalsSum) -> None:
        for name in _INTS:
            self._ints[name] += other._ints[name]
        for name in _FLOATS:
            self._floats[name].merge(other._floats[name])
        self._peak = max(self._peak, other._peak)
        if other._retrieval is not None:
            self._retrieval = (self._retrieval or 0) + other._retrieval
        self._calibrated[0].merge(other._calibrated[0])
        self._calibrated[1].merge(other._calibrated[1])
        self._usd.merge(other._usd)
        self._priced += other._priced
        self._usd_void |= other._usd_void

    def totals(self) -> Totals:
        priced = 0 if self._usd_void else self._priced
        fields: dict[str, Any] = {**self._ints, **{n: total.value for n, total in self._floats.items()}}
        return Totals(
            **fields,
            peak_prompt_tokens=self._peak,
            retrieval_tokens=self._retrieval,
            calibrated_input_tokens=round(self._calibrated[0].value) + self._ints["summary_input_tokens"],
            calibrated_cached_tokens=round(self._calibrated[1].value),
            cost_usd=self._usd.value if priced else None,
            priced_runs=priced,
        )

    def state(self) -> dict[str, Any]:
        return {
            "ints": dict(self._ints),
            "floats": {name: total.state() for name, total in self._floats.items()},
            "peak": self._peak,
            "retrieval": self._retrieval,
            "calibrated": [self._calibrated[0].state(), self._calibrated[1].state()],
            "usd": self._usd.state(),
            "priced": self._priced,
            "usd_void": self._usd_void,
        }

    @classmethod
    def from_state(cls, data: Any, what: str) -> TotalsSum:
        data = _mapping(data, what, _TOTALS_KEYS)
        out = cls()
        ints = _mapping(data["ints"], f"{what}.ints", frozenset(_INTS))
        out._ints = {name: _int(ints[name], f"{what}.ints.{name}") for name in _INTS}
        floats = _mapping(data["floats"], f"{what}.floats", frozenset(_FLOATS))
        out._floats = {n: ExactSum.from_state(floats[n], f"{what}.floats.{n}") for n in _FLOATS}
        out._peak = _int(data["peak"], f"{what}.peak")
        retrieval = data["retrieval"]
        out._retrieval = None if retrieval is None else _int(retrieval, f"{what}.retrieval")
        calibrated = data["calibrated"]
        if not isinstance(calibrated, list) or len(calibrated) != 2:
            raise StateError(f"{what}.calibrated is not a pair")
        out._calibrated = (
            ExactSum.from_state(calibrated[0], f"{what}.calibrated[0]"),
            ExactSum.from_state(calibrated[1], f"{what}.calibrated[1]"),
        )
        out._usd = ExactSum.from_state(data["usd"], f"{what}.usd")
        out._priced = _int(data["priced"], f"{what}.priced")
        if not isinstance(data["usd_void"], bool):
            raise StateError(f"{what}.usd_void is not a boolean")
        out._usd_void = data["usd_void"]
        return out


class LossSum:
    """The runs on which a policy costs more than ``full`` (:mod:`._losses`), run by run."""

    __slots__ = ("_costlier", "_runs", "_worst")

    def __init__(self) -> None:
        self._runs = 0
        self._costlier = 0
        self._worst: tuple[float, str] | None = None  # the largest excess; ties: the smallest run id

    def add(self, excess: float | None, run_id: str) -> None:
        """One run: ``cost / full's cost - 1`` (None: ``full`` cost nothing on it)."""
        self._runs += 1
        if excess is None:
            return
        self._costlier += excess > TOLERANCE
        self._keep(excess, run_id)

    def _keep(self, excess: float, run_id: str) -> None:
        worst = self._worst
        if worst is None or excess > worst[0] or (excess == worst[0] and run_id < worst[1]):
            self._worst = (excess, run_id)

    def merge(self, other: LossSum) -> None:
        self._runs += other._runs
        self._costlier += other._costlier
        if other._worst is not None:
            self._keep(*other._worst)

    def result(self) -> dict[str, Any]:
        worst = self._worst
        return {
            "runs_costlier_than_full": self._costlier,
            "runs_costlier_than_full_share": round(self._costlier / self._runs, 6) if self._runs else None,
            "worst_excess_vs_full": None if worst is None else round(worst[0], 6),
            "worst_excess_run": None if worst is None else worst[1],
        }

    def state(self) -> dict[str, Any]:
        return {"runs": self._runs, "costlier": self._costlier, "worst": self._worst and list(self._worst)}

    @classmethod
    def from_state(cls, data: Any, what: str) -> LossSum:
        data = _mapping(data, what, frozenset({"runs", "costlier", "worst"}))
        out = cls()
        out._runs = _int(data["runs"], f"{what}.runs")
        out._costlier = _int(data["costlier"], f"{what}.costlier")
        worst = data["worst"]
        if worst is not None:
            if not isinstance(worst, list) or len(worst) != 2 or not isinstance(worst[1], str):
                raise StateError(f"{what}.worst is not [excess, run id]")
            out._worst = (_float(worst[0], f"{what}.worst[0]"), worst[1])
        return out


# --------------------------------------------------------------------------- against the recorded usage
class RecordedSum:
    """What runs cost as recorded, next to each policy (:func:`~._validation.recorded_totals`)."""

    _INTS = ("runs", "steps", "prompt_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")
    __slots__ = ("_cost", "_ints", "_policies", "_priced")

    def __init__(self) -> None:
        self._ints = dict.fromkeys(self._INTS, 0)
        self._priced = 0
        self._cost = ExactSum()
        self._policies: dict[str, ExactSum] = {}

    def add(self, run: Recorded | None) -> None:
        """One run's :class:`Recorded` (None: it recorded no usage)."""
        if run is None:
            return
        for name in self._INTS:
            self._ints[name] += getattr(run, name)
        self._priced += run.priced_runs
        if run.cost_usd is not None:
            self._cost.add(run.cost_usd)
        for name, usd in run.policy_usd.items():
            self._policies.setdefault(name, ExactSum()).add(usd)

    def merge(self, other: RecordedSum) -> None:
        for name in self._INTS:
            self._ints[name] += other._ints[name]
        self._priced += other._priced
        self._cost.merge(other._cost)
        for name, usd in other._policies.items():
            self._policies.setdefault(name, ExactSum()).merge(usd)

    def result(self) -> Recorded | None:
        if not self._ints["runs"]:
            return None
        return Recorded(
            **self._ints,
            priced_runs=self._priced,
            cost_usd=self._cost.value if self._priced else None,
            policy_usd={name: usd.value for name, usd in sorted(self._policies.items())},
        )

    def state(self) -> dict[str, Any]:
        return {
            "ints": dict(self._ints),
            "priced": self._priced,
            "cost": self._cost.state(),
            "policies": {name: usd.state() for name, usd in sorted(self._policies.items())},
        }

    @classmethod
    def from_state(cls, data: Any, what: str) -> RecordedSum:
        data = _mapping(data, what, frozenset({"ints", "priced", "cost", "policies"}))
        out = cls()
        ints = _mapping(data["ints"], f"{what}.ints", frozenset(cls._INTS))
        out._ints = {name: _int(ints[name], f"{what}.ints.{name}") for name in cls._INTS}
        out._priced = _int(data["priced"], f"{what}.priced")
        out._cost = ExactSum.from_state(data["cost"], f"{what}.cost")
        policies = _mapping(data["policies"], f"{what}.policies")
        out._policies = {str(n): ExactSum.from_state(v, f"{what}.policies.{n}") for n, v in policies.items()}
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class RunCaching:
    """One run's simulated cache hits against the recorded ones (``full``, steps with usage)."""

    steps: int
    error_sum: float  # sum over those steps of |simulated share - recorded share|
    simulated_cached: int
    simulated_prompt: int
    recorded_cached: int
    recorded_prompt: int


class CachingSum:
    """:func:`~._metrics.validate_caching`'s pooled numbers, run by run."""

    _INTS = ("runs", "steps", "simulated_cached", "simulated_prompt", "recorded_cached", "recorded_prompt")
    __slots__ = ("_error", "_ints")

    def __init__(self) -> None:
        self._ints = dict.fromkeys(self._INTS, 0)
        self._error = ExactSum()

    def add(self, run: RunCaching | None) -> None:
        if run is None:
            return
        self._ints["runs"] += 1
        for name in self._INTS[1:]:
            self._ints[name] += getattr(run, name)
        self._error.add(run.error_sum)

    def merge(self, other: CachingSum) -> None:
        for name in self._INTS:
            self._ints[name] += other._ints[name]
        self._error.merge(other._error)

    def result(self) -> tuple[int, int, float, float, float] | None:
        """``(runs, steps, mean abs error, simulated share, recorded share)``; None: no run."""
        n = self._ints
        if not n["runs"]:
            return None
        return (
            n["runs"],
            n["steps"],
            self._error.value / n["steps"],
            n["simulated_cached"] / n["simulated_prompt"],
            n["recorded_cached"] / n["recorded_prompt"],
        )

    def state(self) -> dict[str, Any]:
        return {"ints": dict(self._ints), "error": self._error.state()}

    @classmethod
    def from_state(cls, data: Any, what: str) -> CachingSum:
        data = _mapping(data, what, frozenset({"ints", "error"}))
        out = cls()
        ints = _mapping(data["ints"], f"{what}.ints", frozenset(cls._INTS))
        out._ints = {name: _int(ints[name], f"{what}.ints.{name}") for name in cls._INTS}
        out._error = ExactSum.from_state(data["error"], f"{what}.error")
        return out


class DollarSum:
    """:func:`~._validation.check_dollars` run by run."""

    __slots__ = ("_logged", "_recorded", "_runs", "_simulated", "_steps")

    def __init__(self) -> None:
        self._runs = self._steps = self._logged = 0
        self._recorded = ExactSum()
        self._simulated = ExactSum()

    def add(self, run: DollarCheck | None) -> None:
        if run is None:
            return
        self._runs += run.runs
        self._steps += run.steps
        self._logged += run.logged_steps
        self._recorded.add(run.recorded_usd)
        self._simulated.add(run.simulated_usd)

    def merge(self, other: DollarSum) -> None:
        self._runs += other._runs
        self._steps += other._steps
        self._logged += other._logged
        self._recorded.merge(other._recorded)
        self._simulated.merge(other._simulated)

    def result(self) -> DollarCheck | None:
        if not self._steps:
            return None
        return DollarCheck(self._runs, self._steps, self._recorded.value, self._simulated.value, self._logged)

    def state(self) -> dict[str, Any]:
        return {
            "runs": self._runs,
            "steps": self._steps,
            "logged": self._logged,
            "recorded": self._recorded.state(),
            "simulated": self._simulated.state(),
        }

    @classmethod
    def from_state(cls, data: Any, what: str) -> DollarSum:
        data = _mapping(data, what, frozenset({"runs", "steps", "logged", "recorded", "simulated"}))
        out = cls()
        out._runs = _int(data["runs"], f"{what}.runs")
        out._steps = _int(data["steps"], f"{what}.steps")
        out._logged = _int(data["logged"], f"{what}.logged")
        out._recorded = ExactSum.from_state(data["recorded"], f"{what}.recorded")
        out._simulated = ExactSum.from_state(data["simulated"], f"{what}.simulated")
        return out


@dataclasses.dataclass(frozen=True, slots=True)
class RunCalibrated:
    """One run's calibrated prompt against the recorded one: steps and the sum of relative errors."""

    steps: int
    error_sum: float


class CalibratedSum:
    """:func:`~._validation.calibrated_fidelity` run by run."""

    __slots__ = ("_error", "_runs", "_steps")

    def __init__(self) -> None:
        self._runs = self._steps = 0
        self._error = ExactSum()

    def add(self, run: RunCalibrated | None) -> None:
        if run is None or not run.steps:
            return
        self._runs += 1
        self._steps += run.steps
        self._error.add(run.error_sum)

    def merge(self, other: CalibratedSum) -> None:
        self._runs += other._runs
        self._steps += other._steps
        self._error.merge(other._error)

    def result(self) -> CalibratedFidelity | None:
        if not self._steps:
            return None
        return CalibratedFidelity(self._runs, self._steps, self._error.value / self._steps)

    def state(self) -> dict[str, Any]:
        return {"runs": self._runs, "steps": self._steps, "error": self._error.state()}

    @classmethod
    def from_state(cls, data: Any, what: str) -> CalibratedSum:
        data = _mapping(data, what, frozenset({"runs", "steps", "error"}))
        out = cls()
        out._runs = _int(data["runs"], f"{what}.runs")
        out._steps = _int(data["steps"], f"{what}.steps")
        out._error = ExactSum.from_state(data["error"], f"{what}.error")
        return out


class FidelitySum:
    """Replayed ``full`` prompt tokens against the recorded ones (:func:`~._metrics.fidelity`)."""

    _INTS = ("runs", "steps", "replayed", "recorded")
    __slots__ = ("_ints",)

    def __init__(self) -> None:
        self._ints = dict.fromkeys(self._INTS, 0)

    def add(self, steps: int, replayed: int, recorded: int) -> None:
        for name, value in zip(self._INTS, (1, steps, replayed, recorded), strict=True):
            self._ints[name] += value

    def merge(self, other: FidelitySum) -> None:
        for name in self._INTS:
            self._ints[name] += other._ints[name]

    def result(self) -> tuple[int, int, int, int] | None:
        """``(runs, steps, replayed tokens, recorded tokens)``; None: no run recorded usage."""
        n = self._ints
        return (n["runs"], n["steps"], n["replayed"], n["recorded"]) if n["runs"] else None

    def state(self) -> dict[str, Any]:
        return dict(self._ints)

    @classmethod
    def from_state(cls, data: Any, what: str) -> FidelitySum:
        data = _mapping(data, what, frozenset(cls._INTS))
        out = cls()
        out._ints = {name: _int(data[name], f"{what}.{name}") for name in cls._INTS}
        return out


# --------------------------------------------------------------------------- timing
class Histogram:
    """Durations in buckets 2% wide (log scale), so that percentiles over any number of steps take
    bounded memory and merge; a percentile is its bucket's middle (within 1% of the exact one)."""

    _BASE = math.log(1.02)
    _ZERO = -(10**6)  # the bucket of durations <= 0
    __slots__ = ("_counts",)

    def __init__(self) -> None:
        self._counts: dict[int, int] = {}

    @classmethod
    def bucket(cls, seconds: float) -> int:
        return math.floor(math.log(seconds) / cls._BASE) if seconds > 0 else cls._ZERO

    def add_bucket(self, bucket: int, count: int = 1) -> None:
        self._counts[bucket] = self._counts.get(bucket, 0) + count

    def merge(self, other: Histogram) -> None:
        for bucket, count in other._counts.items():
            self.add_bucket(bucket, count)

    @property
    def count(self) -> int:
        return sum(self._counts.values())

    def percentile(self, q: float) -> float:
        """Nearest-rank percentile (``q`` in [0, 100]) in seconds; 0.0 for no durations."""
        total = self.count
        if not total:
            return 0.0
        rank = min(max(1, math.ceil(q / 100 * total)), total)
        seen = 0
        for bucket in sorted(self._counts):
            seen += self._counts[bucket]
            if seen >= rank:
                return 0.0 if bucket == self._ZERO else math.exp((bucket + 0.5) * self._BASE)
        return 0.0  # unreachable: the counts add up to total

    def state(self) -> dict[str, int]:
        return {str(bucket): count for bucket, count in sorted(self._counts.items())}

    @classmethod
    def from_state(cls, data: Any, what: str) -> Histogram:
        out = cls()
        for key, count in _mapping(data, what).items():
            try:
                bucket = int(key)
            except ValueError:
                raise StateError(f"{what} has a bucket that is not an integer") from None
            out.add_bucket(bucket, _int(count, f"{what}.{key}"))
        return out
