"""Work ``ContextManager.prepare`` skips (speed round 3) without changing what it builds: the tool
schemas counted once per list of schema objects, a digest primed only when it runs in the background,
and the working memory's fold reusing the file notes it did not touch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._manager import ContextManager
from tiered_agent.context.summary._state import Summaries, SummarySettings
from tiered_agent.context.summary._summarizer import DigestSummarizer


class _CountingCounter(TokenCounter):
    """A token counter that records every tool list it serializes."""

    def __init__(self) -> None:
        super().__init__("o200k_base")
        self.tool_lists: list[int] = []

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        self.tool_lists.append(len(tools))
        return super().count_tools(tools)


def _schema(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": {"type": "object"}},
    }


def _iteration(k: int) -> list[Message]:
    call = ToolCall(f"c{k}", "bash", f'{{"command": "cat f{k}.py"}}')
    return [
        Message("assistant", f"step {k}", tool_calls=(call,), iteration=k),
        Message("tool", f"line {k}\n" * 5, tool_call_id=f"c{k}", name="bash", iteration=k),
    ]


@pytest.mark.anyio
async def test_tool_schemas_are_counted_again_only_when_they_change() -> None:
    counter = _CountingCounter()
    plain = TokenCounter("o200k_base")
    first = [_schema("bash", "run a command"), _schema("read", "read a file")]
    changed = [first[0], _schema("read", "read a file, with many more words in its description")]
    history: list[Message] = [Message("system", "sys"), Message("user", "task")]
    async with ContextManager("full", counter=counter, context_window=100_000, background=False) as manager:
        for k in range(1, 13):
            # the same objects for 4 prompts (in a new list each time), then another schema, then back
            schemas = list(first) if k <= 4 or k > 8 else list(changed)
            prepared = await manager.prepare(history, schemas)
            assert prepared.prompt_tokens == plain.count_prompt(history, schemas)
            assert prepared.counterfactual_tokens == plain.count_prompt(history, schemas)
            history += _iteration(k)
    # counted at the first prompt and at the change; the two lists before it are still known after it
    assert counter.tool_lists == [2, 2]


@pytest.mark.anyio
async def test_an_inline_digest_does_not_prime_and_a_background_one_does() -> None:
    settings = SummarySettings(worker=True)
    primed: list[int] = []

    class Recording(DigestSummarizer):
        def prime(self, messages: Sequence[Message]) -> None:
            primed.append(len(messages))
            super().prime(messages)

    async with Summaries(settings, summarizer=Recording(), background=False) as inline:
        assert not inline.primes
        inline.prime(_iteration(1))
    assert primed == []
    async with Summaries(settings, summarizer=Recording(), background=True) as background:
        assert background.primes
        background.prime(_iteration(1))
    assert primed == [2]
    async with Summaries(SummarySettings(worker=False), summarizer=Recording()) as idle:
        assert not idle.primes  # no step summarizes: no worker, nothing to prime
