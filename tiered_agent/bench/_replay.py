"""Replay recorded runs through context policies, step by step, with the live agent's own pipeline.

For every step ``k`` of a run, the history of iterations ``< k`` (observations
as already served by dedup) goes through :meth:`ContextManager.prepare`, the
very call the live agent makes; the prompt it returns is counted, passed to
the prompt-cache simulation and searched for the strings the recorded action
``k`` used. Then the recorded assistant message ``k`` and its observations are
appended, its tool calls served by the manager's ``dispatch``, the agent's own
(:mod:`tiered_agent.context._dispatch`: the step runtimes serve and observe them;
the dedup rules are in :mod:`tiered_agent.context.dedup._step`), with the recorded
observations standing in for execution. So two
identical reads in one reply are both "executed" and neither is a dedup hit,
and reads recorded alongside a write are not remembered, exactly as in the live
agent. Nothing here re-implements a policy. A context step that raises is skipped
for that prompt and counted (``PolicyRunMetrics.step_errors``; 0 expected).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import AsyncGenerator, Callable, Iterable, Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass, field
from itertools import count
from typing import Any, NamedTuple

import anyio
import orjson

from .._cluster import RayAddress
from .._errors import ConfigurationError
from .._messages import Message, ToolCall, Usage, group_by_iteration
from .._providers import CACHE_MODEL_NAMES, CacheModel, model_prices, switched_min_tokens
from .._tokens import PROMPT_OVERHEAD, EncodedTexts, TokenCounter
from .._tools import ToolOutcome
from .._trace import StepError
from .._workers import configure_worker_logging
from ..context._dispatch import ToolKind
from ..context._manager import ContextManager, PreparedPrompt
from ..context._names import RETRIEVE_TOOL_NAME
from ..context._policy import Policy
from ..context._presets import PRESETS
from ..context._step import RunMemos
from ..context.aging._breakeven import CacheTerms
from ..context.retrieve._tool import retrieve
from ..context.steps import Dedup
from ._backend import open_backend
from ._cache_chain import CacheChains, CacheTrack
from ._caching import IDEAL, CacheSimulator, CacheUse, CountedHistory, IdCounter, Pricing, PromptEncoder
from ._calibration import Calibration, ProviderCalibration, counted_run, fit, measurable, recorded_texts
from ._evidence import EvidenceIndex, PromptView, TextMemo
from ._metrics import PolicyRunMetrics, SalienceIndex, StepMetrics
from ._pricing import RunPlan, family_of, long_ttl_steps, plan_prices, plan_run
from ._recorded import RecordedRun
from ._rulers import RawTexts, RawView, RecordedTexts, RetrievalSources, WordIndex
from ._series import IdSets, Joined, SparseSeries, Stretches, identical_prefix
from ._summarizer_check import CheckedSummarizer
from ._turns import RetrievalTurn, retrieval_turn

__all__ = [
    "ABLATIONS",
    "BASELINE",
    "ROUTINGS",
    "BenchResult",
    "Planned",
    "ReplaySettings",
    "RunInfo",
    "RunReplay",
    "available_policies",
    "bench_plan",
    "full_tokens_unit",
    "longest_first",
    "numbered",
    "plan_terms",
    "policy_config",
    "prompt_at",
    "replay_job",
    "replay_prompts",
    "replay_run",
    "replay_runs",
    "replay_unit",
    "resolve_policies",
    "run_plan",
    "unique_ids",
]

BASELINE = "full"
# The histories shared by policies that served every observation as recorded may hold this many
# messages in all, per run (8 MB of references); past it each policy builds its own, as before.
MAX_SNAPSHOT_SLOTS = 1_000_000
RETRIEVE_TOOL = RETRIEVE_TOOL_NAME
# How each step is routed to an endpoint's cache: as recorded, or every step of a run to the endpoint
# that served its first call (what pinning the endpoint would have done).
ROUTINGS = ("recorded", "sticky")
# Each tier of ``tiered`` alone: the steps of the other tiers switched off.
ABLATIONS: dict[str, tuple[str, ...]] = {
    "truncation-only": ("dedup", "age", "compact", "tidy"),
    "aging-only": ("truncate", "dedup", "tidy"),
    "dedup-only": ("truncate", "age", "compact", "tidy"),
}


# --------------------------------------------------------------------------- policies
def available_policies() -> tuple[str, ...]:
    """Every policy name the benchmark knows: the presets, then the ablations of ``tiered``."""
    return (*PRESETS, *(f"tiered:{name}" for name in ABLATIONS))


def policy_config(name: str) -> Policy:
    """The policy of a preset or an ablation (``tiered:<tier>-only``)."""
    if name in PRESETS:
        return PRESETS[name]
    base, _, ablation = name.partition(":")
    if base == "tiered" and ablation in ABLATIONS:
        return PRESETS["tiered"].without(*ABLATIONS[ablation]).replace(name=name)
    raise ConfigurationError(f"unknown policy {name!r}; choose from {', '.join(available_policies())}")


def resolve_policies(names: Sequence[str] | None = None) -> dict[str, Policy]:
    """Policies by name, in the given order (all policies for None); ``full`` is always included."""
    chosen = list(available_policies()) if not names else [n.strip() for n in names if n.strip()]
    if not chosen:
        raise ConfigurationError(f"no policy given; choose from {', '.join(available_policies())}")
    unknown = [n for n in chosen if n not in available_policies()]
    if unknown:
        raise ConfigurationError(
            f"unknown polic{'y' if len(unknown) == 1 else 'ies'} {', '.join(map(repr, unknown))}; "
            f"choose from {', '.join(available_policies())}"
        )
    if BASELINE not in chosen:
        chosen.insert(0, BASELINE)
    return {name: policy_config(name) for name in dict.fromkeys(chosen)}


# --------------------------------------------------------------------------- values
@dataclass(frozen=True, slots=True)
class ReplaySettings:
    """Everything besides the runs and the policies that changes the numbers."""

    tokenizer: str = "o200k_base"
    context_window: int = 128_000
    cache_discount: float = 0.1
    output_price_ratio: float = 4.0
    summary_model: str | None = None  # None: the deterministic digest (offline, 0 tokens)
    cache_model: str = "auto"  # a CACHE_MODELS name, or "auto": each run's model picks its provider's
    price_model: str | None = None  # price every run as this litellm model (None: its recorded model)
    routing: str = "recorded"  # ROUTINGS: the recorded endpoint of each step, or the first one throughout

    def __post_init__(self) -> None:
        if self.context_window < 1:
            raise ConfigurationError(
                f"context window must be a positive number of tokens, got {self.context_window}"
            )
        Pricing(self.cache_discount, self.output_price_ratio)  # validates
        if self.cache_model not in CACHE_MODEL_NAMES:
            raise ConfigurationError(
                f"unknown cache model {self.cache_model!r}; choose from {', '.join(CACHE_MODEL_NAMES)}"
            )
        if self.routing not in ROUTINGS:
            raise ConfigurationError(f"unknown routing {self.routing!r}; choose from {', '.join(ROUTINGS)}")
        if self.price_model is not None and model_prices(self.price_model) is None:
            raise ConfigurationError(
                f"litellm's price map has no model {self.price_model!r}, so it cannot price the runs "
                "(try a name such as claude-sonnet-4-5 or gpt-5)"
            )

    @property
    def pricing(self) -> Pricing:
        return Pricing(self.cache_discount, self.output_price_ratio)


@dataclass(frozen=True, slots=True)
class RunInfo:
    """A recorded run without its messages: what the report needs.

    ``steps`` counts all its model calls (the replay prepares them all); ``usage`` and
    ``cache_writes_1h`` are what the bench counts (:meth:`RecordedRun.counted_usage`: None and 0 for
    the first ``uncounted_steps``, calls counted in a run read before), so no recorded bill, cache
    check or fidelity sees those twice.
    """

    run_id: str
    source: str
    format: str
    model: str | None
    steps: int
    usage: tuple[Usage | None, ...]
    family: str = ""
    cache_model: str = IDEAL.name
    cache_model_source: str = "--cache-model"
    provider: str | None = None  # whose tokens the run is scaled to
    token_scale: float = 1.0  # provider tokens per replayed token
    price_model: str | None = None  # the litellm cost-map key it is priced as
    endpoints: int = 0  # distinct endpoints its steps were served by, where recorded (0: none recorded)
    prefix_tokens: int = 0  # replayed tokens its log left out, sent before every prompt
    prefix_source: str = "recorded"  # where that number comes from (_calibration.PREFIX_SOURCES)
    cache_writes_1h: tuple[int, ...] = ()  # per step, the recorded writes with the 1-hour lifetime
    restarts: int = 0  # the agent's own compactions the replay followed
    step_models: tuple[str, ...] = ()  # per step, its model, when the run switched models
    uncounted_steps: int = 0  # its leading calls counted in a run read before (replayed, not counted)
    step_billing: tuple[str, ...] = ()  # per step, its billing modifiers, when any has one

    @property
    def has_usage(self) -> bool:
        return any(u is not None and u.prompt_tokens > 0 for u in self.usage)

    @classmethod
    def of(cls, run: RecordedRun, plan: RunPlan | None = None) -> RunInfo:
        uncounted = run.counted_from
        writes = tuple(0 if i < uncounted else w for i, w in enumerate(run.cache_writes_1h))
        info = cls(
            run.run_id, run.source, run.format, run.model, run.steps, run.counted_usage(),
            family_of(run.format), endpoints=len({r for r in run.routes if r is not None}),
            cache_writes_1h=writes, restarts=len(run.restarts), step_models=run.step_models,
            step_billing=run.step_billing, uncounted_steps=uncounted,
        )  # fmt: skip
        return info if plan is None else info.planned(plan)

    def planned(self, plan: RunPlan) -> RunInfo:
        """This run as replayed and priced under ``plan``."""
        return dataclasses.replace(
            self,
            cache_model=plan.cache_model.name,
            cache_model_source=plan.cache_model_source,
            provider=plan.provider,
            token_scale=plan.token_scale,
            price_model=plan.price_model,
            prefix_tokens=plan.prefix.tokens,
            prefix_source=plan.prefix.source,
        )


@dataclass(frozen=True, slots=True)
class RunReplay:
    """One run replayed under every policy."""

    run_id: str
    output_tokens: tuple[int, ...]
    policies: Mapping[str, PolicyRunMetrics] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class BenchResult:
    settings: ReplaySettings
    policies: Mapping[str, Policy]
    runs: tuple[RunInfo, ...]
    replays: tuple[RunReplay, ...]
    elapsed_seconds: float = 0.0
    calibration: Mapping[str, ProviderCalibration] = field(default_factory=dict)


# --------------------------------------------------------------------------- one run, one policy
@dataclass(frozen=True, slots=True)
class _Results:
    """One iteration's recorded tool results as a dispatch serves them (the same for every policy):
    where in the iteration the results of its calls stand, those calls in that order, and the
    recorded outcomes."""

    positions: tuple[int, ...] = ()
    calls: tuple[ToolCall, ...] = ()
    outcomes: tuple[ToolOutcome, ...] = ()

    @classmethod
    def of(cls, group: Sequence[Message]) -> _Results:
        calls = {c.id: c for m in group if m.role == "assistant" for c in m.tool_calls}
        positions = tuple(
            i for i, m in enumerate(group) if m.role == "tool" and (m.tool_call_id or "") in calls
        )
        return cls(
            positions,
            tuple(calls[group[i].tool_call_id or ""] for i in positions),
            tuple(ToolOutcome(content=group[i].text) for i in positions),
        )


async def _observations(
    manager: ContextManager,
    group: Sequence[Message],
    kind: Callable[[ToolCall], ToolKind],
    iteration: int,
    results: _Results | None = None,
) -> Sequence[Message]:
    """Iteration ``iteration``'s messages as the live agent would have recorded them: ``group``
    itself when the dispatch served every result as recorded.

    The recorded tool results go through the manager's dispatch, the agent's own, in
    message order; "executing" a call returns its recorded observation. A dedup hit
    replaces the recorded content with what the agent would have served; a manager none of
    whose steps takes part in a dispatch (:attr:`ContextManager.dispatches`) serves every
    result as recorded, so the group is returned without one. ``results``: the
    group's :class:`_Results` (derived here if not given).
    """
    found = _Results.of(group) if results is None else results
    if not found.positions or not manager.dispatches:  # no step can serve another outcome
        return group
    outcomes = found.outcomes

    async def recorded(indexes: Sequence[int]) -> list[ToolOutcome]:
        return [outcomes[i] for i in indexes]

    dispatched = await manager.dispatch(found.calls, kind, recorded, iteration=iteration)
    out: list[Message] | None = None
    for position, result in zip(found.positions, dispatched, strict=True):
        if result.dedup_of is not None:
            out = list(group) if out is None else out
            out[position] = dataclasses.replace(group[position], content=result.outcome.content)
    return group if out is None else out


_INTERNAL = ToolKind(read_only=True, internal=True)
_READ_ONLY = ToolKind(read_only=True)
_WRITES = ToolKind(read_only=False)


def _tool_kinds(run: RecordedRun) -> Callable[[ToolCall], ToolKind]:
    """A recorded run's tools as the dispatch sees them; ``context_retrieve`` is internal and read-only."""

    def kind(call: ToolCall) -> ToolKind:
        if call.name == RETRIEVE_TOOL:
            return _INTERNAL
        return _READ_ONLY if run.is_read_only(call) else _WRITES

    return kind


def _step_outputs(run: RecordedRun, counter: IdCounter) -> tuple[int, ...]:
    """Output tokens per step: the recorded completion tokens, else the assistant message's count."""
    actions = [m for m in run.messages if m.role == "assistant"]
    outputs = []
    for index, action in enumerate(actions):
        usage = run.usage[index] if index < len(run.usage) else None
        if usage is not None and usage.completion_tokens > 0:
            outputs.append(usage.completion_tokens)
        else:
            outputs.append(counter.count_message(action))
    return tuple(outputs)


def _retrieval_charge(
    missed: Sequence[str], history: Sequence[Message], policy: Policy, counter: IdCounter
) -> int:
    """Tokens of one ``context_retrieve`` round trip: the call plus the first page it returns."""
    topic = " ".join(missed)
    call = ToolCall("retrieve", RETRIEVE_TOOL, orjson.dumps({"topic": topic}).decode())
    call_tokens = counter.count_message(Message("assistant", None, tool_calls=(call,)))
    return call_tokens + _first_page_tokens(topic, history, policy, counter)


def _first_page_tokens(topic: str, history: Sequence[Message], policy: Policy, counter: IdCounter) -> int:
    """Tokens of the page ``context_retrieve(topic=...)`` returns over the full history."""
    page = retrieve(history, topic=topic, page_tokens=policy.retrieve_page_tokens, counter=counter)
    return counter.count_uncached(page.text)


@dataclass
class _RunState:
    """Policy-independent per-run inputs shared by every policy's replay."""

    run: RecordedRun
    counter: IdCounter
    encoder: PromptEncoder
    salience: SalienceIndex
    outputs: tuple[int, ...]
    groups: dict[int, list[Message]]
    recorded: RecordedTexts  # the run's messages as sent, and which of them hold a string
    cache_model: CacheModel = IDEAL
    token_scale: float = 1.0  # provider tokens per replayed token (for the cache model's sizes)
    terms: CacheTerms = field(default_factory=CacheTerms)  # what aging decides by: cache and prices
    words: WordIndex | None = None  # the word-level ruler
    sources: RetrievalSources | None = None  # for the retrieval-adjusted misses
    evidence: EvidenceIndex | None = None  # the line and own-writing rulers
    memo: TextMemo = field(default_factory=TextMemo)  # normalized prompt messages, shared by policies
    raw: RawTexts = field(default_factory=RawTexts)  # prompt messages as sent, shared by policies
    routing: str = "recorded"
    # Retrieval charges depend on the step, the topic and the dedup settings only: shared by policies.
    retrievals: dict[tuple[Any, ...], int] = field(default_factory=dict)
    prefix_tokens: int = (
        0  # replayed tokens the log left out (system prompt, tools): sent before every prompt
    )
    long_steps: frozenset[int] = frozenset()  # steps whose cache writes have the 1-hour lifetime
    turns_after_reasoning: frozenset[int] = frozenset()  # steps opening a turn after one that reasoned
    # The stretches between the agent's own compactions: (iteration offset, messages by local iteration).
    segments: list[tuple[int, dict[int, list[Message]]]] = field(default_factory=list)
    acting: frozenset[int] = frozenset()  # the ids of the segments' groups holding an assistant message
    # Where each recorded message stands in the run, and the misses of prompts made of recorded messages
    # only, by step and prompt (policies that have not rewritten anything yet send the same prompt).
    positions: dict[int, int] = field(default_factory=dict)
    missing: dict[tuple[int, tuple[int, ...]], _Misses] = field(default_factory=dict)
    # The misses of prompts holding messages of a policy's own, by step, length and newest message: policies
    # whose steps share those messages (``codex`` and ``adk-code``, ``tiered`` and its aging ablation)
    # often send the very same prompt. Each entry keeps its prompt (so its messages' ids stay theirs).
    own_missing: dict[tuple[int, int, int], list[tuple[tuple[Message, ...], _Misses]]] = field(
        default_factory=dict
    )
    memos: RunMemos = field(default_factory=RunMemos)  # what the policies' steps share (aging's forms)
    chains: CacheChains = field(default_factory=CacheChains)  # the caches of policies sending the same
    # Each iteration's recorded tool results as a dispatch serves them, by the identity of its group.
    results: dict[int, tuple[Sequence[Message], _Results]] = field(default_factory=dict)
    group_tokens: dict[int, tuple[Sequence[Message], int]] = field(default_factory=dict)  # by group identity
    # The histories of policies whose observations were all served as recorded, by iteration (``snapshot``).
    snapshots: dict[tuple[int, int], CountedHistory] = field(default_factory=dict)
    snapshot_slots: int = 0  # the messages they hold in all

    def min_tokens_at(self, step: int) -> int | None:
        """The shortest prefix the model that answered call ``step`` caches, when the run switched to
        a model whose minimum differs (:func:`switched_min_tokens`); None: the cache model's."""
        return switched_min_tokens(self.run.model_at(step), self.cache_model)

    def tokens_of(self, group: Sequence[Message]) -> int:
        """The tokens of one of the run's or a segment's groups (the messages as recorded), once per run."""
        entry = self.group_tokens.get(id(group))  # the entry keeps the group alive
        if entry is None or entry[0] is not group:
            entry = self.group_tokens[id(group)] = (group, sum(map(self.counter.count_message, group)))
        return entry[1]

    def snapshot(self, at: tuple[int, int], history: Sequence[Message], tokens: int) -> CountedHistory:
        """The history before iteration ``at`` (a segment's offset, its iteration) of a policy whose
        observations were all served as recorded: the segment's messages up to there,
        which every such policy sends to ``prepare`` (one tuple for them all, while the kept ones hold
        at most :data:`MAX_SNAPSHOT_SLOTS` messages in all; ``history``, ``tokens``: the policy's own,
        to build it from)."""
        found = self.snapshots.get(at)
        if found is not None:
            return found
        built = CountedHistory(history, tokens)
        if self.snapshot_slots + len(built) <= MAX_SNAPSHOT_SLOTS:
            self.snapshots[at] = built
            self.snapshot_slots += len(built)
        return built

    def results_of(self, group: Sequence[Message]) -> _Results:
        """:meth:`_Results.of` ``group`` (one of the run's or a segment's groups), once per run."""
        entry = self.results.get(id(group))  # the entry keeps the group alive
        if entry is None or entry[0] is not group:
            entry = self.results[id(group)] = (group, _Results.of(group))
        return entry[1]

    def misses(
        self,
        iteration: int,
        key: tuple[int, ...] | None,
        prompt: tuple[Message, ...],
        raw: RawView,
        view: PromptView,
    ) -> _Misses:
        """:func:`_misses` of ``prompt`` at ``iteration``, once per step for each distinct prompt (the same
        message objects): ``key``, its :class:`_Track`'s ``recorded`` of the prompt, tells the prompts made
        of recorded messages only; the others are told by their messages' identities."""
        if key is None:
            return self._own_misses(iteration, prompt, raw, view)
        found = self.missing.get((iteration, key))
        if found is None:
            found = self.missing[iteration, key] = _misses(self, iteration, raw, view)
        return found

    def _own_misses(
        self, iteration: int, prompt: tuple[Message, ...], raw: RawView, view: PromptView
    ) -> _Misses:
        """:meth:`misses` of a prompt holding a message of its policy's own."""
        if not prompt:
            return _misses(self, iteration, raw, view)
        size = len(prompt)
        seen = self.own_missing.setdefault((iteration, size, id(prompt[-1])), [])
        for other, found in seen:  # the same newest object (the entry keeps it alive): compare the rest
            if identical_prefix(other, prompt) == size:
                return found
        found = _misses(self, iteration, raw, view)
        seen.append((prompt, found))
        return found

    def retrieval_charge(
        self, iteration: int, missed: Sequence[str], history: Sequence[Message], policy: Policy
    ) -> int:
        key = (iteration, tuple(missed), policy.find(Dedup), policy.retrieve_page_tokens)
        if key not in self.retrievals:
            self.retrievals[key] = _retrieval_charge(missed, history, policy, self.counter)
        return self.retrievals[key]

    def route(self, step: int) -> str | None:
        """The endpoint whose cache serves model call ``step``: the recorded one, or (``sticky``) the
        first recorded endpoint of the run for every call."""
        if self.routing == "sticky":
            return next((r for r in self.run.routes if r is not None), None)
        return self.run.route(step)

    @classmethod
    def of(
        cls,
        run: RecordedRun,
        counter: IdCounter,
        cache_model: CacheModel = IDEAL,
        token_scale: float = 1.0,
        terms: CacheTerms | None = None,
        *,
        prefix_tokens: int = 0,
        routing: str = "recorded",
    ) -> _RunState:
        groups = group_by_iteration(run.messages)
        recorded = RecordedTexts(run)
        segments = _segments(run, groups)
        return cls(
            run,
            counter,
            PromptEncoder(counter),
            SalienceIndex(run),
            _step_outputs(run, counter),
            groups,
            recorded,
            cache_model,
            token_scale,
            terms or CacheTerms.of(cache_model, scale=token_scale),
            WordIndex(run, recorded.vocabulary),
            RetrievalSources(run, counter),
            EvidenceIndex(run),
            TextMemo(recorded.ids),
            RawTexts(recorded.ids),
            routing=routing,
            prefix_tokens=max(prefix_tokens, 0),
            long_steps=long_ttl_steps(run.usage, run.cache_writes_1h),
            turns_after_reasoning=run.turns_after_reasoning(),
            segments=segments,
            acting=frozenset(
                id(group)
                for _, found in segments
                for group in found.values()
                if any(m.role == "assistant" for m in group)
            ),
            positions=dict(zip(map(id, run.messages), count(), strict=False)),
        )


def _segments(
    run: RecordedRun, groups: dict[int, list[Message]]
) -> list[tuple[int, dict[int, list[Message]]]]:
    """The run's stretches between the agent's own compactions (:meth:`RecordedRun.segments`)."""
    if not run.restarts:
        return [(0, groups)]
    return [(s.offset, group_by_iteration(s.messages)) for s in run.segments()]


@dataclass(frozen=True, slots=True)
class _Track:
    """One policy's prompts across a run: its provider cache, and the texts the rulers read of
    its prompts, derived only for the messages a prompt changed (``_series.py``)."""

    cache: CacheTrack
    raw: SparseSeries[Message, str]  # the foreign messages as sent (``_rulers.RecordedTexts``)
    normalized: SparseSeries[Message, tuple[str, bool]]  # as the line rulers read them; not the agent's own
    # A prompt made of the run's recorded messages only, as the first and last position of each stretch
    # of consecutive recorded messages in it (None: it holds a message of its policy's own). The rulers
    # read such a prompt through its messages' identities alone (it has no foreign text).
    recorded: Stretches
    # The joined texts the rulers search, of the policy's previous prompts (``RawView``, ``PromptView``):
    raw_join: Joined  # the foreign texts
    normalized_joins: Mapping[bool, Joined]  # the normalized texts not the agent's (True), all (False)
    retrieval_active: bool  # the policy registers ``context_retrieve`` (its misses may be recovered)
    ids: IdSets  # the ids of its prompt's messages, extended from its previous prompt's
    # The baseline's only (None for other policies): every message its requests closed with so far, by
    # identity, for the cost anatomy (``_regions``; a policy that copies its messages would keep them all).
    sent: dict[int, Message] | None


async def _replay_policy(
    state: _RunState, name: str, policy: Policy, window: int, summary_model: str | None
) -> PolicyRunMetrics:
    """One policy over one run: each stretch between the agent's own compactions (one without any)
    in a fresh manager, as the agent's context restarted there; one provider cache throughout."""
    track = _Track(
        CacheTrack(
            CacheSimulator(state.encoder, state.cache_model, state.token_scale, state.prefix_tokens),
            state.chains,
        ),
        SparseSeries(state.raw.foreign, state.recorded.ids),
        SparseSeries(state.memo.entry, state.recorded.ids),
        Stretches(state.positions),
        Joined("\n"),
        {True: Joined(), False: Joined()},
        policy.retrieval_active,
        IdSets(),
        {} if name == BASELINE else None,
    )
    steps: list[StepMetrics] = []
    summary_usage, dedup_hits = Usage(), 0
    errors: list[StepError] = []
    done = 0  # the model calls prepared so far, counted or not
    for offset, groups in state.segments:
        manager, done, uncounted = await _replay_segment(
            state, policy, window, summary_model, track=track, steps=steps, at=(offset, done), groups=groups
        )
        counted = _Tally.of(manager).less(uncounted)
        summary_usage, dedup_hits = summary_usage + counted.summary, dedup_hits + counted.hits
        errors.extend(manager.step_errors)
    return PolicyRunMetrics(
        policy=name,
        run_id=state.run.run_id,
        steps=tuple(steps),
        summary_usage=summary_usage,
        dedup_hits=dedup_hits,
        retrieval_active=policy.retrieval_active,
        cache_write_premium=state.cache_model.write_premium,
        step_errors=tuple(errors),
    )


async def _replay_segment(
    state: _RunState,
    policy: Policy,
    window: int,
    summary_model: str | None,
    *,
    track: _Track,
    steps: list[StepMetrics],
    at: tuple[int, int],
    groups: Mapping[int, Sequence[Message]],
) -> tuple[ContextManager, int, _Tally]:
    """Replay one segment (iterations renumbered from 0; ``at``: the run's iterations are ``offset``
    higher, and ``done`` model calls came before it); append its counted steps to ``steps``; return
    the manager (its summary usage and dedup hits), the model calls prepared so far, and the part of
    the manager's tally made before the run's first counted call (not counted).

    The one place where a run's uncounted calls (the first :attr:`RecordedRun.counted_from`: calls
    a run read before holds) are left out (:func:`_uncounted`): the policy prepares their prompts
    and serves their results, so its state is built as in a live resume, and their requests reach
    the provider cache as they reached the provider (the time-aware cache decides by the recorded
    times whether they are still cached when the first counted call goes out), but they make no
    :class:`StepMetrics` (no tokens, costs, ruler checks, anatomy or retrieval charge); the
    summaries and dedup hits the policy made before the first counted call are not counted either
    (the run read before counts them). So a run's counted calls measure exactly what they measure
    in the run benched alone."""
    run, counter = state.run, state.counter
    offset, done = at
    uncounted = _Tally()
    summarizer = None
    if summary_model is not None and policy.summarizes:  # its calls are counted as summary usage
        summarizer = CheckedSummarizer(
            summary_model, max_tokens=policy.summary_max_tokens, timeout_s=policy.summary_timeout_s
        )
    manager = ContextManager(
        policy,
        counter=counter,
        context_window=window,
        summarizer=summarizer,
        background=False,
        enforce_hard_limit=False,
        cache_terms=state.terms,
        clock=None,  # each prompt is prepared at its recorded request time (_step)
        unrecorded_tokens=resent_prefix(state.cache_model, state.prefix_tokens),
        memos=state.memos,
    )
    history: list[Message] = []
    tokens = _extend(history, groups.get(0, ()), counter, 0)
    limit = policy.hard_limit * (manager.context_window or window)
    kind = _tool_kinds(run)
    recorded = True  # every observation so far served as recorded: the history is the segment's own
    async with manager:
        schemas = _schemas(run, manager, history)
        for iteration in sorted(i for i in groups if i > 0):
            group = groups[iteration]
            if id(group) in state.acting:
                done += 1
                snapshot = (
                    state.snapshot((offset, iteration), history, tokens)
                    if recorded
                    else CountedHistory(history, tokens)
                )
                if done <= run.counted_from:  # counted in another run: the policy sees it, nothing counts it
                    await _uncounted(state, manager, track, snapshot, schemas, step=done)
                else:
                    if done == run.counted_from + 1:
                        uncounted = _Tally.of(manager)
                    steps.append(
                        await _step(
                            state,
                            manager,
                            track,
                            snapshot,
                            schemas,
                            iteration=iteration + offset,
                            step=done,
                            limit=limit,
                        )
                    )
                if summarizer is not None:  # a summary that failed: stop before reporting its savings
                    summarizer.check(policy.name)
            observed = await _observations(manager, group, kind, iteration, state.results_of(group))
            if observed is group:  # as recorded: its tokens are the same for every policy
                history.extend(group)
                tokens += state.tokens_of(group)
            else:
                tokens = _extend(history, observed, counter, tokens)
                recorded = False
    before_any = run.counted_from and done <= run.counted_from  # no call of this segment is counted
    return manager, done, _Tally.of(manager) if before_any else uncounted


class _Tally(NamedTuple):
    """What a context manager counted so far besides the prompts: its summaries' usage, its dedup hits."""

    summary: Usage = Usage()
    hits: int = 0

    @classmethod
    def of(cls, manager: ContextManager) -> _Tally:
        return cls(manager.summary_usage, manager.dedup_hits)

    def less(self, before: _Tally) -> _Tally:
        """This tally without what ``before`` (an earlier tally of the same manager) held."""
        if before == _Tally():
            return self
        now, then = self.summary, before.summary
        cost = None if now.cost is None else now.cost - (then.cost or 0.0)
        summary = Usage(
            now.prompt_tokens - then.prompt_tokens, now.completion_tokens - then.completion_tokens,
            now.cached_tokens - then.cached_tokens, now.requests - then.requests, cost,
            now.cache_write_tokens - then.cache_write_tokens,
        )  # fmt: skip
        return _Tally(summary, self.hits - before.hits)


def resent_prefix(cache_model: CacheModel, prefix_tokens: int) -> int:
    """Tokens of the unrecorded prefix a change of the tools re-sends (what the agent would know of
    its own system prompt): under explicit caches the part after the prefix's shared breakpoint (the
    tools follow the prefix); implicit caches keep the whole prefix, which precedes the tools."""
    if not cache_model.explicit:
        return 0
    return round(max(prefix_tokens, 0) * (1 - cache_model.shared_share))


def _schemas(run: RecordedRun, manager: ContextManager, history: list[Message]) -> list[Mapping[str, Any]]:
    """The run's tool schemas, with ``context_retrieve`` as the policy registers it (a trace of this
    runtime records the schema it ran with: it is not counted twice)."""
    own = [t for t in run.tools if t.get("function", {}).get("name") != RETRIEVE_TOOL]
    return [*own, *(t.schema() for t in manager.tools(lambda: history))]


def _extend(history: list[Message], new: Sequence[Message], counter: IdCounter, tokens: int) -> int:
    """Append ``new`` to ``history``; return the history's updated message token count."""
    history.extend(new)
    return tokens + sum(counter.count_message(m) for m in new)


def _request(
    state: _RunState, track: _Track, prepared: PreparedPrompt, step: int
) -> tuple[tuple[int, ...] | None, CacheUse]:
    """Send the prompt of model call ``step`` to the policy's provider cache: what it read and wrote,
    and the prompt's recorded stretches (:attr:`_Track.recorded`)."""
    messages = prepared.built.messages
    recorded = track.recorded(messages)
    use = track.cache.request(
        recorded,
        messages,
        prepared.tools,
        route=state.route(step),
        at=state.run.time(step),
        long_ttl=step in state.long_steps,
        new_turn_after_reasoning=step in state.turns_after_reasoning,
        stable=prepared.built.stable,
        partition=state.run.cache_partition(step),
        min_tokens=state.min_tokens_at(step),
    )
    return recorded, use


async def _uncounted(
    state: _RunState,
    manager: ContextManager,
    track: _Track,
    history: Sequence[Message],
    schemas: Sequence[Mapping[str, Any]],
    *,
    step: int,
) -> None:
    """Model call ``step``, which a run read before counts: the policy prepares its prompt (its
    state is built as in a live resume) and the prompt reaches the provider cache and the anatomy's
    memory of what was sent, as it reached the provider, but nothing of it is measured."""
    prepared = await manager.prepare(history, schemas, at=state.run.time(step))
    _request(state, track, prepared, step)
    prompt_tokens = prepared.prompt_tokens + state.prefix_tokens
    _regions(state, track, prepared.built.messages, prepared.tools, prompt_tokens)


async def _step(
    state: _RunState,
    manager: ContextManager,
    track: _Track,
    history: Sequence[Message],
    schemas: Sequence[Mapping[str, Any]],
    *,
    iteration: int,
    step: int,
    limit: float,
) -> StepMetrics:
    started = time.perf_counter()
    prepared = await manager.prepare(history, schemas, at=state.run.time(step))
    elapsed = time.perf_counter() - started
    messages = prepared.built.messages
    prompt_tokens = prepared.prompt_tokens + state.prefix_tokens  # the unrecorded prefix is sent too
    cache = track.cache
    recorded, use = _request(state, track, prepared, step)
    cached = min(use.read, prompt_tokens)
    fixed, new = _regions(state, track, messages, prepared.tools, prompt_tokens)
    raw = RawView(messages, state.recorded, track.raw, join=track.raw_join, id_sets=track.ids)
    view = PromptView(messages, state.memo, track.normalized, raw.ids, track.normalized_joins)
    misses = state.misses(iteration, recorded, messages, raw, view)
    missed = misses.missed
    retrieval = 0
    recoverable = recovery_tokens = 0
    lines = _NO_LINES
    if track.retrieval_active and (missed or misses.line_missed or misses.own_missed):
        if missed:
            retrieval = state.retrieval_charge(iteration, missed, history, manager.policy)
            if state.sources is not None:
                recovery = state.sources.recovery(
                    missed, iteration, raw.retrievals(), manager.policy.retrieve_page_tokens
                )
                recoverable, recovery_tokens = recovery.recoverable, recovery.tokens
        lines = _line_rulers(
            state, iteration, misses, raw=raw, policy=manager.policy, prompt_tokens=prompt_tokens
        )
    return StepMetrics(
        step=step,
        prompt_tokens=prompt_tokens,
        cached_tokens=cached,
        output_tokens=state.outputs[step - 1] if step <= len(state.outputs) else 0,
        salient=misses.salient,
        missed=missed,
        retrieval_tokens=retrieval,
        rewrote_prefix=cache.rewrote,
        compacted=prepared.compacted,
        over_hard_limit=prepared.estimated_tokens > limit,
        truncated_chars=prepared.built.stats.truncated_chars,
        build_seconds=elapsed,
        cache_write_tokens=min(use.written, prompt_tokens - cached),
        recoverable=recoverable,
        recovery_tokens=recovery_tokens,
        word_salient=misses.word_salient,
        word_missed=misses.word_missed,
        line_needed=misses.line_needed,
        line_missed=misses.line_missed,
        line_recoverable=lines.line_recoverable,
        own_needed=misses.own_needed,
        own_missed=misses.own_missed,
        own_recoverable=lines.own_recoverable,
        turn=lines.turn,
        fixed_tokens=fixed,
        new_tokens=new,
    )


def _regions(
    state: _RunState,
    track: _Track,
    messages: Sequence[Message],
    tools: Sequence[Mapping[str, Any]],
    prompt_tokens: int,
) -> tuple[int, int]:
    """(fixed, new) tokens of a request (``_anatomy.py``): its fixed start (the unrecorded prefix, the
    reply primer, the tool schemas, its opening messages of iteration 0) and its closing messages that
    no earlier request of the track sent (counted as the prompt's tokens are); (0, 0) off the baseline."""
    if track.sent is None:
        return 0, 0
    count = state.counter.count_message
    lead = next((i for i, m in enumerate(messages) if m.iteration != 0), len(messages))
    fixed = state.prefix_tokens + PROMPT_OVERHEAD + state.counter.count_tools(tools)
    fixed = min(fixed + sum(count(m) for m in messages[:lead]), prompt_tokens)
    sent, start = track.sent, len(messages)
    while start > lead and sent.get(id(messages[start - 1])) is not messages[start - 1]:
        start -= 1
    closing = messages[start:]
    sent.update((id(m), m) for m in closing)
    return fixed, min(sum(count(m) for m in closing), prompt_tokens - fixed)


class _Misses(NamedTuple):
    """What one prompt missed at one step under the salient, word, line and own-writing rulers: a
    function of the prompt's messages and the step only, whatever the policy that built it."""

    salient: int = 0
    missed: tuple[str, ...] = ()
    word_salient: int = 0
    word_missed: int = 0
    line_needed: int = 0
    line_missed: tuple[str, ...] = ()
    own_needed: int = 0
    own_missed: tuple[str, ...] = ()


def _misses(state: _RunState, iteration: int, raw: RawView, view: PromptView) -> _Misses:
    """The prompt's misses at ``iteration`` (``raw``, ``view``: the prompt as the rulers read it)."""
    salient = state.salience.salient(iteration)
    words = state.words.salient(iteration) if state.words is not None else ()
    absent = state.recorded.absent
    missed, word_missed = absent(salient, raw), len(absent(words, raw))
    evidence = state.evidence
    if evidence is None:
        return _Misses(len(salient), missed, len(words), word_missed)
    needed = evidence.needed(iteration)
    cutoff = evidence.cutoff(iteration)
    shown = evidence.shown
    return _Misses(
        len(salient),
        missed,
        len(words),
        word_missed,
        line_needed=len(needed.observed),
        line_missed=tuple(t for t in needed.observed if not shown(t, view, cutoff, observed=True)),
        own_needed=len(needed.own),
        own_missed=tuple(t for t in needed.own if not shown(t, view, cutoff, observed=False)),
    )


class _LineRulers(NamedTuple):
    """The recoverable misses of the line and own-writing rulers at one step, and the retrieval turn
    its misses cost."""

    line_recoverable: int = 0
    own_recoverable: int = 0
    turn: RetrievalTurn | None = None


_NO_LINES = _LineRulers()  # a step with nothing missed, or whose policy does not retrieve


def _line_rulers(
    state: _RunState,
    iteration: int,
    misses: _Misses,
    *,
    raw: RawView,
    policy: Policy,
    prompt_tokens: int,
) -> _LineRulers:
    """With retrieval, the misses of the line and own-writing rulers (``_evidence.py``) that a shown
    retrieval call recovers, and the extra turn (``_turns.py``) that retrieves every recoverable miss
    of any of the salient, line and own-writing rulers."""
    evidence = state.evidence
    missed, line_missed, own_missed = misses.missed, misses.line_missed, misses.own_missed
    if evidence is None or not policy.retrieval_active or state.sources is None:
        return _LineRulers()
    if not (missed or line_missed or own_missed):
        return _LineRulers()
    ids, ranges = raw.retrievals()
    if not ids and not ranges:
        return _LineRulers()
    cutoff = evidence.cutoff(iteration)
    line = {
        t: i
        for t in line_missed
        if (i := evidence.source(t, cutoff, observed=True, ids=ids, ranges=ranges)) is not None
    }
    own = {
        t: i
        for t in own_missed
        if (i := evidence.source(t, cutoff, observed=False, ids=ids, ranges=ranges)) is not None
    }
    salient = state.sources.sources(missed, iteration, ids, ranges)
    chosen = sorted({*line.values(), *own.values(), *salient.values()})
    pages = [state.sources.page_tokens(i, policy.retrieve_page_tokens) for i in chosen]
    turn = retrieval_turn(state.cache_model, state.token_scale, prompt_tokens, pages)
    return _LineRulers(len(line), len(own), turn)


async def replay_run(
    run: RecordedRun,
    policies: Mapping[str, Policy],
    *,
    counter: IdCounter,
    context_window: int = 128_000,
    summary_model: str | None = None,
    cache_model: CacheModel = IDEAL,
    token_scale: float = 1.0,
    cache_terms: CacheTerms | None = None,
    prefix_tokens: int = 0,
    routing: str = "recorded",
) -> RunReplay:
    """Replay one run under every policy (sequentially, sharing the run's token memo).

    ``cache_model`` is the provider cache simulated for every policy; ``token_scale``
    converts replayed tokens into that provider's (its minimum and block sizes);
    ``cache_terms`` is what aging policies decide by (default: the cache model at a 0.1
    read price); ``prefix_tokens``: replayed tokens the log left out, sent before every
    policy's prompt (the plan's prefix); ``routing`` (:data:`ROUTINGS`) which endpoint's cache
    serves each call.
    """
    state = _RunState.of(
        run, counter, cache_model, token_scale, cache_terms, prefix_tokens=prefix_tokens, routing=routing
    )
    results = {
        name: await _replay_policy(state, name, policy, context_window, summary_model)
        for name, policy in policies.items()
    }
    return RunReplay(run.run_id, state.outputs, results)


async def replay_prompts(
    run: RecordedRun, policy: Policy, settings: ReplaySettings = ReplaySettings(), plan: RunPlan | None = None
) -> AsyncGenerator[PreparedPrompt, None]:
    """Every prompt ``policy`` builds for ``run``, model call by model call, replayed as the bench
    does (the same manager calls and dispatch; cache and price terms from ``plan``, else the run's
    plan uncalibrated, as a live agent decides; a fresh manager after each of the agent's own
    compactions). :func:`bench_plan` is the plan the bench gives the run benched alone."""
    counter = IdCounter(settings.tokenizer)
    if plan is None:
        plan = plan_run(run.model, settings.cache_model, settings.price_model, {})
    kind = _tool_kinds(run)
    step = 0
    for _, groups in _segments(run, group_by_iteration(run.messages)):
        manager = ContextManager(
            policy,
            counter=counter,
            context_window=settings.context_window,
            background=False,
            enforce_hard_limit=False,
            cache_terms=plan_terms(plan, settings),
            clock=None,
            unrecorded_tokens=resent_prefix(plan.cache_model, plan.prefix.tokens),
        )
        history: list[Message] = list(groups.get(0, ()))
        async with manager:
            schemas = _schemas(run, manager, history)
            for iteration in sorted(i for i in groups if i > 0):
                group = groups[iteration]
                if any(m.role == "assistant" for m in group):
                    step += 1
                    yield await manager.prepare(history, schemas, at=run.time(step))
                history.extend(await _observations(manager, group, kind, iteration))


def bench_plan(
    run: RecordedRun, settings: ReplaySettings = ReplaySettings(), calibration: Calibration | None = None
) -> RunPlan:
    """The plan ``tiered-agent bench`` gives ``run``: calibrated (its unrecorded prefix, its
    provider's token scale) on ``calibration`` (:func:`~._calibration.fit` of the runs benched
    together), else on the run alone, and with the cache lifetime its recorded writes had."""
    fitted = calibration if calibration is not None else fit([run], TokenCounter(settings.tokenizer))
    return run_plan(RunInfo.of(run), settings, fitted)


async def prompt_at(
    run: RecordedRun,
    policy: Policy,
    step: int,
    settings: ReplaySettings = ReplaySettings(),
    plan: RunPlan | None = None,
) -> PreparedPrompt:
    """The prompt ``policy`` builds for model call ``step`` of ``run`` (the last one if the run is
    shorter), under ``plan`` (:func:`replay_prompts`)."""
    found: PreparedPrompt | None = None
    done = 0
    async with aclosing(replay_prompts(run, policy, settings, plan)) as prompts:
        async for prepared in prompts:
            found, done = prepared, done + 1
            if done == step:
                break
    if found is None:
        raise ConfigurationError(f"run {run.run_id} has no model call")
    return found


# --------------------------------------------------------------------------- many runs
def replay_job(
    run: RecordedRun,
    policies: Mapping[str, Policy],
    settings: ReplaySettings,
    plan: RunPlan,
    encoded: EncodedTexts | None = None,
) -> RunReplay:
    """One run under every policy, on its own token counter (nothing of it outlives the call).
    ``encoded``: the ids of the run's recorded texts the calibration encoded (:func:`counted_run`),
    adopted by the counter instead of encoding them again."""
    counter = IdCounter(settings.tokenizer)
    if encoded is not None:
        counter.adopt(recorded_texts(run), encoded)
    done: list[RunReplay] = []

    async def main() -> None:
        done.append(
            await replay_run(
                run,
                policies,
                counter=counter,
                context_window=settings.context_window,
                summary_model=settings.summary_model,
                cache_model=plan.cache_model,
                token_scale=plan.token_scale,
                cache_terms=plan_terms(plan, settings),
                prefix_tokens=plan.prefix.tokens,
                routing=settings.routing,
            )
        )

    # The result leaves through ``done``, not as the task's: asyncio's runner reprs its main task
    # (result included, the whole replay) when it restores the SIGINT handler after the run.
    anyio.run(main)
    return done[0]


def plan_terms(plan: RunPlan, settings: ReplaySettings) -> CacheTerms:
    """The cache terms of a run's plan: its cache model, priced as its price model (else at the
    bench's cache discount), sizes converted with its token scale."""
    return CacheTerms.of(
        plan.cache_model,
        plan_prices(plan),
        default_read=settings.cache_discount,
        scale=plan.token_scale,
        long_ttl=plan.long_ttl,
    )


def numbered(run_id: str, seen: dict[str, int]) -> str:
    """The id of the next run recorded as ``run_id``: itself the first time, then ``id#2``, ``id#3``,
    ... (``seen`` counts the runs so far by recorded id)."""
    seen[run_id] = seen.get(run_id, 0) + 1
    return run_id if seen[run_id] == 1 else f"{run_id}#{seen[run_id]}"


def unique_ids(runs: Sequence[RecordedRun]) -> list[RecordedRun]:
    """``runs`` with the ids the bench gives them: a run recorded under an id seen before is
    numbered (:func:`numbered`)."""
    seen: dict[str, int] = {}
    out = []
    for run in runs:
        name = numbered(run.run_id, seen)
        out.append(run if name == run.run_id else dataclasses.replace(run, run_id=name))
    return out


def replay_runs(
    runs: Sequence[RecordedRun],
    policies: Mapping[str, Policy],
    settings: ReplaySettings = ReplaySettings(),
    *,
    workers: int = 1,
    on_progress: Callable[[RunInfo], None] | None = None,
    ray: RayAddress | None = None,
    calibration: Calibration | None = None,
) -> BenchResult:
    """Replay every run under every policy, in memory (the bench command streams instead:
    ``_stream.py``); ``workers > 1`` spreads runs over processes, ``ray`` over a Ray cluster
    (``workers`` then bounds the runs in flight; 0: twice its CPUs).

    ``calibration`` (see :func:`~._calibration.fit`): the calibration to price the runs with, when
    it was measured on more runs than these (a shard's, on all of them). The result is ordered by
    run id whatever the worker count or backend, so it is deterministic.
    """
    started = time.perf_counter()
    unique = unique_ids(runs)
    infos = {r.run_id: RunInfo.of(r) for r in unique}
    done: dict[str, RunReplay] = {}
    encoded: dict[str, EncodedTexts] = {}  # each counted run's texts, for its replay to adopt
    with open_backend(workers if len(unique) > 1 else 1, ray) as backend:
        if calibration is None:
            measured = [(r,) for r in unique if measurable(r)]
            tokens = {}
            for run_id, counts, texts in backend.map(full_tokens_unit, measured, (settings.tokenizer,)):
                tokens[run_id], encoded[run_id] = counts, texts
            calibration = fit(unique, tokens=tokens)
        plans = {run_id: run_plan(info, settings, calibration) for run_id, info in infos.items()}
        items = (
            (run, Planned(plans[run.run_id], encoded.pop(run.run_id, None))) for run in longest_first(unique)
        )
        for replay in backend.map(replay_unit, items, (policies, settings)):
            done[replay.run_id] = replay
            infos[replay.run_id] = infos[replay.run_id].planned(plans[replay.run_id])
            if on_progress is not None:
                on_progress(infos[replay.run_id])
    order = sorted(infos)
    return BenchResult(
        settings=settings,
        policies=dict(policies),
        runs=tuple(infos[i] for i in order),
        replays=tuple(done[i] for i in order),
        elapsed_seconds=time.perf_counter() - started,
        calibration=dict(calibration.providers),
    )


def full_tokens_unit(
    level: int | None, tokenizer: str, run: RecordedRun
) -> tuple[str, list[int], EncodedTexts]:
    """One run's replayed ``full`` prompt tokens per step (what the calibration measures), and the ids
    of its recorded texts (:func:`~._calibration.counted_run`), as a unit of work (:mod:`._backend`:
    ``level`` configures a worker's logging)."""
    if level is not None:
        configure_worker_logging(level)
    counts, encoded = counted_run(run, TokenCounter(tokenizer))
    return run.run_id, counts, encoded


@dataclass(frozen=True, slots=True)
class Planned:
    """A run's plan, and the ids of its recorded texts the calibration encoded (None: not counted)."""

    plan: RunPlan
    encoded: EncodedTexts | None = None


def replay_unit(
    level: int | None,
    policies: Mapping[str, Policy],
    settings: ReplaySettings,
    run: RecordedRun,
    planned: Planned,
) -> RunReplay:
    """One run under every policy, as a unit of work (:mod:`._backend`)."""
    if level is not None:
        configure_worker_logging(level)
    return replay_job(run, policies, settings, planned.plan, planned.encoded)


def run_plan(info: RunInfo, settings: ReplaySettings, fitted: Calibration) -> RunPlan:
    """A run's plan under the bench's settings, with its unrecorded prefix and cache lifetime."""
    long = len(long_ttl_steps(info.usage, info.cache_writes_1h)) * 2 > info.steps - info.uncounted_steps
    return plan_run(
        info.model,
        settings.cache_model,
        settings.price_model,
        fitted.providers,
        prefix=fitted.prefix(info.run_id),
        long_ttl=long,
    )


def longest_first(runs: Iterable[RecordedRun]) -> list[RecordedRun]:
    """The runs, longest first (balances the workers: the long ones do not finish last alone)."""
    return sorted(runs, key=lambda r: (-len(r.messages), r.run_id))
