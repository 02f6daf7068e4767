"""The 95% intervals over runs (``bench/_spread.py``): the ratio estimator's interval, exact in any
order of runs and shards, carried by shard states, and covering the population's ratio about 95%
of the time when runs are drawn from it."""

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
    """The interval as the textbook writes it, in floats, with Kish's effective number of runs."""
    n = len(pairs)
    x = sum(p[0] for p in pairs)
    y = sum(p[1] for p in pairs)
    ratio = y / x
    spread = sum((b - ratio * a) ** 2 for a, b in pairs)
    error = math.sqrt(n / (n - 1) * spread) / x
    effective = x * x / sum(a * a for a, _ in pairs)
    t = t_quantile(max(1, math.floor(effective + 1e-9) - 1))
    return ratio - t * error, ratio + t * error


def _summed(pairs: list[tuple[int, int]]) -> RatioSum:
    total = RatioSum()
    for x, y in pairs:
        total.add(x, y)
    return total


def test_a_hand_computed_interval() -> None:
    # R = 6/30 = 0.2; y - R x = -1, 0, 1; SE^2 = 3/2 * 2 / 30^2; t(2) = 4.303
    low, high = _summed([(10, 1), (10, 2), (10, 3)]).interval() or (0.0, 0.0)
    half = 4.303 * math.sqrt(3 / 900)
    assert low == pytest.approx(0.2 - half, abs=1e-12) and high == pytest.approx(0.2 + half, abs=1e-12)


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
def test_the_interval_is_the_textbook_one(pairs: list[tuple[int, int]]) -> None:
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
    assert state == {"n": 3, "sums": ["6", "7", "14", "27", "18"]}
    broken: object
    for broken in (
        {**state, "n": "3"},
        {**state, "sums": ["1", "2"]},
        {**state, "sums": [6, 7, 14, 27, 18]},
        {**state, "sums": ["6", "7", "1e3", "27", "18"]},
        [],
        {"n": 3},
    ):
        with pytest.raises(StateError):
            RatioSum.from_state(broken, "spread")


def _coverage(sigma: float, runs: int, trials: int = 400) -> float:
    """How often the interval of ``runs`` runs drawn from a population covers its ratio: run sizes
    log-normal with ``sigma`` (the spread of log sizes), each run's ratio around 0.3."""
    rng = random.Random(18)
    population = []
    for _ in range(3000):
        size = int(rng.lognormvariate(10, sigma)) + 1
        population.append((size, round(size * min(max(rng.gauss(0.3, 0.15), 0.0), 1.0))))
    truth = sum(p[1] for p in population) / sum(p[0] for p in population)
    covered = 0
    for _ in range(trials):
        low, high = _summed(rng.sample(population, runs)).interval() or (0.0, 0.0)
        covered += low <= truth <= high
    return covered / trials


def test_runs_of_alike_sizes_are_covered_about_95_percent_of_the_time() -> None:
    # log-size spreads of 0.4-0.8: the Codex, Gemini shell, OpenHands and tau-bench sets of ../shared
    assert 0.9 <= _coverage(0.4, 9) <= 0.98
    assert 0.9 <= _coverage(0.8, 63) <= 0.98


def test_runs_whose_sizes_differ_by_orders_of_magnitude_are_covered_about_90_percent_of_the_time() -> None:
    # Claude Code sessions' log sizes spread by 1.8: with n - 1 degrees of freedom 0.78 (the same
    # draws), with those of the effective number of runs ~0.91
    assert 0.88 <= _coverage(1.8, 75) <= 0.97
    assert 0.88 <= _coverage(1.8, 9) <= 0.99  # with n - 1: 0.68


def test_a_run_that_outweighs_the_rest_leaves_few_degrees_of_freedom() -> None:
    alike = _summed([(100, 30), (100, 20), (100, 40), (100, 30)]).interval() or (0.0, 0.0)
    assert alike[1] - alike[0] == pytest.approx(2 * t_quantile(3) * math.sqrt(4 / 3 * 200) / 400)
    # one run of 10,000 and three of 100: n_eff = 10300^2 / 100030000 = 1.06, so 1 degree of freedom
    heavy = _summed([(10_000, 3_000), (100, 20), (100, 40), (100, 30)])
    ratio, low_high = 3_090 / 10_300, heavy.interval() or (0.0, 0.0)
    spread = sum((b - ratio * a) ** 2 for a, b in [(10_000, 3_000), (100, 20), (100, 40), (100, 30)])
    assert low_high[1] - ratio == pytest.approx(12.706 * math.sqrt(4 / 3 * spread) / 10_300)


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
    assert ratio is not None and found["token_savings_vs_full"] == [
        round(1 - ratio[1], 6),
        round(1 - ratio[0], 6),
    ]
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
        round(1 - cost[0], 6),
    ]


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
            "line_miss_rate": [0.0, 0.0],
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
