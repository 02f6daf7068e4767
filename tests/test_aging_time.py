"""Time-aware aging: what a rewrite costs after an idle gap (the cache's lifetime), where the policy
learns the time (the manager's clock, the replay's recorded request times), and the numbers."""

from __future__ import annotations

import math

import pytest

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._affinity import cache_affinity
from tiered_agent._providers import CACHE_MODELS, ModelPrices
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, replay_prompts
from tiered_agent.context._manager import ContextManager
from tiered_agent.context.aging import _breakeven
from tiered_agent.context.aging._breakeven import CacheTerms, IdleGaps
from tiered_agent.context.aging._state import AgingState
from tiered_agent.context.steps import Age

pytestmark = pytest.mark.anyio

COUNTER = TokenCounter("o200k_base")
CLAUDE_PRICES = ModelPrices("claude-sonnet-4-5", 3e-6, 15e-6, 3e-7, 3.75e-6, cache_write_1h=6e-6)
CLAUDE = CacheTerms.of(CACHE_MODELS["anthropic"], CLAUDE_PRICES)
OPENAI = CacheTerms.of(CACHE_MODELS["openai"], ModelPrices("gpt-5", 1.25e-6, 1e-5, 1.25e-7, 1.25e-6))
AGE = Age(min_chars=0, max_lines=2, head_lines=1, condense_after=None)


def _history(last: int) -> list[Message]:
    """Every iteration: one call and a 60-line output without references (ages to 2 lines)."""
    out = [Message("system", "You are an agent."), Message("user", "Read the parts.")]
    for k in range(1, last + 1):
        call = ToolCall(f"call_{k}", "bash", f'{{"command": "cat part{k}.txt"}}')
        body = "\n".join(f"line {n} of output number {k} is plain text" for n in range(60))
        out += [
            Message("assistant", f"Read part {k}.", (call,), iteration=k),
            Message("tool", body, tool_call_id=f"call_{k}", name="bash", iteration=k),
        ]
    return out


def _epochs(terms: CacheTerms, times: list[float | None], last: int = 30) -> list[int]:
    """The prompts (by newest iteration) at which the state aged, requests sent at ``times``."""
    state = AgingState(AGE, counter=COUNTER, terms=terms, retrieval=True)
    history = _history(last)
    out = []
    for k in range(1, last + 1):
        state.update([m for m in history if m.iteration <= k], k, at=times[k - 1])
        if state.new_epoch is not None:
            out.append(k)
    return out


# ----------------------------------------------------------------------------- the cache's lifetime
def test_survival_follows_the_providers_cache_lifetime() -> None:
    assert CLAUDE.ttl_s == 330.0 and CLAUDE.explicit  # 5 minutes and the grace the logs show
    assert [CLAUDE.survival(g) for g in (None, 0.0, 300.0, 330.0, 331.0, 3000.0)] == [1, 1, 1, 1, 0, 0]
    longer = CLAUDE.longer
    assert longer is not None and longer.ttl_s == 3600.0 and longer.longer is None
    assert longer.write == pytest.approx(2.0) and CLAUDE.write == pytest.approx(1.25)  # 1-hour writes: 2x
    assert (longer.survival(3000.0), longer.survival(3601.0)) == (1.0, 0.0)
    # a run that writes the 1-hour cache throughout (the replay of such a session)
    long_run = CacheTerms.of(CACHE_MODELS["anthropic"], CLAUDE_PRICES, long_ttl=True)
    assert long_run == longer
    # OpenAI: the expected share kept after an idle gap (the provider's table); no lifetime, no longer
    assert [OPENAI.survival(g) for g in (None, 200.0, 1000.0, 3000.0, 4000.0)] == [1, 1, 0.98, 0.74, 0]
    assert OPENAI.ttl_s is None and OPENAI.longer is None
    assert CacheTerms(read=0.1).survival(10_000.0) == 1.0  # no rules about time: nothing expires


def test_idle_gaps_count_the_share_lost_and_ignore_unknown_or_broken_times() -> None:
    gaps = IdleGaps()
    assert gaps.observe(None, CLAUDE) == 1.0 and gaps.gaps == 0
    assert gaps.observe(1_000.0, CLAUDE) == 1.0 and gaps.gaps == 0  # the first known time: no gap yet
    assert gaps.calls_to_free() == math.inf
    assert gaps.observe(1_100.0, CLAUDE) == 1.0
    assert gaps.observe(2_000.0, CLAUDE) == 0.0  # 900 s idle: the 5-minute entries expired
    assert gaps.observe(1_500.0, CLAUDE) == 1.0  # a clock that went back: no gap
    assert gaps.observe(math.nan, CLAUDE) == 1.0 and gaps.last == 1_500.0  # not a time: ignored
    assert (gaps.gaps, gaps.lost) == (3, 1.0)
    assert gaps.calls_to_free() == 3.0  # one gap in three lost the cache


# ----------------------------------------------------------------------------- the rule in time
def test_unknown_times_decide_as_before() -> None:
    assert _epochs(CLAUDE, [None] * 30) == _epochs(CLAUDE, [1_000.0 + 10 * k for k in range(30)])
    assert _epochs(CLAUDE, [None] * 30)[0] > 5  # the rewrite had to be paid for first


def test_a_gap_past_the_lifetime_ages_everything_due_at_once() -> None:
    warm = _epochs(CLAUDE, [None] * 30)
    first = warm[0]
    # an idle gap of 10 minutes before the 5th prompt: the cache is gone, so the rewrite is free
    times: list[float | None] = [10.0 * k for k in range(30)]
    for k in range(4, 30):
        times[k] = (times[k] or 0.0) + 600.0
    cold = _epochs(CLAUDE, times)
    assert first > 5 and cold[0] == 5  # the first prompt after the gap, long before the rule's turn
    # with the 1-hour lifetime the same gap keeps the cache: the rule's own timing
    assert CLAUDE.longer is not None
    assert _epochs(CLAUDE.longer, times)[0] > 5


def test_between_gaps_that_lose_the_cache_rewrites_wait_for_the_next_one() -> None:
    """Gaps of 10 minutes every 6th request: a paid rewrite would be lost at the next gap anyway,
    so every epoch after the first gap falls on a request after a gap."""
    times: list[float | None] = []
    now = 0.0
    for k in range(1, 61):
        now += 600.0 if k % 6 == 0 else 20.0
        times.append(now)
    epochs = _epochs(CLAUDE, times, last=60)
    assert epochs and all(k % 6 == 0 for k in epochs)
    assert len(epochs) >= 5


def test_an_implicit_cache_weighs_the_share_a_gap_keeps() -> None:
    terms = CacheTerms(read=0.1, idle_survival=((300.0, 1.0), (1800.0, 0.5)))
    steady = _epochs(terms, [10.0 * k for k in range(30)])
    times: list[float | None] = [10.0 * k for k in range(30)]
    times[5:] = [(t or 0.0) + 1_000.0 for t in times[5:]]  # half the cache survives the gap before 6
    halved = _epochs(terms, times)
    assert steady[0] == 9 and halved[0] == 6  # the rent of 6 prompts covers half the rewrite


# ----------------------------------------------------------------------------- where the time comes from
def _policy() -> Policy:
    return Policy("aging", (AGE,))


async def _schedule_at(manager: ContextManager, k: int, at: float | None = None) -> int:
    await manager.prepare(_history(k), at=at)
    return manager.schedule.through if manager.schedule is not None else 0


async def test_the_manager_reads_its_clock_unless_told_the_request_time() -> None:
    now = [0.0]

    def clock() -> float:
        now[0] += 20.0
        return now[0]

    manager = ContextManager(_policy(), counter=COUNTER, cache_terms=CLAUDE, clock=clock)
    assert [await _schedule_at(manager, k) for k in range(1, 5)] == [0, 0, 0, 0]
    now[0] += 900.0  # the clock moves on 15 minutes: the next prompt ages what left the window
    assert await _schedule_at(manager, 5) == 3
    told = ContextManager(_policy(), counter=COUNTER, cache_terms=CLAUDE, clock=None)
    assert [await _schedule_at(told, k, at=20.0 * k) for k in range(1, 5)] == [0, 0, 0, 0]
    assert await _schedule_at(told, 5, at=2_000.0) == 3
    unknown = ContextManager(_policy(), counter=COUNTER, cache_terms=CLAUDE, clock=None)
    assert [await _schedule_at(unknown, k) for k in range(1, 6)] == [0] * 5


async def test_a_live_run_that_asks_for_the_one_hour_cache_assumes_its_lifetime() -> None:
    model = "anthropic/claude-sonnet-4-5"
    times = [20.0, 40.0, 60.0, 80.0, 980.0]  # 15 minutes before the 5th prompt
    with cache_affinity("run-1") as affinity:
        affinity.long_gaps = True  # the run's requests carry ttl=1h (tiered_agent/_affinity.py)
        manager = ContextManager(_policy(), counter=COUNTER, model=model, clock=None)
        assert [await _schedule_at(manager, k, at=t) for k, t in enumerate(times, 1)] == [0] * 5
    with cache_affinity("run-2"):
        manager = ContextManager(_policy(), counter=COUNTER, model=model, clock=None)
        assert [await _schedule_at(manager, k, at=t) for k, t in enumerate(times, 1)] == [0, 0, 0, 0, 3]


async def test_the_replay_prepares_each_prompt_at_its_recorded_request_time() -> None:
    history = _history(8)
    stamps = [1_000.0 + 20 * k for k in range(8)]
    stamps[5:] = [t + 900.0 for t in stamps[5:]]  # 15 idle minutes before the 6th call
    run = RecordedRun(
        "timed", "test", "claude-code", tuple(history), model="claude-sonnet-4-5", timestamps=tuple(stamps)
    )
    settings = ReplaySettings(cache_model="anthropic")
    timed = [p.built.messages async for p in replay_prompts(run, _policy(), settings)]
    untimed_run = RecordedRun("untimed", "test", "claude-code", tuple(history), model="claude-sonnet-4-5")
    untimed = [p.built.messages async for p in replay_prompts(untimed_run, _policy(), settings)]
    assert timed[:5] == untimed[:5]  # before the gap: the same prompts
    assert timed[5] != untimed[5]  # after it: aged at once
    assert any("[older output:" in (m.text or "") for m in timed[5])
    assert not any("[older output:" in (m.text or "") for m in untimed[5])


# ----------------------------------------------------------------------------- never lose money quietly
def test_a_rewrite_waits_until_the_run_is_long_enough_to_pay_it_back() -> None:
    """The rent paid covers the rewrite, but it saves 300 a call: on a run of 6 calls it pays back
    only after 3 more (more than a third of the calls so far: under the Lindy prior the run ends
    first with a chance over 1/4)."""
    state = AgingState(AGE, counter=COUNTER, terms=CLAUDE, retrieval=True)
    for _ in range(6):
        state.idle.observe(None, CLAUDE)
    assert not state._pays(rent=1_000.0, cost=900.0, per_call=300.0)  # 300 x 6 / 3 = 600 < 900
    for _ in range(3):
        state.idle.observe(None, CLAUDE)
    assert state._pays(rent=1_000.0, cost=900.0, per_call=300.0)  # 300 x 9 / 3 = 900
    assert not state._pays(rent=800.0, cost=900.0, per_call=300.0)  # the rent rule still holds
    assert pytest.approx(1 / 3) == _breakeven.PAYBACK_SHARE


async def test_the_first_epoch_weighs_the_unrecorded_system_prompt_the_new_schema_re_sends() -> None:
    """The first epoch also starts sending ``context_retrieve``'s schema: under an explicit cache it
    re-sends what follows the tools, a replayed log's unrecorded system prompt included."""
    policy = Policy("aging", (AGE,), retrieval_schema="when_shown")
    tools = [
        {"type": "function", "function": {"name": "bash", "parameters": {}}},
        {"type": "function", "function": {"name": "context_retrieve", "parameters": {}}},
    ]

    async def first_epoch(unrecorded: int) -> int:
        manager = ContextManager(
            policy, counter=COUNTER, cache_terms=CLAUDE, clock=None, unrecorded_tokens=unrecorded
        )
        for k in range(1, 41):
            await manager.prepare(_history(k), tools)
            if manager.schedule is not None and manager.schedule.through:
                return k
        return 0

    known, unrecorded = await first_epoch(0), await first_epoch(20_000)
    assert 3 < known < unrecorded
