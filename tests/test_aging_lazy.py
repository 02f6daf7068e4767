"""Aging's shortcuts that skip work against the rules read in full (speed round 3).

Each test compares a shortcut with the rule as first written (kept here as the reference): the
lazy sentence split (the first sentence reads only the first pieces of a text) against splitting
the whole text; a note's output lines' references taken from the original lines against the lines
as cut.
"""

from __future__ import annotations

import re

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message
from tiered_agent.context.aging._condense import _named, _output_lines, _output_refs
from tiered_agent.context.aging._reasoning import (
    MORE,
    _clip,
    first_sentence,
    shorten_reasoning,
    split_sentences,
)
from tiered_agent.context.aging._refs import refs as ref_names

# The rule as first written: split the whole text, then join markers and a leading label.
_SENTENCE_END = re.compile(r"(?<=[A-Za-z0-9)\]`'\"][.!?])\s+|\n+")
_LABEL = re.compile(r"^[#*\w ]{1,24}:$")
_MARKER = re.compile(r"^(?:\d{1,3}|[a-z])[.)]$")


def refs(text: str) -> frozenset[str]:
    """The references of ``text`` as a set (the rules below read them as sets)."""
    return frozenset(ref_names(text))


def _split_reference(text: str) -> list[str]:
    pieces: list[str] = []
    for raw in _SENTENCE_END.split(text):
        piece = raw.strip()
        if not piece:
            continue
        if pieces and _MARKER.match(pieces[-1]):
            pieces[-1] = f"{pieces[-1]} {piece}"
        else:
            pieces.append(piece)
    if len(pieces) > 1 and _LABEL.match(pieces[0]):
        pieces[:2] = [f"{pieces[0]} {pieces[1]}"]
    return pieces


def _shorten_reference(text: str, mode: str, seen: set[str]) -> str:
    if mode == "keep" or not text.strip():
        seen |= refs(text)
        return text
    sentences = _split_reference(text)
    kept = [_clip(sentences[0], 300)]
    if mode == "novel":
        kept += [s for s in sentences[1:] if refs(s) - seen]
    if kept == sentences:
        seen |= refs(text)
        return text
    shown = " ".join(kept)
    shown = shown if shown.endswith(MORE) else f"{shown} {MORE}"
    result = shown if len(shown) < len(text) else text
    seen |= refs(result)
    return result


# Pieces that exercise every branch: labels alone on a line, list markers (which join the piece
# after them, even a label), sentence ends after letters, digits and brackets, runs of line feeds
# and spaces, references, long words (clipping at 300 characters).
_PIECES = st.sampled_from(
    [
        "THOUGHT:",
        "## Plan:",
        "1.",
        "a)",
        "12)",
        "x.",
        "I will check parse_args.",
        "Then run tests/test_x.py!",
        "Why?",
        "See (src/app.py).",
        'It said "done".',
        "`make`.",
        "plain words here",
        "v1.2.3",
        "e.g. this",
        "",
        " ",
        "word " * 70,
        "a" * 320,
    ]
)
_SEPARATORS = st.sampled_from([" ", "  ", "\n", "\n\n", " \n ", "\t", ". ", ""])


@st.composite
def _texts(draw: st.DrawFn) -> str:
    parts = draw(st.lists(st.tuples(_PIECES, _SEPARATORS), max_size=8))
    return "".join(piece + separator for piece, separator in parts)


@settings(max_examples=600, deadline=None)
@given(_texts())
def test_lazy_split_equals_the_whole_split(text: str) -> None:
    assert split_sentences(text) == _split_reference(text)
    whole = _split_reference(text)
    assert first_sentence(text, 160) == (_clip(whole[0], 160) if whole else "")


@settings(max_examples=600, deadline=None)
@given(
    _texts(), st.sampled_from(["first", "novel", "keep"]), st.sets(st.sampled_from(["parse_args", "v1.2.3"]))
)
def test_shortened_reasoning_equals_the_rule_on_the_whole_text(text: str, mode: str, seen: set[str]) -> None:
    mine, theirs = set(seen), set(seen)
    assert shorten_reasoning(text, mode, mine) == _shorten_reference(text, mode, theirs)  # type: ignore[arg-type]
    assert mine == theirs


def test_first_mode_reads_only_the_first_pieces() -> None:
    # a label joins the sentence after it; a marker the piece after it; what follows is cut
    text = "THOUGHT:\n1.\nI will check parse_args. Then the tests.\n" + "More text. " * 1000
    assert first_sentence(text) == "THOUGHT: 1. I will check parse_args."
    assert shorten_reasoning(text, "first", set()) == f"THOUGHT: 1. I will check parse_args. {MORE}"
    assert shorten_reasoning("One sentence only.", "first", set()) == "One sentence only."


# Output lines with indentation, runs of spaces and tabs, Unicode whitespace, references, lines just
# under and over the note's 160-character cut (where a reference may be cut through), JSON.
_LINE_PIECES = st.sampled_from(
    [
        "    ",
        "\t",
        "  ",
        "\u00a0",
        "\u2003",
        "src/app.py",
        "parse_args",
        "x",
        "word",
        "v1.2",
        "...",
        "-",
        "a_b-c",
    ]
)


@st.composite
def _outputs(draw: st.DrawFn) -> str:
    lines = []
    for _ in range(draw(st.integers(0, 6))):
        pieces = draw(st.lists(_LINE_PIECES, max_size=12))
        pad = draw(st.sampled_from([0, 150, 155, 158, 161, 170]))
        lines.append("".join(pieces) + (" " * 3 + "ab_c" * 60)[:pad] * draw(st.booleans()))
    if draw(st.booleans()):
        return orjson.dumps({"output": "\n".join(lines), "path": "a/b.py" * 40}).decode()
    return "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(st.lists(_outputs(), min_size=1, max_size=3))
def test_output_references_from_the_originals_equal_the_cut_lines(outputs: list[str]) -> None:
    messages = (
        Message(role="assistant", content="I will look.", iteration=1),
        *(
            Message(role="tool", content=text, tool_call_id=f"c{i}", iteration=1)
            for i, text in enumerate(outputs)
        ),
    )
    assert _output_refs.__wrapped__(messages) == _named(_output_lines(messages))
