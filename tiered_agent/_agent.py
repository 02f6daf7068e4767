"""The agent: a loop of prompt → model → tools, with a trace of everything."""

from __future__ import annotations

import contextlib
import dataclasses
import time
import uuid
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import structlog

from ._affinity import cache_affinity
from ._errors import (
    AuthenticationError,
    ConfigurationError,
    ContextBudgetExceeded,
    ContextWindowExceeded,
    ModelError,
    ModelNotFoundError,
    TraceWriteError,
)
from ._lock import TraceLock
from ._messages import Message, ToolCall, Usage
from ._model import (
    DEFAULT_MAX_RETRIES,
    DEFAULT_REQUEST_TIMEOUT_S,
    LiteLLMModel,
    Model,
    ModelReply,
    RetryPolicy,
    stable_prefix,
)
from ._result import IterationStats, RunResult, StopReason
from ._resume import INTERRUPTED, ResumeState, describe_notes
from ._tokens import TokenCounter
from ._tools import MAX_ARGUMENT_CHARS, Tool, ToolOutcome, ToolSet, fit_call
from ._trace import (
    ErrorEvent,
    Event,
    MessageEvent,
    ModelRequest,
    ModelResponse,
    RunEnded,
    RunStarted,
    ToolResult,
    TraceWriter,
    redact,
    remembering_clean_texts,
)
from .context._dispatch import ToolKind
from .context._manager import ContextManager, PreparedPrompt
from .context._policy import Policy
from .context._presets import as_policy
from .context.summary._summarizer import Summarizer
from .mcp._config import MCPServerConfig
from .mcp._runtime import check_servers, open_mcp_tools
from .telemetry import Telemetry, run_observer

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Agent", "RunLimits"]

log = structlog.get_logger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are an autonomous agent. Use the tools to complete the task; when it is done, "
    "reply with the final answer and no tool calls. Long tool outputs may be shortened and "
    "older iterations summarized: context_retrieve recovers any full output."
)
MAX_EMPTY_REPLIES = 3


@dataclass(frozen=True, slots=True)
class RunLimits:
    """When a run stops besides a final answer. ``token_budget`` counts prompt + completion tokens."""

    max_iterations: int = 50
    token_budget: int | None = None
    max_parallel_tools: int = 8

    def __post_init__(self) -> None:
        if self.max_iterations < 1:
            raise ConfigurationError("RunLimits.max_iterations must be >= 1")
        if self.token_budget is not None and self.token_budget < 1:
            raise ConfigurationError("RunLimits.token_budget must be >= 1 or None")
        if self.max_parallel_tools < 1:
            raise ConfigurationError("RunLimits.max_parallel_tools must be >= 1")


class Agent:
    """A tool-using agent over any litellm model, with a tiered context pipeline.

    Constructing an agent has no side effects: no import of litellm, no file, no task.
    ``mcp_servers`` (see :func:`~tiered_agent.load_mcp_config`) start with each run and
    stop with it; their tools join ``tools`` as ``SERVER__TOOL``.
    ``request_timeout_s`` (default 60) and ``max_retries`` (default 2) configure the
    :class:`LiteLLMModel` built from a model string; a :class:`Model` object brings its own.
    """

    def __init__(
        self,
        model: str | Model,
        *,
        tools: Sequence[Tool] = (),
        context: Policy | str = "tiered",
        system_prompt: str = DEFAULT_SYSTEM_PROMPT,
        limits: RunLimits = RunLimits(),
        trace_dir: Path | str = Path("traces/runs"),
        on_event: Callable[[Event], None] | None = None,
        summarizer: Summarizer | None = None,
        telemetry: Telemetry | bool | None = None,
        mcp_servers: Sequence[MCPServerConfig] = (),
        request_timeout_s: float | None = None,
        max_retries: int | None = None,
    ) -> None:
        self.model: Model = _model(model, request_timeout_s, max_retries)
        self.tools = ToolSet(tools)
        self.context = as_policy(context)
        self.system_prompt = system_prompt
        self.limits = limits
        self.trace_dir = Path(trace_dir)
        self.on_event = on_event
        self.summarizer = summarizer  # None: context.summary_model via litellm, else the digest
        # OpenTelemetry spans: None = on when the environment or the application configured
        # OpenTelemetry (see Telemetry), True / Telemetry(...) = on, False = off.
        self.telemetry = telemetry
        self.mcp_servers = check_servers(mcp_servers)

    async def run(self, task: str) -> RunResult:
        """Run ``task`` to completion and return the result. Each iteration:

        1. **Prompt**: the context manager turns the full history into the prompt
           (truncation, window, summaries, safety net) and counts it, and the full
           history's counterfactual, with the local tokenizer.
        2. **Model**: one ``litellm.acompletion`` call (retried on rate limits, 5xx,
           timeouts and refused connections; a context-window error triggers one
           emergency compaction and a retry).
        3. **Tools**: the reply's tool calls run concurrently (identical read-only
           calls are served from the dedup cache); results are appended in call order.
           A reply without tool calls is the final answer.
        4. **Trace**: every message (tool outputs untruncated), usage and context
           decision is appended to the JSONL trace, flushed at the iteration boundary.

        The run stops at the final answer, at ``limits.max_iterations``, when the
        next call would exceed ``limits.token_budget``, on a model error that
        retries could not fix, or on cancellation (the trace still gets its end).
        """
        run = _Run(self, task)
        # the run's calls share one cache affinity (_affinity.py); its redactions one memory of clean texts
        with cache_affinity(run.run_id), remembering_clean_texts():
            return await run.execute()

    async def resume(self, trace_path: Path | str, follow_up: str | None = None) -> RunResult:
        """Continue a run from its trace, appending to the same file.

        The full history and the latest summary are restored; tool calls the
        run never answered (it stopped mid-iteration) get an "interrupted"
        result so every call keeps its result, and a history no provider would
        accept (duplicated or misplaced lines) is repaired (see
        :func:`~._resume.repair_history`; each change is recorded as an ``error``
        event of kind ``resume_repair``). ``follow_up`` adds a user message
        first; it is required when the run had already answered. Another process
        running or resuming the same trace makes this raise
        :class:`~._errors.TraceInUse`.
        """
        path = Path(trace_path)
        lock = TraceLock(path)
        try:
            lock.acquire()  # before reading: no other process appends between the read and the run
            state = ResumeState.load(path, follow_up)
            run = _Run(self, state.task, resume=state, lock=lock)
        except OSError as exc:
            lock.release()
            raise TraceWriteError(f"cannot lock the trace {path}: {exc.strerror or exc}") from exc
        except BaseException:
            lock.release()
            raise
        with cache_affinity(run.run_id), remembering_clean_texts():
            return await run.execute()


def _model(model: str | Model, request_timeout_s: float | None, max_retries: int | None) -> Model:
    if not isinstance(model, str):
        if request_timeout_s is not None or max_retries is not None:
            raise ConfigurationError(
                "request_timeout_s and max_retries apply to a model string; "
                "set timeout_s and retry on the LiteLLMModel you pass instead"
            )
        return model
    if max_retries is not None and max_retries < 0:
        raise ConfigurationError(f"max_retries must be >= 0, got {max_retries}")
    retries = DEFAULT_MAX_RETRIES if max_retries is None else max_retries
    timeout = DEFAULT_REQUEST_TIMEOUT_S if request_timeout_s is None else request_timeout_s
    return LiteLLMModel(model, timeout_s=timeout, retry=RetryPolicy(max_attempts=retries + 1))


def _open_calls(history: Sequence[Message]) -> tuple[int, list[ToolCall]]:
    """The iteration of the last assistant message and its tool calls that have no result yet."""
    last_assistant = next((m for m in reversed(history) if m.role == "assistant"), None)
    if last_assistant is None or not last_assistant.tool_calls:
        return 0, []
    iteration = last_assistant.iteration
    answered = {m.tool_call_id for m in history if m.role == "tool" and m.iteration == iteration}
    return iteration, [c for c in last_assistant.tool_calls if c.id not in answered]


class _Events:
    """Where a run's events go: its trace, then its observers; a paid reply reaches the disk before
    its tools run. The run and its context manager hold it and it holds neither of them, so a
    finished run is freed as soon as it is dropped, without waiting for the cycle collector (a
    batch runs hundreds of agents in one process)."""

    def __init__(self, trace: TraceWriter) -> None:
        self.trace = trace
        self.observers: tuple[Callable[[Event], None], ...] = ()

    def __call__(self, event: Event) -> None:
        self.trace.write(event)
        for observe in self.observers:
            observe(event)
        if isinstance(event, ModelResponse):
            self.trace.flush()


class _Run:
    """The state of one run; created by :meth:`Agent.run`, never shared."""

    def __init__(
        self, agent: Agent, task: str, resume: ResumeState | None = None, lock: TraceLock | None = None
    ) -> None:
        self.agent = agent
        self.task = task
        self.resumed = resume
        self.run_id = uuid.uuid4().hex[:12]
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S")
        self.trace_path = resume.path if resume else agent.trace_dir / f"{stamp}-{self.run_id}.jsonl"
        self.spill_dir = self.trace_path.with_suffix(".outputs")
        self.trace = TraceWriter(self.trace_path, lock=lock)
        self.events = _Events(self.trace)  # the context manager's events go here, not through the run
        self.started = False  # run_start is written: from then on the trace gets its run_end
        self.created = False  # this run created the trace file (not a resume)
        self.counter = TokenCounter.for_model(agent.model.name)
        self.history: list[Message] = []
        self.stats: list[IterationStats] = []
        self.usage = Usage()
        self.spent = 0  # tokens charged against the budget: provider usage, else local counts
        self.finished: dict[str, ToolOutcome] = {}  # outcomes of the current batch, by call id
        self.refused: dict[str, str] = {}  # why each call of the current reply cannot run, by id
        self.empty_replies = 0
        self.manager = ContextManager(
            agent.context,
            counter=self.counter,
            context_window=agent.model.context_window(),
            summarizer=agent.summarizer,
            on_event=self.events,
            model=agent.model.name,
        )
        # the closures hold the run's list and dict, not the run (no reference cycle through them)
        history, finished = self.history, self.finished
        tools = agent.tools.with_tools(self.manager.tools(lambda: history))
        self.tools = tools.observed(lambda call, outcome: finished.__setitem__(call.id, outcome))
        telemetry = run_observer(agent.telemetry)
        self.events.observers = tuple(o for o in (agent.on_event, telemetry) if o is not None)
        # around each tool call, in its task: telemetry makes the call's execute_tool span current there
        self.tool_scope: Callable[[ToolCall, float], AbstractContextManager[None]] = (
            telemetry.tool_scope if telemetry is not None else _no_scope
        )
        # around the whole run: telemetry's run span, current for what the run starts (MCP servers)
        self.run_scope: Callable[[], AbstractContextManager[None]] = (
            telemetry.run_scope if telemetry is not None else nullcontext
        )
        self.mcp_servers: tuple[dict[str, Any], ...] = ()  # what run_start records of them

    # ------------------------------------------------------------------ events
    def emit(self, event: Event) -> None:
        self.events(event)

    def append(self, message: Message) -> None:
        """Add a message to the history (what the model will see) and the trace, secrets redacted."""
        message = redact(message)
        self.history.append(message)
        self.emit(MessageEvent(message))

    # ------------------------------------------------------------------ driver
    async def execute(self) -> RunResult:
        """Run the loop; whatever ends it (a signal, a full disk), the trace gets its ``run_end``.

        A trace that cannot be written raises :class:`TraceWriteError` once; the trace keeps
        every complete event written before the failure. A run that fails before its
        ``run_start`` is written (an MCP server that cannot start) leaves no trace behind, and a
        resume that fails then appends nothing: never a ``run_end`` without its ``run_start``.
        """
        with self.run_scope():
            result = await self.traced()
        if self.trace.error is not None:  # run_end itself could not be written
            raise self.trace.error
        return result

    async def traced(self) -> RunResult:
        """The run between its trace's ``run_start`` and ``run_end`` (see :meth:`finish` and
        :meth:`abandon` for a run that fails before it starts)."""
        self.created = not self.trace_path.exists()
        self.trace.open()
        try:
            async with self.manager, open_mcp_tools(self.agent.mcp_servers, self.tools.names) as mcp:
                self.tools = self.tools.with_tools(mcp.tools)
                self.mcp_servers = mcp.servers
                self.start()
                reason, output, error = await self.loop()
        except anyio.get_cancelled_exc_class():
            with anyio.CancelScope(shield=True):
                self.finish(StopReason.CANCELLED, None, "cancelled")
            raise
        except BaseException as exc:
            self.finish(StopReason.ERROR, None, f"{type(exc).__name__}: {exc}")
            raise
        return self.finish(reason, output, error)

    def start(self) -> None:
        agent = self.agent
        self.emit(
            RunStarted(
                run_id=self.run_id,
                model=agent.model.name,
                task=self.task,
                config={
                    "context": agent.context.to_dict(),
                    "context_window": self.manager.context_window,
                    "limits": dataclasses.asdict(agent.limits),
                    "tokenizer": self.counter.encoding_name,
                    "read_only_tools": sorted(t.name for t in self.tools if t.read_only),
                    "api_base": getattr(agent.model, "api_base", None),
                    **({"mcp_servers": list(self.mcp_servers)} if self.mcp_servers else {}),
                },
                tools=self.tools.schemas(),
                started_at=time.time(),
                source=f"resume of {self.trace_path.name}" if self.resumed else None,
                conversation_id=self.trace_path.stem,
            )
        )
        self.started = True
        if self.resumed is None:
            self.append(Message("system", self.agent.system_prompt))
            self.append(Message("user", self.task))
        else:
            self.restore(self.resumed)
        self.trace.flush()

    def restore(self, state: ResumeState) -> None:
        """Reload a traced history; only the messages the trace does not hold yet are written, and
        each repair the history needed is recorded (and shown) as a ``resume_repair`` error event.
        The context steps continue from the records that fit the history."""
        last = max(m.iteration for m in state.history)
        for note in describe_notes(state.notes):
            self.emit(ErrorEvent(last, "resume_repair", note))
        appended = set(map(id, state.appended))
        for message in state.history:
            if id(message) in appended:
                self.append(message)
            else:
                self.history.append(message)
        self.manager.restore(state.records)

    async def loop(self) -> tuple[StopReason, str | None, str | None]:
        first = max((m.iteration for m in self.history), default=0) + 1
        for iteration in range(first, first + self.agent.limits.max_iterations):
            self.finished.clear()
            try:
                prepared = await self.manager.prepare(self.history, self.tools.schemas())
                if self.over_budget(prepared):
                    return StopReason.TOKEN_BUDGET, None, None
                reply, prepared = await self.call_model(iteration, prepared)
                self.charge(prepared, reply)
            except (AuthenticationError, ModelNotFoundError):
                raise  # configuration problems: the developer must see them as exceptions
            except (ModelError, ContextBudgetExceeded) as exc:
                self.emit(ErrorEvent(iteration, type(exc).__name__, str(exc)))
                return StopReason.ERROR, None, str(exc)
            done = await self.handle_reply(iteration, prepared, reply)
            self.trace.flush()
            if done is not None:
                return done
        return StopReason.MAX_ITERATIONS, None, None

    def over_budget(self, prepared: PreparedPrompt) -> bool:
        budget = self.agent.limits.token_budget
        return budget is not None and self.spent + prepared.estimated_tokens > budget

    def charge(self, prepared: PreparedPrompt, reply: ModelReply) -> None:
        """Count a reply against the budget: the provider's usage, or local counts where it sent none."""
        prompt = reply.usage.prompt_tokens or prepared.estimated_tokens
        completion = reply.usage.completion_tokens or self.counter.count_message(reply.message)
        self.spent += prompt + completion

    async def call_model(self, iteration: int, prepared: PreparedPrompt) -> tuple[ModelReply, PreparedPrompt]:
        """One model call; a context-window error compacts once and retries."""
        self.record_request(iteration, prepared)
        try:
            return await self.send(prepared), prepared
        except ContextWindowExceeded as exc:
            self.emit(ErrorEvent(iteration, "ContextWindowExceeded", f"{exc}; compacting and retrying once"))
        prepared = await self.manager.prepare(self.history, self.tools.schemas(), force_compact=True)
        self.record_request(iteration, prepared)
        return await self.send(prepared), prepared

    async def send(self, prepared: PreparedPrompt) -> ModelReply:
        """The request: the prompt, its tools and the stable prefixes a model with explicit cache
        breakpoints marks (:func:`~._model.stable_prefix`)."""
        with stable_prefix(prepared.built.stable):
            return await self.agent.model.complete(prepared.messages, [dict(t) for t in prepared.tools])

    def record_request(self, iteration: int, prepared: PreparedPrompt) -> None:
        context = prepared.record().to_dict()
        self.emit(
            ModelRequest(
                iteration=iteration,
                n_messages=len(prepared.built.messages),
                prompt_tokens_local=prepared.prompt_tokens,
                estimated_prompt_tokens=prepared.estimated_tokens,
                counterfactual_tokens=prepared.counterfactual_tokens,
                context=context,
                prompt=prepared.built.messages,
            )
        )

    # ------------------------------------------------------------------ reply
    async def handle_reply(
        self, iteration: int, prepared: PreparedPrompt, reply: ModelReply
    ) -> tuple[StopReason, str | None, str | None] | None:
        self.manager.observe_usage(reply.usage.prompt_tokens, prepared.prompt_tokens)
        self.usage = self.usage + reply.usage
        message = dataclasses.replace(
            reply.message, iteration=iteration, tool_calls=self.fit_calls(iteration, reply.message.tool_calls)
        )
        self.append(message)
        self.emit(
            ModelResponse(
                iteration=iteration,
                usage=reply.usage,
                model=reply.model,
                finish_reason=reply.finish_reason,
                latency_s=reply.latency_s,
                attempts=reply.attempts,
                route=reply.route,
            )
        )
        for call_id, problem in self.refused.items():
            self.emit(ErrorEvent(iteration, "reply_repair", f"tool call {call_id}: {problem}"))
        hits_before = self.manager.dedup_hits
        if message.tool_calls:
            await self.run_tools(iteration, message.tool_calls)
        self.stats.append(
            IterationStats(
                iteration=iteration,
                usage=reply.usage,
                prompt_tokens_local=prepared.prompt_tokens,
                counterfactual_tokens=prepared.counterfactual_tokens,
                tool_calls=tuple(c.name for c in message.tool_calls),
                dedup_hits=self.manager.dedup_hits - hits_before,
            )
        )
        if message.tool_calls:
            self.empty_replies = 0
            return None
        if message.text.strip():
            return StopReason.ANSWERED, message.text, None
        return self.empty_reply(iteration)

    def fit_calls(self, iteration: int, calls: Sequence[ToolCall]) -> tuple[ToolCall, ...]:
        """The reply's calls as the next request can carry them (:func:`~._tools.fit_call`, ids
        unique); why each call that cannot run goes to ``refused``, to be recorded (an ``error``
        event of kind ``reply_repair``) and answered (:meth:`run_tools`), so the model can act on it
        and the provider never sees a history it refuses. Arguments may hold as many characters as
        the model's window holds tokens (about a quarter of it), at least 200,000."""
        limit = max(MAX_ARGUMENT_CHARS, self.manager.context_window or 0)
        self.refused.clear()
        fitted = []
        for call in _unique_ids(calls, iteration):
            fit, problem = fit_call(call, limit)
            if problem is not None:
                self.refused[fit.id] = problem
            fitted.append(fit)
        return tuple(fitted)

    def refusal(self, call: ToolCall) -> ToolOutcome | None:
        """The answer to a call :meth:`fit_calls` refused, None for a call that runs."""
        problem = self.refused.get(call.id)
        if problem is None:
            return None
        tools = ", ".join(self.tools.names)
        return ToolOutcome.error(
            "invalid_call", f"Error: this call was not run: {problem}. Available tools: {tools}."
        )

    def empty_reply(self, iteration: int) -> tuple[StopReason, str | None, str | None] | None:
        self.empty_replies += 1
        text = "the model replied with neither text nor tool calls"
        self.emit(ErrorEvent(iteration, "empty_reply", text))
        if self.empty_replies >= MAX_EMPTY_REPLIES:
            return StopReason.ERROR, None, f"{text} {self.empty_replies} times in a row"
        self.append(
            Message(
                "user",
                "Your last reply was empty. Call a tool, or answer with the final result as text.",
                iteration=iteration,
            )
        )
        return None

    # ------------------------------------------------------------------ tools
    async def run_tools(self, iteration: int, calls: Sequence[ToolCall]) -> None:
        """Serve the calls through the context manager's dispatch (dedup, batch rules), executing
        the rest concurrently; append the results in call order."""
        timings: dict[int, tuple[float, float]] = {}  # call index -> (wall-clock start, duration)

        async def execute(indexes: Sequence[int]) -> list[ToolOutcome]:
            return await self.execute_concurrently(calls, indexes, timings)

        results = await self.manager.dispatch(calls, self.tool_kind, execute, iteration=iteration)
        for index, result in enumerate(results):
            started_at, duration = timings.get(index, (None, 0.0))
            self.record_tool(
                iteration,
                result.call,
                result.outcome,
                dedup_of=result.dedup_of,
                duration=duration,
                started_at=started_at,
            )

    def tool_kind(self, call: ToolCall) -> ToolKind:
        tool = self.tools.get(call.name)
        return ToolKind(
            read_only=tool is not None and tool.read_only, internal=tool is not None and tool.internal
        )

    async def execute_concurrently(
        self, calls: Sequence[ToolCall], indexes: Sequence[int], timings: dict[int, tuple[float, float]]
    ) -> list[ToolOutcome]:
        """Run ``calls[i]`` for each index concurrently (bounded); outcomes in index order."""
        limiter = anyio.CapacityLimiter(self.agent.limits.max_parallel_tools)
        outcomes: dict[int, ToolOutcome] = {}

        async def run_one(index: int) -> None:
            refused = self.refusal(calls[index])
            if refused is not None:  # answered with why, never run
                outcomes[index] = self.finished[calls[index].id] = refused
                return
            async with limiter:
                started_at, started = time.time(), time.perf_counter()
                with self.tool_scope(calls[index], started_at):
                    outcomes[index] = await self.tools.execute(calls[index], spill_dir=self.spill_dir)
                timings[index] = (started_at, time.perf_counter() - started)

        async with anyio.create_task_group() as group:
            for index in indexes:
                group.start_soon(run_one, index)
        return [outcomes[index] for index in indexes]

    def record_tool(
        self,
        iteration: int,
        call: ToolCall,
        outcome: ToolOutcome,
        *,
        dedup_of: str | None,
        duration: float,
        started_at: float | None = None,
    ) -> None:
        self.append(
            Message("tool", outcome.content, tool_call_id=call.id, name=call.name, iteration=iteration)
        )
        self.emit(
            ToolResult(
                iteration=iteration,
                tool_call_id=call.id,
                name=call.name,
                is_error=outcome.is_error,
                duration_s=round(duration, 6),
                output_chars=len(outcome.content),
                dedup_of=dedup_of,
                error_kind=outcome.error_kind,
                started_at=started_at,
            )
        )
        if outcome.is_error:
            log.info("tool.error", tool=call.name, kind=outcome.error_kind, iteration=iteration)

    # ------------------------------------------------------------------ end
    def finish(self, reason: StopReason, output: str | None, error: str | None) -> RunResult:
        """Close open calls, record ``run_end`` and close the trace (never raises for the trace)."""
        if not self.started:
            self.abandon()
        else:
            self.close_open_calls()
        result = RunResult(
            output=output,
            stop_reason=reason,
            iterations=tuple(self.stats),
            usage=self.usage,
            trace_path=self.trace_path,
            summary_usage=self.manager.summary_usage,
            error=error,
        )
        if self.started:
            self.emit(
                RunEnded(
                    stop_reason=reason.value,
                    output=output,
                    iterations=len(self.stats),
                    usage=self.usage,
                    prompt_tokens_local=result.prompt_tokens_local,
                    counterfactual_tokens=result.counterfactual_tokens,
                    error=error,
                )
            )
        self.trace.close()
        return result

    def abandon(self) -> None:
        """Nothing of this run reached the trace before it failed: write nothing, and remove the file
        this run created (it is empty: events are buffered until ``run_start`` is flushed)."""
        self.trace.discard()
        if self.created:
            with contextlib.suppress(FileNotFoundError):
                if self.trace_path.stat().st_size == 0:
                    self.trace_path.unlink()

    def close_open_calls(self) -> None:
        """Give each call of an interrupted batch a result: its outcome if it finished, else "interrupted"."""
        iteration, calls = _open_calls(self.history)
        for call in calls:
            outcome = self.finished.get(call.id) or ToolOutcome.error("interrupted", INTERRUPTED)
            self.record_tool(iteration, call, outcome, dedup_of=None, duration=0.0)


def _no_scope(call: ToolCall, started_at: float) -> AbstractContextManager[None]:
    return nullcontext()


def _unique_ids(calls: Sequence[ToolCall], iteration: int) -> tuple[ToolCall, ...]:
    """Tool calls with non-empty ids unique within the reply (some providers send none)."""
    seen: set[str] = set()
    fixed = []
    for index, call in enumerate(calls, start=1):
        call_id = call.id
        if not call_id or call_id in seen:
            call_id = f"call_{iteration}_{index}"
        seen.add(call_id)
        fixed.append(dataclasses.replace(call, id=call_id))
    return tuple(fixed)
