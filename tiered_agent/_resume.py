"""What a resumed run starts from: the traced history, checked and made valid to send again.

A trace can hold what no provider accepts: a line duplicated by a crash or an editor, a tool
result moved before its call, a reply whose calls never got results (the run stopped mid-step),
lines a reader must skip. Sent as they are, the provider answers 400 at every later resume
("an assistant message with tool_calls must be followed by tool messages"). :func:`repair_history`
rebuilds the conversation in the one shape every provider accepts, and says what it changed, line
by line; :meth:`ResumeState.load` reads the trace leniently (each skipped line with its reason),
repairs it, and keeps only the summaries and prompt records that fit the history (what the
context steps restore from, see :meth:`~.context.ContextManager.restore`).

The repair is deterministic and never deletes anything from the file: dropped lines stay in the
trace (every later read drops them again), results it adds (``interrupted``) are appended.
"""

from __future__ import annotations

from collections import defaultdict, deque
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeGuard

from ._errors import ConfigurationError
from ._messages import MAX_ITERATION, Message, ToolCall
from ._trace import (
    ContextRecord,
    Event,
    MessageEvent,
    ModelRequest,
    RunStarted,
    SummaryEvent,
    TraceScan,
    scan_trace,
)

__all__ = ["INTERRUPTED", "RepairedHistory", "ResumeState", "describe_notes", "repair_history"]

INTERRUPTED = "[interrupted: the run stopped before this call returned; call it again if you still need it]"
MAX_LISTED_NOTES = 10


@dataclass(frozen=True, slots=True)
class RepairedHistory:
    """The history to continue from, the messages the repair added to it (to be appended to the
    trace), and one note per change (``line 14: dropped, a second result for call c3``)."""

    messages: tuple[Message, ...]
    added: tuple[Message, ...] = ()
    notes: tuple[str, ...] = ()


def repair_history(entries: Sequence[tuple[int, Message]]) -> RepairedHistory:
    """The conversation of ``entries`` ((line, message), in file order) in a shape providers accept.

    - messages are ordered by iteration (a stable sort: a valid trace keeps its order);
    - one reply per iteration: a second assistant message of an iteration is dropped, and so is
      an exact duplicate of the message before it;
    - every tool call is followed by exactly one result, right after its reply: a result found
      elsewhere in the same iteration is moved there, a missing one is added as ``interrupted``,
      a result that answers no call of its iteration (or answers it twice) is dropped.

    Raises :class:`ConfigurationError` when there is nothing to continue: no task (a user message at
    iteration 0).
    """
    ordered = sorted(entries, key=lambda entry: entry[1].iteration)
    if not any(m.role == "user" and m.iteration == 0 for _, m in ordered):
        raise ConfigurationError("the trace holds no task (no user message at iteration 0) to resume")
    builder = _Builder(ordered)
    for line, message in ordered:
        if message.role != "tool":
            builder.add(line, message)
    builder.close_calls()
    builder.note_unused()
    return RepairedHistory(tuple(builder.out), tuple(builder.added), tuple(builder.notes))


@dataclass
class _Builder:
    """The walk of :func:`repair_history`: non-tool messages in order, each reply's results after it."""

    entries: Sequence[tuple[int, Message]]
    out: list[Message] = field(default_factory=list)
    added: list[Message] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    results: dict[tuple[int, str], deque[tuple[int, Message]]] = field(default_factory=dict)
    used: set[int] = field(default_factory=set)
    open_calls: tuple[ToolCall, ...] = ()
    open_iteration: int = 0
    replies: dict[int, int] = field(default_factory=dict)  # iteration -> line of its reply
    last: tuple[int, Message] | None = None

    def __post_init__(self) -> None:
        results: defaultdict[tuple[int, str], deque[tuple[int, Message]]] = defaultdict(deque)
        for line, message in self.entries:
            if message.role == "tool":
                results[(message.iteration, message.tool_call_id or "")].append((line, message))
        self.results = dict(results)

    def add(self, line: int, message: Message) -> None:
        self.close_calls()
        if self.last is not None and message == self.last[1]:
            self.notes.append(f"line {line}: dropped, a duplicate of line {self.last[0]}")
            return
        if message.role == "assistant":
            first = self.replies.get(message.iteration)
            if first is not None:
                self.notes.append(
                    f"line {line}: dropped, a second reply for iteration {message.iteration} "
                    f"(line {first} has the first)"
                )
                return
            self.replies[message.iteration] = line
            self.open_calls, self.open_iteration = message.tool_calls, message.iteration
        self.out.append(message)
        self.last = (line, message)

    def close_calls(self) -> None:
        """Place the result of each call of the last reply (moved if found elsewhere, else added)."""
        for call in self.open_calls:
            found = self.results.get((self.open_iteration, call.id))
            if found:
                line, result = found.popleft()
                self.used.add(line)
                self.out.append(result)
                continue
            missing = Message(
                "tool", INTERRUPTED, tool_call_id=call.id, name=call.name, iteration=self.open_iteration
            )
            self.out.append(missing)
            self.added.append(missing)
        self.open_calls = ()

    def note_unused(self) -> None:
        unused = sorted(
            (line, message)
            for queue in self.results.values()
            for line, message in queue
            if line not in self.used
        )
        for line, message in unused:
            self.notes.append(
                f"line {line}: dropped, a result for call {message.tool_call_id!r} that no call of "
                f"iteration {message.iteration} is waiting for"
            )
        moved = self._moved_results()
        self.notes.extend(f"line {line}: moved after the call it answers" for line in moved)

    def _moved_results(self) -> list[int]:
        """Lines of results the file had before the reply they answer (now placed after it)."""
        iterations = {line: m.iteration for line, m in self.entries if line in self.used}
        return sorted(line for line, it in iterations.items() if line < self.replies.get(it, 0))


@dataclass(frozen=True, slots=True)
class ResumeState:
    """What a resumed run starts from: the repaired history and what the trace recorded of the run.

    ``appended`` are the messages the trace does not hold yet (results the repair added, the
    follow-up): the run writes them first. ``records``: the summaries and prompt records that fit
    the history, which the context steps continue from. ``notes`` say what reading and repairing
    changed.
    """

    path: Path
    task: str
    history: tuple[Message, ...]
    appended: tuple[Message, ...]
    records: tuple[Event, ...] = ()
    notes: tuple[str, ...] = ()

    @classmethod
    def load(cls, path: Path, follow_up: str | None) -> ResumeState:
        """Read ``path`` (skipping lines with a reason), repair its history and check it can go on.

        Raises :class:`ConfigurationError` (``TraceFormatError`` when it cannot be read at all) in
        one sentence when there is nothing to continue, or the run answered and ``follow_up`` is
        missing.
        """
        scan = scan_trace(path)
        started = next((e for e in scan.events if isinstance(e, RunStarted)), None)
        entries = [
            (scan.line_of(i), e.message) for i, e in enumerate(scan.events) if isinstance(e, MessageEvent)
        ]
        if started is None or len(entries) < 2:
            raise ConfigurationError(f"{path}: not a tiered-agent run trace (no run_start or no messages)")
        try:
            repaired = repair_history(entries)
        except ConfigurationError as exc:
            raise ConfigurationError(f"{path}: {exc}") from None
        history = list(repaired.messages)
        appended = list(repaired.added)
        last = history[-1]
        if follow_up:
            message = Message("user", follow_up, iteration=last.iteration)
            history.append(message)
            appended.append(message)
        elif last.role == "assistant":
            raise ConfigurationError(
                f"{path}: the run already answered; pass follow_up (--follow-up) to continue it"
            )
        newest = max(m.iteration for m in history)
        records, record_notes = _records(scan, newest)
        notes = (*(str(s) for s in scan.skipped), *repaired.notes, *record_notes)
        return cls(path, started.task, tuple(history), tuple(appended), records, notes)


def _records(scan: TraceScan, newest: int) -> tuple[tuple[Event, ...], list[str]]:
    """The summaries and prompt records the context steps may continue from: a summary of
    iterations this history holds, a prompt record whose aging epoch fits the history and never
    goes back; each one left out gets a note naming its line."""
    kept: list[Event] = []
    notes: list[str] = []
    previous = (0, 0, 0)
    for index, event in enumerate(scan.events):
        if isinstance(event, SummaryEvent):
            if 1 <= event.first_iteration <= event.last_iteration <= newest:
                kept.append(event)
            else:
                notes.append(
                    f"line {scan.line_of(index)}: summary of iterations {event.first_iteration}-"
                    f"{event.last_iteration} ignored, the history has iterations 1-{newest}"
                )
        elif isinstance(event, ModelRequest):
            try:
                epoch = _epoch(event, newest)
            except ValueError:
                epoch = None
            else:
                if epoch is None:  # no aging record in it
                    kept.append(event)
                    continue
            if epoch is None or not all(a >= b for a, b in zip(epoch, previous, strict=True)):
                notes.append(f"line {scan.line_of(index)}: aging record ignored, it does not fit the history")
                continue
            previous = epoch
            kept.append(event)
    return tuple(kept), notes


def _epoch(event: ModelRequest, newest: int) -> tuple[int, int, int] | None:
    """The aging epoch a prompt record holds (None: it holds none); ValueError for one that cannot
    be read or does not fit a history of iterations 1-``newest``."""
    try:
        aging = ContextRecord.from_dict(event.context).aging
    except (TypeError, ValueError, KeyError, AttributeError) as exc:
        raise ValueError(f"unreadable context record: {exc}") from exc
    if aging is None or aging.epoch is None:
        return None
    at, through, condensed = aging.epoch
    if not (_whole(at) and _whole(through) and _whole(condensed)):
        raise ValueError("an aging epoch of other than whole numbers")
    if not 0 <= condensed <= through <= at <= min(newest, MAX_ITERATION):
        raise ValueError(f"the aging epoch {aging.epoch} does not fit iterations 1-{newest}")
    return at, through, condensed


def _whole(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def describe_notes(notes: Sequence[str], limit: int = MAX_LISTED_NOTES) -> list[str]:
    """At most ``limit`` notes, then how many more there are."""
    shown = list(notes[:limit])
    if len(notes) > limit:
        shown.append(f"and {len(notes) - limit} more")
    return shown
