"""Tier 1 dedup: canonical keys, hits and misses, invalidation, LRU bound, rendering."""

from __future__ import annotations

import pytest

from tiered_agent.context.dedup._cache import DedupCache, DedupHit, render_hit


def test_key_is_canonical_json() -> None:
    assert DedupCache.key("read", '{"b":1,"a":2}') == DedupCache.key("read", '{"a": 2, "b": 1}')
    assert DedupCache.key("read", '{"x": {"d": 1, "c": [1, 2]}}') == DedupCache.key(
        "read", '{ "x" : {"c":[1,2],"d":1} }'
    )
    assert DedupCache.key("read", '{"a": 1}') != DedupCache.key("grep", '{"a": 1}')
    assert DedupCache.key("read", '{"a": 1}') != DedupCache.key("read", '{"a": 2}')
    assert DedupCache.key("read", '{"a": [1, 2]}') != DedupCache.key("read", '{"a": [2, 1]}')


@pytest.mark.parametrize("arguments", ["", "{", "not json", '{"a": }'])
def test_invalid_json_is_never_cached(arguments: str) -> None:
    cache = DedupCache(8)
    assert DedupCache.key("read", arguments) is None
    cache.store("read", arguments, 1, "c1", "content")
    assert len(cache) == 0
    assert cache.lookup("read", arguments) is None
    assert (cache.hits, cache.misses) == (0, 1)


def test_store_lookup_counts_hits_and_misses() -> None:
    cache = DedupCache(8)
    assert cache.lookup("read", '{"path": "a.py"}') is None
    cache.store("read", '{"path": "a.py"}', 3, "call_9", "print(1)\n")
    hit = cache.lookup("read", '{ "path" : "a.py" }')
    assert hit == DedupHit(iteration=3, tool_call_id="call_9", content="print(1)\n")
    assert cache.lookup("read", '{"path": "b.py"}') is None
    assert (cache.hits, cache.misses) == (1, 2)


def test_store_overwrites_with_the_newest_result() -> None:
    cache = DedupCache(8)
    cache.store("read", '{"p": 1}', 1, "c1", "old")
    cache.store("read", '{"p": 1}', 4, "c7", "new")
    assert cache.lookup("read", '{"p": 1}') == DedupHit(4, "c7", "new")
    assert len(cache) == 1


def test_invalidate_forgets_everything() -> None:
    cache = DedupCache(8)
    cache.store("read", '{"p": 1}', 1, "c1", "x")
    cache.store("grep", '{"q": "y"}', 1, "c2", "z")
    cache.invalidate()
    assert len(cache) == 0
    assert cache.lookup("read", '{"p": 1}') is None
    assert cache.lookup("grep", '{"q": "y"}') is None


def test_lru_bound_evicts_least_recently_used() -> None:
    cache = DedupCache(2)
    assert cache.maxsize == 2
    cache.store("read", '{"p": "a"}', 1, "ca", "A")
    cache.store("read", '{"p": "b"}', 1, "cb", "B")
    assert cache.lookup("read", '{"p": "a"}') is not None  # a is now the most recent
    cache.store("read", '{"p": "c"}', 2, "cc", "C")
    assert len(cache) == 2
    assert cache.lookup("read", '{"p": "b"}') is None
    assert cache.lookup("read", '{"p": "a"}') is not None
    assert cache.lookup("read", '{"p": "c"}') is not None


def test_invalid_size_is_refused() -> None:
    with pytest.raises(ValueError):
        DedupCache(0)


def test_render_hit_exact_text() -> None:
    hit = DedupHit(iteration=4, tool_call_id="call_7", content="line 1\nline 2")
    expected = (
        "[already called in iteration 4 (tool_call_id=call_7); same arguments, cached result:]\n"
        "line 1\nline 2"
    )
    assert render_hit(hit) == expected
    assert DedupCache(1).render_hit(hit) == expected
