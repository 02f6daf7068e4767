"""Tidy's quoted lines: a candidate place whose run the index alone tells shorter than
``min_lines`` (a next line filed elsewhere, or past the end of the text) is not read again from its
source; the shortcut points what reading every place points (first measured in speed round 15,
docs/bench-speed.md)."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.context.steps._quotes import LineIndex, point_quotes, quote_lines

# ----------------------------------------------------------------------------- the quoted lines


def _reference(text: str, index: LineIndex, min_lines: int, min_chars: int) -> str:
    """The plain computation: the module's ``point_quotes`` with ``longest`` reading every place."""
    plain = LineIndex.longest

    def longest(self: LineIndex, texts: Any, start: int, at_least: int = 1) -> tuple[int, int, int]:
        return plain(self, texts, start)

    LineIndex.longest = longest  # type: ignore[method-assign]
    try:
        return point_quotes(text, index, min_lines, min_chars)
    finally:
        LineIndex.longest = plain  # type: ignore[method-assign]


def test_a_run_the_index_tells_shorter_reads_no_source_again() -> None:
    """A line every source shows (``    return result  # shared``), each time followed by other lines:
    the text's run from it is one line long wherever it stands, which the index tells from its
    next line's places; no source is read again to find that out, and nothing is pointed to."""
    index = LineIndex()
    for k in range(6):
        body = "\n".join(f"    value_{k}_{n} = compute_{k}({n})" for n in range(5))
        index.add(f"iteration {k}", f"def f_{k}():\n{body}\n    return result  # shared\n    done_{k}()")
    text = "\n".join(["    return result  # shared", *(f"    other_line_{n} = 1" for n in range(6))])
    assert point_quotes(text, index, min_lines=4, min_chars=10) == text
    assert index._read == {}  # no source read again (main read all six)
    assert _reference(text, index, 4, 10) == text


def test_a_run_past_the_end_of_the_text_reads_no_source_and_a_real_run_is_still_found() -> None:
    index = LineIndex()
    source = "\n".join(f"{n}\tdef helper_{n}(value): return value * {n}" for n in range(1, 9))
    index.add("iteration 3 (tool_call_id=c3)", source)
    tail = "\n".join(f"{n}\tdef helper_{n}(value): return value * {n}" for n in range(7, 9))
    text = f"intro line one\nintro line two\nintro line three\n{tail}"
    assert point_quotes(text, index, min_lines=4, min_chars=10) == text
    assert index._read == {}  # two lines left: shorter than four, told without reading the source
    again = "\n".join(f"{n}\tdef helper_{n}(value): return value * {n}" for n in range(3, 9))
    quoted = point_quotes(again, index, min_lines=4, min_chars=100)
    assert quoted == "[lines 3-8: the same text as iteration 3 (tool_call_id=c3) shows above]"


_LINES = st.sampled_from(
    [
        "    return self.value  # the same",
        "    return self.other  # not the same",
        "def compute(value):",
        "x = 1",
        "",
        "    }",
        "        raise ValueError(value)",
        "for item in items: print(item)",
        "1\tnumbered line one here",
        "2\tnumbered line two here",
        "     3\u2192padded numbered line three",
    ]
)
_TEXTS = st.lists(_LINES, min_size=0, max_size=14).map("\n".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=7), _TEXTS, st.integers(1, 6), st.integers(1, 200))
def test_the_shortcut_points_what_reading_every_place_points(
    sources: list[str], text: str, min_lines: int, min_chars: int
) -> None:
    """Over texts made of a few lines repeated in every order, the shortcut gives the same text as
    reading every candidate place from its source."""
    index = LineIndex()
    for k, source in enumerate(sources):
        index.add(f"iteration {k}", source)
    assert point_quotes(text, index, min_lines, min_chars) == _reference(text, index, min_lines, min_chars)


@settings(max_examples=300, deadline=None)
@given(st.lists(_TEXTS, min_size=1, max_size=7), _TEXTS, st.integers(2, 6))
def test_a_place_told_shorter_is_shorter(sources: list[str], text: str, at_least: int) -> None:
    """Whenever the index tells a candidate's run shorter than ``at_least`` lines, reading the source
    finds it shorter (before the run is trimmed to a line that says something)."""
    index = LineIndex()
    for k, source in enumerate(sources):
        index.add(f"iteration {k}", source)
    texts = quote_lines(text).texts
    for start, line in enumerate(texts):
        found = index.places.get(hash(line), ())
        for place in (found,) if isinstance(found, int) else found:
            if not index._shorter(texts, start, place, at_least):
                continue
            shown = index.lines(place >> 32).texts
            at = place & ((1 << 32) - 1)
            length = 0
            while start + length < len(texts) and at + length < len(shown):
                if texts[start + length] != shown[at + length]:
                    break
                length += 1
            assert length < at_least
