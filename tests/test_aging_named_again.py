"""Issue 18 candidates (off by default): a condensed read whose file the agent names again keeps
more novel lines (``Age(named_again=N)``), and every chunk's kept lines chosen again at each
condensing epoch from what came after it (``Age(refresh_chunks=True)``): the budget on exact
numbers, the notes, the memoized path equal to the plain one, the knobs' validation and JSON."""

from __future__ import annotations

import orjson
import pytest
from condensed_notes import kept_lines, read_iteration

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent.context.aging._condense import NovelScale, condensed_note
from tiered_agent.context.aging._forms import FormsMemo, condensed
from tiered_agent.context.aging._schedule import AgingSchedule, Epoch
from tiered_agent.context.aging._step import Age, iteration_groups


def _read(k: int, lines: int, path: str) -> tuple[int, tuple[Message, ...]]:
    return read_iteration(k, lines, f"sed -n '1,200p' {path}")


def _edit(k: int, path: str, text: str = "Now edit it.") -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": f"apply_patch {path}"}).decode())
    return k, (
        Message("assistant", text, (call,), iteration=k),
        Message("tool", "Done!", tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


@pytest.mark.parametrize(
    ("scale", "again", "budget"),
    [
        (NovelScale(8, 40), False, 13),  # ceil(100 / 8)
        (NovelScale(8, 40, 2), False, 13),  # not named again: unchanged
        (NovelScale(8, 40, 2), True, 25),  # ceil(200 / 8)
        (NovelScale(8, 20, 3), True, 20),  # capped
    ],
)
def test_the_budget_of_a_read_named_again(scale: NovelScale, again: bool, budget: int) -> None:
    assert scale.budget(5, 100, again) == budget


def test_a_read_whose_file_is_named_again_keeps_more_lines() -> None:
    chunk = [_read(1, 100, "src/big.py"), _read(2, 100, "src/other.py")]
    later = _edit(3, "src/big.py")[1]
    scale = NovelScale(8, 40, 2)
    note = condensed_note(chunk, retrieval=False, later=later, novel=5, scale=scale)
    assert [len(kept_lines(note, k)) for k in (1, 2)] == [25, 13]
    off = condensed_note(chunk, retrieval=False, later=later, novel=5, scale=NovelScale(8, 40))
    assert [len(kept_lines(off, k)) for k in (1, 2)] == [13, 13]
    memo = FormsMemo()
    memoized = condensed(chunk, retrieval=False, later=later, referred=8, novel=5, scale=scale, memo=memo)
    plain = condensed(chunk, retrieval=False, later=later, referred=8, novel=5, scale=scale)
    assert memoized.text == plain.text and [len(kept_lines(plain, k)) for k in (1, 2)] == [25, 13]


def test_a_refreshed_chunk_keeps_what_the_agent_referred_to_since() -> None:
    """At a later epoch the chunk's referred lines count what the agent named after it was first
    condensed; what those later messages name does not hide novel lines (they may be hidden too)."""
    history = [Message("system", "s"), Message("user", "Fix big.py.")]
    history.extend(_read(1, 100, "big.py")[1])
    for k in range(2, 9):
        history.extend(_edit(k, "x.py", "Keep going.")[1])
    history.extend(_edit(9, "x.py", "handler_1_90 is the one to change.")[1])
    groups = iteration_groups(history)
    schedule = AgingSchedule((Epoch(6, 4, 2), Epoch(10, 8, 6)))
    step = Age(keep_novel=0, novel_per_lines=50, refresh_chunks=True)
    fixed = step.note(groups, (1, 2, 6), retrieval=False)
    again = step.note(groups, (1, 2, 6), retrieval=False, now=10)
    assert fixed is not None and again is not None
    assert not any("handler_1_90" in line for line in kept_lines(fixed, 1))
    assert any("handler_1_90" in line for line in kept_lines(again, 1))
    assert len(kept_lines(again, 1)) == len(kept_lines(fixed, 1)) + 1
    memo = FormsMemo()
    assert step.note(groups, (1, 2, 6), retrieval=False, memo=memo, now=10) == again
    assert step._notes(groups, schedule, False, memo)[0][0] == again  # every chunk, as of the last epoch


def test_the_knobs_are_validated_and_round_trip_through_json() -> None:
    policy = Policy("p", (Age(named_again=3, refresh_chunks=True),))
    data = orjson.loads(orjson.dumps(policy.to_dict()))
    assert data["steps"][0]["named_again"] == 3 and data["steps"][0]["refresh_chunks"] is True
    assert Policy.from_dict(data) == policy
    assert Age().novel_scale() == NovelScale(8, 60, 2)
    for bad in (0, -1, 1.5):
        with pytest.raises(ConfigurationError, match="named_again"):
            Age(named_again=bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="refresh_chunks"):
        Age(refresh_chunks="yes")  # type: ignore[arg-type]
