"""Per run: its agent family, the cache rules it is replayed under, its token scale and its prices.

- ``--cache-model auto`` (the default) gives each run the rules of the model it is
  priced as: ``--price-model`` when given, else its recorded model; a run with no
  or an unknown model gets :data:`~tiered_agent._providers.DEFAULT_CACHE_MODEL`.
  The choice and its reason are recorded per run.
- The token scale converts replayed tokens into the provider's: the calibration
  (``_calibration.py``) of the provider of the model the run is priced as, else
  of its cache model's provider; 1.0 when the inputs hold no recorded usage of
  that provider (the report says so).
- The unrecorded prefix (``_calibration.py``): replayed tokens the run's log left out
  (system prompt, tool schemas), sent before every policy's prompt.
- Cache lifetimes: a run whose recorded cache writes are mostly 1-hour writes
  (Anthropic's ``ephemeral_1h_input_tokens``) writes with the long lifetime at its
  price (2x input) wherever a step recorded no split; a step that recorded writes
  keeps its own majority (:func:`long_ttl_steps`).
- Dollars: every token count is scaled, then priced with litellm's prices of that
  model. Recorded completion tokens are already in the recorded provider's tokens:
  they are divided by that provider's scale first, so pricing a Gemini run as
  Claude converts them like everything else. :meth:`RunCosting.recorded_usd` prices
  the recorded usage itself (uncached, cache reads, 5-minute and 1-hour writes,
  output) at the recorded model's list prices: what the run cost as recorded.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import structlog

from .._messages import Usage
from .._providers import (
    CACHE_MODELS,
    DEFAULT_CACHE_MODEL,
    CacheModel,
    ModelPrices,
    anthropic_min_tokens,
    billing_multiplier,
    cache_model_for,
    model_prices,
    provider_of,
)
from ._calibration import NO_PREFIX, ProviderCalibration, RunPrefix, token_scale

log = structlog.get_logger(__name__)

__all__ = ["FAMILIES", "RunCosting", "RunPlan", "family_of", "long_ttl_steps", "plan_prices", "plan_run"]

# Agent family of each recorded-run format: runs of one family share a harness (prompt layout,
# tools, observation style), so their totals are comparable.
FAMILIES: dict[str, str] = {
    "mini-swe-agent": "swe-shell",
    "swe-agent": "swe-shell",
    "tau-bench": "tau-bench",
    "openhands": "openhands",
    "claude-code": "claude-code",
    "codex": "codex",
    "tiered-agent": "tiered-agent",
}


def family_of(fmt: str) -> str:
    """The agent family of a run format (an unlisted format is its own family)."""
    return FAMILIES.get(fmt, fmt)


def long_ttl_steps(usage: Sequence[Usage | None], writes_1h: Sequence[int]) -> frozenset[int]:
    """The steps (1-based) whose cache writes have the 1-hour lifetime: those whose recorded writes
    were mostly 1-hour writes, and, when most of the run's recorded writes were, the steps that
    recorded no writes (the agent's setting; Claude Code picks one per session)."""
    written = [u.cache_write_tokens if u is not None else 0 for u in usage]
    long = [writes_1h[i] if i < len(writes_1h) else 0 for i in range(len(usage))]
    mostly_long = sum(long) * 2 > sum(written) > 0
    return frozenset(
        i + 1 for i, (w, h) in enumerate(zip(written, long, strict=True)) if (h * 2 > w if w else mostly_long)
    )


@dataclass(frozen=True, slots=True)
class RunPlan:
    """How one run is replayed and priced."""

    cache_model: CacheModel
    cache_model_source: str  # why this cache model: "--cache-model", "recorded model", ...
    provider: str | None  # whose tokens the run is scaled to
    token_scale: float  # provider tokens per replayed token
    price_model: str | None  # the litellm cost-map key it is priced as; None: unpriced
    prefix: RunPrefix = NO_PREFIX  # the replayed tokens its log left out, sent before every prompt
    long_ttl: bool = False  # most of its cache writes have the longer lifetime (priced as such)


def _cache_model(
    chosen: str, target: str | None, recorded: str | None, priced: bool
) -> tuple[CacheModel, str]:
    if chosen != "auto":
        rules = CACHE_MODELS[chosen]
        if chosen == "anthropic" and provider_of(target) == "anthropic" and target is not None:
            rules = dataclasses.replace(rules, min_tokens=anthropic_min_tokens(target))
        return rules, "--cache-model"
    if provider_of(target) is not None:
        return cache_model_for(target), "price model" if priced else "recorded model"
    reason = "no model recorded" if not recorded else f"unknown model {recorded}"
    return CACHE_MODELS[DEFAULT_CACHE_MODEL], f"default ({reason})"


def plan_run(
    recorded_model: str | None,
    cache_model: str,
    price_model: str | None,
    calibration: Mapping[str, ProviderCalibration],
    *,
    prefix: RunPrefix = NO_PREFIX,
    long_ttl: bool = False,
) -> RunPlan:
    """The plan of a run recorded with ``recorded_model`` under the bench's settings (``prefix``: what
    its log left out; ``long_ttl``: most of its recorded cache writes had the longer lifetime)."""
    target = price_model or recorded_model
    rules, source = _cache_model(cache_model, target, recorded_model, price_model is not None)
    provider = provider_of(target) or rules.provider
    prices = model_prices(target) if target else None
    long_ttl = long_ttl and rules.long_ttl_s is not None
    if long_ttl:
        rules = dataclasses.replace(rules, write_premium=rules.long_write_premium)
    return RunPlan(
        cache_model=rules,
        cache_model_source=source,
        provider=provider,
        token_scale=token_scale(calibration, provider),
        price_model=prices.model if prices is not None else None,
        prefix=prefix,
        long_ttl=long_ttl,
    )


def plan_prices(plan: RunPlan) -> ModelPrices | None:
    """The prices a run's plan bills, with the write price of its cache lifetime (what aging weighs)."""
    prices = model_prices(plan.price_model) if plan.price_model else None
    if prices is None or not plan.long_ttl:
        return prices
    return dataclasses.replace(prices, cache_write=prices.write_1h)


@dataclass(frozen=True, slots=True)
class RunCosting:
    """What one run's replayed steps cost in USD (``prices`` None: the run is not priced)."""

    prices: ModelPrices | None
    scale: float  # provider tokens per replayed token
    recorded_output_scale: float  # provider tokens per recorded completion token
    recorded_output_steps: frozenset[int] = frozenset()  # steps whose output tokens were recorded
    summary_prices: ModelPrices | None = None  # the --summary-model's prices
    long_steps: frozenset[int] = frozenset()  # steps whose writes have the 1-hour lifetime
    recorded_prices: ModelPrices | None = None  # the recorded model's list prices
    # A run that switched models: the steps answered by another model than the one it is priced as
    # (billed at that model's prices), and than the recorded one (what the provider billed).
    step_prices: Mapping[int, ModelPrices] = dataclasses.field(default_factory=dict)
    recorded_step_prices: Mapping[int, ModelPrices] = dataclasses.field(default_factory=dict)

    @classmethod
    def of(
        cls,
        plan_price_model: str | None,
        *,
        scale: float,
        recorded_model: str | None,
        usage: Sequence[Usage | None],
        calibration: Mapping[str, ProviderCalibration],
        summary_prices: ModelPrices | None = None,
        writes_1h: Sequence[int] = (),
        step_models: Sequence[str] = (),
        step_billing: Sequence[str] = (),
        priced_as_recorded: bool = True,
    ) -> RunCosting:
        """``step_models``: per step, the model that answered it, in a run that switched models;
        ``step_billing``: per step, its billing modifiers (``"fast+us"``), in a run with any;
        ``priced_as_recorded``: False when every step is priced as one model (``--price-model``),
        at its standard rates."""
        recorded_scale = token_scale(calibration, provider_of(recorded_model))
        prices = model_prices(plan_price_model) if plan_price_model else None
        recorded_prices = model_prices(recorded_model) if recorded_model else None
        return cls(
            prices=prices,
            scale=scale,
            recorded_output_scale=scale / recorded_scale,
            recorded_output_steps=frozenset(
                i + 1 for i, u in enumerate(usage) if u is not None and u.completion_tokens > 0
            ),
            summary_prices=summary_prices,
            long_steps=long_ttl_steps(usage, writes_1h),
            recorded_prices=recorded_prices,
            step_prices=_step_prices(step_models, step_billing, prices) if priced_as_recorded else {},
            recorded_step_prices=_step_prices(step_models, step_billing, recorded_prices),
        )

    def prices_at(self, step: int) -> ModelPrices | None:
        """The prices step ``step`` is billed at (None: the run is not priced)."""
        return self.step_prices.get(step, self.prices) if self.prices is not None else None

    def output_tokens(self, step: int, output: int) -> float:
        """A step's output tokens in the provider's tokens."""
        return output * (self.recorded_output_scale if step in self.recorded_output_steps else self.scale)

    def step_usd(self, step: int, prompt: int, cached: int, written: int, output: int) -> float:
        """USD of one replayed call (0.0 when the run is not priced); its writes at the price of the
        step's cache lifetime."""
        prices = self.prices_at(step)
        if prices is None:
            return 0.0
        s = self.scale
        long = written * s if step in self.long_steps else 0.0
        return prices.cost(
            prompt * s, cached * s, written * s, self.output_tokens(step, output), written_1h=long
        )

    def input_rates(self, step: int, prompt: int) -> tuple[float, float, float] | None:
        """USD per replayed token of a step's prompt tokens read from the cache, written to it and
        uncached, as :meth:`step_usd` prices them (None: the run is not priced)."""
        prices = self.prices_at(step)
        if prices is None:
            return None
        s = self.scale
        p = prices.for_prompt(prompt * s)
        write = p.write_1h if step in self.long_steps else p.cache_write
        return p.cache_read * s, write * s, p.input * s

    def output_usd(self, step: int, prompt: int, output: int) -> float:
        """USD of a step's output tokens, as :meth:`step_usd` prices them (0.0: not priced)."""
        prices = self.prices_at(step)
        if prices is None:
            return 0.0
        return self.output_tokens(step, output) * prices.for_prompt(prompt * self.scale).output

    def recorded_usd(self, usage: Usage, writes_1h: int = 0, step: int = 0) -> float | None:
        """USD of recorded call ``step`` at the list prices of the model that answered it (None: not
        priced there): its uncached input, cache reads, 5-minute and 1-hour writes, and output, as the
        provider billed them (a cost the log itself recorded is the ``cost`` field; this is the list
        price)."""
        if self.recorded_prices is None:
            return None
        return self.recorded_step_prices.get(step, self.recorded_prices).cost(
            usage.prompt_tokens,
            usage.cached_tokens,
            usage.cache_write_tokens,
            usage.completion_tokens,
            written_1h=writes_1h,
        )

    def summary_usd(self, usage: Usage) -> float | None:
        """USD of the summarizer's own calls (provider-reported tokens); None: unpriced."""
        if not usage.prompt_tokens and not usage.completion_tokens:
            return 0.0
        if self.summary_prices is None:
            return None
        return self.summary_prices.cost(usage.prompt_tokens, usage.cached_tokens, 0, usage.completion_tokens)


def _step_prices(
    step_models: Sequence[str], step_billing: Sequence[str], run_prices: ModelPrices | None
) -> dict[int, ModelPrices]:
    """The steps billed at other prices than ``run_prices`` (the run's), with those prices: a step
    answered by another model (a step whose model litellm has no price for keeps the run's), and a
    step with billing modifiers (its model's prices times each modifier's multiplier; a modifier no
    price list names for the model counts as 1, with one warning). None: the run is not priced."""
    if run_prices is None:
        return {}
    out: dict[int, ModelPrices] = {}
    tiers: dict[tuple[ModelPrices, str], ModelPrices] = {}
    for step in range(1, max(len(step_models), len(step_billing)) + 1):
        model = step_models[step - 1] if step <= len(step_models) else None
        prices = (model_prices(model) if model else None) or run_prices
        tier = step_billing[step - 1] if step <= len(step_billing) else ""
        if tier:
            if (prices, tier) not in tiers:
                tiers[prices, tier] = prices.scaled(_multiplier(prices.model, tier))
            prices = tiers[prices, tier]
        if prices != run_prices:
            out[step] = prices
    return out


def _multiplier(model: str, tier: str) -> float:
    """What billing modifiers (``"fast+us"``) multiply ``model``'s prices by, together."""
    factor = 1.0
    for modifier in tier.split("+"):
        value = billing_multiplier(model, modifier)
        if value is None:
            log.warning("pricing.unknown_modifier", model=model, modifier=modifier, priced_as="standard rate")
            continue
        factor *= value
    return factor
