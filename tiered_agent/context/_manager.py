"""The context seam: one object the agent loop (and the replay benchmark) asks for every prompt.

It starts one runtime per step of a :class:`~._policy.Policy` (:meth:`~._step.Step.start`)
and is a loop over them, in the policy's order; it knows no particular step. Besides them
it keeps what every run has: the summary state (:class:`~.summary._state.Summaries`: the
prompt starts from its latest summary, and a provider's context-window error compacts
through it), the history's token tally, the calibration, and the prompt sent last. The
loop calls, per iteration:

1. :meth:`ContextManager.prepare` (at the request time the caller gives, else the manager's
   clock: the live loop's real time, the replay's recorded one): every runtime
   ``decide``\\ s (the aging schedule), then ``act``\\ s (summaries land and are queued);
   the runtimes build the prompt (``apply``, then ``finish``;
   :func:`~.pipeline._build.assemble`); it is counted with the counterfactual; the runtimes
   may ask for a rebuild (``after``: a compaction); a prompt over ``hard_limit`` of the
   window is refused;
2. :meth:`dispatch` with each reply's tool calls (the runtimes ``serve`` and ``observe``
   them; execution injected);
3. :meth:`observe_usage` with the provider's prompt tokens, to calibrate.

Fail open: a runtime that raises is skipped for the rest of that prompt (or batch of tool
calls) and recorded (:attr:`ContextManager.step_errors`, a ``step_error`` trace event); the
prompt is what the other steps build, and the run goes on.
"""

from __future__ import annotations

import dataclasses
import functools
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from .._errors import ContextBudgetExceeded
from .._messages import Message, ToolCall, Usage
from .._tokens import PROMPT_OVERHEAD, Calibration, TokenCounter
from .._tools import Tool, ToolOutcome
from .._trace import ContextRecord, Event, StepRecord, StepState
from ._dispatch import Batch, Dispatched, Execute, ObserveOnly, ToolKind, dispatch, executed_results
from ._events import ManagerEvents
from ._memo import MemoTables, in_run, in_run_async, outside_runs, scope
from ._names import RETRIEVE_TOOL_NAME
from ._policy import Policy
from ._presets import as_policy
from ._step import Run, RunMemos, StepRuntime, Turn, failure_of, participants
from .aging._breakeven import CacheTerms
from .aging._schedule import AgingSchedule
from .pipeline._build import assemble
from .pipeline._draft import NOTHING_AGED, BuildContext
from .pipeline._tally import HistoryTally, PrefixSums, PromptTally
from .pipeline._types import BuiltPrompt, SentPrompt, Summary
from .retrieve._tool import make_retrieve_tool
from .summary._compact import EMERGENCY_KEEP
from .summary._state import Summaries, SummarySettings
from .summary._summarizer import Summarizer

__all__ = ["ContextManager", "PendingRecord", "PreparedPrompt"]


class PendingRecord:
    """A prompt's :class:`ContextRecord`, made when it is first read (:attr:`PreparedPrompt.context`).

    What changes with the next prompt (what each runtime records, the dedup hits so far, whether the
    prompt was compacted) is taken when the prompt is built; the rest (what each step did to the
    prompt, the tokens its cuts spared) reads only the built prompt, and a caller that never reads
    the record (the replay bench) never pays for it."""

    __slots__ = ("_make", "compacted")

    def __init__(self, make: Callable[[], ContextRecord], compacted: bool) -> None:
        self._make = make
        self.compacted = compacted

    def make(self) -> ContextRecord:
        return self._make()


@dataclass(frozen=True, slots=True)
class PreparedPrompt:
    """A prompt ready to send, with its local token count, the counterfactual, and its record.

    ``recorded``: the record (:attr:`context`), or the :class:`PendingRecord` that makes it when
    first read; equality ignores it."""

    built: BuiltPrompt
    prompt_tokens: int  # local tokenizer: messages + per-message overhead + tool schemas
    counterfactual_tokens: int  # the same count for the full, unoptimized history
    estimated_tokens: int  # calibrated estimate of what the provider will bill
    tools: tuple[Mapping[str, Any], ...] = ()  # the tool schemas to send with this prompt
    recorded: ContextRecord | PendingRecord = field(default_factory=ContextRecord, compare=False, repr=False)

    @property
    def context(self) -> ContextRecord:
        """What each step did, for the trace (made the first time it is read, then kept)."""
        record = self.recorded
        if isinstance(record, ContextRecord):
            return record
        made = record.make()
        object.__setattr__(self, "recorded", made)  # the same record at every later read
        return made

    @property
    def compacted(self) -> bool:
        return self.recorded.compacted

    @property
    def truncated_tokens(self) -> int:
        """Tokens the steps cut from the outputs shown."""
        return self.context.truncated_tokens

    def record(self) -> ContextRecord:
        """What the trace records about this prompt's construction (``model_request.context``)."""
        return self.context

    @property
    def messages(self) -> list[dict[str, Any]]:
        return [m.to_openai() for m in self.built.messages]


class ContextManager:
    """Per-run context state. Use ``async with`` so the background summarizer runs and is awaited."""

    def __init__(
        self,
        policy: Policy | str,
        *,
        counter: TokenCounter,
        context_window: int | None = None,
        summarizer: Summarizer | None = None,
        background: bool = True,
        enforce_hard_limit: bool = True,
        on_event: Callable[[Event], None] | None = None,
        model: str | None = None,
        cache_terms: CacheTerms | None = None,
        clock: Callable[[], float] | None = time.time,
        unrecorded_tokens: int = 0,
        memos: RunMemos | None = None,
    ) -> None:
        """``model`` (the agent's litellm model) gives the cache and price terms aging decides by;
        ``cache_terms`` gives them directly (the replay: the run's cache and price model).
        ``clock``: POSIX seconds when :meth:`prepare` is not told the request time (None: the time
        is unknown unless told; the replay passes each recorded request's time).
        ``unrecorded_tokens``: see :class:`~._step.Run` (the replay of a log without its system
        prompt). ``memos``: what the policies replaying the same run share (:class:`~._step.RunMemos`;
        None: this manager's own)."""
        self.policy = policy = as_policy(policy)
        self.model = model  # the model the prompts go to: a summarizer of the same model rides its cache
        self.clock = clock
        self.counter = counter
        self.context_window = policy.context_window or context_window
        self.calibration = Calibration()
        self._enforce = enforce_hard_limit
        self._events = ManagerEvents(on_event)
        settings = SummarySettings(
            policy.summary_model, policy.summary_max_tokens, policy.summary_timeout_s, policy.summarizes
        )
        self.summaries = Summaries(
            settings,
            summarizer=summarizer,
            background=background,
            on_summary=self._events.summary_landed,
            on_failure=self._events.summary_failed,
        )
        run = Run(
            counter,
            policy.retrieval_active,
            model,
            cache_terms,
            self.context_window,
            self.summaries,
            max(unrecorded_tokens, 0),
            memos if memos is not None else RunMemos(),
        )
        self.memo_tables = run.memos.get(MemoTables, None)  # the run's memos of pure text functions
        with scope(self.memo_tables):
            self.runtimes: tuple[StepRuntime, ...] = tuple(step.start(run) for step in policy.steps)
        # The runtimes that take part in each hook (the others' hooks do nothing by contract: no
        # call, no coroutine per prompt for them).
        hooks = ("decide", "act", "apply", "finish", "after", "record")
        self._hooks = {hook: participants(self.runtimes, hook) for hook in hooks}
        self._plan = (self._hooks["apply"], self._hooks["finish"])
        self._recorders = self._hooks["record"]
        recorders = {position for position, _ in self._recorders}
        # Every runtime with whether it records (its record is asked for in the policy's order)
        self._recording = tuple(
            (position, runtime, position in recorders) for position, runtime in enumerate(self.runtimes)
        )
        self._retrieval = policy.retrieval_active
        # The runtimes that serve and those that observe tool calls (none: the calls just run).
        self._dispatchers: tuple[tuple[StepRuntime, ...], tuple[StepRuntime, ...]] = (
            tuple(runtime for _, runtime in participants(self.runtimes, "serve")),
            tuple(runtime for _, runtime in participants(self.runtimes, "observe")),
        )
        self.step_errors = self._events.errors  # every step that raised in this run (fail open)
        self.schedule: AgingSchedule | None = None  # the aging schedule of the last prompt (None: no aging)
        self._served = 0  # tool calls a step served instead of running them (dedup hits)
        self._sent: SentPrompt | None = None
        self._stable: tuple[int, ...] = ()  # the stable prefixes the policy reported for the last prompt
        self._rotation = 0  # prompts prepared: which stable prefix comes first (:meth:`_order_stable`)
        self._skipped: set[int] = set()  # runtimes that raised while the prompt was prepared
        self._history = HistoryTally(counter)  # the counterfactual, counted once per message
        self._prompts = PromptTally(counter)
        self._spared = SparedTokens(counter)  # the tokens each cut output spared, once per run
        self._spared_sums: dict[str, PrefixSums[tuple[Message, Message]]] = {}  # by step kind
        # retrieval_schema="when_shown": whether a prompt named a retrieval call yet (sticky)
        self._retrieval_shown = policy.retrieval_schema == "always"
        # The schemas offered last, and the same without context_retrieve's (filtered once per change)
        self._offered: tuple[tuple[Mapping[str, Any], ...], tuple[Mapping[str, Any], ...]] = ((), ())
        # The last two schema lists counted (sent, unmanaged), with their tokens
        self._tool_counts: tuple[tuple[tuple[Mapping[str, Any], ...], int], ...] = ()

    # ------------------------------------------------------------------ lifecycle
    async def __aenter__(self) -> ContextManager:
        await self.summaries.__aenter__()
        return self

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.summaries.__aexit__(exc_type, exc, tb)

    # ------------------------------------------------------------------ tools
    def tools(self, history: Callable[[], Sequence[Message]]) -> list[Tool]:
        """Runtime tools this policy needs: ``context_retrieve`` whenever something is hidden."""
        if not self.policy.retrieval_active:
            return []
        return [
            make_retrieve_tool(
                history,
                counter=self.counter,
                page_tokens=self.policy.retrieve_page_tokens,
                on_retrieval=self._events.retrieval_done,
            )
        ]

    # ------------------------------------------------------------------ tool dispatch
    @property
    def dedup_hits(self) -> int:
        """Tool calls served so far instead of run (``Dedup``'s cache hits)."""
        return self._served

    @property
    def dispatches(self) -> bool:
        """Whether a step takes part in :meth:`dispatch` (serves or observes calls): without one, a
        dispatch only runs the calls and returns their outcomes as they ran."""
        servers, observers = self._dispatchers
        return bool(servers or observers)

    @in_run_async
    async def dispatch(
        self,
        calls: Sequence[ToolCall],
        kind: Callable[[ToolCall], ToolKind],
        execute: Execute,
        *,
        iteration: int,
    ) -> tuple[Dispatched, ...]:
        """Serve one reply's tool calls through the runtimes (:func:`~._dispatch.dispatch`); the
        calls run outside the run's memo scope."""
        execute = outside_runs(execute)
        servers, observers = self._dispatchers
        if not servers and not observers:  # no step takes part (most policies): the calls just run
            return await executed_results(tuple(calls), list(range(len(calls))), execute)
        batch = Batch(iteration, tuple(calls), tuple(map(kind, calls)))
        results, failures = await dispatch(servers, batch, execute, observers=observers)
        self._served += sum(result.dedup_of is not None for result in results)
        self._events.failed(failures, iteration)
        return results

    @in_run_async
    async def observe(
        self,
        calls: Sequence[ToolCall],
        kind: Callable[[ToolCall], ToolKind],
        outcomes: Sequence[ToolOutcome],
        *,
        iteration: int,
    ) -> None:
        """One reply's tool calls that ran outside :meth:`dispatch` (a framework ran them), with their
        outcomes in call order: the runtimes observe them as if dispatched (``Dedup`` remembers and
        indexes the reads); nothing is served."""
        batch = Batch(iteration, tuple(calls), tuple(kind(call) for call in calls))
        recorded = tuple(outcomes)

        async def execute(indexes: Sequence[int]) -> list[ToolOutcome]:
            return [recorded[index] for index in indexes]

        _, failures = await dispatch([ObserveOnly(runtime) for runtime in self.runtimes], batch, execute)
        self._events.failed(failures, iteration)

    # ------------------------------------------------------------------ state
    @property
    def summary(self) -> Summary | None:
        """The newest summary that has landed (background, or from a compaction)."""
        return self.summaries.latest

    @property
    def schema_sent(self) -> bool:
        """Whether ``context_retrieve``'s schema is sent already (an earlier prompt named a retrieval
        call, or ``retrieval_schema="always"``): the next build's ``BuildContext.schema_sent``."""
        return self._retrieval_shown

    @property
    def summary_usage(self) -> Usage:
        """Tokens the summarizer spent so far (0 for the deterministic digest)."""
        return self.summaries.usage

    @in_run
    def restore(self, events: Sequence[Event]) -> None:
        """Continue a run from what its trace recorded (the latest summary, each step's records)."""
        self.summaries.restore(events)
        for runtime in self.runtimes:
            try:
                runtime.restore(events)
            except Exception as exc:  # fail open: the step starts afresh
                self._events.failed([runtime.failure("restore", exc)], self._events.iteration)

    def observe_usage(self, provider_prompt_tokens: int | None, local_prompt_tokens: int) -> None:
        self.calibration.observe(provider_prompt_tokens, local_prompt_tokens)

    # ------------------------------------------------------------------ prompts
    @in_run_async
    async def prepare(
        self,
        history: Sequence[Message],
        tool_schemas: Sequence[Mapping[str, Any]] = (),
        *,
        force_compact: bool = False,
        at: float | None = None,
    ) -> PreparedPrompt:
        """Build the next prompt from the full ``history`` (see the module docstring).

        ``history`` grows by appending from one call to the next (anything else is
        counted from scratch): the per-call work is in what was appended.
        ``force_compact``: the provider rejected the last prompt as too long.
        ``at``: when the prompt will be sent (POSIX seconds; None: the manager's clock, if any).
        """
        self._history.update(history)
        last = self._history.last_iteration
        self._events.iteration = last + 1
        self._skipped = set()
        turn = Turn(
            history,
            last,
            tools=self._sent_tools(tool_schemas),
            offered=tuple(tool_schemas),
            previous=self._sent,
            emergency=force_compact,
            at=at if at is not None or self.clock is None else self.clock(),
        )
        hooks = self._hooks
        if hooks["decide"]:
            self._decide(turn)
        if hooks["act"]:
            await self._act(turn)
        self.schedule = turn.schedule
        prepared = self._build(turn)
        if (hooks["after"] or force_compact) and await self._after(turn, prepared.estimated_tokens):
            prepared = self._build(turn, compacted=True)
        limit = self.policy.hard_limit
        if (
            self._enforce
            and self.context_window is not None
            and prepared.estimated_tokens > limit * self.context_window
        ):
            raise ContextBudgetExceeded(
                f"the next prompt is ~{prepared.estimated_tokens:,} tokens, over "
                f"{limit:.0%} of the {self.context_window:,}-token context window, "
                "even after compaction; refusing to send it"
            )
        prepared = self._order_stable(prepared)
        self._sent = SentPrompt(prepared.built.messages, prepared.tools, self.model)
        return prepared

    def _order_stable(self, prepared: PreparedPrompt) -> PreparedPrompt:
        """The prompt with its stable prefixes in the order to mark them: when they changed (an
        epoch), the longest one the last prompt reported that this one still starts with first
        (the cache entry written there is read: a breakpoint finds an earlier entry only a few
        content blocks back; the new ones are written from the next prompt on); otherwise the
        policy's order, rotated by one each prompt, so that a request with a single breakpoint to
        spare keeps every entry alive."""
        built, before, sent = prepared.built, self._stable, self._sent
        self._stable, self._rotation = built.stable, self._rotation + 1
        if not built.stable:
            return prepared
        if before and sent is not None and not set(before) <= set(built.stable):
            kept = _kept_prefix(sent.messages, built.messages, before)
            if kept is not None:
                stable = (kept, *(k for k in built.stable if k != kept))
                return dataclasses.replace(prepared, built=dataclasses.replace(built, stable=stable))
        turn = self._rotation % len(built.stable)
        if not turn:
            return prepared
        stable = built.stable[turn:] + built.stable[:turn]
        return dataclasses.replace(prepared, built=dataclasses.replace(built, stable=stable))

    def _decide(self, turn: Turn) -> None:
        for position, runtime in self._hooks["decide"]:
            try:
                runtime.decide(turn)
            except Exception as exc:  # fail open: the prompt is built without this step
                self._skipped.add(position)
                self._events.failed([runtime.failure("decide", exc)], self._events.iteration)

    async def _act(self, turn: Turn) -> None:
        for position, runtime in self._hooks["act"]:
            if position not in self._skipped:
                try:
                    await runtime.act(turn)
                except Exception as exc:
                    self._skipped.add(position)
                    self._events.failed([runtime.failure("act", exc)], self._events.iteration)

    async def _after(self, turn: Turn, tokens: int) -> bool:
        """Whether a step changed what the prompt is built from (a compaction): build it again.
        A context-window error no step handled compacts through the run's summary state."""
        rebuild = False
        for position, runtime in self._hooks["after"]:
            if position not in self._skipped:
                try:
                    rebuild = await runtime.after(turn, tokens) or rebuild
                except Exception as exc:
                    self._skipped.add(position)
                    self._events.failed([runtime.failure("after", exc)], self._events.iteration)
        if turn.emergency:
            history, last = turn.history, turn.last
            try:
                compacted = await self.summaries.compact(history, last, keep=EMERGENCY_KEEP, emergency=True)
                rebuild = compacted or rebuild
            except Exception as exc:  # the safety net's own digest raised: the prompt stays as built
                self._events.failed([failure_of("compact", "after", exc)], self._events.iteration)
        return rebuild

    def _sent_tools(self, tool_schemas: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
        """The schemas to send: all, but ``context_retrieve``'s only once a prompt named a retrieval call
        (``retrieval_schema="when_shown"``)."""
        if self._retrieval_shown:
            return tuple(tool_schemas)
        return self._without_retrieve(tool_schemas)

    def _without_retrieve(self, offered: Sequence[Mapping[str, Any]]) -> tuple[Mapping[str, Any], ...]:
        """``offered`` without ``context_retrieve``'s schema; filtered again only when the schemas
        are other objects than the last ones (a caller's schemas are not changed in place)."""
        last, kept = self._offered
        if len(last) == len(offered) and all(map(operator.is_, last, offered)):
            return kept
        kept = tuple(t for t in offered if not _is_retrieve(t))
        self._offered = (tuple(offered), kept)
        return kept

    def _build(self, turn: Turn, compacted: bool = False) -> PreparedPrompt:
        tally = self._history
        context = BuildContext(
            turn.history,
            self.summaries.latest,
            self.counter,
            self._retrieval,
            tally.facts,
            turn.schedule or NOTHING_AGED,
            self._retrieval_shown,
        )
        built = assemble(context, self.runtimes, self._skipped, plan=self._plan)
        if built.failures:
            self._events.failed(built.failures, self._events.iteration)
        if not self._retrieval_shown and built.shows_retrieval:
            self._retrieval_shown = True
        tools = self._sent_tools(turn.offered)
        local = PROMPT_OVERHEAD + self._prompts.messages_tokens(built.messages) + self._tools_tokens(tools)
        # The counterfactual is the unmanaged prompt: full history, no context_retrieve schema.
        unmanaged = self._without_retrieve(turn.offered)
        full = PROMPT_OVERHEAD + tally.tokens + self._tools_tokens(unmanaged)
        estimate = self.calibration.estimate(local)
        return PreparedPrompt(built, local, full, estimate, tools, self._record(built, compacted))

    def _tools_tokens(self, tools: tuple[Mapping[str, Any], ...]) -> int:
        """``counter.count_tools(tools)``, counted again only when the schemas are other objects than
        the last two lists counted (every prompt sends the same ones; a caller's schemas are not
        changed in place)."""
        for known, tokens in self._tool_counts:
            if known is tools or (len(known) == len(tools) and all(map(operator.is_, known, tools))):
                return tokens
        tokens = self.counter.count_tools(tools)
        self._tool_counts = ((tools, tokens), *self._tool_counts[:1])
        return tokens

    def _record(self, built: BuiltPrompt, compacted: bool) -> PendingRecord:
        """The record of the prompt just built, made when first read (:class:`PendingRecord`): what
        the runtimes record and the dedup hits are taken now, they change with the next prompt."""
        states = {position: self._state(position, runtime) for position, runtime in self._recorders}
        return PendingRecord(
            functools.partial(self._made_record, built, compacted, states, self._served), compacted
        )

    def _made_record(
        self, built: BuiltPrompt, compacted: bool, states: Mapping[int, StepState | None], served: int
    ) -> ContextRecord:
        """The typed record of a prompt: what each step did to it (its effects on the prompt as sent,
        and its runtime's own record, ``states``), in the policy's order."""
        steps: dict[str, StepRecord] = {}
        effects_of = built.effects
        if effects_of or states:  # else no step did anything nor records anything
            for position, runtime, records in self._recording:
                kind = runtime.step.kind
                state = states.get(position) if records else None
                effects = effects_of.get(kind)
                if effects is None and state is None:
                    continue
                if effects is None:
                    steps[kind] = StepRecord(state=state)
                    continue
                steps[kind] = StepRecord(
                    hidden=effects.hidden,
                    hidden_chars=effects.hidden_chars,
                    cuts=effects.cuts,
                    cut_tokens=self._spared_tokens(kind, effects.cut),
                    pointers=effects.pointers,
                    pointer_chars=effects.pointer_chars,
                    dropped=effects.dropped,
                    state=state,
                )
        stats = built.stats
        return ContextRecord(
            steps, stats.shown_iterations, stats.windowed_out, stats.summary_range, compacted, served
        )

    def _spared_tokens(self, kind: str, cut: tuple[tuple[Message, Message], ...]) -> int:
        """Tokens the cuts of the step ``kind`` spared in the prompt just built: counted past the cuts
        it shares with that step's cuts in the previous prompt (a cut output stays cut)."""
        sums = self._spared_sums.get(kind)
        if sums is None:
            sums = self._spared_sums[kind] = PrefixSums(self._spared)
        return sums.total(cut)

    def _state(self, position: int, runtime: StepRuntime) -> StepState | None:
        """A runtime's own record of the prompt just built (a runtime skipped for it records nothing)."""
        if position in self._skipped:
            return None
        try:
            return runtime.record()
        except Exception as exc:
            self._events.failed([runtime.failure("record", exc)], self._events.iteration)
            return None


class SparedTokens:
    """Tokens a cut spared (an output and how it is shown), counted once per run: a cut output
    stays cut, the same message objects, in every later prompt. (Its own object, not a method of
    the manager: the prefix sums that call it would tie the manager into a reference cycle.)"""

    def __init__(self, counter: TokenCounter) -> None:
        self._counter = counter
        # id of a cut output as shown -> (the output, as shown, the tokens the cut spared)
        self._known: dict[int, tuple[Message, Message, int]] = {}

    def __call__(self, cut: tuple[Message, Message]) -> int:
        known = self._known.get(id(cut[1]))
        if known is not None and known[0] is cut[0] and known[1] is cut[1]:
            return known[2]
        count = self._counter.count_text
        spared = count(cut[0].text) - count(cut[1].text)
        self._known[id(cut[1])] = (*cut, spared)  # holds the messages: their ids stay theirs
        return spared


def _is_retrieve(schema: Mapping[str, Any]) -> bool:
    function = schema.get("function")
    return isinstance(function, Mapping) and function.get("name") == RETRIEVE_TOOL_NAME


def _kept_prefix(
    previous: Sequence[Message], current: Sequence[Message], counts: Sequence[int]
) -> int | None:
    """The longest of ``counts`` whose prefix ``current`` shares with ``previous`` (None: none)."""
    for count in sorted(counts, reverse=True):
        if count <= min(len(previous), len(current)) and all(
            a is b or a == b for a, b in zip(previous[:count], current[:count], strict=True)
        ):
            return count
    return None
