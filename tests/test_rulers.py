"""The two added rulers: retrieval-adjusted misses and the word-level check, on hand-built runs."""

from __future__ import annotations

import pytest
from samples import HAND_RUN

from tiered_agent._messages import Message, ToolCall
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import replay_run, resolve_policies
from tiered_agent.bench._rulers import (
    CALL_TOKENS,
    RawTexts,
    RawView,
    RecordedTexts,
    RetrievalSources,
    WordIndex,
    prompt_texts,
    shown_retrievals,
)
from tiered_agent.bench._series import SparseSeries

COUNTER = IdCounter("o200k_base")


def test_shown_retrieval_calls_are_read_from_the_prompt() -> None:
    texts = [
        '[output omitted; context_retrieve(tool_call_id="call_7")]',
        '[Iterations 1-5, one line each; full text: context_retrieve(iteration="1-5")]',
        '[older message: 2 of 9 lines shown; full text: context_retrieve(iteration="8")]',
        "no call here: context_retrieve is a tool",
    ]
    assert shown_retrievals(texts) == (frozenset({"call_7"}), ((1, 5), (8, 8)))


def test_words_are_salient_when_first_observed_and_not_always_shown() -> None:
    index = WordIndex(HAND_RUN)
    # action 2 ("I will check helper_fn", grep helper_fn): helper_fn came from output 1
    assert index.salient(2) == ("helper_fn",)
    # action 3 edits src/utils.py with compute_total 4096: "utils" came from output 2; "compute_total"
    # and "4096" from output 1; "newThing" was never observed; "text", "path" are the agent's own
    assert index.salient(3) == ("4096", "compute_total", "utils")
    assert index.salient(1) == ()  # nothing observed before the first action


def _run() -> RecordedRun:
    body = "\n".join(f"row_{n} = {n}" for n in range(30))
    messages = [Message("system", "Agent."), Message("user", "Go.")]
    messages += [
        Message("assistant", None, (ToolCall("c1", "read", '{"path": "a.py"}'),), iteration=1),
        Message("tool", body, tool_call_id="c1", name="read", iteration=1),
        Message("assistant", "Use row_17.", (ToolCall("c2", "edit", '{"x": "row_17"}'),), iteration=2),
        Message("tool", "ok", tool_call_id="c2", name="edit", iteration=2),
    ]
    return RecordedRun("r", "test", "tiered-agent", tuple(messages))


def test_a_miss_is_recoverable_when_its_exact_call_is_shown() -> None:
    run = _run()
    sources = RetrievalSources(run, COUNTER)
    hidden = [Message("tool", '[output omitted; context_retrieve(tool_call_id="c1")]', tool_call_id="c1")]
    recovery = sources.recovery(["row_17"], 2, shown_retrievals(prompt_texts(hidden)), page_tokens=4000)
    tokens = COUNTER.count_text(run.messages[3].text)
    assert (recovery.recoverable, recovery.tokens) == (1, CALL_TOKENS + tokens)
    assert (
        sources.recovery(["row_17"], 2, shown_retrievals(prompt_texts(hidden)), page_tokens=10).tokens
        == CALL_TOKENS + 10
    )
    other = [Message("tool", '[output omitted; context_retrieve(tool_call_id="c9")]', tool_call_id="c9")]
    assert (
        sources.recovery(["row_17"], 2, shown_retrievals(prompt_texts(other)), page_tokens=4000).recoverable
        == 0
    )
    by_iteration = [Message("user", '[Iterations 1-1, one line each; context_retrieve(iteration="1")]')]
    assert (
        sources.recovery(
            ["row_17"], 2, shown_retrievals(prompt_texts(by_iteration)), page_tokens=4000
        ).recoverable
        == 1
    )


@pytest.mark.anyio
async def test_the_replay_reports_both_rulers() -> None:
    policies = resolve_policies(["full", "masking"])
    replay = await replay_run(_run(), policies, counter=COUNTER)
    full, masked = replay.policies["full"].steps[1], replay.policies["masking"].steps[1]
    assert (full.salient, full.missed, full.word_salient, full.word_missed) == (1, (), 1, 0)
    assert full.recoverable == masked.recoverable == 0  # masking keeps the last 10 outputs: nothing hidden


def test_recorded_messages_are_looked_up_and_only_foreign_ones_are_read() -> None:
    run = _run()
    recorded = RecordedTexts(run)
    series = SparseSeries(RawTexts(recorded.ids).foreign)
    strings = ["row_17", "row_99", "a.py", "Use row"]

    def absent(prompt: list[Message]) -> tuple[str, ...]:
        view = RawView(prompt, recorded, series)
        found = recorded.absent(strings, view)
        assert found == tuple(s for s in strings if s not in "\n".join(prompt_texts(prompt)))
        return found

    assert absent(list(run.messages)) == ("row_99",)  # the output, the call's arguments, the reply
    placeholder = Message("tool", "[output omitted: row_99 was kept]", tool_call_id="c1")
    assert absent([*run.messages[:3], placeholder]) == ("row_17", "Use row")
    copy = Message("tool", run.messages[3].text, tool_call_id="c1")  # equal, another object: searched
    assert absent([*run.messages[:3], copy]) == ("row_99", "Use row")
    view = RawView([*run.messages[:3], placeholder], recorded, series)
    assert view.texts() == [placeholder.text]  # the recorded messages are never read


def test_retrieval_calls_shown_by_recorded_messages_count() -> None:
    shown = Message(
        "tool", '[output omitted; context_retrieve(tool_call_id="c1")]', tool_call_id="c0", iteration=1
    )
    run = RecordedRun("r", "test", "tiered-agent", (*_run().messages, shown))
    recorded = RecordedTexts(run)
    extra = Message("user", '[Iterations 1-2; context_retrieve(iteration="1-2")]')
    view = RawView([*run.messages, extra], recorded, SparseSeries(RawTexts(recorded.ids).foreign))
    assert view.retrievals() == (frozenset({"c1"}), ((1, 2),))
