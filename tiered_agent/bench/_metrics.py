"""Replay metrics: hidden information (salient strings), per-run and total aggregates, validation.

*Salient strings* of step ``k`` are the identifiers, paths and numbers (4+
characters) in the recorded action ``k`` (the assistant message's content and
tool-call arguments) that first appeared in an earlier observation (a tool or
user message of iteration >= 1) and appear nowhere in what the model always
sees (system prompt, task, tool schemas). A salient string absent from the
prompt a policy built for step ``k`` is *missed*: the recorded model used a
fact that policy would have hidden. This is the *salient* ruler; the word ruler
(``_rulers.py``), the line ruler and the own-writing ruler (``_evidence.py``)
stand next to it, and docs/rulers.md defines all four.
"""

from __future__ import annotations

import math
import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import NamedTuple

import orjson

from .._messages import Message, Usage
from .._trace import StepError
from ._caching import Pricing
from ._pricing import RunCosting
from ._recorded import RecordedRun
from ._turns import RetrievalTurn

__all__ = [
    "LONG_RUN_STEPS",
    "CacheValidation",
    "CostValidation",
    "Fidelity",
    "PolicyRunMetrics",
    "SalienceIndex",
    "StepMetrics",
    "Totals",
    "absent_from",
    "fidelity",
    "is_salient",
    "missed_in",
    "missed_strings",
    "percentile",
    "salient_candidates",
    "totals",
    "validate_caching",
    "validate_cost",
]

LONG_RUN_STEPS = 65  # the peak-prompt goal applies to runs this long
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*[A-Za-z0-9_]")
_CODE_LIKE = re.compile(r"[/_.0-9]|[a-z][A-Z]")
_MIN_CHARS = 4


def is_salient(token: str) -> bool:
    """An identifier, path or number of 4+ characters (plain words do not count).

    Code-like means: contains ``/``, ``_``, ``.`` or a digit, or is camelCase.
    """
    return len(token) >= _MIN_CHARS and _CODE_LIKE.search(token) is not None


def salient_candidates(text: str) -> set[str]:
    """The code-like tokens of ``text``."""
    return {t for t in set(_TOKEN.findall(text)) if is_salient(t)}


def message_text(message: Message) -> str:
    """Everything of a message the model reads: content and tool-call arguments."""
    if not message.tool_calls:
        return message.text
    parts = [message.text]
    for call in message.tool_calls:
        parts.append(call.name)
        parts.append(call.arguments)
    return "\n".join(parts)


class SalienceIndex:
    """Salient strings per step of one recorded run (policy-independent, computed once)."""

    def __init__(self, run: RecordedRun) -> None:
        always = [message_text(m) for m in run.messages if m.iteration == 0]
        if run.tools:
            always.append(orjson.dumps(list(run.tools)).decode())
        self._always = "\n".join(always)
        later = [m for m in run.messages if m.iteration >= 1]
        self._texts = [message_text(m) for m in later]
        self._starts = list(accumulate((len(t) + 1 for t in self._texts[:-1]), initial=0))
        self._corpus = "\n".join(self._texts)  # a token holds no line break: found in one text
        self._observation = [m.role in ("tool", "user") for m in later]
        self._action_at: dict[int, int] = {}
        for index, message in enumerate(later):
            if message.role == "assistant":
                self._action_at.setdefault(message.iteration, index)
        self._first: dict[str, int | None] = {}
        self._salient: dict[int, tuple[str, ...]] = {}
        self._is_salient: dict[str, bool] = {}
        self._in_always: dict[str, bool] = {}  # whether the always-sent text holds a token, once per run

    def _first_index(self, token: str) -> int | None:
        """The first message of iteration 1 or later whose text holds ``token``."""
        if token not in self._first:
            at = self._corpus.find(token)
            self._first[token] = None if at < 0 else bisect_right(self._starts, at) - 1
        return self._first[token]

    def salient(self, iteration: int) -> tuple[str, ...]:
        """Sorted salient strings of the action of ``iteration`` (empty if it has none)."""
        if iteration not in self._salient:
            self._salient[iteration] = self._compute(iteration)
        return self._salient[iteration]

    def _compute(self, iteration: int) -> tuple[str, ...]:
        index = self._action_at.get(iteration)
        if index is None:
            return ()
        found = []
        distinct = set(_TOKEN.findall(self._texts[index]))
        salient = self._is_salient  # :func:`is_salient` of every distinct token of the run, once
        for token in distinct.difference(salient):
            salient[token] = is_salient(token)
        for token in filter(salient.__getitem__, distinct):
            first = self._first_index(token)
            if first is None or first >= index or not self._observation[first]:
                continue
            if not self._always_has(token):
                found.append(token)
        return tuple(sorted(found))

    def _always_has(self, token: str) -> bool:
        known = self._in_always.get(token)
        if known is None:
            known = self._in_always[token] = token in self._always
        return known


def missed_strings(salient: Sequence[str], prompt: Sequence[Message]) -> tuple[str, ...]:
    """The salient strings that appear nowhere in ``prompt`` (newest messages searched first)."""
    if not salient:
        return ()
    return missed_in(salient, [message_text(m) for m in reversed(prompt)])


def missed_in(salient: Sequence[str], texts: Sequence[str]) -> tuple[str, ...]:
    """The salient strings in none of ``texts`` (a prompt's message texts, newest first).

    The texts are searched as one (a string never spans two: salient strings hold no line break)."""
    return absent_from(salient, "\n".join(texts)) if salient else ()


def absent_from(strings: Sequence[str], joined: str) -> tuple[str, ...]:
    """The ``strings`` that are not in ``joined`` (a prompt's texts joined by line breaks)."""
    return tuple(s for s in strings if s not in joined)


class StepMetrics(NamedTuple):
    """What one policy sent at one step of one run.

    A ``NamedTuple``: immutable, typed, and built in C (the replay makes one per policy per step,
    26 fields; a frozen dataclass's ``__init__`` set each through ``object.__setattr__``). Copies
    with a field changed are ``step._replace(...)``; two records are equal when their fields are
    (in order), as a tuple's items are. Nothing reads it as a sequence."""

    step: int
    prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    salient: int
    missed: tuple[str, ...]
    retrieval_tokens: int  # one context_retrieve round trip when something was missed (retrieval policies)
    rewrote_prefix: bool  # the prompt changed the previous prompt before its end (cache broken there)
    compacted: bool
    over_hard_limit: bool
    truncated_chars: int
    build_seconds: float
    cache_write_tokens: int = 0  # prompt tokens billed as written to the cache (explicit caches)
    recoverable: int = 0  # missed strings an exact retrieval call shown in the prompt recovers
    recovery_tokens: int = 0  # those calls and what they return (at most a page each)
    word_salient: int = 0  # the word-level ruler (``_rulers.py``)
    word_missed: int = 0
    line_needed: int = 0  # the line ruler (``_evidence.py``): strings first seen in an observation
    line_missed: tuple[str, ...] = ()  # shown without a line of an observation that held them
    line_recoverable: int = 0
    own_needed: int = 0  # the own-writing ruler: strings the agent wrote first
    own_missed: tuple[str, ...] = ()
    own_recoverable: int = 0
    turn: RetrievalTurn | None = None  # the extra model turn the recoverable misses cost
    # ``full``'s only (0 for other policies): the cost anatomy's places (``_anatomy.py``)
    fixed_tokens: int = 0  # the request's fixed start: prefix, tools, opening messages, reply primer
    new_tokens: int = 0  # its closing messages that no earlier request of the run sent


@dataclass(frozen=True, slots=True)
class PolicyRunMetrics:
    """One policy replayed over one run."""

    policy: str
    run_id: str
    steps: tuple[StepMetrics, ...]
    summary_usage: Usage = field(default_factory=Usage)
    dedup_hits: int = 0
    retrieval_active: bool = False
    cache_write_premium: float = 1.0  # the run's cache model: price of a written token (input = 1)
    step_errors: tuple[StepError, ...] = ()  # context steps that raised and were skipped (0 expected)


@dataclass(frozen=True, slots=True)
class Totals:
    """Aggregates over any set of (policy, run) replays."""

    runs: int
    steps: int
    prompt_tokens: int
    peak_prompt_tokens: int
    cached_tokens: int
    output_tokens: int
    summary_input_tokens: int
    summary_output_tokens: int
    effective_cost: float
    input_cost: float  # prompts only (cached at the discount), summarizer input included
    prefix_rewrites: int
    salient: int
    missed: int
    steps_with_miss: int
    retrieval_tokens: int | None  # None: the policy has no context_retrieve
    over_hard_limit_steps: int
    compactions: int
    dedup_hits: int
    truncated_chars: int
    cache_write_tokens: int = 0
    step_errors: int = 0  # context steps that raised and were skipped (fail open)
    calibrated_input_tokens: int = 0  # input tokens in each run's provider tokens (token scale applied)
    calibrated_cached_tokens: int = 0
    cost_usd: float | None = None  # over the priced runs; None: none priced (or a summarizer unpriced)
    priced_runs: int = 0
    recoverable: int = 0
    recovery_tokens: int = 0
    word_salient: int = 0
    word_missed: int = 0
    long_runs: int = 0  # runs of LONG_RUN_STEPS steps or more
    long_run_peak_tokens: int = 0  # the sum over those runs of each run's peak prompt
    line_needed: int = 0
    line_missed: int = 0
    line_recoverable: int = 0
    own_needed: int = 0
    own_missed: int = 0
    own_recoverable: int = 0
    retrieval_turns: int = 0  # steps that cost an extra model turn to retrieve what they missed
    retrieval_turn_tokens: int = 0  # prompt tokens of those turns
    retrieval_turn_output_tokens: int = 0
    retrieval_turn_input_cost: float = 0.0  # their prompts, in uncached-input-token units

    @property
    def line_miss_rate(self) -> float:
        return self.line_missed / self.line_needed if self.line_needed else 0.0

    @property
    def own_miss_rate(self) -> float:
        return self.own_missed / self.own_needed if self.own_needed else 0.0

    @property
    def line_miss_rate_adjusted(self) -> float:
        """Line misses no shown exact retrieval call recovers."""
        return (self.line_missed - self.line_recoverable) / self.line_needed if self.line_needed else 0.0

    @property
    def own_miss_rate_adjusted(self) -> float:
        return (self.own_missed - self.own_recoverable) / self.own_needed if self.own_needed else 0.0

    @property
    def rulers(self) -> dict[str, float]:
        """Every ruler's miss rate, by name."""
        return {
            "salient": self.miss_rate,
            "word": self.word_miss_rate,
            "line": self.line_miss_rate,
            "own": self.own_miss_rate,
        }

    @property
    def worst_miss_rate(self) -> float:
        """The largest miss rate of the four rulers."""
        return max(self.rulers.values())

    @property
    def input_cost_adjusted(self) -> float:
        """Input cost with the extra model turns the recoverable misses cost."""
        return self.input_cost + self.retrieval_turn_input_cost

    @property
    def miss_rate_adjusted(self) -> float:
        """Misses no shown exact retrieval call recovers, over the salient strings."""
        return (self.missed - self.recoverable) / self.salient if self.salient else 0.0

    @property
    def word_miss_rate(self) -> float:
        return self.word_missed / self.word_salient if self.word_salient else 0.0

    @property
    def input_tokens(self) -> int:
        """Every input token sent: the model calls plus the summarizer's own calls."""
        return self.prompt_tokens + self.summary_input_tokens

    @property
    def cached_share(self) -> float:
        return self.cached_tokens / self.prompt_tokens if self.prompt_tokens else 0.0

    @property
    def rewrite_rate(self) -> float:
        """Share of the steps after a run's first whose prompt rewrote the previous one before its end."""
        followers = self.steps - self.runs
        return self.prefix_rewrites / followers if followers > 0 else 0.0

    @property
    def miss_rate(self) -> float:
        return self.missed / self.salient if self.salient else 0.0

    @property
    def retrieval_adjusted_input_tokens(self) -> int | None:
        return None if self.retrieval_tokens is None else self.input_tokens + self.retrieval_tokens


def _turn_cost(items: Sequence[PolicyRunMetrics], pricing: Pricing) -> float:
    """The extra retrieval turns' prompts, in uncached-input-token units."""
    return sum(
        pricing.input_cost(
            s.turn.prompt_tokens, s.turn.cached_tokens, s.turn.written_tokens, r.cache_write_premium
        )
        for r in items
        for s in r.steps
        if s.turn is not None
    )


def _step_sums(steps: Sequence[StepMetrics]) -> dict[str, int]:
    """The tokens and the steps' events, summed over ``steps``."""
    return {
        "prompt_tokens": sum(s.prompt_tokens for s in steps),
        "peak_prompt_tokens": max((s.prompt_tokens for s in steps), default=0),
        "cached_tokens": sum(s.cached_tokens for s in steps),
        "output_tokens": sum(s.output_tokens for s in steps),
        "cache_write_tokens": sum(s.cache_write_tokens for s in steps),
        "truncated_chars": sum(s.truncated_chars for s in steps),
        "prefix_rewrites": sum(1 for s in steps if s.rewrote_prefix),
        "over_hard_limit_steps": sum(1 for s in steps if s.over_hard_limit),
        "compactions": sum(1 for s in steps if s.compacted),
    }


def _salient_sums(steps: Sequence[StepMetrics]) -> dict[str, int]:
    """The salient and word rulers' counts, summed over ``steps``."""
    return {
        "salient": sum(s.salient for s in steps),
        "missed": sum(len(s.missed) for s in steps),
        "steps_with_miss": sum(1 for s in steps if s.missed),
        "recoverable": sum(s.recoverable for s in steps),
        "recovery_tokens": sum(s.recovery_tokens for s in steps),
        "word_salient": sum(s.word_salient for s in steps),
        "word_missed": sum(s.word_missed for s in steps),
    }


def _ruler_sums(steps: Sequence[StepMetrics]) -> dict[str, int]:
    """The line and own-writing rulers' counts and the retrieval turns, summed over ``steps``."""
    turns = [s.turn for s in steps if s.turn is not None]
    return {
        "line_needed": sum(s.line_needed for s in steps),
        "line_missed": sum(len(s.line_missed) for s in steps),
        "line_recoverable": sum(s.line_recoverable for s in steps),
        "own_needed": sum(s.own_needed for s in steps),
        "own_missed": sum(len(s.own_missed) for s in steps),
        "own_recoverable": sum(s.own_recoverable for s in steps),
        "retrieval_turns": len(turns),
        "retrieval_turn_tokens": sum(t.prompt_tokens for t in turns),
        "retrieval_turn_output_tokens": sum(t.output_tokens for t in turns),
    }


def _unit_costs(items: Sequence[PolicyRunMetrics], pricing: Pricing, summary: Usage) -> tuple[float, float]:
    """(effective cost, input cost) in uncached-input-token units."""
    cost = input_cost = float(summary.prompt_tokens)
    for r in items:
        for s in r.steps:
            prompt = pricing.input_cost(
                s.prompt_tokens, s.cached_tokens, s.cache_write_tokens, r.cache_write_premium
            )
            input_cost += prompt
            cost += prompt + s.output_tokens * pricing.output_price_ratio
    return cost + summary.completion_tokens * pricing.output_price_ratio, input_cost


def _usd(items: Sequence[PolicyRunMetrics], costing: Mapping[str, RunCosting]) -> tuple[float | None, int]:
    """(USD over the priced runs, how many runs were priced); None when none was, or when a
    summarizer whose model has no price spent tokens."""
    total, priced = 0.0, 0
    for r in items:
        run = costing.get(r.run_id)
        if run is None or run.prices is None:
            continue
        summary = run.summary_usd(r.summary_usage)
        if summary is None:
            return None, 0
        priced += 1
        total += summary + sum(
            run.step_usd(s.step, s.prompt_tokens, s.cached_tokens, s.cache_write_tokens, s.output_tokens)
            for s in r.steps
        )
    return (total if priced else None), priced


def _calibrated(items: Sequence[PolicyRunMetrics], costing: Mapping[str, RunCosting]) -> tuple[int, int]:
    """(prompt tokens, cached tokens) in each run's provider tokens."""
    prompt = cached = 0.0
    for r in items:
        run = costing.get(r.run_id)
        scale = run.scale if run is not None else 1.0
        prompt += scale * sum(s.prompt_tokens for s in r.steps)
        cached += scale * sum(s.cached_tokens for s in r.steps)
    return round(prompt), round(cached)


def totals(
    replays: Iterable[PolicyRunMetrics],
    pricing: Pricing,
    costing: Mapping[str, RunCosting] | None = None,
) -> Totals:
    """Sum a policy's replays (all runs, one, or any subset such as a family).

    ``costing`` (per run id) adds the calibrated token totals and the USD cost.
    """
    items = list(replays)
    steps = [s for r in items for s in r.steps]
    summary = sum((r.summary_usage for r in items), Usage())
    cost, input_cost = _unit_costs(items, pricing, summary)
    calibrated_prompt, calibrated_cached = _calibrated(items, costing or {})
    cost_usd, priced = _usd(items, costing or {})
    retrieval = any(r.retrieval_active for r in items)
    return Totals(
        runs=len(items),
        steps=len(steps),
        summary_input_tokens=summary.prompt_tokens,
        summary_output_tokens=summary.completion_tokens,
        effective_cost=cost,
        input_cost=input_cost,
        retrieval_tokens=sum(s.retrieval_tokens for s in steps) if retrieval else None,
        dedup_hits=sum(r.dedup_hits for r in items),
        step_errors=sum(len(r.step_errors) for r in items),
        calibrated_input_tokens=calibrated_prompt + summary.prompt_tokens,
        calibrated_cached_tokens=calibrated_cached,
        cost_usd=cost_usd,
        priced_runs=priced,
        long_runs=sum(1 for r in items if len(r.steps) >= LONG_RUN_STEPS),
        long_run_peak_tokens=sum(
            max(s.prompt_tokens for s in r.steps) for r in items if len(r.steps) >= LONG_RUN_STEPS
        ),
        retrieval_turn_input_cost=_turn_cost(items, pricing),
        **_step_sums(steps),
        **_salient_sums(steps),
        **_ruler_sums(steps),
    )


def percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (``q`` in [0, 100]); 0.0 for no values."""
    if not values:
        return 0.0
    ordered = sorted(values)
    rank = max(1, math.ceil(q / 100 * len(ordered)))
    return ordered[min(rank, len(ordered)) - 1]


@dataclass(frozen=True, slots=True)
class RunCacheValidation:
    run_id: str
    steps: int
    mean_abs_error: float
    simulated_share: float
    recorded_share: float


@dataclass(frozen=True, slots=True)
class CacheValidation:
    """Simulated cached share under ``full`` vs the provider's recorded ``cached_tokens``."""

    runs: int
    steps: int
    mean_abs_error: float  # mean over steps of |simulated share - recorded share|
    simulated_share: float  # total simulated cached / total replayed prompt tokens
    recorded_share: float  # total recorded cached / total recorded prompt tokens
    per_run: tuple[RunCacheValidation, ...]

    @property
    def share_ratio(self) -> float:
        return self.simulated_share / self.recorded_share if self.recorded_share else 0.0


def _recorded_steps(
    replay: PolicyRunMetrics, usage: Sequence[Usage | None]
) -> list[tuple[StepMetrics, Usage]]:
    pairs = []
    for step in replay.steps:
        recorded = usage[step.step - 1] if step.step - 1 < len(usage) else None
        if recorded is not None and recorded.prompt_tokens > 0 and step.prompt_tokens > 0:
            pairs.append((step, recorded))
    return pairs


def validate_caching(
    full: Sequence[PolicyRunMetrics], usage: Mapping[str, Sequence[Usage | None]]
) -> CacheValidation | None:
    """Compare the simulation with recorded cache hits; None when no run recorded usage."""
    per_run, errors = [], []
    sim_cached = sim_prompt = rec_cached = rec_prompt = 0
    for replay in full:
        pairs = _recorded_steps(replay, usage.get(replay.run_id, ()))
        if not pairs:
            continue
        run_errors = [
            abs(s.cached_tokens / s.prompt_tokens - u.cached_tokens / u.prompt_tokens) for s, u in pairs
        ]
        errors.extend(run_errors)
        s_c, s_p = sum(s.cached_tokens for s, _ in pairs), sum(s.prompt_tokens for s, _ in pairs)
        r_c, r_p = sum(u.cached_tokens for _, u in pairs), sum(u.prompt_tokens for _, u in pairs)
        sim_cached, sim_prompt, rec_cached, rec_prompt = (
            sim_cached + s_c,
            sim_prompt + s_p,
            rec_cached + r_c,
            rec_prompt + r_p,
        )
        per_run.append(
            RunCacheValidation(replay.run_id, len(pairs), sum(run_errors) / len(pairs), s_c / s_p, r_c / r_p)
        )
    if not per_run:
        return None
    return CacheValidation(
        runs=len(per_run),
        steps=len(errors),
        mean_abs_error=sum(errors) / len(errors),
        simulated_share=sim_cached / sim_prompt,
        recorded_share=rec_cached / rec_prompt,
        per_run=tuple(sorted(per_run, key=lambda r: r.run_id)),
    )


@dataclass(frozen=True, slots=True)
class CostValidation:
    """The replayed ``full`` priced in USD vs the cost the provider recorded, on the same steps."""

    runs: int
    steps: int
    recorded_usd: float
    simulated_usd: float

    @property
    def ratio(self) -> float:
        return self.simulated_usd / self.recorded_usd if self.recorded_usd else 0.0


def validate_cost(
    full: Sequence[PolicyRunMetrics],
    usage: Mapping[str, Sequence[Usage | None]],
    costing: Mapping[str, RunCosting],
) -> CostValidation | None:
    """Check the dollar chain (calibration, cache model, prices) on the steps that recorded a cost;
    ``full`` holds the runs priced as their recorded model. None when no step recorded a cost."""
    runs = steps = 0
    recorded = simulated = 0.0
    for replay in full:
        run = costing.get(replay.run_id)
        pairs = [
            (s, u) for s, u in _recorded_steps(replay, usage.get(replay.run_id, ())) if u.cost is not None
        ]
        if run is None or run.prices is None or not pairs:
            continue
        runs, steps = runs + 1, steps + len(pairs)
        recorded += sum(u.cost or 0.0 for _, u in pairs)
        simulated += sum(
            run.step_usd(s.step, s.prompt_tokens, s.cached_tokens, s.cache_write_tokens, s.output_tokens)
            for s, _ in pairs
        )
    return CostValidation(runs, steps, recorded, simulated) if runs else None


@dataclass(frozen=True, slots=True)
class RunFidelity:
    run_id: str
    steps: int
    replayed_prompt_tokens: int
    recorded_prompt_tokens: int

    @property
    def ratio(self) -> float:
        return self.replayed_prompt_tokens / self.recorded_prompt_tokens


@dataclass(frozen=True, slots=True)
class Fidelity:
    """Replayed ``full`` prompt tokens vs what the provider billed, over steps with recorded usage."""

    per_run: tuple[RunFidelity, ...]

    @property
    def steps(self) -> int:
        return sum(r.steps for r in self.per_run)

    @property
    def replayed_prompt_tokens(self) -> int:
        return sum(r.replayed_prompt_tokens for r in self.per_run)

    @property
    def recorded_prompt_tokens(self) -> int:
        return sum(r.recorded_prompt_tokens for r in self.per_run)

    @property
    def ratio(self) -> float:
        return self.replayed_prompt_tokens / self.recorded_prompt_tokens


def fidelity(
    full: Sequence[PolicyRunMetrics], usage: Mapping[str, Sequence[Usage | None]]
) -> Fidelity | None:
    """Baseline fidelity per run and overall; None when no run recorded usage."""
    per_run = []
    for replay in full:
        pairs = _recorded_steps(replay, usage.get(replay.run_id, ()))
        if pairs:
            replayed = sum(s.prompt_tokens for s, _ in pairs)
            recorded = sum(u.prompt_tokens for _, u in pairs)
            per_run.append(RunFidelity(replay.run_id, len(pairs), replayed, recorded))
    return Fidelity(tuple(sorted(per_run, key=lambda r: r.run_id))) if per_run else None
