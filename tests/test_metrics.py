"""Hidden-information metric, aggregates, cache validation and fidelity on hand-built data."""

from __future__ import annotations

import pytest
from samples import HAND_RUN

from tiered_agent._messages import Message, Usage
from tiered_agent.bench._caching import Pricing
from tiered_agent.bench._metrics import (
    PolicyRunMetrics,
    SalienceIndex,
    StepMetrics,
    fidelity,
    is_salient,
    missed_strings,
    percentile,
    salient_candidates,
    totals,
    validate_caching,
)
from tiered_agent.bench._recorded import RecordedRun


def test_salient_tokens_are_code_like() -> None:
    assert salient_candidates("open src/utils.py and call helper_fn with 4096, then HAT136 or fooBar") == {
        "src/utils.py",
        "helper_fn",
        "4096",
        "HAT136",
        "fooBar",
    }
    assert not is_salient("the")
    assert not is_salient("Because")
    assert not is_salient("a_b")  # under 4 characters
    assert not is_salient("THOUGHT")
    assert is_salient("2024-05-20")


def test_salience_index_hand_run() -> None:
    index = SalienceIndex(HAND_RUN)
    assert index.salient(1) == ()  # src/app.py is in the task; nothing observed yet
    assert index.salient(2) == ("helper_fn",)  # first seen in the observation of iteration 1
    # newThing first appears in the action itself; src/utils.py came from the observation of iteration 2
    assert index.salient(3) == ("4096", "compute_total", "src/utils.py")
    assert index.salient(9) == ()


def test_salience_ignores_strings_the_model_introduced() -> None:
    run = RecordedRun(
        run_id="r",
        source="t",
        format="tiered-agent",
        messages=(
            Message("system", "s"),
            Message("user", "task"),
            Message("assistant", "create new_module.py", iteration=1),
            Message("user", "created new_module.py", iteration=1),
            Message("assistant", "edit new_module.py", iteration=2),
        ),
    )
    assert SalienceIndex(run).salient(2) == ()


def test_missed_strings_exact() -> None:
    m = HAND_RUN.messages
    windowed = [m[0], m[1], m[4], m[5]]  # iteration 1 dropped
    assert missed_strings(("4096", "compute_total", "src/utils.py"), windowed) == ("4096", "compute_total")
    assert missed_strings(("4096", "compute_total", "src/utils.py"), m[:6]) == ()
    assert missed_strings((), windowed) == ()


def _step(
    step: int,
    prompt: int,
    cached: int,
    *,
    salient: int = 0,
    missed: tuple[str, ...] = (),
    retrieval: int = 0,
    rewrote: bool = False,
    seconds: float = 0.0,
) -> StepMetrics:
    return StepMetrics(
        step, prompt, cached, 10, salient, missed, retrieval, rewrote, False, prompt > 120, 0, seconds
    )


def test_totals_exact() -> None:
    a = PolicyRunMetrics(
        "p",
        "a",
        (_step(1, 16, 0), _step(2, 37, 13, salient=2, missed=("x",), retrieval=50, rewrote=True)),
        summary_usage=Usage(prompt_tokens=100, completion_tokens=5, requests=1),
        retrieval_active=True,
    )
    b = PolicyRunMetrics("p", "b", (_step(1, 130, 0, salient=3),), dedup_hits=2, retrieval_active=True)
    t = totals([a, b], Pricing(0.1, 4.0))
    assert (t.runs, t.steps, t.prompt_tokens, t.peak_prompt_tokens, t.cached_tokens) == (2, 3, 183, 130, 13)
    assert t.input_tokens == 283
    # 16 + (24 + 1.3) + 130 + 3 * 10 * 4 output + 100 summary input + 5 * 4 summary output
    assert t.effective_cost == pytest.approx(16 + 25.3 + 130 + 120 + 100 + 20)
    assert t.input_cost == pytest.approx(16 + 25.3 + 130 + 100)  # prompts (cached at 0.1) + summary input
    assert (t.prefix_rewrites, t.rewrite_rate) == (1, 1.0)  # 1 of the 1 steps that follow a first step
    assert (t.salient, t.missed, t.steps_with_miss, t.miss_rate) == (5, 1, 1, 0.2)
    assert t.retrieval_tokens == 50
    assert t.retrieval_adjusted_input_tokens == 333
    assert (t.over_hard_limit_steps, t.dedup_hits) == (1, 2)
    no_retrieval = totals([PolicyRunMetrics("f", "a", (_step(1, 16, 0),))], Pricing())
    assert no_retrieval.retrieval_tokens is None
    assert no_retrieval.retrieval_adjusted_input_tokens is None


def test_percentile_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([3.0, 1.0, 2.0], 50) == 2.0
    assert percentile([], 50) == 0.0


def test_cache_validation_and_fidelity_exact() -> None:
    full = [
        PolicyRunMetrics("full", "a", (_step(1, 100, 0), _step(2, 200, 100))),
        PolicyRunMetrics("full", "b", (_step(1, 50, 0),)),
    ]
    usage = {
        "a": (Usage(prompt_tokens=110, cached_tokens=0), Usage(prompt_tokens=220, cached_tokens=110)),
        "b": (None,),
    }
    v = validate_caching(full, usage)
    assert v is not None
    assert (v.runs, v.steps) == (1, 2)
    assert v.mean_abs_error == pytest.approx(0.0)  # 0 vs 0, then 0.5 vs 0.5
    assert v.simulated_share == pytest.approx(100 / 300)
    assert v.recorded_share == pytest.approx(110 / 330)
    assert v.share_ratio == pytest.approx(1.0)
    usage["a"] = (Usage(prompt_tokens=110, cached_tokens=0), Usage(prompt_tokens=220, cached_tokens=198))
    v = validate_caching(full, usage)
    assert v is not None
    assert v.mean_abs_error == pytest.approx((0 + abs(0.5 - 0.9)) / 2)
    f = fidelity(full, usage)
    assert f is not None
    assert (f.steps, f.replayed_prompt_tokens, f.recorded_prompt_tokens) == (2, 300, 330)
    assert f.ratio == pytest.approx(300 / 330)
    assert [r.run_id for r in f.per_run] == ["a"]
    assert validate_caching(full, {}) is None
    assert fidelity(full, {"b": (None,)}) is None
