"""A finished run is freed as soon as it is dropped: nothing of it waits for the cycle collector.

A batch runs hundreds of agents in one process; state held in reference cycles (a callback bound
to its owner, kept by what the owner holds) outlives each run until a full collection, which
raised the memory per concurrent agent by about a sixth. The check: run an agent with the cycle
collector off, drop everything, and ask the collector what it finds.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import anyio
import pytest

from tiered_agent import Agent, ContextConfig, tool
from tiered_agent.testing import FunctionModel, calls, text


@tool(read_only=True)
def read_part(part: int) -> str:
    """Return one part of a long text.

    Args:
        part: Which part.
    """
    return "".join(f"part {part} line {i}: value_{part}_{i} in src/module_{part}.py\n" for i in range(60))


def _script(reads: int) -> FunctionModel:
    return FunctionModel.scripted(
        [calls((f"call_{n}", "read_part", {"part": n})) for n in range(reads)] + [text("done")]
    )


@pytest.fixture
def collector_off() -> Iterator[None]:
    gc.collect()
    gc.disable()
    try:
        yield
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()


def _left_in_cycles() -> list[str]:
    """The project's objects the cycle collector finds (kept for inspection, then released)."""
    gc.set_debug(gc.DEBUG_SAVEALL)
    gc.collect()
    found = sorted(
        {
            f"{type(o).__module__}.{type(o).__qualname__}"
            for o in gc.garbage
            if type(o).__module__.startswith("tiered_agent")
        }
    )
    gc.set_debug(0)
    gc.garbage.clear()
    return found


@pytest.mark.parametrize("policy", ["tiered", "kb-labs-adr", "adk-compaction", "full"])
def test_a_finished_run_leaves_nothing_for_the_cycle_collector(
    tmp_path: Path, policy: str, collector_off: None
) -> None:
    async def run() -> None:
        agent = Agent(_script(12), tools=[read_part], trace_dir=tmp_path, context=ContextConfig(name=policy))
        result = await agent.run("read the parts")
        assert result.output == "done"
        assert result.usage.requests == 13

    anyio.run(run)
    assert _left_in_cycles() == []


def test_the_check_sees_a_cycle(collector_off: None) -> None:
    """The probe itself: a cycle of the project's objects is found."""
    model = _script(1)
    model.loop = model  # type: ignore[attr-defined]
    del model
    assert "tiered_agent.testing.FunctionModel" in _left_in_cycles()
