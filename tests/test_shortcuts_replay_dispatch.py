"""A shortcut in the replay (speed round 13, docs/bench-speed.md) gives what the plain computation
gives, and takes the shortcut: a policy none of whose steps takes part in a tool dispatch (no ``Dedup``)
gets each iteration's recorded group back without a dispatch through its manager."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from tiered_agent import Message, ToolCall
from tiered_agent._messages import group_by_iteration
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import _observations, _tool_kinds, policy_config
from tiered_agent.context._dispatch import Dispatched, ToolKind
from tiered_agent.context._manager import ContextManager

pytestmark = pytest.mark.anyio


def _run() -> RecordedRun:
    """Two iterations that read the same file (a dedup hit for a policy with ``Dedup``)."""
    messages: list[Message] = [Message("user", "Fix the bug in app.py", iteration=0)]
    for k in (1, 2):
        call = ToolCall(f"c{k}", "bash", '{"command": "cat app.py"}')
        messages += [
            Message("assistant", "Read it.", (call,), iteration=k),
            Message("tool", "def main():\n    return 1\n" * 20, tool_call_id=f"c{k}", iteration=k),
        ]
    return RecordedRun(run_id="r13", source="test", format="tiered-agent", messages=tuple(messages))


async def _replayed(policy: str, dispatched: list[int]) -> list[tuple[Sequence[Message], Sequence[Message]]]:
    """Each recorded group with what ``_observations`` made of it under ``policy``."""
    run = _run()
    manager = ContextManager(policy_config(policy), counter=IdCounter("o200k_base"), background=False)
    plain = manager.dispatch

    async def counted(*args: Any, **kwargs: Any) -> tuple[Dispatched, ...]:
        dispatched.append(1)
        return await plain(*args, **kwargs)

    manager.dispatch = counted  # type: ignore[method-assign]
    kind = _tool_kinds(run)
    out: list[tuple[Sequence[Message], Sequence[Message]]] = []
    async with manager:
        for iteration, group in sorted(group_by_iteration(run.messages).items()):
            out.append((group, await _observations(manager, group, kind, iteration)))
    return out


PLAIN = ["full", "masking", "codex", "adk-code", "anthropic-clear", "adk-compaction"]


@pytest.mark.parametrize("policy", PLAIN)
async def test_without_dispatch_steps_the_recorded_groups_stay_without_a_dispatch(policy: str) -> None:
    """No step serves or observes a call: each group is the recorded one, the same object, and the
    manager's dispatch is not entered."""
    dispatched: list[int] = []
    pairs = await _replayed(policy, dispatched)
    assert len(pairs) == 3 and all(observed is group for group, observed in pairs)
    assert dispatched == []


@pytest.mark.parametrize("policy", ["tiered", "kb-labs-adr"])
async def test_a_policy_with_dedup_still_dispatches_and_is_served(policy: str) -> None:
    """``Dedup`` takes part: every iteration with a call is dispatched, and the second read of the
    same file is served by the first (another message than the recorded one)."""
    dispatched: list[int] = []
    pairs = await _replayed(policy, dispatched)
    assert len(dispatched) == 2
    (_, first), (group, second) = pairs[1], pairs[2]
    assert first is pairs[1][0]  # the first read runs
    assert second is not group and second[1].text != group[1].text  # the second is served


async def test_dispatches_tells_the_plain_dispatch_apart() -> None:
    """``ContextManager.dispatches`` is False exactly when a dispatch only runs the calls: what it
    returns then is every outcome as it ran, none served."""
    call = ToolCall("c1", "bash", '{"command": "ls"}')
    for policy, takes_part in (("full", False), ("masking", False), ("tiered", True), ("kb-labs-adr", True)):
        manager = ContextManager(policy_config(policy), counter=IdCounter("o200k_base"), background=False)
        assert manager.dispatches is takes_part
        if takes_part:
            continue

        async def ran(indexes: Sequence[int]) -> list[Any]:
            from tiered_agent._tools import ToolOutcome

            return [ToolOutcome("a.py") for _ in indexes]

        async with manager:
            results = await manager.dispatch([call], lambda _: ToolKind(read_only=True), ran, iteration=1)
        assert [(r.call, r.outcome.content, r.dedup_of) for r in results] == [(call, "a.py", None)]
