"""Work the digest skips (speed round 4) without changing a word of it: the decision patterns matched
case-sensitively on lower-cased ASCII text, and the distinctive identifiers of a page's entries found
once per text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.context.summary.memory import _render, _text

_PIECES = [
    "I will fix", "i'll Replace", "We need to update", "LET ME check", "Let's add", "so, I Edit",
    "The issue is", "THE BUG WAS", "root cause", "This confirms", "turns out", "is defined in",
    "instead of", "The fix is", "to fix it", "now passes", "All tests pass", "I should look",
    "I can just patch", "next, I handle", "We should run", "`parse_value()`", "src/app.py", "12345",
    "K", "ſ", "İ", "ı", "é", "Ⅰ", " ", "  ", ".", ". ", "? ", "!\n", "\n\n", "foo_bar", "camelCase",
    "THOUGHT: ", "```py", "</tag>", "and", "the", "it", "e", "ix",
]  # fmt: skip


def _reference_candidates(text: str) -> dict[str, tuple[int, int, str]]:
    """``_text._candidates`` as first written: the case-insensitive patterns over the text itself."""
    finding, change, routine = _text._UNICODE
    kinds = (("finding", finding), ("change", change))
    matches = [(kind, m.start()) for kind, pattern in kinds for m in pattern.finditer(text)]
    if not matches:
        return {}
    ends = [m.end() for m in _text._SENTENCE.finditer(text)]
    best: dict[str, tuple[int, int, str]] = {}
    for kind, position in matches:
        if kind in best and best[kind][0] == 0:
            continue
        index, sentence = _text._sentence_at(text, ends, position)
        if len(sentence) <= 12 or sentence.endswith("?"):
            continue
        if kind == "change" and (routine.search(sentence) or finding.search(sentence)):
            continue
        candidate = (0 if _text._CODEISH.search(sentence) else 1, index, sentence)
        best[kind] = min(best.get(kind, candidate), candidate)
    return best


def test_the_decision_patterns_are_written_in_lower_case_and_ignore_case() -> None:
    for pattern in _text._UNICODE:
        assert pattern.flags & re.I and pattern.pattern == pattern.pattern.lower()
    assert [p.pattern for p in _text._ASCII] == [p.pattern for p in _text._UNICODE]
    assert not any(p.flags & re.I for p in _text._ASCII)


@settings(deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=40).map("".join))
def test_candidates_equal_the_case_insensitive_rule(text: str) -> None:
    assert _text._candidates(text) == _reference_candidates(text)


def test_candidates_read_mixed_case_ascii_and_unicode_folds_alike() -> None:
    for text in [
        "THE ISSUE IS that `parse_value()` drops the sign. I WILL FIX parse_value in src/app.py now.",
        "The issue is that parse_value drops the sign: I will fix it. Let me check the tests.",
        "The ſolution is to replace `parse_value()` with a stricter one.",  # long s folds to s
        "The issue is a Kelvin Ksign, so İ will fix the İnput parser_now.",
    ]:
        assert _text._candidates(text) == _reference_candidates(text)
    assert _text._candidates("THE ISSUE IS that `x_y` breaks.")  # found in upper case
    assert "solution" in _text._candidates("The ſolution is to replace `parse_value()` with a stricter one.")[
        "change"
    ][2].replace("ſ", "s")


@settings(deadline=None)
@given(st.lists(st.sampled_from(_PIECES), max_size=30).map("".join), st.integers(-1, 5))
def test_used_counts_the_distinctive_identifiers_the_agent_wrote_later(text: str, since: int) -> None:
    words = sorted(_text.identifiers(text))
    mentioned = {word: position % 7 for position, word in enumerate(words)}
    expected = sum(
        1
        for word in _text.identifiers(text)
        if any(c.isdigit() or c == "_" for c in word) and mentioned.get(word, -1) > since
    )
    assert _render._used(text, since, mentioned) == expected
