"""The working memory's page layout: its sections and its first line, and its default size.

The one structure both writers of a summary produce: the deterministic digest renders it
(:mod:`._render`) and an LLM summarizer is asked for it (:mod:`.._llm`). Constants only, so
that asking a model for a summary does not load the parser.
"""

from __future__ import annotations

__all__ = ["MAX_MEMORY_CHARS", "SECTIONS", "header"]

MAX_MEMORY_CHARS = 2_000  # ~500 tokens, the LLM summary's default budget

# (title, what it holds): the structure both the digest and an LLM summarizer write.
SECTIONS: tuple[tuple[str, str], ...] = (
    ("Task", "the task in one or two sentences"),
    ("Constraints", "rules the task sets (what must not be changed, formats)"),
    ("User requests", "later requests and answers of the user, with the facts they gave (ids, names)"),
    (
        "Files",
        "one line per file: path; edits with line numbers; line ranges read; definitions seen with line",
    ),
    ("Tests", "last test commands with exit code and pass/fail counts, failing tests"),
    ("Errors", "errors still open (command or tool, the telling error line)"),
    ("Commands", "other commands run, with exit code and a one-line result"),
    ("Actions", "state-changing calls made (bookings, cancellations, messages sent) and their results"),
    ("Facts", "facts looked up that later steps need (ids, amounts, dates, statuses)"),
    ("Decisions", "findings and decisions, each with the reason"),
    ("Todo", "open todo items and the next step"),
)


def header(first: int, last: int) -> str:
    """The first line of every working memory: its range."""
    return f"Working memory of iterations {first}-{last}"
