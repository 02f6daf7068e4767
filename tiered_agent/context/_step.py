"""What a step of a context policy is: frozen settings that start a runtime for each run.

A **step** is a frozen dataclass (validated on construction, so a bad value fails where it
is written) with a ``kind``: its name in the policy's dict form, the bench JSON and the
trace. A step that only reshapes the prompt needs nothing more than :meth:`Step.apply`, a
pure function of the history (in the :class:`~.pipeline._draft.BuildContext`) and of the
draft the earlier steps left (and :meth:`Step.finish` for a rewrite that must hold in the
prompt as sent).

A step that keeps state over a run returns its own :class:`StepRuntime` from
:meth:`Step.start`. The runtime owns all of that state (nothing at module level holds run
data) and takes part in the loop at the points it overrides, in the order of the policy's
steps:

=======================  ====================================================================
hook                     when
=======================  ====================================================================
``serve(batch)``         a reply's tool calls, before they run: the results it serves instead
``observe(batch, res)``  the same calls, once every result is in (served or executed)
``decide(turn)``         before each prompt, synchronously: what this prompt will look like
``act(turn)``            then, awaited: work that may wait (summaries land and are queued)
``apply(draft, ctx)``    building the prompt, in step order (default: the step's ``apply``)
``finish(draft, ctx)``   once every step applied, in step order (default: the step's ``finish``)
``after(turn, tokens)``  the prompt is built and counted: True asks for a rebuild (compaction)
``record()``             what the trace records about this step for the prompt just built
``restore(events)``      resuming a run: continue from what its trace recorded
=======================  ====================================================================

Every hook runs behind the fail-open guard of :class:`~._manager.ContextManager` (and of
:func:`~._dispatch.dispatch` and :func:`~.pipeline._build.assemble`): a hook that raises is
recorded as a :class:`~.pipeline._types.StepFailure` (a ``step_error`` trace event) and the
step is skipped for the rest of that prompt, or that batch of tool calls; the prompt is what
the pipeline builds without it, and the run goes on.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Protocol, TypeVar

from .._errors import ConfigurationError
from .._messages import Message
from .._tokens import TokenCounter
from .._trace import Event, StepState, redact
from ._dispatch import Batch, Dispatched
from .aging._breakeven import CacheTerms
from .aging._schedule import AgingSchedule
from .pipeline._draft import BuildContext, Draft
from .pipeline._types import SentPrompt, StepFailure
from .summary._state import Summaries

__all__ = [
    "Participants",
    "PolicyView",
    "Run",
    "RunMemos",
    "Step",
    "StepRuntime",
    "Turn",
    "failure_of",
    "participants",
    "require",
]

_MESSAGE_CHARS = 500  # a failure's message is clipped to this (an exception may quote its input)


def require(condition: bool, message: str) -> None:
    """Raise :class:`ConfigurationError` with ``message`` (one sentence) unless ``condition``."""
    if not condition:
        raise ConfigurationError(message)


_Memo = TypeVar("_Memo")


class RunMemos:
    """Memos of one run that the policies replaying it may share: values its steps derive from the
    run's messages alone, keyed by the messages' identities and checked against them (so policies
    whose histories differ never share an entry; one that rewrote a message has another object).

    The replay hands one to every policy of a run (they replay the same recorded messages: a
    second policy with the same step finds what the first derived); a live run's manager makes its
    own. Never process-wide: it lives as long as its run."""

    __slots__ = ("_memos",)

    def __init__(self) -> None:
        self._memos: dict[tuple[type, Hashable], object] = {}

    def get(self, kind: type[_Memo], key: Hashable) -> _Memo:
        """The run's ``kind()`` for ``key`` (a step's settings that change what the memo holds),
        made at the first request."""
        memo = self._memos.get((kind, key))
        if not isinstance(memo, kind):
            memo = self._memos[kind, key] = kind()
        return memo


@dataclass(frozen=True, slots=True)
class Run:
    """What a step's runtime may use for its whole run.

    ``retrieval``: ``context_retrieve`` is registered (placeholders name the exact call);
    ``model``: the litellm model the prompts go to (None in the replay, which passes the
    run's cache and price terms as ``cache_terms`` instead); ``summaries``: the run's summary
    state (the steps that summarize drive it; the prompt starts from its latest summary);
    ``unrecorded_tokens``: tokens the request carries before the history that a change of the
    tools re-sends but the history does not hold (a replayed log's system prompt; live: 0,
    the system prompt is in the history).
    """

    counter: TokenCounter
    retrieval: bool = True
    model: str | None = None
    cache_terms: CacheTerms | None = None
    context_window: int | None = None
    summaries: Summaries = field(default_factory=Summaries)
    unrecorded_tokens: int = 0
    memos: RunMemos = field(default_factory=RunMemos)


@dataclass(slots=True)
class Turn:
    """One prompt being prepared: what the loop gave, and what the runtimes decided for it.

    ``tools``: the schemas the prompt sends; ``offered``: every schema the loop has
    (``context_retrieve``'s included, which the prompt may not send yet); ``previous``: the
    prompt sent before this one (an LLM summarizer of the same model rides its cache);
    ``emergency``: the provider rejected that prompt as too long (compact now);
    ``schedule``: the aging schedule the prompt is built with (set by ``Age``; None: no aging);
    ``at``: when the prompt will be sent (POSIX seconds: the live loop's clock, the replay's
    recorded request time; None: unknown).
    """

    history: Sequence[Message]
    last: int  # the newest iteration in the history
    tools: tuple[Mapping[str, Any], ...] = ()
    offered: tuple[Mapping[str, Any], ...] = ()
    previous: SentPrompt | None = None
    emergency: bool = False
    schedule: AgingSchedule | None = None
    at: float | None = None


class PolicyView(Protocol):
    """What a step may check of the policy around it (:class:`~._policy.Policy` is one)."""

    @property
    def name(self) -> str: ...

    @property
    def steps(self) -> tuple[Step, ...]: ...

    @property
    def hard_limit(self) -> float: ...


class Step:
    """Base of the policy steps (subclasses are frozen, slotted dataclasses)."""

    __slots__ = ()
    kind: ClassVar[str]
    # Whether the step can hide part of the history by itself; a policy registers
    # context_retrieve only when one of its steps can.
    hides: ClassVar[bool] = True
    # Whether the step needs the run's summarizer (a background worker is started for it).
    summarizes: ClassVar[bool] = False

    def start(self, run: Run) -> StepRuntime:
        """This step's runtime for one run. The default keeps nothing and runs :meth:`apply`
        and :meth:`finish`; a step with state returns its own :class:`StepRuntime`."""
        return StepRuntime(self)

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        """Reshape the prompt; the default leaves it unchanged."""
        return draft

    def finish(self, draft: Draft, context: BuildContext) -> Draft:
        """Rewrite the prompt once every step has applied (in step order); the default leaves it.

        For a decision that depends on the final prompt (``Dedup``: a pointer to an output only
        while that output is shown verbatim), so that no later step can make it wrong.
        """
        return draft

    def check(self, policy: PolicyView) -> None:
        """Raise :class:`ConfigurationError` (one sentence) when this step cannot run in ``policy``."""

    def to_dict(self) -> dict[str, Any]:
        """``{"step": kind, <field>: <value>, ...}`` (JSON-ready)."""
        assert dataclasses.is_dataclass(self)
        fields = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        return {"step": self.kind} | {k: list(v) if isinstance(v, tuple) else v for k, v in fields.items()}


class StepRuntime:
    """One step in one run: its state, and what it does at each point of the loop (the module
    docstring has the hooks). Every hook's default does nothing (``apply`` and ``finish``
    run the step's own)."""

    def __init__(self, step: Step) -> None:
        self.step = step

    # ------------------------------------------------------------------ tool dispatch
    def serve(self, batch: Batch) -> Mapping[int, Dispatched]:
        """Results this step serves instead of running the calls, by call index."""
        return {}

    def observe(self, batch: Batch, results: Sequence[Dispatched]) -> None:
        """Every result of the batch, in call order (served or executed)."""

    # ------------------------------------------------------------------ before the prompt
    def decide(self, turn: Turn) -> None:
        """Decide, before the prompt is built, what this step does to it."""

    async def act(self, turn: Turn) -> None:
        """Work before the prompt that may wait (after every runtime decided)."""

    # ------------------------------------------------------------------ the prompt
    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        return self.step.apply(draft, context)

    def finish(self, draft: Draft, context: BuildContext) -> Draft:
        return self.step.finish(draft, context)

    async def after(self, turn: Turn, tokens: int) -> bool:
        """The prompt was built and estimated at ``tokens``: True when this step changed what it
        is built from (a compaction), so that it must be built again."""
        return False

    # ------------------------------------------------------------------ the trace
    def record(self) -> StepState | None:
        """This step's own record of the prompt just built (None: nothing beyond its effects on the
        prompt, which the pipeline records itself): a mapping of JSON values, or a typed record of
        the trace (``Age``: :class:`~tiered_agent._trace.AgingRecord`)."""
        return None

    def restore(self, events: Sequence[Event]) -> None:
        """Continue from a run's recorded trace (resuming it)."""

    # ------------------------------------------------------------------ failures
    def failure(self, phase: str, exc: Exception) -> StepFailure:
        """The record of this step raising ``exc`` in ``phase``."""
        return failure_of(self.step.kind, phase, exc)


Participants = tuple[tuple[int, StepRuntime], ...]  # runtimes, with their positions in the policy


def participants(runtimes: Sequence[StepRuntime], hook: str) -> Participants:
    """The runtimes (with their positions) whose ``hook`` does something: overridden by the
    runtime's class, or, for ``apply`` and ``finish`` (which run the step's own), by the step's.
    The others are never called for it (by contract their hook does nothing)."""
    default = getattr(StepRuntime, hook)
    step_default = getattr(Step, hook, None)
    return tuple(
        (position, runtime)
        for position, runtime in enumerate(runtimes)
        if getattr(type(runtime), hook) is not default
        or (step_default is not None and getattr(type(runtime.step), hook) is not step_default)
    )


def failure_of(kind: str, phase: str, exc: Exception) -> StepFailure:
    """The record of the step ``kind`` raising ``exc`` in ``phase``: its message redacted (secrets
    never reach a trace or a console) and clipped (an exception may quote its whole input)."""
    message = str(redact(f"{exc}"))
    if len(message) > _MESSAGE_CHARS:
        message = message[: _MESSAGE_CHARS - 1] + "…"
    return StepFailure(kind, phase, type(exc).__name__, message)
