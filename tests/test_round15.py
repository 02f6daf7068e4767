"""Round 15's shortcuts give what the plain computation gives, and take the shortcut:

- Tidy's quoted lines: a candidate place whose run the index alone tells shorter than ``min_lines``
  (a next line filed elsewhere, or past the end of the text) is not read again from its source;
- the aging decision counts the candidate note and the files note once per prompt and arguments
  (the condensing decision and the level-1 decision of one prompt asked for the same ones twice);
- the salient and word rulers filter the strings a prompt holds in C (the same strings).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_aging_written import COUNTER, _run

from tiered_agent._messages import Message
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._rulers import RawTexts, RawView, RecordedTexts
from tiered_agent.bench._series import SparseSeries
from tiered_agent.context.aging._breakeven import CacheTerms
from tiered_agent.context.aging._state import AgingState
from tiered_agent.context.steps import Age
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


# ----------------------------------------------------------------------------- the aging decision


class _Plain(AgingState):
    """The aging state without its per-update memo of the two notes (each asked for is counted)."""

    def _condense_saving(self, due: int, last: int) -> tuple[int, int]:
        self._saving_at = (-1, -1, 0, 0)
        return super()._condense_saving(due, last)

    def _written_net(self, last: int, through: int, saving: int) -> tuple[int, int]:
        self._written_at = (-1, -1, 0)
        return super()._written_net(last, through, saving)


def _decided(state: AgingState, iterations: int) -> Iterator[tuple[object, ...]]:
    history = _run(iterations)
    for last in range(1, iterations + 1):
        state.update([m for m in history if m.iteration <= last], last)
        yield state.schedule, state.record(), state.new_epoch


def test_each_note_is_counted_once_per_prompt_and_the_decisions_stay(monkeypatch: pytest.MonkeyPatch) -> None:
    """A prompt whose level-1 epoch pays while a chunk is due asks for the candidate note (condensing
    and condensing along) and for the files note (condensing and the level-1 rule) twice with the
    same arguments: each is rendered once now; the schedule and records are those of the plain state."""
    calls: Counter[tuple[object, ...]] = Counter()
    deciding = [0]
    note, written, decide = Age.note, Age.written, AgingState._decide

    def counted_note(self: Age, groups: Any, chunk: Any, *args: Any, **kwargs: Any) -> Message | None:
        if deciding[0]:
            calls["note", deciding[0], chunk] += 1
        return note(self, groups, chunk, *args, **kwargs)

    def counted_written(self: Age, groups: Any, through: int, at: int, *args: Any, **kwargs: Any) -> Any:
        if deciding[0]:
            calls["written", deciding[0], through, at] += 1
        return written(self, groups, through, at, *args, **kwargs)

    def counted_decide(self: AgingState, last: int, *args: Any, **kwargs: Any) -> Any:
        deciding[0] = last
        try:
            return decide(self, last, *args, **kwargs)
        finally:
            deciding[0] = 0

    monkeypatch.setattr(Age, "note", counted_note)
    monkeypatch.setattr(Age, "written", counted_written)
    monkeypatch.setattr(AgingState, "_decide", counted_decide)
    plain = list(_decided(_Plain(Age(), counter=COUNTER, terms=CacheTerms(read=0.1), retrieval=True), 60))
    twice = sum(1 for count in calls.values() if count > 1)
    assert twice >= 10  # the plain state asks twice at every such prompt (7 epochs over 60 iterations)
    calls.clear()
    state = AgingState(Age(), counter=COUNTER, terms=CacheTerms(read=0.1), retrieval=True)
    assert list(_decided(state, 60)) == plain
    assert calls and max(calls.values()) == 1  # main rendered 15 of them twice
    assert len(state.schedule.epochs) == 7 and state.schedule.condensed == 44


# ----------------------------------------------------------------------------- the rulers


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["alpha_one", "beta.two", "gamma/3", "delta4", "eps_5"]), min_size=1, max_size=8
    ),
    st.lists(st.integers(0, 7), max_size=8),
    st.lists(st.sampled_from(["alpha_one", "delta4", "zeta_9", "beta.two"]), max_size=5),
)
def test_absent_is_the_plain_filter(texts: list[str], kept: list[int], strings: list[str]) -> None:
    """The strings a prompt (some recorded messages, by identity) does not hold are those whose holders
    it holds none of, less those its foreign texts hold: as the plain loop found them."""
    messages = tuple(Message("tool" if k else "user", f"{t} end", iteration=k) for k, t in enumerate(texts))
    run = RecordedRun("r15", "test", "tiered-agent", messages)
    recorded = RecordedTexts(run)
    prompt = [messages[k] for k in sorted(set(kept)) if k < len(messages)]
    prompt.append(Message("user", "zeta_9 is here", iteration=len(messages)))
    view = RawView(prompt, recorded, SparseSeries(RawTexts(recorded.ids).foreign, recorded.ids))
    held = {id(m) for m in prompt}
    foreign = "\n".join(m.text for m in prompt if m not in messages)
    expected = tuple(
        s
        for s in strings
        if not any(id(messages[i]) in held for i, t in enumerate(texts) if s in f"{t} end")
        and s not in foreign
    )
    assert recorded.absent(tuple(strings), view) == expected
