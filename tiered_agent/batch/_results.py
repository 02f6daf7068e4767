"""The results file of a batch: one JSON line per finished task, appended, fsync'd, never rewritten.

A task that ran again (resumed after an interruption) gets a new line; the last line of an id is its
result. A line cut off by a crash is moved to ``RESULTS.jsonl.torn`` before anything is appended
(never dropped); a line that is not a result (edited by hand) is skipped with a warning, and its
task runs again.
"""

from __future__ import annotations

import fcntl
import math
import os
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson
import structlog

from .._errors import ConfigurationError
from .._files import NotRegularFile, open_regular, open_regular_for_appending
from .._messages import Usage, token_count
from .._trace import move_torn_tail, parse_json, redact

__all__ = ["FINAL", "ResultsFile", "TaskResult", "read_results"]

log = structlog.get_logger(__name__)

# A task that stopped for one of these reasons is done: a rerun skips it. Any other (cancelled,
# error, incomplete) is resumed from its trace by the next run of the batch.
FINAL = frozenset({"answered", "max_iterations", "token_budget"})


@dataclass(frozen=True, slots=True)
class TaskResult:
    """One line of the results file.

    ``usage`` sums every model call of the task's trace (all its segments, when it was resumed);
    ``dollars`` is what the provider's prices make of it (None when no call was priced);
    ``savings`` the share of prompt tokens the context policy saved against the full history
    (local counts: ``sent_tokens`` against ``full_tokens``).
    """

    id: str
    stop_reason: str
    answer: str | None = None
    error: str | None = None
    iterations: int = 0
    usage: Usage = field(default_factory=Usage)
    dollars: float | None = None
    savings: float = 0.0
    sent_tokens: int = 0
    full_tokens: int = 0
    trace: str | None = None
    model: str | None = None
    policy: str | None = None
    segments: int = 0  # runs recorded in the trace: 2 or more when the task was resumed
    finished_at: float = 0.0

    @property
    def final(self) -> bool:
        return self.stop_reason in FINAL

    def to_json(self) -> bytes:
        data = asdict(self)
        data["usage"] = {k: v for k, v in asdict(self.usage).items() if k != "cost"}
        out: bytes = orjson.dumps(redact(data))
        return out

    @classmethod
    def from_json(cls, data: Any) -> TaskResult:
        """A result line read back; ``ValueError`` when it is not one (no string ``id`` and
        ``stop_reason``). A field of the wrong type (edited by hand, damaged) reads as missing, as
        a provider's odd usage does (:meth:`Usage.from_dict`): :func:`odd_fields` names them."""
        if not isinstance(data, Mapping) or not isinstance(data.get("id"), str):
            raise ValueError("not a task result")
        if not isinstance(data.get("stop_reason"), str):
            raise ValueError("no stop reason")
        usage = data.get("usage")
        kept = {k: data[k] for k in cls.__dataclass_fields__ if k in data and k != "usage"}
        fields = {k: v for k, v in kept.items() if _FIELD_CHECKS[k](v)}
        return cls(**fields, usage=Usage.from_dict(usage) if isinstance(usage, Mapping) else Usage())

    @classmethod
    def odd_fields(cls, data: Mapping[str, Any]) -> list[str]:
        """The fields of a result line that :meth:`from_json` reads as missing (their type is wrong)."""
        named = [k for k in cls.__dataclass_fields__ if k in data and k != "usage"]
        odd = [k for k in named if not _FIELD_CHECKS[k](data[k])]
        usage = data.get("usage")
        if usage is not None and not _usage_as_written(usage):
            odd.append("usage")
        return odd


def _usage_as_written(usage: Any) -> bool:
    """Whether a line's usage reads as it stands (every count a whole number a provider could report)."""
    if not isinstance(usage, Mapping):
        return False
    try:
        return Usage.from_dict(usage) == Usage(**usage)
    except TypeError:  # a key Usage does not have
        return False


def _text_or_none(value: Any) -> bool:
    return value is None or isinstance(value, str)


def _whole(value: Any) -> bool:
    return isinstance(value, int) and token_count(value) == value  # a count as the runtime reads one


def _finite(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


_FIELD_CHECKS: dict[str, Callable[[Any], bool]] = {
    "id": lambda v: isinstance(v, str),
    "stop_reason": lambda v: isinstance(v, str),
    "answer": _text_or_none,
    "error": _text_or_none,
    "iterations": _whole,
    "dollars": lambda v: v is None or (_finite(v) and v >= 0),
    "savings": _finite,
    "sent_tokens": _whole,
    "full_tokens": _whole,
    "trace": _text_or_none,
    "model": _text_or_none,
    "policy": _text_or_none,
    "segments": _whole,
    "finished_at": _finite,
}


def _is_result(line: bytes) -> bool:
    try:
        TaskResult.from_json(parse_json(line))
    except ValueError:  # orjson's JSONDecodeError is one
        return False
    return True


def read_results(path: Path) -> dict[str, TaskResult]:
    """The latest result of each task id in ``path`` (empty when the file does not exist)."""
    try:
        with open_regular(path) as handle:  # a FIFO would block the batch
            data = handle.read()
    except FileNotFoundError:
        return {}
    except NotRegularFile as exc:
        raise ConfigurationError(f"{exc}: it cannot be a results file") from None
    except OSError as exc:
        raise ConfigurationError(f"cannot read the results file {path}: {exc.strerror or exc}") from exc
    latest: dict[str, TaskResult] = {}
    lines = data.split(b"\n")
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = parse_json(line)
            result = TaskResult.from_json(data)
        except ValueError as exc:  # orjson's JSONDecodeError is one
            torn = number == len(lines)  # no newline after it: cut off, moved aside on open
            log.warning("batch.result_line_skipped", path=str(path), line=number, torn=torn, error=str(exc))
            continue
        if odd := TaskResult.odd_fields(data):
            log.warning("batch.result_fields_read_as_missing", path=str(path), line=number, fields=odd)
        latest[result.id] = result
    return latest


class ResultsFile:
    """The results file, open for appending. Each :meth:`append` is written and fsync'd at once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None

    def open(self) -> ResultsFile:
        """Open for appending, after moving a torn last line aside. One batch at a time appends to a
        results file (two would resume the same traces): a second one is refused while the first
        holds the file's lock."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            handle = open_regular_for_appending(self.path, create=True, buffered=False)
        except NotRegularFile as exc:
            raise ConfigurationError(f"{exc}: it cannot be a results file") from None
        except OSError as exc:
            reason = exc.strerror or exc
            raise ConfigurationError(f"cannot append to the results file {self.path}: {reason}") from exc
        try:
            fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            handle.close()
            raise ConfigurationError(
                f"another batch is running with the results file {self.path}; wait for it to end"
            ) from None
        try:
            move_torn_tail(self.path, parses=_is_result)
        except OSError as exc:
            handle.close()
            raise ConfigurationError(f"cannot repair the results file {self.path}: {exc}") from exc
        self._file = handle
        return self

    def __enter__(self) -> ResultsFile:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def append(self, result: TaskResult) -> None:
        """Write one line and fsync it: once this returns, the result survives a crash."""
        if self._file is None:
            raise RuntimeError("ResultsFile.append() before open()")
        data = result.to_json() + b"\n"
        size = self._file.seek(0, os.SEEK_END)
        try:
            view = memoryview(data)
            while view:
                written = self._file.write(view)
                if not written:
                    raise OSError(f"short write to {self.path}")
                view = view[written:]
            os.fsync(self._file.fileno())
        except OSError:
            os.ftruncate(self._file.fileno(), size)  # no half line for the next result to follow
            raise

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
