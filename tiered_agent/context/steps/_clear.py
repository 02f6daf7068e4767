"""Clear: Anthropic-style context editing, past a token count all tool outputs but the last N cleared.

After Anthropic's ``clear_tool_uses`` context edit: nothing happens until the
prompt as it stands when this step runs (after the steps before it, e.g. a
truncation) exceeds ``trigger_tokens`` (messages only, no tool schemas); then
every tool output but the last ``keep`` is replaced by a placeholder, by the
mechanism of :mod:`._mask`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..._messages import Message
from ..._tokens import PROMPT_OVERHEAD, TokenCounter
from .._step import Run, Step, StepRuntime, require
from ..pipeline._draft import BuildContext, Draft
from ..pipeline._tally import PromptTally
from ._mask import OlderOutputs, hide_older_outputs

__all__ = ["Clear", "ClearRuntime", "prompt_tokens"]


@dataclass(frozen=True, slots=True)
class Clear(Step):
    """Past ``trigger_tokens``, clear every tool output but the last ``keep``."""

    kind: ClassVar[str] = "clear"
    trigger_tokens: int = 100_000
    keep: int = 3

    def __post_init__(self) -> None:
        ok = isinstance(self.trigger_tokens, int) and self.trigger_tokens >= 1
        require(ok, f"Clear.trigger_tokens must be a positive integer, got {self.trigger_tokens!r}")
        require(isinstance(self.keep, int) and self.keep >= 0, f"Clear.keep must be >= 0, got {self.keep!r}")

    def start(self, run: Run) -> ClearRuntime:
        return ClearRuntime(self, run.counter)

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        return self.clear(draft, context, prompt_tokens(draft.messages, context.counter))

    def clear(
        self, draft: Draft, context: BuildContext, tokens: int, outputs: OlderOutputs | None = None
    ) -> Draft:
        """The draft, its outputs cleared when the prompt so far (``tokens``) is past the trigger
        (``outputs``: what a runtime keeps of the previous drafts)."""
        if tokens <= self.trigger_tokens:
            return draft
        return hide_older_outputs(
            draft, keep=self.keep, retrieval=context.retrieval, by=self.kind, outputs=outputs
        )


class ClearRuntime(StepRuntime):
    """Clear over one run: the prompt so far is counted from where it differs from the last one."""

    def __init__(self, step: Clear, counter: TokenCounter) -> None:
        super().__init__(step)
        self.settings = step
        self.tally = PromptTally(counter)
        self.outputs = OlderOutputs()

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        tokens = PROMPT_OVERHEAD + self.tally.messages_tokens(draft.messages)
        return self.settings.clear(draft, context, tokens, self.outputs)


def prompt_tokens(messages: Sequence[Message], counter: TokenCounter) -> int:
    """``counter.count_prompt(messages)``: the messages' tokens and the prompt's framing."""
    return PROMPT_OVERHEAD + sum(map(counter.count_message, messages))
