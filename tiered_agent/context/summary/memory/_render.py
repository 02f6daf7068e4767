"""The working memory as text: one page, sections in a fixed order, bounded in size.

The sections (:data:`SECTIONS`) are the same ones an LLM summarizer is asked for.
Past the size bound, entries are dropped from the section that is largest for
its weight: chronological sections lose their oldest entries, the file map its
least relevant files (read-only, not mentioned by the agent, touched longest
ago). The task line is never dropped.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from ..._memo import run_memo
from ._code import Lines
from ._fold import FileNote, Memory, TestRun
from ._sections import MAX_MEMORY_CHARS, header
from ._text import identifiers

__all__ = ["render"]

_LIMITS = {"requests": 8, "files": 20, "tests": 3, "errors": 6, "commands": 8, "actions": 10, "facts": 8}
_LIMITS |= {"decisions": 8, "todo": 10, "defs": 6, "ranges": 6}


@dataclass
class _Section:
    """A titled list; past the size bound it loses its least relevant item (lowest ``ranks``)."""

    title: str
    items: list[str]
    weight: float
    minimum: int
    inline: bool = False
    ranks: list[tuple[int, ...]] | None = None  # None: the items' order (the oldest goes first)

    def __post_init__(self) -> None:
        if self.ranks is None:
            self.ranks = [(i,) for i in range(len(self.items))]

    def render(self) -> str:
        if not self.items:
            return ""
        if self.inline:
            return f"{self.title}: {' | '.join(self.items)}"
        return "\n".join([f"{self.title}:", *(f"- {item}" for item in self.items)])

    def drop(self) -> None:
        assert self.ranks is not None
        index = self.ranks.index(min(self.ranks))
        del self.items[index], self.ranks[index]


# --------------------------------------------------------------------------- entries
def _ranges(lines: Lines) -> str:
    shown = [f"{a}-{b}" if b > a else str(a) for a, b in lines[: _LIMITS["ranges"]]]
    more = len(lines) - len(shown)
    return ", ".join(shown) + (f" (+{more} more)" if more > 0 else "")


def _defs(note: FileNote, mentioned: Mapping[str, int]) -> str:
    def relevant(item: tuple[str, int]) -> tuple[bool, int]:
        return (item[0].rsplit(".", 1)[-1] not in mentioned, item[1])

    qualified = {name.rsplit(".", 1)[-1] for name, _ in note.defs if "." in name}
    named = [d for d in note.defs if "." in d[0] or d[0] not in qualified]  # `m` is shown as `Class.m`
    chosen = sorted(named, key=relevant)[: _LIMITS["defs"]]
    return ", ".join(f"{name} {line}" if line else name for name, line in sorted(chosen, key=lambda d: d[1]))


def _edits(note: FileNote) -> str:
    shown = ", ".join(f"it {it} ({text})" if text else f"it {it}" for it, text in note.edits)
    if note.edit_count <= len(note.edits):
        return f"edited {shown}"
    return f"{note.edit_count} edits, last {shown}"


def _rank(note: FileNote, mentioned: Mapping[str, int]) -> tuple[int, int, str]:
    """The code being changed first (files edited that the run did not create), then the files
    read whose definitions the agent went on to name, the files the run created, other files
    read, and files deleted; the most recent first in each group."""
    if note.deleted is not None:
        group = 4
    elif note.written is not None:
        group = 2
    elif note.edit_count:
        group = 0
    else:
        named = any(mentioned.get(name.rsplit(".", 1)[-1], -1) > note.first for name, _ in note.defs)
        group = 1 if named else 3
    return (group, -note.last, note.path)


def _file_line(note: FileNote, mentioned: Mapping[str, int]) -> str:
    if note.deleted is not None:
        created = f" (created it {note.written[0]})" if note.written is not None else ""
        return f"{note.path}: deleted it {note.deleted}{created}"
    parts: list[str] = []
    if note.written is not None:
        it, text = note.written
        parts.append(f"created it {it}" + (f" ({text})" if text else ""))
    if note.edit_count:
        parts.append(_edits(note))
    if note.edited:
        parts.append(f"changed lines {_ranges(note.edited)}")
    if note.read:
        parts.append(f"{'hits' if note.searched else 'read'} {_ranges(note.read)}")
    if note.defs and note.written is None:  # the code map of the files the run found, not wrote
        parts.append(f"defs {_defs(note, mentioned)}")
    if not parts:
        parts.append("searched" if note.searched else "read")
    return f"{note.path}: {'; '.join(parts)}"


def _test_line(run: TestRun) -> str:
    status = f"exit {run.code}" if run.code is not None else ("failed" if run.failed else "ok")
    line = f"it {run.iteration} {run.label} -> {status}" + (f": {run.summary}" if run.summary else "")
    return line + (f"; failing: {', '.join(run.failures)}" if run.failures else "")


def _last(items: Iterable[tuple[int, str]], limit: int, sep: str = " ") -> list[str]:
    return [f"it {it}{sep}{text}" for it, text in list(items)[-limit:]]


def _files(memory: Memory) -> _Section:
    notes = sorted(memory.files, key=lambda note: _rank(note, memory.mentioned))[: _LIMITS["files"]]
    items = [_file_line(note, memory.mentioned) for note in notes]
    return _Section("Files", items, 3.5, 3, ranks=[(-i,) for i in range(len(items))])


@run_memo(8192)
def _distinctive(text: str) -> tuple[str, ...]:
    """The distinctive identifiers of ``text``: those holding a digit or an underscore (ids, numbers,
    snake_case). Memoized per run: a rolling summary renders the same entries page after page."""
    return tuple(word for word in identifiers(text) if "_" in word or any(map(str.isdigit, word)))


def _used(text: str, since: int, mentioned: Mapping[str, int]) -> int:
    """How many distinctive identifiers of ``text`` (ids, numbers, snake_case) the agent wrote after
    iteration ``since``."""
    get = mentioned.get
    return sum(get(word, -1) > since for word in _distinctive(text))


def _by_use(
    title: str, entries: list[tuple[int, str]], memory: Memory, weight: float, sep: str = " "
) -> _Section:
    """A chronological section that first loses the entries whose ids the agent did not use later."""
    items = _last(entries, len(entries), sep)
    ranks: list[tuple[int, ...]] = [
        (_used(text.partition(": ")[2] or text, it, memory.mentioned), it) for it, text in entries
    ]
    return _Section(title, items, weight, 2, ranks=ranks)


def _sections(memory: Memory) -> list[_Section]:
    sections = [
        _Section("Constraints", list(memory.constraints), 1.0, 1, inline=True),
        _by_use("User requests", list(memory.requests[-_LIMITS["requests"] :]), memory, 2.5, ": "),
        _files(memory),
        _Section("Tests", [_test_line(t) for t in memory.tests[-_LIMITS["tests"] :]], 3.0, 1),
        _Section("Errors", _last((e for _, e in memory.errors), _LIMITS["errors"]), 2.5, 1),
        _Section("Commands", _last(memory.commands, _LIMITS["commands"]), 1.5, 1),
        _Section("Actions", _last(memory.actions, _LIMITS["actions"]), 2.5, 2),
        _by_use("Facts", [entry for _, entry in memory.facts][-_LIMITS["facts"] :], memory, 2.0),
        _Section("Decisions", _last(memory.decisions, _LIMITS["decisions"], ": "), 1.8, 1),
    ]
    if memory.todo is not None:
        open_items, done = memory.todo
        title = f"Todo ({len(open_items)} open, {done} done)"
        todo = [f"[ ] {item}" for item in open_items[: _LIMITS["todo"]]]
        sections.append(_Section(title, todo, 2.0, 2, ranks=[(-i,) for i in range(len(todo))]))
    if memory.finished is not None:
        sections.append(_Section("Finished", _last([memory.finished], 1), 3.0, 1, inline=True))
    return sections


# --------------------------------------------------------------------------- the page
def _fit(head: list[str], sections: list[_Section], limit: int) -> str:
    """The page within ``limit`` chars. Each section's text is kept and only the one that lost an
    item is rendered again: the page's length is the sum of its parts'."""
    texts = [s.render() for s in sections]
    fixed = sum(map(len, head)) + len(head) - 1  # the head lines and the line feeds between them
    length = fixed + sum(len(t) + 1 for t in texts if t)
    while length > limit:
        above = [i for i, s in enumerate(sections) if len(s.items) > s.minimum]
        if above:  # the section largest for its weight gives up its least relevant item
            victim = max(above, key=lambda i: (len(texts[i]) / sections[i].weight, sections[i].title))
        else:  # all at their minimum: the least important section goes first
            left = [i for i, s in enumerate(sections) if s.items]
            if not left:
                return _page(head, texts)[: limit - 1] + "…"
            victim = min(left, key=lambda i: (sections[i].weight, -len(texts[i]), sections[i].title))
        sections[victim].drop()
        before, texts[victim] = texts[victim], sections[victim].render()
        length += len(texts[victim]) - len(before) + bool(texts[victim]) - bool(before)
    return _page(head, texts)


def _page(head: list[str], texts: list[str]) -> str:
    return "\n".join([*head, *(text for text in texts if text)])


def render(memory: Memory, *, max_chars: int = MAX_MEMORY_CHARS, earlier: str | None = None) -> str:
    """The working memory as a page of at most ``max_chars`` characters."""
    head = [header(memory.first, memory.last)]
    if memory.task:
        head.append(f"Task: {memory.task}")
    if earlier:
        head.append(earlier)
    if not any((memory.files, memory.commands, memory.tests, memory.errors, memory.actions, memory.facts,
                memory.decisions, memory.requests, memory.finished)):  # fmt: skip
        head.append("No activity recorded in this range.")
    return _fit(head, _sections(memory), max_chars)
