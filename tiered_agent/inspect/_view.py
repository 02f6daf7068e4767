"""One trace as a run: its iterations (what was sent, what was hidden, what it cost) and totals.

Built from the raw events of :func:`~tiered_agent.inspect._load.load_trace`;
every key is read defensively, so a torn, older or newer trace gives what it
holds. A resumed run (several ``run_start`` events in one file) is one run
whose iterations continue; its segments are counted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._messages import Message
from ._load import LoadedTrace, RawEvent
from ._record import PromptRecord, parse_record
from ._totals import Totals
from ._values import as_float, as_int, as_mapping, as_str

__all__ = [
    "IterationView",
    "MessageView",
    "RetrievalView",
    "RunView",
    "SummaryView",
    "ToolResultView",
    "build_run",
]


@dataclass(frozen=True, slots=True)
class MessageView:
    line: int  # in the trace file: where the full content is
    message: Message


@dataclass(frozen=True, slots=True)
class ToolResultView:
    tool_call_id: str
    iteration: int
    name: str
    is_error: bool = False
    error_kind: str | None = None
    dedup_of: str | None = None
    output_chars: int = 0


@dataclass(frozen=True, slots=True)
class SummaryView:
    first: int
    last: int
    text: str
    model: str | None  # None: the deterministic digest
    landed_at: int  # the iteration in progress when it landed
    line: int
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class RetrievalView:
    iteration: int
    filters: Mapping[str, Any]
    matched: int
    page: int
    pages: int


@dataclass(frozen=True, slots=True)
class IterationView:
    """One iteration: the prompt's record (the last request sent) and its own totals."""

    iteration: int
    totals: Totals
    record: PromptRecord = field(default_factory=PromptRecord)
    tool_calls: tuple[str, ...] = ()
    finish_reason: str | None = None
    requests: int = 0  # model requests (2 after an emergency compaction and retry)
    errors: tuple[tuple[str, str], ...] = ()  # (kind, message) of error events
    summaries: tuple[int, ...] = ()  # indexes into RunView.summaries of those that landed here


@dataclass(frozen=True, slots=True)
class RunView:
    path: Path
    run_id: str = ""
    model: str = ""
    task: str = ""
    started_at: float | None = None
    stop_reason: str | None = None  # None: the trace has no run_end (still running, or killed)
    error: str | None = None
    output: str | None = None
    segments: int = 0
    source: str | None = None  # set on imported recordings (and on resumed segments)
    config: Mapping[str, Any] = field(default_factory=dict)
    tool_names: tuple[str, ...] = ()
    iterations: tuple[IterationView, ...] = ()
    messages: tuple[MessageView, ...] = ()
    tool_results: Mapping[str, ToolResultView] = field(default_factory=dict)
    summaries: tuple[SummaryView, ...] = ()
    retrievals: tuple[RetrievalView, ...] = ()
    unknown_events: Mapping[str, int] = field(default_factory=dict)
    warning: str | None = None

    @property
    def totals(self) -> Totals:
        cut = {i.tool_call_id for v in self.iterations for i in v.record.items if i.kind == "truncated"}
        total = Totals(runs=1, outputs_truncated=len(cut))
        for view in self.iterations:
            total = total + view.totals
        return total

    @property
    def stop_label(self) -> str:
        """The stop reason; ``imported`` for a recording without one, ``incomplete`` for a cut-off run."""
        if self.stop_reason:
            return self.stop_reason
        return "imported" if self.source and not self.source.startswith("resume of") else "incomplete"

    @property
    def measured(self) -> bool:
        """Whether the trace has the context pipeline's records (imported recordings have none)."""
        return any(view.requests for view in self.iterations)


@dataclass
class _Iteration:
    """Mutable accumulator of one iteration while the events are read."""

    number: int
    totals: Totals = field(default_factory=Totals)
    record: PromptRecord = field(default_factory=PromptRecord)
    sent: int = 0
    full: int = 0
    tool_calls: list[str] = field(default_factory=list)
    finish_reason: str | None = None
    requests: int = 0
    errors: list[tuple[str, str]] = field(default_factory=list)
    summaries: list[int] = field(default_factory=list)

    def freeze(self) -> IterationView:
        sent = Totals(
            iterations=1 if self.requests or self.totals.model_calls else 0,
            sent_tokens=self.sent,
            full_tokens=self.full,
            truncated_outputs=self.record.truncated_outputs,
            truncated_chars=self.record.truncated_chars,
            masked_outputs=self.record.masked_outputs,
            masked_chars=self.record.masked_chars,
            dedup_pointers=self.record.pointer_outputs,
            dedup_pointer_chars=self.record.pointer_chars,
            aging_epochs=int(self.record.new_epoch),
        )
        return IterationView(
            iteration=self.number,
            totals=self.totals + sent,
            record=self.record,
            tool_calls=tuple(self.tool_calls),
            finish_reason=self.finish_reason,
            requests=self.requests,
            errors=tuple(self.errors),
            summaries=tuple(self.summaries),
        )


class _Builder:
    def __init__(self, loaded: LoadedTrace) -> None:
        self.loaded = loaded
        self.meta: dict[str, Any] = {"segments": 0}
        self.iterations: dict[int, _Iteration] = {}
        self.current = 0
        self.messages: list[MessageView] = []
        self.tool_results: dict[str, ToolResultView] = {}
        self.summaries: list[SummaryView] = []
        self.retrievals: list[RetrievalView] = []
        self.unknown: Counter[str] = Counter()

    def build(self) -> RunView:
        for event in self.loaded.events:
            handler = _HANDLERS.get(event.type)
            if handler is None:
                self.unknown[event.type or "?"] += 1
            else:
                handler(self, event)
        return RunView(
            path=self.loaded.path,
            iterations=tuple(self.iterations[n].freeze() for n in sorted(self.iterations)),
            messages=tuple(self.messages),
            tool_results=self.tool_results,
            summaries=tuple(self.summaries),
            retrievals=tuple(self.retrievals),
            unknown_events=dict(self.unknown),
            warning=self.loaded.warning,
            **self.meta,
        )

    def at(self, iteration: Any) -> _Iteration:
        number = as_int(iteration)
        if number not in self.iterations:
            self.iterations[number] = _Iteration(number)
        return self.iterations[number]

    def add(self, iteration: Any, **values: Any) -> _Iteration:
        acc = self.at(iteration)
        acc.totals = acc.totals + Totals(**values)
        return acc

    # ------------------------------------------------------------------ handlers
    def run_start(self, event: RawEvent) -> None:
        data = event.data
        self.meta["segments"] += 1
        if self.meta["segments"] > 1:
            return  # a resume: the first segment names the run
        tools = data.get("tools")
        if not isinstance(tools, list):
            tools = []
        self.meta |= {
            "run_id": as_str(data.get("run_id")),
            "model": as_str(data.get("model")),
            "task": as_str(data.get("task")),
            "started_at": as_float(data.get("started_at")),
            "source": data.get("source") if isinstance(data.get("source"), str) else None,
            "config": as_mapping(data.get("config")),
            "tool_names": tuple(as_str(as_mapping(as_mapping(t).get("function")).get("name")) for t in tools),
        }

    def message(self, event: RawEvent) -> None:
        raw = as_mapping(event.data.get("message"))
        try:
            message = Message.from_openai(raw)
        except (ValueError, TypeError):
            return
        self.messages.append(MessageView(event.line, message))
        if message.role == "assistant" and message.iteration > 0:
            acc = self.add(message.iteration, tool_calls=len(message.tool_calls))
            acc.tool_calls.extend(call.name for call in message.tool_calls)

    def model_request(self, event: RawEvent) -> None:
        data = event.data
        acc = self.at(data.get("iteration"))
        self.current = max(self.current, acc.number)
        acc.requests += 1
        acc.sent = as_int(data.get("prompt_tokens_local"))
        acc.full = as_int(data.get("counterfactual_tokens"), acc.sent)
        acc.record = parse_record(as_mapping(data.get("context")))

    def model_response(self, event: RawEvent) -> None:
        data = event.data
        usage = as_mapping(data.get("usage"))
        acc = self.add(
            data.get("iteration"),
            model_calls=1,
            prompt_tokens=as_int(usage.get("prompt_tokens")),
            completion_tokens=as_int(usage.get("completion_tokens")),
            cached_tokens=as_int(usage.get("cached_tokens")),
            cost=as_float(usage.get("cost")),
        )
        acc.finish_reason = data.get("finish_reason") if isinstance(data.get("finish_reason"), str) else None

    def tool_result(self, event: RawEvent) -> None:
        data = event.data
        dedup_of = data.get("dedup_of") if isinstance(data.get("dedup_of"), str) else None
        view = ToolResultView(
            tool_call_id=as_str(data.get("tool_call_id")),
            iteration=as_int(data.get("iteration")),
            name=as_str(data.get("name")),
            is_error=data.get("is_error") is True,
            error_kind=data.get("error_kind") if isinstance(data.get("error_kind"), str) else None,
            dedup_of=dedup_of,
            output_chars=as_int(data.get("output_chars")),
        )
        self.tool_results[view.tool_call_id] = view
        self.add(view.iteration, tool_errors=int(view.is_error), dedup_hits=int(dedup_of is not None))

    def error(self, event: RawEvent) -> None:
        data = event.data
        acc = self.add(data.get("iteration"), errors=1)
        acc.errors.append((as_str(data.get("kind"), "error"), as_str(data.get("message"))))

    def step_error(self, event: RawEvent) -> None:
        """A context step that raised and was skipped (the run went on): an error of its iteration."""
        data = event.data
        acc = self.add(data.get("iteration"), errors=1)
        what = f"{as_str(data.get('step'), '?')} ({as_str(data.get('phase'), '?')})"
        acc.errors.append(
            ("step_error", f"{what}: {as_str(data.get('error'))}: {as_str(data.get('message'))}")
        )

    def summary(self, event: RawEvent) -> None:
        data = event.data
        view = SummaryView(
            first=as_int(data.get("first_iteration")),
            last=as_int(data.get("last_iteration")),
            text=as_str(data.get("text")),
            model=data.get("model") if isinstance(data.get("model"), str) else None,
            landed_at=self.current,
            line=event.line,
            input_tokens=as_int(data.get("input_tokens")),
            output_tokens=as_int(data.get("output_tokens")),
        )
        self.summaries.append(view)
        acc = self.add(self.current, summaries=1, summary_tokens=view.input_tokens + view.output_tokens)
        acc.summaries.append(len(self.summaries) - 1)

    def retrieval(self, event: RawEvent) -> None:
        data = event.data
        view = RetrievalView(
            iteration=as_int(data.get("iteration")),
            filters=as_mapping(data.get("filters")),
            matched=as_int(data.get("matched")),
            page=as_int(data.get("page"), 1),
            pages=as_int(data.get("pages"), 1),
        )
        self.retrievals.append(view)
        self.add(view.iteration, retrievals=1)

    def run_end(self, event: RawEvent) -> None:
        data = event.data
        self.meta["stop_reason"] = as_str(data.get("stop_reason"), "unknown")
        self.meta["output"] = data.get("output") if isinstance(data.get("output"), str) else None
        self.meta["error"] = data.get("error") if isinstance(data.get("error"), str) else None


# Each event type's handler, a plain function of the builder (a table of bound methods kept on the
# builder would tie it into a reference cycle: every view built would wait for the garbage collector).
_HANDLERS: Mapping[str, Callable[[_Builder, RawEvent], None]] = {
    "run_start": _Builder.run_start,
    "message": _Builder.message,
    "model_request": _Builder.model_request,
    "model_response": _Builder.model_response,
    "tool_result": _Builder.tool_result,
    "error": _Builder.error,
    "step_error": _Builder.step_error,
    "summary": _Builder.summary,
    "retrieval": _Builder.retrieval,
    "run_end": _Builder.run_end,
}


def build_run(loaded: LoadedTrace) -> RunView:
    """The run a loaded trace holds (an empty view when it holds no events)."""
    return _Builder(loaded).build()
