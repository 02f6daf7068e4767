"""Provider calibration: how many of a provider's tokens one replayed token is.

The replay counts prompts with one local tokenizer (o200k_base by default); a
provider bills in its own. For every provider family with recorded usage in
the inputs, ``factor = recorded prompt tokens / replayed full prompt tokens``,
summed over the steps of its runs that recorded usage. The replayed full
prompt of step ``k`` is the tool schemas plus the whole history before
iteration ``k``, counted exactly as the ``full`` policy's replay counts it, so
the pooled ratio is the inverse of ``fidelity``'s for that provider.

It runs before the replay because the cache simulation needs it: block sizes
and minimums are in the provider's tokens.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from .._messages import group_by_iteration
from .._providers import provider_of
from .._tokens import PROMPT_OVERHEAD, TokenCounter
from ._recorded import RecordedRun

__all__ = ["ProviderCalibration", "calibrate", "full_prompt_tokens", "token_scale"]


@dataclass(frozen=True, slots=True)
class ProviderCalibration:
    """Recorded vs replayed prompt tokens of one provider's runs (steps with recorded usage)."""

    provider: str
    runs: int = 0
    steps: int = 0
    replayed_prompt_tokens: int = 0
    recorded_prompt_tokens: int = 0

    @property
    def measured(self) -> bool:
        return self.replayed_prompt_tokens > 0 and self.recorded_prompt_tokens > 0

    @property
    def factor(self) -> float:
        """Provider tokens per replayed token (1.0 when nothing was measured)."""
        return self.recorded_prompt_tokens / self.replayed_prompt_tokens if self.measured else 1.0

    def __add__(self, other: ProviderCalibration) -> ProviderCalibration:
        return ProviderCalibration(
            self.provider,
            self.runs + other.runs,
            self.steps + other.steps,
            self.replayed_prompt_tokens + other.replayed_prompt_tokens,
            self.recorded_prompt_tokens + other.recorded_prompt_tokens,
        )


def full_prompt_tokens(run: RecordedRun, counter: TokenCounter) -> list[int]:
    """The ``full`` policy's prompt tokens per step: tool schemas plus every earlier message."""
    tools = counter.count_tools(run.tools)
    groups = group_by_iteration(run.messages)
    history = sum(counter.count_message(m) for m in groups.get(0, ()))
    out = []
    for iteration in sorted(i for i in groups if i > 0):
        if any(m.role == "assistant" for m in groups[iteration]):
            out.append(PROMPT_OVERHEAD + tools + history)
        history += sum(counter.count_message(m) for m in groups[iteration])
    return out


def _run_calibration(run: RecordedRun, provider: str, counter: TokenCounter) -> ProviderCalibration:
    steps = replayed = recorded = 0
    for index, tokens in enumerate(full_prompt_tokens(run, counter)):
        usage = run.usage[index] if index < len(run.usage) else None
        if usage is not None and usage.prompt_tokens > 0 and tokens > 0:
            steps, replayed, recorded = steps + 1, replayed + tokens, recorded + usage.prompt_tokens
    return ProviderCalibration(provider, int(steps > 0), steps, replayed, recorded)


def calibrate(runs: Iterable[RecordedRun], counter: TokenCounter) -> dict[str, ProviderCalibration]:
    """Calibration per provider family of the runs' recorded models (only measured providers)."""
    found: dict[str, ProviderCalibration] = {}
    for run in runs:
        provider = provider_of(run.model)
        if provider is None or not any(u is not None and u.prompt_tokens > 0 for u in run.usage):
            continue
        measured = _run_calibration(run, provider, counter)
        if measured.measured:
            found[provider] = found.get(provider, ProviderCalibration(provider)) + measured
    return dict(sorted(found.items()))


def token_scale(calibration: Mapping[str, ProviderCalibration], provider: str | None) -> float:
    """Provider tokens per replayed token for ``provider`` (1.0: unknown or not measured)."""
    entry = calibration.get(provider or "")
    return entry.factor if entry is not None else 1.0
