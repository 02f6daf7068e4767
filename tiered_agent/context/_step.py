"""What every step of a context policy is: a small frozen value with one job.

A step is a frozen dataclass (validated on construction, so a bad value fails
where it is written) with a ``kind`` (its name in the bench JSON and the trace)
and, for steps that reshape the prompt, :meth:`Step.apply`: a pure function of
the history (in the :class:`~.._draft.BuildContext`) and the draft the earlier
steps left; and :meth:`Step.finish`, applied after every step's ``apply``, for
a rewrite that must hold in the prompt as sent. Steps that act elsewhere (the
dedup cache at tool dispatch, the timing of summaries and compaction in
:class:`~.._manager.ContextManager`) leave the draft unchanged.
"""

from __future__ import annotations

import dataclasses
from typing import Any, ClassVar

from .._errors import ConfigurationError
from .pipeline._draft import BuildContext, Draft

__all__ = ["Step", "require"]


def require(condition: bool, message: str) -> None:
    """Raise :class:`ConfigurationError` with ``message`` (one sentence) unless ``condition``."""
    if not condition:
        raise ConfigurationError(message)


class Step:
    """Base of the policy steps (subclasses are frozen, slotted dataclasses)."""

    __slots__ = ()
    kind: ClassVar[str]
    # Whether the step can hide part of the history by itself; a policy registers
    # context_retrieve only when one of its steps can.
    hides: ClassVar[bool] = True

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        """Reshape the prompt; the default leaves it unchanged."""
        return draft

    def finish(self, draft: Draft, context: BuildContext) -> Draft:
        """Rewrite the prompt once every step has applied (in step order); the default leaves it.

        For a decision that depends on the final prompt (``Dedup``: a pointer to an output only
        while that output is shown verbatim), so that no later step can make it wrong.
        """
        return draft

    def to_dict(self) -> dict[str, Any]:
        """``{"step": kind, <field>: <value>, ...}`` (JSON-ready)."""
        assert dataclasses.is_dataclass(self)
        return {"step": self.kind} | {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
