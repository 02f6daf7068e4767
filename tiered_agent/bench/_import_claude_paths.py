"""Which entries of a Claude Code session each request actually sent: the ``parentUuid`` links.

A Claude Code log is append-only and tree-shaped: every entry names the entry it follows
(``parentUuid``; ``progress`` and ``system`` entries are links of the chain too). Read in file
order, three things the links record would be replayed wrongly:

- **A cleared context.** A user entry whose chain ends at a root (``parentUuid`` null) after
  the session's first message started a new conversation in the same file (accepting a plan with
  "clear context", Claude Code 2.1): the requests after it sent nothing of what came before. The
  run restarts its history there, as at a compaction (:class:`ActivePath` ``resets``).
- **A rewind.** ``/rewind`` (or Esc Esc) writes nothing of its own: the next prompt links to an
  earlier entry, and what followed that entry stays in the file, orphaned. No later request sent
  it. Its entries are left out of the replay (``dropped``); the model calls among them
  (``dropped_steps``) are left out of the figures, and the importer says so.
- **A prompt never sent.** A message typed while a tool ran and then interrupted can be written
  on a branch of its own; the next request links past it. It is left out the same way.

Between compaction boundaries and cleared contexts (a segment), what is replayed is the path of
the segment's last request: the ancestors of its first entry, where a response's entries and
the entries holding results of its calls count as one (parallel calls link their results to one
another in some versions and each to its own call in others). An entry of the segment before
that request and off that path is left out; entries after it are kept (no request followed them).

Fails open (file order, as without links): when a message entry has no ``parentUuid`` key or
most are roots (a log of another shape, a hand-written one), when a ``uuid`` has two parents or
two message entries, and, per segment, when the chain of its last request leads to an entry the
file does not hold (a damaged line, or a parent Claude Code never wrote) or loops.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from ._import_common import kind_of

__all__ = ["ActivePath", "active_path"]

_ROOT = -1  # a chain that ends at parentUuid null
_UNKNOWN = -2  # a chain that leads out of the file (or loops)


@dataclass(frozen=True, slots=True)
class ActivePath:
    """The outcome: entries to leave out (by position), entries before which the history restarts
    (a cleared context), and how many of the left-out entries started a model response."""

    dropped: frozenset[int] = frozenset()
    resets: frozenset[int] = frozenset()
    dropped_steps: int = 0


@dataclass(slots=True)
class _Links:
    """uuid -> parentUuid for every entry that has one, and the message entries' positions."""

    parent: dict[str, Any] = field(default_factory=dict)
    position: dict[str, int] = field(default_factory=dict)
    resolved: dict[str, int] = field(default_factory=dict)  # memo: each link is followed once

    def resolve(self, link: Any) -> int:
        """The position of the nearest message entry up the chain from ``link`` (:data:`_ROOT`,
        :data:`_UNKNOWN`)."""
        passed: list[str] = []
        outcome = _UNKNOWN  # a cycle, unless the chain ends first
        for _ in range(len(self.parent) + 1):
            if link is None or not isinstance(link, str) or link not in self.parent:
                outcome = _ROOT if link is None else _UNKNOWN
                break
            if link in self.position or link in self.resolved:
                outcome = self.position.get(link, self.resolved.get(link, _UNKNOWN))
                break
            passed.append(link)
            link = self.parent[link]
        self.resolved.update((p, outcome) for p in passed)
        return outcome


def active_path(
    entries: Sequence[dict[str, Any]], records: Sequence[Any], starts: Sequence[bool]
) -> ActivePath:
    """What the requests of ``entries`` (main-chain messages and compaction boundaries, file
    order) sent; ``records``: every entry of the file (the links); ``starts[i]``: entry ``i``
    starts a model response (a new step)."""
    links = _links(entries, records)
    if links is None:
        return ActivePath()
    resets = _resets(entries, links)
    dropped: set[int] = set()
    groups = _groups(entries, starts)
    for start, end in _segments(entries, resets):
        dropped |= _dead(links, groups, starts, entries, (start, end))
    steps = sum(1 for i in dropped if starts[i])
    return ActivePath(frozenset(dropped), frozenset(resets), steps)


def _links(entries: Sequence[dict[str, Any]], records: Sequence[Any]) -> _Links | None:
    if any("parentUuid" not in e for e in entries if kind_of(e) in ("user", "assistant")):
        return None
    links = _Links()
    for record in records:
        uuid = record.get("uuid") if isinstance(record, dict) else None
        if isinstance(uuid, str):
            if uuid in links.parent and links.parent[uuid] != record.get("parentUuid"):
                return None  # one uuid, two places in the tree: no path to trust
            links.parent[uuid] = record.get("parentUuid")
    for index, entry in enumerate(entries):
        uuid = entry.get("uuid")
        if not isinstance(uuid, str) or uuid in links.position:
            return None
        links.position[uuid] = index
    roots = sum(1 for e in entries if not _is_boundary(e) and links.resolve(e.get("parentUuid")) == _ROOT)
    return links if 2 * roots <= len(entries) else None  # null everywhere: a log that records no tree


def _is_boundary(entry: dict[str, Any]) -> bool:
    return kind_of(entry) == "system"


def _resets(entries: Sequence[dict[str, Any]], links: _Links) -> set[int]:
    """User entries whose chain ends at a root although a message came before them in their
    segment (a compaction boundary starts a segment of its own)."""
    resets: set[int] = set()
    seen_message = False
    for index, entry in enumerate(entries):
        if _is_boundary(entry):
            seen_message = False
            continue
        if seen_message and kind_of(entry) == "user" and links.resolve(entry.get("parentUuid")) == _ROOT:
            resets.add(index)
        seen_message = True
    return resets


def _segments(entries: Sequence[dict[str, Any]], resets: set[int]) -> list[tuple[int, int]]:
    """``[start, end)`` ranges between compaction boundaries and cleared contexts."""
    cuts = sorted({0, len(entries), *resets, *(i + 1 for i, e in enumerate(entries) if _is_boundary(e))})
    return [(a, b) for a, b in itertools.pairwise(cuts) if a < b]


def _groups(entries: Sequence[dict[str, Any]], starts: Sequence[bool]) -> list[int]:
    """Per entry, its group: a response's entries and the entries holding results of its calls
    share the position of the response's first entry; any other entry is a group of its own."""
    groups: list[int] = []
    call_group: dict[str, int] = {}
    current, current_id = -1, None
    for index, entry in enumerate(entries):
        if kind_of(entry) == "assistant":
            if starts[index]:
                current, current_id = index, _message_id(entry)
            same = not starts[index] and current >= 0 and _message_id(entry) == current_id
            groups.append(current if starts[index] or same else index)
            call_group.update((i, groups[-1]) for i in _ids(entry, "tool_use", "id"))
            continue
        answered = {call_group.get(i) for i in _ids(entry, "tool_result", "tool_use_id")}
        only = answered.pop() if len(answered) == 1 else None
        groups.append(only if only is not None else index)
    return groups


def _message_id(entry: dict[str, Any]) -> Any:
    message = entry.get("message")
    return message.get("id") if isinstance(message, dict) else None


def _blocks(entry: dict[str, Any]) -> list[Any]:
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []


def _ids(entry: dict[str, Any], kind: str, key: str) -> list[str]:
    return [b[key] for b in _blocks(entry) if kind_of(b) == kind and isinstance(b.get(key), str)]


def _dead(
    links: _Links,
    groups: Sequence[int],
    starts: Sequence[bool],
    entries: Sequence[dict[str, Any]],
    span: tuple[int, int],
) -> set[int]:
    """The entries of ``[start, end)`` before its last request that are not on that request's path."""
    start, end = span
    last = next((i for i in range(end - 1, start - 1, -1) if starts[i]), None)
    if last is None:
        return set()
    alive = {groups[last]}
    position = links.resolve(entries[last].get("parentUuid"))
    earliest = last
    for _ in range(end - start):  # a chain visits each entry once (resolve stops at loops)
        if not start <= position < earliest:
            break
        alive.add(groups[position])
        earliest, position = position, links.resolve(entries[position].get("parentUuid"))
    ended = position == _ROOT or 0 <= position < start or (position == _UNKNOWN and earliest == start)
    if not ended:
        return set()  # the chain leaves the file mid-way (a damaged or missing line) or loops: file order
    return {i for i in range(start, last) if groups[i] not in alive}
