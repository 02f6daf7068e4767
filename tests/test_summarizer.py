"""Summarizers and the SmartSummarizer worker: background landing, FIFO, rolling, failures, shutdown."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any

import anyio
import pytest
from anyio import wait_all_tasks_blocked

from tiered_agent._errors import ModelError
from tiered_agent._messages import Message, ToolCall
from tiered_agent.context._names import RETRIEVE_TOOL_NAME
from tiered_agent.context.pipeline._types import Summary
from tiered_agent.context.summary._digest import digest
from tiered_agent.context.summary._llm import LLMSummarizer, render_range, summary_messages
from tiered_agent.context.summary._summarizer import DigestSummarizer, Summarizer
from tiered_agent.context.summary._worker import SmartSummarizer
from tiered_agent.context.summary.memory._sections import SECTIONS

pytestmark = pytest.mark.anyio


def iteration_messages(i: int, marker: str | None = None) -> list[Message]:
    output = f"Traceback (most recent call last):\nValueError: {marker}" if marker else f"output {i}"
    tool_call = ToolCall(f"call_{i}", "run_shell", json.dumps({"command": f"python step_{i}.py"}))
    return [
        Message("assistant", f"thinking at {i}", tool_calls=(tool_call,), iteration=i),
        Message("tool", output, tool_call_id=f"call_{i}", name="run_shell", iteration=i),
    ]


def make_history(last: int) -> list[Message]:
    history = [Message("system", "sys", iteration=0), Message("user", "the task", iteration=0)]
    for i in range(1, last + 1):
        history += iteration_messages(i)
    return history


Inline = Callable[..., SmartSummarizer]


@pytest.fixture
def inline() -> Iterator[Inline]:
    """Inline (deterministic) SmartSummarizers, closed after the test."""
    made: list[SmartSummarizer] = []

    def make(summarizer: Summarizer, **kwargs: Any) -> SmartSummarizer:
        made.append(SmartSummarizer(summarizer, background=False, **kwargs))
        return made[-1]

    yield make
    for smart in made:
        smart.close()


Call = tuple[int | None, int, int]  # (previous.last or None, first, last)


class Recording:
    """A summarizer that records its calls and can fail, hang, or wait for a gate."""

    def __init__(
        self,
        *,
        fail_on: frozenset[int] | set[int] = frozenset(),
        hang_on: frozenset[int] | set[int] = frozenset(),
    ) -> None:
        self.calls: list[Call] = []
        self.fail_on = fail_on  # call numbers (1-based) that raise
        self.hang_on = hang_on  # call numbers that never return
        self.gate: anyio.Event | None = None
        self.cancelled = 0

    async def summarize(
        self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
    ) -> Summary:
        self.calls.append((previous.last if previous else None, first, last))
        number = len(self.calls)
        try:
            if self.gate is not None:
                await self.gate.wait()
            if number in self.hang_on:
                await anyio.sleep_forever()
        except anyio.get_cancelled_exc_class():
            self.cancelled += 1
            raise
        if number in self.fail_on:
            raise RuntimeError(f"boom {number}")
        lo = previous.first if previous else first
        return Summary(lo, last, f"summary {lo}-{last}", model="fake", input_tokens=7, output_tokens=3)


# --------------------------------------------------------------------------- background landing
async def test_background_summary_sees_only_its_snapshot_while_history_grows() -> None:
    history = make_history(9)
    history += iteration_messages(10, marker="MARKER_IT10")
    history += iteration_messages(11, marker="MARKER_IT11")  # already in the history, after `last`

    class Gated(DigestSummarizer):
        def __init__(self) -> None:
            self.gate = anyio.Event()

        async def summarize(
            self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
        ) -> Summary:
            await self.gate.wait()  # slow: the test appends more history meanwhile
            return await super().summarize(previous, snapshot, first, last)

    slow = Gated()
    landed: list[Summary] = []
    smart = SmartSummarizer(slow, timeout_s=10, on_summary=landed.append)
    async with anyio.create_task_group() as tg:
        tg.start_soon(smart.run)
        smart.submit(tuple(history), 1, 10, at_iteration=11)
        for i in range(12, 21):
            history += iteration_messages(i, marker=f"MARKER_IT{i}")
            await anyio.sleep(0)
        await wait_all_tasks_blocked()
        assert smart.latest is None and smart.pending == 1
        slow.gate.set()
        assert await smart.drain(10)
    assert landed == [smart.latest]
    summary = smart.latest
    assert summary is not None
    assert (summary.first, summary.last, summary.created_at_iteration) == (1, 10, 11)
    assert "MARKER_IT10" in summary.text
    for i in range(11, 21):
        assert f"MARKER_IT{i}" not in summary.text


async def test_jobs_run_in_fifo_order_and_roll() -> None:
    recording = Recording()
    smart = SmartSummarizer(recording, timeout_s=10)
    history = tuple(make_history(15))
    async with anyio.create_task_group() as tg:
        tg.start_soon(smart.run)
        smart.submit(history, 1, 5, at_iteration=6)
        smart.submit(history, 6, 10, at_iteration=11)
        smart.submit(history, 11, 15, at_iteration=16)
        assert await smart.drain(10)
    assert recording.calls == [(None, 1, 5), (5, 6, 10), (10, 11, 15)]
    assert smart.latest == Summary(1, 15, "summary 1-15", "fake", 7, 3, created_at_iteration=16)
    assert (smart.completed, smart.failures) == (3, 0)
    assert (smart.usage.prompt_tokens, smart.usage.completion_tokens, smart.usage.requests) == (21, 9, 3)


async def test_inline_mode_lands_only_in_run_pending(inline: Inline) -> None:
    recording = Recording()
    landed: list[Summary] = []
    smart = inline(recording, on_summary=landed.append)
    smart.submit(tuple(make_history(5)), 1, 5, at_iteration=6)
    assert smart.latest is None and recording.calls == []
    assert await smart.run_pending() == 1
    assert smart.latest is not None and landed == [smart.latest]
    assert await smart.run_pending() == 0
    with pytest.raises(RuntimeError):
        await smart.run()
    smart.submit(tuple(make_history(10)), 6, 10, at_iteration=11)
    assert await smart.drain(5) is True  # inline drain processes the queue, then closes
    assert smart.latest is not None and smart.latest.last == 10 and len(landed) == 2
    with pytest.raises(RuntimeError, match="closed"):
        smart.submit(tuple(make_history(10)), 11, 12, at_iteration=13)


# --------------------------------------------------------------------------- failures
async def test_failure_keeps_previous_and_next_submit_covers_failed_range(inline: Inline) -> None:
    recording = Recording(fail_on={2})
    smart = inline(recording)
    history = tuple(make_history(15))
    smart.submit(history, 1, 5, at_iteration=6)
    await smart.run_pending()
    first_summary = smart.latest
    smart.submit(history, 6, 10, at_iteration=11)
    await smart.run_pending()
    assert smart.latest is first_summary
    assert (smart.failures, smart.retry_from) == (1, 6)
    smart.submit(history, 11, 15, at_iteration=16)
    await smart.run_pending()
    assert recording.calls[-1] == (5, 6, 15)  # the failed 6..10 is covered by the next job
    assert smart.latest is not None and (smart.latest.first, smart.latest.last) == (1, 15)
    assert smart.retry_from is None and smart.failures == 1


async def test_failure_without_previous_is_retried_from_its_first_iteration(inline: Inline) -> None:
    recording = Recording(fail_on={1})
    smart = inline(recording)
    history = tuple(make_history(10))
    smart.submit(history, 1, 5, at_iteration=6)
    await smart.run_pending()
    assert smart.latest is None and smart.failures == 1
    smart.submit(history, 6, 10, at_iteration=11)
    await smart.run_pending()
    assert recording.calls == [(None, 1, 5), (None, 1, 10)]
    assert smart.latest is not None and smart.latest.text == "summary 1-10"


async def test_timeout_is_a_failure_and_is_retried(inline: Inline) -> None:
    recording = Recording(hang_on={2})
    smart = inline(recording, timeout_s=0.05)
    history = tuple(make_history(15))
    smart.submit(history, 1, 5, at_iteration=6)
    smart.submit(history, 6, 10, at_iteration=11)
    await smart.run_pending()
    assert smart.latest is not None and smart.latest.last == 5
    assert (smart.failures, recording.cancelled, smart.retry_from) == (1, 1, 6)
    smart.submit(history, 11, 15, at_iteration=16)
    await smart.run_pending()
    assert recording.calls[-1] == (5, 6, 15)
    assert smart.latest is not None and smart.latest.last == 15


async def test_empty_summary_text_is_a_failure(inline: Inline) -> None:
    class Blank:
        async def summarize(
            self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
        ) -> Summary:
            return Summary(first, last, "  \n")

    smart = inline(Blank())
    smart.submit(tuple(make_history(3)), 1, 3, at_iteration=4)
    await smart.run_pending()
    assert smart.latest is None and smart.failures == 1


# --------------------------------------------------------------------------- shutdown, safety net
async def test_drain_timeout_cancels_the_running_job_and_drops_the_queue() -> None:
    recording = Recording(hang_on={1})
    smart = SmartSummarizer(recording, timeout_s=60)
    history = tuple(make_history(10))
    async with anyio.create_task_group() as tg:
        tg.start_soon(smart.run)
        smart.submit(history, 1, 5, at_iteration=6)
        smart.submit(history, 6, 10, at_iteration=11)
        await wait_all_tasks_blocked()
        assert await smart.drain(0.05) is False
    # the task group exited on its own: run() returned after the cancellation
    assert recording.cancelled == 1 and len(recording.calls) == 1
    assert (smart.pending, smart.dropped, smart.failures) == (0, 1, 0)
    assert smart.latest is None
    with pytest.raises(RuntimeError):
        smart.submit(history, 1, 10, at_iteration=11)
    smart.close()  # idempotent


async def test_compact_now_waits_for_the_running_job_and_rolls_on_it() -> None:
    recording = Recording()
    recording.gate = anyio.Event()
    smart = SmartSummarizer(recording, timeout_s=10)
    history = tuple(make_history(12))
    results: list[Summary | None] = []

    async def compact() -> None:
        results.append(await smart.compact_now(history, 6, 10, at_iteration=12))

    async with anyio.create_task_group() as tg:
        tg.start_soon(smart.run)
        smart.submit(history, 1, 5, at_iteration=6)
        await wait_all_tasks_blocked()
        tg.start_soon(compact)
        await wait_all_tasks_blocked()
        assert recording.calls == [(None, 1, 5)]  # compact_now waits for the lock
        recording.gate.set()
        await wait_all_tasks_blocked()
        assert await smart.drain(10)
    assert recording.calls == [(None, 1, 5), (5, 6, 10)]
    assert results == [smart.latest]
    assert smart.latest is not None and smart.latest.created_at_iteration == 12


async def test_stale_job_after_compaction_is_skipped(inline: Inline) -> None:
    recording = Recording()
    smart = inline(recording)
    history = tuple(make_history(10))
    smart.submit(history, 1, 5, at_iteration=6)
    summary = await smart.compact_now(history, 1, 10, at_iteration=10)
    await smart.run_pending()
    assert recording.calls == [(None, 1, 10)]
    assert smart.latest is summary


async def test_full_queue_coalesces_into_the_newest_job(inline: Inline) -> None:
    recording = Recording()
    smart = inline(recording, max_queue=2)
    history = tuple(make_history(15))
    smart.submit(history, 1, 5, at_iteration=6)
    smart.submit(history, 6, 10, at_iteration=11)
    smart.submit(history, 11, 15, at_iteration=16)
    assert (smart.pending, smart.coalesced) == (1, 2)
    await smart.run_pending()
    assert recording.calls == [(None, 1, 15)]


async def test_digest_summarizer_matches_digest() -> None:
    history = make_history(6)
    previous = digest(None, history, 1, 3)
    assert await DigestSummarizer().summarize(previous, history, 4, 6) == digest(previous, history, 4, 6)


# --------------------------------------------------------------------------- LLM summarizer
def test_summary_messages_hold_goal_previous_and_only_the_new_range() -> None:
    history = make_history(8)
    history.append(
        Message("tool", "retrieved stuff", tool_call_id="r1", name=RETRIEVE_TOOL_NAME, iteration=6)
    )
    previous = Summary(1, 4, "PREVIOUS SUMMARY TEXT")
    system, user = summary_messages(previous, history, 5, 6, max_tokens=500)
    assert "working memory" in system["content"]
    for title, _ in SECTIONS:  # the same structure as the deterministic working memory
        assert f"\n{title}: " in system["content"]
    content = user["content"]
    assert "Goal (the task):\nthe task" in content
    assert "Previous working memory (iterations 1-4):\nPREVIOUS SUMMARY TEXT" in content
    assert "New iterations 5-6:" in content
    assert "[it 5] run_shell result (call_5): output 5" in content
    assert "step_6.py" in content and "retrieved stuff" not in content
    assert "step_4.py" not in content and "step_7.py" not in content
    assert render_range(history, 20, 30) == "(no activity in this range)"


async def test_llm_summarizer_through_litellm_mock_records_tokens() -> None:
    summarizer = LLMSummarizer(
        "openai/gpt-4o-mini", max_tokens=200, timeout_s=5, mock_response="Task: x.\nDecisions:\n- it 5: y."
    )
    previous = Summary(1, 4, "old")
    summary = await summarizer.summarize(previous, make_history(8), 5, 8)
    assert summary.text == "Working memory of iterations 1-8\nTask: x.\nDecisions:\n- it 5: y."
    assert (summary.first, summary.last, summary.model) == (1, 8, "openai/gpt-4o-mini")
    assert summary.input_tokens > 0 and summary.output_tokens > 0
    assert summarizer.usage.requests == 1
    assert summarizer.usage.prompt_tokens == summary.input_tokens


async def test_llm_empty_reply_is_a_failure_not_a_summary(inline: Inline) -> None:
    summarizer = LLMSummarizer("openai/gpt-4o-mini", timeout_s=5, mock_response="   ")
    with pytest.raises(ModelError, match="empty reply"):
        await summarizer.summarize(None, make_history(3), 1, 3)
    assert summarizer.usage.requests == 1  # the wasted request is still counted
    smart = inline(summarizer)
    smart.submit(tuple(make_history(3)), 1, 3, at_iteration=4)
    await smart.run_pending()
    assert smart.latest is None and smart.failures == 1 and smart.retry_from == 1
    assert smart.usage.requests == 2


async def test_llm_error_is_raised_as_model_error() -> None:
    summarizer = LLMSummarizer("openai/gpt-4o-mini", timeout_s=5, mock_response=Exception("provider down"))
    with pytest.raises(ModelError, match="provider down"):
        await summarizer.summarize(None, make_history(3), 1, 3)
