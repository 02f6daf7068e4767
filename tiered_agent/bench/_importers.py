"""Load recorded agent runs from files and folders, whatever their format.

Supported (detected by content, not by file name):

- mini-swe-agent v1 trajectories (``*.traj.json``),
- SWE-agent trajectories (``*.traj``, text or function-calling actions),
- tau-bench historical trajectories (one JSON list of conversations -> one run each), tau2-bench
  results (``simulations`` -> one run each, or one simulation per file),
- OpenHands software-agent-SDK event lists (one JSON list of events), or a persisted
  conversation's ``events/`` folder (one ``event-*.json`` file per event); OpenHands V0 histories
  (the evaluation harness's ``output.jsonl``, one run per line, or an exported trajectory),
- Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``, subagents too),
- Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``, older flat ones too),
- the project's own JSONL traces (what :func:`write_run_trace` and the runtime write).

Every run is normalized into a :class:`RecordedRun` (see the per-format modules
``_import_*.py`` for how actions and observations map to messages).

A file that cannot be read, is not a recorded run, or cannot be converted is
skipped with one warning and listed in :attr:`LoadedRuns.skipped`, and so is a
run without any model call; ``strict=True`` turns any of them into an error.

Damaged JSON-lines logs (a line cut short or hand-redacted into invalid JSON,
a line that is JSON but not an object): the line is skipped and counted
(:attr:`LoadedRuns.skipped_lines`, one warning per file) and the rest of the
log is replayed, unless the damage leaves a run's conversation inconsistent (a
tool result whose call was on a skipped line): that run is skipped with the
reason. A torn last line (no final newline: a log still being written) is
counted the same way; ``strict=True`` fails on any other skipped line.

One conversation in two files (Claude Code, Codex: a backup, a history copied on
resume, a fork): every model call is counted once, in the run read first. A run
whose leading calls were read before replays them without counting them
(:attr:`RecordedRun.counted_from`); one all of whose calls were, is skipped with
the reason (``_Copies``).
"""

from __future__ import annotations

import codecs
import dataclasses
import functools
import os
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import orjson
import structlog

from .._errors import ConfigurationError, TraceFormatError
from .._files import describe_mode
from .._messages import Message
from .._trace import parse_json, parse_object
from . import (
    _import_claude,
    _import_codex,
    _import_miniswe,
    _import_openhands,
    _import_openhands_v0,
    _import_sweagent,
    _import_taubench,
)
from ._import_common import ShapeError, SkippedRun
from ._import_steps import damage_note
from ._import_trace import FORMAT as TRACE_FORMAT
from ._import_trace import load_trace_run, write_run_trace
from ._recorded import RecordedRun

__all__ = [
    "FORMATS",
    "TRAJECTORY_SUFFIXES",
    "LoadedRuns",
    "RunReader",
    "SkippedInput",
    "SkippedLines",
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

_Run = RecordedRun | SkippedRun
_Converted = _Run | Sequence[_Run]
_Detector = tuple[str, Callable[[Any], bool], Callable[[Any, Path], _Converted]]
_LineDetector = tuple[
    str,
    Callable[[list[dict[str, Any]]], bool],
    Callable[[list[dict[str, Any]], Path, tuple[int, ...]], _Converted],
]
_DOC_DETECTORS: tuple[_Detector, ...] = (
    (_import_miniswe.FORMAT, _import_miniswe.matches, _import_miniswe.convert),
    (_import_sweagent.FORMAT, _import_sweagent.matches, _import_sweagent.convert),
    (_import_taubench.FORMAT, _import_taubench.matches, _import_taubench.convert),
    (_import_taubench.FORMAT, _import_taubench.matches_tau2, _import_taubench.convert_tau2),
    (_import_openhands.FORMAT, _import_openhands.matches, _import_openhands.convert),
    (_import_openhands.FORMAT, _import_openhands_v0.matches, _import_openhands_v0.convert),
)
# Formats whose files are JSON lines: detected on the list of records; the converter also gets the
# numbers of the lines that were skipped (not JSON objects).
_LINE_DETECTORS: tuple[_LineDetector, ...] = (
    (_import_claude.FORMAT, _import_claude.matches, _import_claude.convert),
    (_import_codex.FORMAT, _import_codex.matches, _import_codex.convert),
    (_import_openhands.FORMAT, _import_openhands_v0.matches_lines, _import_openhands_v0.convert_lines),
)
# Exceptions a converter may raise on JSON of an unexpected shape that its checks did not foresee: the
# file is skipped with the exception named (a bug to report, never a crash of the whole bench).
_UNFORESEEN = (TypeError, ValueError, KeyError, IndexError, AttributeError, RecursionError, OverflowError)


@dataclass(frozen=True, slots=True)
class SkippedInput:
    """A file (or one run of a file: ``path#run``) that was not replayed, and why."""

    path: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"path": self.path, "reason": self.reason}


@dataclass(frozen=True, slots=True)
class SkippedLines:
    """The lines of one JSON-lines file that were not JSON objects and were skipped."""

    path: str
    lines: tuple[int, ...]  # 1-based line numbers
    torn: bool = False  # the last of them is a torn last line (no final newline: still being written)

    @property
    def damaged(self) -> tuple[int, ...]:
        """The skipped lines that are damage (a torn last line is a log still being written)."""
        return self.lines[:-1] if self.torn else self.lines

    def to_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "count": len(self.lines),
            "lines": list(self.lines[:_LINES_LISTED]),
            "torn_last_line": self.torn,
        }


_LINES_LISTED = 20


@dataclass(frozen=True, slots=True)
class LoadedRuns:
    """What :func:`load_runs` found: the runs, the inputs it skipped (sorted by path), and the lines
    it skipped in files whose other lines were read (sorted by path)."""

    runs: tuple[RecordedRun, ...]
    skipped: tuple[SkippedInput, ...] = ()
    skipped_lines: tuple[SkippedLines, ...] = ()


@dataclass(frozen=True, slots=True)
class _Loaded:
    runs: list[_Run]
    damage: SkippedLines | None = None


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
    reader = RunReader(paths, strict=strict)
    runs = tuple(reader)
    return LoadedRuns(runs, reader.skipped, reader.skipped_lines)


class RunReader:
    """The runs of ``paths`` as :func:`load_runs` finds them, one file at a time (a bench of many
    runs never holds them all).

    Iterating yields the runs; once it ends, :attr:`skipped` and :attr:`skipped_lines` hold what
    was skipped (sorted by path), the warnings are logged and ``strict`` raises, exactly as
    :func:`load_runs` does. A path that does not exist raises :class:`ConfigurationError` here.
    """

    def __init__(self, paths: Sequence[Path | str], *, strict: bool = False) -> None:
        self._files = _unique_files(paths)
        self._strict = strict
        self.skipped: tuple[SkippedInput, ...] = ()
        self.skipped_lines: tuple[SkippedLines, ...] = ()

    def __iter__(self) -> Iterator[RecordedRun]:
        skipped: list[SkippedInput] = []
        damaged: list[SkippedLines] = []
        copies = _Copies()
        for file in self._files:
            try:
                loaded = _load(file)
            except _Unreadable as exc:
                skipped.append(SkippedInput(str(file), str(exc)))
                continue
            if loaded.damage is not None:
                damaged.append(loaded.damage)
            for run in loaded.runs:
                kept = copies.check(run) if isinstance(run, RecordedRun) and run.steps else run
                if isinstance(kept, RecordedRun) and kept.steps:
                    yield kept
                else:
                    skipped.append(_skipped_run(run, kept))
        skipped.sort(key=lambda s: (s.path, s.reason))
        damaged.sort(key=lambda d: d.path)
        self.skipped, self.skipped_lines = tuple(skipped), tuple(damaged)
        _check_strict(self._strict, skipped, damaged)
        _warn(skipped, damaged)


def _skipped_run(run: _Run, why: _Run | str) -> SkippedInput:
    """How a run that is not replayed is listed: its converter's reason, no model calls, or a copy."""
    if isinstance(run, SkippedRun):
        return SkippedInput(run.source, run.reason)
    return SkippedInput(run.source, why if isinstance(why, str) else NO_STEPS)


# Formats whose provider draws each call's ids at random (``msg_...``, ``toolu_...``, ``call_...``): the
# same id in two runs is the same call.
_PROVIDER_CALL_IDS = frozenset({_import_claude.FORMAT, _import_codex.FORMAT})


class _Copies:
    """What the runs read so far hold, for one reading: each run's conversation and usage (by hash),
    and the identity of each of its model calls (:func:`call_keys`).

    One conversation often lies in two files: a backup of the logs next to them, the same folder
    given twice, a history an older Claude Code copied into a new file on ``--resume``, a fork that
    copied the history up to a point and went on, a backup taken mid-session, a Codex fork or
    resume that starts a new rollout with the old turns. Every model call is counted once, in the
    run read first (paths in the order given, files sorted: the same in every shard):

    - a run whose messages and usage equal an earlier run's is skipped, naming that run;
    - a run all of whose calls were read before is skipped, naming the runs that hold them;
    - a run whose leading ``K`` calls were read before gets ``counted_from = K``
      (:attr:`RecordedRun.counted_from`): they are replayed, not counted;
    - calls read before anywhere else than in a leading stretch (a run that shares a middle part
      only) cannot be told apart from the run's own without replaying both: they are counted in
      both, with one warning (``importers.shared_calls``).
    """

    def __init__(self) -> None:
        self._runs: dict[int, str] = {}
        self._names: list[str] = []  # the run ids, by the index :attr:`_calls` holds
        self._calls: dict[int, int] = {}  # call identity -> the first run that holds it

    def check(self, run: RecordedRun) -> RecordedRun | str:
        """``run`` as it is replayed (its :attr:`~RecordedRun.counted_from` set), or why it is skipped
        as a copy; a run that is not skipped is remembered."""
        if run.format not in _PROVIDER_CALL_IDS:
            return run
        key = hash((run.messages, run.usage))
        if key in self._runs:
            return f"the same conversation and usage as {self._runs[key]}, which is replayed once"
        self._runs[key] = run.run_id
        keys = call_keys(run)
        known = self._calls
        counted = next((n for n, k in enumerate(keys) if k is None or k not in known), len(keys))
        if counted == len(keys):
            return (
                f"all its {len(keys)} model call{'s' * (len(keys) != 1)} are counted in "
                f"{self._held_by(keys)} (a copy of that history, taken before it went on)"
            )
        later = [k for k in keys[counted:] if k is not None and k in known]
        if later:
            log.warning(
                "importers.shared_calls", run=run.run_id, calls=len(later), also_in=self._held_by(later)
            )
        index = len(self._names)
        self._names.append(run.run_id)
        for k in keys:
            if k is not None:
                known.setdefault(k, index)
        # a trace keeps what the reading that wrote it decided: detection here only adds to it
        counted = max(counted, run.counted_from)
        return run if counted == run.counted_from else dataclasses.replace(run, counted_from=counted)

    def _held_by(self, keys: Sequence[int | None]) -> str:
        """The runs that hold the calls ``keys`` (the first three, by id)."""
        names = sorted({self._names[self._calls[k]] for k in keys if k is not None and k in self._calls})
        more = f" and {len(names) - 3} more" if len(names) > 3 else ""
        return ", ".join(names[:3]) + more


def call_keys(run: RecordedRun) -> list[int | None]:
    """Per model call of ``run``, its identity within one reading (None: none known).

    A call with a provider id (:attr:`RecordedRun.step_ids`) is that id. A call without one (a Codex
    answer without reasoning) is the call before it together with everything since (the results,
    the user's message, the response itself): the same call only where the same provider call
    preceded it and the same messages followed. A call with neither (no identified call before it)
    has none: it is never taken for another run's. Hashes: compared within one process only.
    """
    keys: list[int | None] = []
    anchor: int | None = None
    since: list[Message] = []
    for message in run.messages:
        since.append(message)
        if message.role != "assistant":
            continue
        step_id = run.step_id(len(keys) + 1)
        if step_id is not None:
            anchor = hash(("id", step_id))
        elif anchor is not None:
            anchor = hash((anchor, tuple(since)))
        keys.append(anchor)
        since = []
    return keys


def _unique_files(paths: Sequence[Path | str]) -> list[Path]:
    """The input files of ``paths`` in order, each once (by resolved path)."""
    seen: set[Path] = set()
    out = []
    for path in map(Path, paths):
        for file in _files(path):
            key = Path(os.path.realpath(file))  # Path.resolve raises on a symlink loop
            if key not in seen:
                seen.add(key)
                out.append(file)
    return out


def _warn(skipped: Sequence[SkippedInput], damaged: Sequence[SkippedLines]) -> None:
    for entry in skipped:
        log.warning("importers.skipped", path=entry.path, reason=entry.reason)
    for lines in damaged:
        if lines.damaged:
            log.warning(
                "importers.skipped_lines", path=lines.path, count=len(lines.lines), lines=lines.lines[:5]
            )
        else:  # only a torn last line: a log still being written
            log.info("importers.torn_last_line", path=lines.path, line=lines.lines[-1])


def _check_strict(strict: bool, skipped: Sequence[SkippedInput], damaged: Sequence[SkippedLines]) -> None:
    if not strict:
        return
    broken = [
        SkippedInput(d.path, f"malformed {damage_note(d.damaged)} (not a JSON object)")
        for d in damaged
        if d.damaged
    ]
    if skipped or broken:
        raise TraceFormatError(_strict_message(sorted([*skipped, *broken], key=lambda s: (s.path, s.reason))))


def _strict_message(skipped: Sequence[SkippedInput]) -> str:
    first = skipped[0]
    more = len(skipped) - 1
    inputs = "input that cannot be replayed" if more == 1 else "inputs that cannot be replayed"
    more_text = f" (and {more} more {inputs})" if more else ""
    return f"{first.path}: {first.reason}{more_text}"


def load_file(path: Path) -> list[RecordedRun]:
    """The runs in one file (one, or several for a tau-bench list or a Claude Code session with subagents).

    Raises :class:`TraceFormatError` naming the file and the problem (a run of the file that
    cannot be replayed is left out; :func:`load_runs` lists it).
    """
    try:
        return [r for r in _load(path).runs if isinstance(r, RecordedRun)]
    except _Unreadable as exc:
        raise TraceFormatError(f"{path}: {exc}") from None


def _load(path: Path) -> _Loaded:
    if path.is_dir():  # an OpenHands conversation's events/ folder
        return _Loaded(_converted(_import_openhands.FORMAT, _import_openhands.convert_folder, path, path))
    try:
        data = path.read_bytes().removeprefix(codecs.BOM_UTF8)  # editors on Windows write one
    except OSError as exc:
        raise _Unreadable(f"cannot read ({exc.strerror or exc})") from None
    if not data.strip():
        raise _Unreadable(f"empty file ({_EXPECTED})")
    try:
        doc = parse_json(data)
    except orjson.JSONDecodeError as exc:
        if _is_trace_event_doc(_first_line(data)):
            return _Loaded([_trace(path)])
        return _convert_lines(data, exc, path)
    if _is_trace_event_doc(doc):
        return _Loaded([_trace(path)])
    for fmt, matches, convert in _DOC_DETECTORS:
        if _safe_match(matches, doc):
            return _Loaded(_converted(fmt, convert, doc, path))
    if isinstance(doc, dict):  # a one-line JSONL file
        return _Loaded(_convert_records([doc], path, ()))
    raise _Unreadable(f"unrecognized format ({_EXPECTED})")


def _convert_lines(data: bytes, whole: orjson.JSONDecodeError, path: Path) -> _Loaded:
    records, skipped, torn = _json_lines(data, whole)
    try:
        runs = _convert_records(records, path, tuple(n for n in skipped if not (torn and n == skipped[-1])))
    except _Unreadable as exc:
        if not skipped or not str(exc).startswith("unrecognized format"):
            raise
        # the line that said what the file is may be the one that could not be read: name it
        raise _Unreadable(
            f"{exc}; its line {skipped[0]} is unreadable: {_line_problem(data, skipped[0])}"
        ) from None
    damage = SkippedLines(str(path), tuple(skipped), torn) if skipped else None
    return _Loaded(runs, damage)


def _convert_records(records: list[dict[str, Any]], path: Path, damaged: tuple[int, ...]) -> list[_Run]:
    for fmt, matches, convert in _LINE_DETECTORS:
        if _safe_match(matches, records):
            return _converted(fmt, functools.partial(_with_damage, convert, damaged), records, path)
    raise _Unreadable(f"unrecognized format ({_EXPECTED})")


def _with_damage(
    convert: Callable[[list[dict[str, Any]], Path, tuple[int, ...]], _Converted],
    damaged: tuple[int, ...],
    records: list[dict[str, Any]],
    path: Path,
) -> _Converted:
    return convert(records, path, damaged)


def _safe_match(matches: Callable[[Any], bool], doc: Any) -> bool:
    try:
        return matches(doc)
    except _UNFORESEEN as exc:  # a detector's bug on hostile input: not this format
        log.debug("importers.detector_failed", error=f"{type(exc).__name__}: {exc}")
        return False


def _converted(fmt: str, convert: Callable[[T, Path], _Converted], doc: T, path: Path) -> list[_Run]:
    try:
        converted = convert(doc, path)
    except ShapeError as exc:
        raise _Unreadable(f"{fmt}: {exc}") from None
    except _UNFORESEEN as exc:
        # no traceback: its locals may be a hostile document (rendering one can take minutes)
        log.debug("importers.convert_failed", path=str(path), format=fmt, error=type(exc).__name__)
        raise _Unreadable(f"{fmt}: cannot convert ({type(exc).__name__}: {_short(str(exc))})") from None
    return [converted] if isinstance(converted, RecordedRun | SkippedRun) else list(converted)


def _short(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _trace(path: Path) -> RecordedRun:
    try:
        return load_trace_run(path)
    except TraceFormatError as exc:
        message = str(exc)
        rest = message.removeprefix(f"{path}:").lstrip() if message.startswith(f"{path}:") else message
        raise _Unreadable(f"line {rest}" if rest[:1].isdigit() else rest) from None
    except _UNFORESEEN as exc:  # as _converted: the trace's bug on hostile input skips the file
        error = f"{type(exc).__name__}: {_short(str(exc))}"
        log.debug("importers.convert_failed", path=str(path), format="tiered-agent", error=type(exc).__name__)
        raise _Unreadable(f"tiered-agent: cannot convert ({error})") from None


def _first_line(data: bytes) -> Any:
    """The first line of ``data`` that is JSON (None when none is): a trace whose first line
    (its ``run_start``) is damaged is still a trace, skipped naming that line and why, not a
    file of an unrecognized format."""
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            return parse_json(line)
        except orjson.JSONDecodeError:
            continue
    return None


def _line_problem(data: bytes, number: int) -> str:
    """Why line ``number`` of ``data`` is not a JSON object (as the trace readers say it)."""
    try:
        parse_object(data.split(b"\n")[number - 1])
    except ValueError as exc:
        return str(exc)
    return "not a JSON object"


def _json_lines(data: bytes, whole: orjson.JSONDecodeError) -> tuple[list[dict[str, Any]], list[int], bool]:
    """The objects of a JSON-lines file, the numbers of the lines skipped (not JSON objects), and whether
    the last of those is a torn last line (no final newline: a log still being written).

    The whole-document error when no line is a JSON object (the file is not JSON lines at all).
    """
    lines = [(n, line) for n, line in enumerate(data.split(b"\n"), 1) if line.strip()]
    records: list[dict[str, Any]] = []
    skipped: list[int] = []
    for number, line in lines:
        try:
            record = parse_json(line)
        except orjson.JSONDecodeError:
            record = None
        if isinstance(record, dict):
            records.append(record)
        else:
            skipped.append(number)
    if not records:
        raise _Unreadable(f"not JSON (line {whole.lineno} col {whole.colno}: {whole.msg})")
    torn = bool(skipped) and skipped[-1] == lines[-1][0] and not data.rstrip(b" \t\r").endswith(b"\n")
    return records, skipped, torn


def _files(path: Path) -> list[Path]:
    """The inputs under ``path``: files, and OpenHands ``events/`` folders (one run each)."""
    if path.is_dir():
        files = [
            p
            for p in sorted(path.rglob("*"))
            if (p.is_file() or _dangling(p))
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
    if _dangling(path):
        raise ConfigurationError(f"{path}: a symbolic link to nothing readable (a loop or a missing target)")
    if path.exists():  # a FIFO or a device: refused before anything opens it (it could block or never end)
        kind = describe_mode(path.stat().st_mode)
        raise ConfigurationError(f"{path}: {kind}, not a file or folder of recorded runs or traces")
    raise ConfigurationError(f"{path}: no such file or folder (expected recorded runs or traces)")


def _dangling(path: Path) -> bool:
    """A symbolic link that leads nowhere (a loop, or a target that is gone): listed, so that reading it
    skips it with its reason (``Too many levels of symbolic links``) instead of losing it silently."""
    return path.is_symlink() and not path.exists()


def _skipped(path: Path) -> bool:
    name = path.name.lower()
    return name in _SKIPPED_NAMES or name.split(".", 1)[0] in _SKIPPED_STEMS


def _is_trace_event_doc(doc: Any) -> bool:
    return isinstance(doc, dict) and "v" in doc and isinstance(doc.get("type"), str)
