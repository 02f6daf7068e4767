"""Shortcuts in the condensing decision (speed round 12, docs/bench-speed.md) give what the plain
computation gives, and take the shortcut: a chunk's notes read what each iteration keeps whole once per
chunk, a line held nowhere is found in C, the agent's own lines are scanned without a memo entry per
line, a greedy choice counts a line's names in C, and the parts of a note are counted without keeping
their ids."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent import Message, ToolCall
from tiered_agent.bench._caching import IdCounter
from tiered_agent.context.aging import _condense
from tiered_agent.context.aging._condense import ChunkReading, informative_lines, referred_lines
from tiered_agent.context.aging._refs import lines_refs, refs
from tiered_agent.context.aging._reports import Reports

NAMES = ["alpha_1", "beta_2", "gamma_3", "delta_4", "eps_5", "src/a.py", "b.txt"]
WORDS = ["plain", "words", "Run", "it."]
_line = st.lists(st.sampled_from(NAMES + WORDS), max_size=5).map(" ".join)


def _iteration(k: int, thought: str, output: list[str]) -> tuple[Message, ...]:
    call = ToolCall(f"c{k}", "bash", f'{{"command": "cat > f{k}.py <<EOF\\n{thought}\\nEOF"}}')
    return (
        Message("assistant", f"Look. {thought}", (call,), iteration=k),
        Message("tool", "\n".join(output), tool_call_id=f"c{k}", iteration=k),
    )


def test_a_chunks_notes_read_what_its_iterations_keep_whole_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Notes of one chunk under other later messages do not read its sub-agents' reports again."""
    chunk = [(k, _iteration(k, "alpha_1 beta_2", ["gamma_3 x", "delta_4 y"] * 4)) for k in (1, 2, 3)]
    read = ChunkReading(chunk, Reports(frozenset({"Task"}), 400, 200), {}, referred=2, novel=2, own=2)
    calls: list[int] = []
    rule = _condense.kept_reports

    def counted(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        return rule(*args, **kwargs)

    monkeypatch.setattr(_condense, "kept_reports", counted)
    first = read.note(read.inputs(()), retrieval=False, readings={})
    later = (Message("assistant", "now gamma_3 and eps_5", iteration=4),)
    second = read.note(read.inputs(later), retrieval=False, readings={})
    assert first is not second and len(read.notes) == 2  # two renders
    assert calls == []


def test_a_line_held_nowhere_is_told_without_a_set_built() -> None:
    """Held lines found by C-level disjointness: none held is one shared empty set; some held are
    their positions, as before."""
    at: dict[str, int | list[int]] = {"a_1 x": 0, "b_2 y": [1, 2]}
    assert _condense._held_at(at, (set(), {"c_3"})) is _condense._held_at(at, ({"z_9"},))
    assert _condense._held_at(at, ({"b_2 y"}, {"a_1 x"})) == frozenset({0, 1, 2})
    assert _condense._held_at(at, ()) == frozenset()


@settings(max_examples=60, deadline=None)
@given(st.lists(_line, max_size=12))
def test_lines_refs_are_each_lines_refs(lines: list[str]) -> None:
    assert lines_refs(lines) == tuple(refs(line) for line in lines)


def _cover_by_hand(candidates: list[tuple[int, set[str]]], seen: set[str], limit: int) -> list[int]:
    """The greedy choice counted line by line at every pick (ties: the earliest)."""
    chosen: list[int] = []
    covered = set(seen)
    while len(chosen) < limit:
        scores = [(len(names - covered), -index) for index, names in candidates if index not in chosen]
        if not scores or max(scores)[0] == 0:
            break
        best = -max(scores)[1]
        chosen.append(best)
        covered |= dict(candidates)[best]
    return chosen


@settings(max_examples=80, deadline=None)
@given(st.lists(_line, max_size=14), st.sets(st.sampled_from(NAMES)), st.integers(0, 5))
def test_the_greedy_choices_are_the_plain_ones(lines: list[str], seen: set[str], limit: int) -> None:
    """``informative_lines`` and ``referred_lines`` (their counts in C, ``seen`` gaining the chosen
    lines' names as it did) choose what counting every line again at each pick chooses."""
    named = [(i, set(refs(line))) for i, line in enumerate(lines) if refs(line)]
    first = [
        (i, names) for i, names in named if any(all(n not in o for j, o in named if j < i) for n in names)
    ]
    fresh = [(i, {n for n in names if n not in seen}) for i, names in first]
    fresh = [
        (i, names) for i, names in fresh if any(all(n not in o for j, o in named if j < i) for n in names)
    ]
    after = set(seen)
    got = informative_lines(lines, after, limit)
    expected = _cover_by_hand([(i, names) for i, names in first if names - seen], seen, limit)
    assert sorted(i for i, _ in got) == sorted(expected)
    assert after == seen.union(*(refs(lines[i]) for i in expected))
    shown: set[str] = set()
    wanted = set(seen)
    got = referred_lines(lines, wanted, shown, limit)
    expected = _cover_by_hand([(i, names & wanted) for i, names in named if names & wanted], set(), limit)
    assert [i for i, _ in got] == expected


def test_a_notes_parts_are_counted_without_keeping_their_ids() -> None:
    """``count_part`` counts what ``count_text`` counts; the bench's counter keeps the part's count,
    not the ids of the part whole (only those of its pieces, which the whole message reuses)."""
    counter = IdCounter()
    part = "\n".join(
        f"{k}. bash: cat f{k}.py → exit 0, 3 lines\n    alpha_1 = beta_2({k})" for k in range(30)
    )
    count = counter.count_part(part)
    assert part not in counter._ids
    assert count == len(counter.ids(part)) == counter.count_text(part)


def test_the_places_of_a_reading_s_lines_are_its_own_strings_one_int_each() -> None:
    """:func:`_condense._indented` files a line by the string the reading holds (no indented copy)
    and a line found once by its position alone; a line found twice keeps both positions."""
    named = ((0, "a_1 x", ("a_1",)), (3, "b_2 y", ("b_2",)), (5, "a_1 x", ("a_1",)))
    at = _condense._indented(_condense._indexed(named))
    assert at == {"a_1 x": [0, 2], "b_2 y": 1}
    assert next(k for k in at if k == "b_2 y") is named[1][1]
    assert _condense._held_at(at, ({"a_1 x"},)) == frozenset({0, 2})
