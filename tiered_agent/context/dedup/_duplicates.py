"""Which tool outputs repeat an earlier one: an identical output of an identical read-only call.

The dispatch (:mod:`._dispatch`) knows, for every result, whether its call is
read-only and whether the dedup cache served it; :class:`DuplicateIndex`
remembers, from that, each output that is byte for byte the output of an
earlier call to the same read-only tool with the same (canonical JSON)
arguments, and links it to the first of them. A cache hit repeats the output
it was served from (its history message adds only the ``[already called ...]``
line); a read-only call executed again (after a write invalidated the cache, in
the same batch, after an eviction) repeats it when its output did not change.

Only those are linked: the same text from another call, or from a call that is
not read-only, may mean something else. The links are facts about the history;
the :class:`~.steps.Dedup` step decides, prompt by prompt, which duplicates it
can show as a pointer to an identical output still shown above.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType

from ._cache import DedupCache

__all__ = ["DuplicateIndex", "OutputRef"]


# A tool output of the history: ``(iteration, tool_call_id)`` (a call id is unique within its
# iteration, not always across a run).
OutputRef = tuple[int, str]


class DuplicateIndex:
    """Links from repeated tool outputs to the first identical one, kept as the run goes."""

    def __init__(self) -> None:
        self._first: dict[tuple[str, str], OutputRef] = {}  # (call key, output) -> its first output
        self._links: dict[OutputRef, OutputRef] = {}
        self.links: Mapping[OutputRef, OutputRef] = MappingProxyType(self._links)

    def observe(self, iteration: int, results: Sequence[tuple[str, str, str, str]]) -> None:
        """One batch's read-only, successful results in call order: ``(call id, tool, arguments,
        output)``, the output of a cache hit without its ``[already called ...]`` line."""
        for call_id, tool, arguments, output in results:
            key = DedupCache.key(tool, arguments)
            if key is None:
                continue
            ref = (iteration, call_id)
            first = self._first.setdefault((key, output), ref)
            if first != ref:
                self._links[ref] = first
