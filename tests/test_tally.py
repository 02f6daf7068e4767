"""Incremental token counts (context/_tally.py) equal a full recount, whatever the sequence of histories."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.pipeline._build import build_prompt
from tiered_agent.context.pipeline._draft import HistoryFacts
from tiered_agent.context.pipeline._tally import HistoryTally, PromptTally, common_prefix
from tiered_agent.context.pipeline._types import Summary

COUNTER = TokenCounter("o200k_base")
WORDS = ["alpha", "beta gamma", "def f(x):\n    return x", "", "ünïcode ✓", "x" * 40, "1 2 3 4 5"]


@st.composite
def messages(draw: st.DrawFn) -> Message:
    role = draw(st.sampled_from(["user", "assistant", "tool"]))
    text = " ".join(draw(st.lists(st.sampled_from(WORDS), max_size=4)))
    iteration = draw(st.integers(0, 12))
    if role == "assistant":
        calls = tuple(
            ToolCall(
                f"c{i}", draw(st.sampled_from(["read", "bash"])), draw(st.sampled_from(['{"p": 1}', "{}"]))
            )
            for i in range(draw(st.integers(0, 2)))
        )
        return Message("assistant", text or None, calls, iteration=iteration)
    if role == "tool":
        return Message(
            "tool", text, tool_call_id=f"c{draw(st.integers(0, 3))}", name="read", iteration=iteration
        )
    return Message("user", text, iteration=iteration)


def recount(history: list[Message]) -> tuple[int, tuple[int, ...], int]:
    tokens = sum(COUNTER.count_message(m) for m in history)
    iterations = tuple(sorted({m.iteration for m in history if m.iteration > 0}))
    return tokens, iterations, max((m.iteration for m in history), default=0)


# Each step: append some messages (the usual case), or hand over another history (a rewrite).
steps = st.lists(
    st.tuples(
        st.sampled_from(["append", "append", "append", "rewrite", "shrink"]), st.lists(messages(), max_size=5)
    ),
    max_size=25,
)


@settings(max_examples=100, deadline=None)
@given(steps)
def test_the_history_tally_equals_a_full_recount(plan: list[tuple[str, list[Message]]]) -> None:
    tally = HistoryTally(COUNTER)
    history: list[Message] = []
    for action, new in plan:
        if action == "append":
            history.extend(new)  # the same list, grown: the loop's history
        elif action == "rewrite":
            history = [*history[: len(history) // 2], *new, *history[len(history) // 2 :]]
        else:
            history = history[: len(history) // 2]
        tally.update(history)
        assert (tally.tokens, tally.iterations, tally.last_iteration) == recount(history)
        assert tally.length == len(history)
        assert tally.ordered == HistoryFacts.of(history).ordered


@settings(max_examples=100, deadline=None)
@given(st.lists(st.lists(messages(), max_size=8), max_size=20), st.data())
def test_the_prompt_tally_equals_a_full_recount(prompts: list[list[Message]], data: st.DataObject) -> None:
    tally = PromptTally(COUNTER)
    previous: list[Message] = []
    for new in prompts:
        # Keep a prefix of the previous prompt (the same objects), then new or re-created messages.
        keep = data.draw(st.integers(0, len(previous)))
        copies = [Message(m.role, m.content, m.tool_calls, m.tool_call_id, m.name, m.iteration) for m in new]
        prompt = [*previous[:keep], *copies]
        assert tally.messages_tokens(prompt) == sum(COUNTER.count_message(m) for m in prompt)
        previous = prompt


def test_common_prefix_compares_identity_and_equal_continuations() -> None:
    a, b, c = Message("user", "a"), Message("user", "b"), Message("user", "c")
    equal_copy = Message("user", "a")
    assert common_prefix((a, b, c), (a, b)) == 2
    assert common_prefix((a, b), (a, b, c)) == 2
    assert common_prefix((a, b, c), (a, c, b)) == 1
    assert common_prefix((), (a,)) == 0
    # A continuation made of equal messages is shared whole (what callers derive is the same);
    # otherwise the prefix ends at the first message that is not the same object.
    assert common_prefix((a, b), (equal_copy, b, c)) == 2
    assert common_prefix((a, b), (equal_copy, c)) == 0
    assert common_prefix([a, b], (a, b)) == 2  # a list against a tuple: by identity


def test_a_history_rewritten_behind_the_tail_is_detected_at_the_head() -> None:
    tally = HistoryTally(COUNTER)
    first = [Message("system", "s"), Message("user", "task"), Message("user", "x" * 50, iteration=1)]
    tally.update(first)
    other = [Message("system", "another system prompt"), *first[1:]]  # same length and tail
    tally.update(other)
    assert tally.tokens == recount(other)[0]


@pytest.mark.anyio
async def test_prepare_counts_equal_full_recounts_over_a_growing_run() -> None:
    schemas = [{"type": "function", "function": {"name": "read", "description": "r", "parameters": {}}}]
    history: list[Message] = [Message("system", "sys"), Message("user", "task")]
    async with ContextManager(
        "kb-labs-adr", counter=COUNTER, context_window=100_000, background=False
    ) as manager:
        retrieve = [t.schema() for t in manager.tools(lambda: history)]
        for k in range(1, 40):
            prepared = await manager.prepare(history, [*schemas, *retrieve])
            assert prepared.counterfactual_tokens == COUNTER.count_prompt(history, schemas)
            assert prepared.prompt_tokens == COUNTER.count_prompt(prepared.built.messages, prepared.tools)
            call = ToolCall(f"c{k}", "read", f'{{"p": {k % 7}}}')
            history.append(Message("assistant", f"step {k}", (call,), iteration=k))
            history.append(
                Message("tool", f"out {k} " * (k * 20), tool_call_id=call.id, name="read", iteration=k)
            )
        assert manager.summary is not None  # the prompt was rewritten along the way


def test_message_hash_is_kept_and_survives_pickling() -> None:
    import pickle

    message = Message("tool", "out", tool_call_id="c1", name="read", iteration=2)
    same = Message("tool", "out", tool_call_id="c1", name="read", iteration=2)
    assert hash(message) == hash(same) and message == same
    assert {message: 1}[same] == 1
    restored = pickle.loads(pickle.dumps(message))
    assert restored == message and hash(restored) == hash(message)
    assert Message("tool", "other", tool_call_id="c1", name="read", iteration=2) != message


def _run_history(iterations: int) -> list[Message]:
    history = [Message("system", "sys"), Message("user", "task")]
    for k in range(1, iterations + 1):
        call = ToolCall(f"c{k}", "read", f'{{"p": {k}}}')
        history.append(Message("assistant", f"step {k}", (call,), iteration=k))
        history.append(
            Message("tool", f"output {k} " * (40 + k * 7), tool_call_id=call.id, name="read", iteration=k)
        )
    return history


@pytest.mark.parametrize("name", ["tiered", "kb-labs-adr", "adk-compaction"])
def test_an_ordered_history_is_sliced_exactly_as_a_scan_would_filter_it(name: str) -> None:
    history = _run_history(30)
    assert HistoryFacts.of(history).ordered
    for first, last in [(1, 24), (3, 9), (1, 30), (25, 25)]:
        summary = Summary(first, last, f"summary of {first}-{last}")
        for end in (len(history), len(history) - 6, 40):  # a rolling range: Elide's memo is reused
            prefix = history[:end]
            facts = HistoryFacts.of(prefix)
            fast = build_prompt(prefix, PRESETS[name], summary=summary, counter=COUNTER, facts=facts)
            slow_facts = HistoryFacts(facts.iterations, ordered=False)  # forces the scans
            slow = build_prompt(prefix, PRESETS[name], summary=summary, counter=COUNTER, facts=slow_facts)
            assert fast == slow
