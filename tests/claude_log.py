"""Hand-written Claude Code session logs for tests: one JSON entry per line, a ``parentUuid`` chain,
one response per ``message.id`` (nothing here comes from a real session)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

# One call's usage: 10 uncached, 2,000 written to the cache (5-minute), 5 output tokens.
USAGE = {
    "input_tokens": 10,
    "cache_read_input_tokens": 0,
    "cache_creation_input_tokens": 2000,
    "output_tokens": 5,
}


def write(path: Path, records: list[dict[str, Any]]) -> Path:
    """``records`` as a JSONL file at ``path``."""
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def entry(
    kind: str, uuid: str, parent: str | None, message: dict[str, Any], second: int, *, minute: str
) -> dict[str, Any]:
    """An entry of the session at ``minute`` (``2026-01-22T21:19``) and ``second``."""
    return {
        "parentUuid": parent, "isSidechain": False, "sessionId": "s", "version": "2.1.40", "type": kind,
        "message": message, "uuid": uuid, "timestamp": f"{minute}:{second:02d}.000Z",
    }  # fmt: skip


def prompt(uuid: str, parent: str | None, text: str, second: int, *, minute: str) -> dict[str, Any]:
    """The user's prompt ``text``."""
    return entry("user", uuid, parent, {"role": "user", "content": text}, second, minute=minute)


def reply(
    uuid: str, parent: str, msg: str, model: str, second: int, *, minute: str, **usage: Any
) -> dict[str, Any]:
    """A one-block text response ``msg`` of ``model`` with :data:`USAGE` and the ``usage`` fields given."""
    message = {"id": msg, "model": model, "role": "assistant", "usage": {**USAGE, **usage},
               "content": [{"type": "text", "text": f"answer {msg}"}]}  # fmt: skip
    return entry("assistant", uuid, parent, message, second, minute=minute)
