"""Mask: observation masking, the last N tool outputs kept and older ones replaced by a placeholder.

After Lindenbauer et al., "The Complexity Trap" (masking keeps the agent's
reasoning and calls, and hides old observations). An output is replaced only
when the placeholder is shorter than it; outputs an earlier step already hid
still count among the last N. :func:`hide_older_outputs` is the mechanism,
shared with :class:`~._clear.Clear`.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import ClassVar

from ..._messages import Message
from .._memo import run_memo
from .._names import retrieve_call
from .._step import Run, Step, StepRuntime, require
from ..pipeline._draft import BuildContext, Draft, with_content
from ..pipeline._tally import common_prefix

__all__ = ["Mask", "MaskRuntime", "OlderOutputs", "hide_older_outputs", "output_placeholder"]


@dataclass(frozen=True, slots=True)
class Mask(Step):
    """Keep the last ``keep`` tool outputs; replace older ones with a placeholder."""

    kind: ClassVar[str] = "mask"
    keep: int = 10

    def __post_init__(self) -> None:
        require(isinstance(self.keep, int) and self.keep >= 1, f"Mask.keep must be >= 1, got {self.keep!r}")

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        return hide_older_outputs(draft, keep=self.keep, retrieval=context.retrieval, by=self.kind)

    def start(self, run: Run) -> MaskRuntime:
        return MaskRuntime(self)


class MaskRuntime(StepRuntime):
    """Mask over one run: each draft is read from the first message that changed (:class:`OlderOutputs`)."""

    step: Mask

    def __init__(self, step: Mask) -> None:
        super().__init__(step)
        self.outputs = OlderOutputs()

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        step = self.step
        return hide_older_outputs(
            draft, keep=step.keep, retrieval=context.retrieval, by=step.kind, outputs=self.outputs
        )


def output_placeholder(tool_call_id: str | None, *, retrieval: bool) -> str:
    """``[output omitted; context_retrieve(tool_call_id="call_7")]``, or ``[output omitted]``."""
    if retrieval and tool_call_id:
        return f"[output omitted; {retrieve_call('tool_call_id', tool_call_id)}]"
    return "[output omitted]"


def hide_older_outputs(
    draft: Draft, *, keep: int, retrieval: bool, by: str, outputs: OlderOutputs | None = None
) -> Draft:
    """Every tool output but the last ``keep`` behind a placeholder (when it is shorter); ``by``: the
    step's kind. ``outputs``: what a runtime keeps of the previous drafts (None: read afresh)."""
    placeholders = (outputs if outputs is not None else OlderOutputs()).placeholders(draft, keep, retrieval)
    return draft.hide(placeholders, by) if placeholders else draft


class OlderOutputs:
    """The tool outputs of a run's successive drafts and their placeholders, kept by a runtime: a
    draft is read from the first message that changed since the previous one, and an output's
    placeholder is made once (while the originals up to it stay the same)."""

    def __init__(self) -> None:
        self._messages: tuple[Message, ...] = ()
        self._tools: list[int] = []  # positions of the tool messages among _messages, ascending
        self._originals: tuple[Message, ...] = ()
        self._retrieval: bool | None = None
        # position -> its placeholder and the chars it hides (None: the placeholder is not shorter)
        self._placed: dict[int, tuple[Message, int] | None] = {}

    def placeholders(self, draft: Draft, keep: int, retrieval: bool) -> dict[int, tuple[Message, int]]:
        """Position -> (placeholder, chars it hides) for every tool output but the last ``keep``
        that no earlier step hid, newest first, where the placeholder is shorter."""
        messages, originals, hidden = draft.messages, draft.originals, draft.hidden
        shared = common_prefix(self._messages, messages)
        tools = self._tools[: bisect_left(self._tools, shared)]
        tools += [index for index in range(shared, len(messages)) if messages[index].role == "tool"]
        valid = common_prefix(self._originals, originals) if retrieval == self._retrieval else 0
        placed = self._placed
        if valid < len(self._originals):
            placed = {index: shown for index, shown in placed.items() if index < valid}
        older = tools[: max(len(tools) - keep, 0)]
        for index in [index for index in older if index not in placed]:  # those not seen yet
            replaced = _placeholder_message(originals[index], retrieval)
            placed[index] = None if replaced is None else (replaced, len(originals[index].text))
        self._messages, self._tools, self._originals = messages, tools, originals
        self._retrieval, self._placed = retrieval, placed
        return {
            index: shown
            for index in reversed(older)
            if (shown := placed[index]) is not None and index not in hidden
        }


@run_memo(4096)
def _placeholder_message(message: Message, retrieval: bool) -> Message | None:
    """The placeholder message, or None when the placeholder would not be shorter."""
    placeholder = output_placeholder(message.tool_call_id, retrieval=retrieval)
    return with_content(message, placeholder) if len(message.text) > len(placeholder) else None
