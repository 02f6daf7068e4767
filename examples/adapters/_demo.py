"""What the three adapter demos share: the files the agent reads, the hidden marker, the report line.

Each demo drives its framework's own offline test model through ``CALLS`` reads of large files
(about 24 kB each), then asks ``context_retrieve`` for the marker hidden in the first file, which
no request shows by then, and ends with one JSON line (see :func:`report`).
"""

from __future__ import annotations

import json

from tiered_agent import SessionUsage

CALLS = 30  # reads of large files, before the retrieval call
MARKER = "MARKER-7f3a"
MARKER_FILE = 1
READ_ONLY = {"read_file"}


def file_text(path: str) -> str:
    """A source file of 400 lines; file 1 holds the marker in its middle (cut from every request)."""
    number = int("".join(c for c in path if c.isdigit()) or 0)
    lines = [f"{number:03d}: def handler_{number}_{j}(request): return compute({j})" for j in range(400)]
    if number == MARKER_FILE:
        lines.insert(200, f"checksum {MARKER}")
    return "\n".join(lines)


def path_for(call: int) -> str:
    return f"src/module_{call}.py"


def report(framework: str, calls: int, usage: SessionUsage, retrieved: bool) -> str:
    """The demo's last line: tokens of the last request (the project's counter) against the same
    request with the full history."""
    return json.dumps(
        {
            "framework": framework,
            "calls": calls,
            "last_prompt_tokens": usage.last_prompt_tokens,
            "full_history_tokens": usage.last_full_history_tokens,
            "retrieved_marker": retrieved,
        }
    )
