"""Deduplication: identical read-only calls served from a cache; repeated outputs shown as pointers.

* ``_step``: the :class:`Dedup` step and its per-run runtime (serves calls at the dispatch,
  remembers results, points repeated outputs to their twin in the prompt);
* ``_cache``: :class:`DedupCache`, the bounded LRU of read-only results by canonical call;
* ``_duplicates``: :class:`DuplicateIndex`, which outputs repeat an earlier identical one.
"""
