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

**Time.** A cached prefix lives a while after its last use: Anthropic's entries
``ttl_s`` (5 minutes, or 1 hour for entries written with the longer lifetime),
OpenAI's implicit cache keeps an expected share after an idle gap
(``idle_survival``). :meth:`CacheTerms.survival` says what share of the prefix
the next request still finds after a gap: a rewrite only loses what survived,
so after a gap longer than the lifetime it costs nothing (the whole prompt is
written again anyway).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from ..._errors import ConfigurationError
from ..._providers import CacheModel, ModelPrices, cache_model_for, model_prices

__all__ = ["DEFAULT_READ_PRICE", "PAYBACK_SHARE", "CacheTerms", "IdleGaps"]

DEFAULT_READ_PRICE = 0.1  # a cached token's price when the model's prices are unknown
# A rewrite loses money when the run ends before it paid back. How long a run goes on is unknown;
# the usual prior for it (Lindy: a Pareto tail of index 1) says a run that made n calls makes m more
# with chance n / (n + m). The rent rule alone buys when the rewrite pays back within about the calls
# the dead weight was carried, up to n: a loss with chance up to 1/2. Paying back within n / 3 calls
# bounds that chance by 1/4. (On the shared Claude Code sessions, halves A and B alike: n / 2 left
# runs up to 6% costlier than full, n / 3 at most 0.5%, n / 4 saved less and lost no less.)
PAYBACK_SHARE = 1 / 3


@dataclass(frozen=True, slots=True)
class CacheTerms:
    """A provider's prompt cache as the break-even rule sees it.

    ``read``: price of a cached token (an uncached input token costs 1);
    ``write``: price of a token written to the cache (1 for implicit caches, which
    bill no writes); ``miss_rate``: expected share of cacheable tokens not served;
    ``min_tokens`` and ``block``: the smallest cached prefix and the granularity of
    hits, in local tokens; ``explicit``: cached only at breakpoints (Anthropic), so
    a rewrite re-writes everything after the last breakpoint it leaves intact (the system
    prompt's, or one on the prompt's stable prefix: :meth:`lost`).
    """

    read: float = DEFAULT_READ_PRICE
    write: float = 1.0
    miss_rate: float = 0.0
    min_tokens: int = 0
    block: int = 1
    explicit: bool = False
    ttl_s: float | None = None
    idle_survival: tuple[tuple[float, float], ...] = ()
    longer: CacheTerms | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.read <= 1 or self.write < self.read or not 0 <= self.miss_rate < 1:
            raise ConfigurationError(f"invalid cache terms {self!r}")
        if self.min_tokens < 0 or self.block < 1:
            raise ConfigurationError(f"invalid cache sizes {self!r}")
        if self.ttl_s is not None and not self.ttl_s > 0:
            raise ConfigurationError(f"invalid cache lifetime {self!r}")

    @classmethod
    def of(
        cls,
        cache: CacheModel,
        prices: ModelPrices | None = None,
        *,
        default_read: float = DEFAULT_READ_PRICE,
        scale: float = 1.0,
        long_ttl: bool = False,
    ) -> CacheTerms:
        """Terms of a cache model priced by ``prices`` (None: ``default_read``, the model's write premium).

        ``scale`` is provider tokens per local token (the cache's sizes are in provider tokens);
        ``long_ttl``: the run writes its entries with the cache's longer lifetime (at its price).
        """
        read = prices.cache_read / prices.input if prices is not None and prices.input > 0 else default_read
        terms = cls(
            read=min(read, 1.0),
            write=max(cls._write(cache, prices, long=False), min(read, 1.0)),
            miss_rate=cache.miss_rate,
            min_tokens=round(cache.min_tokens / scale),
            block=max(1, round(cache.increment / scale)),
            explicit=cache.explicit,
            ttl_s=cache.ttl_s if cache.explicit else None,
            idle_survival=() if cache.explicit else cache.idle_survival,
        )
        if not cache.explicit or cache.long_ttl_s is None:
            return terms
        longer = replace(
            terms, write=max(cls._write(cache, prices, long=True), terms.read), ttl_s=cache.long_ttl_s
        )
        return longer if long_ttl else replace(terms, longer=longer)

    @staticmethod
    def _write(cache: CacheModel, prices: ModelPrices | None, *, long: bool) -> float:
        """A written token's price over an uncached one (1 for implicit caches, which bill no writes)."""
        if not cache.explicit:
            return 1.0
        if prices is not None and prices.input > 0:
            return (prices.write_1h if long else prices.cache_write) / prices.input
        return cache.long_write_premium if long else cache.write_premium

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

    def survival(self, idle_s: float | None) -> float:
        """The expected share of the cached prefix the next request finds ``idle_s`` seconds after
        the last one (None: unknown, 1)."""
        if idle_s is None:
            return 1.0
        if self.explicit:
            return 1.0 if self.ttl_s is None or idle_s <= self.ttl_s else 0.0
        if not self.idle_survival:
            return 1.0
        return next((share for limit, share in self.idle_survival if idle_s <= limit), 0.0)

    def lost(self, prefix: int, tail: int, fixed: int, stable: int = 0) -> int:
        """Tokens that lose the cache when a prompt changes after ``prefix`` tokens, ``tail`` after.

        Implicit caches keep the prefix up to its last whole block (nothing below the
        minimum); explicit ones the ``fixed`` part (tools and system prompt) at its
        breakpoint, or the first ``stable`` tokens when a breakpoint on the prompt's stable
        prefix ends there (``BuiltPrompt.stable``; the request after the change marks it again).
        """
        if self.explicit:
            return max(prefix - max(fixed, stable), 0) + tail
        kept = 0 if prefix < max(self.min_tokens, 1) else prefix // self.block * self.block
        return prefix - kept + tail

    def rewrite_cost(self, prefix: int, tail: int, fixed: int, stable: int = 0) -> float:
        """``extra x lost``: the one-time cost of changing the prompt there."""
        return self.extra * self.lost(prefix, tail, fixed, stable)

    def rent(self, dead_tokens: int) -> float:
        """``carry x dead``: what carrying ``dead_tokens`` costs for one call."""
        return self.carry * dead_tokens


@dataclass(slots=True)
class IdleGaps:
    """One run's request times as the break-even rule reads them (mutable, one per run).

    :meth:`observe` takes the time of the request being prepared and says what share of the
    cached prefix it still finds (:meth:`CacheTerms.survival` of the gap since the previous
    request): a rewrite now costs only that share of its price. Over the run it counts the
    expected share of the cache lost to gaps, so :meth:`calls_to_free` estimates how many
    calls away the next free rewrite is (the cache is lost anyway): waiting for it costs the
    rent of that many calls, never more than buying now when that is cheaper. Unknown times
    (None, or not finite) change nothing: every request finds the whole prefix.
    """

    calls: int = 0  # requests prepared so far
    last: float | None = None  # when the previous request with a known time was sent
    gaps: int = 0  # gaps measured
    lost: float = 0.0  # expected share of the cache lost, summed over those gaps
    survival: float = 1.0  # the share the request being prepared finds

    def observe(self, at: float | None, terms: CacheTerms) -> float:
        """The request being prepared is sent at ``at``: the share of the cache it finds."""
        self.calls += 1
        gap = None
        if at is not None and math.isfinite(at):
            if self.last is not None:
                gap = max(at - self.last, 0.0)  # a clock that went back: no gap
            self.last = at
        self.survival = terms.survival(gap)
        if gap is not None:
            self.gaps += 1
            self.lost += 1.0 - self.survival
        return self.survival

    def pays_in_time(self, per_call: float, cost: float) -> bool:
        """Whether a rewrite of ``cost`` saving ``per_call`` each later call pays back within
        :data:`PAYBACK_SHARE` of the calls the run has made so far (see there)."""
        return per_call * self.calls * PAYBACK_SHARE >= cost

    def calls_to_free(self) -> float:
        """Expected calls until a gap loses the cache anyway (inf: none seen in this run)."""
        return self.gaps / self.lost if self.lost > 0 else math.inf
