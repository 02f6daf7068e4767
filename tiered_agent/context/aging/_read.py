"""The files the agent read and still works on: the newest hidden reads of each, in one note.

An agent reads a file (``sed -n '1,200p' f``, ``cat f``, ``nl -ba f``, ``grep -n x f``, Claude
Code's ``Read``, an editor's ``view``) to work on it: it goes on to patch those lines, quote them,
or write a script against the names they define, often many iterations later. Aging keeps a few
lines of an old read (its head and the lines naming what nothing later shows), and a condensed
note a handful, so a long session that reads a file, works elsewhere, and comes back to it has
lost the lines it comes back for. :func:`read_note` keeps them in view: at each aging epoch, one
note shows, for the files whose reads the epoch hid (aged or condensed) and that the agent's last
``recent`` iterations still work on (read, wrote or named), the outputs of their newest hidden
reads as they were shown, newest first, within a budget of characters (the files used most
recently first). A read repeated with the same call shows only its newest output. A file changed
after a read is labelled so (the read is what the file held then). Like the note of the files the
agent wrote (:mod:`._written`), it changes only at epochs, which rewrite the prompt after the aged
iterations anyway, and an epoch pays for what it adds.

Reads are recognized from the call as the working memory reads it (:func:`call_facts`: the
files a call reads, whatever the tool); a call that cannot be read reads nothing (fail open).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..._messages import Message
from .._names import retrieve_call
from ..summary.memory._calls import call_facts
from ._jsonform import output_lines
from ._written import agent_texts, named_at

__all__ = ["FileRead", "read_note", "reads"]

_CHANGES = frozenset({"written", "edited", "deleted"})


@dataclass(frozen=True, slots=True)
class FileRead:
    """One call's output that read files: the iteration, the call id, its text, the files read."""

    iteration: int
    call_id: str
    key: str  # the call's name and arguments: a later identical call supersedes it
    text: str
    paths: tuple[str, ...]


def _outputs(group: tuple[Message, ...]) -> dict[str, str]:
    return {m.tool_call_id: m.text for m in group if m.role == "tool" and m.tool_call_id}


def reads(groups: Mapping[int, tuple[Message, ...]], upto: int) -> tuple[list[FileRead], dict[str, int]]:
    """The reads of iterations ``1..upto`` (oldest first), and each file's newest change by a call
    (written, edited or deleted, as the working memory reads the call)."""
    found: list[FileRead] = []
    changed: dict[str, int] = {}
    for iteration in sorted(k for k in groups if 0 < k <= upto):
        group = groups[iteration]
        outputs = _outputs(group)
        for message in group:
            if message.role != "assistant":
                continue
            for call in message.tool_calls:
                touches = call_facts(call).touches
                for touch in touches:
                    if touch.kind in _CHANGES and touch.path:
                        changed[touch.path] = iteration
                paths = tuple(dict.fromkeys(t.path for t in touches if t.kind == "read" and t.path))
                text = outputs.get(call.id)
                if paths and text:
                    found.append(FileRead(iteration, call.id, f"{call.name}\n{call.arguments}", text, paths))
    return found, changed


def read_note(
    groups: Mapping[int, tuple[Message, ...]],
    *,
    through: int,
    at: int,
    max_chars: int,
    recent: int,
    retrieval: bool,
) -> Message | None:
    """The note of the reads hidden by aging through ``through`` of files the last ``recent``
    iterations up to ``at`` still work on, within ``max_chars`` of output text; None when none."""
    if max_chars <= 0 or through <= 0:
        return None
    found, changed = reads(groups, at)
    low = max(1, at - recent + 1)
    texts = agent_texts(groups, low, at)
    used: dict[str, int] = {}
    for read in found:
        for path in read.paths:
            used[path] = max(used.get(path, 0), read.iteration, changed.get(path, 0))
    used = {path: max(u, named_at(path, texts)) for path, u in used.items()}
    newest = {read.key: read.iteration for read in found}
    hidden = [
        r
        for r in reversed(found)
        if r.iteration <= through and newest[r.key] == r.iteration and max(used[p] for p in r.paths) >= low
    ]
    hidden.sort(key=lambda r: (-max(used[p] for p in r.paths), -r.iteration))
    parts: list[str] = []
    room = max_chars
    for read in hidden:
        body = "\n".join(output_lines(read.text))
        if not body.strip() or len(body) > room:
            continue
        room -= len(body)
        parts.append(_section(read, body, changed, retrieval=retrieval))
    if not parts:
        return None
    header = f"[Files you read and are still working on: your reads up to iteration {through}, as shown:]"
    return Message(role="user", content="\n".join([header, *parts]), iteration=0)


def _section(read: FileRead, body: str, changed: Mapping[str, int], *, retrieval: bool) -> str:
    names = ", ".join(read.paths)
    where = f"read in iteration {read.iteration}"
    if retrieval:
        where += f"; {retrieve_call('tool_call_id', read.call_id)}"
    later = sorted({changed[p] for p in read.paths if changed.get(p, 0) > read.iteration})
    if later:
        where += f"; changed since, in iteration {', '.join(map(str, later))}"
    body = body if body.endswith("\n") else body + "\n"
    return f"=== {names} ({where})\n{body}=== end of read"
