"""Shortcuts in the aging decision (speed round 11, docs/bench-speed.md) give what computing from
scratch gives, and take the shortcut: a waiting chunk that grew is read from the reading of the chunk it
was (only its new iterations read), a chunk's inputs asked again with nothing new read are the same
objects, and the files note's calls after more iterations read only those (the cost anatomy's split by
cut points: tests/test_anatomy.py)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent import Message, ToolCall
from tiered_agent.context.aging import _condense
from tiered_agent.context.aging._condense import ChunkReading, condensed_note
from tiered_agent.context.aging._forms import FormsMemo, condensed
from tiered_agent.context.aging._reports import Reports
from tiered_agent.context.aging._written import WrittenFiles, _calls

NAMES = ["alpha_1", "beta_2", "gamma_3", "delta_4", "eps_5", "src/a.py", "b.txt"]
WORDS = ["plain", "words", "THOUGHT:", "Run", "it."]
REPORTS = Reports(frozenset({"Task"}), 400, 200)  # sub-agents' reports and short user messages kept


def _iteration(
    k: int, thought: Sequence[str], output: Sequence[Sequence[str]], kind: int
) -> tuple[Message, ...]:
    """One iteration: reasoning, a call (a sub-agent's ``Task`` for ``kind`` 1) and its output, and
    for ``kind`` 2 a user message (the same text in every such iteration: a repeat)."""
    name = "Task" if kind == 1 else "bash"
    call = ToolCall(f"c{k}", name, f'{{"command": "cat {k} {" ".join(thought)}"}}')
    messages = [
        Message("assistant", " ".join(thought), (call,), iteration=k),
        Message("tool", "\n".join(" ".join(line) for line in output), tool_call_id=f"c{k}", iteration=k),
    ]
    if kind == 2:
        messages.append(Message("user", "please go on with alpha_1", iteration=k))
    return tuple(messages)


_words = st.lists(st.sampled_from(NAMES + WORDS), max_size=4)
_iterations = st.lists(
    st.tuples(_words, st.lists(_words, max_size=8), st.integers(0, 2)), min_size=3, max_size=9
)


@settings(max_examples=40, deadline=None)
@given(_iterations, st.integers(0, 3), st.integers(0, 3), st.integers(0, 3), st.booleans())
def test_a_grown_chunks_notes_are_those_read_from_nothing(
    drawn: list[tuple[list[str], list[list[str]], int]], referred: int, novel: int, own: int, back: bool
) -> None:
    """The waiting chunk grows at its newest end (and, ``back``, an older one is asked again): every
    note read through the run's memo, the grown chunk's reading taking over the shorter one's, is
    the note read without a memo."""
    groups = [(k, _iteration(k, thought, out, kind)) for k, (thought, out, kind) in enumerate(drawn, 1)]
    memo = FormsMemo()
    dues = [*range(1, len(groups)), 1] if back else range(1, len(groups))
    for due in dues:
        chunk, later = groups[:due], tuple(m for _, ms in groups[due:] for m in ms)
        note = condensed(
            chunk,
            retrieval=False,
            later=later,
            referred=referred,
            novel=novel,
            memo=memo,
            own=own,
            reports=REPORTS,
        )
        alone = condensed_note(
            chunk, retrieval=False, later=later, referred=referred, novel=novel, own=own, reports=REPORTS
        )
        assert note.text == alone.text


def test_a_grown_chunk_reads_only_its_new_iterations(monkeypatch: pytest.MonkeyPatch) -> None:
    """The reading of a chunk that grew by two iterations reads those two (their :class:`Reading`),
    not the ones the shorter chunk's reading read; another way of reading starts from nothing."""
    groups = [
        (k, _iteration(k, ["It", "reads", NAMES[k % 5]], [[NAMES[k % 7], "x"]] * 3, 0)) for k in range(1, 7)
    ]
    memo = FormsMemo()
    read: list[tuple[Message, ...]] = []
    reading = _condense._reading

    def counted(messages: tuple[Message, ...], readings: Any) -> Any:
        read.append(messages)
        return reading(messages, readings)

    monkeypatch.setattr(_condense, "_reading", counted)
    condensed(groups[:2], retrieval=False, referred=2, novel=2, own=2, memo=memo)
    assert len(read) == 2
    read.clear()
    condensed(groups[:4], retrieval=False, referred=2, novel=2, own=2, memo=memo)
    assert read == [groups[2][1], groups[3][1]]
    read.clear()
    condensed(groups[:4], retrieval=False, referred=2, novel=3, own=2, memo=memo)  # another way: all read
    assert len(read) == 4
    grown = ChunkReading(groups[:6], Reports(), {}, referred=2, novel=2, own=2)
    shorter = ChunkReading(groups[:4], Reports(), {}, referred=2, novel=2, own=2)
    assert not grown.begins(shorter.chunk, Reports(), (2, 2, shorter.scale, 2, shorter.terse))  # shorter
    assert not shorter.begins(grown.chunk, REPORTS, (2, 2, shorter.scale, 2, shorter.terse))  # other reports
    assert shorter.begins(grown.chunk, Reports(), (2, 2, shorter.scale, 2, shorter.terse))


def test_a_chunks_inputs_with_nothing_new_are_the_same_objects() -> None:
    """Asked again with the same later messages, or with one more that names nothing of the chunk,
    a chunk's inputs are the same objects (a note's memo key: hashed once); they equal the inputs a
    fresh reading finds."""
    groups = [
        (k, _iteration(k, ["It", "reads", NAMES[k]], [[NAMES[k], "beta_2"]] * 3, 0)) for k in range(1, 5)
    ]
    later = tuple(m for _, ms in groups[2:] for m in ms)
    reading = ChunkReading(groups[:2], Reports(), {}, referred=2, novel=2, own=2)
    first = reading.inputs(later)
    assert reading.inputs(later) is first
    more = (*later, Message("user", "plain words", iteration=4))
    again = reading.inputs(more)
    assert again[1] is first[1] and again[2] is first[2]
    naming = (*more, Message("user", "now alpha_1 and beta_2", iteration=4))
    fresh = ChunkReading(groups[:2], Reports(), {}, referred=2, novel=2, own=2)
    assert reading.inputs(naming) == fresh.inputs(naming)
    assert reading.inputs(later) == ChunkReading(
        groups[:2], Reports(), {}, referred=2, novel=2, own=2
    ).inputs(later)


class _Lookups(dict[int, Any]):
    """A dict that counts the keys asked for with ``get``."""

    asked: list[int]

    def get(self, key: int, default: Any = None) -> Any:
        self.asked.append(key)
        return super().get(key, default)


def _bash(k: int) -> tuple[Message, ...]:
    call = ToolCall(f"c{k}", "bash", f'{{"command": "printf \'{k}\\\\n\' > f{k}.txt"}}')
    return (
        Message("assistant", "", (call,), iteration=k),
        Message("tool", "", tool_call_id=f"c{k}", iteration=k),
    )


@given(st.lists(st.tuples(st.integers(0, 12), st.booleans()), min_size=1, max_size=8))
def test_the_files_notes_calls_are_those_read_from_nothing(asks: list[tuple[int, bool]]) -> None:
    """:meth:`WrittenFiles.calls` over histories that grow, shrink and change an iteration (a new
    tuple) equals :func:`_calls` read from nothing."""
    history = {k: _bash(k) for k in range(1, 13)}
    files_of = WrittenFiles()
    for upto, change in asks:
        groups = {0: (Message("user", "task"),), **{k: history[k] for k in range(1, upto + 1)}}
        if change and upto:
            groups[upto] = (*groups[upto], Message("user", "more", iteration=upto))
        assert files_of.calls(groups, upto) == _calls(groups, upto)


def test_the_files_notes_calls_after_more_iterations_look_up_only_those() -> None:
    """A history that grew looks up only its new iterations' calls; one whose iteration changed, or
    that is shorter, is looked up again."""
    history = {k: _bash(k) for k in range(0, 9)}
    files_of = WrittenFiles()
    lookups = _Lookups()
    lookups.asked = []
    files_of._calls = lookups
    assert files_of.calls({k: history[k] for k in range(6)}, 5) == _calls(history, 5)
    assert lookups.asked == [1, 2, 3, 4, 5]
    lookups.asked.clear()
    assert files_of.calls(history, 8) == _calls(history, 8)
    assert lookups.asked == [6, 7, 8]
    lookups.asked.clear()
    changed = {**history, 8: (*history[8], Message("user", "more", iteration=8))}
    assert files_of.calls(changed, 8) == _calls(changed, 8)
    assert lookups.asked == [1, 2, 3, 4, 5, 6, 7, 8]
    lookups.asked.clear()
    assert files_of.calls(history, 3) == _calls(history, 3)
    assert lookups.asked == [1, 2, 3]
