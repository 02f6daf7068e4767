"""Prompt-cache simulation: exact numbers on hand-computed requests (o200k_base token ids)."""

from __future__ import annotations

from array import array

import pytest

from tiered_agent._errors import ConfigurationError
from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._caching import (
    CacheSimulator,
    CountedHistory,
    IdCounter,
    Pricing,
    PromptEncoder,
    common_prefix,
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
