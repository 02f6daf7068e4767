"""A text's references as a tuple answer every set question the frozenset they replace answered.

Aging keeps one reference tuple per text naming something in the run's memo (56 + 8n bytes where a
frozenset was 216 and more); the rules read them through set methods that take any iterable. Each
test compares the tuple's answer with the frozenset's (the references as the rule first defined
them) on random texts and random sets of names.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.context.aging._condense import _cover, _within
from tiered_agent.context.aging._novel import novel_lines
from tiered_agent.context.aging._refs import line_refs, message_refs, refs, refs_of_all, text_refs

_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*[A-Za-z0-9_]")
_CODE_LIKE = re.compile(r"[/_.0-9]|[a-z][A-Z]")


def _as_set(text: str) -> frozenset[str]:
    """The references as the rule defines them, as a set (what ``refs`` returned before)."""
    return frozenset(t for t in _TOKEN.findall(text) if len(t) >= 4 and _CODE_LIKE.search(t))


_NAMES = ["src/a.py", "parse_args", "HAT017", "getValue", "x_1y", "a.b.c", "2024-05-25"]
_TEXT = st.lists(st.sampled_from([*_NAMES, "word", "plain", "  ", "\n", ", ", "é", "ab_"]), max_size=14).map(
    " ".join
) | st.text(alphabet=st.sampled_from("aZbY09_./- \n\u00e9\u212a(:"), max_size=50)
_SET = st.sets(st.sampled_from([*_NAMES, "other_name", "zz/9"]), max_size=6)


@settings(max_examples=400, deadline=None)
@given(_TEXT, _SET, _SET)
def test_the_tuple_answers_what_the_set_answered(text: str, seen: set[str], more: set[str]) -> None:
    names = refs.__wrapped__(text)  # type: ignore[attr-defined]
    old = _as_set(text)
    assert isinstance(names, tuple)
    assert frozenset(names) == old and len(names) == len(old)  # each name once
    named = [t for t in _TOKEN.findall(text) if len(t) >= 4 and _CODE_LIKE.search(t)]
    assert names == tuple(dict.fromkeys(named))  # in the order first named
    assert seen.issuperset(names) == (old <= seen)  # ``refs(x) <= seen``
    assert seen.isdisjoint(names) == old.isdisjoint(seen)  # ``refs(x).isdisjoint(wanted)``
    assert frozenset(seen).intersection(names) == old & seen  # ``refs(x) & used``
    grown = set(seen)
    grown.update(names)
    assert grown == seen | old  # ``seen |= refs(x)``
    within = _within(names, seen)
    assert frozenset(within) == old & seen and len(within) == len(old & seen)
    counted = sum(name not in seen and name not in more for name in names)
    assert counted == len(old.difference(seen, more))  # the lazy cover's count


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, max_size=5))
def test_unions_of_texts_are_the_sets_union(texts: list[str]) -> None:
    expected = frozenset().union(*map(_as_set, texts))
    assert refs_of_all(texts) == expected
    if texts:
        assert message_refs(texts[0], texts[1:]) == expected


@settings(max_examples=200, deadline=None)
@given(st.lists(_TEXT, min_size=1, max_size=8), _SET, st.integers(1, 4))
def test_the_cover_chooses_the_same_lines_from_tuples_as_from_sets(
    lines: list[str], seen: set[str], limit: int
) -> None:
    as_tuples = [(i, line, refs.__wrapped__(line)) for i, line in enumerate(lines)]  # type: ignore[attr-defined]
    as_sets = [(i, line, frozenset(found)) for i, line, found in as_tuples]
    assert _cover(as_tuples, limit, seen) == _cover(as_sets, limit, seen)


_LINES = st.lists(
    _TEXT | st.sampled_from(["", "\r", "\x0b", "\u2028", "src/a.py\x85parse_args", "x_1y\x1cab.c"]),
    max_size=8,
)
_BREAKS = st.sampled_from(["\n", "\r\n", "\r", "\x0c", "\u2029", "\n\n"])


@settings(max_examples=300, deadline=None)
@given(_LINES, _BREAKS, st.booleans())
def test_an_outputs_line_references_are_its_lines_references(lines: list[str], end: str, last: bool) -> None:
    """One entry per output: ``line_refs(text)[i]`` is ``refs`` of its line ``i`` (``splitlines``,
    every line break Python knows), and the whole text's references are their union."""
    text = end.join(lines) + (end if last else "")
    found = line_refs.__wrapped__(text)  # type: ignore[attr-defined]
    assert found == tuple(refs.__wrapped__(line) for line in text.splitlines())  # type: ignore[attr-defined]
    assert frozenset(text_refs(text)) == _as_set(text)
    repeated = [name for names in found for name in names]
    assert len({id(name) for name in repeated}) == len(set(repeated))  # one string per name in a text


@settings(max_examples=200, deadline=None)
@given(_LINES, _SET, st.integers(0, 2), st.integers(1, 5), st.integers(4, 30))
def test_novel_lines_given_the_lines_references_are_novel_lines_scanning_them(
    lines: list[str], seen: set[str], head: int, max_lines: int, line_chars: int
) -> None:
    text = "\n".join(lines)
    given_seen, scanned_seen = set(seen), set(seen)
    names = line_refs.__wrapped__(text)  # type: ignore[attr-defined]
    kw = {"head": head, "max_lines": max_lines, "line_chars": line_chars}
    given = novel_lines(text.splitlines(), given_seen, names=names, **kw)  # type: ignore[arg-type]
    assert given == novel_lines(text.splitlines(), scanned_seen, **kw)  # type: ignore[arg-type]
    assert given_seen == scanned_seen
