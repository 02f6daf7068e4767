"""Load recorded agent runs from files and folders, whatever their format.

Supported (detected by content, not by file name):

- mini-swe-agent v1 trajectories (``*.traj.json``),
- SWE-agent trajectories (``*.traj``, text or function-calling actions),
- tau-bench historical trajectories (one JSON list of conversations -> one run each),
- OpenHands software-agent-SDK event lists (one JSON list of events), or a persisted
  conversation's ``events/`` folder (one ``event-*.json`` file per event),
- Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``, subagents too),
- Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``, older flat ones too),
- the project's own JSONL traces (what :func:`write_run_trace` and the runtime write).

Every run is normalized into a :class:`RecordedRun` (see the per-format modules
``_import_*.py`` for how actions and observations map to messages).

A file that cannot be read, is not a recorded run, or cannot be converted is
skipped with one warning and listed in :attr:`LoadedRuns.skipped`, and so is a
run without any model call; ``strict=True`` turns any of them into an error.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
import structlog

from .._errors import ConfigurationError, TraceFormatError
from .._files import describe_mode
from . import (
    _import_claude,
    _import_codex,
    _import_miniswe,
    _import_openhands,
    _import_sweagent,
    _import_taubench,
)
from ._import_common import ShapeError
from ._import_trace import FORMAT as TRACE_FORMAT
from ._import_trace import load_trace_run, write_run_trace
from ._recorded import RecordedRun

__all__ = [
    "FORMATS",
    "TRAJECTORY_SUFFIXES",
    "LoadedRuns",
    "SkippedInput",
    "load_file",
    "load_runs",
    "write_run_trace",
]

FORMATS = (
    _import_miniswe.FORMAT,
    _import_sweagent.FORMAT,
    _import_taubench.FORMAT,
    _import_openhands.FORMAT,
    _import_claude.FORMAT,
    _import_codex.FORMAT,
    TRACE_FORMAT,
)
TRAJECTORY_SUFFIXES = (".json", ".jsonl", ".traj")
_SKIPPED_STEMS = ("license", "licence", "readme", "sources", "copying", "notice", "stats")
# Files next to recorded runs that hold none: result summaries, Claude Code's per-project session index.
# OpenHands' conversation state (next to its events/ folder).
_SKIPPED_NAMES = frozenset(
    {"_results_summary.json", "results_summary.json", "sessions-index.json", "base_state.json"}
)
_EXPECTED = (
    "expected mini-swe-agent, SWE-agent, tau-bench, OpenHands, Claude Code, Codex or tiered-agent trace"
)
NO_STEPS = "no model calls (0 steps)"
T = TypeVar("T")
log = structlog.get_logger(__name__)

_Converted = RecordedRun | list[RecordedRun]
_Detector = tuple[str, Callable[[Any], bool], Callable[[Any, Path], _Converted]]
_DOC_DETECTORS: tuple[_Detector, ...] = (
    (_import_miniswe.FORMAT, _import_miniswe.matches, _import_miniswe.convert),
    (_import_sweagent.FORMAT, _import_sweagent.matches, _import_sweagent.convert),
    (_import_taubench.FORMAT, _import_taubench.matches, _import_taubench.convert),
    (_import_openhands.FORMAT, _import_openhands.matches, _import_openhands.convert),
)
# Formats whose files are JSON lines: detected on the list of records.
_LINE_DETECTORS: tuple[_Detector, ...] = (
    (_import_claude.FORMAT, _import_claude.matches, _import_claude.convert),
    (_import_codex.FORMAT, _import_codex.matches, _import_codex.convert),
)


@dataclass(frozen=True, slots=True)
class SkippedInput:
    """A file (or one run of a file: ``path#run``) that was not replayed, and why."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class LoadedRuns:
    """What :func:`load_runs` found: the runs, and the inputs it skipped (sorted by path)."""

    runs: tuple[RecordedRun, ...]
    skipped: tuple[SkippedInput, ...] = ()


class _Unreadable(Exception):
    """One file's problem, without the path (the reason of a :class:`SkippedInput`)."""


def load_runs(paths: Sequence[Path | str], *, strict: bool = False) -> LoadedRuns:
    """All recorded runs in ``paths`` (files, or folders searched recursively).

    Order is deterministic: paths in the order given, files of a folder sorted,
    the runs of one file in file order. In folders, only ``*.json``, ``*.jsonl``
    and ``*.traj`` files are read, and folders whose name starts with a dot
    (below the given path) are not entered; LICENSE, README, SOURCES, results
    summaries and Claude Code's ``sessions-index.json`` are skipped silently
    everywhere. A file that cannot be read or converted, and a run without any
    model call, is skipped with one structlog warning (``importers.skipped``)
    and listed in the result's ``skipped``; with ``strict=True`` they raise one
    :class:`TraceFormatError` instead. A path that does not exist raises
    :class:`ConfigurationError`.
    """
    runs: list[RecordedRun] = []
    skipped: list[SkippedInput] = []
    seen: set[Path] = set()
    for path in map(Path, paths):
        for file in _files(path):
            key = file.resolve()
            if key in seen:
                continue
            seen.add(key)
            try:
                loaded = _load(file)
            except _Unreadable as exc:
                skipped.append(SkippedInput(str(file), str(exc)))
                continue
            for run in loaded:
                if run.steps:
                    runs.append(run)
                else:
                    skipped.append(SkippedInput(run.source, NO_STEPS))
    skipped.sort(key=lambda s: (s.path, s.reason))
    if strict and skipped:
        raise TraceFormatError(_strict_message(skipped))
    for entry in skipped:
        log.warning("importers.skipped", path=entry.path, reason=entry.reason)
    return LoadedRuns(tuple(runs), tuple(skipped))


def _strict_message(skipped: Sequence[SkippedInput]) -> str:
    first = skipped[0]
    more = len(skipped) - 1
    inputs = "input that cannot be replayed" if more == 1 else "inputs that cannot be replayed"
    more_text = f" (and {more} more {inputs})" if more else ""
    return f"{first.path}: {first.reason}{more_text}"


def load_file(path: Path) -> list[RecordedRun]:
    """The runs in one file (one, or several for a tau-bench list or a Claude Code session with subagents).

    Raises :class:`TraceFormatError` naming the file and the problem.
    """
    try:
        return _load(path)
    except _Unreadable as exc:
        raise TraceFormatError(f"{path}: {exc}") from None


def _load(path: Path) -> list[RecordedRun]:
    if path.is_dir():  # an OpenHands conversation's events/ folder
        return _converted(_import_openhands.FORMAT, _import_openhands.convert_folder, path, path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise _Unreadable(f"cannot read ({exc.strerror or exc})") from None
    if not data.strip():
        raise _Unreadable(f"empty file ({_EXPECTED})")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if _is_trace_event_doc(_first_line(data)):
            return [_trace(path)]
        return _convert_records(_json_lines(data, exc), path)
    if _is_trace_event_doc(doc):
        return [_trace(path)]
    for fmt, matches, convert in _DOC_DETECTORS:
        if matches(doc):
            return _converted(fmt, convert, doc, path)
    if isinstance(doc, dict):  # a one-line JSONL file
        return _convert_records([doc], path)
    raise _Unreadable(f"unrecognized format ({_EXPECTED})")


def _convert_records(records: list[Any], path: Path) -> list[RecordedRun]:
    for fmt, matches, convert in _LINE_DETECTORS:
        if matches(records):
            return _converted(fmt, convert, records, path)
    raise _Unreadable(f"unrecognized format ({_EXPECTED})")


def _converted(fmt: str, convert: Callable[[T, Path], _Converted], doc: T, path: Path) -> list[RecordedRun]:
    try:
        converted = convert(doc, path)
    except ShapeError as exc:
        raise _Unreadable(f"{fmt}: {exc}") from None
    return converted if isinstance(converted, list) else [converted]


def _trace(path: Path) -> RecordedRun:
    try:
        return load_trace_run(path)
    except TraceFormatError as exc:
        message = str(exc)
        rest = message.removeprefix(f"{path}:").lstrip() if message.startswith(f"{path}:") else message
        raise _Unreadable(f"line {rest}" if rest[:1].isdigit() else rest) from None


def _first_line(data: bytes) -> Any:
    try:
        return orjson.loads(data.lstrip().split(b"\n", 1)[0])
    except orjson.JSONDecodeError:
        return None


def _json_lines(data: bytes, whole: orjson.JSONDecodeError) -> list[Any]:
    """The records of a JSON-lines file; the whole-document error when the first line is not JSON either.

    A torn last line (no final newline: a log still being written) is dropped with a warning.
    """
    lines = [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    records: list[Any] = []
    for index, (number, line) in enumerate(lines):
        try:
            records.append(orjson.loads(line))
        except orjson.JSONDecodeError as exc:
            if index == 0:
                raise _Unreadable(f"not JSON (line {whole.lineno} col {whole.colno}: {whole.msg})") from None
            if index == len(lines) - 1 and not data.rstrip(b" \t\r").endswith(b"\n"):
                log.warning("importers.torn_last_line", line=number)
                continue
            raise _Unreadable(f"not JSON (line {number}: {exc.msg})") from None
    return records


def _files(path: Path) -> list[Path]:
    """The inputs under ``path``: files, and OpenHands ``events/`` folders (one run each)."""
    if path.is_dir():
        files = [
            p
            for p in sorted(path.rglob("*"))
            if p.is_file()
            and p.suffix in TRAJECTORY_SUFFIXES
            and not _skipped(p)
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        ]
        inputs = (p.parent if _import_openhands.is_event_file(p) else p for p in files)
        return list(dict.fromkeys(inputs))
    if path.is_file():
        if _skipped(path):
            log.debug("importers.not_a_run", path=str(path))
            return []
        return [path]
    if path.exists():  # a FIFO or a device: refused before anything opens it (it could block or never end)
        kind = describe_mode(path.stat().st_mode)
        raise ConfigurationError(f"{path}: {kind}, not a file or folder of recorded runs or traces")
    raise ConfigurationError(f"{path}: no such file or folder (expected recorded runs or traces)")


def _skipped(path: Path) -> bool:
    name = path.name.lower()
    return name in _SKIPPED_NAMES or name.split(".", 1)[0] in _SKIPPED_STEMS


def _is_trace_event_doc(doc: Any) -> bool:
    return isinstance(doc, dict) and "v" in doc and isinstance(doc.get("type"), str)
