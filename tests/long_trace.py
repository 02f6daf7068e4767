"""A synthetic long trace: 150 iterations of 1 MB tool outputs, written event by event.

Shaped like a ``tiered`` run (outputs cut to 8,000 chars in later prompts, earlier
outputs elided, a summary every 25 iterations). Used by the page tests and by
``benchmarks/trace_page.py``; imports no litellm.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tiered_agent import Message, ToolCall, Usage
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

__all__ = ["write_long_trace"]


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
                    SummaryEvent(1, it, f"Summary of iterations 1-{it}: logs read.", created_at_iteration=it)
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
