"""The rulers' faster searches answer exactly what the plain ones answer: ``_terms.first_occurrence``
against the first of ``_terms.occurrences`` (any slice), and ``RetrievalSources``' holders of a
string (one search of the joined texts) against ``string in text`` for every text."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._rulers import RetrievalSources
from tiered_agent.bench._terms import first_occurrence, is_specific, occurrences

_CHARS = "abXY019_éж" + "./-" + " \n:\"'"
_WORDS = ("ab", "a.b", "b_1", "X19", "é1", "ab-X")


def _text() -> st.SearchStrategy[str]:
    piece = st.one_of(st.sampled_from(_WORDS), st.text(alphabet=_CHARS, max_size=5))
    return st.lists(piece, max_size=10).map("".join)


@settings(max_examples=400, deadline=None)
@given(_text(), st.sampled_from(_WORDS), st.integers(0, 30), st.one_of(st.none(), st.integers(0, 40)))
def test_first_occurrence_is_the_first_of_occurrences(
    text: str, term: str, start: int, end: int | None
) -> None:
    expected = next(occurrences(text, term, start, end), -1)
    assert first_occurrence(text, term, start, end) == expected


def test_first_occurrence_skips_matches_inside_longer_words() -> None:
    text = "14059 base.py:405 x"
    assert first_occurrence(text, "405") == 14
    assert first_occurrence(text, "405", 0, 16) == -1
    assert first_occurrence("aaaa", "aa") == -1
    assert first_occurrence("éab ab", "ab") == 4  # é is a word character


def _sources(texts: list[str]) -> RetrievalSources:
    messages = [Message("user", "task", iteration=0)]
    messages += [
        Message("tool" if i % 2 else "assistant", t, iteration=1 + i // 2) for i, t in enumerate(texts)
    ]
    return RetrievalSources(RecordedRun("r", "test", "tiered-agent", tuple(messages)), TokenCounter())


@settings(max_examples=200, deadline=None)
@given(st.lists(_text(), max_size=8), st.lists(st.one_of(st.sampled_from(_WORDS), _text()), max_size=6))
def test_retrieval_holders_are_a_substring_test_of_every_text(texts: list[str], strings: list[str]) -> None:
    sources = _sources(texts)
    for string in strings:
        expected = tuple(i for i, text in enumerate(texts) if string in text)
        assert sources._where(string) == expected, string


def test_retrieval_holders_of_a_string_in_several_texts_and_across_a_line_break() -> None:
    sources = _sources(["a.py here", "nothing", "see a.py and a.py", "x\ny"])
    assert sources._where("a.py") == (0, 2)
    assert sources._where("x\ny") == (3,)
    assert sources._where("e\nn") == ()  # not across two texts
    assert sources._where("") == (0, 1, 2, 3)


_INITIALS = re.compile(r"[^\W\d_](?:[./\-][^\W\d_])+")


def _specific_as_defined(term: str) -> bool:
    """docs/rulers.md's specific term, as first written: initials first, then code characters."""
    if len(term) < 3 or _INITIALS.fullmatch(term):
        return False
    if re.search(r"[\d_./]", term):
        return True
    ordinary = (p.isalpha() and (p[1:] == p[1:].lower() or p == p.upper()) for p in term.split("-"))
    return not all(ordinary)


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet="aZé²½Ⅻ1_./-", min_size=0, max_size=7))
def test_is_specific_is_the_definition(term: str) -> None:
    assert is_specific(term) == _specific_as_defined(term)


def test_is_specific_on_names_values_and_words() -> None:
    specific = ["405", "HAT017", "utils.py", "TIME_ZONE", "DataDocumenter", "HTTPServer", "a²b"]
    ordinary = ["error", "Error", "read-only", "ERROR", "e.g", "i.e", "a-b-c", "²-a", "ab"]
    assert [is_specific(t) for t in specific] == [True] * len(specific)
    assert [is_specific(t) for t in ordinary] == [False] * len(ordinary)
