"""The file ``tiered-agent bench prompts`` writes, whole or ``--delta``, and its reader.

A whole line holds its prompt's ``messages`` entire (docs/cli.md, "bench prompts"). A delta line
holds ``shared``, how many leading messages its prompt has in common with the previous prompt of the
same run and policy (equal as sent: the same JSON value), and in ``messages`` only those after them;
every other field is as in a whole line. The first line of each run and policy is whole; a whole
line may follow anywhere. :func:`read_prompts` and :func:`prompts_from_lines` yield whole lines from
either form, so a ruler reads both alike.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import orjson
import structlog

from .._files import open_regular
from .._messages import shared_prefix
from .._trace import parse_json

__all__ = ["delta_line", "prompts_from_lines", "read_prompts"]

log = structlog.get_logger(__name__)

SHARED = "shared"


def delta_line(line: dict[str, Any], previous: Sequence[Any] | None) -> dict[str, Any]:
    """``line`` (a whole line) as a delta line after a prompt of ``previous`` messages of the same run
    and policy; ``line`` itself when there is none (a run's first line is whole)."""
    if previous is None:
        return line
    messages = line["messages"]
    shared = shared_prefix(previous, messages)
    delta = {key: value for key, value in line.items() if key != "messages"}
    delta[SHARED] = shared
    delta["messages"] = messages[shared:]
    return delta


def _whole(line: Any, last: dict[tuple[Any, Any], list[Any]]) -> dict[str, Any]:
    """``line`` with its whole prompt (``last``: each run and policy's previous prompt, updated);
    ValueError with the reason for a line that is not one of the export's."""
    if not isinstance(line, dict) or not isinstance(line.get("messages"), list):
        raise ValueError("not a prompt line (a JSON object with a messages list)")
    if not all(isinstance(message, dict) for message in line["messages"]):
        raise ValueError("not a prompt line (a message that is not a JSON object)")
    key = (line.get("run_id"), line.get("policy"))
    if not all(isinstance(part, str) for part in key):
        raise ValueError(f"run_id {_short(key[0])} and policy {_short(key[1])} must be strings")
    shared = line.pop(SHARED, None)
    if shared is not None:
        before = last.get(key)
        if before is None:
            raise ValueError(f"a delta line of {key[0]!r} / {key[1]!r} without a previous prompt")
        if not isinstance(shared, int) or isinstance(shared, bool) or not 0 <= shared <= len(before):
            raise ValueError(f"shared={shared!r} is not a count of the previous prompt's messages")
        line["messages"] = before[:shared] + line["messages"]
    last[key] = line["messages"]
    return line


def _short(value: Any, limit: int = 40) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def prompts_from_lines(lines: Iterable[bytes | str]) -> Iterator[dict[str, Any]]:
    """Each line of an export (whole or delta) as a whole line, in order: ``messages`` entire, no
    ``shared``. Invariants: a whole export comes back as written; a line that cannot be read (not
    JSON, not a prompt line, a delta without its previous prompt) is skipped and logged with its
    reason and number, never raised, and so is every delta line after it until its run and policy
    has a whole line again (none is ever rebuilt on a wrong prompt); blank lines are ignored. Lines
    are parsed as every trace reader parses them (:func:`~tiered_agent._trace.parse_json`: a raw
    control character is read, nesting past 255 levels is not JSON); ``run_id`` and ``policy`` are
    strings and every message a JSON object, else the line is not one of the export's.
    Messages shared by successive prompts are the same objects: treat what this yields as read-only."""
    last: dict[tuple[Any, Any], list[Any]] = {}
    for number, raw in enumerate(lines, start=1):
        if not raw.strip():
            continue
        try:
            yield _whole(parse_json(raw.encode() if isinstance(raw, str) else raw), last)
        except (orjson.JSONDecodeError, ValueError) as error:
            last.clear()  # the prompt a later delta line builds on may be the one skipped
            log.warning("bench.prompts_line_skipped", line=number, reason=str(error))


def read_prompts(path: str | os.PathLike[str]) -> Iterator[dict[str, Any]]:
    """The whole lines of the export at ``path`` (:func:`prompts_from_lines`), read as they are used.
    A path that is not a regular file (a FIFO would block) raises :class:`~tiered_agent._files.NotRegularFile`
    (an ``OSError`` naming it) at the first line asked for."""
    with open_regular(os.fspath(path)) as file:
        yield from prompts_from_lines(file)
