"""Helpers for the tests of condensed notes: an iteration that reads many lines of a file, and the
output lines a note keeps under one iteration's line."""

from __future__ import annotations

import orjson

from tiered_agent import Message, ToolCall


def read_iteration(k: int, lines: int, command: str, first: int = 0) -> tuple[int, tuple[Message, ...]]:
    """Iteration ``k`` running ``command``, whose output has ``lines`` lines, each defining a name
    nothing else names (numbered from ``first``)."""
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": command}).decode())
    body = "\n".join(f"{first + i}:def handler_{k}_{i}(value):" for i in range(lines))
    return k, (
        Message("assistant", f"Read part {k}.", (call,), iteration=k),
        Message("tool", body, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def kept_lines(note: Message, k: int) -> list[str]:
    """The output lines kept under iteration ``k``'s line of a condensed ``note``."""
    lines = note.text.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(f"{k}. "))
    out = []
    for line in lines[start + 1 :]:
        if not line.startswith("    "):
            break
        out.append(line.strip())
    return out
