"""Provider calibration: how many of a provider's tokens one replayed token is, and what a log left out.

The replay counts prompts with one local tokenizer (o200k_base by default); a
provider bills in its own. Some logs also leave out part of what the model was
sent: Claude Code records neither its system prompt nor its tool schemas
(about 18-45k tokens), Codex no tool schemas. So the recorded prompt of step
``k`` is, per run, an affine function of the replayed ``full`` prompt
``x_k`` (tool schemas plus the history before iteration ``k``, following the
agent's own compactions, counted as the ``full`` policy's replay counts it)::

    recorded_k ~ scale_provider * (x_k + prefix_run)

- ``prefix_run`` (replayed tokens) is the part the log does not hold: added to
  every policy's prompts by the replay as an unrecorded, cacheable prefix no
  policy can shrink. It is 0 for runs whose log holds the whole prompt
  (:attr:`RecordedRun.prompt_complete`). For a run that misses it, it is the
  value that minimizes the run's mean relative error given the scale (a
  weighted median), never negative; a run without recorded usage gets the
  median prefix of the runs of its format that have some (else 0).
- Each recorded call is one point: a run's leading calls counted in a run read before
  (:attr:`RecordedRun.counted_from`) are measured there, not again.
- ``scale_provider``: on the runs of that provider whose logs hold the whole
  prompt, recorded / replayed tokens summed over their steps (as before the
  prefix existed: the Gemini runs of ``../shared/trajectories`` keep 1.1396);
  a provider with only incomplete logs gets the scale that minimizes the mean
  relative error of ``scale * (x + prefix)`` over all their steps, each run's
  prefix refitted at each candidate (a grid search to 0.0005).

It runs before the replay because the cache simulation needs it: block sizes,
minimums and the prefix are in the provider's tokens.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

import orjson

from .._messages import group_by_iteration
from .._providers import provider_of
from .._tokens import PROMPT_OVERHEAD, EncodedTexts, TokenCounter
from ._recorded import RecordedRun

__all__ = [
    "NO_PREFIX",
    "PREFIX_SOURCES",
    "Calibration",
    "ProviderCalibration",
    "RunPrefix",
    "calibrate",
    "counted_run",
    "fit",
    "full_prompt_tokens",
    "measurable",
    "recorded_texts",
    "token_scale",
]

_GRID = (0.5, 3.0, 0.05)  # the affine scale's coarse search: from, to, step; then refined to 0.0005
# A recorded prompt larger than this is a damaged log, not a request: no model's context window holds
# it (the largest in litellm's price map is 10.5M tokens). Such a step is not measured.
MAX_REQUEST_TOKENS = 2**24
# The unrecorded prefix stands for a system prompt and tool schemas; an estimate beyond this (from
# usage a log got wrong) is capped, so that a replay never sends a prefix no agent sends.
MAX_PREFIX_TOKENS = 2**20


@dataclass(frozen=True, slots=True)
class ProviderCalibration:
    """Recorded vs replayed prompt tokens of one provider's runs (steps with recorded usage).

    ``replayed_prompt_tokens`` includes each run's estimated prefix; ``fit`` says how the scale
    was fitted: ``"ratio"`` (logs holding the whole prompt: recorded / replayed) or ``"affine"``
    (logs missing a prefix: the scale minimizing the mean relative error, prefixes per run).
    """

    provider: str
    runs: int = 0
    steps: int = 0
    replayed_prompt_tokens: int = 0
    recorded_prompt_tokens: int = 0
    scale: float = 1.0
    fit: str = "ratio"
    prefix_runs: int = 0  # runs whose prefix was estimated

    @property
    def measured(self) -> bool:
        return self.replayed_prompt_tokens > 0 and self.recorded_prompt_tokens > 0

    @property
    def factor(self) -> float:
        """Provider tokens per replayed token (1.0 when nothing was measured)."""
        return self.scale if self.measured else 1.0


@dataclass(frozen=True, slots=True)
class RunPrefix:
    """The replayed tokens a run's log does not hold, and where the number comes from."""

    tokens: int = 0
    source: str = "recorded"  # see PREFIX_SOURCES
    steps: int = 0  # the steps it was estimated on


NO_PREFIX = RunPrefix()

# What ``RunPrefix.source`` says: the log holds the whole prompt; the prefix was estimated from the
# run's usage; it is the median of other runs of its format; or it could not be estimated.
PREFIX_SOURCES = ("recorded", "estimated", "format median", "not estimated")


@dataclass(frozen=True, slots=True)
class Calibration:
    """Per provider the scale, per run id the prefix (runs not listed: none)."""

    providers: Mapping[str, ProviderCalibration] = field(default_factory=dict)
    prefixes: Mapping[str, RunPrefix] = field(default_factory=dict)

    def prefix(self, run_id: str) -> RunPrefix:
        return self.prefixes.get(run_id, NO_PREFIX)


def recorded_texts(run: RecordedRun) -> list[str]:
    """The distinct texts a replay of ``run`` counts of its recorded messages and tool schemas, in
    order: each message's content, each call's name and arguments, each tool result's call id, and
    the schemas as sent (what :func:`full_prompt_tokens` counts too)."""
    texts: dict[str, None] = {}
    for message in run.messages:
        texts[message.text] = None
        for call in message.tool_calls:
            texts[call.name] = None
            texts[call.arguments] = None
        if message.role == "tool":
            texts[message.tool_call_id or ""] = None
    if run.tools:
        texts[orjson.dumps(list(run.tools), option=orjson.OPT_SORT_KEYS).decode()] = None
    texts.pop("", None)
    return list(texts)


def counted_run(run: RecordedRun, counter: TokenCounter) -> tuple[list[int], EncodedTexts]:
    """:func:`full_prompt_tokens`, and the ids of the run's :func:`recorded_texts` that ``counter``
    encoded for it (the run's replay adopts them instead of encoding the same texts again)."""
    encoded = counter.export(recorded_texts(run))
    return full_prompt_tokens(run, counter), encoded


def full_prompt_tokens(run: RecordedRun, counter: TokenCounter) -> list[int]:
    """The ``full`` policy's prompt tokens per step, without any prefix: tool schemas plus every
    earlier message the agent still held (its compactions followed)."""
    tools = counter.count_tools(run.tools)
    out = []
    for segment in run.segments():
        groups = group_by_iteration(segment.messages)
        history = sum(counter.count_message(m) for m in groups.get(0, ()))
        for iteration in sorted(i for i in groups if i > 0):
            if any(m.role == "assistant" for m in groups[iteration]):
                out.append(PROMPT_OVERHEAD + tools + history)
            history += sum(counter.count_message(m) for m in groups[iteration])
    return out


@dataclass(frozen=True, slots=True)
class _Measured:
    run: RecordedRun
    provider: str
    points: tuple[tuple[int, int], ...]  # (replayed full tokens, recorded prompt tokens) per step


def measurable(run: RecordedRun) -> bool:
    """Whether the calibration measures ``run``: a known provider's model and some recorded usage
    (a prompt of at most :data:`MAX_REQUEST_TOKENS`)."""
    return provider_of(run.model) is not None and any(
        u is not None and 0 < u.prompt_tokens <= MAX_REQUEST_TOKENS for u in run.counted_usage()
    )


def _measure(
    run: RecordedRun, counter: TokenCounter | None, counted: Sequence[int] | None
) -> _Measured | None:
    provider = provider_of(run.model)
    if provider is None or not measurable(run):
        return None
    if counted is None:
        if counter is None:
            raise ValueError("fit needs a token counter or the runs' counted tokens")
        counted = full_prompt_tokens(run, counter)
    points = []
    recorded = run.counted_usage()  # a call counted in another run is measured there
    for index, tokens in enumerate(counted):
        usage = recorded[index] if index < len(recorded) else None
        if usage is not None and 0 < usage.prompt_tokens <= MAX_REQUEST_TOKENS and tokens > 0:
            points.append((tokens, usage.prompt_tokens))
    return _Measured(run, provider, tuple(points)) if points else None


def _prefix(points: Sequence[tuple[int, int]], scale: float) -> float:
    """The prefix minimizing sum |scale * (x + p) - y| / y: the median of y / scale - x weighted by 1 / y
    (within 0 and :data:`MAX_PREFIX_TOKENS`)."""
    ranked = sorted((y / scale - x, 1.0 / y) for x, y in points)
    half, seen = sum(w for _, w in ranked) / 2, 0.0
    for value, weight in ranked:
        seen += weight
        if seen >= half:
            return min(max(value, 0.0), MAX_PREFIX_TOKENS)
    return 0.0


def _error(measured: Sequence[_Measured], scale: float) -> float:
    total = steps = 0.0
    for m in measured:
        prefix = _prefix(m.points, scale)
        total += sum(abs(scale * (x + prefix) - y) / y for x, y in m.points)
        steps += len(m.points)
    return total / steps if steps else 0.0


def _affine_scale(measured: Sequence[_Measured]) -> float:
    """The scale with the least mean relative error: a coarse grid, then two finer ones around the best
    (steps 0.05, 0.005, 0.0005)."""
    start, stop, step = _GRID
    best = min(
        (start + i * step for i in range(round((stop - start) / step) + 1)),
        key=lambda b: (_error(measured, b), b),
    )
    for fine in (0.005, 0.0005):
        best = min((best + i * fine for i in range(-10, 11)), key=lambda b: (_error(measured, b), b))
    return round(best, 4)


def _provider(
    provider: str, measured: Sequence[_Measured]
) -> tuple[ProviderCalibration, dict[str, RunPrefix]]:
    complete = [m for m in measured if m.run.prompt_complete]
    partial = [m for m in measured if not m.run.prompt_complete]
    if complete:
        scale = sum(y for m in complete for _, y in m.points) / sum(x for m in complete for x, _ in m.points)
    else:
        scale = _affine_scale(partial)
    prefixes = {
        m.run.run_id: RunPrefix(round(_prefix(m.points, scale)), "estimated", len(m.points)) for m in partial
    }
    replayed = sum(x + prefixes.get(m.run.run_id, RunPrefix()).tokens for m in measured for x, _ in m.points)
    calibration = ProviderCalibration(
        provider=provider,
        runs=len(measured),
        steps=sum(len(m.points) for m in measured),
        replayed_prompt_tokens=replayed,
        recorded_prompt_tokens=sum(y for m in measured for _, y in m.points),
        scale=scale,
        fit="ratio" if complete else "affine",
        prefix_runs=len(partial),
    )
    return calibration, prefixes


def _unmeasured_prefixes(
    runs: Iterable[RecordedRun], estimated: Mapping[str, RunPrefix], formats: Mapping[str, str]
) -> dict[str, RunPrefix]:
    """Runs missing a prefix without usage to estimate it: the median of their format's estimates."""
    by_format: dict[str, list[int]] = {}
    for run_id, prefix in estimated.items():
        by_format.setdefault(formats[run_id], []).append(prefix.tokens)
    out = {}
    for run in runs:
        if run.prompt_complete or run.run_id in estimated:
            continue
        known = by_format.get(run.format)
        out[run.run_id] = (
            RunPrefix(round(statistics.median(known)), "format median", 0)
            if known
            else RunPrefix(0, "not estimated")
        )
    return out


def fit(
    runs: Iterable[RecordedRun],
    counter: TokenCounter | None = None,
    *,
    tokens: Mapping[str, Sequence[int]] | None = None,
) -> Calibration:
    """The scale of every provider with recorded usage in ``runs``, and the prefix of every run.

    ``tokens``: each measured run's :func:`full_prompt_tokens`, already counted (by run id); else
    they are counted with ``counter``.
    """
    runs = list(runs)
    counted = tokens or {}
    measured = [m for m in (_measure(r, counter, counted.get(r.run_id)) for r in runs) if m is not None]
    providers: dict[str, ProviderCalibration] = {}
    prefixes: dict[str, RunPrefix] = {}
    for provider in sorted({m.provider for m in measured}):
        calibration, estimated = _provider(provider, [m for m in measured if m.provider == provider])
        providers[provider] = calibration
        prefixes.update(estimated)
    prefixes.update(_unmeasured_prefixes(runs, prefixes, {r.run_id: r.format for r in runs}))
    return Calibration(providers, prefixes)


def calibrate(runs: Iterable[RecordedRun], counter: TokenCounter) -> dict[str, ProviderCalibration]:
    """Calibration per provider family of the runs' recorded models (only measured providers)."""
    return dict(fit(runs, counter).providers)


def token_scale(calibration: Mapping[str, ProviderCalibration], provider: str | None) -> float:
    """Provider tokens per replayed token for ``provider`` (1.0: unknown or not measured)."""
    entry = calibration.get(provider or "")
    return entry.factor if entry is not None else 1.0
