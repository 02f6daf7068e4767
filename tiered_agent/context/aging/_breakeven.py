"""When hiding old content pays under a provider's prompt cache: the break-even (ski-rental) rule.

With prompt caching, a token the prompt keeps costs the cached price at every
call, and changing the prompt at some position re-sends everything after it
uncached once. So shrinking the middle of a prompt is a rent-or-buy problem:
carrying ``D`` tokens of dead weight costs ``carry x D`` per call (rent); a
rewrite costs ``extra x L`` once (buy), ``L`` being the tokens that lose the
cache. The rule rents until the rent paid since the last rewrite reaches the
rewrite cost, then buys: never more than twice the cost of the best timing in
hindsight (the ski-rental bound), whatever the future holds.

:class:`CacheTerms` holds the prices and sizes the rule needs, in units of one
uncached input token and in local tokens, from the active cache and price
models (:func:`~tiered_agent._providers.cache_model_for`,
:func:`~tiered_agent._providers.model_prices`).
"""

from __future__ import annotations

from dataclasses import dataclass

from ..._errors import ConfigurationError
from ..._providers import CacheModel, ModelPrices, cache_model_for, model_prices

__all__ = ["DEFAULT_READ_PRICE", "CacheTerms"]

DEFAULT_READ_PRICE = 0.1  # a cached token's price when the model's prices are unknown


@dataclass(frozen=True, slots=True)
class CacheTerms:
    """A provider's prompt cache as the break-even rule sees it.

    ``read``: price of a cached token (an uncached input token costs 1);
    ``write``: price of a token written to the cache (1 for implicit caches, which
    bill no writes); ``miss_rate``: expected share of cacheable tokens not served;
    ``min_tokens`` and ``block``: the smallest cached prefix and the granularity of
    hits, in local tokens; ``explicit``: cached only at breakpoints (Anthropic), so
    a rewrite re-writes everything after the system prompt.
    """

    read: float = DEFAULT_READ_PRICE
    write: float = 1.0
    miss_rate: float = 0.0
    min_tokens: int = 0
    block: int = 1
    explicit: bool = False

    def __post_init__(self) -> None:
        if not 0 <= self.read <= 1 or self.write < self.read or not 0 <= self.miss_rate < 1:
            raise ConfigurationError(f"invalid cache terms {self!r}")
        if self.min_tokens < 0 or self.block < 1:
            raise ConfigurationError(f"invalid cache sizes {self!r}")

    @classmethod
    def of(
        cls,
        cache: CacheModel,
        prices: ModelPrices | None = None,
        *,
        default_read: float = DEFAULT_READ_PRICE,
        scale: float = 1.0,
    ) -> CacheTerms:
        """Terms of a cache model priced by ``prices`` (None: ``default_read``, the model's write premium).

        ``scale`` is provider tokens per local token (the cache's sizes are in provider tokens).
        """
        read = prices.cache_read / prices.input if prices is not None and prices.input > 0 else default_read
        write = 1.0
        if cache.explicit:
            priced = prices.cache_write / prices.input if prices is not None and prices.input > 0 else None
            write = priced if priced is not None else cache.write_premium
        return cls(
            read=min(read, 1.0),
            write=max(write, read),
            miss_rate=cache.miss_rate,
            min_tokens=round(cache.min_tokens / scale),
            block=max(1, round(cache.increment / scale)),
            explicit=cache.explicit,
        )

    @classmethod
    def for_model(cls, model: str | None) -> CacheTerms:
        """The terms of a litellm model name (its provider's cache rules and its prices, read offline)."""
        return cls.of(cache_model_for(model), model_prices(model) if model else None)

    @property
    def carry(self) -> float:
        """Price per call of one token kept in a cached prefix (misses billed as uncached)."""
        return self.read * (1 - self.miss_rate) + self.miss_rate

    @property
    def extra(self) -> float:
        """What one token re-sent after a change costs on top of keeping it cached."""
        return max(self.write - self.carry, 0.0)

    def lost(self, prefix: int, tail: int, fixed: int) -> int:
        """Tokens that lose the cache when a prompt changes after ``prefix`` tokens, ``tail`` after.

        Implicit caches keep the prefix up to its last whole block (nothing below the
        minimum); explicit ones only the ``fixed`` part (tools and system prompt) at its
        breakpoint, since no entry survives at a later message.
        """
        if self.explicit:
            return max(prefix - fixed, 0) + tail
        kept = 0 if prefix < max(self.min_tokens, 1) else prefix // self.block * self.block
        return prefix - kept + tail

    def rewrite_cost(self, prefix: int, tail: int, fixed: int) -> float:
        """``extra x lost``: the one-time cost of changing the prompt there."""
        return self.extra * self.lost(prefix, tail, fixed)

    def rent(self, dead_tokens: int) -> float:
        """``carry x dead``: what carrying ``dead_tokens`` costs for one call."""
        return self.carry * dead_tokens
