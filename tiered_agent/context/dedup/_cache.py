"""Tier 1, deduplication: serve a repeated read-only call from a bounded cache.

The batch rules (which calls are looked up, which results are stored, when a
call invalidates the cache) live in :mod:`._dispatch`, shared by the agent loop
and the replay. Arguments are compared as
canonical JSON, so ``{"b": 1, "a": 2}`` and ``{"a": 2, "b": 1}`` are the same
call; arguments that are not valid JSON are never cached.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from cachetools import LRUCache

__all__ = ["DedupCache", "DedupHit", "render_hit"]


@dataclass(frozen=True, slots=True)
class DedupHit:
    """An earlier identical call and its result."""

    iteration: int
    tool_call_id: str
    content: str


def render_hit(hit: DedupHit) -> str:
    """The text the model receives instead of a fresh execution."""
    return (
        f"[already called in iteration {hit.iteration} (tool_call_id={hit.tool_call_id}); "
        f"same arguments, cached result:]\n{hit.content}"
    )


class DedupCache:
    """LRU cache of read-only tool results keyed by tool name + canonical arguments."""

    def __init__(self, maxsize: int = 256) -> None:
        if maxsize < 1:
            raise ValueError("DedupCache maxsize must be >= 1")
        self._cache: LRUCache[str, DedupHit] = LRUCache(maxsize=maxsize)
        self.hits = 0
        self.misses = 0

    @property
    def maxsize(self) -> int:
        return int(self._cache.maxsize)

    def __len__(self) -> int:
        return len(self._cache)

    @staticmethod
    def key(tool_name: str, arguments_json: str) -> str | None:
        """``name`` + canonical JSON (sorted keys, compact); None when the arguments are not JSON."""
        try:
            value = json.loads(arguments_json)
        except (ValueError, TypeError, RecursionError):
            return None
        canonical = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        return f"{tool_name}\x00{canonical}"

    def lookup(self, tool_name: str, arguments: str) -> DedupHit | None:
        """The cached result of an identical call, counting a hit or a miss."""
        key = self.key(tool_name, arguments)
        hit = self._cache.get(key) if key is not None else None
        if hit is None:
            self.misses += 1
        else:
            self.hits += 1
        return hit

    def store(self, tool_name: str, arguments: str, iteration: int, tool_call_id: str, content: str) -> None:
        """Remember a result (no-op for arguments that are not JSON)."""
        key = self.key(tool_name, arguments)
        if key is not None:
            self._cache[key] = DedupHit(iteration=iteration, tool_call_id=tool_call_id, content=content)

    def remembered(self) -> dict[str, DedupHit]:
        """A copy of what the cache holds, by key (for tests and debugging; counts nothing)."""
        return dict(self._cache.items())

    def invalidate(self) -> None:
        """Forget everything (a tool with side effects ran)."""
        self._cache.clear()

    def render_hit(self, hit: DedupHit) -> str:
        """Same as the module-level :func:`render_hit`."""
        return render_hit(hit)
