"""Aging: old iterations shown in a compressed form fixed when they aged, when it pays under caching.

* ``_step``: the :class:`Age` step (its settings) and its per-run runtime (decides, renders, records);
* ``_state``: the run's aging decisions, the break-even (ski-rental) rule over running token counts;
* ``_schedule``: :class:`AgingSchedule`, which iterations aged at which epoch (a frozen value);
* ``_breakeven``: :class:`CacheTerms`, the cache and price terms the rule decides by;
* ``_forms``: the aged form of an iteration (outputs, reasoning, calls) and the fixed note before them;
* ``_condense``: level 2, a chunk of old iterations as one line each;
* ``_novel``, ``_refs``, ``_reasoning``, ``_jsonform``: the text rules the forms are made of
  (novel lines, code references, shortened reasoning and arguments, JSON one field per line).
"""
