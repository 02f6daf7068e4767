"""The append-only JSONL trace: typed events, one orjson line each.

A trace holds the *full* history of a run (every message, every tool output
untruncated) plus what the runtime decided about it (context statistics,
summaries, retrievals, usage). It is the single source for retrieval,
debugging, resume and replay. Schema version :data:`SCHEMA_VERSION`; every line
is ``{"v": 1, "type": "<event type>", ...fields}``.
"""

from __future__ import annotations

import dataclasses
import re
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, ClassVar

import orjson
import structlog

from ._errors import TraceFormatError
from ._messages import Message, Usage

__all__ = [
    "SCHEMA_VERSION",
    "ErrorEvent",
    "Event",
    "MessageEvent",
    "ModelRequest",
    "ModelResponse",
    "RetrievalEvent",
    "RunEnded",
    "RunStarted",
    "SummaryEvent",
    "ToolResult",
    "TraceWriter",
    "event_from_dict",
    "event_to_dict",
    "load_history",
    "read_trace",
    "redact",
]

SCHEMA_VERSION = 1
TRANSIENT = {"transient": True}  # field metadata: passed to observers, not written to the trace
log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class RunStarted:
    type: ClassVar[str] = "run_start"
    run_id: str
    model: str
    task: str
    config: dict[str, Any] = field(default_factory=dict)
    tools: list[dict[str, Any]] = field(default_factory=list)
    started_at: float = 0.0
    source: str | None = None  # for imported recordings: where they came from
    conversation_id: str | None = None  # the same for a run and its resumes (the trace file's stem)


@dataclass(frozen=True, slots=True)
class MessageEvent:
    """A message appended to the history, with its full, untruncated content."""

    type: ClassVar[str] = "message"
    message: Message


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What was sent at one iteration, its size, and what the context pipeline did."""

    type: ClassVar[str] = "model_request"
    iteration: int
    n_messages: int
    prompt_tokens_local: int
    estimated_prompt_tokens: int
    counterfactual_tokens: int
    context: dict[str, Any] = field(default_factory=dict)
    # The prompt as sent, for observers (OpenTelemetry content capture); never written to the
    # trace, which already holds every message in full.
    prompt: tuple[Message, ...] = field(default=(), compare=False, repr=False, metadata=TRANSIENT)


@dataclass(frozen=True, slots=True)
class ModelResponse:
    type: ClassVar[str] = "model_response"
    iteration: int
    usage: Usage
    model: str = ""
    finish_reason: str | None = None
    latency_s: float = 0.0
    attempts: int = 1


@dataclass(frozen=True, slots=True)
class ToolResult:
    """Metadata of one tool execution (the content itself is in the matching message event)."""

    type: ClassVar[str] = "tool_result"
    iteration: int
    tool_call_id: str
    name: str
    is_error: bool = False
    duration_s: float = 0.0
    output_chars: int = 0
    dedup_of: str | None = None  # tool_call_id whose cached result was reused
    error_kind: str | None = None
    started_at: float | None = None  # wall-clock start (epoch seconds); None: served from the dedup cache


@dataclass(frozen=True, slots=True)
class ErrorEvent:
    type: ClassVar[str] = "error"
    iteration: int
    kind: str
    message: str


@dataclass(frozen=True, slots=True)
class SummaryEvent:
    """A rolling summary covering iterations ``first_iteration..last_iteration``."""

    type: ClassVar[str] = "summary"
    first_iteration: int
    last_iteration: int
    text: str
    model: str | None = None  # None: the deterministic digest
    input_tokens: int = 0
    output_tokens: int = 0
    created_at_iteration: int = 0


@dataclass(frozen=True, slots=True)
class RetrievalEvent:
    type: ClassVar[str] = "retrieval"
    iteration: int
    filters: dict[str, Any]
    matched: int
    page: int
    pages: int


@dataclass(frozen=True, slots=True)
class RunEnded:
    type: ClassVar[str] = "run_end"
    stop_reason: str
    output: str | None
    iterations: int
    usage: Usage
    prompt_tokens_local: int = 0
    counterfactual_tokens: int = 0
    error: str | None = None


Event = (
    RunStarted
    | MessageEvent
    | ModelRequest
    | ModelResponse
    | ToolResult
    | ErrorEvent
    | SummaryEvent
    | RetrievalEvent
    | RunEnded
)
_EVENT_TYPES: dict[str, type[Any]] = {
    cls.type: cls
    for cls in (
        RunStarted,
        MessageEvent,
        ModelRequest,
        ModelResponse,
        ToolResult,
        ErrorEvent,
        SummaryEvent,
        RetrievalEvent,
        RunEnded,
    )
}

# ---------------------------------------------------------------- redaction
_SECRET_KEY = re.compile(r"(api[_-]?key|authorization|secret|password|token$|access[_-]?key)", re.I)
_SECRET_VALUE = re.compile(
    r"(Bearer\s+[A-Za-z0-9._\-]{8,}|\bsk-[A-Za-z0-9_\-]{12,}|\bsk-ant-[A-Za-z0-9_\-]{12,})"
)


def redact(value: Any) -> Any:
    """A copy of ``value`` with credential-looking keys and values replaced by ``"[redacted]"``."""
    if isinstance(value, Mapping):
        return {
            k: "[redacted]" if isinstance(k, str) and _SECRET_KEY.search(k) and v else redact(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return _SECRET_VALUE.sub("[redacted]", value)
    return value


# ---------------------------------------------------------------- (de)serialization
def event_to_dict(event: Event) -> dict[str, Any]:
    out: dict[str, Any] = {"v": SCHEMA_VERSION, "type": event.type}
    for f in dataclasses.fields(event):
        if f.metadata.get("transient"):
            continue
        value = getattr(event, f.name)
        if isinstance(value, Message):
            value = value.to_dict()
        elif isinstance(value, Usage):
            value = dataclasses.asdict(value)
        out[f.name] = value
    return out


def event_from_dict(data: Mapping[str, Any]) -> Event:
    kind = data.get("type")
    cls = _EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown event type {kind!r}")
    names = {f.name for f in dataclasses.fields(cls)}
    kwargs = {k: v for k, v in data.items() if k in names}
    if cls is MessageEvent:
        kwargs["message"] = Message.from_openai(data["message"])
    for key in ("usage",):
        if key in kwargs and isinstance(kwargs[key], Mapping):
            kwargs[key] = Usage(**kwargs[key])
    event: Event = cls(**kwargs)
    return event


class TraceWriter:
    """Appends events to one JSONL file; :meth:`flush` at every iteration boundary.

    Opening the file happens in :meth:`open` (or ``with``), never in ``__init__``.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._file: IO[bytes] | None = None
        self._buffer: list[bytes] = []

    def open(self) -> TraceWriter:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._file = self.path.open("ab")
        return self

    def __enter__(self) -> TraceWriter:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, event: Event) -> None:
        line = orjson.dumps(redact(event_to_dict(event)), option=orjson.OPT_SERIALIZE_NUMPY)
        self._buffer.append(line + b"\n")

    def flush(self) -> None:
        if self._file is None:
            raise RuntimeError("TraceWriter.flush() before open()")
        if self._buffer:
            self._file.write(b"".join(self._buffer))
            self._buffer.clear()
        self._file.flush()

    def close(self) -> None:
        if self._file is not None:
            self.flush()
            self._file.close()
            self._file = None


def iter_trace(path: Path) -> Iterator[Event]:
    """Events of a trace file in order. A torn last line (a crash mid-write) is skipped with a warning."""
    try:
        lines = path.read_bytes().splitlines()
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read trace ({exc})") from exc
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        try:
            data = orjson.loads(line)
            if not isinstance(data, dict):
                raise ValueError("line is not a JSON object")
            version = data.get("v")
            if version != SCHEMA_VERSION:
                raise ValueError(f"schema version {version!r}, expected {SCHEMA_VERSION}")
            yield event_from_dict(data)
        except (ValueError, TypeError, KeyError) as exc:
            if number == len(lines):
                log.warning("trace.torn_last_line", path=str(path), line=number, error=str(exc))
                return
            raise TraceFormatError(f"{path}:{number}: {exc}") from exc


def read_trace(path: Path | str) -> list[Event]:
    return list(iter_trace(Path(path)))


def load_history(events: Iterable[Event] | Path | str) -> list[Message]:
    """The full message history recorded in a trace (or an event list)."""
    if isinstance(events, str | Path):
        events = iter_trace(Path(events))
    return [e.message for e in events if isinstance(e, MessageEvent)]


def now() -> float:
    return time.time()
