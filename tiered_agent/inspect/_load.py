"""Read a trace leniently, as raw event dicts: what can be read is shown, the rest is one warning.

:func:`tiered_agent._trace.iter_trace` is strict on purpose (replay must not guess).
An inspector must instead show whatever a trace holds: a torn last line, a line
from another schema version or an unknown event type never stop it. Events stay
plain mappings so that keys added by newer versions (or missing in older ones)
are read defensively by the views, never rejected here. An event of this schema
version and a known type is checked with the trace reader's own rules
(:func:`~tiered_agent._trace.check_event_fields`; missing keys are allowed): one
whose fields have the wrong shape is skipped with its reason, so no view meets a
message that is a string or tool calls that are not a list. The file is read
through the trace reader's line reader: a FIFO or a device is refused in one
sentence, and a line too long to be an event is skipped unread.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._messages import Usage
from .._trace import (
    SCHEMA_VERSION,
    SkippedLine,
    check_event_fields,
    is_event_type,
    overlong,
    parse_object,
    trace_lines,
)

__all__ = ["LoadedTrace", "RawEvent", "find_traces", "load_trace"]

_MAX_LISTED_LINES = 3


@dataclass(frozen=True, slots=True)
class RawEvent:
    """One event as written (``data["type"]`` is its type) and its 1-based line in the file."""

    line: int
    data: Mapping[str, Any]

    @property
    def type(self) -> str:
        kind = self.data.get("type")
        return kind if isinstance(kind, str) else ""


@dataclass(frozen=True, slots=True)
class LoadedTrace:
    """The readable events of one trace file and, at most, one warning about the rest."""

    path: Path
    events: tuple[RawEvent, ...]
    warning: str | None = None

    @property
    def is_trace(self) -> bool:
        """Whether the file looks like a tiered_agent trace at all: a run start, a model request, or
        an event of a type the runtime writes under a schema version (a trace whose ``run_start``
        line is unreadable is still one: what can be read is shown, the warning names that line
        and why)."""
        return any(
            e.type in ("run_start", "model_request") or ("v" in e.data and is_event_type(e.type))
            for e in self.events
        )


def load_trace(path: Path) -> LoadedTrace:
    """Every readable JSON-object line of ``path``; problems are summed up in one warning.

    Raises :class:`TraceFormatError` only when the file cannot be read at all (it does not exist,
    it is a FIFO or a device, it cannot be opened).
    """
    events: list[RawEvent] = []
    bad: list[SkippedLine] = []
    invalid: list[SkippedLine] = []
    versions: Counter[Any] = Counter()
    total = 0
    for number, line in trace_lines(path):
        total = number
        if line is None:
            invalid.append(overlong(number))
            continue
        if not line.strip():
            continue
        try:
            data = parse_object(line)
        except ValueError as exc:
            bad.append(SkippedLine(number, str(exc)))
            continue
        if data.get("v") != SCHEMA_VERSION:
            versions[_hashable(data.get("v"))] += 1
        else:
            problem = _shape_problem(data)
            if problem is not None:
                invalid.append(SkippedLine(number, problem))
                continue
            data = _with_clean_usage(data)
        events.append(RawEvent(number, data))
    return LoadedTrace(path, tuple(events), _warning(path, bad, total, versions, invalid))


def _shape_problem(data: Mapping[str, Any]) -> str | None:
    """Why an event of a known type cannot be shown: a field it holds has the wrong shape (a
    missing field is no problem here; the views read every key defensively)."""
    try:
        check_event_fields(data)
    except ValueError as exc:
        return str(exc)
    return None


def _with_clean_usage(data: dict[str, Any]) -> dict[str, Any]:
    """The event with its usage read as the runtime reads it: a negative or odd count is missing
    (:meth:`Usage.from_dict`), so no total the views add up can turn negative."""
    usage = data.get("usage")
    if not isinstance(usage, Mapping):
        return data
    return {**data, "usage": dataclasses.asdict(Usage.from_dict(usage))}


def _hashable(value: Any) -> Any:
    return value if isinstance(value, str | int | float | bool | None) else repr(value)[:40]


def _warning(
    path: Path, bad: list[SkippedLine], total: int, versions: Counter[Any], invalid: list[SkippedLine]
) -> str | None:
    """One sentence for everything not shown; each unreadable line (the first three) with its reason."""
    problems = []
    if [b.line for b in bad] == [total]:
        problems.append(f"its last line (line {total}) is torn, probably cut off mid-write, and was skipped")
    elif bad:
        listed = "; ".join(str(s) for s in bad[:_MAX_LISTED_LINES]) + ("; ..." if len(bad) > 3 else "")
        problems.append(f"{len(bad)} unreadable line(s) were skipped ({listed})")
    if invalid:
        listed = "; ".join(str(s) for s in invalid[:_MAX_LISTED_LINES])
        more = ", ..." if len(invalid) > _MAX_LISTED_LINES else ""
        problems.append(f"{len(invalid)} event(s) with a wrong shape were skipped ({listed}{more})")
    if versions:
        found = ", ".join(f"{v!r}" for v in sorted(versions, key=repr))
        problems.append(
            f"{sum(versions.values())} event(s) have schema version {found}, not {SCHEMA_VERSION}; "
            "shown as far as they can be read"
        )
    return f"{path}: {'; '.join(problems)}." if problems else None


def find_traces(paths: list[Path]) -> list[Path]:
    """Trace files from files and folders (folders: every ``*.jsonl`` below them, sorted)."""
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            found.extend(sorted(p for p in path.rglob("*.jsonl") if p.is_file()))
        else:
            found.append(path)
    return list(dict.fromkeys(found))
