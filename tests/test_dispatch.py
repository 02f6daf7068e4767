"""One dispatch for tool calls: its rules, and the live agent and the replay agreeing on recorded runs."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from tiered_agent import Agent, RunLimits
from tiered_agent._agent import _Run
from tiered_agent._messages import Message, ToolCall, group_by_iteration
from tiered_agent._tokens import TokenCounter
from tiered_agent._tools import Tool, ToolOutcome, ToolSet
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import _observations, _tool_kinds, policy_config, replay_run
from tiered_agent.context._dispatch import Batch, Dispatched, ToolKind, dispatch
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._step import Run
from tiered_agent.context.dedup._cache import DedupCache, DedupHit
from tiered_agent.context.dedup._step import Dedup, DedupRuntime
from tiered_agent.testing import FunctionModel, text

pytestmark = pytest.mark.anyio

TRACES = Path(__file__).resolve().parents[1] / "traces"
READ, WRITE, INTERNAL = ToolKind(read_only=True), ToolKind(), ToolKind(read_only=True, internal=True)
KINDS = {"read": READ, "write": WRITE, "context_retrieve": INTERNAL}


def _call(call_id: str, name: str = "read", path: str = "a") -> ToolCall:
    return ToolCall(call_id, name, json.dumps({"path": path}))


class _Executor:
    """Records what ran; every call returns ``<name> <path> #<n>`` (n counts executions)."""

    def __init__(self, errors: frozenset[str] = frozenset()) -> None:
        self.ran: list[str] = []
        self.errors = errors

    def bind(self, calls: Sequence[ToolCall]) -> Any:
        async def execute(indexes: Sequence[int]) -> list[ToolOutcome]:
            out = []
            for index in indexes:
                call = calls[index]
                self.ran.append(call.id)
                content = f"{call.name} {json.loads(call.arguments)['path']} #{len(self.ran)}"
                out.append(ToolOutcome(content, is_error=call.id in self.errors))
            return out

        return execute


def _dedup(cache_size: int = 8) -> DedupRuntime:
    return Dedup(cache_size).start(Run(TokenCounter("o200k_base")))


async def _dispatch(
    dedup: DedupRuntime | None, calls: Sequence[ToolCall], executor: _Executor, iteration: int = 1
) -> tuple[Dispatched, ...]:
    batch = Batch(iteration, tuple(calls), tuple(KINDS[c.name] for c in calls))
    results, failures = await dispatch([dedup] if dedup else [], batch, executor.bind(calls))
    assert failures == ()
    return results


def _remembered(cache: DedupCache) -> dict[str, str]:
    """What the cache holds, as {path: call id}."""
    return {json.loads(k.split("\x00")[1])["path"]: hit.tool_call_id for k, hit in cache.remembered().items()}


# ----------------------------------------------------------------------------- the rules
async def test_two_identical_reads_in_one_reply_both_execute_and_the_later_is_remembered() -> None:
    dedup, executor = _dedup(), _Executor()
    cache = dedup.cache
    results = await _dispatch(dedup, [_call("c1"), _call("c2")], executor)
    assert executor.ran == ["c1", "c2"]
    assert [r.dedup_of for r in results] == [None, None]
    assert (cache.hits, cache.misses) == (0, 2)
    assert _remembered(cache) == {"a": "c2"}
    again = await _dispatch(dedup, [_call("c3")], executor, iteration=2)
    assert again[0].dedup_of == "c2" and executor.ran == ["c1", "c2"]
    assert again[0].outcome.content == (
        "[already called in iteration 1 (tool_call_id=c2); same arguments, cached result:]\nread a #2"
    )
    assert cache.hits == 1


async def test_reads_alongside_a_write_are_not_remembered_and_the_write_invalidates_in_place() -> None:
    dedup, executor = _dedup(), _Executor()
    cache = dedup.cache
    await _dispatch(dedup, [_call("c1", path="b")], executor)
    batch = [_call("c2", path="b"), _call("c3", "write", "b"), _call("c4", path="b"), _call("c5", path="c")]
    results = await _dispatch(dedup, batch, executor, iteration=2)
    # c2 stands before the write: served from the earlier batch; c4 after it: executed
    assert [r.dedup_of for r in results] == ["c1", None, None, None]
    assert executor.ran == ["c1", "c3", "c4", "c5"]
    assert _remembered(cache) == {}  # invalidated by the write, and nothing of a mixed batch is stored
    await _dispatch(dedup, [_call("c6", path="b")], executor, iteration=3)
    assert executor.ran[-1] == "c6"
    assert _remembered(cache) == {"b": "c6"}


async def test_internal_tools_are_never_cached_and_do_not_invalidate() -> None:
    dedup, executor = _dedup(), _Executor()
    cache = dedup.cache
    await _dispatch(dedup, [_call("c1"), _call("r1", "context_retrieve")], executor)
    assert _remembered(cache) == {"a": "c1"}
    results = await _dispatch(dedup, [_call("r2", "context_retrieve"), _call("c2")], executor, iteration=2)
    assert [r.dedup_of for r in results] == [None, "c1"]
    assert executor.ran == ["c1", "r1", "r2"]


async def test_errors_are_not_remembered_and_results_keep_call_order() -> None:
    dedup, executor = _dedup(), _Executor(errors=frozenset({"c1"}))
    cache = dedup.cache
    results = await _dispatch(dedup, [_call("c1", path="x"), _call("c2", path="y")], executor)
    assert [r.call.id for r in results] == ["c1", "c2"]
    assert results[0].outcome.is_error
    assert _remembered(cache) == {"y": "c2"}


async def test_without_a_cache_everything_executes() -> None:
    executor = _Executor()
    results = await _dispatch(None, [_call("c1"), _call("c2")], executor)
    results += await _dispatch(None, [_call("c3")], executor, iteration=2)
    assert executor.ran == ["c1", "c2", "c3"] and all(r.dedup_of is None for r in results)


async def test_an_executor_returning_the_wrong_count_is_a_bug() -> None:
    async def short(indexes: Sequence[int]) -> list[ToolOutcome]:
        return []

    with pytest.raises(RuntimeError, match="0 outcomes for 1 calls"):
        await dispatch([_dedup()], Batch(1, (_call("c1"),), (READ,)), short)


# ----------------------------------------------------------------------------- agent == replay
def _hand_run() -> RecordedRun:
    """Identical reads in one reply, a read beside a write, hits before and after invalidation."""
    steps: list[list[tuple[str, str, str]]] = [
        [("c1", "read", "a"), ("c2", "read", "a")],
        [("c3", "read", "a")],
        [("c4", "read", "b"), ("c5", "write", "a"), ("c6", "read", "b")],
        [("c7", "read", "b")],
        [("c8", "read", "a")],
        [("c9", "read", "b"), ("c10", "write", "x")],
        [("c11", "read", "b"), ("c12", "read", "a")],
    ]
    messages = [Message("system", "You are an agent."), Message("user", "Work.")]
    for k, step in enumerate(steps, start=1):
        calls = tuple(_call(i, n, p) for i, n, p in step)
        messages.append(Message("assistant", f"step {k}", tool_calls=calls, iteration=k))
        for i, n, p in step:
            body = f"{n} {p} at step {k}" if n == "read" else "written"
            messages.append(Message("tool", body, tool_call_id=i, name=n, iteration=k))
    return RecordedRun(
        "hand-dispatch", "test", "tiered-agent", tuple(messages), read_only_tools=frozenset({"read"})
    )


def _bundled(name: str, *, everything_read_only: bool = False) -> RecordedRun:
    run = load_runs([TRACES / f"{name}.jsonl"]).runs[0]
    last = run.messages[-1]
    if last.role == "assistant":  # the final submit, never answered: the agent would have to run it
        run = dataclasses.replace(run, messages=run.messages[:-1])
    if everything_read_only:  # repeated commands become dedup hits: the rules get exercised
        names = frozenset(c.name for m in run.messages for c in m.tool_calls)
        run = dataclasses.replace(run, read_only_tools=names)
    return run


def _recorded_tools(run: RecordedRun, monkeypatch: pytest.MonkeyPatch) -> list[Tool]:
    """The run's tools, whose execution returns the recorded observation of the call (by id)."""
    observations = {m.tool_call_id: m.text for m in run.messages if m.role == "tool"}

    async def play(self: ToolSet, call: ToolCall, *, spill_dir: Path | None = None) -> ToolOutcome:
        return ToolOutcome(observations.get(call.id, "[no recorded observation]"))

    monkeypatch.setattr(ToolSet, "execute", play)
    names = dict.fromkeys(c.name for m in run.messages for c in m.tool_calls)
    return [Tool(n, "recorded", {"type": "object"}, print, read_only=n in run.read_only_tools) for n in names]


async def _through_the_agent(
    run: RecordedRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[dict[str, str], int, dict[str, DedupHit]]:
    actions = [m for m in run.messages if m.role == "assistant"]
    assert all(a.tool_calls for a in actions), "the agent would stop at an action without tool calls"
    script = [dataclasses.replace(a, iteration=0) for a in actions] + [text("done")]
    agent = Agent(
        FunctionModel.scripted(script),
        tools=_recorded_tools(run, monkeypatch),
        context=policy_config("tiered:dedup-only"),
        limits=RunLimits(max_iterations=len(script)),
        trace_dir=tmp_path,
    )
    live = _Run(agent, run.task)
    result = await live.execute()
    assert result.output == "done"
    tools = {m.tool_call_id or "": m.text for m in live.history if m.role == "tool"}
    return tools, sum(i.dedup_hits for i in result.iterations), _cache(live.manager).remembered()


async def _through_the_replay(run: RecordedRun) -> tuple[dict[str, str], int, dict[str, DedupHit]]:
    manager = ContextManager(
        policy_config("tiered:dedup-only"), counter=IdCounter("o200k_base"), background=False
    )
    kind = _tool_kinds(run)
    tools: dict[str, str] = {}
    async with manager:
        for iteration, group in sorted(group_by_iteration(run.messages).items()):
            observed = await _observations(manager, group, kind, iteration)
            tools |= {m.tool_call_id or "": m.text for m in observed if m.role == "tool"}
    return tools, manager.dedup_hits, _cache(manager).remembered()


def _cache(manager: ContextManager) -> DedupCache:
    """The run's dedup cache: its Dedup step's runtime owns it."""
    return next(r.cache for r in manager.runtimes if isinstance(r, DedupRuntime))


@pytest.mark.parametrize(
    ("source", "expected_hits"),
    [
        ("hand", 2),
        ("swe-agent/marshmallow-1867__function_calling_replace", 0),
        ("swe-agent/marshmallow-1867__function_calling_replace:read-only", None),
        ("mini-swe-agent/django__django-12708:read-only", None),
    ],
)
async def test_the_live_agent_and_the_replay_serve_a_recorded_run_identically(
    source: str, expected_hits: int | None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name, _, variant = source.partition(":")
    run = _hand_run() if name == "hand" else _bundled(name, everything_read_only=variant == "read-only")
    agent_tools, agent_hits, agent_memory = await _through_the_agent(run, tmp_path, monkeypatch)
    replay_tools, replay_hits, replay_memory = await _through_the_replay(run)
    recorded = {m.tool_call_id for m in run.messages if m.role == "tool"}
    assert {k: v for k, v in agent_tools.items() if k in recorded} == replay_tools
    assert agent_hits == replay_hits
    assert agent_memory == replay_memory
    if expected_hits is None:
        assert replay_hits > 0  # the read-only variant does exercise the cache
    else:
        assert replay_hits == expected_hits
    metrics = await replay_run(
        run, {"d": policy_config("tiered:dedup-only")}, counter=IdCounter("o200k_base")
    )
    assert metrics.policies["d"].dedup_hits == replay_hits


async def test_the_hand_run_is_served_as_the_rules_say() -> None:
    tools, hits, memory = await _through_the_replay(_hand_run())
    served = {i: t.split(";")[0] for i, t in tools.items() if t.startswith("[already")}
    assert served == {
        "c3": "[already called in iteration 1 (tool_call_id=c2)",  # c1 and c2 ran side by side
        "c9": "[already called in iteration 4 (tool_call_id=c7)",  # it stands before the write c10
    }
    assert hits == 2
    # c6 ran beside the write c5, so c7 executed; c10 invalidated, so c11 and c12 executed
    assert sorted(hit.tool_call_id for hit in memory.values()) == ["c11", "c12"]
