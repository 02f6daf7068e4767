"""Prompt-caching simulation: what a provider with prefix caching would bill for each prompt.

Model: a request is one token sequence (tool schemas first, then every message
as ``[3 framing tokens] + content + per tool call (name + arguments + 3 framing
tokens) + tool_call_id``, exactly the layout :meth:`TokenCounter.count_message`
counts). :class:`CacheSimulator` applies one provider's cache rules
(:class:`~tiered_agent._providers.CacheModel`: ``ideal`` is every token of the
longest common prefix with the previous request of the same run) and says how
many prompt tokens were read from the cache and written to it. :class:`Pricing`
bills cached tokens at ``cache_discount`` of the input price, written ones at
the cache model's write premium, output tokens at ``output_price_ratio``:
costs in units of one uncached input token (dollars: ``_dollars.py``).

Token ids are memoized per text (:class:`IdCounter`) and per message
(:class:`PromptEncoder`), and a request reuses the segments of the messages it
shares with the previous one (the same objects: :class:`~._series.Series`), so
a step costs O(new content) plus a few list copies at C speed.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import accumulate
from typing import Any, NamedTuple

import orjson

from .._errors import ConfigurationError
from .._messages import Message
from .._model import stable_breakpoints
from .._providers import CACHE_MODELS, CacheModel
from .._tokens import PROMPT_OVERHEAD, EncodedTexts, TokenCounter, remember
from ._series import Series, identical_prefix

__all__ = [
    "BREAKPOINTS",
    "IDEAL",
    "CacheSimulator",
    "CacheUse",
    "CountedHistory",
    "IdCounter",
    "Pricing",
    "PromptEncoder",
    "common_prefix",
    "content_blocks",
    "prefix_segments",
]

IDEAL = CACHE_MODELS["ideal"]

_ROLE_CODES = {"system": 1, "user": 2, "assistant": 3, "tool": 4}
# Framing tokens live above the vocabulary so they never equal a real token id.
_FRAME = 1 << 31
_CALL_FRAME = array("I", (_FRAME + 16, _FRAME + 17, _FRAME + 18))
_EMPTY = array("I")


class CountedHistory(tuple[Message, ...]):
    """A history snapshot that carries the token count of its messages (framing included).

    The context manager counts the full history every step (the counterfactual);
    :meth:`IdCounter.count_prompt` reads the carried count instead of re-summing.
    """

    message_tokens: int

    def __new__(cls, messages: Sequence[Message], message_tokens: int) -> CountedHistory:
        history = super().__new__(cls, messages)
        history.message_tokens = message_tokens
        return history


class IdCounter(TokenCounter):
    """A :class:`TokenCounter` that also keeps token ids per text (at most ``max_cached_tokens`` ids,
    emptied when full).

    The context manager counts with it and the cache simulation reads the same
    ids, so every distinct text is encoded once.
    """

    def __init__(
        self,
        encoding: str = "o200k_base",
        max_cached_tokens: int = 4_000_000,
        max_cached_messages: int = 200_000,
    ) -> None:
        super().__init__(encoding)
        self._ids: dict[str, array[int]] = {}
        self._held = 0  # ids in ``_ids``
        self._max_ids = max_cached_tokens
        # Keyed by identity (messages are frozen; the entry keeps the object alive, so its id is not reused).
        self._message_counts: dict[int, tuple[Message, int]] = {}
        self._max_messages = max_cached_messages
        # The last two schema lists counted: a manager counts the tools it sends and, for the
        # counterfactual, the same tools without context_retrieve's schema, prompt after prompt.
        self._last_tools: list[tuple[list[Mapping[str, Any]], int]] = []

    def ids(self, text: str) -> array[int]:
        """Token ids of ``text`` (memoized; do not mutate the result)."""
        if not text:
            return _EMPTY
        cached = self._ids.get(text)
        if cached is None:
            cached = self._keep(text, self._pieces.ids(text))
        return cached

    def _keep(self, text: str, ids: array[int]) -> array[int]:
        """Memoize ``ids`` for ``text`` (the memo is emptied first when they would overfill it)."""
        if self._held + len(ids) > self._max_ids:
            self._ids.clear()
            self._held = 0
        if len(ids) < self._max_ids:
            self._ids[text] = ids
            self._held += len(ids)
        return ids

    def _token_ids(self, text: str) -> array[int]:
        return self.ids(text)

    def _count_new(self, text: str) -> int:
        return len(self.ids(text))  # the ids are kept: the cache simulation asks for them next

    def _count_part(self, text: str) -> int:
        return self._pieces.length(text)  # its pieces' ids are kept (the whole text's are asked for)

    def adopt(self, texts: Sequence[str], encoded: EncodedTexts) -> int:
        """Take the ids another counter exported for ``texts`` (:meth:`TokenCounter.export`): they are
        not encoded again. Returns how many texts were taken (0: ids of other texts or another
        encoding)."""
        found = self._pieces.adopt(texts, encoded)
        for text, ids in zip(texts, found, strict=False):
            if text:
                self._keep(text, ids)
        return len(found)

    def count_uncached(self, text: str) -> int:
        """Tokens of a one-off text, without keeping the text itself (its pieces are memoized)."""
        return self._pieces.length(text)

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        """As :meth:`TokenCounter.count_tools`; the same schema objects as one of the last two calls
        are not serialized again (a run's schemas are parsed once and never changed in place)."""
        for last, count in self._last_tools:
            if len(last) == len(tools) == identical_prefix(last, tools):
                return count
        count = super().count_tools(tools)
        self._last_tools = [(list(tools), count), *self._last_tools[:1]]
        return count

    def count_prompt(
        self, messages: Iterable[Message | Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> int:
        if isinstance(messages, CountedHistory):
            return PROMPT_OVERHEAD + messages.message_tokens + self.count_tools(tools)
        return super().count_prompt(messages, tools)

    def count_message(self, message: Message | Mapping[str, Any]) -> int:
        """As :meth:`TokenCounter.count_message`, memoized per (frozen) :class:`Message` object."""
        if not isinstance(message, Message):
            return super().count_message(message)
        entry = self._message_counts.get(id(message))
        if entry is not None and entry[0] is message:
            return entry[1]
        count = super().count_message(message)
        remember(self._message_counts, id(message), (message, count), self._max_messages)
        return count


class PromptEncoder:
    """Token sequences of messages and tool schemas, memoized per message of one run."""

    def __init__(self, counter: IdCounter) -> None:
        self.counter = counter
        self._messages: dict[int, tuple[Message, array[int]]] = {}
        self._tools: dict[bytes, array[int]] = {}
        self._last_tools: tuple[list[Mapping[str, Any]], array[int]] | None = None
        self._prefixes: dict[tuple[int, float], list[array[int]]] = {}

    def prefix(self, tokens: int, shared_share: float) -> list[array[int]]:
        """:func:`prefix_segments`, built once per run (every policy's simulator sends the same)."""
        found = self._prefixes.get((tokens, shared_share))
        if found is None:
            found = self._prefixes[tokens, shared_share] = prefix_segments(tokens, shared_share)
        return list(found)

    def message(self, message: Message) -> array[int]:
        entry = self._messages.get(id(message))  # identity: the entry keeps the message alive
        if entry is not None and entry[0] is message:
            return entry[1]
        ids = self._encode_message(message)
        self._messages[id(message)] = (message, ids)
        return ids

    def _encode_message(self, message: Message) -> array[int]:
        ids = self.counter.ids
        out = array("I", (_FRAME, _FRAME + _ROLE_CODES[message.role], _FRAME + 8))
        out.extend(ids(message.text))
        for call in message.tool_calls:
            out.extend(ids(call.name))
            out.extend(ids(call.arguments))
            out.extend(_CALL_FRAME)
        if message.role == "tool":
            out.extend(ids(message.tool_call_id or ""))
        return out

    def tools(self, schemas: Sequence[Mapping[str, Any]]) -> array[int]:
        """The schemas' token ids; the same schema objects as the last call are not serialized again
        (a run's schemas are parsed once and never changed in place)."""
        if not schemas:
            return _EMPTY
        last = self._last_tools
        if last is not None and len(last[0]) == len(schemas) == identical_prefix(last[0], schemas):
            return last[1]
        key = orjson.dumps(list(schemas), option=orjson.OPT_SORT_KEYS)
        cached = self._tools.get(key)
        if cached is None:
            cached = self.counter.ids(key.decode())
            self._tools[key] = cached
        self._last_tools = (list(schemas), cached)
        return cached

    def request(self, messages: Sequence[Message], schemas: Sequence[Mapping[str, Any]]) -> list[array[int]]:
        """The request as segments: tool schemas first, then one segment per message."""
        return [self.tools(schemas), *(self.message(m) for m in messages)]


def common_prefix(previous: Sequence[array[int]], current: Sequence[array[int]]) -> int:
    """Length of the longest common token prefix of two segmented sequences."""
    same = identical_prefix(previous, current)  # the shared segments, as objects (at C speed)
    return _common_after(previous, current, same, sum(map(len, current[:same])))


def _common_after(previous: Sequence[array[int]], current: Sequence[array[int]], same: int, base: int) -> int:
    """:func:`common_prefix`, given the ``same`` leading segments both share as objects and their
    ``base`` tokens."""
    total = base
    for a, b in zip(previous[same:], current[same:], strict=False):
        if a == b:
            total += len(b)
            continue
        return total + _array_prefix(a, b)
    return total  # one request is a prefix of the other


def _array_prefix(a: array[int], b: array[int]) -> int:
    """Length of the common prefix of two id arrays (binary search on C-speed slice compares)."""
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


class CacheUse(NamedTuple):
    """What the simulated cache billed for one request, in replayed tokens."""

    read: int  # prompt tokens served from the cache
    written: int = 0  # prompt tokens written to the cache (explicit caches bill them at a premium)


# Where tiered_agent/_model.py puts Claude's breakpoints (CACHE_BREAKPOINTS): the system prompt
# and the newest message, then the policy's stable prefixes (``stable_breakpoints``).
BREAKPOINTS = ("system", "newest message", "stable prefix")
_NEVER = float("inf")  # the expiry of entries when a recording has no times


def content_blocks(message: Message) -> int:
    """Anthropic content blocks of a message: its text, and one ``tool_use`` per tool call
    (a tool result is one ``tool_result`` block)."""
    return max(1, int(bool(message.text)) + len(message.tool_calls))


def prefix_segments(tokens: int, shared_share: float) -> list[array[int]]:
    """Stand-ins for a prompt prefix a log did not record (``tokens`` replayed tokens): the part
    sessions share first (``shared_share`` of it), then the rest. Ids above the vocabulary and the
    framing codes, so they never equal recorded content."""
    if tokens <= 0:
        return []
    shared = min(tokens, max(0, round(tokens * shared_share)))
    parts = [shared, tokens - shared] if shared else [tokens]
    out, base = [], _FRAME + 1024
    for size in parts:
        out.append(array("I", range(base, base + size)))
        base += size
    return [p for p in out if p]


class _Route(NamedTuple):
    """One endpoint's implicit cache: its last two requests and when the last was sent."""

    last: list[array[int]]
    before: list[array[int]] | None
    at: float | None


class _Entry(NamedTuple):
    """An explicit cache entry: when it expires and the lifetime a use renews (replaced, never changed,
    so a copy of a simulator shares its entries)."""

    expires: float
    ttl: float


class CacheSimulator:
    """The simulated provider cache of one run: applies a :class:`CacheModel` request by request.

    ``scale`` converts replayed tokens into the provider's (its calibration): the model's
    minimum and block sizes are in provider tokens, the counts returned are in replayed tokens.
    ``prefix_tokens``: replayed tokens of a prefix the recording left out (system prompt, tool
    schemas), sent before the tool schemas of every request (:func:`prefix_segments`).

    - implicit models (``ideal``, ``gemini``, ``openai``): the longest common token prefix with
      the previous request served by the same endpoint (a recorded route; runs without routes
      have one endpoint), less the model's expected ``shortfall``, cut to its minimum and
      increments, times ``1 - miss_rate`` and ``1 - routing_loss``; the share ``lag_share`` of hits
      reach only the request before the previous one; where the model drops the reasoning of
      earlier turns (``drops_turn_reasoning``), a request that opens a user turn after one that
      reasoned matches only up to that turn's first response (:meth:`_turn_cap`); after an idle
      gap (``at``: when the request was sent) the expected
      ``survival`` share of it; a cold request reads the prefix's shared part with the expected
      chance ``shared_warm`` (``ideal``: every common token of the previous request, whatever the
      route or the time);
    - explicit models (``anthropic``): breakpoints on the shared part of the unrecorded prefix,
      on the system prompt (or the end of the prefix and tools) and on the newest message; a
      breakpoint reads an earlier entry that has not expired, found at its own position or at a
      message boundary at most ``lookback_blocks`` content blocks before it
      (:func:`content_blocks`); a breakpoint whose prefix reaches the minimum writes an entry
      that lives ``ttl_s`` (``long_ttl_s`` for requests that write with the longer lifetime)
      from its last use; the tokens between what was read and the furthest new entry are billed
      as written. A cold shared part is read with the expected chance ``shared_warm``.
    """

    def __init__(
        self, encoder: PromptEncoder, model: CacheModel = IDEAL, scale: float = 1.0, prefix_tokens: int = 0
    ) -> None:
        if scale <= 0:
            raise ConfigurationError(f"token scale must be positive, got {scale}")
        self.encoder = encoder
        self.model = model
        self.scale = 1.0 if model.provider is None else scale
        self._prefix = encoder.prefix(prefix_tokens, model.shared_share if model.provider else 0.0)
        self._shared = len(self._prefix[0]) if len(self._prefix) == 2 else 0
        self._previous: list[array[int]] = []
        self._sums = [0]  # the previous request's tokens before each of its segments, then in all
        self._segments: Series[Message, array[int]] = Series(encoder.message)  # the messages' ids
        self._blocks: Series[Message, int] = Series(content_blocks)
        self._routes: dict[tuple[str | None, str | None], _Route] = {}  # implicit: per (model, endpoint)
        self._chain: list[int] = []  # explicit: hashes of the previous request's segment prefixes
        self._partition: str | None = None  # explicit: the model the previous request was sent to
        self._entries: dict[int, _Entry] = {}  # explicit: prefixes (chain hashes) with a cache entry
        self._keys: dict[int, tuple[array[int], int]] = {}
        self.rewrote = False  # the last request changed the previous one before its end

    @property
    def prefix_tokens(self) -> int:
        return sum(len(s) for s in self._prefix)

    def copy(self) -> CacheSimulator:
        """An independent simulator in this one's state: what it would bill for the next requests is
        what this one would (the lists it keeps are replaced, never changed, so they are shared; its
        dictionaries are copied)."""
        twin = CacheSimulator.__new__(CacheSimulator)
        twin.encoder, twin.model, twin.scale = self.encoder, self.model, self.scale
        twin._prefix, twin._shared = self._prefix, self._shared
        twin._previous, twin._sums, twin._chain = self._previous, self._sums, self._chain
        twin._partition = self._partition
        twin._segments, twin._blocks = self._segments.copy(), self._blocks.copy()
        twin._routes, twin._entries = dict(self._routes), dict(self._entries)
        twin._keys = self._keys  # segment hashes by identity, entries holding their segments: a memo
        twin.rewrote = self.rewrote
        return twin

    def request(
        self,
        messages: Sequence[Message],
        schemas: Sequence[Mapping[str, Any]] = (),
        route: str | None = None,
        *,
        at: float | None = None,
        long_ttl: bool = False,
        new_turn_after_reasoning: bool = False,
        stable: Sequence[int] = (),
        partition: str | None = None,
        min_tokens: int | None = None,
    ) -> CacheUse:
        """Record a request; return what the provider would bill as read from (and written to) its cache.

        ``route``: the endpoint that served it, where the recording names one (each endpoint keeps
        its own cache; ``ideal`` ignores routes). ``at``: when it was sent (POSIX seconds; None:
        unknown, nothing expires). ``long_ttl``: its writes have the model's longer lifetime.
        ``new_turn_after_reasoning``: it starts a user turn after a turn whose responses reasoned
        (models that drop that reasoning match only up to the turn's first response). ``stable``:
        the prompt's stable prefixes (``BuiltPrompt.stable``), marked where breakpoints are left.
        ``partition``: the model it was sent to, in a run that switched models (each model has its
        own cache: an entry another model wrote is never read; None: the run's one model).
        ``min_tokens``: the shortest prefix that model caches, when it is not the run's (explicit
        caches; None: the cache model's).
        """
        current = [*self._prefix, self.encoder.tools(schemas), *self._segments(messages)]
        same = identical_prefix(self._previous, current)  # the segments it shares, as objects
        sums = self._sums[:same]
        sums.extend(accumulate(map(len, current[same:]), initial=self._sums[same]))
        common = _common_after(self._previous, current, same, sums[same]) if self._previous else 0
        self.rewrote = bool(self._previous) and common < self._sums[-1]
        if self.model.explicit:
            use = self._explicit(
                current, sums, same, messages, at=at, long_ttl=long_ttl, stable=stable, partition=partition,
                minimum=self.model.min_tokens if min_tokens is None else min_tokens,
            )  # fmt: skip
        else:
            cap = self._turn_cap(current, messages) if new_turn_after_reasoning else None
            use = CacheUse(self._implicit(current, common, (partition, route), at, cap))
        self._previous = current
        self._sums = sums
        return use

    # ---------------------------------------------------------------- implicit prefixes
    def _turn_cap(self, current: list[array[int]], messages: Sequence[Message]) -> int | None:
        """Where the previous request stops matching when the provider dropped the reasoning of the
        turn before this request: the start of the first response after the user message that opened
        that turn (None: the model keeps reasoning, or no such message)."""
        if not self.model.drops_turn_reasoning:
            return None
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        if len(users) < 2:
            return None
        opened = users[-2]
        first = next((i for i in range(opened + 1, users[-1]) if messages[i].role == "assistant"), None)
        if first is None:
            return None
        return sum(map(len, current[: len(current) - len(messages) + first]))

    def _implicit(
        self,
        current: list[array[int]],
        common: int,
        route: tuple[str | None, str | None],
        at: float | None,
        cap: int | None,
    ) -> int:
        model = self.model
        if model.provider is None:
            return common
        state = self._routes.get(route)
        self._routes[route] = _Route(current, state.last if state is not None else None, at)
        if state is None:
            return round(self._cold())
        prefix = common if state.last is self._previous else common_prefix(state.last, current)
        if cap is not None:
            prefix = min(prefix, cap)
        hit = self._expected(prefix)
        if model.lag_share and state.before is not None:
            older = common_prefix(state.before, current)
            lagging = self._expected(older if cap is None else min(older, cap))
            hit = (1 - model.lag_share) * hit + model.lag_share * lagging
        gap = at - state.at if at is not None and state.at is not None else None
        survival = model.survival(gap)
        if survival < 1:
            hit = survival * hit + (1 - survival) * self._cold()
        return min(prefix, round(hit))

    def _expected(self, prefix: int) -> float:
        """The expected hit on a common prefix of ``prefix`` replayed tokens, in replayed tokens."""
        provider = prefix * self.scale - self.model.shortfall
        served = 1.0 - self.model.routing_loss
        return self.model.expected_hit(max(provider, 0.0)) * served / self.scale

    def _cold(self) -> float:
        """A request no cache entry of this run serves: the shared prefix another session may have warmed."""
        if not self._shared:
            return 0.0
        return self.model.shared_warm * self._expected(self._shared)

    # ---------------------------------------------------------------- explicit breakpoints
    def _explicit(
        self,
        current: list[array[int]],
        sums: list[int],
        same: int,
        messages: Sequence[Message],
        *,
        at: float | None,
        long_ttl: bool,
        stable: Sequence[int] = (),
        partition: str | None = None,
        minimum: int = 0,
    ) -> CacheUse:
        chain = self._hash_chain(current, same, partition)
        positions = sums[1:]  # tokens up to the end of each segment
        skip = len(self._prefix)  # segments before the tool schemas
        blocks = [0] * (skip + 1) + self._blocks(messages)
        points = self._breakpoints(messages, skip, stable)
        now = at if at is not None else 0.0
        found = [self._lookup(chain, blocks, b, now) for b in points]
        read_at = max((f for f in found if f >= 0), default=-1)
        read = positions[read_at] if read_at >= 0 else 0
        fresh = [b for b in points if positions[b] * self.scale >= minimum and not self._valid(chain[b], now)]
        written = max((positions[b] for b in fresh), default=read) - read
        warm = 0.0
        if self._shared and read < self._shared and self._shared * self.scale >= minimum:
            warm = self.model.shared_warm * self._shared  # another session may have written it
        lost = self.model.rewrite_rate * max(read - (self._shared if self._shared else 0), 0)
        live = [b for b in points if b not in fresh and self._valid(chain[b], now)]
        self._renew(chain, [*live, *(f for f in found if f >= 0)], fresh, at, long_ttl)
        return CacheUse(round(read + warm - lost), max(round(written - warm + lost), 0))

    def _breakpoints(self, messages: Sequence[Message], skip: int, stable: Sequence[int] = ()) -> list[int]:
        """Segment indexes of the breakpoints (segments: the prefix's, the tool schemas, the messages):
        the prefix's, then the stable prefixes in the breakpoints left (:func:`stable_breakpoints`)."""
        leading_system = next((i for i, m in enumerate(messages) if m.role != "system"), len(messages))
        points = {skip + len(messages)}  # the newest message
        if leading_system:
            points.add(skip + leading_system)  # the last system message
        elif skip:
            points.add(skip)  # no system message recorded: the end of the unrecorded prefix and the tools
        points.discard(0)
        if self._shared:
            points.add(0)  # the part of the unrecorded prefix that sessions share
        spare = self.model.max_breakpoints - len(points)
        points.update(skip + k for k in stable_breakpoints(stable, len(messages), spare))
        return sorted(points)[-self.model.max_breakpoints :]

    def _valid(self, key: int, now: float) -> bool:
        entry = self._entries.get(key)
        return entry is not None and entry.expires >= now

    def _lookup(self, chain: list[int], blocks: list[int], breakpoint: int, now: float) -> int:
        """The longest live entry at a message boundary at most ``lookback_blocks`` content blocks back
        (its segment index; -1: none)."""
        back = 0
        for index in range(breakpoint, -1, -1):
            if self._valid(chain[index], now):
                return index
            back += blocks[index]
            if back > self.model.lookback_blocks:
                break
        return -1

    def _renew(
        self, chain: list[int], used: Iterable[int], fresh: Iterable[int], at: float | None, long_ttl: bool
    ) -> None:
        """The entries a request read or reached live on from now; its new breakpoints are written."""
        entries = self._entries
        for index in used:
            entry = entries[chain[index]]
            entries[chain[index]] = _Entry(_NEVER if at is None else at + entry.ttl, entry.ttl)
        model = self.model
        ttl = model.long_ttl_s if long_ttl and model.long_ttl_s else model.ttl_s
        for index in fresh:
            if at is None or ttl is None:
                self._entries[chain[index]] = _Entry(_NEVER, _NEVER)
            else:
                self._entries[chain[index]] = _Entry(at + ttl, ttl)

    def _hash_chain(self, current: list[array[int]], same: int, partition: str | None = None) -> list[int]:
        """Hashes of the request's segment prefixes, seeded by its ``partition`` (the model: entries of
        one model never match another's); the first ``same`` segments are the previous request's own
        (as objects), and so are their hashes when it went to the same model."""
        if partition != self._partition:
            self._partition, self._chain, same = partition, [], 0
        else:
            for a, b in zip(self._previous[same:], current[same:], strict=False):
                if a != b:
                    break
                same += 1
        chain = self._chain[:same]
        seed = 0 if partition is None else hash(partition)
        for segment in current[same:]:
            chain.append(hash((chain[-1] if chain else seed, self._key(segment))))
        self._chain = chain
        return chain

    def _key(self, segment: array[int]) -> int:
        entry = self._keys.get(id(segment))  # identity: the entry keeps the segment alive
        if entry is None or entry[0] is not segment:
            entry = (segment, hash(segment.tobytes()))
            self._keys[id(segment)] = entry
        return entry[1]


@dataclass(frozen=True, slots=True)
class Pricing:
    """Relative prices: an uncached input token costs 1."""

    cache_discount: float = 0.1
    output_price_ratio: float = 4.0

    def __post_init__(self) -> None:
        if not 0 <= self.cache_discount <= 1:
            raise ConfigurationError(f"cache discount must be in [0, 1], got {self.cache_discount}")
        if self.output_price_ratio < 0:
            raise ConfigurationError(f"output price ratio must be >= 0, got {self.output_price_ratio}")

    def input_cost(
        self, prompt_tokens: int, cached_tokens: int, written_tokens: int = 0, write_premium: float = 1.0
    ) -> float:
        """Cost of one prompt alone: uncached tokens at 1, cached ones at the discount, tokens
        written to the cache at ``write_premium``."""
        cached = min(cached_tokens, prompt_tokens)
        written = min(written_tokens, prompt_tokens - cached)
        return (prompt_tokens - cached - written) + cached * self.cache_discount + written * write_premium

    def cost(
        self,
        prompt_tokens: int,
        cached_tokens: int,
        output_tokens: int,
        written_tokens: int = 0,
        write_premium: float = 1.0,
    ) -> float:
        """Cost of one call in uncached-input-token units."""
        prompt = self.input_cost(prompt_tokens, cached_tokens, written_tokens, write_premium)
        return prompt + output_tokens * self.output_price_ratio
