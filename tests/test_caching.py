"""Prompt-cache simulation: exact numbers on hand-computed requests (o200k_base token ids)."""

from __future__ import annotations

import dataclasses
from array import array

import pytest

from tiered_agent._errors import ConfigurationError
from tiered_agent._messages import Message, ToolCall
from tiered_agent._providers import CACHE_MODELS, CacheModel, cache_model_for, switched_min_tokens
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._caching import (
    CacheSimulator,
    CacheUse,
    CountedHistory,
    IdCounter,
    Pricing,
    PromptEncoder,
    common_prefix,
    content_blocks,
)

# o200k_base: "You are terse." = 4 tokens, "Fix bug." = 3, '{"cmd": "ls"}' = 6, "bash" = 1,
# "file.txt" = 2, "call_1" = 3, "alpha beta gamma" / "alpha beta delta" = 3 each (first 2 shared).
SYSTEM = Message("system", "You are terse.")  # 3 framing + 4 = 7
TASK = Message("user", "Fix bug.")  # 3 + 3 = 6
ACTION = Message(
    "assistant", None, tool_calls=(ToolCall("call_1", "bash", '{"cmd": "ls"}'),), iteration=1
)  # 3 + (1 + 6 + 3) = 13
RESULT = Message("tool", "file.txt", tool_call_id="call_1", name="bash", iteration=1)  # 3 + 2 + 3 = 8
GAMMA = Message("user", "alpha beta gamma", iteration=1)  # 3 + 3 = 6
DELTA = Message("user", "alpha beta delta", iteration=1)


@pytest.fixture(scope="module")
def counter() -> IdCounter:
    return IdCounter("o200k_base")


def test_token_ids_match_the_counter_exactly(counter: IdCounter) -> None:
    encoder = PromptEncoder(counter)
    assert [len(encoder.message(m)) for m in (SYSTEM, TASK, ACTION, RESULT, GAMMA)] == [7, 6, 13, 8, 6]
    messages = [SYSTEM, TASK, ACTION, RESULT]
    tools = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
    segments = encoder.request(messages, tools)
    assert sum(len(s) for s in segments) + 3 == counter.count_prompt(messages, tools)
    assert len(segments[0]) == counter.count_tools(tools)


def test_ideal_cache_hand_computed(counter: IdCounter) -> None:
    cache = CacheSimulator(PromptEncoder(counter))  # ideal: every token of the common prefix
    assert cache.request([SYSTEM, TASK]).read == 0  # first request: nothing cached
    assert not cache.rewrote
    assert cache.request([SYSTEM, TASK, ACTION, RESULT]).read == 13  # 7 + 6
    assert not cache.rewrote  # the previous request is a prefix of this one
    assert cache.request([SYSTEM, TASK, ACTION, RESULT, GAMMA]).read == 34  # 7 + 6 + 13 + 8
    # diverges inside the last message: 3 framing tokens + "alpha beta" (2 tokens) are shared
    assert cache.request([SYSTEM, TASK, ACTION, RESULT, DELTA]).read == 39
    assert cache.rewrote
    # a rewritten start loses everything after the system message's framing tokens
    use = cache.request([Message("system", "ok"), TASK, ACTION, RESULT, DELTA])
    assert (use.read, use.written) == (3, 0)
    assert cache.rewrote


def test_tools_come_first_and_are_cached(counter: IdCounter) -> None:
    tools = [{"type": "function", "function": {"name": "bash"}}]
    width = counter.count_tools(tools)
    cache = CacheSimulator(PromptEncoder(counter))
    assert cache.request([SYSTEM, TASK], tools).read == 0
    assert cache.request([Message("system", "ok"), TASK], tools).read == width + 3


def test_common_prefix_on_segments() -> None:
    a = [array("I", [1, 2, 3]), array("I", [4, 5])]
    assert common_prefix(a, [array("I", [1, 2, 3]), array("I", [4, 6, 7])]) == 4
    assert common_prefix(a, [array("I", [1, 2, 3])]) == 3
    assert common_prefix(a, [*a, array("I", [9])]) == 5
    assert common_prefix(a, [array("I", [2])]) == 0
    long_a, long_b = array("I", range(1000)), array("I", [*range(777), 0, 0])
    assert common_prefix([long_a], [long_b]) == 777


def test_pricing_exact() -> None:
    pricing = Pricing(cache_discount=0.1, output_price_ratio=4.0)
    # the four requests above, 10 output tokens each: prompt = segments + 3 (reply primer)
    steps = [(16, 0), (37, 13), (43, 34), (43, 39)]
    costs = [pricing.cost(p, c, 10) for p, c in steps]
    assert costs == pytest.approx([56.0, 65.3, 52.4, 47.9])
    assert sum(costs) == pytest.approx(221.6)
    assert Pricing(0.5, 1.0).cost(100, 200, 0) == pytest.approx(50.0)  # cached is capped at the prompt
    assert pricing.input_cost(37, 13) == pytest.approx(25.3)


def test_pricing_rejects_nonsense() -> None:
    with pytest.raises(ConfigurationError):
        Pricing(cache_discount=1.5)
    with pytest.raises(ConfigurationError):
        Pricing(output_price_ratio=-1)


def test_counted_history_shortcut_matches_a_full_count(counter: IdCounter) -> None:
    messages = [SYSTEM, TASK, ACTION, RESULT, GAMMA]
    tools = [{"type": "function", "function": {"name": "bash"}}]
    carried = sum(counter.count_message(m) for m in messages)
    assert carried == 7 + 6 + 13 + 8 + 6
    history = CountedHistory(messages, carried)
    assert list(history) == messages
    assert counter.count_prompt(history, tools) == TokenCounter("o200k_base").count_prompt(messages, tools)
    assert counter.count_uncached("alpha beta gamma") == 3


# ----------------------------------------------------------------------------- provider cache models
def _words(n: int) -> str:
    """``n`` o200k tokens exactly ("hello" then " hello" n-1 times)."""
    return "hello" + " hello" * (n - 1)


def _msg(role: str, n: int, iteration: int = 0) -> Message:
    """A message of ``n`` content tokens, ``n + 3`` with its framing."""
    return Message(role, _words(n), iteration=iteration)  # type: ignore[arg-type]


def test_hand_built_messages_have_the_token_counts_the_expectations_use(counter: IdCounter) -> None:
    for n in (5, 10, 20, 50, 100, 997, 1200, 2000, 3000):
        assert counter.count_message(_msg("user", n)) == n + 3


def test_gemini_cache_blocks_minimum_and_expected_misses(counter: IdCounter) -> None:
    cache = CacheSimulator(PromptEncoder(counter), CACHE_MODELS["gemini"])
    system, task = _msg("system", 100), _msg("user", 2000)  # 103 + 2003 = 2106 tokens
    action, result = _msg("assistant", 500, 1), _msg("tool", 3000, 1)  # 503, 3003
    assert cache.request([system]).read == 0
    assert cache.request([system, task]).read == 0  # 103 common tokens: under one block
    # 2,106 common tokens hold one 2,048-token block, 96.5% of it expected to hit: 1976.32
    assert cache.request([system, task, action]) == CacheUse(1976, 0)
    assert cache.request([system, task, action, result]).read == 1976  # 2,609: still one block
    assert cache.request([system, task, action, result, _msg("user", 5, 2)]).read == 3953  # 5,612: two
    # a rewrite at the start: nothing
    assert cache.request([_msg("system", 99), task]).read == 0


def _two_blocks() -> tuple[list[Message], list[Message], int]:
    """A 4,106-token prompt (two of Gemini's implicit blocks), it grown by one message, and what a
    request reads of the first when it hits (one block, less the miss rate)."""
    base = [_msg("system", 100), _msg("user", 4000)]
    return base, [*base, _msg("assistant", 5, 1)], round(4096 * 0.965)


def test_each_recorded_endpoint_has_its_own_cache(counter: IdCounter) -> None:
    """A request hits what the same endpoint served last; the first request to an endpoint misses."""
    base, grown, hit = _two_blocks()
    cache = CacheSimulator(PromptEncoder(counter), CACHE_MODELS["gemini"])
    assert cache.request(base, route="A").read == 0
    assert cache.request(grown, route="B").read == 0  # B never saw the prefix
    assert cache.request([*grown, _msg("tool", 5, 1)], route="A").read == hit  # A's last request: base
    assert not cache.rewrote  # a rewrite is the policy's, relative to the previous request, any route
    assert cache.request([_msg("system", 99), *base[1:]], route="B").read == 0
    assert cache.rewrote
    unrouted = CacheSimulator(PromptEncoder(counter), CACHE_MODELS["gemini"])
    unrouted.request(base)
    assert unrouted.request(grown).read == hit  # no routes recorded: one endpoint
    ideal = CacheSimulator(PromptEncoder(counter), CACHE_MODELS["ideal"])
    ideal.request(base, route="A")
    assert ideal.request(grown, route="B").read == 4106  # ideal ignores routes: all of base


def test_gemini_block_sizes_are_in_provider_tokens(counter: IdCounter) -> None:
    """With a scale of 2 provider tokens per replayed token, 1,030 replayed tokens hold one block."""
    cache = CacheSimulator(PromptEncoder(counter), CACHE_MODELS["gemini"], scale=2.0)
    first = [_msg("system", 20), _msg("user", 1000)]  # 23 + 1003 = 1026 replayed = 2052 provider
    cache.request(first)
    # 2048 provider tokens x 0.965 / 2 = 988.16 replayed tokens
    assert cache.request([*first, _msg("assistant", 5, 1)]).read == 988
    unscaled = CacheSimulator(PromptEncoder(counter), CACHE_MODELS["gemini"])
    unscaled.request(first)
    assert unscaled.request([*first, _msg("assistant", 5, 1)]).read == 0  # 1026 < 2048
    with pytest.raises(ConfigurationError):
        CacheSimulator(PromptEncoder(counter), CACHE_MODELS["gemini"], scale=0)


# The documented rules alone, without the expectations fitted on recorded sessions (tested below).
OPENAI_RULES = dataclasses.replace(CACHE_MODELS["openai"], routing_loss=0.0, idle_survival=())
SONNET_RULES = dataclasses.replace(
    cache_model_for("claude-sonnet-4-5"), rewrite_rate=0.0, shared_share=0.0, shared_warm=0.0
)


def test_openai_cache_minimum_and_increments(counter: IdCounter) -> None:
    cache = CacheSimulator(PromptEncoder(counter), OPENAI_RULES)
    system = _msg("system", 997)  # 1000 tokens
    cache.request([system])
    assert cache.request([system, _msg("user", 97)]).read == 0  # 1,000 common: under 1,024
    history = [system, _msg("user", 97)]  # 1,100
    assert cache.request([*history, _msg("assistant", 197, 1)]).read == 1024  # 1,100 -> 1,024
    history.append(_msg("assistant", 197, 1))  # 1,300
    assert cache.request([*history, _msg("tool", 5, 1)]).read == 1280  # 1,300 -> 1,280


def test_anthropic_breakpoints_writes_and_rewrites(counter: IdCounter) -> None:
    cache = CacheSimulator(PromptEncoder(counter), SONNET_RULES)
    system, task = _msg("system", 1200), _msg("user", 10)  # 1203, 13: positions 1203, 1216
    # first request: nothing to read; the newest-message breakpoint writes everything up to it
    assert cache.request([system, task]) == CacheUse(0, 1216)
    action, result = _msg("assistant", 50, 1), _msg("tool", 100, 1)  # 53, 103: positions 1269, 1372
    # the previous newest-message entry (1,216) is read; what follows up to the new breakpoint is written
    assert cache.request([system, task, action, result]) == CacheUse(1216, 156)
    # the tool output is rewritten (masked): the entry at 1,269 never existed, 1,216 is found looking back
    masked, action2 = _msg("tool", 5, 1), _msg("assistant", 20, 2)  # 8, 23: positions 1277, 1300
    assert cache.request([system, task, action, masked, action2]) == CacheUse(1216, 84)
    assert cache.rewrote


def test_anthropic_lookback_is_twenty_blocks(counter: IdCounter) -> None:
    rules = SONNET_RULES
    system, task = _msg("system", 1200), _msg("user", 10)
    short = [_msg("user" if i % 2 else "assistant", 1, 1) for i in range(25)]  # 4 tokens each
    within = CacheSimulator(PromptEncoder(counter), rules)
    within.request([system, task])
    # 20 blocks after the last entry: found at the edge of the lookback
    assert within.request([system, task, *short[:20]]) == CacheUse(1216, 80)
    beyond = CacheSimulator(PromptEncoder(counter), rules)
    beyond.request([system, task])
    # 21 blocks after it: only the system prompt's breakpoint finds its entry (1,203)
    assert beyond.request([system, task, *short[:21]]) == CacheUse(1203, 13 + 84)


def test_anthropic_lookback_counts_content_blocks(counter: IdCounter) -> None:
    """An assistant message with text and a tool call is 2 blocks, its result 1: 7 iterations are
    21 blocks, one more than the lookback reaches."""
    assert content_blocks(ACTION) == 1 and content_blocks(RESULT) == 1 and content_blocks(SYSTEM) == 1
    rules = SONNET_RULES
    system, task = _msg("system", 1200), _msg("user", 10)

    def iteration(k: int) -> list[Message]:
        call = ToolCall(f"c{k}", "bash", "{}")
        action = Message("assistant", "ok", tool_calls=(call,), iteration=k)
        return [action, Message("tool", "done", tool_call_id=f"c{k}", name="bash", iteration=k)]

    assert content_blocks(iteration(1)[0]) == 2
    six = [m for k in range(1, 7) for m in iteration(k)]
    seven = [*six, *iteration(7)]
    for history, read in ((six, 1216), (seven, 1203)):
        cache = CacheSimulator(PromptEncoder(counter), rules)
        cache.request([system, task])
        assert cache.request([system, task, *history]).read == read


def test_anthropic_minimum_per_model(counter: IdCounter) -> None:
    haiku = dataclasses.replace(cache_model_for("claude-haiku-4-5"), rewrite_rate=0.0)
    cache = CacheSimulator(PromptEncoder(counter), haiku)  # 4,096
    system, task = _msg("system", 1200), _msg("user", 10)
    assert cache.request([system, task]) == CacheUse(0, 0)  # 1,216 < 4,096: no entry written
    assert cache.request([system, task, _msg("assistant", 3000, 1)]) == CacheUse(0, 4219)
    assert cache.request([system, task, _msg("assistant", 3000, 1), _msg("tool", 5, 1)]) == CacheUse(4219, 8)


def test_pricing_charges_writes_at_the_premium() -> None:
    pricing = Pricing(cache_discount=0.1, output_price_ratio=4.0)
    # 100 prompt tokens: 60 read (6.0), 30 written at 1.25 (37.5), 10 uncached; 5 output (20)
    assert pricing.input_cost(100, 60, 30, 1.25) == pytest.approx(53.5)
    assert pricing.cost(100, 60, 5, 30, 1.25) == pytest.approx(73.5)
    assert pricing.cost(100, 60, 5) == pytest.approx(10 + 30 + 6 + 20)  # no writes: as before


# ---------------------------------------------------------------- time, lifetimes, prefixes
def _anthropic_steps(counter: IdCounter, times: list[float], *, long: bool = False) -> list[CacheUse]:
    """Three growing requests (1,216, then 1,269, then 1,372 tokens) sent at ``times``."""
    system, task = _msg("system", 1200), _msg("user", 10)  # positions 1203, 1216
    action, result = _msg("assistant", 50, 1), _msg("tool", 100, 1)  # 1269, 1372
    cache = CacheSimulator(PromptEncoder(counter), SONNET_RULES)
    requests = ([system, task], [system, task, action], [system, task, action, result])
    return [cache.request(r, at=t, long_ttl=long) for r, t in zip(requests, times, strict=True)]


def test_anthropic_entries_expire_after_their_lifetime(counter: IdCounter) -> None:
    # 5-minute writes (330 s with the recorded grace): 100 s later the entries are read
    assert _anthropic_steps(counter, [0, 100, 200]) == [
        CacheUse(0, 1216),
        CacheUse(1216, 53),
        CacheUse(1269, 103),
    ]
    # 400 s after the last use everything expired: the whole prompt is written again
    assert _anthropic_steps(counter, [0, 100, 500])[2] == CacheUse(0, 1372)
    # a use renews an entry: read at 300, the entries written then still live at 600
    assert _anthropic_steps(counter, [0, 300, 600])[2] == CacheUse(1269, 103)
    # 1-hour writes survive the same gaps, not a longer one
    assert _anthropic_steps(counter, [0, 2000, 5000], long=True)[2] == CacheUse(1269, 103)
    assert _anthropic_steps(counter, [0, 2000, 6000], long=True)[2] == CacheUse(0, 1372)
    # no times recorded: nothing expires
    assert _anthropic_steps(counter, [None, None, None])[2] == CacheUse(1269, 103)  # type: ignore[list-item]


def test_an_unrecorded_prefix_is_sent_first_and_its_shared_part_may_be_warm(counter: IdCounter) -> None:
    rules = dataclasses.replace(SONNET_RULES, shared_share=0.5, shared_warm=0.6)
    cache = CacheSimulator(PromptEncoder(counter), rules, prefix_tokens=4000)  # 2,000 shared + 2,000
    assert cache.prefix_tokens == 4000
    task, action = _msg("user", 10), _msg("assistant", 50, 1)  # positions 4013, 4066
    # cold: breakpoints at 2,000 (shared), 4,000 (end of the prefix) and 4,013 all written, but the
    # shared 2,000 are expected to be read with the chance 0.6 that another session warmed them
    assert cache.request([task]) == CacheUse(1200, 2813)
    assert cache.request([task, action]) == CacheUse(4013, 53)
    ideal = CacheSimulator(PromptEncoder(counter), CACHE_MODELS["ideal"], prefix_tokens=500)
    ideal.request([task])
    assert ideal.request([task, action]).read == 513  # the prefix is part of every common prefix


def test_anthropic_hits_lose_the_unrecorded_rewrites(counter: IdCounter) -> None:
    cache = CacheSimulator(PromptEncoder(counter), dataclasses.replace(SONNET_RULES, rewrite_rate=0.1))
    system, task, action = _msg("system", 1200), _msg("user", 10), _msg("assistant", 50, 1)
    assert cache.request([system, task]) == CacheUse(0, 1216)
    # 10% of the 1,216 read tokens expected to be written again instead: 1216 - 121.6, 53 + 121.6
    assert cache.request([system, task, action]) == CacheUse(1094, 175)


def test_openai_prefixes_survive_idle_gaps_in_part(counter: IdCounter) -> None:
    rules = dataclasses.replace(CACHE_MODELS["openai"], routing_loss=0.0)
    system, user = _msg("system", 997), _msg("user", 97)  # 1,000 + 100
    history = [system, user, _msg("assistant", 197, 1)]  # 1,300

    def reads(times: list[float], model: CacheModel = rules) -> list[int]:
        cache = CacheSimulator(PromptEncoder(counter), model)
        requests = ([system, user], history, [*history, _msg("tool", 5, 1)])
        return [cache.request(r, at=t).read for r, t in zip(requests, times, strict=True)]

    assert reads([0, 100, 300]) == [0, 1024, 1280]  # within 5 minutes: all of it
    assert reads([0, 100, 700]) == [0, 1024, 1254]  # a 10-minute gap keeps 98%: 0.98 x 1,280
    assert reads([0, 100, 2500]) == [0, 1024, 947]  # 40 minutes: 74%
    assert reads([0, 100, 5000]) == [0, 1024, 0]  # over an hour: nothing
    # the fitted routing loss: 3.1% of every hit
    assert reads([0, 100, 300], CACHE_MODELS["openai"]) == [0, 992, 1240]  # 1,024 and 1,280 x 0.969


def test_openai_turn_after_reasoning_reads_up_to_the_previous_turns_first_response(
    counter: IdCounter,
) -> None:
    system, task = _msg("system", 997), _msg("user", 97)  # 1,000 + 100
    turn = [_msg("assistant", 297, 1), _msg("tool", 297, 1), _msg("assistant", 297, 2)]  # 3 x 300
    history = [system, task, *turn, _msg("user", 47, 3)]  # the next user message opens a turn

    def read(model: CacheModel, flagged: bool) -> int:
        cache = CacheSimulator(PromptEncoder(counter), model)
        cache.request([system, task, *turn])  # 2,000 tokens
        return cache.request([*history], new_turn_after_reasoning=flagged).read

    # the provider dropped the turn's reasoning: the prefix ends where its first response began
    assert read(OPENAI_RULES, True) == 1024  # 1,100 -> 1,024
    assert read(OPENAI_RULES, False) == 1920  # no reasoning recorded: the whole 2,000 -> 1,920
    # a model that keeps reasoning (Gemini's implicit cache) ignores the flag
    gemini = dataclasses.replace(CACHE_MODELS["gemini"], miss_rate=0.0, min_tokens=0, increment=1)
    assert read(gemini, True) == read(gemini, False) == 2000


# ---------------------------------------------------------------- runs that switched models
def test_each_model_of_a_run_has_its_own_anthropic_cache(counter: IdCounter) -> None:
    """A run that switched models (a slash command on another model): a request to the other model
    reads none of the first model's entries; back on the first model within their lifetime, it reads
    them again; the other model's entries serve its own next request."""
    system, task = _msg("system", 1200), _msg("user", 10)  # positions 1203, 1216
    action, result = _msg("assistant", 50, 1), _msg("tool", 100, 1)  # 1269, 1372
    more = _msg("assistant", 20, 2)  # 1395
    cache = CacheSimulator(PromptEncoder(counter), SONNET_RULES)
    assert cache.request([system, task], at=0, partition="opus") == CacheUse(0, 1216)
    # another model: nothing the first wrote is read, everything up to its newest message is written
    assert cache.request([system, task, action], at=10, partition="haiku") == CacheUse(0, 1269)
    assert cache.rewrote is False  # the same prompt grown: not a rewrite by the policy
    # the first model again: its own entry at 1,216 is read
    assert cache.request([system, task, action, result], at=20, partition="opus") == CacheUse(1216, 156)
    # and the second model reads its own entry at 1,269
    grown = [system, task, action, result, more]
    assert cache.request(grown, at=30, partition="haiku") == CacheUse(1269, 126)
    # one model throughout (the default partition) is the simulator as before: the entry is read
    same = CacheSimulator(PromptEncoder(counter), SONNET_RULES)
    same.request([system, task], at=0)
    assert same.request([system, task, action], at=10) == CacheUse(1216, 53)


def test_a_model_switched_to_caches_only_prefixes_past_its_own_minimum(counter: IdCounter) -> None:
    """Anthropic's minimum cacheable prefix is per model: a Sonnet 4.5 session (1,024 tokens) that
    runs a command on Haiku 4.5 (4,096) writes nothing for a 1,269-token Haiku prompt."""
    assert switched_min_tokens("claude-haiku-4-5-20251001", SONNET_RULES) == 4096
    assert switched_min_tokens("claude-sonnet-4-5", SONNET_RULES) == 1024
    assert switched_min_tokens(None, SONNET_RULES) is None  # no switch: the rules' own
    assert switched_min_tokens("gpt-5", SONNET_RULES) is None
    assert switched_min_tokens("claude-haiku-4-5", CACHE_MODELS["openai"]) is None
    system, task, action = _msg("system", 1200), _msg("user", 10), _msg("assistant", 50, 1)
    cache = CacheSimulator(PromptEncoder(counter), SONNET_RULES)
    assert cache.request([system, task], at=0, partition="sonnet") == CacheUse(0, 1216)
    assert cache.request([system, task, action], at=10, partition="haiku", min_tokens=4096) == CacheUse(0, 0)
    # as before the fix, at the run's minimum: the Haiku prompt would have been written
    before = CacheSimulator(PromptEncoder(counter), SONNET_RULES)
    before.request([system, task], at=0, partition="sonnet")
    assert before.request([system, task, action], at=10, partition="haiku") == CacheUse(0, 1269)


def test_each_model_of_a_run_has_its_own_implicit_cache(counter: IdCounter) -> None:
    """Implicit caches (Gemini's blocks): a request to another model misses what the first model
    cached, on the same endpoint; the first model's next request hits its own previous request."""
    base, grown, hit = _two_blocks()
    cache = CacheSimulator(PromptEncoder(counter), CACHE_MODELS["gemini"])
    assert cache.request(base, partition="pro").read == 0
    assert cache.request(grown, partition="flash").read == 0  # flash never saw the prefix
    assert cache.request([*grown, _msg("tool", 5, 1)], partition="pro").read == hit  # pro's last: base
