"""The working memory: a structured, rolling, deterministic summary of the agent's work.

* ``_fold``: :class:`Memory` and :func:`fold`, one message at a time;
* ``_calls``: what a tool call is (shell, file read or edit, search, plan, lookup, action ...);
* ``_shell``: what a shell command does to files (reads with line ranges, writes, edits);
* ``_outputs``: what a tool output says (exit code, error, test counts, file lines shown);
* ``_code``: numbered lines, grep hits, patches and the definitions in them;
* ``_text``: text helpers (shortening, todo lists, decisions, constraints);
* ``_render``: the memory as one bounded page; ``_sections``: that page's sections.

Every parser here meets arbitrary text from agent runs: each is a pure function of its input,
memoized, and runs behind the pipeline's fail-open guard.
"""
