"""Dedup: an identical call to a read-only tool is served from a cache instead of running again.

This step does not touch the prompt: it gives the run a bounded dedup cache
(:class:`~.._dedup.DedupCache`), and the tool dispatch the live loop and the
replay share (:mod:`.._dispatch`) decides with it which calls of a reply are
served (``[already called in iteration X ...]`` with the earlier result), which
run, and what is remembered.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from ._base import Step, require

__all__ = ["Dedup"]


@dataclass(frozen=True, slots=True)
class Dedup(Step):
    """Serve identical read-only calls from an LRU cache of ``cache_size`` results."""

    kind: ClassVar[str] = "dedup"
    hides: ClassVar[bool] = False
    cache_size: int = 256

    def __post_init__(self) -> None:
        ok = isinstance(self.cache_size, int) and self.cache_size >= 1
        require(ok, f"Dedup.cache_size must be >= 1, got {self.cache_size!r}")
