"""What a condensed note's iteration keeps under its line (its output lines, the agent's own lines)
is found once per what the choice depends on: of the names those lines name, the ones wanted and
not shown yet, and the ones shown or seen. Notes whose ``wanted``, ``shown`` and ``seen`` differ
but agree on those two sets (a chunk that grew by the iterations that were after it, a later
message naming nothing of the chunk) share one computation, and every note read through a run's
memo with own lines is the one read without it."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context.aging import _condense
from tiered_agent.context.aging._condense import Reading, condensed_note
from tiered_agent.context.aging._forms import FormsMemo, condensed
from tiered_agent.context.aging._written import note_tokens, written_note

NAMES = ["alpha_1", "beta_2", "gamma_3", "delta_4", "eps_5", "src/a.py", "b.txt"]
WORDS = ["plain", "words", "THOUGHT:", "Run", "it."]


def _iteration(
    k: int, thought: Sequence[str], script: Sequence[Sequence[str]], output: Sequence[Sequence[str]]
) -> tuple[Message, ...]:
    """One iteration: reasoning of several sentences, a call whose script has lines of its own (the
    agent's own lines), and an output."""
    command = "\\n".join([f"cat {k}", *(" ".join(line) for line in script if line)])
    call = ToolCall(f"c{k}", "bash", f'{{"command": "{command}"}}')
    return (
        Message("assistant", " ".join(thought), (call,), iteration=k),
        Message("tool", "\n".join(" ".join(line) for line in output), tool_call_id=f"c{k}", iteration=k),
    )


def _own_iteration() -> tuple[Message, ...]:
    return _iteration(
        1,
        ["Look.", "It reads alpha_1 here.", "And beta_2 there."],
        [["gamma_3", "=", "1"], ["delta_4", "=", "2"]],
        [["eps_5", "plain"]] * 8,
    )


@pytest.fixture
def own_calls(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    calls: list[int] = []
    rule = _condense.own_extra

    def counted(*args: object, **kwargs: object) -> str:
        calls.append(1)
        return rule(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(_condense, "own_extra", counted)
    yield calls


def test_own_lines_are_chosen_once_per_what_the_choice_depends_on(own_calls: list[int]) -> None:
    reading = Reading(_own_iteration())
    lines = reading.own()
    direct = []
    splits = [  # (wanted, shown, seen): wanted - shown = {alpha_1}, shown | seen = {beta_2, gamma_3}
        ({"alpha_1", "beta_2"}, {"beta_2"}, {"gamma_3"}),
        ({"alpha_1", "beta_2", "eps_5"}, {"beta_2", "gamma_3"}, set()),
        ({"alpha_1", "unrelated"}, set(), {"beta_2", "gamma_3", "other"}),
    ]
    for wanted, shown, seen in splits:
        mine = set(shown)
        direct.append((_condense.own_extra(lines, wanted, mine, seen, 2), mine))
    assert len(own_calls) == 3
    for (wanted, shown, seen), (text, mine) in zip(splits, direct, strict=True):
        after = set(shown)
        assert reading.own_extra(wanted, after, seen, 2) == text
        assert after == mine
    assert text == "\n    It reads alpha_1 here.\n    delta_4 = 2"
    assert len(own_calls) == 4  # one more: the three splits share it


def test_output_lines_are_chosen_once_per_what_the_choice_depends_on(monkeypatch: pytest.MonkeyPatch) -> None:
    output = [["alpha_1", "x"], ["beta_2", "y"], ["gamma_3"], ["plain"], ["delta_4"], ["eps_5"], ["words"]]
    chunk = [(1, _iteration(1, ["Look", "at", "gamma_3."], [], output))]  # its line shows gamma_3
    calls: list[int] = []
    rule = _condense._extra_lines.__wrapped__  # type: ignore[attr-defined]

    def counted(*args: object, **kwargs: int) -> _condense.Extra:
        calls.append(1)
        return rule(*args, **kwargs)  # type: ignore[no-any-return]

    monkeypatch.setattr(_condense, "_extra_lines", counted)
    memo = FormsMemo()
    notes = []
    # what the messages after the chunk name among its output's names differs (gamma_3), but not the
    # referred targets (alpha_1, beta_2: gamma_3 is shown) nor what the novel lines must not name
    # (those and gamma_3): one choice
    for text in ["Use alpha_1, beta_2 and gamma_3.", "Use alpha_1 and beta_2."]:
        later = (Message("assistant", text, iteration=2),)
        notes.append(condensed(chunk, retrieval=False, later=later, referred=1, novel=1, memo=memo).text)
        reference = condensed_note(chunk, retrieval=False, later=later, referred=1, novel=1)
        assert notes[-1] == reference.text
    assert notes[0] == notes[1]
    assert notes[0].splitlines()[2:] == ["    alpha_1 x", "    delta_4"]
    assert len(calls) == 3  # the memo's note once, each reference note once


_words = st.lists(st.sampled_from(NAMES + WORDS), max_size=4)
_iterations = st.lists(
    st.tuples(_words, st.lists(_words, max_size=3), st.lists(_words, max_size=8)), min_size=3, max_size=9
)


@settings(max_examples=40, deadline=None)
@given(_iterations, st.integers(0, 3), st.integers(0, 3), st.integers(1, 3))
def test_notes_with_own_lines_read_through_a_runs_memo_are_those_read_without(
    drawn: list[tuple[list[str], list[list[str]], list[list[str]]]], referred: int, novel: int, own: int
) -> None:
    groups = [(k, _iteration(k, thought, script, out)) for k, (thought, script, out) in enumerate(drawn, 1)]
    memo = FormsMemo()
    for due in range(1, len(groups)):  # the chunk grows, and the iterations after it with it
        for at in (*range(due + 1, len(groups) + 1), due + 1):  # and back: an older note again
            chunk, later = groups[:due], tuple(m for _, ms in groups[due:at] for m in ms)
            note = condensed(
                chunk, retrieval=False, later=later, referred=referred, novel=novel, memo=memo, own=own
            )
            alone = condensed_note(
                chunk, retrieval=False, later=later, referred=referred, novel=novel, own=own
            )
            assert note.text == alone.text


_FILE_LINES = st.lists(
    st.tuples(
        st.sampled_from(["", " ", "\t", "/", "//x", "=", "  /usr", "é", "12"]), st.sampled_from(NAMES + WORDS)
    ),
    min_size=1,
    max_size=12,
)


@settings(max_examples=60, deadline=None)
@given(st.lists(_FILE_LINES, min_size=1, max_size=3), st.integers(1, 4), st.booleans())
def test_the_written_notes_tokens_counted_from_its_header_and_sections_are_its_tokens(
    files: list[list[tuple[str, str]]], through: int, retrieval: bool
) -> None:
    """The note of the files the agent wrote is counted as its header line plus its sections (the
    header changes with the iteration it ages through, the sections stay): the same count as the
    whole note's, whatever the files' lines start or end with."""
    groups = {}
    for k, lines in enumerate(files, 1):
        text = "\n".join(start + word for start, word in lines)
        arguments = orjson.dumps({"file_path": f"src/f{k}.py", "content": text}).decode()
        groups[k] = (Message("assistant", "", (ToolCall(f"w{k}", "Write", arguments),), iteration=k),)
    note = written_note(
        groups, through=through, at=len(files), max_chars=8000, recent=10, retrieval=retrieval
    )
    assert note is not None and note.text.count("\n=== ") >= 1
    counter = TokenCounter()
    assert note_tokens(note, counter) == TokenCounter().count_message(note)
    plain = Message("user", "[a header]\nno section here", iteration=0)
    assert note_tokens(plain, counter) == TokenCounter().count_message(plain)
