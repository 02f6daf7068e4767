"""The rulers' per-run word index answers exactly what a scan of every text answers:
``_vocabulary.Vocabulary.holding`` (which texts hold a string, from the texts' words) against
``string in text`` for every text."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.bench._vocabulary import Vocabulary, words_of

# Word characters in and out of ASCII, the separators a term joins runs with, other punctuation.
_CHARS = "abcXYZ019_éΩж" + "./-" + " \n\t:\"'()\\"
_WORDS = ("test", "tests", "test_x", "attest", "a.py", "src/app.py", "1909", "19090", "Data", "élan")


def _text() -> st.SearchStrategy[str]:
    piece = st.one_of(st.sampled_from(_WORDS), st.text(alphabet=_CHARS, max_size=6))
    return st.lists(piece, max_size=12).map("".join)


def test_words_are_the_maximal_ascii_runs_of_four_or_more() -> None:
    assert words_of("a test_x, attest; éléphant ab1 2024-05-20 abcd") == {
        "test_x",
        "attest",
        "phant",
        "abcd",
        "2024",
    }


@settings(max_examples=300, deadline=None)
@given(st.lists(_text(), max_size=8), st.lists(st.one_of(st.sampled_from(_WORDS), _text()), max_size=6))
def test_holding_is_a_substring_test_of_every_text(texts: list[str], strings: list[str]) -> None:
    vocabulary = Vocabulary(texts)
    for string in [*strings, *(w for t in texts for w in words_of(t))]:
        if "\n" in string:
            continue
        expected = [i for i, text in enumerate(texts) if string and string in text]
        assert vocabulary.holding(string) == expected, string


def test_holding_finds_a_word_inside_longer_words_and_a_string_around_its_longest_run() -> None:
    vocabulary = Vocabulary(["attest the test_x", "no match here", "tests/unit.py", "tes t"])
    assert vocabulary.holding("test") == [0, 2]
    assert vocabulary.holding("tests/unit") == [2]
    assert vocabulary.holding("s/u") == [2]  # no run of 4: every text searched
    assert vocabulary.holding("t the") == [0]
    assert vocabulary.holding("") == []
