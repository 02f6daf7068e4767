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
import logging
import multiprocessing
import time
from collections.abc import AsyncGenerator, Callable, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

import anyio
import orjson
import structlog

from .._errors import ConfigurationError
from .._messages import Message, ToolCall, Usage, group_by_iteration
from .._providers import CACHE_MODEL_NAMES, CacheModel, model_prices
from .._tokens import TokenCounter
from .._tools import ToolOutcome
from ..context._dispatch import ToolKind
from ..context._manager import ContextManager, PreparedPrompt
from ..context._names import RETRIEVE_TOOL_NAME
from ..context._policy import Policy
from ..context._presets import PRESETS
from ..context.aging._breakeven import CacheTerms
from ..context.retrieve._tool import retrieve
from ..context.steps import Dedup
from ..context.summary._llm import LLMSummarizer
from ._caching import IDEAL, CacheSimulator, CountedHistory, IdCounter, Pricing, PromptEncoder
from ._calibration import ProviderCalibration, calibrate
from ._metrics import PolicyRunMetrics, SalienceIndex, StepMetrics, missed_in
from ._pricing import RunPlan, family_of, plan_run
from ._recorded import RecordedRun
from ._rulers import Recovery, RetrievalSources, WordIndex, prompt_texts

__all__ = [
    "ABLATIONS",
    "BASELINE",
    "BenchResult",
    "ReplaySettings",
    "RunInfo",
    "RunReplay",
    "available_policies",
    "policy_config",
    "prompt_at",
    "replay_prompts",
    "replay_run",
    "replay_runs",
    "resolve_policies",
]

BASELINE = "full"
RETRIEVE_TOOL = RETRIEVE_TOOL_NAME
# Each tier of ``tiered`` alone: the steps of the other tiers switched off.
ABLATIONS: dict[str, tuple[str, ...]] = {
    "truncation-only": ("dedup", "age", "compact"),
    "aging-only": ("truncate", "dedup"),
    "dedup-only": ("truncate", "age", "compact"),
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
    """A recorded run without its messages: what the report needs."""

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

    @property
    def has_usage(self) -> bool:
        return any(u is not None and u.prompt_tokens > 0 for u in self.usage)

    @classmethod
    def of(cls, run: RecordedRun, plan: RunPlan | None = None) -> RunInfo:
        info = cls(
            run.run_id, run.source, run.format, run.model, run.steps, tuple(run.usage), family_of(run.format),
            endpoints=len({r for r in run.routes if r is not None}),
        )  # fmt: skip
        if plan is None:
            return info
        return dataclasses.replace(
            info,
            cache_model=plan.cache_model.name,
            cache_model_source=plan.cache_model_source,
            provider=plan.provider,
            token_scale=plan.token_scale,
            price_model=plan.price_model,
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
async def _observations(
    manager: ContextManager, group: Sequence[Message], kind: Callable[[ToolCall], ToolKind], iteration: int
) -> list[Message]:
    """Iteration ``iteration``'s messages as the live agent would have recorded them.

    The recorded tool results go through the manager's dispatch, the agent's own, in
    message order; "executing" a call returns its recorded observation. A dedup hit
    replaces the recorded content with what the agent would have served.
    """
    calls = {c.id: c for m in group if m.role == "assistant" for c in m.tool_calls}
    positions = [i for i, m in enumerate(group) if m.role == "tool" and (m.tool_call_id or "") in calls]
    if not positions:
        return list(group)
    batch = [calls[group[i].tool_call_id or ""] for i in positions]

    async def recorded(indexes: Sequence[int]) -> list[ToolOutcome]:
        return [ToolOutcome(content=group[positions[i]].text) for i in indexes]

    results = await manager.dispatch(batch, kind, recorded, iteration=iteration)
    out = list(group)
    for position, result in zip(positions, results, strict=True):
        if result.dedup_of is not None:
            out[position] = dataclasses.replace(group[position], content=result.outcome.content)
    return out


def _tool_kinds(run: RecordedRun) -> Callable[[ToolCall], ToolKind]:
    """A recorded run's tools as the dispatch sees them; ``context_retrieve`` is internal and read-only."""

    def kind(call: ToolCall) -> ToolKind:
        if call.name == RETRIEVE_TOOL:
            return ToolKind(read_only=True, internal=True)
        return ToolKind(read_only=run.is_read_only(call))

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
    cache_model: CacheModel = IDEAL
    token_scale: float = 1.0  # provider tokens per replayed token (for the cache model's sizes)
    terms: CacheTerms = field(default_factory=CacheTerms)  # what aging decides by: cache and prices
    words: WordIndex | None = None  # the word-level ruler
    sources: RetrievalSources | None = None  # for the retrieval-adjusted misses
    # Retrieval charges depend on the step, the topic and the dedup settings only: shared by policies.
    retrievals: dict[tuple[Any, ...], int] = field(default_factory=dict)

    def retrieval_charge(
        self, iteration: int, missed: Sequence[str], history: Sequence[Message], policy: Policy
    ) -> int:
        key = (iteration, tuple(missed), policy.find(Dedup), policy.retrieve_page_tokens)
        if key not in self.retrievals:
            self.retrievals[key] = _retrieval_charge(missed, history, policy, self.counter)
        return self.retrievals[key]

    @classmethod
    def of(
        cls,
        run: RecordedRun,
        counter: IdCounter,
        cache_model: CacheModel = IDEAL,
        token_scale: float = 1.0,
        terms: CacheTerms | None = None,
    ) -> _RunState:
        return cls(
            run,
            counter,
            PromptEncoder(counter),
            SalienceIndex(run),
            _step_outputs(run, counter),
            group_by_iteration(run.messages),
            cache_model,
            token_scale,
            terms or CacheTerms.of(cache_model, scale=token_scale),
            WordIndex(run),
            RetrievalSources(run, counter),
        )


async def _replay_policy(
    state: _RunState, name: str, policy: Policy, window: int, summary_model: str | None
) -> PolicyRunMetrics:
    run, counter = state.run, state.counter
    summarizer = None
    if summary_model is not None and policy.summarizes:  # its calls are counted as summary usage
        summarizer = LLMSummarizer(
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
    )
    cache = CacheSimulator(state.encoder, state.cache_model, state.token_scale)
    history: list[Message] = []
    tokens = _extend(history, state.groups.get(0, ()), counter, 0)
    limit = policy.hard_limit * (manager.context_window or window)
    steps: list[StepMetrics] = []
    kind = _tool_kinds(run)
    async with manager:
        schemas = _schemas(run, manager, history)
        for iteration in sorted(i for i in state.groups if i > 0):
            group = state.groups[iteration]
            if any(m.role == "assistant" for m in group):
                snapshot = CountedHistory(history, tokens)
                steps.append(
                    await _step(
                        state,
                        manager,
                        cache,
                        snapshot,
                        schemas,
                        iteration=iteration,
                        step=len(steps) + 1,
                        limit=limit,
                    )
                )
            observed = await _observations(manager, group, kind, iteration)
            tokens = _extend(history, observed, counter, tokens)
    return PolicyRunMetrics(
        policy=name,
        run_id=run.run_id,
        steps=tuple(steps),
        summary_usage=manager.summary_usage,
        dedup_hits=manager.dedup_hits,
        retrieval_active=policy.retrieval_active,
        cache_write_premium=state.cache_model.write_premium,
        step_errors=tuple(manager.step_errors),
    )


def _schemas(run: RecordedRun, manager: ContextManager, history: list[Message]) -> list[Mapping[str, Any]]:
    """The run's tool schemas, with ``context_retrieve`` as the policy registers it (a trace of this
    runtime records the schema it ran with: it is not counted twice)."""
    own = [t for t in run.tools if t.get("function", {}).get("name") != RETRIEVE_TOOL]
    return [*own, *(t.schema() for t in manager.tools(lambda: history))]


def _extend(history: list[Message], new: Sequence[Message], counter: IdCounter, tokens: int) -> int:
    """Append ``new`` to ``history``; return the history's updated message token count."""
    history.extend(new)
    return tokens + sum(counter.count_message(m) for m in new)


async def _step(
    state: _RunState,
    manager: ContextManager,
    cache: CacheSimulator,
    history: Sequence[Message],
    schemas: Sequence[Mapping[str, Any]],
    *,
    iteration: int,
    step: int,
    limit: float,
) -> StepMetrics:
    started = time.perf_counter()
    prepared = await manager.prepare(history, schemas)
    elapsed = time.perf_counter() - started
    messages = prepared.built.messages
    use = cache.request(messages, prepared.tools, route=state.run.route(step))
    cached = min(use.read, prepared.prompt_tokens)
    texts = prompt_texts(messages)
    salient = state.salience.salient(iteration)
    missed = missed_in(salient, texts)
    words = state.words.salient(iteration) if state.words is not None else ()
    retrieval = 0
    recovery = Recovery()
    if missed and manager.policy.retrieval_active:
        retrieval = state.retrieval_charge(iteration, missed, history, manager.policy)
        if state.sources is not None:
            recovery = state.sources.recovery(missed, iteration, texts, manager.policy.retrieve_page_tokens)
    return StepMetrics(
        step=step,
        prompt_tokens=prepared.prompt_tokens,
        cached_tokens=cached,
        output_tokens=state.outputs[step - 1] if step <= len(state.outputs) else 0,
        salient=len(salient),
        missed=missed,
        retrieval_tokens=retrieval,
        rewrote_prefix=cache.rewrote,
        compacted=prepared.compacted,
        over_hard_limit=prepared.estimated_tokens > limit,
        truncated_chars=prepared.built.stats.truncated_chars,
        build_seconds=elapsed,
        cache_write_tokens=min(use.written, prepared.prompt_tokens - cached),
        recoverable=recovery.recoverable,
        recovery_tokens=recovery.tokens,
        word_salient=len(words),
        word_missed=len(missed_in(words, texts)),
    )


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
) -> RunReplay:
    """Replay one run under every policy (sequentially, sharing the run's token memo).

    ``cache_model`` is the provider cache simulated for every policy; ``token_scale``
    converts replayed tokens into that provider's (its minimum and block sizes);
    ``cache_terms`` is what aging policies decide by (default: the cache model at a 0.1
    read price).
    """
    state = _RunState.of(run, counter, cache_model, token_scale, cache_terms)
    results = {
        name: await _replay_policy(state, name, policy, context_window, summary_model)
        for name, policy in policies.items()
    }
    return RunReplay(run.run_id, state.outputs, results)


async def replay_prompts(
    run: RecordedRun, policy: Policy, settings: ReplaySettings = ReplaySettings()
) -> AsyncGenerator[PreparedPrompt, None]:
    """Every prompt ``policy`` builds for ``run``, model call by model call, replayed as the bench
    does (the same manager calls and dispatch; cache and price terms from the run's plan)."""
    counter = _counter(settings.tokenizer)
    plan = plan_run(run.model, settings.cache_model, settings.price_model, {})
    manager = ContextManager(
        policy,
        counter=counter,
        context_window=settings.context_window,
        background=False,
        enforce_hard_limit=False,
        cache_terms=plan_terms(plan, settings),
    )
    groups = group_by_iteration(run.messages)
    history: list[Message] = list(groups.get(0, ()))
    kind = _tool_kinds(run)
    async with manager:
        schemas = _schemas(run, manager, history)
        for iteration in sorted(i for i in groups if i > 0):
            group = groups[iteration]
            if any(m.role == "assistant" for m in group):
                yield await manager.prepare(history, schemas)
            history.extend(await _observations(manager, group, kind, iteration))


async def prompt_at(
    run: RecordedRun, policy: Policy, step: int, settings: ReplaySettings = ReplaySettings()
) -> PreparedPrompt:
    """The prompt ``policy`` builds for model call ``step`` of ``run`` (the last one if the run is
    shorter)."""
    found: PreparedPrompt | None = None
    done = 0
    async with aclosing(replay_prompts(run, policy, settings)) as prompts:
        async for prepared in prompts:
            found, done = prepared, done + 1
            if done == step:
                break
    if found is None:
        raise ConfigurationError(f"run {run.run_id} has no model call")
    return found


# --------------------------------------------------------------------------- many runs
_COUNTERS: dict[str, IdCounter] = {}


def _counter(encoding: str) -> IdCounter:
    if encoding not in _COUNTERS:
        _COUNTERS[encoding] = IdCounter(encoding)
    return _COUNTERS[encoding]


def _replay_job(
    run: RecordedRun, policies: Mapping[str, Policy], settings: ReplaySettings, plan: RunPlan
) -> RunReplay:
    """One run in one process (the unit of work of the pool)."""
    counter = _counter(settings.tokenizer)

    async def main() -> RunReplay:
        return await replay_run(
            run,
            policies,
            counter=counter,
            context_window=settings.context_window,
            summary_model=settings.summary_model,
            cache_model=plan.cache_model,
            token_scale=plan.token_scale,
            cache_terms=plan_terms(plan, settings),
        )

    return anyio.run(main)


def plan_terms(plan: RunPlan, settings: ReplaySettings) -> CacheTerms:
    """The cache terms of a run's plan: its cache model, priced as its price model (else at the
    bench's cache discount), sizes converted with its token scale."""
    prices = model_prices(plan.price_model) if plan.price_model else None
    return CacheTerms.of(
        plan.cache_model, prices, default_read=settings.cache_discount, scale=plan.token_scale
    )


def _unique_ids(runs: Sequence[RecordedRun]) -> list[RecordedRun]:
    seen: dict[str, int] = {}
    out = []
    for run in runs:
        seen[run.run_id] = seen.get(run.run_id, 0) + 1
        out.append(
            run
            if seen[run.run_id] == 1
            else dataclasses.replace(run, run_id=f"{run.run_id}#{seen[run.run_id]}")
        )
    return out


def replay_runs(
    runs: Sequence[RecordedRun],
    policies: Mapping[str, Policy],
    settings: ReplaySettings = ReplaySettings(),
    *,
    workers: int = 1,
    on_progress: Callable[[RunInfo], None] | None = None,
) -> BenchResult:
    """Replay every run under every policy; ``workers > 1`` spreads runs over processes.

    The result is ordered by run id whatever the worker count, so it is deterministic.
    """
    started = time.perf_counter()
    unique = _unique_ids(runs)
    serial = workers <= 1 or len(unique) <= 1
    # Serially the replay reuses the token ids the calibration memoized; with workers, the parent
    # only counts (no id memo kept alive in it).
    calibration = calibrate(
        unique, _counter(settings.tokenizer) if serial else TokenCounter(settings.tokenizer, cache_size=4096)
    )
    plans = {
        r.run_id: plan_run(r.model, settings.cache_model, settings.price_model, calibration) for r in unique
    }
    infos = {r.run_id: RunInfo.of(r, plans[r.run_id]) for r in unique}
    done: dict[str, RunReplay] = {}

    def finished(replay: RunReplay) -> None:
        done[replay.run_id] = replay
        if on_progress is not None:
            on_progress(infos[replay.run_id])

    if serial:
        for run in unique:
            finished(_replay_job(run, policies, settings, plans[run.run_id]))
    else:
        _replay_parallel(unique, policies, settings, plans, workers=workers, finished=finished)
    order = sorted(infos)
    return BenchResult(
        settings=settings,
        policies=dict(policies),
        runs=tuple(infos[i] for i in order),
        replays=tuple(done[i] for i in order),
        elapsed_seconds=time.perf_counter() - started,
        calibration=calibration,
    )


def _log_level() -> int:
    """The parent's structlog level, so workers log (or stay quiet) alike."""
    try:
        return int(structlog.get_logger().bind().get_effective_level())
    except AttributeError:
        return logging.WARNING


def _init_worker(level: int) -> None:
    from .._logging import configure_logging

    configure_logging(level=logging.getLevelName(level).lower())


def _replay_parallel(
    runs: Sequence[RecordedRun],
    policies: Mapping[str, Policy],
    settings: ReplaySettings,
    plans: Mapping[str, RunPlan],
    *,
    workers: int,
    finished: Callable[[RunReplay], None],
) -> None:
    # Longest runs first balances the workers; "spawn" is safe next to the progress bar's thread.
    ordered = sorted(runs, key=lambda r: (-len(r.messages), r.run_id))
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(
        max_workers=workers, mp_context=context, initializer=_init_worker, initargs=(_log_level(),)
    ) as pool:
        futures = [pool.submit(_replay_job, run, policies, settings, plans[run.run_id]) for run in ordered]
        for future in as_completed(futures):
            finished(future.result())
