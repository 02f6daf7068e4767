"""The prompt pipeline: a draft of the prompt, the steps applied to it in order, what it records.

* ``_draft``: :class:`Draft` (the prompt while steps shape it: messages, what each stands for,
  what was hidden or cut) and :class:`BuildContext` (what every step may read);
* ``_build``: :func:`build_prompt` (the steps in order over the full history) and
  :func:`validate_pairs` (the provider rules every prompt keeps);
* ``_types``: the values passed around: :class:`Summary`, :class:`SentPrompt`,
  :class:`BuiltPrompt` and its :class:`ContextStats`;
* ``_tally``: token counts of the history and of successive prompts, in O(new messages).

Nothing here knows a particular step: steps live in their own folders (``steps/``, ``dedup/``,
``summary/``, ``aging/``).
"""
