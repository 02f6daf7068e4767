"""How far a set of runs' figures could move on other runs like them: 95% intervals over runs.

Every figure the bench's tables report for a set of runs (all runs, a family, a group) is a ratio
of sums over its runs: a saving is ``1 - Σ policy / Σ full`` (tokens, input cost, dollars), a
ruler's rate ``Σ missed / Σ needed``. Other people's runs of the same agents are other draws of
runs, so each ratio ``R = Y / X`` (``X = Σ x_i``, ``Y = Σ y_i`` over the ``n`` runs) comes with an
interval over runs as the units, built from the runs' residuals ``e_i = y_i - R x_i``:

- **variance**: the ratio estimator's (Cochran, *Sampling Techniques*, 6.3-6.4) with each run's
  leverage ``h_i = x_i / X`` (a run that is most of ``X`` pulls ``R`` towards its own ratio, so its
  residual understates its spread; HC2's ``e² / (1 - h)``, as its series to ``h²``):
  ``SE² = n / (n - 1) * Σ e_i² (1 + h_i + h_i²) / X²``;
- **degrees of freedom**: those of the runs that carry the figure, ``d = ⌊m⌋ - 1`` (at least 1)
  with ``m`` the smaller of Kish's effective number of runs ``X² / Σ x_i²`` (near 1 when one run
  outweighs the rest) and the residuals' own, ``3 (Σ e²)² / Σ e⁴`` (``n`` for residuals alike, near
  1 when one run holds most of the misses: a burst);
- **skewness**: Hall's (1992) transform of the studentized ratio, ``g(t) = t + a t² + a² t³ / 3 +
  b`` with ``a = γ / (3√n)``, ``b = γ / (6√n)`` and ``γ`` the residuals' skewness, gives
  ``[R - SE g⁻¹(q), R - SE g⁻¹(-q)]`` with ``q = t(0.975, d)``: longer on the side the runs' ratios
  straggle to (the few long sessions that save more, the few runs with most misses); each end is
  the farther of that one's and the symmetric ``R ± q SE`` (a skewness drawn by chance never
  narrows a side).

What it guarantees, measured (``benchmarks/interval_coverage.py``, 2,000 sets per cell; docs/results.md,
"How far these could move on other runs"): drawn from log-normal populations of runs (log-size
spreads 0.4-1.8, n 9-200) it covers the population's ratio 94-98% of the time when each run's
ratio is independent of its size, 93-97% when it grows or shrinks with log-size at spreads up to
1.2 (and shrinks at 1.8: 91-94%), 91-97% for bursty misses (a third of runs missing anything,
heavy-tailed shares) from 18 runs up at spreads up to 1.2; and 94-99% on the shared data's per-run
pairs resampled at each family's size, but for the cases below (the delta method with Kish's
degrees of freedom alone: 78-96%, 67-89%, 80-95%). Where it is still short: a ratio that grows
with size where sizes spread by 1.8 (88-91%: the runs that carry the population's ratio are rarely
drawn); bursts at 9 runs (~70%: a set of 9 often holds none) and at spreads of 1.8 (85-88%); a
figure that rests on one run in ten or fewer (the shared OpenHands savings, 62-86%; Codex's
salient ruler, 88%): a set that happens to hold none of the runs that carry the ratio shows no
sign of them, and no interval from its runs can. It is wider than the delta method's: 1.0-1.1x at
200 runs alike, 1.4-2x where sizes spread or misses burst. A set of fewer than 3 runs, or whose
denominator is 0, gets none; a set whose runs' ratios are all equal gets ``[R, R]``. The interval
says how the set's own runs vary, nothing of runs unlike them (another agent, another task mix).

The sums (``n`` and ``Σ x^a y^b`` for ``1 <= a + b <= 4``: 14 per figure and set, whatever the
number of runs) are integers: counts as they are, input cost in millionths of a unit and dollars
in billionths (each run's value rounded once); the residual sums are expanded from them exactly,
with fractions; so the document is the same in whatever order runs arrive and shards merge
(:mod:`._sums`), and a shard's state writes the sums as decimal strings (they outgrow 64 bits).
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
# the power sums Σ x^a y^b, 1 <= a + b <= 4, in this order (a shard's state writes them so)
_POWERS: tuple[tuple[int, int], ...] = tuple((d - b, b) for d in range(1, 5) for b in range(d + 1))
_SUMS = len(_POWERS)  # 14


class RatioSum:
    """The sums one ratio's interval needs, added run by run (integers: exact, merged in any order).

    Invariant: ``sums[k] == Σ x^a y^b`` over the runs added or merged, ``(a, b) = _POWERS[k]``.
    """

    __slots__ = ("n", "sums")

    def __init__(self) -> None:
        self.n = 0
        self.sums = [0] * _SUMS

    def add(self, x: int, y: int) -> None:
        self.n += 1
        s = self.sums  # in place, in the order of _POWERS (the bench adds every run to ~230 of these)
        xx = x * x
        s[0] += x
        s[2] += xx
        s[5] += xx * x
        s[9] += xx * xx
        if y:  # most runs miss nothing: their y-terms are 0
            xy, yy = x * y, y * y
            s[1] += y
            s[3] += xy
            s[4] += yy
            s[6] += xx * y
            s[7] += xy * y
            s[8] += yy * y
            s[10] += xx * xy
            s[11] += xy * xy
            s[12] += xy * yy
            s[13] += yy * yy

    def merge(self, other: RatioSum) -> None:
        self.n += other.n
        self.sums = [a + b for a, b in zip(self.sums, other.sums, strict=True)]

    def interval(self) -> tuple[float, float] | None:
        """(low, high) of the ratio ``Y / X`` (None: fewer than 3 runs, or ``X`` not positive)."""
        if self.n < 3 or self.sums[0] <= 0:
            return None
        return _interval(self.n, dict(zip(_POWERS, self.sums, strict=True)))

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


def _residual_sum(power: Mapping[tuple[int, int], int], ratio: Fraction, k: int, a: int) -> Fraction:
    """``Σ x^a e^k`` with ``e = y - R x`` (the runs' residuals), exactly, from the power sums:
    the binomial expansion ``Σ_j C(k, j) (-R)^(k-j) Σ x^(a+k-j) y^j`` (``a + k <= 4``)."""
    terms = (math.comb(k, j) * (-ratio) ** (k - j) * power[(a + k - j, j)] for j in range(k + 1))
    return sum(terms, Fraction(0))


def _interval(n: int, power: Mapping[tuple[int, int], int]) -> tuple[float, float]:
    """The interval of the ratio from its runs' count and power sums (the module's formulas)."""
    x = power[(1, 0)]
    ratio = Fraction(power[(0, 1)], x)
    e2, e3, e4 = (_residual_sum(power, ratio, k, 0) for k in (2, 3, 4))
    leveraged = e2 + _residual_sum(power, ratio, 2, 1) / x + _residual_sum(power, ratio, 2, 2) / (x * x)
    error = math.sqrt(float(leveraged * n / (n - 1))) / x
    runs = x * x // power[(2, 0)]  # ⌊Kish's effective number of runs⌋
    if e4 > 0:
        runs = min(runs, math.floor(3 * e2 * e2 / e4))
    q = t_quantile(max(1, runs - 1))
    r = float(ratio)
    skew = float(e3 / n) / float(e2 / n) ** 1.5 if e2 > 0 else 0.0
    low, high = _hall(skew / (3 * math.sqrt(n)), skew / (6 * math.sqrt(n)), q)
    return min(r - q * error, r - error * high), max(r + q * error, r - error * low)


def _hall(a: float, b: float, q: float) -> tuple[float, float]:
    """``g⁻¹(-q), g⁻¹(q)`` of Hall's transform ``g(t) = t + a t² + a² t³ / 3 + b``, which is
    ``((1 + a t)³ - 1) / (3a) + b``: monotone, so ``g⁻¹(v) = (c - 1) / a`` with ``c`` the real cube
    root of ``1 + 3a (v - b)``, written ``3 (v - b) / (c² + c + 1)`` (exact at ``a = 0``, no
    cancellation near it)."""

    def inverse(v: float) -> float:
        inner = 1 + 3 * a * (v - b)
        c = math.copysign(abs(inner) ** (1 / 3), inner)
        return 3 * (v - b) / (c * c + c + 1)

    return inverse(-q), inverse(q)


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
        """``{figure: [low, high]}`` of one policy (a saving's interval is ``1 - R``'s), rounded; ``R``
        is at least 0 and a rate at most 1, and so is the interval."""
        out: dict[str, list[float] | None] = {}
        for (metric, saving), total in zip(METRICS, self._sums[name], strict=True):
            found = total.interval()
            if found is None:
                out[metric] = None
                continue
            low, high = max(found[0], 0.0), found[1]  # R = Σ kept / Σ full, or Σ missed / Σ needed: >= 0
            low, high = (1 - high, 1 - low) if saving else (low, min(high, 1.0))  # misses <= needed
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
