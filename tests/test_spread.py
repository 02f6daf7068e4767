"""The 95% intervals over runs (``bench/_spread.py``): the ratio estimator's interval with leverage,
the residuals' degrees of freedom and Hall's skewness transform, exact in any order of runs and
shards, carried by shard states, and covering the population's ratio about 95% of the time when
runs are drawn from it (bounded simulations; ``benchmarks/interval_coverage.py`` has the tables)."""

from __future__ import annotations

import math
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.bench._metrics import Totals
from tiered_agent.bench._report_spread import md_spread, spread_rows
from tiered_agent.bench._spread import METRICS, RatioSum, SpreadSum, t_quantile
from tiered_agent.bench._sums import StateError


def _plain(pairs: list[tuple[int, int]]) -> tuple[float, float]:
    """The interval as the module's docstring writes it, in floats, from the residuals themselves."""
    n = len(pairs)
    x = sum(p[0] for p in pairs)
    ratio = sum(p[1] for p in pairs) / x
    e = [b - ratio * a for a, b in pairs]
    e2, e3, e4 = (sum(v**k for v in e) for k in (2, 3, 4))
    leveraged = sum(v * v * (1 + a / x + (a / x) ** 2) for v, (a, _) in zip(e, pairs, strict=True))
    error = math.sqrt(n / (n - 1) * leveraged) / x
    runs = math.floor(x * x / sum(a * a for a, _ in pairs) + 1e-9)
    if e4 > 0:
        runs = min(runs, math.floor(3 * e2 * e2 / e4 + 1e-9))
    q = t_quantile(max(1, runs - 1))
    skew = (e3 / n) / (e2 / n) ** 1.5 if e2 > 0 else 0.0
    a, b = skew / (3 * math.sqrt(n)), skew / (6 * math.sqrt(n))

    def inverse(v: float) -> float:  # of g(t) = t + a t^2 + a^2 t^3 / 3 + b = ((1 + a t)^3 - 1) / 3a + b
        inner = 1 + 3 * a * (v - b)
        c = math.copysign(abs(inner) ** (1 / 3), inner)
        return 3 * (v - b) / (c * c + c + 1)  # (c - 1) / a

    return min(ratio - q * error, ratio - error * inverse(q)), max(
        ratio + q * error, ratio - error * inverse(-q)
    )


def _kish_only(pairs: list[tuple[int, int]]) -> tuple[float, float]:
    """The interval before round 26: the delta method's, t with ⌊n_eff⌋ - 1 degrees of freedom."""
    n = len(pairs)
    x = sum(p[0] for p in pairs)
    ratio = sum(p[1] for p in pairs) / x
    error = math.sqrt(n / (n - 1) * sum((b - ratio * a) ** 2 for a, b in pairs)) / x
    q = t_quantile(max(1, math.floor(x * x / sum(a * a for a, _ in pairs) + 1e-9) - 1))
    return ratio - q * error, ratio + q * error


def _summed(pairs: list[tuple[int, int]]) -> RatioSum:
    total = RatioSum()
    for x, y in pairs:
        total.add(x, y)
    return total


def test_a_hand_computed_interval() -> None:
    # R = 6/30 = 0.2; e = -1, 0, 1 (no skewness); leverage 1/3 each: Σ e²(1 + h + h²) = 2 * 13/9;
    # SE^2 = 3/2 * 26/9 / 30^2; n_eff = 3, 3 (Σe²)²/Σe⁴ = 6: 2 degrees of freedom, t = 4.303
    low, high = _summed([(10, 1), (10, 2), (10, 3)]).interval() or (0.0, 0.0)
    half = 4.303 * math.sqrt(3 / 2 * 26 / 9 / 900)
    assert low == pytest.approx(0.2 - half, abs=1e-12) and high == pytest.approx(0.2 + half, abs=1e-12)


def test_a_burst_widens_the_side_it_straggles_to() -> None:
    # R = 6/40 = 0.15; e = -1.5 x3, 4.5: Σe² = 27, Σe³ = 81, Σe⁴ = 425.25; h = 1/4 each;
    # SE^2 = 4/3 * 27 * 21/16 / 40^2; n_eff 4, 3 * 27^2 / 425.25 = 5.14: 3 degrees of freedom;
    # skewness (81/4) / (27/4)^1.5 = 2/√3, a = 2/√3 / 6, b = 2/√3 / 12
    low, high = _summed([(10, 0), (10, 0), (10, 0), (10, 6)]).interval() or (0.0, 0.0)
    error, q = math.sqrt(4 / 3 * 27 * 21 / 16) / 40, 3.182
    gamma = 2 / math.sqrt(3)
    a, b = gamma / 6, gamma / 12
    upper = (abs(1 + 3 * a * (-q - b)) ** (1 / 3) * -1 - 1) / a  # g⁻¹(-q): 1 + 3a(-q - b) < 0
    assert 1 + 3 * a * (-q - b) < 0
    assert low == pytest.approx(0.15 - q * error, abs=1e-12)  # Hall's low end is nearer: the symmetric
    assert high == pytest.approx(0.15 - error * upper, abs=1e-12)
    assert high - 0.15 > 1.5 * (0.15 - low)  # the burst's side is the long one
    assert (round(low, 3), round(high, 3)) == (-0.397, 1.903)  # a rate's: [0, 1] (SpreadSum)


def test_too_few_runs_or_nothing_to_divide_by_give_no_interval() -> None:
    assert _summed([(10, 1), (10, 2)]).interval() is None
    assert _summed([(0, 0), (0, 0), (0, 0)]).interval() is None
    assert RatioSum().interval() is None


def test_t_quantile_follows_the_table_then_the_expansion() -> None:
    assert t_quantile(1) == 12.706 and t_quantile(30) == 2.042
    assert t_quantile(31) == pytest.approx(2.0395, abs=2e-4)
    assert t_quantile(100) == pytest.approx(1.9840, abs=2e-4)
    assert t_quantile(10**6) == pytest.approx(1.95997, abs=1e-4)
    with pytest.raises(ValueError):
        t_quantile(0)


_PAIRS = st.lists(st.tuples(st.integers(1, 10**12), st.integers(0, 10**12)), min_size=3, max_size=40)


@settings(max_examples=200, deadline=None)
@given(_PAIRS)
def test_the_interval_is_the_documented_one(pairs: list[tuple[int, int]]) -> None:
    found = _summed(pairs).interval()
    assert found is not None
    expected = _plain(pairs)
    scale = max(abs(expected[0]), abs(expected[1]), 1.0)
    assert found[0] == pytest.approx(expected[0], abs=1e-7 * scale)
    assert found[1] == pytest.approx(expected[1], abs=1e-7 * scale)


@settings(max_examples=200, deadline=None)
@given(_PAIRS, st.randoms(use_true_random=False))
def test_any_order_and_any_split_into_shards_give_the_same_interval(
    pairs: list[tuple[int, int]], rng: random.Random
) -> None:
    whole = _summed(pairs).interval()
    shuffled = list(pairs)
    rng.shuffle(shuffled)
    cut = rng.randrange(len(shuffled) + 1)
    left, right = _summed(shuffled[:cut]), _summed(shuffled[cut:])
    left.merge(RatioSum.from_state(right.state(), "shard"))
    assert left.interval() == whole  # exactly: the sums are exact


def test_a_damaged_state_is_refused_in_one_sentence() -> None:
    state = _summed([(1, 1), (2, 1), (3, 5)]).state()
    # Σ x^a y^b in the order x, y; x², xy, y²; x³, x²y, xy², y³; x⁴, x³y, x²y², xy³, y⁴
    sums = [6, 7, 14, 18, 27, 36, 50, 78, 127, 98, 144, 230, 378, 627]
    assert state == {"n": 3, "sums": [str(v) for v in sums]}
    broken: object
    for broken in (
        {**state, "n": "3"},
        {**state, "sums": ["1", "2"]},
        {**state, "sums": sums},
        {**state, "sums": ["6", "7", "1e3", *state["sums"][3:]]},
        {**state, "sums": ["6", "7", "14", "27", "18"]},  # a state of the 5 sums before round 26
        [],
        {"n": 3},
    ):
        with pytest.raises(StateError):
            RatioSum.from_state(broken, "spread")


def _population(sigma: float, kind: str, rng: random.Random) -> list[tuple[int, int]]:
    """3,000 runs: sizes log-normal with ``sigma`` (the spread of log sizes); each run's ratio
    around 0.3, independent of its size (``flat``) or growing with its log-size (``grows``); or a
    ruler's misses (``bursty``): needed items growing with size, a third of runs missing anything,
    their shares heavy-tailed (a few runs hold most misses)."""
    out = []
    for _ in range(3000):
        z = rng.gauss(0, 1)
        if kind == "bursty":
            needed = max(1, round(math.exp(3 + 0.7 * sigma * z + 0.3 * rng.gauss(0, 1))))
            share = min(1.0, math.exp(rng.gauss(-4, 1.3))) if rng.random() < 0.3 else 0.0
            out.append((needed, round(needed * share)))
            continue
        size = int(math.exp(10 + sigma * z)) + 1
        slope = 0.12 if kind == "grows" else 0.0
        out.append((size, round(size * min(max(0.3 + slope * z + rng.gauss(0, 0.15), 0.0), 1.0))))
    return out


def _coverage(sigma: float, runs: int, kind: str = "flat", trials: int = 400) -> tuple[float, float]:
    """How often the interval of ``runs`` runs drawn from a population covers its ratio: (this
    module's, the interval before round 26 on the same draws)."""
    rng = random.Random(18)
    population = _population(sigma, kind, rng)
    truth = sum(p[1] for p in population) / sum(p[0] for p in population)
    covered = before = 0
    for _ in range(trials):
        drawn = rng.choices(population, k=runs)
        low, high = _summed(drawn).interval() or (0.0, 0.0)
        covered += low <= truth <= high
        if sum(p[0] for p in drawn) > 0:
            old = _kish_only(drawn)
            before += old[0] <= truth <= old[1]
    return covered / trials, before / trials


def test_runs_of_alike_sizes_are_covered_about_95_percent_of_the_time() -> None:
    # log-size spreads of 0.4-0.8: the Codex, Gemini shell, OpenHands and tau-bench sets of ../shared
    assert 0.93 <= _coverage(0.4, 9)[0] <= 0.995
    assert 0.93 <= _coverage(0.8, 68)[0] <= 0.99


def test_runs_whose_sizes_differ_by_orders_of_magnitude_are_covered_about_90_95_percent_of_the_time() -> None:
    # Claude Code sessions' log sizes spread by 1.8 (these draws: 0.90, before 0.87; 0.97, before 0.95)
    assert 0.88 <= _coverage(1.8, 75)[0] <= 0.99
    assert 0.92 <= _coverage(1.8, 9)[0] <= 1.0


def test_a_ratio_growing_with_size_is_covered_more_often_than_by_the_delta_method() -> None:
    covered, before = _coverage(0.8, 68, "grows")  # 0.92, before 0.88
    assert 0.9 <= covered <= 0.99 and before <= covered - 0.02
    covered, before = _coverage(1.2, 68, "grows")  # 0.85, before 0.71: still short where sizes spread
    assert 0.82 <= covered <= 0.95 and before <= covered - 0.1


def test_bursty_misses_are_covered_where_the_delta_method_was_not() -> None:
    covered, before = _coverage(0.8, 68, "bursty")  # 0.965, before 0.825
    assert 0.93 <= covered <= 0.995 and before <= 0.87


def test_a_run_that_outweighs_the_rest_leaves_few_degrees_of_freedom() -> None:
    alike = [(100, 30), (100, 20), (100, 40), (100, 30)]
    # no skewness: R ± t SE, 3 (Σe²)²/Σe⁴ = 3 * 200^2 / 20000 = 6 > n_eff = 4: 3 degrees of freedom
    found = _summed(alike).interval() or (0.0, 0.0)
    assert found[1] - found[0] == pytest.approx(
        2 * t_quantile(3) * math.sqrt(4 / 3 * 200 * (1 + 1 / 4 + 1 / 16)) / 400
    )
    # one run of 10,000 and three of 100: n_eff = 10300^2 / 100030000 = 1.06, so 1 degree of freedom
    heavy = [(10_000, 3_000), (100, 20), (100, 40), (100, 30)]
    assert _summed(heavy).interval() == pytest.approx(_plain(heavy), abs=1e-12)
    ratio = 3_090 / 10_300
    leveraged = sum((b - ratio * a) ** 2 * (1 + a / 10_300 + (a / 10_300) ** 2) for a, b in heavy)
    low = (_summed(heavy).interval() or (0.0, 0.0))[0]
    assert ratio - low >= 12.706 * math.sqrt(4 / 3 * leveraged) / 10_300 - 1e-12


def _totals(**values: float) -> Totals:
    fields = dict.fromkeys(
        (
            "runs", "steps", "prompt_tokens", "peak_prompt_tokens", "cached_tokens", "output_tokens",
            "summary_input_tokens", "summary_output_tokens", "prefix_rewrites", "salient", "missed",
            "steps_with_miss", "over_hard_limit_steps", "compactions", "dedup_hits", "truncated_chars",
        ),
        0,
    )  # fmt: skip
    return Totals(**(fields | {"effective_cost": 0.0, "input_cost": 0.0, "retrieval_tokens": None} | values))  # type: ignore[arg-type]


def test_a_saving_is_one_minus_the_ratio_and_a_rate_is_never_below_zero() -> None:
    spread = SpreadSum(["full", "tiered"])
    for tokens, kept, missed in ((1000, 600, 0), (2000, 1000, 1), (4000, 2400, 0), (500, 400, 0)):
        full = _totals(prompt_tokens=tokens, input_cost=float(tokens), salient=10)
        tiered = _totals(prompt_tokens=kept, input_cost=kept * 0.9, salient=10, missed=missed)
        spread.add({"full": full, "tiered": tiered}, full)
    found = spread.intervals("tiered")
    assert list(found) == [name for name, _ in METRICS]
    ratio = _summed([(1000, 600), (2000, 1000), (4000, 2400), (500, 400)]).interval()
    assert ratio is not None and ratio[0] < 0  # 4 runs, 1 degree of freedom: R's interval reaches below 0
    assert found["token_savings_vs_full"] == [round(1 - ratio[1], 6), 1.0]  # a policy sends no less than 0
    assert found["miss_rate"] is not None and found["miss_rate"][0] == 0.0 < found["miss_rate"][1]
    assert found["cost_usd_savings_vs_full"] is None  # no run priced
    assert spread.intervals("full")["token_savings_vs_full"] == [0.0, 0.0]
    # input cost on its grid of millionths of a unit: each run's value rounded once
    grid = [
        (t * 10**6, round(k * 0.9 * 10**6)) for t, k in ((1000, 600), (2000, 1000), (4000, 2400), (500, 400))
    ]
    cost = _summed(grid).interval()
    assert cost is not None and found["input_cost_savings_vs_full"] == [
        round(1 - cost[1], 6),
        round(1 - max(cost[0], 0.0), 6),
    ]


def test_shards_of_a_set_merged_in_any_order_give_the_whole_sets_intervals() -> None:
    """Every policy's figures, split into three shards whose states are written and read back, merged
    in two orders: the same intervals as the runs added one by one (the bench's ``--shard K/N`` and
    ``bench merge``)."""
    rng = random.Random(26)
    runs = []
    for _ in range(40):
        tokens = int(rng.lognormvariate(9, 1.5)) + 1
        full = _totals(prompt_tokens=tokens, input_cost=tokens * 1.25, salient=rng.randrange(1, 30))
        kept = round(tokens * rng.uniform(0.3, 1.0))
        missed = rng.randrange(5) if rng.random() < 0.2 else 0
        tiered = _totals(prompt_tokens=kept, input_cost=kept * 1.1, salient=full.salient, missed=missed)
        runs.append({"full": full, "tiered": tiered})
    whole = SpreadSum(["full", "tiered"])
    for run in runs:
        whole.add(run, run["full"])
    shards = []
    for part in (runs[:7], runs[7:30], runs[30:]):
        shard = SpreadSum(["full", "tiered"])
        for run in part:
            shard.add(run, run["full"])
        shards.append(SpreadSum.from_state(shard.state(), ["full", "tiered"], "shard"))
    for order in ((0, 1, 2), (2, 0, 1)):
        merged = SpreadSum(["full", "tiered"])
        for k in order:
            merged.merge(shards[k])
        assert merged.state() == whole.state()
        assert merged.intervals("tiered") == whole.intervals("tiered")
    found = whole.intervals("tiered")
    assert found["miss_rate"] is not None and found["miss_rate"][1] > found["miss_rate"][0] >= 0.0


def test_a_run_whose_cost_is_not_finite_is_left_out_of_that_figure_only() -> None:
    spread = SpreadSum(["full"])
    for cost in (1.0, 2.0, 3.0, math.inf):
        full = _totals(prompt_tokens=10, input_cost=cost)
        spread.add({"full": full}, full)
    assert spread.state()["full"]["input_cost_savings_vs_full"]["n"] == 3
    assert spread.state()["full"]["token_savings_vs_full"]["n"] == 4


def test_report_rows_show_each_figure_with_its_interval() -> None:
    tiered = {
        "runs": 12,
        "token_savings_vs_full": 0.4,
        "input_cost_savings_vs_full": -0.05,
        "cost_usd_savings_vs_full": None,
        "miss_rate": 0.01,
        "word_miss_rate": 0.02,
        "line_miss_rate": 0.0,
        "own_miss_rate": 0.03,
        "interval_95": {
            "token_savings_vs_full": [0.35, 0.45],
            "input_cost_savings_vs_full": [-0.1, 0.0],
            "cost_usd_savings_vs_full": None,
            "miss_rate": [0.0, 0.025],
            "word_miss_rate": None,
            "line_miss_rate": [-0.00001, 0.0],
            "own_miss_rate": [0.01, 0.05],
        },
    }
    document = {
        "policies": {"tiered": {"totals": tiered}},
        "families": {"agent": {"policies": {"tiered": {"totals": tiered}}}},
        "groups": {},
    }
    rows = spread_rows(document)
    assert [r[0] for r in rows] == ["all runs", "agent"]
    assert rows[0][1:] == [
        "12",
        "+40.0% (35.0 to 45.0)",
        "−5.0% (−10.0 to 0.0)",
        "n/a",
        "1.0% (0.0 to 2.5)",
        "2.0%",
        "0.0% (0.0 to 0.0)",
        "3.0% (1.0 to 5.0)",
    ]
    assert md_spread(document)[0] == "## How far the figures could move"
    assert spread_rows(document, "masking") == [] and md_spread(document, "masking") == []


def test_a_figure_the_set_does_not_have_has_no_interval() -> None:
    """A summarizer left unpriced voids a policy's dollars (``usd_void``): its USD figure is null, so
    its interval is too, though every run's dollars were summed (docs/bench-json-schema.md)."""
    from tiered_agent.bench._aggregate import FamilySum
    from tiered_agent.bench._record import PolicyRecord, RunRecord

    family = FamilySum(["full", "tiered"])
    for k, tokens in enumerate((1000, 2000, 4000, 500)):
        full = _totals(
            runs=1, prompt_tokens=tokens, input_cost=float(tokens), cost_usd=tokens / 1e3, priced_runs=1
        )
        tiered = _totals(
            runs=1, prompt_tokens=tokens // 2, input_cost=tokens / 2, cost_usd=tokens / 2e3, priced_runs=1
        )
        policies = {"full": PolicyRecord(full), "tiered": PolicyRecord(tiered, usd_void=k == 0)}
        family.add(RunRecord(f"r{k}", "agent", 1, 1.0, None, None, "ideal", {}, policies))
    totals, _ = family.policy_totals()
    assert totals["tiered"]["cost_usd_savings_vs_full"] is None
    assert totals["tiered"]["interval_95"]["cost_usd_savings_vs_full"] is None
    assert totals["tiered"]["interval_95"]["token_savings_vs_full"] == [0.5, 0.5]
    assert totals["full"]["interval_95"]["cost_usd_savings_vs_full"] == [0.0, 0.0]
