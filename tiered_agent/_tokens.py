"""Local token counting with litellm's bundled tokenizers, and provider calibration.

``tiktoken`` would download its encodings; litellm ships o200k_base and
cl100k_base, so we point tiktoken at that folder *without importing litellm*
(importing litellm costs ~3 s; the benchmark and the CLI's help must not pay it).
"""

from __future__ import annotations

import hashlib
import importlib.util
import operator
import os
import re
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import repeat
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import orjson

from ._errors import ConfigurationError
from ._messages import Message

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "CALIBRATION_BOUNDS",
    "ENCODINGS",
    "MESSAGE_OVERHEAD",
    "PROMPT_OVERHEAD",
    "Calibration",
    "EncodedTexts",
    "PieceEncoder",
    "TokenCounter",
    "encoding_for_model",
    "remember",
    "texts_digest",
]

ENCODINGS = ("o200k_base", "cl100k_base")
MESSAGE_OVERHEAD = 3  # OpenAI's documented per-message framing (<|start|>role ... <|end|>)
PROMPT_OVERHEAD = 3  # the assistant reply primer
# The provider/local ratio a calibration may learn. Real tokenizers differ from o200k by -20%
# (Gemini) to +40% (Claude on code); anything outside is a provider that misreports usage.
CALIBRATION_BOUNDS = (0.5, 2.0)
_K = TypeVar("_K")
_V = TypeVar("_V")
_CL100K_FAMILIES = ("gpt-4-", "gpt-4", "gpt-3.5", "text-embedding-3", "text-embedding-ada")
_O200K_FAMILIES = ("gpt-4o", "gpt-4.1", "gpt-4.5", "gpt-5", "o1", "o3", "o4", "chatgpt-4o", "gpt-oss")


def encoding_for_model(model: str) -> str:
    """The bundled encoding closest to ``model``'s tokenizer.

    The provider prefix is stripped first (``openai/gpt-4o`` is gpt-4o, which
    is o200k; litellm's own ``token_counter`` falls back to cl100k for it).
    Non-OpenAI models get o200k, the closer of the two for recent models; the
    runtime's calibration factor corrects the rest.
    """
    name = model.rsplit("/", 1)[-1].lower()
    if name.startswith(_O200K_FAMILIES):
        return "o200k_base"
    if name.startswith(_CL100K_FAMILIES):
        return "cl100k_base"
    return "o200k_base"


def _bundled_tokenizer_dir() -> Path:
    spec = importlib.util.find_spec("litellm")
    if spec is None or not spec.submodule_search_locations:
        raise ConfigurationError("litellm is not installed; it provides the offline tokenizers")
    return Path(next(iter(spec.submodule_search_locations))) / "litellm_core_utils" / "tokenizers"


@lru_cache(maxsize=4)
def _encoding(name: str) -> tiktoken.Encoding:
    if name not in ENCODINGS:
        raise ConfigurationError(f"unknown tokenizer {name!r}; choose one of {', '.join(ENCODINGS)}")
    bundled = str(_bundled_tokenizer_dir())
    import tiktoken

    # tiktoken reads its files from TIKTOKEN_CACHE_DIR and downloads what is not there: a user's
    # own value (another project's cache, a folder that is gone) sent it to the network, a
    # traceback offline. The encodings litellm ships are read, whatever the variable says; the
    # variable is the user's again once they are loaded (tiktoken keeps what it loaded).
    saved = os.environ.get("TIKTOKEN_CACHE_DIR")
    os.environ["TIKTOKEN_CACHE_DIR"] = bundled
    try:
        return tiktoken.get_encoding(name)
    finally:
        if saved is None:
            os.environ.pop("TIKTOKEN_CACHE_DIR", None)
        else:
            os.environ["TIKTOKEN_CACHE_DIR"] = saved


# A text's pieces: each ends at a line feed after which no pre-token can start before the next line's
# first character (or at the end of the text). o200k_base and cl100k_base cut a text into pre-tokens
# with a regex and run BPE inside each pre-token only, so a text's ids are its pieces' ids joined
# when no pre-token spans a cut. The only pre-tokens holding a line feed are whitespace runs
# (``\s*[\r\n]+``, ``\s+(?!\S)``, ``\s+``, cl100k's ``\s++$`` and ``\s*[\r\n]``), which end at the last
# line feed of a run followed by horizontal whitespace and a visible character, and punctuation
# with trailing line breaks (``[\r\n/]*`` in o200k: a ``/`` right after the line feed joins it). So a
# line feed is a cut when the next line starts with a visible character other than ``/``, or with
# horizontal whitespace and then a visible character. Python's ``\s`` holds every character the
# tokenizers' ``\s`` (Unicode White_Space) does, so the check errs on the side of not cutting.
_CUTS = re.compile(r"\n(?=[^\S\r\n]+\S|[^\s/])")


@dataclass(frozen=True, slots=True)
class EncodedTexts:
    """The token ids of a sequence of texts, piece by piece (:class:`PieceEncoder`'s cut), for another
    counter of the same encoding to take instead of encoding those texts again
    (:meth:`PieceEncoder.adopt`): the texts themselves are not held, the receiver has them."""

    encoding: str
    digest: bytes  # of the texts (:func:`texts_digest`): ids are taken only for the same texts
    ids: bytes  # every piece's ids in order (``array("I")`` bytes)
    sizes: bytes  # ids per piece, in order (``array("I")`` bytes); a text's pieces are consecutive


def texts_digest(texts: Sequence[str]) -> bytes:
    """A digest of a sequence of texts (each one's length, then the texts), to tell the same ones."""
    digest = hashlib.blake2b(digest_size=16)
    digest.update(array("Q", map(len, texts)).tobytes())
    for text in texts:
        digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.digest()


class PieceEncoder:
    """Token ids of texts, exactly as the tokenizer gives them, with the ids of each line-aligned
    piece (cut at :data:`_CUTS`) memoized: a text made of lines an earlier text had (a truncation, an
    aged or condensed form, a retrieval page) costs dictionary lookups instead of BPE.

    The memo belongs to its owner (a run's counter) and holds at most ``max_tokens`` ids (it is
    emptied when full). Texts shorter than ``min_chars`` are encoded whole."""

    def __init__(self, encoding: str, max_tokens: int = 2_000_000, min_chars: int = 128) -> None:
        self._encoding = encoding  # loaded at the first text: a counter built and never used costs nothing
        self._pieces: dict[str, array[int]] = {}
        self._held = 0
        # a piece's tokens by the piece's hash, for a counter that only counts (a live agent): an int
        # key instead of a copy of every line it counted (two of a run's pieces would have to share
        # a 64-bit SipHash, keyed per process, to be miscounted)
        self._counts: dict[int, int] = {}
        self._counted = 0
        self._max_tokens = max_tokens
        self._min_chars = min_chars

    def _encode(self, text: str) -> list[int]:
        return _encoding(self._encoding).encode_ordinary(text)

    def ids(self, text: str) -> array[int]:
        """The ids of ``text`` (a new array; its pieces' ids are memoized)."""
        if len(text) < self._min_chars or "\n" not in text:
            return array("I", self._encode(text)) if text else array("I")
        parts = _CUTS.split(text)
        if len(parts) == 1:
            return array("I", self._encode(text))
        last = parts.pop()
        out = array("I")
        get = self._pieces.get
        for piece in map(operator.add, parts, repeat("\n")):  # each part with the line feed it was cut at
            ids = get(piece)
            out.extend(self._add(piece) if ids is None else ids)
        if last:
            ids = get(last)
            out.extend(self._add(last) if ids is None else ids)
        return out

    def length(self, text: str) -> int:
        """``len(self.ids(text))``, the same memo, without joining the pieces' ids into a new array."""
        pieces = self._split(text)
        if pieces is None:
            return len(self._encode(text)) if text else 0
        get = self._pieces.get
        total = 0
        for piece in pieces:
            ids = get(piece)
            total += len(self._add(piece) if ids is None else ids)
        return total

    def count(self, text: str) -> int:
        """``len(self.ids(text))``, the same cut (:meth:`_split`), with each piece's count memoized
        rather than its ids: a run that only counts (a live agent) keeps an int per piece instead of
        an array."""
        pieces = self._split(text)
        if pieces is None:
            return len(self._encode(text)) if text else 0
        get = self._counts.get
        total = 0
        for piece in pieces:
            known = get(hash(piece))
            total += self._count_piece(piece) if known is None else known
        return total

    def _count_piece(self, piece: str) -> int:
        ids = self._pieces.get(piece)
        size = len(self._encode(piece)) if ids is None else len(ids)
        if self._counted + size > self._max_tokens:
            self._counts.clear()
            self._counted = 0
        self._counts[hash(piece)] = size
        self._counted += size
        return size

    def _split(self, text: str) -> list[str] | None:
        """The pieces of ``text`` whose ids are memoized (each part with the line feed it was cut at),
        or None for a text encoded whole (:meth:`ids`'s rule)."""
        if len(text) < self._min_chars or "\n" not in text:
            return None
        parts = _CUTS.split(text)
        if len(parts) == 1:
            return None
        last = parts.pop()
        pieces = list(map(operator.add, parts, repeat("\n")))
        if last:
            pieces.append(last)
        return pieces

    def export(self, texts: Sequence[str]) -> tuple[EncodedTexts, list[array[int]]]:
        """The ids of ``texts`` piece by piece (for :meth:`adopt`), and each text's ids (as :meth:`ids`)."""
        out, sizes, whole = array("I"), array("I"), []
        get = self._pieces.get
        for text in texts:
            pieces = self._split(text)
            if pieces is None:
                found = array("I", self._encode(text)) if text else array("I")
                sizes.append(len(found))
                out.extend(found)
                whole.append(found)
                continue
            ids = array("I")
            for piece in pieces:
                known = get(piece)
                piece_ids = self._add(piece) if known is None else known
                sizes.append(len(piece_ids))
                ids.extend(piece_ids)
            out.extend(ids)
            whole.append(ids)
        encoded = EncodedTexts(self._encoding, texts_digest(texts), out.tobytes(), sizes.tobytes())
        return encoded, whole

    def adopt(self, texts: Sequence[str], encoded: EncodedTexts) -> list[array[int]]:
        """Take the ids :meth:`export` gave for ``texts`` (the same texts, in the same order; their
        pieces join this encoder's memo) and return each text's ids. Ids of another encoding, or
        that do not fit the texts (another digest, or pieces), are not taken: the texts they miss are
        left out of the result (encoded when asked for, as any text)."""
        if encoded.encoding != self._encoding or len(encoded.ids) % 4 or len(encoded.sizes) % 4:
            return []
        if encoded.digest != texts_digest(texts):
            return []
        ids, sizes = array("I"), array("I")
        ids.frombytes(encoded.ids)
        sizes.frombytes(encoded.sizes)
        if sum(sizes) != len(ids):
            return []
        out: list[array[int]] = []
        at = position = 0
        for text in texts:
            pieces = self._split(text)
            count = 1 if pieces is None else len(pieces)
            if at + count > len(sizes):
                break
            end = position + sum(sizes[at : at + count])
            if pieces is not None:
                start = position
                for piece, size in zip(pieces, sizes[at : at + count], strict=True):
                    if piece not in self._pieces:
                        self._keep(piece, ids[start : start + size])
                    start += size
            out.append(ids[position:end])
            at, position = at + count, end
        return out

    def _add(self, piece: str) -> array[int]:
        return self._keep(piece, array("I", self._encode(piece)))

    def _keep(self, piece: str, ids: array[int]) -> array[int]:
        if self._held + len(ids) > self._max_tokens:
            self._pieces.clear()
            self._held = 0
        self._pieces[piece] = ids
        self._held += len(ids)
        return ids


def remember(memo: dict[_K, _V], key: _K, value: _V, size: int) -> _V:
    """``memo[key] = value`` in a memo of at most ``size`` entries, emptied when full (a plain dict
    costs a fraction of an LRU's bookkeeping per lookup; a counter's memos rarely fill)."""
    if len(memo) >= size:
        memo.clear()
    memo[key] = value
    return value


class TokenCounter:
    """Counts tokens of texts, messages and prompts; memoizes per text and per message (at most
    ``cache_size`` of each, emptied when full) and per piece of text (:class:`PieceEncoder`)."""

    def __init__(self, encoding: str = "o200k_base", cache_size: int = 200_000) -> None:
        if encoding not in ENCODINGS:
            raise ConfigurationError(f"unknown tokenizer {encoding!r}; choose one of {', '.join(ENCODINGS)}")
        self.encoding_name = encoding
        self._cache_size = cache_size
        self._cache: dict[str, int] = {}
        self._messages: dict[Message, int] = {}
        self._pieces = PieceEncoder(encoding)

    @classmethod
    def for_model(cls, model: str) -> TokenCounter:
        return cls(encoding_for_model(model))

    def encode(self, text: str) -> list[int]:
        return self._token_ids(text).tolist()

    def _token_ids(self, text: str) -> array[int]:
        """The token ids of ``text`` (subclasses may return a memoized array: do not mutate it)."""
        return self._pieces.ids(text)

    def count_text(self, text: str) -> int:
        return self._remembered(text, self._count_new)

    def _count_new(self, text: str) -> int:
        """Tokens of a text not in the memo (subclasses that keep ids count them instead)."""
        return self._pieces.count(text)

    def count_part(self, text: str) -> int:
        """:meth:`count_text` of a part of a message's text that is never sent alone (a condensed
        note's line, a note's sections): counted and remembered, its ids not kept whole."""
        return self._remembered(text, self._count_part)

    def _remembered(self, text: str, count: Callable[[str], int]) -> int:
        """The memo's count of ``text``, else ``count(text)``, remembered."""
        if not text:
            return 0
        cached = self._cache.get(text)
        if cached is None:
            cached = remember(self._cache, text, count(text), self._cache_size)
        return cached

    def _count_part(self, text: str) -> int:
        """Tokens of a part not in the memo: :meth:`_count_new` here (a subclass that keeps the ids
        of whole texts counts a part from its pieces' ids)."""
        return self._count_new(text)

    def export(self, texts: Sequence[str]) -> EncodedTexts:
        """The ids of ``texts`` for another counter of this encoding to adopt
        (:meth:`PieceEncoder.export`); their counts are memoized here too."""
        encoded, ids = self._pieces.export(texts)
        for text, found in zip(texts, ids, strict=True):
            remember(self._cache, text, len(found), self._cache_size)
        return encoded

    def count_message(self, message: Message | Mapping[str, Any]) -> int:
        """Tokens of one message with its framing; frozen messages are memoized whole."""
        if isinstance(message, Message):
            cached = self._messages.get(message)
            if cached is None:
                cached = remember(
                    self._messages, message, self._count_message(message.to_openai()), self._cache_size
                )
            return cached
        return self._count_message(message)

    def _count_message(self, data: Mapping[str, Any]) -> int:
        total = MESSAGE_OVERHEAD + self.count_text(str(data.get("content") or ""))
        for call in data.get("tool_calls") or ():
            function = call.get("function", {})
            total += self.count_text(str(function.get("name", ""))) + self.count_text(
                str(function.get("arguments", ""))
            )
            total += MESSAGE_OVERHEAD
        if data.get("role") == "tool":
            total += self.count_text(str(data.get("tool_call_id") or ""))
        return total

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        if not tools:
            return 0
        return self.count_text(orjson.dumps(list(tools), option=orjson.OPT_SORT_KEYS).decode())

    def count_prompt(
        self, messages: Iterable[Message | Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> int:
        """Tokens of a whole request: messages, per-message overhead, tool schemas."""
        return PROMPT_OVERHEAD + sum(self.count_message(m) for m in messages) + self.count_tools(tools)


@dataclass
class Calibration:
    """Provider-vs-local calibration: ``factor = provider_prompt_tokens / local_count``.

    The next prompt is estimated as ``max(provider_last, local_now * factor)``,
    the calibrated-heuristic rule: the provider's last count is a floor for a
    history that only grows, the scaled local count tracks what was added.
    The floor is dropped when the local count shrank since the last observation
    (a summary landed, a compaction ran): the prompt really got smaller, and
    keeping the old floor would re-trigger compaction on a prompt that fits.

    A provider's figures are not trusted blindly: the factor is clamped to
    :data:`CALIBRATION_BOUNDS` (and the floor with it), and an estimate is never
    below the local count, so a provider that under-reports cannot make an
    oversized prompt look small enough to send.
    """

    factor: float = 1.0
    provider_last: int = 0
    local_last: int = 0
    observations: int = 0

    def observe(self, provider_prompt_tokens: int | None, local_count: int) -> None:
        if not provider_prompt_tokens or local_count <= 0:
            return
        low, high = CALIBRATION_BOUNDS
        self.factor = min(max(provider_prompt_tokens / local_count, low), high)
        self.provider_last = min(provider_prompt_tokens, round(local_count * high))
        self.local_last = local_count
        self.observations += 1

    def estimate(self, local_now: int) -> int:
        scaled = max(local_now, round(local_now * self.factor))
        return scaled if local_now < self.local_last else max(self.provider_last, scaled)
