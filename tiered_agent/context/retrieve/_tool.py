"""``context_retrieve``: the model's way back to anything the context tiers hid.

Truncation, windowing, masking and summaries hide parts of the history from
the prompt; the run's full history still holds them. :func:`retrieve` selects
items from it (tool outputs, and for iteration filters the messages too) by
iteration, call id, tool name and/or topic, returns their original content
under a header per item, and pages the result by a token budget.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..._errors import ToolError
from ..._messages import Message
from ..._tokens import TokenCounter
from ..._tools import Tool
from .._names import RETRIEVE_TOOL_NAME

__all__ = ["RetrievalResult", "RetrievedItem", "make_retrieve_tool", "parse_iterations", "retrieve"]

_RANGE = re.compile(r"^\s*(\d+)\s*(?:(?:-|\.\.)\s*(\d+)\s*)?$")
_MIN_PIECE_TOKENS = 8
_SEPARATOR_TOKENS = 1  # the blank line between items
_RECENT_IDS = 5
_SPLIT_PRECISION_CHARS = 16
_GUESS_FILL = 0.9  # aim a little under the page so that most guesses fit
_ECHO_CHARS = 200

# Sent with every request once something is hidden: every token here is paid at each call.
RETRIEVE_DESCRIPTION = (
    "Get the full text of earlier outputs or iterations that were shortened, omitted or summarized. "
    "Give at least one filter; filters combine. Results are paged."
)


@dataclass(frozen=True, slots=True)
class RetrievedItem:
    """One history item (or one part of a split item) as shown on a page."""

    iteration: int
    kind: str  # the tool name for tool outputs; "assistant" / "user" for messages
    tool_call_id: str | None
    content: str  # the original content (this part of it, for a split item)
    score: int = 0  # topic occurrences (0 without a topic)
    part: tuple[int, int] | None = None  # (k, n) when the item is split across pages

    @property
    def header(self) -> str:
        fields = [f"iteration {self.iteration}", self.kind]
        if self.tool_call_id:
            fields.append(self.tool_call_id)
        if self.part is not None:
            fields.append(f"part {self.part[0]}/{self.part[1]}")
        return f"--- {' | '.join(fields)} ---"


@dataclass(frozen=True, slots=True)
class RetrievalResult:
    """A page of retrieved history: ``text`` goes back to the model."""

    text: str
    matched: int  # items matching the filters (before paging)
    page: int
    pages: int
    items: tuple[RetrievedItem, ...]  # the items (or parts) on this page


@dataclass(frozen=True, slots=True)
class _Candidate:
    item: RetrievedItem
    search_text: str  # lowercased content (+ call arguments) for topic ranking
    order: int


# --------------------------------------------------------------------------- argument parsing
def parse_iterations(value: int | str) -> tuple[int, int]:
    """``7`` / ``"7"`` -> (7, 7); ``"3-7"`` / ``"3..7"`` -> (3, 7). Raises :class:`ToolError`."""
    if isinstance(value, bool):
        raise ToolError(f'iteration must be a number like 7 or a range like "3-7", got {value!r}')
    if isinstance(value, int):
        if value < 0:
            raise ToolError(f"iteration must be >= 0, got {value}")
        return value, value
    match = _RANGE.match(str(value))
    if match is None:
        raise ToolError(f'iteration must be a number like 7 or a range like "3-7", got {value!r}')
    low = int(match.group(1))
    high = int(match.group(2)) if match.group(2) is not None else low
    if high < low:
        raise ToolError(f"iteration range {value!r} is reversed: write the lower iteration first")
    return low, high


def _parse_page(page: Any) -> int:
    if isinstance(page, bool):
        raise ToolError(f"page must be an integer >= 1, got {page!r}")
    try:
        number = int(page)
    except (TypeError, ValueError):
        raise ToolError(f"page must be an integer >= 1, got {page!r}") from None
    if number < 1:
        raise ToolError(f"page must be >= 1, got {number}")
    return number


def _keywords(topic: str) -> list[str]:
    words = [word.lower() for word in re.split(r"[\s,;]+", topic) if word]
    if not words:
        raise ToolError("topic is empty: give one or more keywords")
    return list(dict.fromkeys(words))


# --------------------------------------------------------------------------- candidates
def _call_names(history: Sequence[Message]) -> dict[str, tuple[str, str]]:
    """tool_call_id -> (tool name, raw arguments) from the assistant messages."""
    calls: dict[str, tuple[str, str]] = {}
    for message in history:
        for call in message.tool_calls:
            calls[call.id] = (call.name, call.arguments)
    return calls


def _message_content(message: Message) -> str:
    lines = [message.text] if message.text else []
    lines.extend(f"[call {call.name} ({call.id}) {call.arguments}]" for call in message.tool_calls)
    return "\n".join(lines)


def _candidates(history: Sequence[Message], with_messages: bool) -> list[_Candidate]:
    calls = _call_names(history)
    found: list[_Candidate] = []
    for order, message in enumerate(history):
        if message.role == "tool":
            name, arguments = calls.get(message.tool_call_id or "", (message.name or "tool", ""))
            name = message.name or name
            if name == RETRIEVE_TOOL_NAME:
                continue  # never retrieve retrievals
            item = RetrievedItem(message.iteration, name, message.tool_call_id, message.text)
            found.append(_Candidate(item, f"{arguments}\n{message.text}".lower(), order))
        elif with_messages and message.role in ("assistant", "user"):
            content = _message_content(message)
            item = RetrievedItem(message.iteration, message.role, None, content)
            found.append(_Candidate(item, content.lower(), order))
    return found


def _select(
    candidates: list[_Candidate],
    iterations: tuple[int, int] | None,
    tool_call_id: str | None,
    tool_name: str | None,
    keywords: list[str] | None,
) -> list[_Candidate]:
    selected: list[_Candidate] = []
    for candidate in candidates:
        item = candidate.item
        if iterations is not None and not iterations[0] <= item.iteration <= iterations[1]:
            continue
        if tool_call_id is not None and item.tool_call_id != tool_call_id:
            continue
        if tool_name is not None and item.kind.lower() != tool_name.lower():
            continue
        if keywords is None:
            selected.append(candidate)
            continue
        score = sum(candidate.search_text.count(word) for word in keywords)
        if score > 0:
            selected.append(_Candidate(_with(item, score=score), candidate.search_text, candidate.order))
    if keywords is not None:
        selected.sort(key=lambda c: (-c.item.score, c.item.iteration, c.order))
    return selected


def _with(item: RetrievedItem, **changes: Any) -> RetrievedItem:
    return dataclasses.replace(item, **changes)


# --------------------------------------------------------------------------- paging
@dataclass(frozen=True, slots=True)
class _Chunk:
    item: RetrievedItem
    tokens: int

    @property
    def text(self) -> str:
        return f"{self.item.header}\n{self.item.content}"


def _fit_end(text: str, start: int, limit: int, count: Callable[[str], int]) -> int:
    """The largest ``end`` with ``text[start:end]`` within ``limit`` tokens, cut after a nearby newline."""
    good, step = start, max(1, limit * 4)
    bad = len(text) + 1
    while good < len(text):  # gallop until the slice no longer fits
        probe = min(len(text), good + step)
        if count(text[start:probe]) > limit:
            bad = probe
            break
        good, step = probe, step * 2
    if good == len(text):
        return good
    while bad - good > (_SPLIT_PRECISION_CHARS if good - start > 64 else 1):  # binary search the boundary
        middle = (good + bad) // 2
        if count(text[start:middle]) <= limit:
            good = middle
        else:
            bad = middle
    return max(_cut(text, start, good), start + 1)


def _cut(text: str, start: int, end: int) -> int:
    """``end``, moved back to just after a newline in the second half of ``text[start:end]`` if any."""
    if end >= len(text):
        return len(text)
    newline = text.rfind("\n", start + (end - start) // 2, end)
    return newline + 1 if newline >= start else end


def _split(text: str, limit: int, count: Callable[[str], int], total_tokens: int) -> list[tuple[str, int]]:
    """Contiguous ``(piece, tokens)`` of at most ``limit`` tokens each, cut at line ends where possible.

    Each cut is guessed from the characters per token seen so far (the whole
    text's average at first, then the last piece's) and checked with one exact
    count; a wrong guess is rescaled once, then searched for. About two
    tokenizations of ``text`` in all.
    """
    chars_per_token = len(text) / max(1, total_tokens)
    pieces: list[tuple[str, int]] = []
    start = 0
    while start < len(text):
        end = _cut(text, start, start + max(1, int(limit * chars_per_token * _GUESS_FILL)))
        tokens = count(text[start:end])
        if tokens > limit:  # denser than guessed: rescale once from what was just measured
            end = _cut(text, start, start + max(1, int((end - start) * limit / tokens * _GUESS_FILL)))
            tokens = count(text[start:end])
        if tokens > limit:
            end = _fit_end(text, start, limit, count)
            tokens = count(text[start:end])
        pieces.append((text[start:end], tokens))
        chars_per_token = (end - start) / max(1, tokens)
        start = end
    return pieces


def _chunks(items: Sequence[RetrievedItem], counter: TokenCounter, page_tokens: int) -> list[_Chunk]:
    """One chunk per item, or several ``part k/n`` chunks for an item larger than a page."""

    def exact(text: str) -> int:  # uncached: split probes must not fill the counter's cache
        return len(counter.encode(text))

    chunks: list[_Chunk] = []
    for item in items:
        tokens = counter.count_text(item.header) + counter.count_text(item.content) + _SEPARATOR_TOKENS
        if tokens <= page_tokens:
            chunks.append(_Chunk(item, tokens))
            continue
        header_tokens = exact(_with(item, part=(999, 999)).header)  # the widest part header
        limit = max(_MIN_PIECE_TOKENS, page_tokens - header_tokens - _SEPARATOR_TOKENS - 1)
        pieces = _split(item.content, limit, exact, counter.count_text(item.content))
        for index, (piece, tokens) in enumerate(pieces, start=1):
            part = _with(item, content=piece, part=(index, len(pieces)))
            chunks.append(_Chunk(part, header_tokens + tokens + _SEPARATOR_TOKENS))
    return chunks


def _paginate(chunks: Sequence[_Chunk], page_tokens: int) -> list[list[_Chunk]]:
    pages: list[list[_Chunk]] = []
    used = 0
    for chunk in chunks:
        if pages and used + chunk.tokens <= page_tokens:
            pages[-1].append(chunk)
            used += chunk.tokens
        else:
            pages.append([chunk])
            used = chunk.tokens
    return pages


# --------------------------------------------------------------------------- rendering
def _describe(filters: dict[str, Any]) -> str:
    """The filters as the model gave them, each cut to _ECHO_CHARS: a miss never echoes a megabyte."""
    return ", ".join(f"{key}={_echo(value)}" for key, value in filters.items())


def _echo(value: Any) -> str:
    text = repr(value)
    if len(text) <= _ECHO_CHARS:
        return text
    return f"{text[:_ECHO_CHARS]}… [{len(text):,} chars]"


def _navigation(page: int, pages: int) -> str:
    if page < pages:
        return f"[page {page} of {pages}; call again with page={page + 1}]"
    return f"[page {page} of {pages}; last page]" if pages > 1 else f"[page {page} of {pages}]"


def _no_match(history: Sequence[Message], filters: dict[str, Any]) -> str:
    candidates = _candidates(history, with_messages=False)
    iterations = [m.iteration for m in history]
    lines = [f"No history item matched {_describe(filters)}."]
    if iterations:
        lines.append(f"History holds iterations {min(iterations)}-{max(iterations)}.")
    tools = Counter(c.item.kind for c in candidates)
    if tools:
        usage = ", ".join(
            f"{name} x{count}" for name, count in sorted(tools.items(), key=lambda kv: (-kv[1], kv[0]))
        )
        lines.append(f"Tool outputs: {usage}.")
        recent = [c.item for c in candidates if c.item.tool_call_id][-_RECENT_IDS:]
        listed = ", ".join(f"{i.tool_call_id} ({i.kind}, iteration {i.iteration})" for i in recent)
        lines.append(f"Most recent call ids: {listed}.")
    else:
        lines.append("There are no tool outputs yet.")
    return "\n".join(lines)


def retrieve(
    history: Sequence[Message],
    *,
    iteration: int | str | None = None,
    tool_call_id: str | None = None,
    tool_name: str | None = None,
    topic: str | None = None,
    page: int = 1,
    page_tokens: int = 4000,
    counter: TokenCounter,
) -> RetrievalResult:
    """One page of the history items matching every given filter (see the module docstring).

    Raises :class:`ToolError` (which goes back to the model) for invalid arguments.
    """
    filters = {
        key: value
        for key, value in (
            ("iteration", iteration),
            ("tool_call_id", tool_call_id),
            ("tool_name", tool_name),
            ("topic", topic),
        )
        if value is not None and value != ""
    }
    if not filters:
        raise ToolError(
            'context_retrieve needs at least one filter: iteration (7 or "3-7"), '
            "tool_call_id, tool_name or topic"
        )
    number = _parse_page(page)
    if page_tokens < 1:
        raise ToolError(f"page_tokens must be >= 1, got {page_tokens}")
    iterations = parse_iterations(filters["iteration"]) if "iteration" in filters else None
    keywords = _keywords(str(filters["topic"])) if "topic" in filters else None
    with_messages = iterations is not None and "tool_call_id" not in filters and "tool_name" not in filters
    selected = _select(
        _candidates(history, with_messages),
        iterations,
        tool_call_id or None,
        tool_name or None,
        keywords,
    )
    if not selected:
        return RetrievalResult(_no_match(history, filters), 0, 1, 1, ())
    pages = _paginate(_chunks([c.item for c in selected], counter, page_tokens), page_tokens)
    if number > len(pages):
        raise ToolError(
            f"page {number} does not exist: the {len(selected)} matching item(s) fill {len(pages)} "
            f"page(s); use page=1..{len(pages)}"
        )
    shown = pages[number - 1]
    head = f"{len(selected)} item(s) matched {_describe(filters)} (original, untruncated content)."
    text = "\n\n".join([head, *(chunk.text for chunk in shown), _navigation(number, len(pages))])
    return RetrievalResult(text, len(selected), number, len(pages), tuple(c.item for c in shown))


def make_retrieve_tool(
    history: Callable[[], Sequence[Message]],
    *,
    counter: TokenCounter,
    page_tokens: int = 4000,
    on_retrieval: Callable[[dict[str, Any]], None] | None = None,
) -> Tool:
    """The ``context_retrieve`` tool over ``history()``, the calling run's own full history."""

    async def context_retrieve(
        iteration: int | str | None = None,
        tool_call_id: str | None = None,
        tool_name: str | None = None,
        topic: str | None = None,
        page: int | str = 1,
    ) -> str:
        result = retrieve(
            history(),
            iteration=iteration,
            tool_call_id=tool_call_id,
            tool_name=tool_name,
            topic=topic,
            page=_parse_page(page),
            page_tokens=page_tokens,
            counter=counter,
        )
        if on_retrieval is not None:
            given = {
                "iteration": iteration,
                "tool_call_id": tool_call_id,
                "tool_name": tool_name,
                "topic": topic,
            }
            on_retrieval(
                {
                    "filters": {key: value for key, value in given.items() if value not in (None, "")},
                    "matched": result.matched,
                    "page": result.page,
                    "pages": result.pages,
                    "items": len(result.items),
                    "chars": len(result.text),
                }
            )
        return result.text

    return Tool(
        name=RETRIEVE_TOOL_NAME,
        description=RETRIEVE_DESCRIPTION,
        parameters=_PARAMETERS,
        fn=context_retrieve,
        read_only=True,
        timeout_s=None,
        internal=True,
    )


_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "iteration": {"type": "string", "description": '"7" or a range "3-7"'},
        "tool_call_id": {"type": "string"},
        "tool_name": {"type": "string"},
        "topic": {"type": "string", "description": "keywords, best matches first"},
        "page": {"type": "integer", "minimum": 1},
    },
    "required": [],
}
