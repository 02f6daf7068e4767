"""Dedup: an identical read-only call is served from a cache, and a repeated output points to its twin.

The step's runtime (:class:`DedupRuntime`) owns the run's bounded cache
(:class:`~._cache.DedupCache`) and its :class:`~._duplicates.DuplicateIndex`. At the tool
dispatch the live loop and the replay share (:func:`~.._dispatch.dispatch`), it follows these
rules, in call order:

0. **A call reads** when its tool is read-only, or when it is a shell-like tool's call whose command
   only reads (``cat``, ``sed -n '40,80p'``, ``grep``, ``git diff`` ..., classified by a shell
   lexer, unknown is not a read: :mod:`._shell`; ``shell_reads=False`` turns that off). A shell
   read is filed under its tool, directory and command text.
1. **Internal tools** (``context_retrieve``) are never served from the cache nor remembered.
2. **A call that is not read-only** invalidates the cache where it stands: what it changes
   must be read fresh, so no later call of the batch is served from what was cached before it.
3. **A read-only call** is served from the cache when an identical call (same tool, canonical
   JSON arguments) was remembered in an *earlier* batch: ``[already called in iteration X
   ...]`` with the earlier result, and the history keeps that full text (the trace,
   ``context_retrieve`` and resume read it). Calls of one batch never serve each other: they
   run concurrently, so the second of two identical reads cannot see the first's result
   without waiting for it. Both execute, and neither is a dedup hit.
4. **Afterwards**, the successful results of the read-only calls that executed are remembered,
   in call order (of two identical calls, the later one), unless the batch held a call that is
   not read-only: a read that ran alongside a write may have seen either state.
5. **And** every successful read-only result (served or executed) goes to the duplicate index,
   which links an output identical to an earlier one of the same call to it.

In the prompt, a tool output that repeats an earlier one (a cache hit, or a read-only call that
ran again with a byte-identical output) is shown as a pointer while an identical output is shown
verbatim above it::

    [same output as iteration 12 (tool_call_id=call_7), shown above]

Once that output is hidden (cut, elided, masked, summarized), the duplicate is served again in
full (and later steps treat it like any output). The pointer is set in ``finish``, after every
step has applied, so no later step can hide what it points to; and a prompt only changes there
when the output it pointed to was hidden, a rewrite of the prompt above it anyway, so the cached
prefix loses nothing more.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import ClassVar

from ..._messages import Message
from ..._tools import ToolOutcome
from .._dispatch import Batch, Dispatched
from .._step import Run, Step, StepRuntime, require
from ..pipeline._draft import BuildContext, Draft, with_content
from ._cache import DedupCache, render_hit
from ._duplicates import DuplicateIndex, OutputRef
from ._shell import shell_read_key

__all__ = ["Dedup", "DedupRuntime", "pointer_text"]


@dataclass(frozen=True, slots=True)
class Dedup(Step):
    """Serve identical read-only calls from an LRU cache of ``cache_size`` results; point repeated
    outputs to an identical one shown above. ``shell_reads``: a shell-like tool's command that only
    reads counts as a read-only call."""

    kind: ClassVar[str] = "dedup"
    hides: ClassVar[bool] = False
    cache_size: int = 256
    shell_reads: bool = True

    def __post_init__(self) -> None:
        ok = isinstance(self.cache_size, int) and self.cache_size >= 1
        require(ok, f"Dedup.cache_size must be >= 1, got {self.cache_size!r}")
        require(
            isinstance(self.shell_reads, bool),
            f"Dedup.shell_reads must be true or false, got {self.shell_reads!r}",
        )

    def start(self, run: Run) -> DedupRuntime:
        return DedupRuntime(self)


@dataclass(frozen=True, slots=True)
class _Read:
    """A call that only reads, and the key its result is cached under (None: never cached)."""

    key: str | None


class DedupRuntime(StepRuntime):
    """The run's dedup cache and duplicate index, and the rules of the module docstring."""

    step: Dedup

    def __init__(self, step: Dedup) -> None:
        super().__init__(step)
        self.cache = DedupCache(step.cache_size)
        self.duplicates = DuplicateIndex()
        self._read: tuple[Batch, list[_Read | None]] | None = None  # the last batch's reads

    def reads(self, batch: Batch) -> list[_Read | None]:
        """Rule 0, per call in order: how it reads (None: it may write). Found once per batch: the
        dispatch asks at ``serve`` and again at ``observe``."""
        if self._read is not None and self._read[0] is batch:
            return self._read[1]
        out = self._reads(batch)
        self._read = (batch, out)
        return out

    def _reads(self, batch: Batch) -> list[_Read | None]:
        out: list[_Read | None] = []
        for call, kind in zip(batch.calls, batch.kinds, strict=True):
            if kind.internal:
                out.append(_Read(None))
            elif kind.read_only:
                out.append(_Read(DedupCache.key(call.name, call.arguments)))
            else:
                key = shell_read_key(call.name, call.arguments) if self.step.shell_reads else None
                out.append(_Read(key) if key is not None else None)
        return out

    def serve(self, batch: Batch) -> dict[int, Dispatched]:
        """Rules 1-3: the cached result of each call that has one."""
        served: dict[int, Dispatched] = {}
        cache = self.cache
        for index, (call, read) in enumerate(zip(batch.calls, self.reads(batch), strict=True)):
            if read is None:
                cache.invalidate()
                continue
            hit = None if read.key is None else cache.lookup(call.name, call.arguments, key=read.key)
            if hit is not None:
                outcome = ToolOutcome(content=render_hit(hit), is_error=False)
                served[index] = Dispatched(call, outcome, dedup_of=hit.tool_call_id, repeats=hit.content)
        return served

    def observe(self, batch: Batch, results: Sequence[Dispatched]) -> None:
        """Rules 4 and 5: remember the executed reads of a batch without writes; index every read."""
        reads = self.reads(batch)
        done = [
            (r, read)
            for r, read in zip(results, reads, strict=True)
            if read is not None and read.key is not None
        ]
        if all(read is not None for read in reads):
            for result, read in done:
                if result.dedup_of is None and not result.outcome.is_error:
                    call = result.call
                    self.cache.store(
                        call.name,
                        call.arguments,
                        batch.iteration,
                        call.id,
                        result.outcome.content,
                        key=read.key,
                    )
        indexed = [
            (r.call.id, read.key, r.outcome.content if r.repeats is None else r.repeats)
            for r, read in done
            if not r.outcome.is_error
        ]
        self.duplicates.observe(batch.iteration, indexed)

    def finish(self, draft: Draft, context: BuildContext) -> Draft:
        links = self.duplicates.links
        if not links:
            return draft
        pointers = _pointers(draft, links)
        return draft.point(pointers, self.step.kind) if pointers else draft


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
