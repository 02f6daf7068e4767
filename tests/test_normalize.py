"""The rulers' ``normalize`` (with its shortcuts) equals the rule it implements, applied in full."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.bench._terms import normalize

_BREAKS = re.compile(r"\r\n|[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
_ESCAPES = re.compile(r"\\[nrt]")
_SPACES = re.compile(r"[^\S\n]+")
_EDGES = re.compile(r" ?\n ?")


def _rule(text: str) -> str:
    """Every line break unified, escapes and whitespace runs made one space, lines stripped."""
    text = _SPACES.sub(" ", _ESCAPES.sub(" ", _BREAKS.sub("\n", text)))
    return _EDGES.sub("\n", text).strip(" ")


_PIECES = [" ", "  ", "\n", "\t", "\r", "\r\n", "\\", "n", "t", "r", "a", "é", "\x0b", "\x0c", "\x1c"]
_PIECES += ["\x1f", "\x85", "\u00a0", "\u2028", "\u3000", " \n ", "\n \n", "x \\n y"]
# more of what str.isspace (the per-line split) and a pattern's \s must agree on, and what neither is
_PIECES += ["\x1d", "\x1e", "\u2000", "\u200a", "\u200b", "\u202f", "\u205f", "\u2029", "\ufeff", "\t\n\t"]


@settings(max_examples=4000, deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=16).map("".join))
def test_normalize_is_the_rule(text: str) -> None:
    assert normalize(text) == _rule(text)


def test_normalize_examples() -> None:
    assert normalize("  a \t b \r\n  c\\nd ") == "a b\nc d"
    assert normalize("x\u2028 y \n\n z") == "x\ny\n\nz"
