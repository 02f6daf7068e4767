"""The one reading of a patch: Codex's ``apply_patch`` envelope and the unified diff.

Two grammars, one reading, line by line over arbitrary text (it never raises):

* the envelope: ``*** Add File: p``, ``*** Update File: p`` (optionally ``*** Move to: q``),
  ``*** Delete File: p``; ``@@`` lines (with or without a context text) open hunks; ``*** End
  Patch`` closes the file; ``*** Begin Patch`` and ``*** End of File`` are markers only;
* the unified diff: a file starts at a ``--- old`` line followed by ``+++ new`` (an ``a/``, ``b/``
  prefix is dropped; ``/dev/null`` on the old side adds the file, on the new side deletes it);
  ``@@ -a,b +c,d @@`` lines open hunks and give the new side's lines ``c..c+d-1``.

A hunk holds its lines with their marks (``+`` added, ``-`` removed, `` `` context); lines with any
other first character (``\\ No newline at end of file``, an empty line, ``diff --git``, ``index``)
and the ``---``/``+++`` lines are not part of it. Lines before the first file belong to nothing.
The readers (the files the agent wrote, the working memory's file facts) each take what they need
from the same :class:`PatchFile` records.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Hunk", "PatchFile", "parse_patch"]

_ENVELOPE_FILE = re.compile(r"^\*\*\* (Update|Add|Delete) File: (.+?)\s*$")
_MOVE = re.compile(r"^\*\*\* Move to: (.+?)\s*$")
_DIFF_OLD = re.compile(r"^--- (?:a/)?(\S.*?)\s*$")
_DIFF_NEW = re.compile(r"^\+\+\+ (?:b/)?(\S.*?)\s*$")
_HUNK_HEADER = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@")
_END = "*** End Patch"
_NULL = "/dev/null"
_VERBS = {"Add": "add", "Update": "update", "Delete": "delete"}


@dataclass(frozen=True, slots=True)
class Hunk:
    """One hunk: its ``lines`` with their marks (``+``, ``-``, space), and the new side's lines it
    covers (``new_range``, inclusive) when its header gives them."""

    lines: tuple[str, ...]
    new_range: tuple[int, int] | None = None

    @property
    def old(self) -> tuple[str, ...]:
        """The lines before the change: removed and context lines, unmarked."""
        return tuple(line[1:] for line in self.lines if line[0] in "- ")

    @property
    def new(self) -> tuple[str, ...]:
        """The lines after the change: added and context lines, unmarked."""
        return tuple(line[1:] for line in self.lines if line[0] in "+ ")

    @property
    def added(self) -> tuple[str, ...]:
        """The added lines only, unmarked."""
        return tuple(line[1:] for line in self.lines if line[0] == "+")


@dataclass(frozen=True, slots=True)
class PatchFile:
    """One file of a patch: its ``path``, the ``verb`` (``add``, ``update`` or ``delete``), the path
    an envelope moves it to (``moved_to``), and its ``hunks`` in order."""

    path: str
    verb: str
    hunks: tuple[Hunk, ...] = ()
    moved_to: str | None = None


@dataclass(slots=True)
class _Open:
    """The file being read: its header, its finished hunks, and the hunk being read."""

    path: str
    verb: str
    moved_to: str | None = None
    hunks: list[Hunk] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)
    new_range: tuple[int, int] | None = None
    headed: bool = False  # the hunk being read has a ``@@`` line

    def close_hunk(self) -> None:
        if self.lines or self.headed:
            self.hunks.append(Hunk(tuple(self.lines), self.new_range))
        self.lines, self.new_range, self.headed = [], None, False

    def done(self) -> PatchFile:
        self.close_hunk()
        return PatchFile(self.path, self.verb, tuple(self.hunks), self.moved_to)


def parse_patch(text: str) -> tuple[PatchFile, ...]:
    """The files an envelope or a unified diff (or a text holding several) changes, in order."""
    files: list[PatchFile] = []
    current: _Open | None = None
    previous = ""
    for line in text.splitlines():
        started = _file_start(line, previous)
        previous = line
        if started is not None or line.startswith(_END):
            if current is not None:
                files.append(current.done())
            current = started
        elif current is not None:
            _read_line(current, line)
    if current is not None:
        files.append(current.done())
    return tuple(files)


def _file_start(line: str, previous: str) -> _Open | None:
    envelope = _ENVELOPE_FILE.match(line)
    if envelope is not None:
        return _Open(envelope.group(2), _VERBS[envelope.group(1)])
    new = _DIFF_NEW.match(line)
    old = _DIFF_OLD.match(previous) if new is not None else None
    if new is None or old is None:
        return None
    if new.group(1) == _NULL:
        return _Open(old.group(1), "delete")
    return _Open(new.group(1), "add" if old.group(1) == _NULL else "update")


def _read_line(current: _Open, line: str) -> None:
    if line.startswith("@@"):
        current.close_hunk()
        current.new_range, current.headed = _new_range(line), True
        return
    moved = _MOVE.match(line)
    if moved is not None:
        current.moved_to = moved.group(1)
    elif line[:1] in ("+", "-", " ") and not line.startswith(("+++", "---")):
        current.lines.append(line)


def _new_range(line: str) -> tuple[int, int] | None:
    found = _HUNK_HEADER.match(line)
    if found is None:
        return None
    start, count = int(found.group(1)), int(found.group(2) or 1)
    return (start, start + max(count, 1) - 1)
