"""A SmartSummarizer reads whether its summarizer takes ``prompt=`` at its first job, once.

Most summarizers of a replayed run never get a job (a segment shorter than the policy's
``every``): reading ``inspect.signature`` for them was ~0.1 ms each for nothing. The answer, and
so what each job passes, is the same as when it was read at construction.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import anyio
import pytest

from tiered_agent._messages import Message
from tiered_agent.context.pipeline._types import SentPrompt, Summary
from tiered_agent.context.summary import _worker
from tiered_agent.context.summary._summarizer import DigestSummarizer
from tiered_agent.context.summary._worker import SmartSummarizer

pytestmark = pytest.mark.anyio


def _history(last: int) -> tuple[Message, ...]:
    messages = [Message("user", "the task", iteration=0)]
    messages += [Message("assistant", f"step {i}", iteration=i) for i in range(1, last + 1)]
    return tuple(messages)


class _WithPrompt:
    def __init__(self) -> None:
        self.prompts: list[SentPrompt | None] = []

    async def summarize(
        self,
        previous: Summary | None,
        snapshot: Sequence[Message],
        first: int,
        last: int,
        *,
        prompt: SentPrompt | None = None,
    ) -> Summary:
        self.prompts.append(prompt)
        return Summary(first, last, f"summary {first}-{last}")


class _WithoutPrompt:
    def __init__(self) -> None:
        self.calls = 0

    async def summarize(
        self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
    ) -> Summary:
        self.calls += 1
        return Summary(first, last, f"summary {first}-{last}")


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """The summarizers whose signature was read, in order."""
    seen: list[Any] = []
    original = _worker._accepts_prompt

    def counted(summarizer: Any) -> bool:
        seen.append(summarizer)
        return original(summarizer)

    monkeypatch.setattr(_worker, "_accepts_prompt", counted)
    return seen


async def test_a_summarizer_without_jobs_is_never_inspected(reads: list[Any]) -> None:
    smart = SmartSummarizer(DigestSummarizer(), background=False)
    assert await smart.run_pending() == 0
    smart.close()
    assert reads == []  # fails before: read in the constructor


async def test_read_once_at_the_first_job_and_the_prompt_passed(reads: list[Any]) -> None:
    summarizer = _WithPrompt()
    smart = SmartSummarizer(summarizer, background=False)
    prompt = SentPrompt((Message("user", "p"),), (), "m")
    for last in (3, 6, 9):
        smart.submit(_history(last), 1, last, last, prompt=prompt)
        assert await smart.run_pending() == 1
    smart.close()
    assert reads == [summarizer]
    assert summarizer.prompts == [prompt, prompt, prompt]
    assert smart.latest is not None and (smart.latest.first, smart.latest.last) == (1, 9)


async def test_a_summarizer_without_prompt_gets_none_passed(reads: list[Any]) -> None:
    summarizer = _WithoutPrompt()
    smart = SmartSummarizer(summarizer, background=False)
    smart.submit(_history(4), 1, 4, 4, prompt=SentPrompt((), (), "m"))
    smart.submit(_history(8), 1, 8, 8)
    assert await smart.run_pending() == 2
    smart.close()
    assert reads == [summarizer] and summarizer.calls == 2
    assert smart.failures == 0 and smart.latest is not None and smart.latest.last == 8


async def test_background_worker_reads_it_at_its_first_job(reads: list[Any]) -> None:
    summarizer = _WithPrompt()
    smart = SmartSummarizer(summarizer, background=True)
    async with anyio.create_task_group() as group:
        group.start_soon(smart.run)
        assert reads == []
        smart.submit(_history(5), 1, 5, 5)
        await smart.drain(5.0)
        smart.close()
        group.cancel_scope.cancel()
    assert reads == [summarizer] and summarizer.prompts == [None]
