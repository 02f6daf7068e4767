"""Token ids pieced at safe line feeds (``_tokens.PieceEncoder``) equal the tokenizer's own ids."""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._tokens import ENCODINGS, PieceEncoder, TokenCounter, _encoding

# Characters the pre-token patterns treat specially around a line feed: line breaks, horizontal and
# other Unicode whitespace, characters Python calls whitespace and the tokenizers do not (\x1c-\x1f),
# the ``/`` o200k joins to a line feed, punctuation, apostrophes (contractions), digits, letters of
# several cases and scripts, combining marks, emoji.
_TRICKY = "\n\n\n\r\r\n \t\x0b\x0c\x1c\x1f\x85\u00a0\u2028\u2029\u3000//.,:;(){}[]'\"-_#*=<>|\\`~!?@$%^&+"
_PLAIN = "abcdefxyzABCXYZ0123456789éßΩжあ漢\u0301🙂"
_LINE_STARTS = ("", " ", "  ", "\t", "/", " /", "- ", "# ", "'s", "123", "}")
_LINE_STARTS += ("\u00a0", "\x1c", "\r", " \r", "\t\r\n ")


def _fragments() -> st.SearchStrategy[str]:
    char = st.sampled_from(_TRICKY + _PLAIN)
    word = st.text(alphabet=_PLAIN, min_size=1, max_size=8)
    return st.lists(st.one_of(char, word, st.sampled_from(_LINE_STARTS)), max_size=12).map("".join)


def _texts() -> st.SearchStrategy[str]:
    line = st.tuples(st.sampled_from(_LINE_STARTS), _fragments()).map("".join)
    breaks = st.sampled_from(("\n", "\n\n", "\r\n", " \n", "\n \n", "/\n", ".\n"))
    return st.lists(st.tuples(line, breaks).map("".join), min_size=1, max_size=12).map("".join)


def _reference(encoding: str, text: str) -> list[int]:
    return _encoding(encoding).encode(text, disallowed_special=())


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=400, deadline=None)
@given(texts=st.lists(st.one_of(_texts(), st.text(max_size=60)), min_size=1, max_size=4))
def test_pieced_ids_equal_the_tokenizers(encoding: str, texts: list[str]) -> None:
    pieces = PieceEncoder(encoding, min_chars=0)  # later texts reuse the pieces of earlier ones
    for text in texts:
        assert pieces.ids(text).tolist() == _reference(encoding, text)
        mixed = text + "\n".join(texts)  # the same lines again, in another text
        assert pieces.ids(mixed).tolist() == _reference(encoding, mixed)


def _corpus_lines(rng: random.Random) -> list[str]:
    """Lines as agents' logs have them: numbered file views, code, shell output, JSON, paths."""
    lines = []
    for number in range(1, 400):
        indent = " " * rng.choice((0, 0, 4, 8, 12))
        body = rng.choice(
            (
                f"def f_{number}(x):",
                "return x.get('name') or \"\"",
                f"/usr/lib/python3/site-packages/mod_{number}.py:{number}: error",
                '{"id": 17, "path": "/tmp/a b", "ok": true}',
                f"{number:6d}\tclass Node{number}(Base):",
                "# it's the user's choice — naïve café 🙂",
                "",
                "    ",
                "//comment",
                "/",
                "\t",
                "\x0c",
            )
        )
        lines.append(indent + body)
    return lines


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_pieced_ids_on_corpus_like_texts_and_their_rewrites(encoding: str) -> None:
    """Rewrites of earlier texts (kept lines, dropped lines, a marker) are memo hits, and exact."""
    rng = random.Random(20)
    lines = _corpus_lines(rng)
    pieces = PieceEncoder(encoding, min_chars=0)
    for _ in range(60):
        start = rng.randrange(len(lines))
        chunk = lines[start : start + rng.randrange(1, 120)]
        text = rng.choice(("\n", "\r\n", "\n\n")).join(chunk) + rng.choice(("", "\n", "\n\n", " "))
        assert pieces.ids(text).tolist() == _reference(encoding, text)
        kept = [line for line in chunk if rng.random() < 0.7]
        rewrite = "[... lines omitted ...]\n" + "\n".join(kept)
        assert pieces.ids(rewrite).tolist() == _reference(encoding, rewrite)


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_surrogates_are_encoded_as_the_tokenizer_does(encoding: str) -> None:
    pieces = PieceEncoder(encoding, min_chars=0)
    for text in ("a\n\ud83d\ude42b\nc", "x\n\ud800\nlone\n", "\udfff\n" * 3 + "end"):
        assert pieces.ids(text).tolist() == _reference(encoding, text)


def test_piece_memo_is_bounded_and_counts_stay_exact() -> None:
    pieces = PieceEncoder("o200k_base", max_tokens=50, min_chars=0)
    texts = [f"line {i} of text\nand another {i}\nclose {i}" for i in range(40)]
    for text in texts:
        assert pieces.ids(text).tolist() == _reference("o200k_base", text)
    assert pieces._held <= 50
    counter = TokenCounter("cl100k_base")
    assert counter.count_text(texts[3]) == len(_reference("cl100k_base", texts[3]))
    assert counter.encode(texts[3]) == _reference("cl100k_base", texts[3])


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=300, deadline=None)
@given(texts=st.lists(st.one_of(_texts(), st.text(max_size=60)), min_size=1, max_size=4))
def test_pieced_counts_equal_the_tokenizers(encoding: str, texts: list[str]) -> None:
    """A counter that only counts memoizes a count per piece (no ids): the same numbers."""
    pieces = PieceEncoder(encoding, min_chars=0)
    for text in texts:
        mixed = text + "\n".join(texts)
        assert pieces.count(text) == len(_reference(encoding, text))
        assert pieces.count(mixed) == len(_reference(encoding, mixed))
        assert pieces.ids(mixed).tolist() == _reference(encoding, mixed)  # ids after counts
        assert pieces.count(mixed) == len(_reference(encoding, mixed))  # counts after ids


def test_a_counting_run_keeps_counts_not_ids() -> None:
    counter = TokenCounter(cache_size=1)  # the per-text memo forgets: the pieces answer
    text = "".join(f"    line {i}: value_{i} = compute({i})\n" for i in range(40))
    assert counter.count_text(text) == len(_reference("o200k_base", text))
    assert counter.count_text(text + "tail") == len(_reference("o200k_base", text + "tail"))
    assert not counter._pieces._pieces and len(counter._pieces._counts) == 41


def test_the_piece_counts_stay_within_their_token_budget() -> None:
    pieces = PieceEncoder("o200k_base", max_tokens=60, min_chars=0)
    for n in range(30):
        text = f"alpha {n} beta\ngamma {n} delta\n"
        assert pieces.count(text) == len(_reference("o200k_base", text))
        assert pieces._counted == sum(pieces._counts.values()) <= 60


@pytest.mark.parametrize("encoding", ENCODINGS)
@settings(max_examples=100, deadline=None)
@given(texts=st.lists(st.one_of(_texts(), st.text(max_size=60)), min_size=1, max_size=4))
def test_pieced_lengths_equal_the_tokenizers(encoding: str, texts: list[str]) -> None:
    """``length`` (a one-off text's count through the ids memo, no array joined) is the tokenizer's
    count, before and after the pieces are memoized, and memoizes them as ``ids`` does."""
    pieces = PieceEncoder(encoding, min_chars=0)
    for text in texts:
        mixed = "\n".join(texts) + text
        assert pieces.length(mixed) == len(_reference(encoding, mixed))
        assert pieces.length(text) == len(_reference(encoding, text))
        assert pieces.ids(mixed).tolist() == _reference(encoding, mixed)
        assert pieces.length(mixed) == len(_reference(encoding, mixed))
    assert pieces._held == sum(map(len, pieces._pieces.values()))
