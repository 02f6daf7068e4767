"""What a provider bills: its prompt-cache rules and its per-token prices, without importing litellm.

Runtime-neutral on purpose: the replay benchmark simulates these rules over
recorded runs (``bench/_caching.py``), and a context policy can read the same
objects at run time to decide whether compacting pays off.

- :class:`CacheModel`: one provider family's prompt-cache rules in one frozen
  value (sizes in the provider's own tokens). :data:`CACHE_MODELS` holds
  ``ideal``, ``gemini``, ``openai`` and ``anthropic``; :func:`cache_model_for`
  picks the rules of a model name (Claude's minimum depends on the model).
- :class:`ModelPrices`: USD per token (input, output, cache read, cache write),
  read by :func:`model_prices` from the cost map bundled with litellm
  (``model_prices_and_context_window_backup.json``), located with
  :func:`importlib.util.find_spec` so ``import litellm`` (seconds) is never paid.
"""

from __future__ import annotations

import dataclasses
import importlib.util
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import metadata
from pathlib import Path
from typing import Any

import orjson

from ._errors import ConfigurationError

__all__ = [
    "CACHE_MODELS",
    "CACHE_MODEL_NAMES",
    "DEFAULT_CACHE_MODEL",
    "LONG_CONTEXT_THRESHOLD",
    "PROVIDERS",
    "CacheModel",
    "ModelPrices",
    "anthropic_min_tokens",
    "billing_multiplier",
    "cache_model_for",
    "model_prices",
    "price_map_source",
    "provider_of",
    "switched_min_tokens",
]

PROVIDERS = ("anthropic", "gemini", "openai")
LONG_CONTEXT_THRESHOLD = 200_000  # litellm's "*_above_200k_tokens" prices apply to longer prompts


@dataclass(frozen=True, slots=True)
class CacheModel:
    """The prompt-cache rules of one provider family. Sizes are in that provider's tokens.

    *Implicit* models (``explicit=False``) cache any common prefix with the previous
    request of the conversation; *explicit* ones only the prefix up to a
    ``cache_control`` breakpoint, and only if an earlier request wrote an entry
    there (written tokens are billed at ``write_premium``).

    Time (where a recording says when each request was sent): an explicit entry
    expires ``ttl_s`` seconds after it was last written or read, or
    ``long_ttl_s`` for entries written with the longer lifetime (billed at
    ``long_write_premium``); an implicit cache keeps the expected share of a
    prefix that ``idle_survival`` gives for the idle gap (``(gap_s, share)``
    pairs, ascending: gaps up to ``gap_s`` keep ``share``; longer gaps than the
    last keep nothing; empty: nothing expires). A prompt's unrecorded prefix
    (the system prompt and tools a log left out) holds a part shared across
    sessions (``shared_share`` of it): a cold request finds it cached with the
    expected chance ``shared_warm`` (another session of the user warmed it).
    Implicit hits fall ``shortfall`` tokens short of the common prefix on
    average, and the share ``lag_share`` of them only reach the request before
    the previous one, and ``routing_loss`` of them is lost to routing (a
    simulation-only expectation). Where ``drops_turn_reasoning``, a request that starts a
    new user turn after a turn that reasoned matches the previous one only up to that turn's
    first response. Explicit caches lose the share ``rewrite_rate`` of their hits beyond the shared
    prefix to changes the agent made to its prompt that
    its log does not record (server-side context editing, dropped thinking).
    All of these are expectations: the simulation stays deterministic.
    """

    name: str
    provider: str | None  # whose tokens the sizes count; None: tokenizer-free (``ideal``)
    min_tokens: int = 0  # a prefix shorter than this is never cached
    increment: int = 1  # hits are whole multiples of this many tokens (blocks)
    explicit: bool = False  # True: cached only up to explicit breakpoints
    max_breakpoints: int = 0  # breakpoints allowed per request (explicit models)
    lookback_blocks: int = 0  # content blocks searched back from a breakpoint for an earlier entry
    write_premium: float = 1.0  # price of a token written to the cache / an uncached input token
    miss_rate: float = 0.0  # expected share of cacheable prefixes not served; credited as expectation
    source: str = ""  # where the rules come from
    ttl_s: float | None = None  # explicit: seconds an entry lives after its last use; None: forever
    long_ttl_s: float | None = None  # explicit: the optional longer lifetime
    long_write_premium: float = 1.0  # explicit: price of a token written with the longer lifetime
    idle_survival: tuple[tuple[float, float], ...] = ()  # implicit: (idle gap up to s, share kept)
    shared_share: float = 0.0  # of an unrecorded prefix: the part sessions share (tools, static system)
    shared_warm: float = 0.0  # expected chance another session warmed that part before a cold request
    shortfall: int = 0  # implicit: provider tokens a hit falls short of the common prefix on average
    lag_share: float = 0.0  # implicit: share of hits that only reach the request before the previous one
    rewrite_rate: float = 0.0  # explicit: share of hits lost to prompt changes a log does not record
    # implicit: expected share of a cacheable prefix lost to requests routed to a server without it. The
    # simulation applies it on top of miss_rate; the break-even rule of aging (context/_breakeven.py)
    # reads miss_rate only, so a fit here never changes the prompts the live agent builds.
    routing_loss: float = 0.0
    # implicit: the provider drops the reasoning items of earlier turns at a new user message, so a
    # request that starts a turn after one that reasoned matches the previous request only up to
    # that turn's first response (a recorded fact per step: RecordedRun.new_turn_after_reasoning).
    drops_turn_reasoning: bool = False

    def cacheable(self, prefix_tokens: float) -> int:
        """Provider tokens of a common prefix a hit can cover (before misses): 0 below the
        minimum, else whole increments."""
        if prefix_tokens < max(self.min_tokens, 1):
            return 0
        return int(prefix_tokens // self.increment) * self.increment

    def expected_hit(self, prefix_tokens: float) -> float:
        """The cacheable part of a prefix, discounted by the miss rate (a deterministic expectation)."""
        return self.cacheable(prefix_tokens) * (1.0 - self.miss_rate)

    def survival(self, idle_s: float | None) -> float:
        """Implicit caches: the expected share of a cached prefix still served after ``idle_s``
        seconds without a request (1.0 when the gap is unknown or nothing expires)."""
        if idle_s is None or not self.idle_survival:
            return 1.0
        return next((share for limit, share in self.idle_survival if idle_s <= limit), 0.0)


# Fitted parameters (benchmarks/session_fit.py prints the fit; each says what it was fitted on):
# - shared_share: the part of an unrecorded prefix that Claude Code's sessions share (its tools and
#   static system prompt, cached at their own breakpoint): the median of first-request cache reads
#   over the calibrated prefix, on the 43 of 73 Claude Code first requests of ../shared/sessions
#   that read one;
# - shared_warm: the share of cold requests (a run's first, or after its entries expired) that read
#   that shared part, on the same sessions (first requests: 43 of 73);
# - ttl_s: 5 minutes plus the grace the recorded hits show: requests up to ~340 s after the previous
#   one still read its entries (the timestamps are when the request was logged, not when the
#   provider refreshed the entry).
# - rewrite_rate: the share of steps whose recorded read fell to at most half the prompt although
#   the previous request's entries were live (gap under 5 minutes): Claude Code changed its prompt
#   before its end (server-side context editing, thinking blocks of earlier turns dropped) where the
#   log shows nothing; 30 of 2,277 such steps.
# OpenAI (the one Codex rollout with usage, ../shared/sessions/codex_coda, 161 steps):
# - drops_turn_reasoning: the Responses API drops the reasoning items of earlier turns at a new user
#   message (https://cookbook.openai.com/examples/responses_api/reasoning_items#caching; Codex CLI
#   itself strips them before sending since openai/codex#5857), so the first request of a turn reads
#   the cache only up to the previous turn's first response. In the rollout every request that
#   opened a turn after one that reasoned (12) read within ~2k tokens of that point, never the whole
#   previous prompt; without the rule the simulation served them whole (per-step error 0.066).
# - routing_loss: the share of the cacheable prefix the recorded hits did not serve, fitted so the
#   simulated total cached share equals the recorded one (the total is what prices a run): 3.1% (4
#   requests under 5 minutes apart read nothing, a dozen an older prefix, a third of the hits fell a
#   few 128-token blocks short). It applies to every hit as an expectation; the per-step error with
#   it is 0.056 (0 gives 0.045 but a total 3 points high and dollars 8% low). A token shortfall or a
#   lag share raised the per-step error at the same total (benchmarks/session_fit.py --grid).
# - OPENAI_IDLE_SURVIVAL: the share served after idle gaps. With the turn rule the six 5-30 minute
#   gaps served 0.98 of what requests under 5 minutes apart served (every long gap there opened a
#   turn: the turn rule, not expiry, explained the losses the earlier fit put on time); over 30
#   minutes there is one gap, so the docs decide: prefixes "generally remain active for 5 to 10
#   minutes of inactivity, up to a maximum of one hour": 0.74 up to an hour, nothing after.
ANTHROPIC_FIT: dict[str, float] = {
    "shared_share": 0.7,
    "shared_warm": 0.59,
    "ttl_s": 330.0,
    "rewrite_rate": 0.013,
}
OPENAI_FIT: dict[str, float] = {"routing_loss": 0.031, "shared_share": 0.0, "shared_warm": 0.0}
OPENAI_IDLE_SURVIVAL = ((300.0, 1.0), (1800.0, 0.98), (3600.0, 0.74))

# Today's simulation: every token of the longest common prefix with the previous request.
_IDEAL = CacheModel("ideal", None, source="longest common prefix with the previous request, no rules")

# Gemini implicit caching. The docs (https://ai.google.dev/gemini-api/docs/caching) say implicit
# caching is on by default for Gemini 2.5 and newer, hits need a common prefix with a recent request,
# and list a minimum input size per model (4,096 for Gemini 3 Pro Preview). The parameters below are
# fitted on 63 recorded mini-swe-agent runs of gemini-3-pro-preview (4,333 steps, via OpenRouter):
# - cached_tokens are whole blocks: k x ~2,015 reported tokens, just under k x 2,048; blocks of
#   2,048 give the lowest per-step error;
# - the smallest hit is one block, cached on prompts of ~2,200 tokens: the documented 4,096 is not
#   what these runs were billed, so the minimum is one block;
# - a hit covers the whole blocks of the prefix shared with the last request *the same endpoint*
#   served: OpenRouter sent these runs to two Google endpoints ("Google", "Google AI Studio", named
#   per step in the response's `provider`), each with its own cache. On an unchanged endpoint 2,762
#   of 3,474 steps with a cacheable prefix hit exactly the previous request's whole blocks, 446 an
#   older request's and 114 nothing; after one of the 721 switches between endpoints, 118 got
#   nothing and 401 hit the last request sent to that endpoint. The replay follows the recorded
#   route of each step (bench/_caching.py); a run without routes has one endpoint.
# - the remaining misses are credited as an expectation (3.5% of the cacheable blocks), so the
#   simulation stays deterministic; misses drawn from a hash of run and step fit worse.
# Fit (benchmarks/cache_fit.py, `full` replayed): per-step MAE of the cached share 0.073, total
# cached share +0.2 points from the recorded one; ignoring the routes, the best miss rate (4.5%)
# gives 0.099 and +1.1 points.
_GEMINI = CacheModel(
    "gemini",
    "gemini",
    min_tokens=2048,
    increment=2048,
    miss_rate=0.035,
    source="fit on 63 recorded Gemini 3 Pro runs; https://ai.google.dev/gemini-api/docs/caching",
)

# OpenAI automatic caching (https://platform.openai.com/docs/guides/prompt-caching, and the cookbook
# "Prompt Caching 201"): "works automatically for prompts containing 1024 tokens or more, with cache
# hits occurring in increments of 128 tokens"; requests are routed by a hash of the prefix to a
# server that recently processed it; "cached prefixes generally remain active for 5 to 10 minutes of
# inactivity, up to a maximum of one hour during off-peak periods". No write fee; the read discount
# is per model (in the prices). Fitted on the one Codex CLI rollout with usage in
# ../shared/sessions/codex_coda (gpt-5-codex, 161 steps; benchmarks/session_fit.py): every recorded
# hit is a multiple of 128 and the smallest is 2,048 (so the documented 1,024 minimum stands); hits
# fall short of the previous prompt, and a turn's first request reads only up to the previous turn's
# reasoning (see OPENAI_FIT below); the cache survives 5-30 minute idle gaps.
_OPENAI = CacheModel(
    "openai",
    "openai",
    min_tokens=1024,
    increment=128,
    source="https://platform.openai.com/docs/guides/prompt-caching; fit on 1 Codex CLI rollout",
    idle_survival=OPENAI_IDLE_SURVIVAL,
    routing_loss=OPENAI_FIT["routing_loss"],
    drops_turn_reasoning=True,
    shared_share=OPENAI_FIT["shared_share"],
    shared_warm=OPENAI_FIT["shared_warm"],
)

# Anthropic (https://platform.claude.com/docs/en/build-with-claude/prompt-caching): the prefix
# (tools, system, messages in that order) is cached only up to blocks marked with cache_control, at
# most 4 breakpoints per request; at each breakpoint the system looks for an earlier entry at most
# 20 content blocks back; "the cache has a minimum 5-minute lifetime", refreshed at no cost each
# time the entry is used, or 1 hour with "ttl": "1h"; "5-minute cache write tokens are 1.25 times the
# base input tokens price, 1-hour cache write tokens are 2 times the base input tokens price", reads
# 0.1x (the read price comes from the model's prices). Minimum cacheable prefix per model: see
# anthropic_min_tokens. tiered_agent/_model.py puts the breakpoints on the system prompt and on the
# newest message; the simulation does the same, plus one at the end of the shared part of a prefix
# a log did not record (Claude Code caches its tools and static system prompt there, shared by its
# sessions). Fitted on 73 recorded Claude Code first requests and 2,461 steps of
# ../shared/sessions (benchmarks/session_fit.py): see ANTHROPIC_FIT below.
_ANTHROPIC = CacheModel(
    "anthropic",
    "anthropic",
    min_tokens=1024,
    explicit=True,
    max_breakpoints=4,
    lookback_blocks=20,
    write_premium=1.25,
    source="https://platform.claude.com/docs/en/build-with-claude/prompt-caching; fit on Claude Code logs",
    ttl_s=ANTHROPIC_FIT["ttl_s"],
    long_ttl_s=3600.0,
    long_write_premium=2.0,
    shared_share=ANTHROPIC_FIT["shared_share"],
    shared_warm=ANTHROPIC_FIT["shared_warm"],
    rewrite_rate=ANTHROPIC_FIT["rewrite_rate"],
)

CACHE_MODELS: dict[str, CacheModel] = {m.name: m for m in (_IDEAL, _GEMINI, _OPENAI, _ANTHROPIC)}
CACHE_MODEL_NAMES = ("auto", *CACHE_MODELS)
# A run whose model is unknown gets automatic prefix caching: OpenAI's rules are what most
# OpenAI-compatible endpoints (and the recorded tau-bench/SWE-agent GPT-4o runs) follow.
DEFAULT_CACHE_MODEL = "openai"

# Minimum cacheable prompt per Claude model, from the table in the prompt-caching docs above
# ("4096 tokens for Claude Opus 4.6, Claude Opus 4.5 ... 1024 tokens for Claude Sonnet 4.6, Claude
# Sonnet 4.5, Claude Opus 4.1, Claude Opus 4, Claude Sonnet 4, and Claude Sonnet 3.7 ... 4096 tokens
# for Claude Haiku 4.5 ... 2048 tokens for Claude Haiku 3.5 and Claude Haiku 3", as quoted in
# https://github.com/anthropics/anthropic-sdk-python/issues/1194). Other Claude models: 1024.
_ANTHROPIC_MINIMUMS = (
    (("opus-4-5", "opus-4.5", "opus-4-6", "opus-4.6", "haiku-4-5", "haiku-4.5"), 4096),
    (("3-5-haiku", "3-haiku", "haiku-3"), 2048),
)


def _bare(model: str) -> str:
    """The model's own name: lower case, without a leading ``@`` or any provider/router prefix."""
    return model.strip().lstrip("@").lower().rsplit("/", 1)[-1]


def provider_of(model: str | None) -> str | None:
    """The provider family whose cache and tokenizer a model name implies (None: unknown).

    ``google/gemini-3-pro-preview``, ``vertex_ai/gemini-2.5-pro`` -> ``gemini``;
    ``claude-sonnet-4-5``, ``bedrock/anthropic.claude-...`` -> ``anthropic``;
    ``gpt-5``, ``openai/gpt-4o``, ``o3-mini`` -> ``openai``.
    """
    if not model:
        return None
    bare = _bare(model)
    if "claude" in bare:
        return "anthropic"
    if bare.startswith("gemini"):
        return "gemini"
    if bare.startswith(("gpt-", "gpt5", "chatgpt", "codex", "o1", "o3", "o4")):
        return "openai"
    return None


def anthropic_min_tokens(model: str) -> int:
    """The minimum cacheable prefix of a Claude model (see the table above)."""
    bare = _bare(model)
    for names, minimum in _ANTHROPIC_MINIMUMS:
        if any(name in bare for name in names):
            return minimum
    return _ANTHROPIC.min_tokens


def switched_min_tokens(model: str | None, rules: CacheModel) -> int | None:
    """The shortest prefix ``model`` caches when a run switched to it under ``rules``, where that
    differs by model (Anthropic's explicit cache: Sonnet 4.5 1,024 tokens, Haiku 4.5 4,096); None:
    ``rules``' own minimum (no switch, another provider, or a model of another provider)."""
    anthropic = rules.explicit and rules.provider == "anthropic"
    if model is None or not anthropic or provider_of(model) != "anthropic":
        return None
    return anthropic_min_tokens(model)


def cache_model_for(model: str | None, default: str = DEFAULT_CACHE_MODEL) -> CacheModel:
    """The cache rules of ``model``'s provider; ``CACHE_MODELS[default]`` when it is unknown."""
    provider = provider_of(model)
    if provider is None or model is None:
        if default not in CACHE_MODELS:
            raise ConfigurationError(
                f"unknown cache model {default!r}; choose from {', '.join(CACHE_MODELS)}"
            )
        return CACHE_MODELS[default]
    rules = CACHE_MODELS[provider]
    if provider == "anthropic":
        return dataclasses.replace(rules, min_tokens=anthropic_min_tokens(model))
    return rules


# --------------------------------------------------------------------------- prices
@dataclass(frozen=True, slots=True)
class ModelPrices:
    """USD per token of one litellm model. ``long_context`` applies to prompts over
    :data:`LONG_CONTEXT_THRESHOLD` tokens when litellm lists such prices."""

    model: str  # the key in litellm's cost map
    input: float
    output: float
    cache_read: float  # litellm's cache_read_input_token_cost, else the input price (no discount)
    cache_write: float  # cache_creation_input_token_cost, else the input price x the cache's write premium
    long_context: ModelPrices | None = None
    # cache_creation_input_token_cost_above_1hr (Anthropic's 1-hour writes), else the input price x the
    # cache's long write premium; None: the same as cache_write
    cache_write_1h: float | None = None

    @property
    def write_1h(self) -> float:
        """USD per token written to the cache with the 1-hour lifetime."""
        return self.cache_write if self.cache_write_1h is None else self.cache_write_1h

    def for_prompt(self, prompt_tokens: float) -> ModelPrices:
        """The prices that apply to a prompt of this many (provider) tokens."""
        if self.long_context is not None and prompt_tokens > LONG_CONTEXT_THRESHOLD:
            return self.long_context
        return self

    def scaled(self, factor: float) -> ModelPrices:
        """These prices with every per-token price times ``factor`` (a billing modifier such as
        Anthropic's fast mode or US-only inference: it multiplies each price, the long-context
        ones and the cache's too, and stacks with the cache's own multipliers)."""
        if factor == 1.0:
            return self
        return dataclasses.replace(
            self,
            input=self.input * factor,
            output=self.output * factor,
            cache_read=self.cache_read * factor,
            cache_write=self.cache_write * factor,
            long_context=self.long_context.scaled(factor) if self.long_context is not None else None,
            cache_write_1h=self.cache_write_1h * factor if self.cache_write_1h is not None else None,
        )

    def cost(
        self, prompt: float, cached: float, written: float, output: float, *, written_1h: float = 0.0
    ) -> float:
        """USD of one call: ``cached`` read and ``written`` tokens are part of ``prompt``; ``written_1h``
        of the written ones had the 1-hour lifetime."""
        p = self.for_prompt(prompt)
        uncached = max(prompt - cached - written, 0.0)
        long = min(max(written_1h, 0.0), written)
        writes = (written - long) * p.cache_write + long * p.write_1h
        return uncached * p.input + cached * p.cache_read + writes + output * p.output


def _cost_map_path() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError("litellm is not installed; its bundled cost map prices the models")
    return Path(next(iter(spec.submodule_search_locations))) / "model_prices_and_context_window_backup.json"


@lru_cache(maxsize=1)
def _cost_map() -> dict[str, Any]:
    data = orjson.loads(_cost_map_path().read_bytes())
    return data if isinstance(data, dict) else {}


def price_map_source() -> str:
    """Where the prices come from, with litellm's version."""
    try:
        version = metadata.version("litellm")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return f"litellm {version} model_prices_and_context_window_backup.json"


def _candidates(model: str) -> list[str]:
    """Cost-map keys to try for a recorded or user-given model name, most literal first.

    ``google/gemini-3-pro-preview`` (OpenRouter's name) -> itself, ``gemini-3-pro-preview``,
    ``gemini/gemini-3-pro-preview``, ``vertex_ai/gemini-3-pro-preview``: the first key litellm
    prices wins, and the report names it, so no mapping is silent.
    """
    name = model.strip().lstrip("@")
    parts = name.split("/")
    out = ["/".join(parts[i:]) for i in range(len(parts))]
    bare = parts[-1]
    provider = provider_of(name)
    if provider == "gemini":
        out += [f"gemini/{bare}", f"vertex_ai/{bare}"]
    elif provider is not None:
        out.append(f"{provider}/{bare}")
    out += [c.lower() for c in out]
    return list(dict.fromkeys(c for c in out if c))


def _number(entry: dict[str, Any], key: str) -> float | None:
    value = entry.get(key)
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _prices(key: str, entry: dict[str, Any], suffix: str = "") -> ModelPrices | None:
    input_price = _number(entry, f"input_cost_per_token{suffix}")
    output_price = _number(entry, f"output_cost_per_token{suffix}")
    if input_price is None or output_price is None:
        return None
    read = _number(entry, f"cache_read_input_token_cost{suffix}")
    write = _number(entry, f"cache_creation_input_token_cost{suffix}")
    write_1h = _number(entry, "cache_creation_input_token_cost_above_1hr") if not suffix else None
    long_context = None if suffix else _prices(key, entry, "_above_200k_tokens")
    rules = _rules(key)
    cache_write = input_price * rules.write_premium if write is None else write
    if write_1h is None and rules.long_ttl_s is not None:
        write_1h = input_price * rules.long_write_premium
    return ModelPrices(
        model=key,
        input=input_price,
        output=output_price,
        cache_read=input_price if read is None else read,
        cache_write=cache_write,
        long_context=long_context,
        cache_write_1h=write_1h,
    )


def _rules(key: str) -> CacheModel:
    provider = provider_of(key)
    return CACHE_MODELS[provider] if provider is not None else _IDEAL


@lru_cache(maxsize=256)
def model_prices(model: str) -> ModelPrices | None:
    """The USD prices litellm's bundled cost map lists for ``model`` (None: not priced there)."""
    cost_map = _cost_map()
    for key in _candidates(model):
        entry = cost_map.get(key)
        if isinstance(entry, dict) and entry.get("mode") in (None, "chat", "responses", "completion"):
            prices = _prices(key, entry)
            if prices is not None:
                return prices
    return None


# Billing modifiers the provider published but litellm's cost map does not list for the model
# (its ``provider_specific_entry``): Anthropic's fast mode on Claude Opus 4.6 is billed at 6x the
# standard rates, over the whole context window (platform.claude.com, "Fast mode", pricing).
_PUBLISHED_MULTIPLIERS: dict[tuple[str, str], float] = {("claude-opus-4-6", "fast"): 6.0}
_DATED = re.compile(r"-\d{8}$")


def billing_multiplier(model: str, modifier: str) -> float | None:
    """What billing ``modifier`` (``"fast"``: Anthropic's fast mode; ``"us"``: US-only inference)
    multiplies ``model``'s prices by: litellm's ``provider_specific_entry`` for the model's cost-map
    key, else the provider's published figure; None when neither lists it."""
    prices = model_prices(model)
    if prices is None:
        return None
    entry = _cost_map().get(prices.model)
    listed = entry.get("provider_specific_entry") if isinstance(entry, dict) else None
    value = _number(listed, modifier) if isinstance(listed, dict) else None
    if value is not None and value > 0:
        return value
    bare = _DATED.sub("", prices.model.rsplit("/", 1)[-1])  # claude-opus-4-6-20260205 -> claude-opus-4-6
    return _PUBLISHED_MULTIPLIERS.get((bare, modifier))
