"""The files the agent is reading: the newest reads of them that aging hid, shown again in one note.

An agent fixing a bug reads a file region (``nl -ba f.py | sed -n '430,460p'``, ``cat``, an
editor's ``view``), moves on to another region of the same file, and some iterations later edits,
greps or re-reads by the line numbers and names those reads showed. When aging hides iterations
soon after they leave the window (a low ``Age.patience``), those reads are condensed to a few
lines before the agent has used them. What the agent does next is best predicted by what it is
doing now: a file its last few actions still name is a file it is still working on.

:func:`reads_note` keeps, at each aging epoch, the newest reads of those files that the epoch hid
(iterations ``<= through``) in one note after the aged iterations, each output as it arrived:

* a read is a call whose output shows one file (:func:`~..summary.memory._calls.call_facts`' view:
  ``cat``, ``head``, ``sed -n``, ``nl``, an editor's ``view``, ``grep`` in one file, Claude Code's
  ``Read``...), whatever the tool;
* the file is *in focus* when the agent named it (its file name, in its reasoning or a call) in an
  iteration after the read and among the last ``recent`` iterations up to the epoch's newest;
* a read whose line range newer reads of the file cover (those still shown verbatim included), or
  whose call was made again later, is left out: it shows nothing the newer ones do not;
* the newest reads first, each whole, as far as ``max_chars`` goes (a read that does not fit is
  left out, a smaller older one may still come in).

Invariant: the note holds only tool outputs of the history, verbatim, each under a header naming
its iteration and its exact ``context_retrieve`` call; it is a function of the history up to the
epoch (``through``, ``at``), so it changes only at epochs, which rewrite the prompt after the aged
iterations anyway (the break-even rule counts its tokens as it counts the files note's). Nothing
here reads what a later action needs: only what the agent did up to the epoch.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ..._messages import Message, ToolCall
from .._names import RETRIEVE_TOOL_NAME, retrieve_call
from ..summary.memory._calls import call_facts
from ._written import WrittenFiles, _agent_texts, _holds, _named_at

__all__ = ["Read", "reads_note"]

_HEADER = "[Files you are reading: your newest reads of them that aged, as they showed them:]"


@dataclass(frozen=True, slots=True)
class Read:
    """One call's output that shows one file: where (its first line, None when unknown) and how many
    lines, the call's canonical text (a call made again supersedes it)."""

    iteration: int
    path: str
    start: int | None
    lines: int
    call: str
    call_id: str
    text: str

    @property
    def end(self) -> int | None:
        """The last file line it shows (None when its start is unknown)."""
        return None if self.start is None else self.start + max(self.lines, 1) - 1


def file_read(iteration: int, call: ToolCall, output: str | None) -> Read | None:
    """The read ``call`` made, when its output shows one file (None otherwise; never raises)."""
    if output is None or call.name == RETRIEVE_TOOL_NAME:
        return None
    try:
        view = call_facts(call).view
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):  # fail open: not a read
        return None
    if view is None or not view.path:
        return None
    lines = output.count("\n") + 1
    return Read(iteration, view.path, view.start, lines, f"{call.name}\x00{call.arguments}", call.id, output)


def _reads(groups: Mapping[int, tuple[Message, ...]], first: int, last: int) -> list[Read]:
    """The reads of iterations ``first..last``, newest first."""
    found: list[Read] = []
    for iteration in range(last, first - 1, -1):
        messages = groups.get(iteration, ())
        outputs = {m.tool_call_id: m.content for m in messages if m.role == "tool" and m.tool_call_id}
        calls = [c for m in messages if m.role == "assistant" for c in m.tool_calls]
        for call in reversed(calls):
            read = file_read(iteration, call, outputs.get(call.id))
            if read is not None:
                found.append(read)
    return found


def _covered(read: Read, spans: list[tuple[int, int]]) -> bool:
    """Whether ``spans`` (newer reads' line ranges of the same file) cover every line ``read`` shows."""
    start, end = read.start, read.end
    if start is None or end is None:
        return False
    for low, high in sorted(spans):
        if low > start:
            return False
        if high >= start:
            start = high + 1
        if start > end:
            return True
    return False


def reads_note(
    groups: Mapping[int, tuple[Message, ...]],
    *,
    through: int,
    at: int,
    max_chars: int,
    recent: int,
    retrieval: bool,
    files_of: WrittenFiles | None = None,
) -> Message | None:
    """The note of the newest hidden reads (iteration ``<= through``) of the files the agent named
    after them in its last ``recent`` iterations up to ``at``, within ``max_chars`` (see the module
    docstring); None when there is none. ``files_of``: the run's (each iteration's text read once)."""
    if max_chars <= 0 or through <= 0:
        return None
    low = max(1, at - recent + 1)
    texts = files_of.texts(groups, low, at) if files_of is not None else _agent_texts(groups, low, at)
    holds = files_of.holds if files_of is not None else _holds
    newest = sorted(texts.items(), reverse=True)
    spans: dict[str, list[tuple[int, int]]] = {}
    calls: set[str] = set()
    for read in _reads(groups, through + 1, at):  # shown verbatim: they cover what they show
        _remember(read, spans, calls)
    parts: list[str] = []
    room = max_chars
    for read in _reads(groups, 1, through):
        named = _named_at(read.path, [(k, t) for k, t in newest if k > read.iteration], holds)
        fresh = read.call not in calls and not _covered(read, spans.get(read.path, []))
        _remember(read, spans, calls)
        if not named or not fresh or len(read.text) > room:
            continue
        parts.append(_section(read, retrieval))
        room -= len(read.text)
    if not parts:
        return None
    return Message(role="user", content="\n".join([_HEADER, *parts]), iteration=0)


def _remember(read: Read, spans: dict[str, list[tuple[int, int]]], calls: set[str]) -> None:
    calls.add(read.call)
    if read.start is not None and read.end is not None:
        spans.setdefault(read.path, []).append((read.start, read.end))


def _section(read: Read, retrieval: bool) -> str:
    where = f"lines {read.start}-{read.end}" if read.start is not None else "lines"
    back = f"; {retrieve_call('tool_call_id', read.call_id)}" if retrieval else ""
    return f"=== {read.path}, {where} as iteration {read.iteration} read them{back} ===\n{read.text}"
