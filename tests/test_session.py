"""ContextSession: the context policy over a history someone else keeps (context/_session.py).

No framework here: plain OpenAI chat messages, as a loop of one's own would hold them. The session
must build the prompts the agent loop builds (one implementation), serve and observe tool calls by
the dedup rules, answer context_retrieve from the full history, and fail open on what it cannot read.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import pytest
from structlog.testing import capture_logs

from tiered_agent import Agent, ContextSession, Policy, RunLimits, Step, Truncate, tool
from tiered_agent.context.pipeline._draft import BuildContext, Draft
from tiered_agent.testing import FunctionModel, calls, text

SYSTEM = {"role": "system", "content": "You are a careful agent."}
TASK = {"role": "user", "content": "Audit the repository."}
MARKER = "MARKER-7f3a"
READ_SCHEMA = {
    "type": "function",
    "function": {"name": "read", "description": "read a file", "parameters": {"type": "object"}},
}


def output(index: int, lines: int = 400) -> str:
    """A large tool output: distinct per file, the marker in the middle of file 2's."""
    body = [
        f"{index:03d}: def handler_{index}_{j}(request): return compute({j}, {index})" for j in range(lines)
    ]
    if index == 2:
        body.insert(lines // 2, f"checksum {MARKER}")
    return "\n".join(body)


def assistant(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    call = {"id": call_id, "type": "function", "function": {"name": name, "arguments": json.dumps(arguments)}}
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def result(call_id: str, content: str, name: str = "read") -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call_id, "name": name}


async def drive(
    session: ContextSession, steps: int, path: Callable[[int], str], run: Callable[[str], Awaitable[str]]
) -> tuple[list[dict[str, Any]], list[Any]]:
    """A loop of one's own: prepare, 'the model' calls read(path(i)), run_tool, append."""
    messages: list[dict[str, Any]] = [SYSTEM, TASK]
    requests = []
    for i in range(1, steps + 1):
        requests.append(await session.prepare(messages, [READ_SCHEMA]))
        name = path(i)
        arguments = {"path": name}
        messages.append(assistant(f"call_{i}", "read", arguments))
        content = await session.run_tool("read", arguments, f"call_{i}", lambda p=name: run(p))
        messages.append(result(f"call_{i}", str(content)))
    return messages, requests


async def read_file(path: str) -> str:
    return output(int(path.removeprefix("f")))


# ----------------------------------------------------------------------------- a 30-call run
@pytest.mark.anyio
async def test_thirty_calls_lean_requests_and_counts() -> None:
    session = ContextSession("tiered", read_only_tools={"read"})
    messages, requests = await drive(session, 30, lambda i: f"f{i}", read_file)
    last = requests[-1]
    # the lean request is at most half the full history; the counts are the counter's own
    assert last.prompt_tokens * 2 <= last.full_history_tokens
    assert last.prompt_tokens == session.counter.count_prompt(last.messages, last.tools)
    full_history = session.counter.count_prompt(messages[:-2], [READ_SCHEMA])
    assert last.full_history_tokens == full_history
    # something is hidden, so context_retrieve's schema is sent; not before anything was
    assert last.retrieval and requests[0].retrieval is False
    assert [t["function"]["name"] for t in last.tools] == ["read", "context_retrieve"]
    # the marker is hidden from the request, and comes back through context_retrieve
    assert all(MARKER not in str(m.get("content")) for m in last.messages)
    found = await session.retrieve({"topic": MARKER})
    assert MARKER in found and "iteration 2" in found
    usage = session.usage
    assert (usage.requests, usage.retrievals, usage.dedup_hits, usage.step_errors) == (30, 1, 0, 0)
    assert usage.last_prompt_tokens == last.prompt_tokens
    assert usage.prompt_tokens == sum(r.prompt_tokens for r in requests)
    assert usage.saved_share > 0.5


@pytest.mark.anyio
async def test_unchanged_messages_are_the_callers_own_and_sources_point_back() -> None:
    session = ContextSession("tiered", read_only_tools={"read"})
    system = {"role": "developer", "content": [{"type": "text", "text": "You are careful."}], "x": 1}
    messages = [system, TASK, assistant("c1", "read", {"path": "f2"}), result("c1", output(2, 2000))]
    request = await session.prepare(messages)
    assert request.messages[0] is system  # content parts and extra keys intact
    assert request.unchanged[:3] == (True, True, True) and request.sources[:3] == (0, 1, 2)
    # the 2000-line output is cut on arrival (Truncate): rewritten, standing for message 3
    assert request.unchanged[3] is False and request.sources[3] == 3
    assert request.messages[3]["tool_call_id"] == "c1"
    assert len(request.messages[3]["content"]) < len(messages[3]["content"])
    assert 'context_retrieve(tool_call_id="c1")' in request.messages[3]["content"]


# ----------------------------------------------------------------------------- one implementation
@pytest.mark.anyio
async def test_prompts_are_the_agent_loops_prompts(tmp_path: Path) -> None:
    """The agent loop and a session fed the same conversation send identical prompts and tools."""
    paths = [f"f{i % 9}" for i in range(1, 31)]  # repeats: dedup serves some of them

    @tool(read_only=True)
    async def read(path: str) -> str:
        """Read a file."""
        return await read_file(path)

    replies = [calls((f"call_{i}", "read", {"path": p})) for i, p in enumerate(paths, start=1)]
    model = FunctionModel.scripted([*replies, text("done")])
    agent = Agent(
        model, tools=[read], context="tiered", trace_dir=tmp_path, limits=RunLimits(max_iterations=40)
    )
    await agent.run(TASK["content"])

    session = ContextSession(
        "tiered", model=model.name, context_window=model.window, read_only_tools={"read"}
    )
    messages: list[dict[str, Any]] = [{"role": "system", "content": agent.system_prompt}, TASK]
    schema = read.schema()
    for i, (path, sent) in enumerate(zip(paths, model.requests, strict=False), start=1):
        request = await session.prepare(messages, [schema])
        assert list(request.messages) == sent.messages, f"request {i}"
        assert list(request.tools) == sent.tools, f"tools of request {i}"
        message = sent_reply(model, i)
        messages.append(message)
        arguments = message["tool_calls"][0]["function"]["arguments"]
        content = await session.run_tool("read", arguments, f"call_{i}", lambda p=path: read_file(p))
        messages.append(result(f"call_{i}", str(content)))
    assert session.usage.dedup_hits == 21  # 30 reads of 9 files


def sent_reply(model: FunctionModel, i: int) -> dict[str, Any]:
    """The assistant message of reply ``i`` as the agent's next request shows it."""
    return next(
        m for m in model.requests[i].messages if m.get("tool_calls", [{}])[0].get("id") == f"call_{i}"
    )


# ----------------------------------------------------------------------------- dedup
@pytest.mark.anyio
async def test_read_only_repeat_is_served_a_write_invalidates() -> None:
    session = ContextSession("tiered", read_only_tools={"read"})
    ran: list[str] = []

    async def run(path: str) -> str:
        ran.append(path)
        return f"contents of {path}"

    messages: list[dict[str, Any]] = [SYSTEM, TASK]
    script = [("read", "a"), ("read", "a"), ("write", "a"), ("read", "a"), ("read", "a")]
    answers = []
    for i, (name, path) in enumerate(script, start=1):
        await session.prepare(messages)
        messages.append(assistant(f"c{i}", name, {"path": path}))
        answers.append(await session.run_tool(name, {"path": path}, f"c{i}", lambda p=path: run(p)))
        messages.append(result(f"c{i}", str(answers[-1]), name))
    assert ran == ["a", "a", "a"]  # calls 2 and 5 served from the cache; the write made 4 read afresh
    assert "already called in iteration 1" in str(answers[1]) and "contents of a" in str(answers[1])
    assert "already called in iteration 4" in str(answers[4])
    assert session.usage.dedup_hits == 2


@pytest.mark.anyio
async def test_tools_not_read_only_are_never_served() -> None:
    session = ContextSession("tiered")  # no read-only tools
    messages, _ = await drive(session, 4, lambda i: "same", read_file_same)
    assert session.usage.dedup_hits == 0
    assert all("already called" not in str(m.get("content")) for m in messages)


async def read_file_same(path: str) -> str:
    return output(5, 100)


@pytest.mark.anyio
async def test_results_seen_only_in_messages_become_pointers() -> None:
    """Tools the session did not run: the next prepare observes their results (the dedup index)."""
    session = ContextSession("tiered", read_only_tools={"read"})
    same = output(4, 60)
    messages: list[dict[str, Any]] = [SYSTEM, TASK]
    for i in (1, 2):
        await session.prepare(messages)
        messages += [assistant(f"c{i}", "read", {"path": "x"}), result(f"c{i}", same)]
    request = await session.prepare(messages)
    shown = [m["content"] for m in request.messages if m["role"] == "tool"]
    assert shown == [same, "[same output as iteration 1 (tool_call_id=c1), shown above]"]
    assert session.usage.dedup_hits == 0  # observed, not served


@pytest.mark.anyio
async def test_error_results_are_not_remembered() -> None:
    session = ContextSession("tiered", read_only_tools={"read"})
    messages: list[dict[str, Any]] = [SYSTEM, TASK]
    await session.prepare(messages)
    messages += [assistant("c1", "read", {"path": "x"}), {**result("c1", "Error: busy"), "is_error": True}]
    await session.prepare(messages)
    messages.append(assistant("c2", "read", {"path": "x"}))

    async def fresh() -> str:
        return "fresh"

    assert await session.run_tool("read", {"path": "x"}, "c2", fresh) == "fresh"

    async def boom() -> str:
        raise RuntimeError("tool failed")

    messages.append(result("c2", "fresh"))
    await session.prepare(messages)
    with pytest.raises(RuntimeError, match="tool failed"):
        await session.run_tool("read", {"path": "y"}, "c3", boom)
    assert await session.run_tool("read", {"path": "y"}, "c4", fresh) == "fresh"  # the failure was not cached


# ----------------------------------------------------------------------------- retrieval
@pytest.mark.anyio
async def test_retrieve_mistakes_answer_the_model() -> None:
    session = ContextSession("tiered")
    await session.prepare([SYSTEM, TASK, assistant("c1", "read", {}), result("c1", output(2))])
    assert "needs at least one filter" in await session.retrieve({})
    assert "iteration must be" in await session.retrieve('{"iteration": "x-y"}')
    assert "not valid json" in (await session.retrieve("{not json")).lower()
    assert MARKER in await session.retrieve({"tool_call_id": "c1"})
    assert session.retrieve_schema is not None
    assert ContextSession("full").retrieve_schema is None


# ----------------------------------------------------------------------------- hostile input, rewrites
@pytest.mark.anyio
@pytest.mark.parametrize(
    "bad",
    [
        {"role": "wizard", "content": "hi"},
        {"role": "assistant", "tool_calls": "nope"},
        {"role": "assistant", "tool_calls": [{"id": {"x": 1}, "function": {"name": "a"}}]},
        "not a message",
    ],
)
async def test_unreadable_history_is_sent_as_given(bad: Any) -> None:
    session = ContextSession("tiered")
    messages = [SYSTEM, TASK, bad]
    request = await session.prepare(messages)  # type: ignore[list-item]
    assert list(request.messages) == messages and request.unchanged == (True, True, True)
    assert session.usage.unmanaged == 1 and session.usage.requests == 0
    good = await session.prepare([SYSTEM, TASK])  # the session goes on
    assert good.prompt_tokens == session.counter.count_prompt([SYSTEM, TASK])


@pytest.mark.anyio
async def test_a_rewritten_history_starts_the_policy_afresh() -> None:
    session = ContextSession("tiered", read_only_tools={"read"})
    ran: list[str] = []

    async def run(path: str) -> str:
        ran.append(path)
        return await read_file(path)

    messages, _ = await drive(session, 6, lambda i: f"f{i}", run)
    rewritten = [SYSTEM, TASK, *messages[-4:]]  # the framework dropped iterations 1-4
    request = await session.prepare(rewritten)
    assert request.full_history_tokens == session.counter.count_prompt(rewritten)
    assert [m.iteration for m in session.history] == [0, 0, 1, 1, 2, 2]  # numbered anew
    for i, path in ((7, "f6"), (8, "f1")):  # f6 is still in the history, f1 is not
        rewritten.append(assistant(f"call_{i}", "read", {"path": path}))
        content = await session.run_tool("read", {"path": path}, f"call_{i}", lambda p=path: run(p))
        rewritten.append(result(f"call_{i}", str(content)))
        await session.prepare(rewritten)
    assert ran == ["f1", "f2", "f3", "f4", "f5", "f6", "f1"]  # f6 served from the observed tail
    assert session.usage.dedup_hits == 1 and session.usage.step_errors == 0


# ----------------------------------------------------------------------------- fail open, secrets
@dataclass(frozen=True, slots=True)
class Explode(Step):
    """A step that raises whenever it applies."""

    kind: ClassVar[str] = "explode"
    hides: ClassVar[bool] = False

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        raise RuntimeError("boom")


@pytest.mark.anyio
async def test_a_failing_step_is_skipped_and_counted() -> None:
    session = ContextSession(Policy("mine", [Explode(), Truncate(max_chars=10_000)]))
    messages = [SYSTEM, TASK, assistant("c1", "read", {}), result("c1", output(2, 2000))]
    request = await session.prepare(messages)
    assert session.usage.step_errors == 1 and session.manager.step_errors[0].step == "explode"
    assert len(request.messages[3]["content"]) < len(messages[3]["content"])  # Truncate still ran


@pytest.mark.anyio
async def test_an_unreadable_history_logs_no_secret(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "sk-" + "a1b2c3d4e5" * 4
    session = ContextSession("tiered")
    with capture_logs() as logs:
        await session.prepare([SYSTEM, {"role": secret, "content": "x"}])
    assert logs and logs[0]["event"] == "context.session_unmanaged"
    assert secret not in str(logs) and "unknown message role" in str(logs)
