"""Code as tool outputs show it: numbered lines, grep hits, patches, and the definitions in them.

Pure text helpers of the working memory. ``nl -ba``, ``cat -n``, editor views
(``     1\\tline``), Claude Code's Read (``     1→line``) and SWE-agent's window
(``1459:line``) all number their lines; a unified diff or an ``apply_patch``
envelope names its files and hunks (read by :func:`..._patches.parse_patch`, as the aging's files
the agent wrote read it). :func:`definitions` finds the functions
and classes among such lines (``class Session``, ``def request``, ``func Open``,
``fn parse`` ...), qualifying a method by the class above it in the same view.
"""

from __future__ import annotations

import itertools
import operator
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import compress, count, repeat
from operator import itemgetter

from ..._patches import PatchFile, parse_patch

__all__ = [
    "Lines",
    "Touch",
    "View",
    "definitions",
    "grep_hits",
    "line_ranges",
    "merge_ranges",
    "numbered",
    "numbered_positions",
    "patch_touches",
]

Lines = tuple[tuple[int, int], ...]  # inclusive line ranges
_NUMBERED = (
    re.compile(r"^\s*(\d+)\t(.*)$"),  # nl -ba, cat -n, editor views, read_file
    re.compile(r"^\s*(\d+)\u2192(.*)$"),  # Claude Code's Read
    re.compile(r"^(\d+):(.*)$"),  # SWE-agent's window, grep -n on one file
)
_GREP_HIT = re.compile(r"^(\.{0,2}/?[\w./@+-]*[\w@+-]\.[A-Za-z0-9]{1,8}|[\w./@+-]+/[\w.@+-]+):(\d+)[:-](.*)$")
_DEFINITION = re.compile(
    r"^(\s*)(?:export\s+)?(?:default\s+)?(?:pub(?:\([^)]*\))?\s+)?(?:(?:abstract|final|public|private|static)\s+)*"
    r"(?:async\s+)?(def|class|function|func|fn|interface|struct|enum|trait)\s+"
    r"(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)"
)
_DEFINITION_HINT = re.compile(r"\b(?:def|class|function|func|fn|interface|struct|enum|trait)\s")
_MAX_DEFINITIONS = 60


@dataclass(frozen=True, slots=True)
class Touch:
    """One thing a call did to a file. ``path`` "" is the file open in a windowed editor."""

    path: str
    kind: str  # read | search | written | edited | deleted
    lines: Lines = ()
    note: str = ""  # an edit in a few words: "sed 428s/a/b/", "old → new", "heredoc, 12 lines"
    defs: tuple[tuple[str, int], ...] = ()  # definitions in written content (name, line)


@dataclass(frozen=True, slots=True)
class View:
    """How a call's output maps to file lines: the one file it shows (None: grep-style
    ``path:line:`` hits), and the line its first output line stands for (None: unknown)."""

    path: str | None
    start: int | None = None


def merge_ranges(ranges: Iterable[tuple[int, int]]) -> Lines:
    """Sorted, overlapping or adjacent ranges joined."""
    merged: list[tuple[int, int]] = []
    ranges = list(ranges)
    ordered = ranges if all(a <= b for a, b in itertools.pairwise(ranges)) else sorted(ranges)
    for first, last in ordered:
        if merged and first <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], last))
        else:
            merged.append((first, last))
    return tuple(merged)


def line_ranges(lines: Sequence[tuple[int, str]]) -> Lines:
    """The ranges the numbered ``lines`` cover (``merge_ranges`` of each line's number), found with
    C iterators: the numbers in order, cut where the next one skips a line."""
    numbers = list(map(itemgetter(0), lines))
    if not all(map(operator.le, numbers, numbers[1:])):
        numbers.sort()
    if not numbers:
        return ()
    breaks = list(compress(count(1), map(operator.lt, repeat(1), map(operator.sub, numbers[1:], numbers))))
    firsts = map(numbers.__getitem__, [0, *breaks])
    lasts = map(numbers.__getitem__, [b - 1 for b in breaks] + [len(numbers) - 1])
    return tuple(zip(firsts, lasts, strict=True))


def numbered_positions(lines: Sequence[str], start: int) -> list[tuple[int, str]]:
    """Unnumbered lines as ``(line number, text)`` from ``start``."""
    return list(zip(count(start), lines))


def numbered(lines: Sequence[str]) -> list[tuple[int, str]]:
    """The numbered lines of an output, in the style most of its first lines use ([] when none is)."""
    sample = [line for line in lines[:12] if line.strip()]
    scores = [sum(1 for line in sample if p.match(line)) for p in _NUMBERED]
    best = max(range(len(_NUMBERED)), key=lambda i: scores[i])
    if not sample or scores[best] * 2 < len(sample):
        return []
    pattern = _NUMBERED[best]
    return [(int(m.group(1)), m.group(2)) for m in map(pattern.match, lines) if m]


def grep_hits(lines: Sequence[str]) -> dict[str, list[tuple[int, str]]]:
    """``path:line:text`` (and ``path:line-text`` context) lines, by path."""
    hits: dict[str, list[tuple[int, str]]] = {}
    for line in lines:
        found = _GREP_HIT.match(line)
        if found:
            path = found.group(1).removeprefix("./")
            hits.setdefault(path, []).append((int(found.group(2)), found.group(3)))
    return hits


def definitions(lines: Sequence[tuple[int, str]]) -> tuple[tuple[str, int], ...]:
    """Functions and classes among numbered code lines; a method as ``Class.method``."""
    if not _DEFINITION_HINT.search("\n".join(text for _, text in lines)):
        return ()
    found: list[tuple[str, int]] = []
    classes: list[tuple[int, str]] = []  # (indent, name) of the enclosing classes
    for number, text in lines:
        match = _DEFINITION.match(text.expandtabs(4))
        if match is None:
            continue
        indent, keyword, name = len(match.group(1)), match.group(2), match.group(3)
        while classes and classes[-1][0] >= indent:
            classes.pop()
        qualified = f"{classes[-1][1]}.{name}" if classes and keyword in ("def", "function", "fn") else name
        if keyword in ("class", "struct", "interface", "trait", "enum"):
            classes.append((indent, name))
        found.append((qualified, number))
        if len(found) == _MAX_DEFINITIONS:
            break
    return tuple(found)


# --------------------------------------------------------------------------- patches
def _first_change(lines: Iterable[str]) -> str:
    marked = list(lines)
    removed = next((line[1:].strip() for line in marked if line.startswith("-") and line[1:].strip()), "")
    added = next((line[1:].strip() for line in marked if line.startswith("+") and line[1:].strip()), "")
    if removed and added:
        return f"{_clip(removed)} → {_clip(added)}"
    return f"+ {_clip(added)}" if added else (f"- {_clip(removed)}" if removed else "")


def _clip(text: str, limit: int = 40) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _patch_touch(file: PatchFile) -> Touch:
    if file.verb == "delete":
        return Touch(file.path, "deleted")
    if file.verb == "add":
        added = [line for hunk in file.hunks for line in hunk.added]
        defs = definitions(numbered_positions(added, 1))
        return Touch(file.path, "written", note=f"patch, {len(added)} lines", defs=defs)
    ranges = [hunk.new_range for hunk in file.hunks if hunk.new_range is not None]
    note = _first_change(line for hunk in file.hunks for line in hunk.lines)
    return Touch(file.path, "edited", merge_ranges(ranges), f"patch: {note}" if note else "patch")


def patch_touches(text: str) -> tuple[Touch, ...]:
    """Files an ``apply_patch`` envelope or a unified diff changes (:func:`..._patches.parse_patch`),
    with the new-side hunk ranges."""
    return tuple(map(_patch_touch, parse_patch(text)))
