"""Code references in text: the identifiers, paths and numbers a reader of a prompt would look up.

A *reference* is a token of 4+ characters made of letters, digits and ``_./-``
that looks like code: it contains ``/``, ``_``, ``.`` or a digit, or is
camelCase (``src/app.py``, ``parse_args``, ``HAT017``, ``2024-05-25``,
``getValue``). Plain words are not references. The aged forms of old
iterations (:mod:`._forms`) keep the lines of an output that carry a
reference not shown anywhere later in the prompt.

A text's references are a :data:`Refs`: a tuple of distinct strings in the order the text
first names them, not a set. The run's memo keeps one per text naming something (a line of an
output, a message, a call's arguments), most of them naming one to three references: a tuple
is 56 + 8n bytes where a frozenset of up to four is 216 (and 700+ beyond). The rules read them
with the set methods that take any iterable (``seen.issuperset(r)``, ``seen.update(r)``,
``wanted.isdisjoint(r)``, ``used.intersection(r)``), which answer what the set operators on a
frozenset answered.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence, Set
from itertools import chain

from .._memo import run_memo

__all__ = [
    "NO_PATHS",
    "NamedPaths",
    "Paths",
    "Refs",
    "line_refs",
    "lines_refs",
    "message_refs",
    "path_tails",
    "paths_of",
    "refs",
    "refs_of_all",
    "tail_index",
    "text_refs",
]

# Tokens of 4+ characters (first and last a letter, digit or ``_``). A token is code-like when it
# holds ``/``, ``_``, ``.`` or a digit (what is left once its hyphens are gone is not all letters)
# or a lowercase letter right before an uppercase one (only a token with both cases can).
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]{2,}[A-Za-z0-9_]")
_CAMEL = re.compile(r"[a-z][A-Z]")

Refs = tuple[str, ...]  # distinct references, in the order the text first names them


def _code_like(tokens: list[str]) -> list[str]:
    """The code-like ones among ``tokens`` (in order, repeats kept)."""
    return [
        t
        for t in tokens
        if not (t.replace("-", "") if "-" in t else t).isalpha()
        or (not t.islower() and not t.isupper() and _CAMEL.search(t))
    ]


@run_memo(65_536, keep=bool)
def refs(text: str) -> Refs:
    """The references in ``text`` (memoized for the run: the same texts are scanned at every epoch).

    A text naming nothing gets the empty tuple and is not remembered: scanning it again costs
    about what a memo entry (the text and its slot, for every such line of every output an agent
    keeps) would save."""
    found = _code_like(_TOKEN.findall(text))
    if len(found) < 2:
        return tuple(found)
    return tuple(dict.fromkeys(found))  # each once, in order


@run_memo(4096)
def line_refs(text: str) -> tuple[Refs, ...]:
    """The references of each line of ``text`` (``text.splitlines()``: ``line_refs(text)[i] ==
    refs(text.splitlines()[i])``), kept as one entry per text.

    An old output's lines are read at every epoch (its estimated aged form, its aged form, its
    note's reading), most naming nothing: one entry per output, instead of one per line (the line
    itself, its key, its slot) and a scan again of every line naming nothing. A reference named by
    several of its lines is one string."""
    return lines_refs(text.splitlines())


def lines_refs(lines: Iterable[str]) -> tuple[Refs, ...]:
    """``refs`` of each of ``lines``, in order, scanned here (not remembered: :func:`line_refs`)."""
    strings: dict[str, str] = {}
    out: list[Refs] = []
    for line in lines:
        found = _TOKEN.findall(line)
        if found:
            names = [strings.setdefault(t, t) for t in _code_like(found)]
            out.append(tuple(dict.fromkeys(names)) if len(names) > 1 else tuple(names))
        else:
            out.append(())
    return tuple(out)


def text_refs(text: str) -> Iterable[str]:
    """The references in a whole output (or message), from its lines' (:func:`line_refs`, which its
    aged forms and its note read too, so the text is scanned once): no reference spans a line
    break, so these are :func:`refs` of the text, some repeated."""
    return chain.from_iterable(line_refs(text))


def message_refs(content: str, arguments: Iterable[str] = ()) -> frozenset[str]:
    """The references in a message's content and its tool calls' arguments."""
    return frozenset(refs(content)).union(*map(refs, arguments))


def refs_of_all(texts: Iterable[str]) -> set[str]:
    """The union of the references of ``texts``."""
    out: set[str] = set()
    for text in texts:
        out.update(refs(text))
    return out


# A path's ends (:func:`path_tails`) keep at least this many parts: ``specs/tasks.md`` is the file
# ``/work/repo/specs/tasks.md`` names, a bare ``tasks.md`` or ``__init__.py`` may be any of many.
_PARTS = 2
_MAX_PARTS = 16  # the longest end of a path that is matched (parts)


def path_tails(name: str) -> tuple[str, ...]:
    """The ends of a path reference at a ``/`` of two parts or more (``work/repo/specs/tasks.md``:
    ``repo/specs/tasks.md``, ``specs/tasks.md``): the same file named from another directory.

    At most :data:`_MAX_PARTS` parts: the ends of a reference with thousands of ``/`` (any long
    line of ``a/b/c/...`` is one reference) would hold its text once per part, quadratic in its
    length; a file named from another directory shares far fewer parts than that."""
    if name.count("/") < _PARTS:
        return ()
    parts = name.split("/")
    start = max(1, len(parts) - _MAX_PARTS)
    return tuple("/".join(parts[i:]) for i in range(start, len(parts) - _PARTS + 1))


def tail_index(names: Iterable[str]) -> dict[str, tuple[str, ...]]:
    """The path references among ``names`` by each of their :func:`path_tails`."""
    index: dict[str, list[str]] = {}
    for name in names:
        for tail in path_tails(name):
            index.setdefault(tail, []).append(name)
    return {tail: tuple(at) for tail, at in index.items()}


Paths = tuple[frozenset[str], frozenset[str]]  # the paths among some references, and their ends
NO_PATHS: Paths = (frozenset(), frozenset())


def paths_of(names: Iterable[str]) -> Paths:
    """The paths among ``names`` (a ``/`` in them) and their :func:`path_tails`."""
    found = frozenset(name for name in names if "/" in name)
    return (found, frozenset(chain.from_iterable(map(path_tails, found)))) if found else NO_PATHS


class NamedPaths:
    """The paths among references named (a set that grows, ``names``), and their ends (``tails``):
    which other references name the same file as one of them (:meth:`among`)."""

    __slots__ = ("names", "tails")

    def __init__(self, names: Iterable[str] = ()) -> None:
        self.names: set[str] = set()
        self.tails: set[str] = set()
        self.join(paths_of(names))  # only paths count: a name without ``/`` is no file named otherwise

    def join(self, paths: Paths) -> None:
        """Name these paths too (:func:`paths_of` of some references, found once)."""
        if paths[0]:
            self.names |= paths[0]
            self.tails |= paths[1]

    def among(self, names: Set[str], index: Mapping[str, Sequence[str]]) -> set[str]:
        """Those of ``names`` (``index``: their :func:`tail_index`) naming a file a named path
        names, though not as written: a path ending at a ``/`` with a named one (``specs/tasks.md``
        named, ``work/repo/specs/tasks.md`` shown), or a named path's end (the reverse)."""
        found = set(names & self.tails) if self.tails else set()
        if index:
            for tail in index.keys() & self.names:
                found.update(index[tail])
        return found
