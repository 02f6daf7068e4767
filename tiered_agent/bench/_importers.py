"""Load recorded agent runs from files and folders, whatever their format.

Supported (detected by content, not by file name):

- mini-swe-agent v1 trajectories (``*.traj.json``),
- SWE-agent trajectories (``*.traj``, text or function-calling actions),
- tau-bench historical trajectories (one JSON list of conversations -> one run each),
- the project's own JSONL traces (what :func:`write_run_trace` and the runtime write).

Every run is normalized into a :class:`RecordedRun` (see the per-format modules
``_import_*.py`` for how actions and observations map to messages).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import orjson
import structlog

from .._errors import ConfigurationError, TraceFormatError
from . import _import_miniswe, _import_sweagent, _import_taubench
from ._import_common import ShapeError
from ._import_trace import FORMAT as TRACE_FORMAT
from ._import_trace import load_trace_run, write_run_trace
from ._recorded import RecordedRun

__all__ = ["FORMATS", "TRAJECTORY_SUFFIXES", "load_runs", "write_run_trace"]

FORMATS = (_import_miniswe.FORMAT, _import_sweagent.FORMAT, _import_taubench.FORMAT, TRACE_FORMAT)
TRAJECTORY_SUFFIXES = (".json", ".jsonl", ".traj")
_SKIPPED_STEMS = ("license", "licence", "readme", "sources", "copying", "notice", "stats")
_SKIPPED_NAMES = frozenset({"_results_summary.json", "results_summary.json"})
_EXPECTED = "expected mini-swe-agent, SWE-agent, tau-bench or tiered-agent trace"
log = structlog.get_logger(__name__)

_Converter = Callable[[Any, Path], RecordedRun | list[RecordedRun]]
_DETECTORS: tuple[tuple[str, Callable[[Any], bool], _Converter], ...] = (
    (_import_miniswe.FORMAT, _import_miniswe.matches, _import_miniswe.convert),
    (_import_sweagent.FORMAT, _import_sweagent.matches, _import_sweagent.convert),
    (_import_taubench.FORMAT, _import_taubench.matches, _import_taubench.convert),
)


def load_runs(paths: Sequence[Path | str]) -> list[RecordedRun]:
    """All recorded runs in ``paths`` (files, or folders searched recursively).

    Order is deterministic: paths in the order given, files of a folder sorted,
    tau-bench conversations in file order. In folders, only ``*.json``,
    ``*.jsonl`` and ``*.traj`` files are read; LICENSE, README, SOURCES and
    results-summary files are skipped silently everywhere. A file that is read
    but cannot be converted raises :class:`TraceFormatError` naming it; a path
    that does not exist raises :class:`ConfigurationError`.
    """
    runs: list[RecordedRun] = []
    seen: set[Path] = set()
    for path in map(Path, paths):
        for file in _files(path):
            key = file.resolve()
            if key not in seen:
                seen.add(key)
                runs.extend(load_file(file))
    return runs


def load_file(path: Path) -> list[RecordedRun]:
    """The runs in one file (one, or several for a tau-bench list)."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read ({exc.strerror or exc})") from exc
    if not data.strip():
        raise TraceFormatError(f"{path}: empty file ({_EXPECTED})")
    try:
        doc = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        if _is_trace_event(data.lstrip().split(b"\n", 1)[0]):
            return [load_trace_run(path)]
        raise TraceFormatError(f"{path}: not JSON (line {exc.lineno} col {exc.colno}: {exc.msg})") from exc
    if _is_trace_event_doc(doc):
        return [load_trace_run(path)]
    for fmt, matches, convert in _DETECTORS:
        if matches(doc):
            try:
                converted = convert(doc, path)
            except ShapeError as exc:
                raise TraceFormatError(f"{path}: {fmt}: {exc}") from exc
            return converted if isinstance(converted, list) else [converted]
    raise TraceFormatError(f"{path}: unrecognized format ({_EXPECTED})")


def _files(path: Path) -> list[Path]:
    if path.is_dir():
        return [
            p
            for p in sorted(path.rglob("*"))
            if p.is_file()
            and p.suffix in TRAJECTORY_SUFFIXES
            and not _skipped(p)
            and not any(part.startswith(".") for part in p.relative_to(path).parts)
        ]
    if path.is_file():
        if _skipped(path):
            log.debug("importers.skipped", path=str(path))
            return []
        return [path]
    raise ConfigurationError(f"{path}: no such file or folder (expected recorded runs or traces)")


def _skipped(path: Path) -> bool:
    name = path.name.lower()
    return name in _SKIPPED_NAMES or name.split(".", 1)[0] in _SKIPPED_STEMS


def _is_trace_event_doc(doc: Any) -> bool:
    return isinstance(doc, dict) and "v" in doc and isinstance(doc.get("type"), str)


def _is_trace_event(line: bytes) -> bool:
    try:
        return _is_trace_event_doc(orjson.loads(line))
    except orjson.JSONDecodeError:
        return False
