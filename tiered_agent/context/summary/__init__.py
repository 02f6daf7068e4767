"""Summaries: when to summarize, the run's summary state, who writes them; the working memory inside.

* ``_summarize``: the :class:`Summarize` step (a rolling summary every N iterations) and its runtime;
* ``_compact``: the :class:`Compact` step (past a share of the window, summarize now) and its runtime;
* ``_state``: :class:`Summaries`, the run's summary state (latest summary, queue, compaction);
* ``_worker``: :class:`SmartSummarizer`, the background FIFO worker over frozen snapshots;
* ``_summarizer``: the :class:`Summarizer` protocol and the deterministic :class:`DigestSummarizer`;
* ``_llm``: :class:`LLMSummarizer`, a litellm model riding the agent's own cached prompt;
* ``_digest``: :func:`digest`, the working memory of a range as a :class:`Summary`;
* ``memory/``: the working memory itself, a left fold over the history (its parsers of calls,
  shell commands, outputs and code, and its renderer).
"""
