"""The working memory: a structured, rolling, deterministic summary of the agent's work.

It holds what a person taking over the run would want on one page: the task and
its constraints, the user's later requests, the files read and changed with their
line ranges and the definitions seen in them (a small code map), the test status,
the open errors, the commands run with their exit codes, the actions taken and the
facts looked up (ids, amounts), the agent's decisions and its open todo items.

It is a left fold over the history, one message at a time (:meth:`_Builder.add`),
so a summary of iterations ``1..b`` is the summary of ``1..a`` folded with
``a+1..b``: each :class:`~...pipeline._types.Summary` carries its :class:`Memory`, and the next
one continues from it. Nothing after ``last`` is read; the same input gives the
same text. The state keeps more than the text shows; :mod:`._render` picks
what fits the size bound, dropping the oldest and least relevant entries first and
never the task.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...._messages import Message
from ._calls import CallFacts, call_facts
from ._code import Lines, Touch, merge_ranges
from ._outputs import OutputFacts, Seen, output_facts
from ._text import (
    Todo,
    constraints,
    decision,
    identifiers,
    is_context_block,
    is_feedback,
    latest_todo,
    shorten,
    task_text,
)

__all__ = ["FileNote", "Memory", "TestRun", "fold", "prime"]

_TASK_CHARS = 400
_REQUEST_CHARS = 220
_THOUGHT_CHARS = 200
_FINISH_CHARS = 300
_RESULT_CHARS = 90
_FACT_CHARS = 300
_KEEP = {
    "requests": 40,
    "decisions": 40,
    "commands": 40,
    "tests": 6,
    "errors": 20,
    "actions": 40,
    "facts": 30,
}
_MAX_FILES = 80
_MAX_EDIT_NOTES = 3
_MAX_SEARCH_PATHS = 10  # a search hitting more files than this touches none of them
_STOP = "###STOP###"

Entry = tuple[int, str]  # (iteration, text)


@dataclass(frozen=True, slots=True)
class FileNote:
    """What the work did with one file."""

    path: str
    first: int  # iterations it was first and last touched
    last: int
    read: Lines = ()  # lines shown
    edit_count: int = 0
    edits: tuple[Entry, ...] = ()  # the last few edits, in a few words
    edited: Lines = ()  # lines edited, where the edit said
    written: Entry | None = None  # created or overwritten
    deleted: int | None = None
    defs: tuple[tuple[str, int], ...] = ()  # definitions seen (name, line; 0: unknown)
    searched: bool = False  # only seen in search hits

    @property
    def changed(self) -> bool:
        return self.edit_count > 0 or self.written is not None or self.deleted is not None


@dataclass(frozen=True, slots=True)
class TestRun:
    iteration: int
    label: str
    code: int | None
    summary: str  # "2 failed, 10 passed" ('' when the output had no counts)
    failed: bool
    failures: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Memory:
    """The working memory of iterations ``first..last`` (frozen; see the module docstring)."""

    first: int
    last: int
    task: str = ""
    constraints: tuple[str, ...] = ()
    requests: tuple[Entry, ...] = ()
    files: tuple[FileNote, ...] = ()
    tests: tuple[TestRun, ...] = ()
    errors: tuple[tuple[str, Entry], ...] = ()  # (key, (iteration, text)), oldest first
    commands: tuple[Entry, ...] = ()
    actions: tuple[Entry, ...] = ()
    facts: tuple[tuple[str, Entry], ...] = ()  # (key, (iteration, text)), oldest first
    decisions: tuple[Entry, ...] = ()
    todo: Todo | None = None
    finished: Entry | None = None
    open_file: str | None = None  # SWE-agent's open file
    # Identifiers the agent wrote (in its messages and call arguments), with the last iteration it did.
    mentioned: Mapping[str, int] = field(default_factory=dict)


# --------------------------------------------------------------------------- files
@dataclass
class _File:
    path: str
    first: int
    last: int
    read: list[tuple[int, int]] = field(default_factory=list)
    edit_count: int = 0
    edits: list[Entry] = field(default_factory=list)
    edited: list[tuple[int, int]] = field(default_factory=list)
    written: Entry | None = None
    deleted: int | None = None
    defs: dict[str, int] = field(default_factory=dict)
    searched: bool = True

    @property
    def changed(self) -> bool:
        return self.edit_count > 0 or self.written is not None or self.deleted is not None

    @classmethod
    def thaw(cls, note: FileNote) -> _File:
        return cls(
            note.path, note.first, note.last, list(note.read), note.edit_count, list(note.edits),
            list(note.edited), note.written, note.deleted, dict(note.defs), note.searched,
        )  # fmt: skip

    def freeze(self) -> FileNote:
        return FileNote(
            self.path, self.first, self.last, merge_ranges(self.read), self.edit_count, tuple(self.edits),
            merge_ranges(self.edited), self.written, self.deleted, tuple(self.defs.items()), self.searched,
        )  # fmt: skip

    def touch(self, touch: Touch, iteration: int, edited_line: int | None) -> None:
        self.last = iteration
        self.searched = False
        if touch.kind == "read":
            self.read.extend(touch.lines)
        elif touch.kind == "written":
            self.written, self.deleted = (iteration, touch.note), None
            self.defs = dict(touch.defs)
        elif touch.kind == "edited":
            self.edit_count += 1
            self.edits = [*self.edits, (iteration, touch.note)][-_MAX_EDIT_NOTES:]
            self.edited.extend(touch.lines)
            if edited_line is not None:
                self.edited.append((edited_line, edited_line))
        elif touch.kind == "deleted":
            self.deleted = iteration

    def show(self, seen: Seen, iteration: int, searched: bool) -> None:
        self.last = iteration
        self.searched = self.searched and searched
        self.read.extend(seen.lines)
        for name, line in seen.defs:
            self.defs.pop(name, None)  # the latest sighting last
            self.defs[name] = line


# --------------------------------------------------------------------------- the fold
class _Builder:
    """The mutable working memory while messages are folded in."""

    def __init__(self, memory: Memory) -> None:
        self.memory = memory
        self.first, self.last = memory.first, memory.last
        self.task = memory.task
        self.constraints = memory.constraints
        self.requests = list(memory.requests)
        # A file's note is thawed when this fold first touches it: the others are frozen again as they were.
        self.files: dict[str, _File | FileNote] = {note.path: note for note in memory.files}
        self.tests = list(memory.tests)
        self.errors = dict(memory.errors)
        self.commands = list(memory.commands)
        self.actions = list(memory.actions)
        self.facts = dict(memory.facts)
        self.decisions = list(memory.decisions)
        self.todo = memory.todo
        self.finished = memory.finished
        self.open_file = memory.open_file
        self.mentioned = dict(memory.mentioned)
        self.calls: dict[str, CallFacts] = {}

    # ------------------------------------------------------------------ messages
    def add(self, message: Message) -> None:
        if message.role == "user":
            self._user(message)
        elif message.role == "assistant":
            self._assistant(message)
        elif message.role == "tool":
            self._tool(message)

    def _user(self, message: Message) -> None:
        text = message.text.replace(_STOP, "").strip()
        if not text:
            return
        if message.iteration == 0:
            if not self.task and not is_context_block(text):
                self.task = shorten(task_text(text), _TASK_CHARS)
                self.constraints = constraints(text)
        elif not is_feedback(text):
            self.requests.append((message.iteration, shorten(text, _REQUEST_CHARS)))

    def _assistant(self, message: Message) -> None:
        it = message.iteration
        self._mention(message.text, it)
        found = decision(message.text) if message.text.strip() else None
        if found:
            self.decisions.append((it, found))
        todo = latest_todo([message.text]) if "[" in message.text else None
        if todo is not None:
            self.todo = todo
        for call in message.tool_calls:
            facts = call_facts(call)
            self.calls[call.id] = facts
            self._mention(call.arguments, it)
            self._call(facts, it)

    def _mention(self, text: str, it: int) -> None:
        self.mentioned.update(dict.fromkeys(identifiers(text), it))

    def _call(self, facts: CallFacts, it: int) -> None:
        if facts.kind == "think" and facts.text.strip():
            self.decisions.append((it, decision(facts.text) or shorten(facts.text, _THOUGHT_CHARS)))
        elif facts.kind == "finish":
            self.finished = (
                it,
                shorten(f"{facts.name}: {facts.text}" if facts.text else facts.name, _FINISH_CHARS),
            )
        if facts.todo is not None:
            self.todo = facts.todo

    def _tool(self, message: Message) -> None:
        call = self.calls.get(message.tool_call_id or "")
        if call is None:
            call = CallFacts(
                message.tool_call_id or "", message.name or "tool", "lookup", message.name or "tool"
            )
        if call.kind == "retrieve":
            return  # old content brought back: not news
        out = output_facts(call, message)
        if out.todo is not None and call.kind in ("shell", "plan", "think", "lookup"):
            self.todo = out.todo
        handler = _HANDLERS.get(call.kind, _Builder._lookup)
        handler(self, call, out, message.iteration)

    # ------------------------------------------------------------------ by kind
    def _shell(self, call: CallFacts, out: OutputFacts, it: int) -> None:
        self._files(call, out, it)
        if call.test or out.test is not None:
            self._test(call, out, it)
        elif out.failed:
            if out.error or not call.quiet:  # a search that found nothing (exit 1, no output) is no error
                self._error(call.label, it, _result(call.label, out))
            return
        elif not call.quiet:
            self.commands.append((it, _result(call.label, out)))
        self.errors.pop(call.label, None)  # the same command now succeeds

    def _test(self, call: CallFacts, out: OutputFacts, it: int) -> None:
        test = out.test
        failed = test.failed if test is not None else out.failed
        summary = test.summary if test is not None else (out.error if out.failed else out.outcome)
        failures = test.failures if test is not None else ()
        self.tests.append(TestRun(it, call.label, out.code, summary, failed, failures))
        if not failed:  # a passing run resolves the failures of earlier test runs
            self.errors = {k: v for k, v in self.errors.items() if not k.startswith("test:")}
        elif out.error:
            self._error(f"test:{call.label}", it, _result(call.label, out))

    def _file(self, call: CallFacts, out: OutputFacts, it: int) -> None:
        key = f"{call.label}"
        if out.failed and out.error:
            self._error(key, it, f"{call.label}: {out.error}")
            return
        self.errors.pop(key, None)
        self._files(call, out, it)

    def _search(self, call: CallFacts, out: OutputFacts, it: int) -> None:
        if len(out.seen) <= _MAX_SEARCH_PATHS:
            for seen in out.seen:
                self._file_of(seen.path, it).show(seen, it, searched=True)

    def _lookup(self, call: CallFacts, out: OutputFacts, it: int) -> None:
        if out.failed and out.error:
            self._error(call.label, it, f"{call.label}: {out.error}")
        elif out.compact:
            self.facts.pop(call.label, None)
            self.facts[call.label] = (it, shorten(f"{call.label}: {out.compact}", _FACT_CHARS))

    def _action(self, call: CallFacts, out: OutputFacts, it: int) -> None:
        result = shorten(out.error if out.failed and out.error else out.compact, _RESULT_CHARS)
        self.actions.append((it, f"{call.label} -> {result}" if result else call.label))

    def _ignore(self, call: CallFacts, out: OutputFacts, it: int) -> None:
        if out.failed and out.error:
            self._error(call.label, it, f"{call.label}: {out.error}")

    # ------------------------------------------------------------------ helpers
    def _error(self, key: str, it: int, text: str) -> None:
        self.errors.pop(key, None)
        self.errors[key] = (it, text)

    def _files(self, call: CallFacts, out: OutputFacts, it: int) -> None:
        if out.open_file:
            self.open_file = out.open_file
        for touch in call.touches:
            path = touch.path or self.open_file or ""
            # A failed command may still have written (``cat <<EOF > f && python f``); a read it
            # reports as failed showed nothing.
            if path and not (out.failed and touch.kind == "read"):
                self._file_of(path, it).touch(touch, it, out.edited_line)
        for seen in out.seen:
            self._file_of(seen.path, it).show(seen, it, searched=False)

    def _file_of(self, path: str, it: int) -> _File:
        files = self.files
        key = _canonical(path, files)
        found = files.get(key)
        if found is None:
            found = files[key] = _File(key, it, it)
        elif isinstance(found, FileNote):  # first touched in this fold
            found = files[key] = _File.thaw(found)
        return found

    # ------------------------------------------------------------------ result
    def freeze(self, first: int, last: int) -> Memory:
        files = sorted(self.files.values(), key=lambda f: (not f.changed, -f.last, f.path))
        return Memory(
            first=first,
            last=last,
            task=self.task,
            constraints=self.constraints,
            requests=tuple(self.requests[-_KEEP["requests"] :]),
            files=tuple(f.freeze() if isinstance(f, _File) else f for f in files[:_MAX_FILES]),
            tests=tuple(self.tests[-_KEEP["tests"] :]),
            errors=tuple(list(self.errors.items())[-_KEEP["errors"] :]),
            commands=tuple(self.commands[-_KEEP["commands"] :]),
            actions=tuple(self.actions[-_KEEP["actions"] :]),
            facts=tuple(list(self.facts.items())[-_KEEP["facts"] :]),
            decisions=tuple(self.decisions[-_KEEP["decisions"] :]),
            todo=self.todo,
            finished=self.finished,
            open_file=self.open_file,
            mentioned=dict(self.mentioned),
        )


_HANDLERS: dict[str, Any] = {
    "shell": _Builder._shell,
    "file": _Builder._file,
    "search": _Builder._search,
    "lookup": _Builder._lookup,
    "action": _Builder._action,
    "listing": _Builder._ignore,
    "think": _Builder._ignore,
    "plan": _Builder._ignore,
    "finish": _Builder._ignore,
}


def _result(label: str, out: OutputFacts) -> str:
    status = f"exit {out.code}" if out.code is not None else ("error" if out.failed else "ok")
    detail = out.error if out.failed else out.outcome
    return f"{label} -> {status}: {detail}" if detail else f"{label} -> {status}"


def _canonical(path: str, files: Mapping[str, object]) -> str:
    """The key a path is filed under: ``./a.py`` is ``a.py``, and ``/repo/src/a.py`` is ``src/a.py``
    when that was seen first (and the other way round)."""
    path = path.strip().removeprefix("./").rstrip("/") or path
    if path in files:
        return path
    for key in files:
        if path.endswith("/" + key) or key.endswith("/" + path):
            return key
    return path


def fold(memory: Memory | None, messages: Sequence[Message], first: int, last: int) -> Memory:
    """``memory`` (None: an empty one) with iterations ``first..last`` of ``messages`` folded in.

    Iteration 0 (the task) is read when the memory has no task yet.
    """
    base = memory if memory is not None else Memory(first, last)
    builder = _Builder(base)
    for message in messages:
        it = message.iteration
        if first <= it <= last or (it == 0 and not builder.task and message.role == "user"):
            builder.add(message)
    return builder.freeze(min(base.first, first), last)


def prime(messages: Sequence[Message]) -> None:
    """Parse the calls and outputs among ``messages`` now (memoized), for a later :func:`fold`."""
    calls: dict[str, CallFacts] = {}
    for message in messages:
        for call in message.tool_calls:
            calls[call.id] = call_facts(call)
        if message.role == "tool" and message.tool_call_id in calls:
            output_facts(calls[message.tool_call_id], message)
