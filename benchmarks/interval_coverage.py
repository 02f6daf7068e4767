"""How often each candidate 95% interval over runs covers the ratio of the runs it was drawn from.

    PYTHONPATH=TREE python benchmarks/interval_coverage.py [--trials 2000] [--methods M,...|all]
        [--only flat,grows,shrinks,bursty,real] [--runs-jsonl DIR/bench.runs.jsonl] [--policies tiered]

Every figure of the bench is a ratio of sums over runs (``Σy / Σx``: a saving's kept share, a
ruler's ``Σ missed / Σ needed``). This draws sets of runs from realistic generators, computes
each candidate interval on every set, and prints (tab-separated) per generator and ``n`` each
method's coverage of the population's ratio and, in brackets, its mean width in points (an
interval wider than 1,000 points counts as 1,000). The generators (a 20,000-run population each):

- sizes log-normal, log-size spread ``s`` in 0.4, 0.8, 1.2, 1.8; each run's ratio around 0.3,
  independent of its size (``flat``), growing with log-size (``grows``: +0.12 per standard
  deviation), shrinking (``shrinks``);
- rulers' rates with bursty misses (``bursty``): needed items grow with the run's size, a third of
  runs miss anything, their shares log-normal (a few runs hold most misses);
- with ``--runs-jsonl``: the real per-run pairs of a bench's ``bench.runs.jsonl`` as a population
  per family, policy and figure (``real``): sets of the family's size drawn with replacement, the
  family's own figure the truth (figures a family never misses are left out).

``n`` is 9, 18, 68, 75, 200 (the shared data's family sizes); sets are drawn with replacement. The
methods: ``library``, the bench's own (``tiered_agent.bench._spread.RatioSum``, on integer pairs);
``{se}_{skew}_c{c}``: the standard error ``delta`` (the ratio estimator's), ``hc`` (each run's
squared residual weighted ``1 + h + h²``, ``h = x / Σx``) or ``jack`` (the jackknife's); ``sym``
(``R ± t SE``), ``hall`` (Hall's skewness transform) or ``union`` (each end the farther of the
two); degrees of freedom ``⌊n_eff⌋ - 1`` (``c0``, Kish's) or the smaller of that and
``c (Σe²)² / Σe⁴`` (``c2``, ``c3``). ``delta_sym_c0`` is the interval before round 26,
``hc_union_c3`` the library's; ``delta_n1`` the textbook's (``n - 1``), ``log_kish`` on log R,
``fieller`` Fieller's, ``boot_percentile`` / ``boot_bca`` the bootstrap's from the per-run pairs
(400 resamples, at most 400 sets per cell). All but ``jack`` and the bootstrap need only power sums
of the runs' pairs. Deterministic (seed 26). Not a test: the tables of docs/results.md, "How far
these could move on other runs".
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable, Iterator
from pathlib import Path

import numpy as np

from tiered_agent.bench._spread import _COST_GRID, _USD_GRID, t_quantile

Array = np.ndarray
Method = Callable[[Array, Array], tuple[Array, Array]]
Z = 1.959964


def _tq(df: Array) -> Array:
    return np.array([t_quantile(int(max(1, d))) for d in np.ravel(df)]).reshape(np.shape(df))


def _base(x: Array, y: Array) -> dict[str, Array]:
    """Per set (rows): n, R, the residuals' sums the methods share."""
    n = x.shape[1]
    sx, sy = x.sum(1), y.sum(1)
    r = sy / np.where(sx > 0, sx, 1)
    e = y - r[:, None] * x
    e2 = (e * e).sum(1)
    se = np.sqrt(e2 * n / (n - 1)) / sx
    kish = np.floor(sx * sx / (x * x).sum(1) + 1e-9)
    return {"n": np.full(len(x), n), "x": sx, "r": r, "e": e, "e2": e2, "se": se, "kish": kish}


def delta_n1(x: Array, y: Array) -> tuple[Array, Array]:
    """sums: the textbook's: R ± t(n - 1) SE."""
    b = _base(x, y)
    half = _tq(b["n"] - 1) * b["se"]
    return b["r"] - half, b["r"] + half


def _satterthwaite(b: dict[str, Array], c: float = 1.0) -> Array:
    """The effective number of runs carrying the residual variance: c (Σe²)² / Σe⁴ (c = 3: n for
    normal residuals of one variance)."""
    e4 = (b["e"] ** 4).sum(1)
    return np.floor(np.where(e4 > 0, c * b["e2"] ** 2 / np.where(e4 > 0, e4, 1), b["n"]) + 1e-9)


def _jack_se(x: Array, b: dict[str, Array]) -> Array:
    """The jackknife's SE of R: runs' residuals over (X - x_i), leverage x_i / X (HC3-like)."""
    n = x.shape[1]
    left = b["x"][:, None] - x
    ok = left > 0
    ri = np.where(ok, -b["e"] / np.where(ok, left, 1), 0.0)
    mean = ri.mean(1, keepdims=True)
    return np.sqrt((n - 1) / n * ((ri - mean) ** 2).sum(1))


def _hc2_se(x: Array, b: dict[str, Array], order: int) -> Array:
    """sums: the leverage-adjusted SE, Σ e²/(1 - h) with h = x/X as the series Σ e² h^k to
    ``order`` (power sums up to degree 2 + order)."""
    n = x.shape[1]
    h = x / b["x"][:, None]
    total = sum(((b["e"] ** 2) * h**k).sum(1) for k in range(order + 1))
    return np.sqrt(total * n / (n - 1)) / b["x"]


def _hall(b: dict[str, Array], se: Array, q: Array) -> tuple[Array, Array]:
    """Hall's (1992) skewness-removing transform of the studentized ratio: g(T) = T + aT² + a²T³/3
    + b with a = γ/(3√n), b = γ/(6√n), γ the residuals' skewness; the interval is
    R - SE g⁻¹(±q)."""
    n = b["n"]
    m2 = b["e2"] / n
    m3 = (b["e"] ** 3).sum(1) / n
    gamma = np.where(m2 > 0, m3 / np.where(m2 > 0, m2, 1) ** 1.5, 0.0)
    a = gamma / (3 * np.sqrt(n))
    off = gamma / (6 * np.sqrt(n))

    def inverse(value: Array) -> Array:
        small = np.abs(a) < 1e-12
        inner = 3 * np.where(small, 1, a) * (value - off) + 1
        return np.where(small, value - off, (np.cbrt(inner) - 1) / np.where(small, 1, a))

    return b["r"] - se * inverse(q), b["r"] - se * inverse(-q)


def log_kish(x: Array, y: Array) -> tuple[Array, Array]:
    """sums: on log R: R exp(± t(⌊n_eff⌋ - 1) SE / R) (none at R = 0: R ± t SE)."""
    b = _base(x, y)
    q = _tq(b["kish"] - 1)
    rel = np.where(b["r"] > 0, b["se"] / np.where(b["r"] > 0, b["r"], 1), 0.0)
    lo = np.where(b["r"] > 0, b["r"] * np.exp(-q * rel), b["r"] - q * b["se"])
    hi = np.where(b["r"] > 0, b["r"] * np.exp(q * rel), b["r"] + q * b["se"])
    return lo, hi


def fieller(x: Array, y: Array) -> tuple[Array, Array]:
    """sums: Fieller's interval for Ȳ/X̄ from the runs' variances and covariance, t(⌊n_eff⌋ - 1)."""
    n = x.shape[1]
    b = _base(x, y)
    mx, my = x.mean(1), y.mean(1)
    vx = ((x - mx[:, None]) ** 2).sum(1) / (n - 1) / n
    vy = ((y - my[:, None]) ** 2).sum(1) / (n - 1) / n
    cxy = ((x - mx[:, None]) * (y - my[:, None])).sum(1) / (n - 1) / n
    q2 = _tq(b["kish"] - 1) ** 2
    a = mx * mx - q2 * vx
    bb = mx * my - q2 * cxy
    c = my * my - q2 * vy
    disc = np.maximum(bb * bb - a * c, 0)
    ok = a > 0
    lo = np.where(ok, (bb - np.sqrt(disc)) / np.where(ok, a, 1), -np.inf)
    hi = np.where(ok, (bb + np.sqrt(disc)) / np.where(ok, a, 1), np.inf)
    return lo, hi


def _boot_ratios(x: Array, y: Array, boots: int, rng: np.random.Generator) -> Array:
    n = x.shape[1]
    out = np.empty((len(x), boots))
    for row in range(len(x)):
        idx = rng.integers(0, n, size=(boots, n))
        sx = x[row][idx].sum(1)
        out[row] = y[row][idx].sum(1) / np.where(sx > 0, sx, 1)
    return out


def boot_percentile(x: Array, y: Array) -> tuple[Array, Array]:
    """pairs: the bootstrap's percentile interval (400 resamples)."""
    ratios = _boot_ratios(x, y, 400, np.random.default_rng(7))
    return np.quantile(ratios, 0.025, axis=1), np.quantile(ratios, 0.975, axis=1)


def boot_bca(x: Array, y: Array) -> tuple[Array, Array]:
    """pairs: the bootstrap's BCa interval (400 resamples, acceleration from the jackknife)."""
    from statistics import NormalDist

    norm = NormalDist()
    b = _base(x, y)
    ratios = _boot_ratios(x, y, 400, np.random.default_rng(7))
    share = np.clip((ratios < b["r"][:, None]).mean(1), 1 / 800, 1 - 1 / 800)
    z0 = np.array([norm.inv_cdf(float(p)) for p in share])
    left = b["x"][:, None] - x
    ri = (y.sum(1)[:, None] - y) / np.where(left > 0, left, 1)
    d = ri.mean(1, keepdims=True) - ri
    accel = (d**3).sum(1) / np.maximum(6 * ((d**2).sum(1)) ** 1.5, 1e-300)
    out = []
    for alpha in (0.025, 0.975):
        za = norm.inv_cdf(alpha)
        level = np.array([norm.cdf(float(v)) for v in z0 + (z0 + za) / (1 - accel * (z0 + za))])
        out.append(np.array([np.quantile(r, p) for r, p in zip(ratios, level, strict=True)]))
    return out[0], out[1]


def _combo(se: str, df_c: float, skew: str) -> Method:
    def method(x: Array, y: Array) -> tuple[Array, Array]:
        b = _base(x, y)
        error = {"delta": b["se"], "hc": _hc2_se(x, b, 2) if se == "hc" else b["se"]}.get(se)
        if se == "jack":
            error = _jack_se(x, b)
        assert error is not None
        df = b["kish"] if df_c == 0 else np.minimum(b["kish"], _satterthwaite(b, df_c))
        q = _tq(df - 1)
        low, high = b["r"] - q * error, b["r"] + q * error
        if skew == "hall":
            return _hall(b, error, q)
        if skew == "union":  # Hall's where it widens a side, never narrower than the symmetric
            hall_low, hall_high = _hall(b, error, q)
            return np.minimum(low, hall_low), np.maximum(high, hall_high)
        return low, high

    method.__doc__ = f"{se} SE, df c={df_c}, {skew}"
    return method


COMBOS = {
    f"{se}_{skew}_c{c:g}": _combo(se, c, skew)
    for se in ("delta", "hc", "jack")
    for c in (0, 2, 3)
    for skew in ("sym", "hall", "union")
}


def library(x: Array, y: Array) -> tuple[Array, Array]:
    """sums: the bench's own (``RatioSum.interval``, on the runs' integer pairs)."""
    from tiered_agent.bench._spread import RatioSum

    lows, highs = [], []
    for row_x, row_y in zip(x, y, strict=True):
        total = RatioSum()
        for a, b in zip(row_x, row_y, strict=True):
            total.add(int(a), int(b))
        found = total.interval()
        lows.append(-math.inf if found is None else found[0])
        highs.append(math.inf if found is None else found[1])
    return np.array(lows), np.array(highs)


METHODS: dict[str, Method] = {
    "library": library,
    **COMBOS,
    "delta_n1": delta_n1,
    "log_kish": log_kish,
    "fieller": fieller,
    "boot_percentile": boot_percentile,
    "boot_bca": boot_bca,
}
SLOW = {"boot_percentile", "boot_bca"}


def _population(
    kind: str, spread: float, rng: np.random.Generator, size: int = 20_000
) -> tuple[Array, Array]:
    """A population of runs' (x, y) pairs."""
    z = rng.standard_normal(size)
    x = np.floor(np.exp(10 + spread * z)) + 1
    if kind == "bursty":
        needed = np.maximum(1, np.round(np.exp(3 + 0.7 * spread * z + 0.3 * rng.standard_normal(size))))
        hit = rng.random(size) < 0.3
        share = np.minimum(1.0, np.exp(rng.normal(-4.0, 1.3, size)))
        return needed, np.where(hit, np.round(needed * share), 0)
    slope = {"flat": 0.0, "grows": 0.12, "shrinks": -0.12}[kind]
    ratio = np.clip(0.3 + slope * z + rng.normal(0, 0.15, size), 0, 1)
    return x, np.round(x * ratio)


def _trials(
    pop: tuple[Array, Array], n: int, trials: int, rng: np.random.Generator
) -> Iterator[tuple[Array, Array]]:
    px, py = pop
    for start in range(0, trials, 500):
        idx = rng.integers(0, len(px), size=(min(500, trials - start), n))
        yield px[idx], py[idx]


def _measure(
    pop: tuple[Array, Array], n: int, trials: int, methods: list[str], seed: int
) -> dict[str, tuple[float, float]]:
    truth = pop[1].sum() / pop[0].sum()
    out = {}
    for name in methods:
        rng = np.random.default_rng(seed)
        hits, widths, count = 0, 0.0, 0
        for x, y in _trials(pop, n, trials if name not in SLOW else min(trials, 400), rng):
            keep = x.sum(1) > 0
            lo, hi = METHODS[name](x[keep], y[keep])
            hits += int(((lo <= truth) & (truth <= hi)).sum())
            widths += float(np.minimum(hi - lo, 10).sum())
            count += int(keep.sum())
        out[name] = (hits / count, widths / count)
    return out


# each figure's (denominator, numerator) fields in a run's policy record, as ``_spread._pairs``
# takes them from its totals (the saving's denominator is ``full``'s)
_FIELDS = (
    ("token_savings_vs_full", "input_tokens", "input_tokens"),
    ("input_cost_savings_vs_full", "input_cost", "input_cost"),
    ("cost_usd_savings_vs_full", "cost_usd", "cost_usd"),
    ("miss_rate", "salient", "missed"),
    ("word_miss_rate", "word_salient", "word_missed"),
    ("line_miss_rate", "line_needed", "line_missed"),
    ("own_miss_rate", "own_needed", "own_missed"),
)


_GRIDS = {"input_cost_savings_vs_full": _COST_GRID, "cost_usd_savings_vs_full": _USD_GRID}


def _real(path: Path, policies: set[str]) -> Iterator[tuple[str, tuple[Array, Array], int]]:
    """(label, population, family size) per family, policy and figure of a bench.runs.jsonl: each
    run's pair of a figure (a saving's: ``full``'s value, the policy's; a rate's: needed, missed)."""
    from tiered_agent.bench._pricing import family_of

    pairs: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    sizes: dict[str, int] = {}
    for line in path.read_text().splitlines():
        run = json.loads(line)
        family = family_of(run["run_id"].split("/")[0])
        sizes[family] = sizes.get(family, 0) + 1
        full = run["policies"]["full"]
        for policy, record in run["policies"].items():
            if policy not in policies:
                continue
            for metric, below, above in _FIELDS:
                saving = metric.endswith("_vs_full")
                x, y = (
                    (full.get(below), record.get(above)) if saving else (record.get(below), record.get(above))
                )
                if isinstance(x, int | float) and isinstance(y, int | float):
                    grid = _GRIDS.get(metric, 1)  # on the bench's grid, as ``_spread._pairs`` rounds
                    pairs.setdefault((family, policy, metric), []).append((round(x * grid), round(y * grid)))
    for (family, policy, metric), found in sorted(pairs.items()):
        arr = np.array(found, dtype=float)
        if len(arr) >= 3 and arr[:, 0].sum() > 0 and arr[:, 1].sum() > 0 and arr[:, 1].any():
            yield f"{family}/{policy}/{metric}", (arr[:, 0], arr[:, 1]), sizes[family]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=2000)
    default = "library,delta_sym_c0,delta_n1,log_kish,fieller,jack_sym_c0,delta_hall_c0"
    parser.add_argument("--methods", default=default, help="comma-separated, or all")
    parser.add_argument("--runs-jsonl", type=Path)
    parser.add_argument("--only", default="", help="generators: flat,grows,shrinks,bursty,real")
    parser.add_argument("--policies", default="tiered", help="the real data's policies (comma-separated)")
    args = parser.parse_args()
    methods = list(METHODS) if args.methods == "all" else args.methods.split(",")
    only = set(args.only.split(",")) - {""}
    print("generator", "spread", "n", *methods, sep="\t")
    seed = 26
    for kind in ("flat", "grows", "shrinks", "bursty"):
        if only and kind not in only:
            continue
        for spread in (0.4, 0.8, 1.2, 1.8):
            pop = _population(kind, spread, np.random.default_rng(seed))
            for n in (9, 18, 68, 75, 200):
                found = _measure(pop, n, args.trials, methods, seed + n)
                cells = [f"{c * 100:.1f}% ({w * 100:.2f})" for c, w in found.values()]
                print(kind, spread, n, *cells, sep="\t", flush=True)
    if args.runs_jsonl and (not only or "real" in only):
        for label, pop, n in _real(args.runs_jsonl, set(args.policies.split(","))):
            found = _measure(pop, n, args.trials, methods, seed + n)
            cells = [f"{c * 100:.1f}% ({w * 100:.2f})" for c, w in found.values()]
            print("real", label, n, *cells, sep="\t", flush=True)


if __name__ == "__main__":
    main()
