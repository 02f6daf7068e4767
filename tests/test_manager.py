"""ContextManager: summary cadence, safety net, coverage while summaries land in the background."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import anyio
import pytest

from tiered_agent import Agent, ContextConfig, Message, RunLimits, ToolCall, tool
from tiered_agent._errors import ContextBudgetExceeded
from tiered_agent._tokens import TokenCounter
from tiered_agent._trace import ModelRequest, SummaryEvent, read_trace
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.pipeline._types import Summary
from tiered_agent.testing import FunctionModel, calls, text

pytestmark = pytest.mark.anyio
COUNTER = TokenCounter("o200k_base")

# The pre-tuning `tiered` (ContextConfig defaults): 500-char outputs, window 5, summary every 10.
CLASSIC = ContextConfig(name="classic")


def history(iterations: int, output_chars: int = 800) -> list[Message]:
    messages = [Message("system", "sys"), Message("user", "task")]
    for k in range(1, iterations + 1):
        call = ToolCall(f"c{k}", "read", f'{{"n": {k}}}')
        messages.append(Message("assistant", f"step {k}", tool_calls=(call,), iteration=k))
        body = (f"marker-{k} " * output_chars)[:output_chars]
        messages.append(Message("tool", body, tool_call_id=f"c{k}", name="read", iteration=k))
    return messages


async def test_summary_is_queued_every_n_iterations_and_lands_before_the_next_prompt() -> None:
    events: list[object] = []
    config = ContextConfig(name="t", summary_every=10, window_iterations=5, compact_at=None)
    async with ContextManager(config, counter=COUNTER, background=False, on_event=events.append) as manager:
        first = await manager.prepare(history(10))  # iteration 11's prompt: summary of 1..5 queued
        second = await manager.prepare(history(11))
    assert first.built.stats.summary_range is None
    assert second.built.stats.summary_range == (1, 5)
    assert second.built.stats.shown_iterations == tuple(range(6, 12))
    summaries = [e for e in events if isinstance(e, SummaryEvent)]
    assert [(s.first_iteration, s.last_iteration, s.created_at_iteration) for s in summaries] == [(1, 5, 10)]
    assert "marker-6" not in summaries[0].text  # nothing after the snapshot's range


async def test_compaction_runs_synchronously_past_compact_at() -> None:
    config = ContextConfig(
        name="t",
        max_output_chars=None,
        window_iterations=None,
        summary_every=None,
        compact_at=0.7,
        compact_keep_iterations=2,
        context_window=6_000,
    )
    async with ContextManager(config, counter=COUNTER, background=False) as manager:
        small = await manager.prepare(history(3))
        big = await manager.prepare(history(30))
    assert not small.compacted
    assert big.compacted and big.built.stats.summary_range == (1, 28)
    assert big.prompt_tokens < 0.7 * 6_000 < big.counterfactual_tokens


async def test_hard_limit_refuses_an_oversized_prompt_and_replay_can_opt_out() -> None:
    config = ContextConfig(
        name="t",
        max_output_chars=None,
        window_iterations=None,
        summary_every=None,
        compact_at=None,
        context_window=2_000,
    )
    async with ContextManager(config, counter=COUNTER, background=False) as manager:
        with pytest.raises(ContextBudgetExceeded, match="95% of the 2,000-token context window"):
            await manager.prepare(history(10))
    async with ContextManager(config, counter=COUNTER, background=False, enforce_hard_limit=False) as manager:
        prepared = await manager.prepare(history(10))
    assert prepared.prompt_tokens > 2_000


async def test_retrieval_tool_is_registered_only_when_something_is_hidden() -> None:
    assert [t.name for t in ContextManager(PRESETS["tiered"], counter=COUNTER).tools(list)] == [
        "context_retrieve"
    ]
    assert ContextManager(PRESETS["full"], counter=COUNTER).tools(list) == []


async def test_truncated_tokens_are_counted() -> None:
    async with ContextManager(CLASSIC, counter=COUNTER, background=False) as manager:
        prepared = await manager.prepare(history(2, output_chars=5_000))
    record = prepared.record()
    assert record.truncated_outputs == 2
    assert record.truncated_tokens == prepared.counterfactual_tokens - prepared.prompt_tokens
    assert record.steps["truncate"].cut_tokens == record.truncated_tokens  # all the truncation step's


class SlowSummarizer:
    """A summarizer that takes a while; records which iterations each snapshot held."""

    def __init__(self) -> None:
        self.snapshots: list[tuple[int, int, int]] = []

    async def summarize(
        self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
    ) -> Summary:
        await anyio.sleep(0.02)
        newest = max(m.iteration for m in snapshot)
        self.snapshots.append((first, last, newest))
        text = " ".join(
            m.text.split()[0] for m in snapshot if m.role == "tool" and first <= m.iteration <= last
        )
        start = previous.first if previous else first
        return Summary(start, last, text, model="slow")


async def test_no_coverage_gap_and_no_future_data_while_the_agent_keeps_running(tmp_path: Path) -> None:
    @tool(read_only=True)
    async def read(n: int) -> str:
        """Read item n.

        Args:
            n: Which item.
        """
        await anyio.sleep(0.002)
        return f"marker-{n} " * 100

    summarizer = SlowSummarizer()
    model = FunctionModel(
        lambda r: text("done") if r.index == 60 else calls((f"c{r.index}", "read", {"n": r.index + 1}))
    )
    agent = Agent(
        model,
        tools=[read],
        context=ContextConfig(name="t", summary_every=5, window_iterations=3),
        limits=RunLimits(max_iterations=80),
        trace_dir=tmp_path,
        summarizer=summarizer,
    )
    result = await agent.run("go")
    assert result.output == "done"
    events = read_trace(result.trace_path)
    for request in (e for e in events if isinstance(e, ModelRequest)):
        covered = request.context["summary_range"][1] if request.context["summary_range"] else 0
        shown = set(request.context["shown_iterations"])
        assert all(k <= covered or k in shown for k in range(1, request.iteration)), request.iteration
    summaries = [e for e in events if isinstance(e, SummaryEvent)]
    assert len(summaries) >= 5
    for summary in summaries:
        words = summary.text.split()
        assert all(int(w.split("-")[1]) <= summary.last_iteration for w in words)
    assert all(newest <= last for first, last, newest in summarizer.snapshots)  # frozen snapshots


async def test_counterfactual_is_the_unmanaged_prompt_without_the_retrieval_schema() -> None:
    manager = ContextManager(
        PRESETS["tiered"].replace(retrieval_schema="always"), counter=COUNTER, background=False
    )
    own = {"type": "function", "function": {"name": "read", "parameters": {}}}
    schemas = [own, *(t.schema() for t in manager.tools(list))]
    async with manager:
        prepared = await manager.prepare(history(3, output_chars=100), schemas)
    assert [t["function"]["name"] for t in prepared.tools] == ["read", "context_retrieve"]
    assert prepared.counterfactual_tokens == COUNTER.count_prompt(history(3, output_chars=100), [own])
    assert prepared.prompt_tokens == COUNTER.count_prompt(history(3, output_chars=100), schemas)


# A fresh interpreter: build prompts with each preset that does not summarize on a schedule (the
# compacting ones only load the digest when they compact), then list what was imported.
_IMPORTS = """
import sys, anyio
from tiered_agent._messages import Message
from tiered_agent._tokens import TokenCounter
from tiered_agent.context import ContextManager

async def main(name):
    history = [Message("system", "s"), Message("user", "task")]
    async with ContextManager(name, counter=TokenCounter("o200k_base"), background=False) as manager:
        for k in range(1, 9):
            await manager.prepare(history)
            history += [Message("assistant", f"step {k}", iteration=k), Message("user", "ok", iteration=k)]

for name in ("tiered", "full", "masking", "codex"):
    anyio.run(main, name)
print(" ".join(sorted(m for m in sys.modules if m.startswith(("tiered_agent.context.summary", "litellm")))))
"""


def test_building_prompts_never_imports_the_working_memory_page_or_litellm() -> None:
    """Building prompts without a summary imports none of the summary machinery (the memory's fold,
    its reading of outputs, its page, the digest) nor litellm: only the reading of tool calls, which
    the files note (``aging/_written``) shares with the working memory."""
    import os
    import subprocess
    import sys

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", _IMPORTS], capture_output=True, text=True, env=env, check=True, timeout=120
    )
    imported = set(done.stdout.split())
    call_reader = {f"tiered_agent.context.summary.memory.{m}" for m in ("_calls", "_code", "_shell", "_text")}
    assert not {m for m in imported if m.startswith("tiered_agent.context.summary.memory._")} - {
        "tiered_agent.context.summary.memory._sections",  # the page's sections: constants only
        *call_reader,
    }
    assert "tiered_agent.context.summary._digest" not in imported
    assert not {m for m in imported if m == "litellm" or m.startswith("litellm.")}


async def test_schema_sent_says_whether_the_retrieval_schema_goes_out_already() -> None:
    always = ContextManager(
        PRESETS["tiered"].replace(retrieval_schema="always"), counter=COUNTER, background=False
    )
    assert always.schema_sent
    manager = ContextManager(PRESETS["tiered"], counter=COUNTER, background=False)
    async with manager:
        assert not manager.schema_sent
        prepared = await manager.prepare(history(3, output_chars=100))
        assert not prepared.built.shows_retrieval and not manager.schema_sent  # no prompt named a retrieval
