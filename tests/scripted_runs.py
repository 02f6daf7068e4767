"""A recorded run driven through the live agent loop, whole or stopped and resumed from its trace
(shared by the resume tests: a resumed run must send the prompts the live run sent)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
from recorded_tools import recorded_tools

from tiered_agent import Agent, Message, Policy, RunLimits
from tiered_agent._tools import Tool
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.testing import FunctionModel, text


@dataclasses.dataclass(frozen=True)
class ScriptedRun:
    """``run``'s actions scripted for a live agent with ``policy``; its tools answer what the run
    recorded."""

    run: RecordedRun
    policy: Policy
    actions: tuple[Message, ...]
    tools: tuple[Tool, ...]

    @classmethod
    def of(cls, run: RecordedRun, policy: Policy, monkeypatch: pytest.MonkeyPatch) -> ScriptedRun:
        actions = tuple(
            dataclasses.replace(m, iteration=0)
            for m in run.messages
            if m.role == "assistant" and m.tool_calls
        )
        return cls(run, policy, actions, tuple(recorded_tools(run, monkeypatch)))

    @property
    def limits(self) -> RunLimits:
        return RunLimits(max_iterations=len(self.actions) + 1)

    async def whole(
        self, trace_dir: Path, policy: Policy | None = None, calls: int | None = None
    ) -> FunctionModel:
        """The model of the run played live to its end (or for its first ``calls`` actions)."""
        actions = [*self.actions, text("done")] if calls is None else list(self.actions[:calls])
        model = FunctionModel.scripted(actions)
        limits = self.limits if calls is None else RunLimits(max_iterations=calls)
        context = policy or self.policy
        await Agent(model, tools=list(self.tools), context=context, limits=limits, trace_dir=trace_dir).run(
            self.run.task
        )
        return model

    async def resumed(self, stop: int, trace_dir: Path) -> FunctionModel:
        """The model of the run stopped after ``stop`` iterations and resumed from its trace to its end."""
        first = FunctionModel.scripted(list(self.actions[:stop]))
        agent = Agent(
            first,
            tools=list(self.tools),
            context=self.policy,
            limits=RunLimits(max_iterations=stop),
            trace_dir=trace_dir,
        )
        stopped = await agent.run(self.run.task)
        rest = FunctionModel.scripted([*self.actions[stop:], text("done")])
        again = Agent(rest, tools=list(self.tools), context=self.policy, limits=self.limits)
        resumed = await again.resume(stopped.trace_path)
        assert resumed.output == "done"
        return rest
