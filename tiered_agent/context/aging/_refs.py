"""Code references in text: the identifiers, paths and numbers a reader of a prompt would look up.

A *reference* is a token of 4+ characters made of letters, digits and ``_./-``
that looks like code: it contains ``/``, ``_``, ``.`` or a digit, or is
camelCase (``src/app.py``, ``parse_args``, ``HAT017``, ``2024-05-25``,
``getValue``). Plain words are not references. The aged forms of old
iterations (:mod:`._forms`) keep the lines of an output that carry a
reference not shown anywhere later in the prompt.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from sys import intern

from .._memo import run_memo

__all__ = ["message_refs", "refs", "refs_of_all"]

# Tokens of 4+ characters (first and last a letter, digit or ``_``). A token is code-like when it
# holds ``/``, ``_``, ``.`` or a digit (what is left once its hyphens are gone is not all letters)
# or a lowercase letter right before an uppercase one (only a token with both cases can).
_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]{2,}[A-Za-z0-9_]")
_CAMEL = re.compile(r"[a-z][A-Z]")


_NONE: frozenset[str] = frozenset()  # the references of a text naming none (a third of all texts)


@run_memo(65_536, keep=bool)
def refs(text: str) -> frozenset[str]:
    """The references in ``text`` (memoized for the run: the same texts are scanned at every epoch).

    A text naming nothing gets one shared empty set (an empty frozenset is a new 216-byte object
    each time it is built) and is not remembered: scanning it again costs about what a memo entry
    (the text and its slot, for every such line of every output an agent keeps) would save."""
    found = frozenset(
        intern(t)  # one string per distinct reference, however many lines name it
        for t in _TOKEN.findall(text)
        if not (t.replace("-", "") if "-" in t else t).isalpha()
        or (not t.islower() and not t.isupper() and _CAMEL.search(t))
    )
    return found if found else _NONE


def message_refs(content: str, arguments: Iterable[str] = ()) -> frozenset[str]:
    """The references in a message's content and its tool calls' arguments."""
    found = refs(content)
    for argument in arguments:
        found = found | refs(argument)
    return found


def refs_of_all(texts: Iterable[str]) -> set[str]:
    """The union of the references of ``texts``."""
    out: set[str] = set()
    for text in texts:
        out |= refs(text)
    return out
