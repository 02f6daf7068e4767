"""The aging notes' tails (speed round 17b, docs/bench-speed.md): a tail's lines are checked against the
lines kept and the earlier notes' lines as one set, and a tail none of whose lines repeats comes back as
it is (not split and rebuilt line by line). The shortcut gives what the plain filter gives (a property
test against the definitions as first written), and takes the shortcut (the same object back)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.context.aging import _condense

_INDENT = "    "


def _plain_unrepeated(tail: str, kept: set[str]) -> str:
    """``_unrepeated`` as first written: every line split off, filtered and joined again."""
    if not tail:
        return tail
    fresh = [line for line in tail.split("\n")[1:] if line[len(_INDENT) :] not in kept]
    kept.update(line[len(_INDENT) :] for line in fresh)
    return "".join(f"\n{line}" for line in fresh)


def _plain_unshown(tail: str, before: frozenset[str]) -> str:
    """``_unshown`` as first written."""
    if not tail or not before:
        return tail
    return "".join(f"\n{line}" for line in tail.split("\n")[1:] if line[len(_INDENT) :] not in before)


def _tail(texts: list[str]) -> str:
    return "".join(f"\n{_INDENT}{text}" for text in texts)


# A tail's texts hold no line feed (a line as cut, an output's line, a report's line); a few
# letters so that repeats within a tail and against the sets are frequent.
_text = st.text(alphabet=st.sampled_from("ab _\t\r"), max_size=4)


def test_a_tail_without_repeats_comes_back_as_it_is() -> None:
    tail = _tail(["src/app.py:3 def main()", "tests/test_app.py::test_main PASSED"])
    kept: set[str] = set()
    assert _condense._unrepeated(tail, kept) is tail
    assert kept == {"src/app.py:3 def main()", "tests/test_app.py::test_main PASSED"}
    assert _condense._unshown(tail, frozenset({"other line"})) is tail
    again = _tail(["src/app.py:3 def main()", "new line"])
    assert _condense._unrepeated(again, kept) == _tail(["new line"])
    assert _condense._unshown(again, frozenset({"new line"})) == _tail(["src/app.py:3 def main()"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_text, max_size=5), max_size=6), st.sets(_text, max_size=4))
def test_unrepeated_and_unshown_equal_the_plain_filters(tails: list[list[str]], before: set[str]) -> None:
    """The tails of a note's iterations in turn (one ``kept`` set gaining their lines), repeats within
    a tail included; and each tail against the earlier notes' lines."""
    kept: set[str] = set()
    plain_kept: set[str] = set()
    for texts in tails:
        tail = _tail(texts)
        assert _condense._unshown(tail, frozenset(before)) == _plain_unshown(tail, frozenset(before))
        assert _condense._unrepeated(tail, kept) == _plain_unrepeated(tail, plain_kept)
        assert kept == plain_kept
