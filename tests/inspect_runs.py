"""A trace for the inspection tests: a real agent run over the scripted litellm provider.

``record_run`` drives :class:`tiered_agent.Agent` through litellm with
:class:`fakes.ScriptedLLM`: a read cut by truncation and recovered with
``context_retrieve``, a dedup hit, a tool error, an output over the 1 MB cap
(spilled next to the trace), rolling summaries (the digest, every 3 iterations), and an output that
holds ``</script>`` and other HTML, to check the page escapes it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
from fakes import (
    FAKE_MODEL,
    RecordedRequest,
    ScriptedReply,
    make_usage,
    scripted_provider,
    text_reply,
    tool_reply,
)

from tiered_agent import (
    Agent,
    ContextConfig,
    LiteLLMModel,
    Workspace,
    tool,
    workspace_tools,
)

__all__ = ["INJECTION", "record_run"]

INJECTION = (
    '</script><script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> & <b>bold</b>'
)
BIG_FILE = "".join(f"def handler_{i}(): return retry_delay * {i}  # line {i}\n" for i in range(200))
HUGE_BYTES = 1_200_000  # over the 1 MB output cap: capped in the message, saved whole beside the trace

CONFIG = ContextConfig(
    name="inspect-test",
    max_output_chars=400,
    window_iterations=2,
    summary_every=3,
    compact_at=None,
)


@tool(read_only=True)
def dump_log() -> str:
    """Dump the whole service log."""
    line = "2026-01-01T00:00:00 INFO request served in 12 ms\n"
    return (line * (HUGE_BYTES // len(line) + 1))[:HUGE_BYTES]


def _steps() -> list[ScriptedReply]:
    usage = make_usage(prompt=1200, completion=40, cached=256)
    return [
        tool_reply([("call_read", "read_file", {"path": "big.py"})], usage, content="Reading the code."),
        tool_reply([("call_get", "context_retrieve", {"tool_call_id": "call_read"})], usage),
        tool_reply(
            [
                ("call_notes", "read_file", {"path": "notes.html"}),
                ("call_missing", "read_file", {"path": "nope.txt"}),
            ],
            usage,
        ),
        tool_reply([("call_read2", "read_file", {"path": "big.py"})], usage),
        tool_reply([("call_log", "dump_log", {})], usage),
        tool_reply([("call_ls", "list_dir", {"path": "."})], usage),
        text_reply("The retry delay doubles on each attempt.", usage),
    ]


def record_run(tmp_path: Path) -> Path:
    """Run the scripted agent in ``tmp_path``; return the trace path."""
    root = tmp_path / "repo"
    root.mkdir(parents=True, exist_ok=True)
    (root / "big.py").write_text(BIG_FILE)
    (root / "notes.html").write_text(f"release notes\n{INJECTION}\n")
    steps = iter(_steps())

    def respond(request: RecordedRequest) -> Any:
        step = next(steps)
        return dataclasses.replace(step, model="gpt-4o-mini")  # a known model: litellm prices it

    async def main() -> Path:
        with scripted_provider(respond=respond):
            agent = Agent(
                LiteLLMModel(FAKE_MODEL, api_key="sk-test-not-real", context_window=128_000),
                tools=[dump_log, *workspace_tools(Workspace(root))],
                context=CONFIG,
                trace_dir=tmp_path / "traces",
            )
            result = await agent.run("How is the retry delay computed?")
        assert result.output == "The retry delay doubles on each attempt.", result
        return result.trace_path

    return anyio.run(main, backend="asyncio")
