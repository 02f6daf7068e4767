"""Prompt-caching simulation: what a provider with prefix caching would bill for each prompt.

Model: a request is one token sequence (tool schemas first, then every message
as ``[3 framing tokens] + content + per tool call (name + arguments + 3 framing
tokens) + tool_call_id``, exactly the layout :meth:`TokenCounter.count_message`
counts). The longest common token prefix with the previous request of the same
run is a cache hit, billed at ``cache_discount`` of the input price; output
tokens cost ``output_price_ratio`` times the input price. Costs are in units
of one uncached input token.

Token ids are memoized per text (:class:`IdCounter`) and per message
(:class:`PromptEncoder`), so a step costs O(new content) plus one comparison
per message of the previous request.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import orjson
from cachetools import LRUCache

from .._errors import ConfigurationError
from .._messages import Message
from .._tokens import PROMPT_OVERHEAD, TokenCounter

__all__ = ["CountedHistory", "IdCounter", "PrefixCache", "Pricing", "PromptEncoder", "common_prefix"]

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
    """A :class:`TokenCounter` that also keeps token ids per text (bounded by total tokens).

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
        self._ids: LRUCache[str, array[int]] = LRUCache(maxsize=max_cached_tokens, getsizeof=_size)
        # Keyed by identity (messages are frozen; the entry keeps the object alive, so its id is not reused).
        self._message_counts: dict[int, tuple[Message, int]] = {}
        self._max_messages = max_cached_messages

    def ids(self, text: str) -> array[int]:
        """Token ids of ``text`` (memoized; do not mutate the result)."""
        if not text:
            return _EMPTY
        cached = self._ids.get(text)
        if cached is None:
            cached = array("I", super().encode(text))
            if len(cached) < self._ids.maxsize:
                self._ids[text] = cached
        return cached

    def encode(self, text: str) -> list[int]:
        return self.ids(text).tolist()

    def count_uncached(self, text: str) -> int:
        """Tokens of a one-off text, without filling the memo."""
        return len(super().encode(text)) if text else 0

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
        if len(self._message_counts) >= self._max_messages:
            self._message_counts.clear()
        self._message_counts[id(message)] = (message, count)
        return count


def _size(ids: array[int]) -> int:
    return max(1, len(ids))


class PromptEncoder:
    """Token sequences of messages and tool schemas, memoized per message of one run."""

    def __init__(self, counter: IdCounter) -> None:
        self.counter = counter
        self._messages: dict[int, tuple[Message, array[int]]] = {}
        self._tools: dict[bytes, array[int]] = {}

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
        if not schemas:
            return _EMPTY
        key = orjson.dumps(list(schemas), option=orjson.OPT_SORT_KEYS)
        cached = self._tools.get(key)
        if cached is None:
            cached = self.counter.ids(key.decode())
            self._tools[key] = cached
        return cached

    def request(self, messages: Sequence[Message], schemas: Sequence[Mapping[str, Any]]) -> list[array[int]]:
        """The request as segments: tool schemas first, then one segment per message."""
        return [self.tools(schemas), *(self.message(m) for m in messages)]


def common_prefix(previous: Sequence[array[int]], current: Sequence[array[int]]) -> int:
    """Length of the longest common token prefix of two segmented sequences."""
    total = 0
    for a, b in zip(previous, current, strict=False):
        if a is b or a == b:
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


class PrefixCache:
    """The simulated provider cache of one run: remembers the previous request."""

    def __init__(self, encoder: PromptEncoder) -> None:
        self.encoder = encoder
        self._previous: list[array[int]] = []
        self.rewrote = False  # the last request changed the previous one before its end

    def request(self, messages: Sequence[Message], schemas: Sequence[Mapping[str, Any]] = ()) -> int:
        """Record a request; return how many of its leading tokens were cached."""
        current = self.encoder.request(messages, schemas)
        cached = common_prefix(self._previous, current) if self._previous else 0
        self.rewrote = bool(self._previous) and cached < sum(len(s) for s in self._previous)
        self._previous = current
        return cached


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

    def input_cost(self, prompt_tokens: int, cached_tokens: int) -> float:
        """Cost of one prompt alone: uncached tokens at 1, cached ones at the discount."""
        cached = min(cached_tokens, prompt_tokens)
        return (prompt_tokens - cached) + cached * self.cache_discount

    def cost(self, prompt_tokens: int, cached_tokens: int, output_tokens: int) -> float:
        """Cost of one call in uncached-input-token units."""
        cached = min(cached_tokens, prompt_tokens)
        return (
            (prompt_tokens - cached) + cached * self.cache_discount + output_tokens * self.output_price_ratio
        )
