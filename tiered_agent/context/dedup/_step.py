"""Dedup: an identical read-only call is served from a cache, and a repeated output points to its twin.

Two halves. At the tool dispatch the live loop and the replay share
(:mod:`.._dispatch`), this step gives the run a bounded dedup cache
(:class:`~.._dedup.DedupCache`): an identical call to a read-only tool is served
``[already called in iteration X ...]`` with the earlier result instead of
running again, and the history keeps that full served text (the trace,
``context_retrieve`` and resume read it).

In the prompt, a tool output that repeats an earlier one (a cache hit, or a
read-only call that ran again with a byte-identical output:
:mod:`.._duplicates`) is shown as a pointer while an identical output is shown
verbatim above it::

    [same output as iteration 12 (tool_call_id=call_7), shown above]

Once that output is hidden (cut, elided, masked, summarized), the duplicate is
served again in full (and later steps treat it like any output). The pointer
is set in :meth:`Dedup.finish`, after every step has applied, so no later step
can hide what it points to; and a prompt only changes there when the output it
pointed to was hidden, a rewrite of the prompt above it anyway, so the cached
prefix loses nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from typing import ClassVar

from ..._messages import Message
from .._step import Step, require
from ..pipeline._draft import BuildContext, Draft, with_content
from ._duplicates import OutputRef

__all__ = ["Dedup", "pointer_text"]


@dataclass(frozen=True, slots=True)
class Dedup(Step):
    """Serve identical read-only calls from an LRU cache of ``cache_size`` results; point repeated
    outputs to an identical one shown above."""

    kind: ClassVar[str] = "dedup"
    hides: ClassVar[bool] = False
    cache_size: int = 256

    def __post_init__(self) -> None:
        ok = isinstance(self.cache_size, int) and self.cache_size >= 1
        require(ok, f"Dedup.cache_size must be >= 1, got {self.cache_size!r}")

    def finish(self, draft: Draft, context: BuildContext) -> Draft:
        links = context.facts.duplicates
        if not links:
            return draft
        pointers = _pointers(draft, links)
        return draft.point(pointers) if pointers else draft


@lru_cache(maxsize=4096)
def pointer_text(iteration: int, tool_call_id: str) -> str:
    """``[same output as iteration 12 (tool_call_id=call_7), shown above]``."""
    return f"[same output as iteration {iteration} (tool_call_id={tool_call_id}), shown above]"


def _pointers(draft: Draft, links: Mapping[OutputRef, OutputRef]) -> dict[int, tuple[Message, int]]:
    """Position -> (pointer, chars spared), for each duplicate after an identical output shown verbatim.

    The first output of each group of identical ones that the prompt shows verbatim (the original,
    or, once it is hidden, the first repetition still shown whole) is what the later ones point to.
    """
    groups = set(links.values())
    shown: dict[OutputRef, OutputRef] = {}  # group -> the output shown verbatim that stands for it
    out: dict[int, tuple[Message, int]] = {}
    for index, original in enumerate(draft.originals):
        if original.role != "tool":
            continue
        ref = (original.iteration, original.tool_call_id or "")
        group = links.get(ref)
        if group is None and ref not in groups:
            continue
        current = draft.messages[index]
        verbatim = current is original or current == original
        anchor = shown.get(group or ref)
        if anchor is None:
            if verbatim:
                shown[group or ref] = ref
        elif group is not None and index not in draft.hidden:
            pointer = pointer_text(*anchor)
            if len(pointer) < len(current.text):
                out[index] = (with_content(original, pointer), len(original.text) - len(pointer))
    return out
