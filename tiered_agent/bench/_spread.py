"""How far a set of runs' figures could move on other runs like them: 95% intervals over runs.

Every figure the bench's tables report for a set of runs (all runs, a family, a group) is a ratio
of sums over its runs: a saving is ``1 - Σ policy / Σ full`` (tokens, input cost, dollars), a
ruler's rate ``Σ missed / Σ needed``. Other people's runs of the same agents are other draws of
runs, so each ratio comes with the interval of the ratio estimator (the delta method, Cochran,
*Sampling Techniques*, 6.3-6.4), over runs as the units:

    R = Y / X,   SE(R)^2 = n / (n - 1) * Σ (y_i - R x_i)^2 / X^2,   R ± t(0.975, n - 1) * SE(R)

with ``X = Σ x_i``, ``Y = Σ y_i`` over the ``n`` runs. A set whose ratio rests on a few runs gets a
wide interval; one of fewer than 3 runs, or whose denominator is 0, gets none. The interval says
how the set's own runs vary, nothing of runs unlike them (another agent, another task mix).

The sums (``n``, ``X``, ``Y``, ``Σx²``, ``Σy²``, ``Σxy``) are exact: integers as integers, floats
as :class:`~._sums.ExactSum`, and the interval is computed with fractions; so the document is the
same in whatever order runs arrive and shards merge (:mod:`._sums`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from ._metrics import Totals
from ._sums import ExactSum, StateError, _int, _mapping

__all__ = ["METRICS", "RatioSum", "SpreadSum", "t_quantile"]

# The Student t distribution's 0.975 quantile for 1..30 degrees of freedom (beyond: the expansion).
_T975 = (
    12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042,
)  # fmt: skip
_Z975 = 1.959964


def t_quantile(df: int) -> float:
    """The 0.975 quantile of Student's t with ``df`` degrees of freedom (the table to 30, then the
    Cornish-Fisher expansion around the normal's, within 1e-4 there)."""
    if df < 1:
        raise ValueError("degrees of freedom must be at least 1")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    return z + (z**3 + z) / (4 * df) + (5 * z**5 + 16 * z**3 + 3 * z) / (96 * df**2)


Pair = tuple[float, float]  # (x: the denominator's share of one run, y: the numerator's)


def _usd(t: Totals, full: Totals) -> Pair | None:
    if t.cost_usd is None or full.cost_usd is None:
        return None
    return full.cost_usd, t.cost_usd


# name in the document -> (one run's pair, whether the figure is a saving ``1 - R``)
METRICS: dict[str, tuple[Callable[[Totals, Totals], Pair | None], bool]] = {
    "token_savings_vs_full": (lambda t, full: (full.input_tokens, t.input_tokens), True),
    "input_cost_savings_vs_full": (lambda t, full: (full.input_cost, t.input_cost), True),
    "cost_usd_savings_vs_full": (_usd, True),
    "miss_rate": (lambda t, full: (t.salient, t.missed), False),
    "word_miss_rate": (lambda t, full: (t.word_salient, t.word_missed), False),
    "line_miss_rate": (lambda t, full: (t.line_needed, t.line_missed), False),
    "own_miss_rate": (lambda t, full: (t.own_needed, t.own_missed), False),
}
_SUMS = 5  # X, Y, Σx², Σy², Σxy


class RatioSum:
    """The sums one ratio's interval needs, added run by run (exact, merged in any order)."""

    __slots__ = ("_floats", "_ints", "n")

    def __init__(self) -> None:
        self.n = 0
        self._ints = [0] * _SUMS
        self._floats: list[ExactSum] | None = None  # made at the first float added

    def add(self, x: float, y: float) -> None:
        self.n += 1
        if isinstance(x, int) and isinstance(y, int):  # counts: summed as integers, exactly
            ints = self._ints
            for k, value in enumerate((x, y, x * x, y * y, x * y)):
                ints[k] += value
            return
        for total, term in zip(self._exact(), (x, y, x * x, y * y, x * y), strict=True):
            total.add(term)

    def _exact(self) -> list[ExactSum]:
        if self._floats is None:
            self._floats = [ExactSum() for _ in range(_SUMS)]
        return self._floats

    def merge(self, other: RatioSum) -> None:
        self.n += other.n
        self._ints = [a + b for a, b in zip(self._ints, other._ints, strict=True)]
        if other._floats is not None:
            for mine, theirs in zip(self._exact(), other._floats, strict=True):
                mine.merge(theirs)

    def _sums(self) -> list[Fraction]:
        floats = self._floats
        return [
            Fraction(self._ints[k]) + (Fraction(floats[k].value) if floats is not None else 0)
            for k in range(_SUMS)
        ]

    def interval(self) -> Pair | None:
        """(low, high) of the ratio ``Y / X`` (None: fewer than 3 runs, or ``X`` not positive)."""
        if self.n < 3:
            return None
        x, y, xx, yy, xy = self._sums()
        if x <= 0:
            return None
        ratio = y / x
        spread = max(yy - 2 * ratio * xy + ratio * ratio * xx, Fraction(0))
        error = math.sqrt(float(spread * self.n / (self.n - 1))) / float(x)
        half = t_quantile(self.n - 1) * error
        return float(ratio) - half, float(ratio) + half

    def state(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "ints": list(self._ints),
            "floats": None if self._floats is None else [f.state() for f in self._floats],
        }

    @classmethod
    def from_state(cls, data: Any, what: str) -> RatioSum:
        data = _mapping(data, what, frozenset({"n", "ints", "floats"}))
        out = cls()
        out.n = _int(data["n"], f"{what}.n")
        ints = data["ints"]
        if not isinstance(ints, list) or len(ints) != _SUMS:
            raise StateError(f"{what}.ints is not a list of {_SUMS} integers")
        out._ints = [_int(v, f"{what}.ints[{k}]") for k, v in enumerate(ints)]
        floats = data["floats"]
        if floats is not None:
            if not isinstance(floats, list) or len(floats) != _SUMS:
                raise StateError(f"{what}.floats is not a list of {_SUMS} sums")
            out._floats = [ExactSum.from_state(v, f"{what}.floats[{k}]") for k, v in enumerate(floats)]
        return out


class SpreadSum:
    """Every policy's :data:`METRICS` sums over a set of runs, run by run."""

    __slots__ = ("_sums",)

    def __init__(self, names: Sequence[str]) -> None:
        self._sums = {name: {metric: RatioSum() for metric in METRICS} for name in names}

    def add(self, policies: Mapping[str, Totals], full: Totals) -> None:
        """One run: each policy's totals there, and ``full``'s."""
        for name, sums in self._sums.items():
            t = policies[name]
            for metric, (pair, _) in METRICS.items():
                found = pair(t, full)
                if found is not None:
                    sums[metric].add(*found)

    def merge(self, other: SpreadSum) -> None:
        for name, sums in self._sums.items():
            for metric, total in sums.items():
                total.merge(other._sums[name][metric])

    def intervals(self, name: str) -> dict[str, list[float] | None]:
        """``{figure: [low, high]}`` of one policy (a saving's interval is ``1 - R``'s), rounded."""
        out: dict[str, list[float] | None] = {}
        for metric, (_, saving) in METRICS.items():
            found = self._sums[name][metric].interval()
            if found is None:
                out[metric] = None
                continue
            low, high = (1 - found[1], 1 - found[0]) if saving else (max(found[0], 0.0), found[1])
            out[metric] = [round(low, 6), round(high, 6)]
        return out

    def state(self) -> dict[str, Any]:
        return {
            name: {metric: total.state() for metric, total in sums.items()}
            for name, sums in sorted(self._sums.items())
        }

    @classmethod
    def from_state(cls, data: Any, names: Sequence[str], what: str) -> SpreadSum:
        data = _mapping(data, what, frozenset(names))
        out = cls(names)
        for name in names:
            sums = _mapping(data[name], f"{what}.{name}", frozenset(METRICS))
            out._sums[name] = {m: RatioSum.from_state(sums[m], f"{what}.{name}.{m}") for m in METRICS}
        return out
