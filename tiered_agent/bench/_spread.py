"""How far a set of runs' figures could move on other runs like them: 95% intervals over runs.

Every figure the bench's tables report for a set of runs (all runs, a family, a group) is a ratio
of sums over its runs: a saving is ``1 - Σ policy / Σ full`` (tokens, input cost, dollars), a
ruler's rate ``Σ missed / Σ needed``. Other people's runs of the same agents are other draws of
runs, so each ratio comes with the interval of the ratio estimator (the delta method, Cochran,
*Sampling Techniques*, 6.3-6.4), over runs as the units:

    R = Y / X,   SE(R)^2 = n / (n - 1) * Σ (y_i - R x_i)^2 / X^2,   R ± t(0.975, d) * SE(R)

with ``X = Σ x_i``, ``Y = Σ y_i`` over the ``n`` runs. The ratio is a mean of the runs' own ratios
weighted by their sizes ``x_i``, so its degrees of freedom are those of the runs that carry it:
``d = ⌊n_eff⌋ - 1`` (at least 1) with Kish's effective number of runs ``n_eff = X^2 / Σ x_i^2``,
which is ``n`` for runs of one size and near 1 when one run outweighs the rest. With ``n - 1``
instead, the interval covered a ratio drawn from runs whose log-sizes spread as Claude Code's do
(1.8) only ~79% of the time (``tests/test_spread.py``'s simulation; now ~91%). A set whose ratio
rests on a few runs gets a wide interval; one of fewer than 3 runs, or whose denominator is 0, gets
none. The interval says how the set's own runs vary, nothing of runs unlike them (another agent,
another task mix).

The sums (``n``, ``X``, ``Y``, ``Σx²``, ``Σy²``, ``Σxy``) are integers: counts as they are, input
cost in millionths of a unit and dollars in billionths (each run's value rounded once), and the
interval is computed with fractions; so the document is the same in whatever order runs arrive and
shards merge (:mod:`._sums`), and a shard's state writes the sums as decimal strings (they outgrow
64 bits).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from fractions import Fraction
from typing import Any

from ._metrics import Totals
from ._sums import StateError, _int, _mapping

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


Pair = tuple[int, int]  # (x: the denominator's share of one run, y: the numerator's)
_COST_GRID = 10**6  # input cost in millionths of a unit
_USD_GRID = 10**9  # dollars in billionths


def _grid(full: float, value: float, per_unit: int) -> Pair | None:
    if not (math.isfinite(full) and math.isfinite(value)):
        return None
    return round(full * per_unit), round(value * per_unit)


def _pairs(t: Totals, full: Totals) -> tuple[Pair | None, ...]:
    """One run's pair of each of :data:`METRICS`, in order (None: the run has no such figure)."""
    usd = None if t.cost_usd is None or full.cost_usd is None else _grid(full.cost_usd, t.cost_usd, _USD_GRID)
    return (
        (full.input_tokens, t.input_tokens),
        _grid(full.input_cost, t.input_cost, _COST_GRID),
        usd,
        (t.salient, t.missed),
        (t.word_salient, t.word_missed),
        (t.line_needed, t.line_missed),
        (t.own_needed, t.own_missed),
    )


# the figures (their names in the document), each with whether it is a saving ``1 - R``
METRICS: tuple[tuple[str, bool], ...] = (
    ("token_savings_vs_full", True),
    ("input_cost_savings_vs_full", True),
    ("cost_usd_savings_vs_full", True),
    ("miss_rate", False),
    ("word_miss_rate", False),
    ("line_miss_rate", False),
    ("own_miss_rate", False),
)
_SUMS = 5  # X, Y, Σx², Σy², Σxy


class RatioSum:
    """The sums one ratio's interval needs, added run by run (integers: exact, merged in any order)."""

    __slots__ = ("n", "sums")

    def __init__(self) -> None:
        self.n = 0
        self.sums = [0] * _SUMS

    def add(self, x: int, y: int) -> None:
        self.n += 1
        sums = self.sums
        sums[0] += x
        sums[1] += y
        sums[2] += x * x
        sums[3] += y * y
        sums[4] += x * y

    def merge(self, other: RatioSum) -> None:
        self.n += other.n
        self.sums = [a + b for a, b in zip(self.sums, other.sums, strict=True)]

    def interval(self) -> tuple[float, float] | None:
        """(low, high) of the ratio ``Y / X`` (None: fewer than 3 runs, or ``X`` not positive)."""
        if self.n < 3:
            return None
        x, y, xx, yy, xy = self.sums
        if x <= 0:
            return None
        ratio = Fraction(y, x)
        spread = max(yy - 2 * ratio * xy + ratio * ratio * xx, Fraction(0))
        error = math.sqrt(float(spread * self.n / (self.n - 1))) / x
        half = t_quantile(max(1, x * x // xx - 1)) * error  # ⌊n_eff⌋ - 1 degrees of freedom
        return float(ratio) - half, float(ratio) + half

    def state(self) -> dict[str, Any]:
        return {"n": self.n, "sums": [str(v) for v in self.sums]}

    @classmethod
    def from_state(cls, data: Any, what: str) -> RatioSum:
        data = _mapping(data, what, frozenset({"n", "sums"}))
        out = cls()
        out.n = _int(data["n"], f"{what}.n")
        sums = data["sums"]
        if not isinstance(sums, list) or len(sums) != _SUMS:
            raise StateError(f"{what}.sums is not a list of {_SUMS} integers")
        out.sums = [_decimal(v, f"{what}.sums[{k}]") for k, v in enumerate(sums)]
        return out


def _decimal(value: Any, what: str) -> int:
    """An integer written as a decimal string (up to 1,000 digits)."""
    if not isinstance(value, str) or not 0 < len(value) <= 1000 or not value.lstrip("-").isdecimal():
        raise StateError(f"{what} is not an integer written in decimal")
    return int(value)


class SpreadSum:
    """Every policy's :data:`METRICS` sums over a set of runs, run by run."""

    __slots__ = ("_sums",)

    def __init__(self, names: Sequence[str]) -> None:
        self._sums = {name: tuple(RatioSum() for _ in METRICS) for name in names}

    def add(self, policies: Mapping[str, Totals], full: Totals) -> None:
        """One run: each policy's totals there, and ``full``'s."""
        for name, sums in self._sums.items():
            for total, pair in zip(sums, _pairs(policies[name], full), strict=True):
                if pair is not None:
                    total.add(*pair)

    def merge(self, other: SpreadSum) -> None:
        for name, sums in self._sums.items():
            for total, theirs in zip(sums, other._sums[name], strict=True):
                total.merge(theirs)

    def intervals(self, name: str) -> dict[str, list[float] | None]:
        """``{figure: [low, high]}`` of one policy (a saving's interval is ``1 - R``'s), rounded."""
        out: dict[str, list[float] | None] = {}
        for (metric, saving), total in zip(METRICS, self._sums[name], strict=True):
            found = total.interval()
            if found is None:
                out[metric] = None
                continue
            low, high = (1 - found[1], 1 - found[0]) if saving else (max(found[0], 0.0), found[1])
            out[metric] = [round(low, 6), round(high, 6)]
        return out

    def state(self) -> dict[str, Any]:
        return {
            name: {metric: total.state() for (metric, _), total in zip(METRICS, sums, strict=True)}
            for name, sums in sorted(self._sums.items())
        }

    @classmethod
    def from_state(cls, data: Any, names: Sequence[str], what: str) -> SpreadSum:
        data = _mapping(data, what, frozenset(names))
        out = cls(names)
        for name in names:
            sums = _mapping(data[name], f"{what}.{name}", frozenset(m for m, _ in METRICS))
            out._sums[name] = tuple(RatioSum.from_state(sums[m], f"{what}.{name}.{m}") for m, _ in METRICS)
        return out
