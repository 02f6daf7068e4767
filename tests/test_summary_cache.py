"""LLM summaries that ride the agent's prompt cache: the request is the agent's last prompt, byte
for byte, plus one instruction; its usage is counted; a tool call is a failed summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fakes import (
    FAKE_MODEL,
    RecordedRequest,
    ScriptedReply,
    fake_anthropic,
    make_usage,
    scripted_provider,
    text_reply,
    tool_reply,
)

from tiered_agent import Agent, LiteLLMModel, Policy, tool
from tiered_agent._errors import ModelError
from tiered_agent._messages import Message, ToolCall
from tiered_agent._trace import SummaryEvent, read_trace
from tiered_agent.context.pipeline._types import SentPrompt, Summary
from tiered_agent.context.steps import Elide, Summarize
from tiered_agent.context.summary._llm import (
    MEMORY_REQUEST,
    SUMMARY_SYSTEM_PROMPT,
    LLMSummarizer,
    memory_request,
)
from tiered_agent.context.summary._worker import SmartSummarizer

pytestmark = pytest.mark.anyio

MARK = MEMORY_REQUEST.split("\n", 1)[0]  # the instruction's first line
MEMORY = "Task: count the lines\nFiles:\n- a.txt: read 1-3"


@tool(read_only=True)
def count(path: str) -> str:
    """Count the lines of a file.

    Args:
        path: The file.
    """
    return f"{path}: 3 lines"


def is_summary(request: RecordedRequest) -> bool:
    last = request.messages[-1]
    return last["role"] == "user" and str(last["content"]).startswith(MARK)


def agent_reply(request: RecordedRequest) -> ScriptedReply:
    """Six iterations of tool calls, then an answer (summary requests answered separately)."""
    n = sum(1 for m in request.messages if m["role"] == "assistant")
    if n < 6:
        return tool_reply(
            [(f"call_{n + 1}", "count", {"path": f"f{n + 1}.txt"})], make_usage(prompt=2000 + n)
        )
    return text_reply("all counted", make_usage(prompt=2100))


def summary_usage() -> dict[str, Any]:
    return make_usage(prompt=2400, completion=60, cached=2000) | {"cache_creation_input_tokens": 0}


def policy() -> Policy:
    return Policy("sum3", [Summarize(every=3, keep=1), Elide()])


async def test_the_summary_request_is_the_agents_last_prompt_plus_one_instruction(tmp_path: Path) -> None:
    def respond(request: RecordedRequest) -> ScriptedReply:
        return text_reply(MEMORY, summary_usage()) if is_summary(request) else agent_reply(request)

    with scripted_provider(respond=respond) as llm:
        agent = Agent(
            LiteLLMModel(FAKE_MODEL, api_key="sk-test"),
            tools=[count],
            context=policy(),
            summarizer=LLMSummarizer(FAKE_MODEL, api_key="sk-test"),
            trace_dir=tmp_path,
        )
        result = await agent.run("Count the lines of f1..f6.")
    summaries = [r for r in llm.requests if is_summary(r)]
    agent_requests = [r for r in llm.requests if not is_summary(r)]
    assert result.output == "all counted" and len(summaries) == 2  # queued after iterations 3 and 6
    first = summaries[0]
    # After iteration 3 the agent had just sent its 3rd request: the summary request repeats it.
    sent = agent_requests[2]
    assert json.dumps(first.messages[:-1]) == json.dumps(sent.messages)  # byte for byte
    assert json.dumps(first.tools) == json.dumps(sent.tools) and first.tools
    assert "tool_choice" not in first.params
    instruction = first.messages[-1]["content"]
    # keep=1: the prompt sent at iteration 3 holds exactly iterations 1-2, nothing to add or leave out
    assert "Write the working memory of iterations 1-2 of the work above." in instruction
    assert "Iterations not shown above" not in instruction and "leave out" not in instruction
    # usage: what the provider reported for both summaries, cached tokens included
    assert result.summary_usage.requests == 2
    assert result.summary_usage.prompt_tokens == 2 * 2400
    assert result.summary_usage.cached_tokens == 2 * 2000
    events = [e for e in read_trace(result.trace_path) if isinstance(e, SummaryEvent)]
    assert events[0].text == f"Working memory of iterations 1-2\n{MEMORY}"
    assert (events[0].model, events[0].input_tokens, events[0].output_tokens) == (FAKE_MODEL, 2400, 60)


async def test_the_second_summary_folds_the_first_shown_in_the_prompt(tmp_path: Path) -> None:
    def respond(request: RecordedRequest) -> ScriptedReply:
        return text_reply(MEMORY, summary_usage()) if is_summary(request) else agent_reply(request)

    with scripted_provider(respond=respond) as llm:
        agent = Agent(
            LiteLLMModel(FAKE_MODEL, api_key="sk-test"),
            tools=[count],
            context=policy(),
            summarizer=LLMSummarizer(FAKE_MODEL, api_key="sk-test"),
            trace_dir=tmp_path,
        )
        await agent.run("Count the lines of f1..f6.")
    second = [r for r in llm.requests if is_summary(r)][1]
    instruction = second.messages[-1]["content"]
    # The first summary (1-2) landed before the 6th prompt was built: it is in the prompt, not repeated.
    assert any(MEMORY in str(m.get("content")) for m in second.messages[:-1])
    assert (
        "iterations 1-5" in instruction
        and "previous working memory shown above (iterations 1-2)" in instruction
    )
    assert MEMORY not in instruction


def three_iterations() -> list[Message]:
    history = [Message("system", "sys"), Message("user", "the task")]
    for i in (1, 2, 3):
        call = ToolCall(f"c{i}", "count", json.dumps({"path": f"f{i}.txt"}))
        history += [
            Message("assistant", None, tool_calls=(call,), iteration=i),
            Message("tool", f"f{i}.txt: {i} lines", tool_call_id=f"c{i}", name="count", iteration=i),
        ]
    return history


async def test_a_reply_that_calls_a_tool_is_a_failed_summary() -> None:
    history = three_iterations()
    prompt = SentPrompt(tuple(history), (count.schema(),), FAKE_MODEL)
    summarizer = LLMSummarizer(FAKE_MODEL, api_key="sk-test")
    reply = tool_reply([("x1", "count", {"path": "f4.txt"})])
    failed = pytest.raises(ModelError, match=r"called a tool \(count\) instead of writing the summary")
    with scripted_provider(reply), failed:
        await summarizer.summarize(None, history, 1, 3, prompt=prompt)
    assert summarizer.usage.requests == 1  # the wasted request is counted


async def test_a_failed_summary_is_never_stored_and_is_retried_at_the_next_trigger() -> None:
    history = three_iterations()
    prompt = SentPrompt(tuple(history[:6]), (count.schema(),), FAKE_MODEL)
    summarizer = LLMSummarizer(FAKE_MODEL, api_key="sk-test")
    smart = SmartSummarizer(summarizer, background=False)
    with scripted_provider(
        tool_reply([("x1", "count", {"path": "f4.txt"})], make_usage(prompt=900, completion=9, cached=800)),
        text_reply(MEMORY, make_usage(prompt=950, completion=30, cached=800)),
    ) as llm:
        smart.submit(tuple(history[:6]), 1, 2, at_iteration=3, prompt=prompt)
        await smart.run_pending()
        assert smart.latest is None and smart.failures == 1 and smart.retry_from == 1
        smart.submit(tuple(history), 3, 3, at_iteration=4, prompt=SentPrompt(tuple(history), (), FAKE_MODEL))
        await smart.run_pending()
    smart.close()
    assert smart.latest is not None and (smart.latest.first, smart.latest.last) == (1, 3)
    assert "iterations 1-3" in llm.requests[1].messages[-1]["content"]  # the failed range is covered again
    assert summarizer.usage.requests == 2
    assert (summarizer.usage.prompt_tokens, summarizer.usage.cached_tokens) == (900 + 950, 1600)


def test_without_a_prompt_of_the_same_model_the_standalone_request_is_sent() -> None:
    history = [Message("system", "sys"), Message("user", "the task")]
    summarizer = LLMSummarizer(FAKE_MODEL)
    messages, tools = summarizer.request(None, history, 1, 1, None)
    assert [m["role"] for m in messages] == ["system", "user"] and tools == []
    assert messages[0]["content"].startswith(SUMMARY_SYSTEM_PROMPT.split("\n", 1)[0])
    other = SentPrompt(tuple(history), (count.schema(),), "openai/another-model")
    assert summarizer.request(None, history, 1, 1, other)[0] == messages  # its cache is not ours


def test_the_instruction_adds_what_the_prompt_does_not_show() -> None:
    history = three_iterations()
    # The prompt sent at iteration 3 holds iterations 0-2; keep=0 asks for 1..3.
    prompt = SentPrompt(tuple(history[:6]), (), FAKE_MODEL)
    previous = Summary(1, 1, "PREVIOUS MEMORY")
    text = memory_request(prompt, previous, history, 2, 3)
    assert "Write the working memory of iterations 1-3 of the work above." in text
    assert "Previous working memory (iterations 1-1), to fold in:\nPREVIOUS MEMORY" in text
    assert "Iterations not shown above:\n[it 3] call count (c3)" in text and "f3.txt: 3 lines" in text
    assert "f2.txt: 2 lines" not in text  # iteration 2 is in the prompt already
    shown = SentPrompt(
        (*history[:6], Message("user", "[Summary]\nPREVIOUS MEMORY", iteration=1)), (), FAKE_MODEL
    )
    text = memory_request(shown, previous, history, 2, 3)
    assert "PREVIOUS MEMORY" not in text and "folding in the previous working memory shown above" in text


# --------------------------------------------------------------------------- Claude over HTTP
async def test_claude_summary_reads_the_cache_where_the_agent_wrote_it() -> None:
    call = ToolCall("toolu_1", "count", json.dumps({"path": "a.txt"}))
    history = (
        Message("system", "You are terse."),
        Message("user", "Count a.txt."),
        Message("assistant", None, tool_calls=(call,), iteration=1),
        Message("tool", "a.txt: 3 lines", tool_call_id="toolu_1", name="count", iteration=1),
    )
    model = "anthropic/claude-sonnet-4-5"
    usage = {"input_tokens": 30, "output_tokens": 20, "cache_read_input_tokens": 1500}
    with fake_anthropic(MEMORY, usage) as (api_base, bodies):
        summarizer = LLMSummarizer(model, api_base=api_base, api_key="sk-ant-test-not-real")
        summary = await summarizer.summarize(
            None, history, 1, 1, prompt=SentPrompt(history, (count.schema(),), model)
        )
    body = bodies[0]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    last = body["messages"][-1]["content"]  # the tool result and the instruction, one user turn
    result = next(block for block in last if block["type"] == "tool_result")
    instruction = next(block for block in last if block["type"] == "text")
    assert result["cache_control"] == {"type": "ephemeral"}  # where the agent's own request wrote it
    assert "cache_control" not in instruction and instruction["text"].startswith(MARK)
    assert "tool_choice" not in body and [t["name"] for t in body["tools"]] == ["count"]
    assert summary.text.endswith(MEMORY) and summarizer.usage.cached_tokens == 1500
