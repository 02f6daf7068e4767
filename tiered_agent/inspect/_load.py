"""Read a trace leniently, as raw event dicts: what can be read is shown, the rest is one warning.

:func:`tiered_agent._trace.iter_trace` is strict on purpose (resume and replay
must not guess). An inspector must instead show whatever a trace holds: a torn
last line, a line from another schema version or an unknown event type never
stop it. Events stay plain mappings so that keys added by newer versions (or
missing in older ones) are read defensively by the views, never rejected here.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._errors import TraceFormatError
from .._trace import SCHEMA_VERSION

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
        """Whether the file looks like a tiered_agent trace at all (a run start or a model request)."""
        return any(e.type in ("run_start", "model_request") for e in self.events)


def load_trace(path: Path) -> LoadedTrace:
    """Every parseable JSON-object line of ``path``; problems are summed up in one warning.

    Raises :class:`TraceFormatError` only when the file cannot be read at all.
    """
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read trace ({exc.strerror or exc})") from exc
    events: list[RawEvent] = []
    bad: list[int] = []
    versions: Counter[Any] = Counter()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = orjson.loads(line)
        except orjson.JSONDecodeError:
            bad.append(number)
            continue
        if not isinstance(data, dict):
            bad.append(number)
            continue
        if data.get("v") != SCHEMA_VERSION:
            versions[data.get("v")] += 1
        events.append(RawEvent(number, data))
    return LoadedTrace(path, tuple(events), _warning(path, bad, len(lines), versions))


def _warning(path: Path, bad: list[int], total: int, versions: Counter[Any]) -> str | None:
    problems = []
    if bad == [total]:
        problems.append(f"its last line (line {total}) is torn, probably cut off mid-write, and was skipped")
    elif bad:
        listed = ", ".join(str(n) for n in bad[:_MAX_LISTED_LINES]) + (", ..." if len(bad) > 3 else "")
        problems.append(f"{len(bad)} unreadable line(s) were skipped (line {listed})")
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
