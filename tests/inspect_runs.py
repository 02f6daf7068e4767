"""Traces for the inspection tests: a real agent run over the scripted litellm provider, and a
synthetic long run (150 iterations of 1 MB outputs) written event by event.

``record_run`` drives :class:`tiered_agent.Agent` through litellm with
:class:`fakes.ScriptedLLM`: a read cut by truncation and recovered with
``context_retrieve``, a dedup hit, a tool error, an output over the 1 MB cap
(spilled next to the trace), a summary of iterations 1..3, and an output that
holds ``</script>`` and other HTML, to check the page escapes it.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import anyio
import orjson
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
    Message,
    ToolCall,
    Usage,
    Workspace,
    tool,
    workspace_tools,
)
from tiered_agent._trace import (
    Event,
    MessageEvent,
    ModelRequest,
    ModelResponse,
    RetrievalEvent,
    RunEnded,
    RunStarted,
    SummaryEvent,
    ToolResult,
    event_to_dict,
)

__all__ = ["INJECTION", "record_run", "write_long_trace"]

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


# --------------------------------------------------------------------------- synthetic long run
class _Writer:
    """TraceWriter's format without its per-string secret redaction (70 ms per MB; the data is made up)."""

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = path.open("wb")

    def __enter__(self) -> _Writer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.file.close()

    def write(self, event: Event) -> None:
        self.file.write(orjson.dumps(event_to_dict(event)) + b"\n")


def _output(iteration: int, size: int) -> str:
    line = f"iteration {iteration}: " + "x" * 60 + "\n"
    return (line * (size // len(line) + 1))[:size]


def write_long_trace(path: Path, *, iterations: int = 150, output_chars: int = 1_000_000) -> Path:
    """A synthetic trace of ``iterations`` iterations, each with one ``output_chars`` tool output.

    Shaped like the ``tiered`` preset's: every output cut to 8,000 chars in later
    prompts, the outputs of earlier iterations elided, a summary every 25 iterations.
    """
    with _Writer(path) as writer:
        writer.write(
            RunStarted(run_id="long", model="openai/gpt-4o-mini", task="A long synthetic run", started_at=0.0)
        )
        writer.write(MessageEvent(Message("system", "You are a coding agent.")))
        writer.write(MessageEvent(Message("user", "A long synthetic run")))
        history_tokens = 3000
        for it in range(1, iterations + 1):
            previous = [f"call_{it - 1}"] if it > 1 else []
            truncations = [
                {
                    "tool_call_id": cid,
                    "iteration": it - 1,
                    "tool": "read_file",
                    "original_chars": output_chars,
                    "kept_chars": 8000,
                }
                for cid in previous
            ]
            summary = ((it - 1) // 25) * 25
            writer.write(
                ModelRequest(
                    iteration=it,
                    n_messages=2 + 2 * (it - 1),
                    prompt_tokens_local=3000 + 2100 * min(it - 1, 1) + 60 * (it - 1),
                    estimated_prompt_tokens=3000,
                    counterfactual_tokens=history_tokens,
                    context={
                        "truncated_outputs": len(truncations),
                        "truncated_chars": (output_chars - 8000) * len(truncations),
                        "truncations": truncations,
                        "masked_outputs": max(0, it - 2),
                        "masked_chars": max(0, it - 2) * output_chars,
                        "windowed_out": list(range(1, summary + 1)),
                        "summary_range": [1, summary] if summary else None,
                        "shown_iterations": list(range(max(1, it - 1), it)),
                        "dedup_hits": 0,
                    },
                )
            )
            call = ToolCall(f"call_{it}", "read_file", f'{{"path": "file_{it}.log"}}')
            writer.write(
                MessageEvent(
                    Message(
                        "assistant", f"Step {it}: reading the next log.", tool_calls=(call,), iteration=it
                    )
                )
            )
            writer.write(
                ModelResponse(iteration=it, usage=Usage(3000, 50, 2048, 1, 0.0006), model="gpt-4o-mini")
            )
            writer.write(
                MessageEvent(
                    Message(
                        "tool",
                        _output(it, output_chars),
                        tool_call_id=call.id,
                        name="read_file",
                        iteration=it,
                    )
                )
            )
            writer.write(
                ToolResult(iteration=it, tool_call_id=call.id, name="read_file", output_chars=output_chars)
            )
            if it % 25 == 0:
                writer.write(
                    SummaryEvent(
                        1, it - 1, f"Summary of iterations 1-{it - 1}: logs read.", created_at_iteration=it
                    )
                )
            if it % 40 == 0:
                writer.write(RetrievalEvent(it, {"tool_call_id": f"call_{it - 10}"}, 1, 1, 1))
            history_tokens += output_chars // 4 + 40
        writer.write(
            RunEnded(
                "max_iterations", None, iterations, Usage(3000 * iterations, 50 * iterations, 0, iterations)
            )
        )
    return path
