"""A recorded run's tools for a live agent: each call returns the observation the run recorded for
it, so the live loop can be driven through a recorded run (shared by the live-vs-replay and resume
tests)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiered_agent._messages import ToolCall
from tiered_agent._tools import Tool, ToolOutcome, ToolSet
from tiered_agent.bench._recorded import RecordedRun


def recorded_tools(run: RecordedRun, monkeypatch: pytest.MonkeyPatch) -> list[Tool]:
    """The run's tools; executing a call returns its recorded observation."""
    observations = {m.tool_call_id: m.text for m in run.messages if m.role == "tool"}

    async def play(self: ToolSet, call: ToolCall, *, spill_dir: Path | None = None) -> ToolOutcome:
        return ToolOutcome(observations.get(call.id, "[no recorded observation]"))

    monkeypatch.setattr(ToolSet, "execute", play)
    names = dict.fromkeys(c.name for m in run.messages for c in m.tool_calls)
    return [Tool(n, "recorded", {"type": "object"}, print) for n in names]
