"""The files the agent reads: which tool outputs show one file (``Age(focus_reads=K)``).

An agent fixing a bug reads a file region (``nl -ba f.py | sed -n '430,460p'``, ``cat``, an
editor's ``view``), moves on to another region of the same file, and a few iterations later edits,
greps or re-reads by the line numbers and names those reads showed. What it does next is best
predicted by what it is doing now: a file its last few actions still name is a file it is still
working on, and its reads of that file are what its next edit quotes. With ``Age(focus_reads=K)``
such a read stays whole when its iteration ages (:class:`Focus`); this module says
what a read is, from the call alone, whatever the tool: a call whose output shows one file
(:func:`~..summary.memory._calls.call_facts`' view: ``cat``, ``head``, ``sed -n``, ``nl``,
``grep`` in one file, an editor's ``view``, Claude Code's ``Read``...). The rule reads only what
the agent did up to the epoch, never what a later action needs.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._messages import ToolCall
from .._names import RETRIEVE_TOOL_NAME
from ..summary.memory._calls import call_facts
from ._jsonform import output_lines

__all__ = ["Focus", "Read", "file_read", "read_lines"]


@dataclass(frozen=True, slots=True)
class Read:
    """One call's output that shows one file: its path and the file line it starts at (None when
    unknown: a ``grep`` in the file)."""

    path: str
    start: int | None

    @property
    def name(self) -> str:
        """The file's name (its path's last part)."""
        return self.path.rstrip("/").rsplit("/", 1)[-1]


def file_read(call: ToolCall) -> Read | None:
    """The read ``call`` makes when its output shows one file, else None (never raises: a call
    that cannot be read is no read)."""
    if call.name == RETRIEVE_TOOL_NAME:  # a copy of older history, not a read of a file
        return None
    try:
        view = call_facts(call).view
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):  # fail open: not a read
        return None
    if view is None or not view.path:
        return None
    return Read(view.path, view.start)


def read_lines(read: Read, output: str) -> tuple[int, int] | None:
    """The file lines ``output`` shows (first, last), when the read says where it starts (a
    ``grep`` or a read without a start shows lines it does not place: None). A JSON output is
    counted by its fields' lines (:func:`~._jsonform.output_lines`: the text's lines and a few
    of its other fields, so ``last`` may run a few lines past the text's)."""
    if read.start is None:
        return None
    count = len(output_lines(output))  # a JSON-wrapped output (Codex): its fields' lines
    return read.start, read.start + max(count, 1) - 1


class Focus:
    """Which reads of one epoch's batch stay whole (``Age(focus_reads=K)`` and its bounds), asked
    newest to oldest: :meth:`named` adds what the agent's last K iterations name, :meth:`keeps`
    decides one output, :meth:`shown` records a read that stays shown whole after it.

    Invariants: a read stays whole only if its file is named in ``names`` (as with
    ``focus_reads`` alone); with ``newest``, a read whose lines (first..last) a read of the same
    file newer than it up to the epoch shows whole again (the verbatim window, or kept whole
    here) is not kept: the newer one shows them; with ``chars`` > 0 the reads kept whole in one
    batch add up to at most ``chars`` characters, the newest first (a read that does not fit ages
    as without the rule). Built per batch rendering, never shared; reads only the agent's calls
    and their outputs up to the epoch."""

    __slots__ = ("_left", "_newest", "_regions", "names")

    def __init__(self, newest: bool = False, chars: int = 0) -> None:
        self.names: set[str] = set()
        self._newest = newest
        self._left: int | None = chars if chars > 0 else None
        self._regions: dict[str, list[tuple[int, int]]] = {}

    def keeps(self, call: ToolCall | None, output: str) -> bool:
        """Whether ``call``'s ``output`` stays whole (it then counts against the bound and, as a
        newer read, for the older ones)."""
        if not self.names or call is None:
            return False
        read = file_read(call)
        if read is None or (read.path not in self.names and read.name not in self.names):
            return False
        lines = read_lines(read, output)
        if self._newest and lines is not None and self._covered(read.path, lines):
            return False
        if self._left is not None:
            if len(output) > self._left:
                return False
            self._left -= len(output)
        if lines is not None:
            self._regions.setdefault(read.path, []).append(lines)
        return True

    def shown(self, call: ToolCall, output: str) -> None:
        """``call``'s ``output`` stays shown whole, newer than what is asked next (a verbatim read)."""
        if not self._newest:
            return
        read = file_read(call)
        lines = read_lines(read, output) if read is not None else None
        if read is not None and lines is not None:
            self._regions.setdefault(read.path, []).append(lines)

    def _covered(self, path: str, lines: tuple[int, int]) -> bool:
        first, last = lines
        return any(a <= first and last <= b for a, b in self._regions.get(path, ()))
