"""The agent loop: stop reasons, tool order, dedup, trace, accounting (FunctionModel, no litellm)."""

from __future__ import annotations

from pathlib import Path

import anyio
import pytest

from tiered_agent import Agent, ContextConfig, Message, RunLimits, StopReason, tool
from tiered_agent._errors import ContextWindowExceeded, ModelError
from tiered_agent._model import ModelReply
from tiered_agent._trace import (
    ErrorEvent,
    MessageEvent,
    ModelRequest,
    RunEnded,
    ToolResult,
    load_history,
    read_trace,
)
from tiered_agent.testing import AgentRequest, FunctionModel, calls, text

pytestmark = pytest.mark.anyio

BIG = "".join(f"line {i:04d} of the big file\n" for i in range(400))  # 10,400 chars


@tool(read_only=True)
def read_big(name: str) -> str:
    """Return a big text.

    Args:
        name: Which text.
    """
    return BIG


def make_agent(tmp_path: Path, model: FunctionModel, **kwargs: object) -> Agent:
    kwargs.setdefault("tools", [read_big])
    kwargs.setdefault("context", ContextConfig(name="500-chars"))  # the original design's defaults
    return Agent(model, trace_dir=tmp_path, **kwargs)  # type: ignore[arg-type]


async def test_tool_then_answer_truncates_prompt_but_trace_keeps_full_output(tmp_path: Path) -> None:
    model = FunctionModel.scripted([calls(("call_a", "read_big", {"name": "x"})), text("done")])
    result = await make_agent(tmp_path, model).run("read it")

    assert result.stop_reason is StopReason.ANSWERED and result.output == "done"
    tool_msg = next(m for m in model.requests[1].messages if m["role"] == "tool")
    assert len(tool_msg["content"]) < 700
    assert 'context_retrieve(tool_call_id="call_a")' in tool_msg["content"]
    history = load_history(result.trace_path)
    assert [m.role for m in history] == ["system", "user", "assistant", "tool", "assistant"]
    assert history[3].content == BIG  # the trace is never truncated
    assert result.usage.requests == 2
    assert result.iterations[1].counterfactual_tokens > result.iterations[1].prompt_tokens_local
    assert result.savings > 0


async def test_parallel_calls_run_concurrently_and_append_in_call_order(tmp_path: Path) -> None:
    started: list[str] = []
    both_started = anyio.Event()

    @tool
    async def slow(label: str) -> str:
        """Wait for the other call, then return the label.

        Args:
            label: The label.
        """
        started.append(label)
        if len(started) == 2:
            both_started.set()
        with anyio.fail_after(5):
            await both_started.wait()
        if label == "first":
            await anyio.sleep(0.05)
        return f"result {label}"

    model = FunctionModel.scripted(
        [calls(("c1", "slow", {"label": "first"}), ("c2", "slow", {"label": "second"})), text("ok")]
    )
    result = await make_agent(tmp_path, model, tools=[slow]).run("go")
    tools = [m for m in load_history(result.trace_path) if m.role == "tool"]
    assert [(m.tool_call_id, m.content) for m in tools] == [("c1", "result first"), ("c2", "result second")]


async def test_max_iterations_stop(tmp_path: Path) -> None:
    model = FunctionModel(lambda r: calls((f"c{r.index}", "read_big", {"name": str(r.index)})))
    result = await make_agent(tmp_path, model, limits=RunLimits(max_iterations=3)).run("loop")
    assert result.stop_reason is StopReason.MAX_ITERATIONS
    assert len(result.iterations) == 3 and result.output is None


async def test_token_budget_stops_before_the_call_that_would_exceed_it(tmp_path: Path) -> None:
    model = FunctionModel(lambda r: calls((f"c{r.index}", "read_big", {"name": str(r.index)})))
    result = await make_agent(tmp_path, model, limits=RunLimits(token_budget=2_000)).run("loop")
    assert result.stop_reason is StopReason.TOKEN_BUDGET
    assert result.usage.total_tokens <= 2_000
    assert len(model.requests) >= 1


async def test_empty_reply_is_reported_back_then_run_continues(tmp_path: Path) -> None:
    model = FunctionModel.scripted([Message("assistant", ""), text("answer")])
    result = await make_agent(tmp_path, model).run("x")
    assert result.output == "answer"
    events = read_trace(result.trace_path)
    assert any(isinstance(e, ErrorEvent) and e.kind == "empty_reply" for e in events)
    assert "empty" in model.requests[1].messages[-1]["content"]


async def test_three_empty_replies_end_the_run_with_an_error(tmp_path: Path) -> None:
    model = FunctionModel(lambda r: Message("assistant", None))
    result = await make_agent(tmp_path, model).run("x")
    assert result.stop_reason is StopReason.ERROR and "3 times" in (result.error or "")


async def test_unknown_tool_and_bad_json_go_back_to_the_model(tmp_path: Path) -> None:
    from tiered_agent import ToolCall

    bad = Message(
        "assistant", None, tool_calls=(ToolCall("c1", "nope", "{}"), ToolCall("c2", "read_big", "{oops"))
    )
    model = FunctionModel.scripted([bad, text("recovered")])
    result = await make_agent(tmp_path, model).run("x")
    assert result.output == "recovered"
    kinds = [e.error_kind for e in read_trace(result.trace_path) if isinstance(e, ToolResult)]
    assert kinds == ["unknown_tool", "invalid_json"]
    contents = [m["content"] for m in model.requests[1].messages if m["role"] == "tool"]
    assert "read_big" in contents[0]  # lists the available tools


async def test_dedup_serves_identical_read_only_calls_and_a_write_invalidates(tmp_path: Path) -> None:
    executed: list[str] = []

    @tool(read_only=True)
    def look(path: str) -> str:
        """Read.

        Args:
            path: File.
        """
        executed.append(path)
        return f"content of {path} v{len(executed)}"

    @tool
    def change(path: str) -> str:
        """Write.

        Args:
            path: File.
        """
        return "written"

    script = [
        calls(("c1", "look", {"path": "a"})),
        calls(("c2", "look", {"path": "a"})),
        calls(("c3", "change", {"path": "a"})),
        calls(("c4", "look", {"path": "a"})),
        text("done"),
    ]
    model = FunctionModel.scripted(script)
    result = await make_agent(tmp_path, model, tools=[look, change]).run("x")
    assert executed == ["a", "a"]  # c2 served from the cache, c4 executed again after the write
    second = next(m for m in model.requests[2].messages if m.get("tool_call_id") == "c2")["content"]
    # the prompt points to c1's output, still shown above; the history keeps what was served
    assert second == "[same output as iteration 1 (tool_call_id=c1), shown above]"
    served = next(m for m in load_history(result.trace_path) if m.tool_call_id == "c2")
    assert (
        served.text
        == "[already called in iteration 1 (tool_call_id=c1); same arguments, cached result:]\n"
        + ("content of a v1")
    )
    results = [e for e in read_trace(result.trace_path) if isinstance(e, ToolResult)]
    assert [e.dedup_of for e in results] == [None, "c1", None, None]
    assert sum(i.dedup_hits for i in result.iterations) == 1


async def test_cancellation_writes_the_run_end(tmp_path: Path) -> None:
    @tool
    async def hang() -> str:
        """Never return."""
        await anyio.sleep_forever()
        return ""

    model = FunctionModel.scripted([calls(("c1", "hang", {}))])
    agent = make_agent(tmp_path, model, tools=[hang])
    with anyio.move_on_after(0.3):
        await agent.run("x")
    trace = next(tmp_path.glob("*.jsonl"))
    end = read_trace(trace)[-1]
    assert isinstance(end, RunEnded) and end.stop_reason == "cancelled"


async def test_model_error_ends_the_run_and_is_traced(tmp_path: Path) -> None:
    async def fail(request: AgentRequest) -> Message:
        raise ModelError("provider is down after 4 attempts")

    result = await make_agent(tmp_path, FunctionModel(fail)).run("x")
    assert result.stop_reason is StopReason.ERROR and "provider is down" in (result.error or "")
    assert any(isinstance(e, ErrorEvent) for e in read_trace(result.trace_path))


async def test_context_window_error_compacts_once_and_retries(tmp_path: Path) -> None:
    attempts: list[int] = []

    async def complete(request: AgentRequest) -> Message:
        attempts.append(len(request.messages))
        if request.index < 6:
            return calls((f"c{request.index}", "read_big", {"name": str(request.index)}))
        if len(attempts) == 7:
            raise ContextWindowExceeded("prompt too long")
        return text("fits now")

    config = ContextConfig(name="t", window_iterations=2, summary_every=None, compact_at=None)
    model = FunctionModel(complete)
    result = await make_agent(tmp_path, model, context=config).run("x")
    assert result.output == "fits now"
    assert attempts[-1] < attempts[-2]  # the retry sent a compacted (shorter) prompt
    requests = [e for e in read_trace(result.trace_path) if isinstance(e, ModelRequest)]
    assert requests[-1].context["compacted"] is True


async def test_calibration_uses_provider_counts(tmp_path: Path) -> None:
    class Doubling(FunctionModel):
        async def complete(self, messages: list[dict], tools: list[dict]) -> ModelReply:  # type: ignore[override]
            reply = await super().complete(messages, tools)
            from dataclasses import replace

            return replace(reply, usage=replace(reply.usage, prompt_tokens=reply.usage.prompt_tokens * 2))

    model = Doubling.scripted([calls(("c1", "read_big", {"name": "x"})), text("ok")])
    result = await make_agent(tmp_path, model).run("x")
    requests = [e for e in read_trace(result.trace_path) if isinstance(e, ModelRequest)]
    second = requests[1]
    assert second.estimated_prompt_tokens >= 2 * second.prompt_tokens_local - 2


async def test_resume_continues_the_same_trace_after_an_interruption(tmp_path: Path) -> None:
    from tiered_agent._trace import MessageEvent, RunStarted, TraceWriter

    trace = tmp_path / "old.jsonl"
    with TraceWriter(trace) as writer:  # a run that died while its tool call was running
        writer.write(RunStarted("old", "m", "read it"))
        writer.write(MessageEvent(Message("system", "sys")))
        writer.write(MessageEvent(Message("user", "read it")))
        call = calls(("c1", "read_big", {"name": "x"}))
        writer.write(MessageEvent(Message("assistant", None, call.tool_calls, iteration=1)))
    model = FunctionModel.scripted([calls(("c2", "read_big", {"name": "x"})), text("resumed and done")])
    result = await make_agent(tmp_path, model).resume(trace)

    assert result.output == "resumed and done" and result.trace_path == trace
    first_prompt = model.requests[0].messages
    assert [m["role"] for m in first_prompt] == ["system", "user", "assistant", "tool"]
    assert "interrupted" in first_prompt[-1]["content"]
    history = load_history(trace)
    assert [(m.role, m.iteration) for m in history] == [
        ("system", 0),
        ("user", 0),
        ("assistant", 1),
        ("tool", 1),
        ("assistant", 2),
        ("tool", 2),
        ("assistant", 3),
    ]
    assert sum(isinstance(e, RunStarted) for e in read_trace(trace)) == 2


async def test_resume_of_an_answered_run_needs_a_follow_up(tmp_path: Path) -> None:
    from tiered_agent import ConfigurationError

    model = FunctionModel.scripted([text("first answer"), text("second answer")])
    agent = make_agent(tmp_path, model)
    done = await agent.run("q1")
    with pytest.raises(ConfigurationError, match="pass follow_up"):
        await agent.resume(done.trace_path)
    again = await agent.resume(done.trace_path, follow_up="and q2?")
    assert again.output == "second answer"
    assert model.requests[1].messages[-2:] == [
        {"role": "assistant", "content": "first answer"},
        {"role": "user", "content": "and q2?"},
    ]


async def test_reads_running_alongside_a_write_are_not_cached(tmp_path: Path) -> None:
    state = {"version": 1}

    @tool(read_only=True)
    def look(path: str) -> str:
        """Read.

        Args:
            path: File.
        """
        return f"{path} v{state['version']}"

    @tool
    def bump(path: str) -> str:
        """Write.

        Args:
            path: File.
        """
        state["version"] += 1
        return "bumped"

    model = FunctionModel.scripted(
        [
            calls(("c1", "bump", {"path": "a"}), ("c2", "look", {"path": "a"})),  # racy pair
            calls(("c3", "look", {"path": "a"})),  # must run, not reuse c2
            text("done"),
        ]
    )
    result = await make_agent(tmp_path, model, tools=[look, bump]).run("x")
    results = [e for e in read_trace(result.trace_path) if isinstance(e, ToolResult)]
    assert [e.dedup_of for e in results] == [None, None, None]


async def test_resume_of_a_trace_with_a_torn_last_line_keeps_it_aside_and_the_trace_readable(
    tmp_path: Path,
) -> None:
    model = FunctionModel.scripted([calls(("c1", "read_big", {"name": "x"})), text("first")])
    done = await make_agent(tmp_path, model).run("q1")
    torn = b'{"v": 1, "type": "message", "message": {"role": "assistant", "cont'
    with done.trace_path.open("ab") as f:
        f.write(torn)  # the process died mid-write
    again = await make_agent(tmp_path, FunctionModel.scripted([text("second")])).resume(
        done.trace_path, follow_up="q2"
    )
    assert again.output == "second"
    history = load_history(done.trace_path)  # was: TraceFormatError, the whole history lost
    assert [m.text for m in history if m.role == "assistant"] == ["", "first", "second"]
    assert done.trace_path.with_name(done.trace_path.name + ".torn").read_bytes() == torn


async def test_the_paid_reply_is_on_disk_before_its_tools_run(tmp_path: Path) -> None:
    seen: list[bool] = []

    @tool
    def probe() -> str:
        """Look at the trace while running."""
        trace = next(tmp_path.glob("*.jsonl"))
        seen.append(any('"tool_calls"' in line for line in trace.read_text().splitlines()))
        return "ok"

    model = FunctionModel.scripted([calls(("c1", "probe", {})), text("done")])
    await make_agent(tmp_path, model, tools=[probe]).run("x")
    assert seen == [True]  # a kill -9 during the tool keeps the reply that was paid for


async def test_cancellation_keeps_the_finished_results_of_the_batch(tmp_path: Path) -> None:
    finished = anyio.Event()

    @tool
    async def fast() -> str:
        """Return at once."""
        finished.set()
        return "fast result"

    @tool
    async def hang() -> str:
        """Never return."""
        await anyio.sleep_forever()
        return ""

    model = FunctionModel.scripted([calls(("c1", "fast", {}), ("c2", "hang", {}))])
    agent = make_agent(tmp_path, model, tools=[fast, hang])
    async with anyio.create_task_group() as group:
        group.start_soon(agent.run, "x")
        await finished.wait()  # fast's outcome is recorded in the same step it returns
        group.cancel_scope.cancel()
    events = read_trace(next(tmp_path.glob("*.jsonl")))
    results = {e.message.tool_call_id: e.message.text for e in events if isinstance(e, MessageEvent)}
    assert results["c1"] == "fast result"  # the step it had executed
    assert results["c2"].startswith("[interrupted:")
    kinds = [(e.tool_call_id, e.error_kind) for e in events if isinstance(e, ToolResult)]
    assert kinds == [("c1", None), ("c2", "interrupted")]
    assert isinstance(events[-1], RunEnded) and events[-1].stop_reason == "cancelled"


async def test_tool_outputs_reach_the_model_and_the_trace_with_secrets_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_from_the_environment_42")

    @tool
    def leak() -> str:
        """Print the environment's token."""
        return "token=ghp_from_the_environment_42"

    model = FunctionModel.scripted([calls(("c1", "leak", {})), text("done")])
    result = await make_agent(tmp_path, model, tools=[leak]).run("x")
    assert model.requests[1].messages[-1]["content"] == "token=[redacted]"  # the prompt
    assert "ghp_from_the_environment_42" not in result.trace_path.read_text()


def test_request_timeout_and_retries_configure_the_model() -> None:
    from tiered_agent import ConfigurationError, LiteLLMModel

    agent = Agent("openai/gpt-4o-mini", request_timeout_s=5, max_retries=0)
    assert isinstance(agent.model, LiteLLMModel)
    assert (agent.model.timeout_s, agent.model.retry.max_attempts) == (5, 1)
    default = Agent("openai/gpt-4o-mini").model
    assert isinstance(default, LiteLLMModel) and (default.timeout_s, default.retry.max_attempts) == (60, 3)
    with pytest.raises(ConfigurationError, match="set timeout_s and retry on the LiteLLMModel"):
        Agent(FunctionModel.scripted([]), request_timeout_s=5)
