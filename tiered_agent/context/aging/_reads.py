"""The files the agent reads: which tool outputs show one file (``Age(focus_reads=K)``).

An agent fixing a bug reads a file region (``nl -ba f.py | sed -n '430,460p'``, ``cat``, an
editor's ``view``), moves on to another region of the same file, and a few iterations later edits,
greps or re-reads by the line numbers and names those reads showed. What it does next is best
predicted by what it is doing now: a file its last few actions still name is a file it is still
working on, and its reads of that file are what its next edit quotes. With ``Age(focus_reads=K)``
such a read stays whole when its iteration ages (:func:`~._forms._in_focus`); this module says
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

__all__ = ["Read", "file_read"]


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
