"""Truncate: cut long tool outputs, keep the head (or head and tail), say how to get the rest.

The marker states exactly what was cut and, when ``context_retrieve`` is
registered, the call that returns the full output::

    [... 9,744 of 10,244 chars omitted; full output: context_retrieve(tool_call_id="call_7")]

An output is only cut when the result (kept text + marker) is shorter than the
original.

With ``defer_max_chars``, a cut waits while it would be the first retrieval call the
prompt names (``context_retrieve``'s schema not sent yet, ``retrieval_schema=
"when_shown"``, and no other step hid anything in this prompt): outputs are then cut
only past ``defer_max_chars``, and only when the cut spares at least as many chars as
the rest of the prompt holds. That first cut would change the tools, the start of
the prompt, so the whole prompt would be sent again uncached (at the cache write
premium where writes are billed): a rewrite that pays back only on a long run, while
the cut itself spares little. A cut that spares as much as the rest of the prompt
pays the rewrite back on the request itself (the spared tokens are never written:
``write x spared >= (write - read) x rest`` whatever the cache's prices), so even a
run that ends there does not cost more than carrying the output whole. The aging's
break-even rule weighs exactly that rewrite (and ages old outputs when it pays back);
once something is hidden, the schema is sent and cuts happen at arrival again, in the
prompt that rewrote anyway.

Results of ``context_retrieve`` itself are never cut (the model asked for exactly
that text), nor are outputs an earlier step already hid.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable
from dataclasses import dataclass
from typing import ClassVar, Literal

from ..._messages import Message
from ..._trace import Cut
from .._memo import run_memo
from .._names import RETRIEVE_TOOL_NAME, retrieve_call
from .._step import Run, Step, StepRuntime, require
from ..pipeline._draft import BuildContext, Draft, with_content
from ..pipeline._tally import common_prefix

__all__ = ["Truncate", "TruncationMode", "count_lines", "truncate_output"]

TruncationMode = Literal["head", "head_tail"]


@dataclass(frozen=True, slots=True)
class Truncate(Step):
    """Cut tool outputs longer than ``max_chars`` characters or ``max_lines`` lines.

    ``mode="head"`` keeps the start; ``"head_tail"`` keeps half of each budget at
    each end (the head gets the odd char or line). ``defer_max_chars``: the budget while
    a cut would be the first retrieval call the prompt names (the module docstring).
    """

    kind: ClassVar[str] = "truncate"
    max_chars: int | None = 500
    max_lines: int | None = None
    mode: TruncationMode = "head_tail"
    defer_max_chars: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_chars", "max_lines", "defer_max_chars"):
            value = getattr(self, name)
            ok = value is None or (isinstance(value, int) and value >= 1)
            require(ok, f"Truncate.{name} must be a positive integer or None, got {value!r}")
        require(
            self.max_chars is not None or self.max_lines is not None,
            "Truncate needs max_chars or max_lines",
        )
        require(
            self.mode in ("head", "head_tail"),
            f"Truncate.mode must be 'head' or 'head_tail', got {self.mode!r}",
        )

    def start(self, run: Run) -> TruncateRuntime:
        return TruncateRuntime(self)

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        originals = draft.originals
        waits = self.defers(draft, context)
        limits = self.limits(waits)
        found = (
            (index, *_truncate_message(message, *limits, self.mode, context.retrieval))
            for index, message in enumerate(originals)
            if self.may_cut(message)
        )
        return self.show_cuts(draft, found, waits)

    def limits(self, waits: bool) -> tuple[int | None, int | None]:
        """``(max_chars, max_lines)`` of a cut now (``waits``: while it would be the first retrieval
        call the prompt names)."""
        return (self.defer_max_chars, None) if waits else (self.max_chars, self.max_lines)

    def may_cut(self, message: Message) -> bool:
        """Whether ``message`` is an output this step may cut in some prompt (whatever the draft)."""
        # A text of at most this many chars has at most as many lines: it is never cut.
        uncut = min(limit for limit in (self.max_chars, self.max_lines) if limit is not None)
        content = message.content
        return (
            message.role == "tool"
            and content is not None
            and len(content) > uncut
            and message.name != RETRIEVE_TOOL_NAME
        )

    def show_cuts(self, draft: Draft, found: Iterable[tuple[int, Message, Cut | None]], waits: bool) -> Draft:
        """``draft`` with the cuts ``found`` (position, the output as cut, the cut; ascending) shown
        where the output is not hidden yet (and, while a cut ``waits``, where it pays back now)."""
        shown: dict[int, Message] = {}
        cuts: dict[int, Cut] = {}
        hidden = draft.hidden
        prompt_chars: int | None = None  # counted once a cut waits on it
        for index, kept, cut in found:
            if cut is None or index in hidden:
                continue
            if waits:
                prompt_chars = prompt_chars if prompt_chars is not None else _chars(draft.messages)
                if cut.original_chars - cut.kept_chars < prompt_chars - cut.original_chars:
                    continue  # the rewrite it starts would not pay back on this request
            shown[index] = kept
            cuts[index] = cut
        return draft.cut(shown, cuts, self.kind) if cuts else draft

    def defers(self, draft: Draft, context: BuildContext) -> bool:
        """Whether a cut would be the first retrieval call the prompt names (it waits then)."""
        return (
            self.defer_max_chars is not None
            and context.retrieval
            and not context.schema_sent
            and not draft.names_any_retrieval
        )


_Found = tuple[int, Message, Cut | None]  # a position, the output there as cut, the cut (None: kept)


class TruncateRuntime(StepRuntime):
    """Truncate over one run. The originals of a prompt are mostly the previous prompt's (the same
    objects), so the runtime keeps, with the originals it last read, the positions of the outputs it
    may cut and, under the step's own limits, their cuts: each prompt reads only the messages that
    changed since the previous one, and visits only the outputs that are cut."""

    step: Truncate

    def __init__(self, step: Truncate) -> None:
        super().__init__(step)
        self._scanned: tuple[Message, ...] = ()
        self._candidates: list[int] = []  # positions of the outputs it may cut, ascending
        self._cuts: list[_Found] = []  # those cut under the step's limits, ascending
        # The same cuts as the two mappings a draft takes (position -> the output as cut, the cut)
        self._shown: dict[int, Message] = {}
        self._cut_of: dict[int, Cut] = {}
        self._retrieval: bool | None = None  # the context the cuts were made for

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        step = self.step
        waits = step.defers(draft, context)
        self._update(draft.originals, context.retrieval)
        if not waits and not draft.hidden:  # every cut is shown: the kept mappings are the draft's
            return draft.cut(self._shown, self._cut_of, step.kind) if self._cut_of else draft
        if not waits:
            return step.show_cuts(draft, self._cuts, waits)
        limits, mode, originals = step.limits(waits), step.mode, draft.originals
        found = (
            (i, *_truncate_message(originals[i], *limits, mode, context.retrieval)) for i in self._candidates
        )
        return step.show_cuts(draft, found, waits)

    def _update(self, originals: tuple[Message, ...], retrieval: bool) -> None:
        """Bring the positions and cuts up to ``originals`` (from the first message that changed)."""
        step = self.step
        shared = common_prefix(self._scanned, originals) if retrieval == self._retrieval else 0
        candidates, cuts, shown, cut_of = self._candidates, self._cuts, self._shown, self._cut_of
        # What was derived past the shared prefix goes, in place (each is ascending by position)
        del candidates[bisect_left(candidates, shared) :]
        del cuts[bisect_left(cuts, shared, key=_position) :]
        while cut_of and next(reversed(cut_of)) >= shared:
            shown.popitem()
            cut_of.popitem()
        limits, mode = step.limits(False), step.mode
        try:
            for index in range(shared, len(originals)):
                message = originals[index]
                if step.may_cut(message):
                    candidates.append(index)
                    kept, cut = _truncate_message(message, *limits, mode, retrieval)
                    if cut is not None:
                        cuts.append((index, kept, cut))
                        shown[index], cut_of[index] = kept, cut
        except BaseException:  # what is kept no longer matches what was read: read afresh next time
            self._scanned, self._retrieval = (), None
            for derived in (candidates, cuts, shown, cut_of):
                derived.clear()
            raise
        self._scanned, self._retrieval = originals, retrieval


def _position(found: _Found) -> int:
    return found[0]


def _chars(messages: tuple[Message, ...]) -> int:
    """Chars of a prompt's messages: their text and their calls' arguments."""
    return sum(len(m.text) + sum(len(c.arguments) for c in m.tool_calls) for m in messages)


@run_memo(4096)
def _truncate_message(
    message: Message, max_chars: int | None, max_lines: int | None, mode: TruncationMode, retrieval: bool
) -> tuple[Message, Cut | None]:
    """The message as shown and its cut (memoized for the run: a history keeps the same message objects)."""
    shown, omitted = truncate_output(
        message.text,
        max_chars=max_chars,
        max_lines=max_lines,
        mode=mode,
        tool_call_id=message.tool_call_id,
        retrieval=retrieval,
    )
    if not omitted:
        return message, None
    cut = Cut(
        tool_call_id=message.tool_call_id or "",
        iteration=message.iteration,
        tool=message.name or "",
        original_chars=len(message.text),
        kept_chars=len(message.text) - omitted,
    )
    return with_content(message, shown), cut


# --------------------------------------------------------------------------- the text algorithm
def count_lines(text: str) -> int:
    """Lines of ``text``, separated by ``\\n`` (a trailing newline does not start a new line)."""
    if not text:
        return 0
    return text.count("\n") + (0 if text.endswith("\n") else 1)


def truncate_output(
    text: str,
    *,
    max_chars: int | None,
    max_lines: int | None = None,
    mode: TruncationMode = "head_tail",
    tool_call_id: str | None = None,
    retrieval: bool = True,
) -> tuple[str, int]:
    """``(shown_text, omitted_chars)``; ``(text, 0)`` when nothing is cut.

    ``head`` keeps the first ``max_chars`` chars (and at most ``max_lines``
    lines); ``head_tail`` keeps half of each budget at each end (the head gets
    the odd char / line). ``omitted_chars`` counts original chars not shown; the
    marker is not part of it. The retrieval hint is added when ``retrieval``
    is true and ``tool_call_id`` is known.
    """
    hint_id = tool_call_id if retrieval and tool_call_id else None
    return _truncate(text, max_chars, max_lines, mode, hint_id)


def _truncate(
    text: str, max_chars: int | None, max_lines: int | None, mode: TruncationMode, hint_id: str | None
) -> tuple[str, int]:
    total_lines = count_lines(text) if max_lines is not None else 0
    over_lines = max_lines is not None and total_lines > max_lines
    if not over_lines and (max_chars is None or len(text) <= max_chars):
        return text, 0
    if mode == "head":
        head_end, tail_start = _head_end(text, max_chars, max_lines), len(text)
    else:
        head_end = _head_end(text, _upper_half(max_chars), _upper_half(max_lines))
        tail_start = max(head_end, _tail_start(text, _lower_half(max_chars), _lower_half(max_lines)))
    head, tail = text[:head_end], text[tail_start:]
    omitted = tail_start - head_end
    lines = None
    if over_lines:
        lines = (total_lines - count_lines(head) - count_lines(tail), total_lines)
    shown = _join(head, _marker(omitted, len(text), lines, hint_id), tail)
    if len(shown) >= len(text):
        return text, 0
    return shown, omitted


def _upper_half(value: int | None) -> int | None:
    return None if value is None else (value + 1) // 2


def _lower_half(value: int | None) -> int | None:
    return None if value is None else value // 2


def _head_end(text: str, chars: int | None, lines: int | None) -> int:
    """End index of the first ``lines`` lines, capped at ``chars`` chars."""
    end = len(text)
    if lines is not None:
        pos = 0
        for _ in range(lines):
            found = text.find("\n", pos)
            if found < 0:
                pos = len(text)
                break
            pos = found + 1
        end = pos
    return end if chars is None else min(end, chars)


def _tail_start(text: str, chars: int | None, lines: int | None) -> int:
    """Start index of the last ``lines`` lines, capped at the last ``chars`` chars."""
    start = 0
    if lines is not None:
        if lines == 0:
            start = len(text)
        else:
            pos = len(text) - 1 if text.endswith("\n") else len(text)
            for _ in range(lines):
                pos = text.rfind("\n", 0, pos)
                if pos < 0:
                    break
            start = pos + 1
    return start if chars is None else max(start, len(text) - chars)


def _marker(omitted: int, total: int, lines: tuple[int, int] | None, hint_id: str | None) -> str:
    what = f"{omitted:,} of {total:,} chars"
    if lines is not None:
        what += f", {lines[0]:,} of {lines[1]:,} lines"
    hint = "" if hint_id is None else f"; full output: {retrieve_call('tool_call_id', hint_id)}"
    return f"[... {what} omitted{hint}]"


def _join(head: str, marker: str, tail: str) -> str:
    before = "\n" if head and not head.endswith("\n") else ""
    after = f"\n{tail}" if tail else ""
    return f"{head}{before}{marker}{after}"
