"""Tidy: what a later call re-sends that nobody needs, taken out losslessly as each output arrives.

Two shapes of text recur in real sessions (Claude Code, Codex) without telling the model anything
new, and both are recognised by their structure alone, never by a tool's or a file's name:

- **Padded line numbers.** A line-numbered listing (``cat -n``, Claude Code's ``Read``) pads each
  number to a fixed width: ``     1→package main`` or ``    12\\tdef f():``. The padding says
  nothing (the number and the text after the separator are the line); ``1→package main`` is the
  same line. Only the spaces before a number followed by ``→`` or a tab at the start of a line are
  dropped (``numbers=True``); every other byte stays.
- **Repeated tagged blocks.** A block ``<name>...</name>`` of at least ``min_block_chars`` chars
  (a harness's ``<system-reminder>`` appended to every file read, an ``<environment_context>``)
  that is byte for byte a block the prompt already shows above is replaced by one line naming where
  it is shown: ``[same <system-reminder> as iteration 3 (tool_call_id=toolu_1), shown above]``
  (``repeated_blocks=True``). Like ``Dedup``'s pointers it points to text the prompt shows verbatim,
  so nothing is hidden; the output whole stays in the history (``context_retrieve`` returns it).
- **Repeated user messages.** A later ``user`` message of at least ``min_quote_chars`` chars that is
  word for word a ``user`` message (or a block) the prompt already shows (a harness's reminder sent again:
  mini-swe-agent's "Please always provide EXACTLY ONE action ...") becomes one line
  ``[same message as iteration 9, shown above]`` (``quoted_lines=True``); a part of one is pointed
  to by the next rule, as in an output.

**Never under the cache's minimum.** A provider caches a prompt only from its minimum size on
(OpenAI 1,024 tokens): a message is tidied only when the prompt through it, tidied, still reaches
that minimum (the run's cache terms, less the tokens a replayed log sends before its history), so
every prompt holding a tidied message is cacheable and a prompt ``full`` would have cached never
falls under the minimum because of Tidy (a 6-call OpenHands run cost 15.7% more than ``full``:
its 4th prompt went from 1,046 to 1,022 tokens and the 5th read nothing). ``cache_floor=False``:
tidy from the first message.

Only tool outputs and the user's later messages shown verbatim are tidied (an output another step
cut, aged, hid or pointed keeps that form), in ``finish``, once every step has applied: a block
points only to text shown in the prompt as sent. A tidied message is a pure function of itself and
of what the prompt shows above it, so it is fixed when it arrives; it changes only when what it
points to is hidden (an aging epoch, which re-sends everything after it anyway). Arbitrary text
fails open: unmatched or nested tags pair as a stack would (one pass, no backtracking), and a
message whose text is not a string is left as it is.
"""

from __future__ import annotations

import operator
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from ..._messages import Message
from .._memo import run_memo
from .._step import Run, Step, StepRuntime, require
from ..aging._breakeven import CacheTerms
from ..pipeline._draft import BuildContext, Draft, with_content
from ._quotes import LISTING_NUMBER, LineIndex, index_message, point_quotes

__all__ = ["Tidy", "TidyRuntime", "blocks_of", "unpad_numbers"]

# A number padded with spaces at the start of a line, then the listing's separator (→ or a tab).
_PADDED = re.compile(r"^ +(?=" + LISTING_NUMBER + ")", re.MULTILINE)
# An opening or closing tag of a tagged block (names of at most 40 chars: no backtracking over text).
_TAG = re.compile(r"<(/?)([A-Za-z][\w-]{0,39})>")

Block = tuple[int, int, str]  # start, end (past the closing tag), the tag's name


@run_memo(16_384)
def unpad_numbers(text: str) -> str:
    """``text`` with the spaces before each line's leading number and its ``→`` or tab removed."""
    return _PADDED.sub("", text) if " " in text else text


@run_memo(16_384)
def blocks_of(text: str) -> tuple[Block, ...]:
    """Every tagged block of ``text`` (``<name>`` ... the next ``</name>`` that closes it, nested
    blocks included), by start; one pass over the tags, each closing tag pairing with the latest
    unclosed opening tag of its name."""
    if "</" not in text:
        return ()
    open_at: dict[str, list[int]] = {}
    found: list[Block] = []
    for match in _TAG.finditer(text):
        closing, name = match.group(1), match.group(2)
        if not closing:
            open_at.setdefault(name, []).append(match.start())
        elif starts := open_at.get(name):
            found.append((starts.pop(), match.end(), name))
    found.sort()
    return tuple(found)


@run_memo(16_384)
def long_blocks(text: str, min_chars: int) -> tuple[tuple[int, int, str, str], ...]:
    """The blocks of ``text`` of at least ``min_chars`` chars: start, end, name, the block's text."""
    return tuple((s, e, name, text[s:e]) for s, e, name in blocks_of(text) if e - s >= min_chars)


@dataclass(frozen=True, slots=True)
class Tidy(Step):
    """Padded line numbers unpadded, repeated tagged blocks pointed to (the module docstring)."""

    kind: ClassVar[str] = "tidy"
    hides: ClassVar[bool] = False
    numbers: bool = True
    repeated_blocks: bool = True
    min_block_chars: int = 200
    quoted_lines: bool = True
    min_quote_lines: int = 4
    min_quote_chars: int = 300
    cache_floor: bool = True  # tidy no message while the prompt through it is under the cache's minimum

    def __post_init__(self) -> None:
        for name in ("min_block_chars", "min_quote_lines", "min_quote_chars"):
            value = getattr(self, name)
            ok = isinstance(value, int) and not isinstance(value, bool) and value >= 1
            require(ok, f"Tidy.{name} must be a positive integer, got {value!r}")

    def start(self, run: Run) -> TidyRuntime:
        return TidyRuntime(self, _floor(run) if self.cache_floor else 0)

    def finish(self, draft: Draft, context: BuildContext) -> Draft:
        return TidyRuntime(self).finish(draft, context)

    def tidy(self, text: str, seen: Mapping[str, str], lines: LineIndex, *, user: bool = False) -> str:
        """``text`` (a message shown verbatim; ``user``: a later user message) as tidied, after what
        the prompt shows above it."""
        if user and (where := self._repeated(text, seen)) is not None:
            return f"[same message as {where}, shown above]"
        base = unpad_numbers(text) if self.numbers else text
        if self.repeated_blocks and seen:
            base = _point_blocks(base, long_blocks(base, self.min_block_chars), seen)
        if self.quoted_lines:
            base = point_quotes(base, lines, self.min_quote_lines, self.min_quote_chars)
        return base

    def _repeated(self, text: str, seen: Mapping[str, str]) -> str | None:
        """Where the prompt shows a user message that is ``text`` word for word, if it does."""
        long = self.quoted_lines and len(text) >= self.min_quote_chars
        return seen.get(text) if long else None

    def remember(self, shown: Message, text: str, seen: dict[str, str], lines: LineIndex) -> None:
        """File what ``shown`` shows (its content as sent: ``text``)."""
        where = _where(shown)
        if shown.role == "user" and self.quoted_lines and len(text) >= self.min_quote_chars:
            seen.setdefault(text, where)  # a user message whole, filed like a block
        if self.repeated_blocks and text:
            for _, _, _, block in long_blocks(text, self.min_block_chars):
                seen.setdefault(block, where)
        if self.quoted_lines:
            index_message(lines, shown, text, where)


class TidyRuntime(StepRuntime):
    """Tidy over one run. A prompt is mostly the previous one plus new messages (between aging
    epochs it only grows), and what a message becomes depends only on it and on what the prompt
    shows above it: the runtime keeps, for the previous prompt, what each position became and the
    index of what it showed, and goes on from the first position that is not the same message (the
    same object, shown and original) as before; from the start when that is not past the end."""

    step: Tidy

    def __init__(self, step: Tidy, floor: int = 0) -> None:
        super().__init__(step)
        self._floor = floor  # tokens the prompt through a message must reach for it to be tidied
        self._through = 0  # tokens of the previous prompt's messages as shown, counted up to the floor
        self._shown: tuple[Message, ...] = ()  # the previous prompt's messages, as shown to Tidy
        self._originals: tuple[Message, ...] = ()
        self._touched: frozenset[int] = frozenset()  # positions another step cut, hid or pointed
        self._changed: dict[int, tuple[Message, int]] = {}  # position -> as tidied, the chars it spares
        self._seen: dict[str, str] = {}
        self._lines = LineIndex()

    def finish(self, draft: Draft, context: BuildContext) -> Draft:
        touched = frozenset(draft.hidden.keys() | draft.cuts.keys() | draft.pointers.keys())
        done = len(self._shown)
        if not _continues(self._shown, self._originals, self._touched, draft, touched):
            self._changed, self._seen, self._lines = {}, {}, LineIndex()
            done, self._through = 0, 0
        for index in range(done, len(draft.messages)):
            shown, original = draft.messages[index], draft.originals[index]
            new = self._tidied(shown, original, index not in touched, context)
            if new is not None:
                self._changed[index] = (new, len(shown.text) - len(new.text))
        self._shown, self._originals, self._touched = draft.messages, draft.originals, touched
        return draft.point(self._changed, self.step.kind) if self._changed else draft

    def _tidied(
        self, shown: Message, original: Message, untouched: bool, context: BuildContext
    ) -> Message | None:
        text = shown.content if isinstance(shown.content, str) else ""
        tidy = bool(text) and untouched and _tidiable(shown, original)
        new = self.step.tidy(text, self._seen, self._lines, user=shown.role == "user") if tidy else text
        result = with_content(shown, new) if new != text else None
        if self._through < self._floor:  # the prompt through it, as shown, so far under the minimum
            through = self._through + context.counter.count_message(result or shown)
            if through < self._floor and result is not None:  # tidied, the prompt would stay under it
                new, result = text, None
                through = self._through + context.counter.count_message(shown)
            self._through = through
        self.step.remember(shown, new, self._seen, self._lines)
        return result


def _floor(run: Run) -> int:
    """Local tokens the messages through a tidied one must reach: the run's minimum cacheable
    prefix less what a replayed log sends before its history (0: no minimum)."""
    terms = run.cache_terms if run.cache_terms is not None else CacheTerms.for_model(run.model)
    return max(terms.min_tokens - run.unrecorded_tokens, 0)


def _continues(
    shown: tuple[Message, ...],
    originals: tuple[Message, ...],
    touched: frozenset[int],
    draft: Draft,
    now_touched: frozenset[int],
) -> bool:
    """Whether ``draft`` starts with the previous prompt: every position of it the same objects (shown
    and original), in the same state (touched by another step or not)."""
    count = len(shown)
    if count > len(draft.messages):
        return False
    same = all(map(operator.is_, shown, draft.messages)) and all(
        map(operator.is_, originals, draft.originals)
    )
    return same and {i for i in now_touched if i < count} == touched


def _point_blocks(text: str, blocks: tuple[tuple[int, int, str, str], ...], seen: Mapping[str, str]) -> str:
    """``text`` with each of its ``blocks`` the prompt shows above replaced by a line naming where
    (a block inside one replaced goes with it)."""
    parts: list[str] = []
    done = 0
    for start, end, name, block in blocks:
        where = seen.get(block) if start >= done else None
        if where is not None:
            parts += [text[done:start], f"[same <{name}> as {where}, shown above]"]
            done = end
    return "".join(parts) + text[done:] if parts else text


def _tidiable(shown: Message, original: Message) -> bool:
    """A tool output or a later user message, shown verbatim."""
    if shown is not original and shown != original:
        return False
    return shown.role == "tool" or (shown.role == "user" and shown.iteration > 0)


def _where(message: Message) -> str:
    if message.role == "tool" and message.tool_call_id:
        return f"iteration {message.iteration} (tool_call_id={message.tool_call_id})"
    if message.role == "assistant":
        return f"iteration {message.iteration} (your message)"
    return f"iteration {message.iteration}"
