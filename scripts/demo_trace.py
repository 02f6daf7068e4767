"""Record a small demo run offline, to try ``tiered-agent trace`` on (no model, no network, no key).

A scripted model (:class:`tiered_agent.testing.FunctionModel`) drives the real
agent loop, tools and context pipeline over a throwaway workspace: a long read
that gets truncated and recovered with ``context_retrieve``, a repeated read
served from the dedup cache, a failing call, outputs elided once the rolling
summary covers them, and a final answer. Prints the trace's path.

Usage: ``python scripts/demo_trace.py [--trace-dir traces/runs]``
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import anyio
import click

from tiered_agent import Agent, Message, Policy, Workspace, workspace_tools
from tiered_agent._logging import configure_logging
from tiered_agent.context.steps import Dedup, Elide, Summarize, Truncate
from tiered_agent.testing import AgentRequest, FunctionModel, calls, text

CODE = "".join(f"def handler_{i}(attempt):\n    return 0.5 * 2 ** attempt  # delay {i}\n" for i in range(120))
STEPS: list[Message] = [
    calls(("c1", "list_dir", {"path": "."}), content="Let me look around."),
    calls(("c2", "read_file", {"path": "retry.py"}), content="retry.py looks relevant."),
    calls(("c3", "context_retrieve", {"tool_call_id": "c2"}), content="The output was cut; get all of it."),
    calls(("c4", "read_file", {"path": "RETRY.md"}), ("c5", "search_text", {"pattern": "2 \\*\\* attempt"})),
    calls(("c6", "read_file", {"path": "retry.py"}), content="Once more, to be sure."),
    calls(("c7", "read_file", {"path": "notes.txt"})),
    calls(("c8", "search_text", {"pattern": "max_delay"})),
    text("The retry delay is 0.5 * 2 ** attempt seconds (retry.py, every handler)."),
]


def reply(request: AgentRequest) -> Message:
    return STEPS[min(request.index, len(STEPS) - 1)]


async def record(trace_dir: Path) -> Path:
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "retry.py").write_text(CODE)
        (root / "notes.txt").write_text("Backoff: doubles each attempt, starting at 0.5 s.\n")
        agent = Agent(
            FunctionModel(reply, name="demo/scripted-model"),
            tools=workspace_tools(Workspace(root)),
            # a small policy so a short demo shows every tier: cut, dedup, elide, summarize
            context=Policy("demo", (Dedup(), Summarize(every=4, keep=1), Elide(), Truncate(max_chars=1500))),
            trace_dir=trace_dir,
        )
        result = await agent.run("How is the retry delay computed?")
    return result.trace_path


@click.command()
@click.option(
    "--trace-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("traces/runs"),
    show_default=True,
    help="Where the trace is written.",
)
def main(trace_dir: Path) -> None:
    """Record the demo run and print its trace path."""
    configure_logging(level="warning")
    click.echo(anyio.run(record, trace_dir, backend="asyncio"))


if __name__ == "__main__":
    main()
