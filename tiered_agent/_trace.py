"""The append-only JSONL trace: typed events, one orjson line each.

A trace holds the *full* history of a run (every message, every tool output
untruncated) plus what the runtime decided about it (context statistics,
summaries, retrievals, usage). It is the single source for retrieval,
debugging, resume and replay. Schema version :data:`SCHEMA_VERSION`; every line
is ``{"v": 1, "type": "<event type>", ...fields}``.
"""

from __future__ import annotations

import codecs
import dataclasses
import json
import math
import os
import re
import shutil
import stat
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import IO, Any, ClassVar

import orjson
import structlog

from ._errors import TraceFormatError, TraceWriteError
from ._files import NotRegularFile, open_regular, open_regular_for_appending
from ._lock import TraceLock
from ._messages import Message, ToolCall, Usage
from ._scrub import CleanTexts, sub_around, sub_at
from ._text import clean_surrogates
from ._trace_shapes import checked_fields

__all__ = [
    "LEGACY_STEP",
    "REDACTED",
    "SCHEMA_VERSION",
    "AgingCarry",
    "AgingRecord",
    "ContextRecord",
    "Cut",
    "ErrorEvent",
    "Event",
    "MessageEvent",
    "ModelRequest",
    "ModelResponse",
    "RetrievalEvent",
    "RunEnded",
    "RunStarted",
    "SkippedLine",
    "StepError",
    "StepRecord",
    "StepState",
    "SummaryEvent",
    "ToolResult",
    "TraceScan",
    "TraceWriter",
    "check_event_fields",
    "event_from_dict",
    "event_to_dict",
    "is_event_type",
    "is_secret_name",
    "iter_trace",
    "load_history",
    "longest_secret",
    "move_torn_tail",
    "overlong",
    "parse_json",
    "parse_object",
    "read_trace",
    "redact",
    "register_secret",
    "scan_trace",
    "trace_lines",
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


# ---------------------------------------------------------------- the per-prompt context record
LEGACY_STEP = "pipeline"  # the key of a record written before records were kept per step


@dataclass(frozen=True, slots=True)
class Cut:
    """One tool output the prompt shows cut: what the model did not see of it."""

    tool_call_id: str
    iteration: int
    tool: str
    original_chars: int
    kept_chars: int

    @property
    def omitted_chars(self) -> int:
        return self.original_chars - self.kept_chars

    def to_dict(self) -> dict[str, Any]:
        return {
            "tool_call_id": self.tool_call_id,
            "iteration": self.iteration,
            "tool": self.tool,
            "original_chars": self.original_chars,
            "kept_chars": self.kept_chars,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Cut | None:
        """The cut a record holds; None for anything that is not one."""
        if not isinstance(data, Mapping) or not isinstance(data.get("tool_call_id"), str):
            return None
        return cls(
            data["tool_call_id"],
            _int(data.get("iteration")),
            str(data.get("tool") or data.get("tool_name") or ""),
            _int(data.get("original_chars")),
            _int(data.get("kept_chars")),
        )


@dataclass(frozen=True, slots=True)
class AgingCarry:
    """What the ``Age`` step's break-even rule has accrued since its last epochs, for resume to go
    on deciding as the run would have: ``rent`` paid toward the next epoch, ``rent_condense`` toward
    the next condensing, and the request times as it reads them (``calls`` prepared, the ``last``
    known time, the ``gaps`` measured and the expected share of the cache they ``lost``), and
    ``rent_fade`` toward the next fading of old notes (``Age(fade_after=)``)."""

    rent: float = 0.0
    rent_condense: float = 0.0
    calls: int = 0
    last: float | None = None
    gaps: int = 0
    lost: float = 0.0
    rent_fade: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        """Every field (``rent_fade`` only when some was paid: records without fading have none)."""
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        if not self.rent_fade:
            del fields["rent_fade"]
        return fields

    @classmethod
    def from_dict(cls, data: Any) -> AgingCarry | None:
        """The carry a record holds; None unless every value is a finite number of its kind."""
        if not isinstance(data, Mapping):
            return None
        values: list[Any] = [data.get(k) for k in ("rent", "rent_condense", "lost", "calls", "gaps")]
        last: Any = data.get("last")
        if not all(_is_int(v) and v >= 0 for v in values) or not (last is None or _is_int(last)):
            return None
        rent, rent_condense, lost = (float(v) for v in values[:3])
        calls, gaps = (_int(v) for v in values[3:])
        fade: Any = data.get("rent_fade", 0.0)
        if not (_is_int(fade) and fade >= 0):
            return None
        return cls(rent, rent_condense, calls, None if last is None else float(last), gaps, lost, float(fade))


@dataclass(frozen=True, slots=True)
class AgingRecord:
    """The ``Age`` step's own record: iterations ``1..through`` aged, ``1..condensed`` condensed, the
    epoch decided for this prompt (``(at, through, condensed)``; resume rebuilds the schedule from
    these) and what the rule had accrued after deciding (:class:`AgingCarry`; resume goes on from the
    newest); ``faded``: the condensed notes through that iteration are faded (``Age(fade_after=)``;
    an epoch decided here faded that far)."""

    through: int = 0
    condensed: int = 0
    epoch: tuple[int, int, int] | None = None
    carry: AgingCarry | None = None
    faded: int = 0

    def to_dict(self) -> dict[str, Any]:
        record: dict[str, Any] = {"through": self.through, "condensed": self.condensed}
        if self.faded:
            record["faded"] = self.faded
        if self.epoch is not None:
            at, through, condensed = self.epoch
            record["epoch"] = {"at": at, "through": through, "condensed": condensed}
        if self.carry is not None:
            record["carry"] = self.carry.to_dict()
        return record

    @classmethod
    def from_dict(cls, data: Any) -> AgingRecord | None:
        if not isinstance(data, Mapping):
            return None
        epoch = data.get("epoch")
        decided = None
        if isinstance(epoch, Mapping) and all(_is_int(epoch.get(k)) for k in ("at", "through")):
            decided = (int(epoch["at"]), int(epoch["through"]), _int(epoch.get("condensed")))
        carry = AgingCarry.from_dict(data.get("carry"))
        through, condensed, faded = (_int(data.get(k)) for k in ("through", "condensed", "faded"))
        return cls(through, condensed, decided, carry, faded)


StepState = AgingRecord | Mapping[str, Any]  # a step's own record: typed for the built-in steps
_STATE_TYPES: dict[str, Any] = {"age": AgingRecord}


@dataclass(frozen=True, slots=True)
class StepRecord:
    """What one step did to one prompt (every field defaults to "nothing").

    ``hidden``/``hidden_chars``: outputs it showed as a placeholder or a shorter form;
    ``cuts``/``cut_tokens``: outputs it cut, and the tokens that spared; ``pointers``/
    ``pointer_chars``: repeated outputs it showed as a pointer to an identical one above;
    ``dropped``: iterations it left out behind a note; ``state``: the step's own record (the
    ``Age`` step's :class:`AgingRecord`; a mapping for other steps).
    """

    hidden: int = 0
    hidden_chars: int = 0
    cuts: tuple[Cut, ...] = ()
    cut_tokens: int = 0
    pointers: int = 0
    pointer_chars: int = 0
    dropped: tuple[int, ...] = ()
    state: StepState | None = None

    def to_dict(self) -> dict[str, Any]:
        """The fields that say something (defaults left out)."""
        record: dict[str, Any] = {}
        for name in ("hidden", "hidden_chars", "cut_tokens", "pointers", "pointer_chars"):
            if value := getattr(self, name):
                record[name] = value
        if self.cuts:
            record["cuts"] = [cut.to_dict() for cut in self.cuts]
        if self.dropped:
            record["dropped"] = list(self.dropped)
        if self.state is not None:
            state = self.state
            record["state"] = state.to_dict() if isinstance(state, AgingRecord) else dict(state)
        return record

    @classmethod
    def from_dict(cls, kind: str, data: Any) -> StepRecord:
        if not isinstance(data, Mapping):
            return cls()
        state = data.get("state")
        parse = _STATE_TYPES.get(kind)
        typed = parse.from_dict(state) if parse is not None else None
        return cls(
            hidden=_int(data.get("hidden")),
            hidden_chars=_int(data.get("hidden_chars")),
            cuts=_cuts(data.get("cuts")),
            cut_tokens=_int(data.get("cut_tokens")),
            pointers=_int(data.get("pointers")),
            pointer_chars=_int(data.get("pointer_chars")),
            dropped=_ints(data.get("dropped")),
            state=typed if typed is not None else dict(state) if isinstance(state, Mapping) else None,
        )


@dataclass(frozen=True, slots=True)
class ContextRecord:
    """What the context pipeline did to build one prompt (``model_request.context``), per step.

    ``steps``: by step kind, the steps that did something; ``shown_iterations``: the iterations
    the prompt shows (in some form); ``windowed_out``: those it does not (a summary stands for
    them, or they were left out); ``summary_range``: the summary shown, if any; ``compacted``:
    the prompt was built again after a compaction; ``dedup_hits``: tool calls the run served from
    the dedup cache so far. :meth:`from_dict` also reads the flat records older traces hold.
    """

    steps: Mapping[str, StepRecord] = field(default_factory=dict)
    shown_iterations: tuple[int, ...] = ()
    windowed_out: tuple[int, ...] = ()
    summary_range: tuple[int, int] | None = None
    compacted: bool = False
    dedup_hits: int = 0

    # ------------------------------------------------------------------ totals over the steps
    @property
    def cuts(self) -> tuple[Cut, ...]:
        return tuple(cut for step in self.steps.values() for cut in step.cuts)

    @property
    def truncated_outputs(self) -> int:
        return sum(len(step.cuts) for step in self.steps.values())

    @property
    def truncated_chars(self) -> int:
        return sum(cut.omitted_chars for cut in self.cuts)

    @property
    def truncated_tokens(self) -> int:
        return sum(step.cut_tokens for step in self.steps.values())

    @property
    def hidden_outputs(self) -> int:
        return sum(step.hidden for step in self.steps.values())

    @property
    def hidden_chars(self) -> int:
        return sum(step.hidden_chars for step in self.steps.values())

    @property
    def pointers(self) -> int:
        return sum(step.pointers for step in self.steps.values())

    @property
    def pointer_chars(self) -> int:
        return sum(step.pointer_chars for step in self.steps.values())

    @property
    def aging(self) -> AgingRecord | None:
        """The aging step's record, if the policy ages."""
        return next((s.state for s in self.steps.values() if isinstance(s.state, AgingRecord)), None)

    # ------------------------------------------------------------------ data
    def to_dict(self) -> dict[str, Any]:
        return {
            "steps": {kind: step.to_dict() for kind, step in self.steps.items()},
            "shown_iterations": list(self.shown_iterations),
            "windowed_out": list(self.windowed_out),
            "summary_range": list(self.summary_range) if self.summary_range else None,
            "compacted": self.compacted,
            "dedup_hits": self.dedup_hits,
        }

    @classmethod
    def from_dict(cls, data: Any) -> ContextRecord:
        """The record of a ``model_request`` event, of this format or the flat one before it; a field
        that is missing or of the wrong type reads as "nothing done" (traces are untrusted input)."""
        if not isinstance(data, Mapping):
            return cls()
        steps = data.get("steps")
        parsed = (
            {str(k): StepRecord.from_dict(str(k), v) for k, v in steps.items()}
            if isinstance(steps, Mapping)
            else _flat_steps(data)
        )
        summary = _ints(data.get("summary_range"))
        return cls(
            steps=parsed,
            shown_iterations=_ints(data.get("shown_iterations")),
            windowed_out=_ints(data.get("windowed_out")),
            summary_range=(summary[0], summary[1]) if len(summary) == 2 else None,
            compacted=data.get("compacted") is True,
            dedup_hits=_int(data.get("dedup_hits")),
        )


def _flat_steps(data: Mapping[str, Any]) -> dict[str, StepRecord]:
    """The per-step view of a flat record (before records were kept per step): cuts were the
    ``Truncate`` step's, pointers the ``Dedup`` step's, ``aging`` the ``Age`` step's; which step hid
    an output was not recorded (:data:`LEGACY_STEP`)."""
    steps: dict[str, StepRecord] = {}
    cuts = _cuts(data.get("truncations"))
    if cuts or _int(data.get("truncated_tokens")):
        steps["truncate"] = StepRecord(cuts=cuts, cut_tokens=_int(data.get("truncated_tokens")))
    if _int(data.get("dedup_pointers")):
        pointers, chars = _int(data.get("dedup_pointers")), _int(data.get("dedup_pointer_chars"))
        steps["dedup"] = StepRecord(pointers=pointers, pointer_chars=chars)
    aging = AgingRecord.from_dict(data.get("aging"))
    if aging is not None:
        steps["age"] = StepRecord(state=aging)
    if _int(data.get("masked_outputs")):
        hidden, chars = _int(data.get("masked_outputs")), _int(data.get("masked_chars"))
        steps[LEGACY_STEP] = StepRecord(hidden=hidden, hidden_chars=chars)
    return steps


def _is_int(value: Any) -> bool:
    """A JSON number (not a bool, not NaN or infinite)."""
    if isinstance(value, bool):
        return False
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


def _int(value: Any) -> int:
    return int(value) if _is_int(value) and abs(value) < 1 << 62 else 0


def _ints(value: Any) -> tuple[int, ...]:
    return tuple(_int(v) for v in value if _is_int(v)) if isinstance(value, list | tuple) else ()


def _cuts(value: Any) -> tuple[Cut, ...]:
    if not isinstance(value, list | tuple):
        return ()
    return tuple(cut for item in value if (cut := Cut.from_dict(item)) is not None)


@dataclass(frozen=True, slots=True)
class ModelRequest:
    """What was sent at one iteration, its size, and what the context pipeline did."""

    type: ClassVar[str] = "model_request"
    iteration: int
    n_messages: int
    prompt_tokens_local: int
    estimated_prompt_tokens: int
    counterfactual_tokens: int
    context: dict[str, Any] = field(default_factory=dict)  # a ContextRecord.to_dict()
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
    route: str | None = None  # the endpoint a router reported serving the call (OpenRouter's ``provider``)


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
class StepError:
    """A context step that raised and was skipped (fail open): for the prompt of ``iteration``, or
    for that iteration's tool calls; the run went on without it.

    ``phase`` is the hook that raised (``apply``, ``finish``, ``decide``, ``act``, ``after``,
    ``serve``, ``observe``, ``record``, ``summary``); ``error`` the exception's type and
    ``message`` its text, secrets redacted and clipped.
    """

    type: ClassVar[str] = "step_error"
    iteration: int
    step: str
    phase: str
    error: str
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
    | StepError
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
        StepError,
        SummaryEvent,
        RetrievalEvent,
        RunEnded,
    )
}

# ---------------------------------------------------------------- redaction
REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6  # shorter values ("1", "true", "dev") would redact half of every output
_SECRET_KEY = re.compile(r"(api[_-]?key|authorization|secret|password|token$|access[_-]?key)", re.I)
# Credentials by their published shapes: bearer tokens, OpenAI/Anthropic keys (``sk-``), GitHub
# tokens (``ghp_`` ..., ``github_pat_``), Slack tokens (``xoxb-`` ...), AWS access key ids
# (``AKIA``/``ASIA``), Google API keys (``AIza``), GitLab tokens (``glpat-``).
_SECRET_VALUE = re.compile(
    r"(Bearer\s+[A-Za-z0-9._\-]{8,}|\bsk-[A-Za-z0-9_\-]{12,}|\bsk-ant-[A-Za-z0-9_\-]{12,}"
    r"|\bgh[pousr]_[A-Za-z0-9]{30,}|\bgithub_pat_[A-Za-z0-9_]{30,}|\bxox[abeprs]-[A-Za-z0-9-]{10,}"
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_\-]{35}|\bglpat-[A-Za-z0-9_\-]{20,})"
)
# Every match of _SECRET_VALUE starts with one of these (the fast substitution finds them first).
_SECRET_VALUE_STARTS = (
    "Bearer",
    "sk-",
    *(f"gh{kind}_" for kind in "pousr"),
    "github_pat_",
    *(f"xox{kind}-" for kind in "abeprs"),
    "AKIA",
    "ASIA",
    "AIza",
    "glpat-",
)
# Credentials in URLs: query parameters (``?api-key=...``, ``&token=...``) and userinfo (``user:pass@``).
_URL_QUERY_SECRET = re.compile(
    r"([?&;](?:api[-_]?key|key|token|access[-_]?token|auth|secret|password|passwd|sig|signature)=)"
    r"[^&#\s'\"<>]+",
    re.I,
)
_URL_USERINFO = re.compile(r"(\b[a-z][a-z0-9+.\-]*://)[^/\s@'\"<>]+@", re.I)
# A private key block (PEM, OpenSSH, PGP armor): its markers stay, what is between them goes; without
# its END marker (an output cut short), everything after BEGIN goes.
_PRIVATE_KEY = re.compile(
    r"(-----BEGIN [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)"
    r"(?:.*?(-----END [A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----)|.*)",
    re.S,
)
_PRIVATE_KEY_MARK = "PRIVATE KEY"
# Its parts before and after "://", for sub_around (which finds "://" first).
_SCHEME_CHAR = re.compile(r"[a-z0-9+.\-]", re.I)
_USERINFO_REST = re.compile(r"[^/\s@'\"<>]+@", re.I)
_SECRET_NAME_ENDINGS = (
    "KEY",
    "KEYS",
    "TOKEN",
    "TOKENS",
    "SECRET",
    "SECRETS",
    "PASSWORD",
    "PASSWD",
    "PASSPHRASE",
    "CREDENTIAL",
    "CREDENTIALS",
)
_SECRET_NAME_PARTS = frozenset({"PASS", "PWD", "AUTH", "COOKIE", "DSN", "PAT", "SIGNATURE"})
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD", "SSH_AUTH_SOCK", "TIKTOKEN_CACHE_DIR", "KEYTIMEOUT"})
_registered: set[str] = set()


def is_secret_name(name: str) -> bool:
    """True for environment variable names that look like credentials (``OPENAI_API_KEY``,
    ``GITHUB_TOKEN``, ``AWS_SECRET_ACCESS_KEY``, ``DB_PASSWORD``, ``GOOGLE_CREDENTIALS``, ...)."""
    upper = name.upper()
    if upper in _NOT_SECRET_NAMES:
        return False
    parts = [part for part in re.split(r"[^A-Z0-9]+", upper) if part]
    return any(part.endswith(_SECRET_NAME_ENDINGS) or part in _SECRET_NAME_PARTS for part in parts)


def register_secret(value: str | None) -> None:
    """Add a value (an API key given to the runtime) to what :func:`redact` replaces everywhere."""
    if value and len(value) >= MIN_SECRET_CHARS:
        _registered.add(value)


def longest_secret() -> int:
    """The length of the longest secret value :func:`redact` knows now (0 when it knows none)."""
    return max(map(len, _secret_values()), default=0)


def _secret_values() -> frozenset[str]:
    """The values to redact now: secret-looking environment variables and registered keys."""
    return _env_secrets(_environ_key()) | _registered


def _environ_key() -> tuple[tuple[Any, Any], ...]:
    """The environment as it is now, cheaply (os.environ decodes every item when iterated)."""
    data = getattr(os.environ, "_data", None)  # CPython: the encoded dict behind os.environ
    return tuple(data.items()) if isinstance(data, dict) else tuple(os.environ.items())


@lru_cache(maxsize=4)
def _env_secrets(environ: tuple[tuple[Any, Any], ...]) -> frozenset[str]:
    """The secret values of the environment ``environ`` stands for (the cache key: read it once)."""
    return frozenset(v for name, v in os.environ.items() if len(v) >= MIN_SECRET_CHARS and _secret(name))


@lru_cache(maxsize=4096)
def _secret(name: str) -> bool:
    return is_secret_name(name)


@dataclass(frozen=True, slots=True)
class _Secrets:
    """What :func:`redact` replaces now: the secret values (longest first) and their pattern."""

    values: tuple[str, ...]
    pattern: re.Pattern[str] | None


@lru_cache(maxsize=8)
def _secrets_of(values: frozenset[str]) -> _Secrets:
    ordered = tuple(sorted(values, key=lambda v: (-len(v), v)))
    pattern = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None
    return _Secrets(ordered, pattern)


def redact(value: Any) -> Any:
    """A copy of ``value`` with credentials replaced by ``"[redacted]"``: the one redaction used for
    the trace, the console, the logs, error sentences and the messages the model sees.

    Replaced: the values of mapping keys that name credentials (``api_key``, ``Authorization``, ...);
    anywhere in a string, the values of environment variables whose name looks secret (see
    :func:`is_secret_name`; values under :data:`MIN_SECRET_CHARS` characters are left alone) and of
    every :func:`register_secret`-ed API key, ``sk-...`` and ``Bearer ...`` shapes, and keys in URLs
    (``?api-key=``, ``&token=``, ``user:password@``). Messages keep their type.

    Within a run (:func:`remembering_clean_texts`) a long text this function returned is remembered
    (by identity) as clean, so redacting it again under the same secrets (the trace writing a message
    the history already holds) costs nothing.
    """
    return _redact(value, _secrets_of(_secret_values()))


_SCALARS = frozenset({int, float, bool, type(None)})
_CLEAN_MIN_CHARS = 1024  # shorter texts are redacted again rather than remembered
# The clean texts of the run at work (:func:`remembering_clean_texts`); None: nothing is remembered
_CLEAN: ContextVar[CleanTexts | None] = ContextVar("tiered_agent_clean_texts", default=None)


@contextmanager
def remembering_clean_texts() -> Iterator[CleanTexts]:
    """The scope of one run (entered by :meth:`~._agent.Agent.run` and ``resume``): inside it, a long
    text :func:`redact` returned is remembered, by identity, as clean, so the trace writing a message
    the history already holds does not scan it again. The memory is the run's: it ends with the
    scope, and the run's concurrent neighbours (a batch) each have their own."""
    clean = CleanTexts()
    token = _CLEAN.set(clean)
    try:
        yield clean
    finally:
        _CLEAN.reset(token)


def _redact(value: Any, secrets: _Secrets) -> Any:
    if isinstance(value, str):
        return _redact_text(value, secrets)
    if isinstance(value, Mapping):
        return {
            k: REDACTED if isinstance(k, str) and _SECRET_KEY.search(k) and v else _redact(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        if set(map(type, value)) <= _SCALARS:  # numbers (a prompt record's iterations): nothing to do
            return list(value)
        return [_redact(v, secrets) for v in value]
    if isinstance(value, Message):
        return _redact_message(value, secrets)
    return value


def _redact_text(text: str, secrets: _Secrets) -> str:
    clean = _CLEAN.get()
    if clean is None or len(text) < _CLEAN_MIN_CHARS:
        return _scrub_text(text, secrets)
    if clean.known(text, secrets):
        return text
    text = _scrub_text(text, secrets)
    clean.add(text, secrets)
    return text


def _scrub_text(text: str, secrets: _Secrets) -> str:
    # Each substitution as ``pattern.sub`` over the whole text would do it (see _scrub), in this order.
    if secrets.pattern is not None and any(v in text for v in secrets.values):
        text = secrets.pattern.sub(REDACTED, text)
    text = sub_at(_SECRET_VALUE, _SECRET_VALUE_STARTS, REDACTED, text)
    if _PRIVATE_KEY_MARK in text:
        text = _PRIVATE_KEY.sub(private_key_redacted, text)
    if "=" in text:
        text = _URL_QUERY_SECRET.sub(rf"\1{REDACTED}", text)
    if "@" in text:
        text = sub_around(
            _URL_USERINFO, "://", rf"\1{REDACTED}@", text, lead=_SCHEME_CHAR, follow=_USERINFO_REST
        )
    return text


def private_key_redacted(block: re.Match[str]) -> str:
    """A private key block's replacement: its BEGIN and END markers around ``[redacted]``."""
    return f"{block.group(1)}{REDACTED}{block.group(2) or ''}"


def _redact_message(message: Message, secrets: _Secrets) -> Message:
    content = None if message.content is None else _redact_text(message.content, secrets)
    calls = tuple(ToolCall(c.id, c.name, _redact_text(c.arguments, secrets)) for c in message.tool_calls)
    if content == message.content and calls == message.tool_calls:
        return message
    return dataclasses.replace(message, content=content, tool_calls=calls)


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
    """The event a trace line holds; ValueError (and no other error) naming the first field whose
    shape is wrong (see :mod:`._trace_shapes`). Keys it does not know are ignored."""
    kind = data.get("type")
    cls = _EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is None:
        raise ValueError(f"unknown event type {_short(kind)}")
    event: Event = cls(**checked_fields(cls, data))
    return event


def is_event_type(kind: str) -> bool:
    """Whether ``kind`` is the type of an event this version writes (``run_start``, ``message``, ...)."""
    return kind in _EVENT_TYPES


def check_event_fields(data: Mapping[str, Any]) -> None:
    """Check the fields an event of a known type holds, as :func:`event_from_dict` does, but let
    fields be missing (a lenient reader fills them in); ValueError names the first wrong one.
    Events of a type this version does not know pass unchecked."""
    kind = data.get("type")
    cls = _EVENT_TYPES.get(kind) if isinstance(kind, str) else None
    if cls is not None:
        checked_fields(cls, data, complete=False)


def _short(value: Any, limit: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


class TraceWriter:
    """Appends events to one JSONL file; :meth:`flush` at every iteration boundary.

    Opening the file happens in :meth:`open` (or ``with``), never in ``__init__``. Opening takes
    the trace's :class:`~._lock.TraceLock` (``lock``, if given, may be held already: a resume locks
    before it reads), so a second writer is refused with :class:`~._errors.TraceInUse`; closing
    releases it. Opening an existing trace first moves a torn last line aside
    (:func:`move_torn_tail`), so appending never buries it. A failed write (a full disk) is cut
    back to the last complete line and raises :class:`TraceWriteError` once; :meth:`close` never
    raises (it keeps the failure in ``error``). Text that JSON cannot hold (a lone surrogate) is
    written as its escape rather than failing the write.
    """

    def __init__(self, path: Path, *, lock: TraceLock | None = None) -> None:
        self.path = path
        self.lock = lock if lock is not None else TraceLock(path)
        self.torn: Path | None = None  # where open() moved a torn last line, if it did
        self.error: TraceWriteError | None = None  # the first write failure
        self._file: IO[bytes] | None = None
        self._buffer: list[bytes] = []
        self._size = 0  # bytes of complete lines in the file

    def open(self) -> TraceWriter:
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.lock.acquire()
        except OSError as exc:
            raise TraceWriteError(f"cannot write the trace {self.path}: {_reason(exc)}") from exc
        try:
            self.torn = move_torn_tail(self.path)
            self._file = open_regular_for_appending(self.path, create=True, buffered=False)
            self._size = self._file.seek(0, os.SEEK_END)
        except OSError as exc:
            self.lock.release()
            raise TraceWriteError(f"cannot write the trace {self.path}: {_reason(exc)}") from exc
        return self

    def __enter__(self) -> TraceWriter:
        return self.open()

    def __exit__(self, *exc: object) -> None:
        self.close()

    def write(self, event: Event) -> None:
        self._buffer.append(_line(redact(event_to_dict(event))))

    def flush(self) -> None:
        """Write the buffered events; on failure, cut the file back to its last complete line and raise."""
        if self._file is None:
            raise RuntimeError("TraceWriter.flush() before open()")
        if not self._buffer:
            return
        data = b"".join(self._buffer)
        self._buffer.clear()
        try:
            self._restore_if_deleted()
            _write_all(self._file, data)
        except OSError as exc:
            self._cut_back()
            error = TraceWriteError(
                f"cannot write the trace {self.path}: {_reason(exc)}; "
                "it keeps every event written before this one"
            )
            self.error = self.error or error
            raise error from exc
        self._size += len(data)

    def discard(self) -> None:
        """Drop the events buffered since the last flush (a run that never started records none)."""
        self._buffer.clear()

    def close(self) -> None:
        """Flush what is buffered, close and release the lock; a failure is kept in :attr:`error`,
        never raised."""
        if self._file is None:
            self.lock.release()
            return
        try:
            self.flush()
        except TraceWriteError as exc:
            log.debug("trace.close_failed", path=str(self.path), error=str(exc))
        finally:
            self._file.close()
            self._file = None
            self.lock.release()

    def _restore_if_deleted(self) -> None:
        """The trace file was deleted while the run went on (its folder removed, ``rm``): write what
        it held to a new file at its path, with a new lock, and append there; never to a file
        nobody can read. Its old content is read through ``/proc/self/fd`` (Linux); where that
        cannot be read, ``OSError`` (the run then stops with :class:`TraceWriteError`)."""
        assert self._file is not None
        if os.fstat(self._file.fileno()).st_nlink > 0:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o644)
        new: IO[bytes] = os.fdopen(fd, "ab", buffering=0)
        try:
            with open(f"/proc/self/fd/{self._file.fileno()}", "rb") as old:
                shutil.copyfileobj(old, new)
            new.truncate(self._size)  # complete lines only, as the writer counts them
        except BaseException:
            new.close()
            self.path.unlink(missing_ok=True)
            raise
        self._file.close()
        self._file = new
        self.lock.release()
        try:  # the lock file went with the folder: a new one, so a second writer is refused again
            self.lock.acquire()
        except (OSError, ValueError) as exc:
            log.warning("trace.relock_failed", path=str(self.path), error=str(exc))
        log.warning("trace.restored", path=str(self.path), reason="the trace file was deleted during the run")

    def _cut_back(self) -> None:
        assert self._file is not None
        try:
            os.ftruncate(self._file.fileno(), self._size)
        except OSError as exc:  # the torn tail stays; the next open() moves it aside
            log.warning("trace.cut_back_failed", path=str(self.path), error=_reason(exc))


def _line(data: dict[str, Any]) -> bytes:
    """One trace line. A lone surrogate (a model's reply, a non-UTF-8 path) is written as its escape."""
    try:
        return orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"
    except orjson.JSONEncodeError:
        return orjson.dumps(_without_surrogates(data), option=orjson.OPT_SERIALIZE_NUMPY) + b"\n"


def _without_surrogates(value: Any) -> Any:
    if isinstance(value, str):
        return clean_surrogates(value)
    if isinstance(value, Mapping):
        return {_without_surrogates(k): _without_surrogates(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_without_surrogates(v) for v in value]
    return value


def _write_all(file: IO[bytes], data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = file.write(view)
        if not written:
            raise OSError(f"short write ({len(view)} bytes left)")
        view = view[written:]


def _reason(exc: OSError) -> str:
    return exc.strerror or str(exc) or type(exc).__name__


def move_torn_tail(path: Path, parses: Callable[[bytes], bool] | None = None) -> Path | None:
    """Move an unreadable last line of the trace at ``path`` (a crash or a full disk mid-write)
    into ``<path>.torn`` (``<path>.2.torn``, ... if taken) and cut it from the trace, so that new
    events can be appended after the last complete one. Returns the ``.torn`` file, or None when
    the trace ends cleanly (or does not exist). The torn bytes are never dropped: they are written
    to the ``.torn`` file before the trace is cut. A last line that is complete JSON but not a
    valid event stays (reading skips it with its reason). ``parses`` tells a complete line of another
    append-only JSONL file (default: a JSON object, as a trace event is)."""
    try:
        handle = path.open("r+b")
    except FileNotFoundError:
        return None
    with handle:
        if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            return None
        size = handle.seek(0, os.SEEK_END)
        if size == 0:
            return None
        start = _last_line_start(handle, size)
        handle.seek(start)
        tail = handle.read()
        if not tail.strip() or (tail.endswith(b"\n") and (parses or _is_json_object)(tail)):
            return None
        torn = _keep_aside(path, tail)
        handle.truncate(start)
    log.warning("trace.torn_tail_moved", path=str(path), torn=str(torn), bytes=len(tail))
    return torn


def _last_line_start(handle: IO[bytes], size: int) -> int:
    """Offset of the last line, ignoring the file's final byte (its newline, or a torn line's end)."""
    position = size - 1
    while position > 0:
        step = min(1 << 16, position)
        handle.seek(position - step)
        index = handle.read(step).rfind(b"\n")
        if index >= 0:
            return position - step + index + 1
        position -= step
    return 0


def _is_json_object(line: bytes) -> bool:
    try:
        return isinstance(orjson.loads(line), dict)
    except orjson.JSONDecodeError:
        return False


def _keep_aside(path: Path, tail: bytes) -> Path:
    for number in range(1, 1000):
        torn = path.with_name(f"{path.name}.torn" if number == 1 else f"{path.name}.{number}.torn")
        try:
            with torn.open("xb") as out:
                out.write(tail)
        except FileExistsError:
            continue
        return torn
    raise FileExistsError(f"{path}: too many .torn files next to it")


# ---------------------------------------------------------------- reading
MAX_LINE_BYTES = 64 * 1024 * 1024  # far above any event (tool outputs over 1 MB are spilled to files)


@dataclass(frozen=True, slots=True)
class SkippedLine:
    """A line of a trace that was not read as an event, and why (``torn`` for a cut-off last line)."""

    line: int
    reason: str
    torn: bool = False

    def __str__(self) -> str:
        return f"line {self.line}: {self.reason}"


@dataclass(frozen=True, slots=True)
class TraceScan:
    """Every readable event of a trace with its line number, and every line skipped with its reason."""

    path: Path
    events: tuple[Event, ...]
    lines: tuple[int, ...]  # lines[i]: the line of events[i] in the file (1-based)
    skipped: tuple[SkippedLine, ...]

    def line_of(self, index: int) -> int:
        return self.lines[index]


class _BadLine(ValueError):
    """One line's problem (its reason)."""


def parse_json(data: bytes) -> Any:
    """JSON text as :func:`orjson.loads` reads it, with two differences.

    - Text orjson refuses only for its characters is read with them mended (:func:`_mended`):
      bytes that are not UTF-8 become U+FFFD, an escaped half of a UTF-16 pair (``"\\ud83d"``:
      a JavaScript string cut in the middle of an emoji) is kept as its escape, as the trace
      writer writes one, and a raw control character (NUL, U+0001..U+001F) inside a string, which
      JSON forbids but a careless writer leaves, is read as the character it is. A line of a
      session log is data the replay needs, not noise to skip.
    - A value nested deeper than JSON writers go (255 levels, orjson's ``dumps``) is not JSON here
      (:class:`orjson.JSONDecodeError`, ``nested deeper than 255 levels``): nothing could write it
      back out, and Python cannot even show or compare one of 1,000 levels (``repr``, ``str`` and
      ``==`` raise ``RecursionError``). orjson itself refuses more than 1,024 levels the same way.

    Every reader of traces and recorded runs parses with it.
    """
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        value = _mended(data, exc)
    if isinstance(value, dict | list):
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError:
            text = data.decode(errors="replace")
            raise orjson.JSONDecodeError("nested deeper than 255 levels", text, _too_deep_at(text)) from None
    return value


_MAX_DEPTH = 255
_JSON_MARKS = re.compile(r'[\\"\[\]{}]')  # what opens, closes or escapes in JSON text


def _too_deep_at(text: str) -> int:
    """Where ``text`` (JSON) opens its 256th nested array or object, outside strings (0 if it never
    does: the caller found it nested deeper some other way). Only the characters that open, close
    or escape are visited (found in C), so a long line of text costs little."""
    depth, in_string, skip = 0, False, -1
    for mark in _JSON_MARKS.finditer(text):
        at, char = mark.start(), mark.group()
        if at == skip:  # the character a backslash escapes
            continue
        if in_string:
            skip = at + 1 if char == "\\" else skip
            in_string = char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > _MAX_DEPTH:
                return at
        elif char in "]}":
            depth -= 1
    return 0


_CONTROL = re.compile("[\x00-\x1f]")  # raw in a JSON string, JSON forbids them (orjson refuses)


def _mended(data: bytes, error: orjson.JSONDecodeError) -> Any:
    """``data`` read by the standard library's parser, which takes lone surrogate escapes and (not
    ``strict``) raw control characters inside strings, after its bytes that are not UTF-8 became
    U+FFFD; lone surrogates are kept as their escapes, control characters as they are (the value
    a writer that forgot to escape them meant). Raises
    ``error`` (orjson's) when that does not read it either, or reads what orjson never would (NaN,
    Infinity), or recurses too deep."""
    text = data.decode("utf-8", errors="replace")
    if text == data.decode("utf-8", errors="ignore") and "\\u" not in text and not _CONTROL.search(text):
        raise error  # valid UTF-8 without escapes or control characters: nothing to mend
    try:
        value = json.loads(text, strict=False, parse_constant=_no_constant)
    except (ValueError, RecursionError):
        raise error from None
    return _without_surrogates(value)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_object(line: bytes) -> dict[str, Any]:
    """The JSON object a line of a trace or log holds (:func:`parse_json`); ValueError with the
    reason (``not JSON (...)``, ``not a JSON object``) for any other line: every reader of trace
    lines gives the same reason for the same line."""
    try:
        data = parse_json(line)
    except orjson.JSONDecodeError as exc:
        raise _BadLine(f"not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise _BadLine("not a JSON object")
    return data


def _parse_line(line: bytes) -> Event:
    data = parse_object(line)
    version = data.get("v")
    if version != SCHEMA_VERSION:
        raise _BadLine(f"schema version {_short(version)}, expected {SCHEMA_VERSION}")
    try:
        return event_from_dict(data)
    except ValueError as exc:
        raise _BadLine(str(exc)) from None


def trace_lines(path: Path) -> Iterator[tuple[int, bytes | None]]:
    """(line number, bytes) for every line of the file at ``path``; None for a line over
    :data:`MAX_LINE_BYTES` (skipped unread, so memory stays bounded). A UTF-8 byte-order mark
    before the first line (an editor on Windows saved the file) is not part of it.

    Refuses (one sentence, :class:`TraceFormatError`) what is not a regular file: a FIFO would
    block and ``/dev/zero`` never end.
    """
    try:
        handle = open_regular(path)
    except NotRegularFile as exc:
        raise TraceFormatError(f"{exc}: it cannot be a trace") from None
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read trace ({_reason(exc)})") from exc
    with handle:
        number = 0
        while line := _read_line(handle, path):
            number += 1
            if line is _OVERLONG:
                yield number, None
            else:
                yield number, line.removeprefix(codecs.BOM_UTF8) if number == 1 else line


def overlong(number: int) -> SkippedLine:
    """The skipped line :func:`trace_lines` reports as None."""
    return SkippedLine(number, f"longer than {MAX_LINE_BYTES // (1024 * 1024)} MB")


def _records(path: Path) -> Iterator[tuple[int, Event | SkippedLine]]:
    """(line number, event or skipped line) for every line of the trace at ``path``."""
    for number, line in trace_lines(path):
        yield number, overlong(number) if line is None else _record(line, number)


def _read_line(handle: IO[bytes], path: Path) -> bytes:
    try:
        line = handle.readline(MAX_LINE_BYTES + 1)
        if len(line) > MAX_LINE_BYTES and not line.endswith(b"\n"):
            while (more := handle.readline(1 << 20)) and not more.endswith(b"\n"):
                pass
            return _OVERLONG
    except OSError as exc:
        raise TraceFormatError(f"{path}: cannot read trace ({_reason(exc)})") from exc
    return line


_OVERLONG = b"\0overlong"  # a sentinel no trace line can be (a NUL outside a string is never JSON)


def _record(line: bytes, number: int) -> Event | SkippedLine:
    if not line.strip():
        return SkippedLine(number, "blank")
    try:
        return _parse_line(line)
    except _BadLine as exc:
        return SkippedLine(number, str(exc), torn=not line.endswith(b"\n"))


# The trace file states a torn last line was logged for (a log-once registry, the oldest forgotten first)
_warned_torn: dict[tuple[str, int], None] = {}
_WARNED_TORN_MAX = 1024


def scan_trace(path: Path | str) -> TraceScan:
    """Every readable event of the trace at ``path``, with the lines skipped and why (a torn last
    line, a line that is not JSON, an event whose fields have the wrong shape, another schema
    version). Raises :class:`TraceFormatError` only when the file cannot be read at all."""
    path = Path(path)
    events: list[Event] = []
    lines: list[int] = []
    skipped: list[SkippedLine] = []
    for number, record in _records(path):
        if isinstance(record, SkippedLine):
            if record.reason != "blank":
                skipped.append(record)
        else:
            events.append(record)
            lines.append(number)
    return TraceScan(path, tuple(events), tuple(lines), tuple(skipped))


def iter_trace(path: Path) -> Iterator[Event]:
    """Events of a trace file in order, strictly: a line that is not a valid event raises
    :class:`TraceFormatError` naming the file, the line and the problem (and nothing else is
    raised), except an unreadable last line (a crash mid-write), which is skipped with a warning
    logged once per file state however often the trace is read. :func:`scan_trace` skips instead."""
    pending: SkippedLine | None = None
    for _, record in _records(path):
        if isinstance(record, SkippedLine) and record.reason == "blank":
            continue
        if pending is not None:
            raise TraceFormatError(f"{path}:{pending.line}: {pending.reason}")
        if isinstance(record, SkippedLine):
            pending = record
            continue
        yield record
    if pending is not None:
        _warn_torn(path, pending)


def _warn_torn(path: Path, skipped: SkippedLine) -> None:
    try:
        size = path.stat().st_size
    except OSError:
        size = -1
    key = (str(path.absolute()), size)
    if key not in _warned_torn:
        if len(_warned_torn) >= _WARNED_TORN_MAX:
            del _warned_torn[next(iter(_warned_torn))]
        _warned_torn[key] = None
        log.warning("trace.torn_last_line", path=str(path), line=skipped.line, error=skipped.reason)


def read_trace(path: Path | str) -> list[Event]:
    return list(iter_trace(Path(path)))


def load_history(events: Iterable[Event] | Path | str) -> list[Message]:
    """The full message history recorded in a trace (or an event list)."""
    if isinstance(events, str | Path):
        events = iter_trace(Path(events))
    return [e.message for e in events if isinstance(e, MessageEvent)]


def now() -> float:
    return time.time()
