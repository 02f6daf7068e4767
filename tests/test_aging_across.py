"""Issue 18 (``Age(across_notes=True)``, the default): a condensed note leaves out the
kept lines an earlier note holds (notes never change once written, so those lines are still in the
prompt). Which lines go and stay, the step's render and the aging state's count of the waiting
note agreeing, the memoized path equal to the plain one, the knob's validation and JSON."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest
from condensed_notes import kept_lines
from scripted_runs import ScriptedRun

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._importers import load_runs
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.aging._breakeven import CacheTerms
from tiered_agent.context.aging._condense import Terse, condensed_note, held_lines
from tiered_agent.context.aging._forms import FormsMemo, condensed
from tiered_agent.context.aging._schedule import AgingSchedule, Epoch
from tiered_agent.context.aging._state import AgingState
from tiered_agent.context.aging._step import Age, iteration_groups

pytestmark = pytest.mark.anyio

UPDATED = "Updated 1 path from the index"


def _run(k: int, command: str, output: str) -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": command}).decode())
    return k, (
        Message("assistant", "Run it.", (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def _chunks() -> tuple[list[tuple[int, tuple[Message, ...]]], list[tuple[int, tuple[Message, ...]]]]:
    older = [_run(1, "git checkout a.py", UPDATED), _run(2, "python x.py", "ok 1")]
    newer = [_run(3, "git checkout a.py", UPDATED), _run(4, "python x.py", "ok 2")]
    return older, newer


def test_held_lines_are_the_kept_lines_without_their_indent() -> None:
    older, _ = _chunks()
    note = condensed_note(older, retrieval=False, novel=5)
    assert held_lines(note) == {UPDATED, "ok 1"}


def test_a_line_an_earlier_note_holds_is_left_out_only_with_across() -> None:
    older, newer = _chunks()
    before = held_lines(condensed_note(older, retrieval=False, novel=5))
    plain = condensed_note(newer, retrieval=False, novel=5, before=before)
    assert [kept_lines(plain, k) for k in (3, 4)] == [[UPDATED], ["ok 2"]]  # off: ``before`` unused
    across = condensed_note(newer, retrieval=False, novel=5, before=before, terse=Terse(across=True))
    assert [kept_lines(across, k) for k in (3, 4)] == [[], ["ok 2"]]
    assert len(across.text) == len(plain.text) - len(f"\n    {UPDATED}")
    memoized = condensed(
        newer, retrieval=False, novel=5, memo=FormsMemo(), terse=Terse(across=True), before=before
    )
    assert memoized.text == across.text


def _history() -> list[Message]:
    older, newer = _chunks()
    rest = [_run(5, "git checkout a.py", UPDATED)]
    rest += [_run(k, f"cat f{k}.py", f"line {k}") for k in range(6, 12)]
    head = [Message("system", "sys"), Message("user", "fix it")]
    return head + [m for _, messages in [*older, *newer, *rest] for m in messages]


@pytest.mark.parametrize("across", [False, True])
def test_the_step_and_the_state_leave_the_same_lines_out(across: bool) -> None:
    step = Age(across_notes=across, min_chars=0, keep_novel=5)
    history = _history()
    schedule = AgingSchedule((Epoch(6, 4, 2), Epoch(8, 6, 4)))
    groups = iteration_groups(history)
    aged = step._render(schedule, tuple(history), False, None)
    second = aged.notes[2]
    assert [kept_lines(second, k) for k in (3, 4)] == [[] if across else [UPDATED], ["ok 2"]]
    assert aged.held == (held_lines(aged.notes[1]) | held_lines(second) if across else frozenset())
    # the aging state counts the notes as rendered, and the waiting chunk's note without what they hold
    counter = TokenCounter()
    state = AgingState(step, counter=counter, terms=CacheTerms(), retrieval=False)
    state.restore(schedule)  # as on resume: everything from the schedule
    state._absorb(history)
    state._account()
    assert state._notes == sum(counter.count_message(n) for n in aged.notes[1:])
    assert state._held == aged.held
    waiting = step.note(groups, (5, 6, 11), False, before=aged.held)
    assert waiting is not None and kept_lines(waiting, 5) == ([] if across else [UPDATED])
    assert waiting is not None and state._condense_saving(6, 11)[1] == counter.count_message(waiting)


def test_the_knob_is_validated_and_round_trips() -> None:
    with pytest.raises(ConfigurationError, match="across_notes"):
        Age(across_notes=1)  # type: ignore[arg-type]
    step = Age(across_notes=True)
    assert step.terse() == Terse(True, True, True, True)
    assert Age().across_notes and not Age(across_notes=False).terse().across  # on by default
    policy = Policy("p", [step])
    assert Policy.from_dict(policy.to_dict()).steps == (step,)


# ----------------------------------------------------------------------------- live, resumed, replayed
TRACES = Path(__file__).resolve().parents[1] / "traces"


def _across(on: bool = True) -> Policy:
    """``tiered`` (the default: on) with ``Age(across_notes=on)``."""
    tiered = PRESETS["tiered"]
    steps = tuple(dataclasses.replace(s, across_notes=on) if isinstance(s, Age) else s for s in tiered.steps)
    return tiered.replace(name="across", steps=steps)


async def test_the_resumed_prompts_are_the_live_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = load_runs([TRACES / "mini-swe-agent" / "matplotlib__matplotlib-26466.jsonl"]).runs[0]
    scripted = ScriptedRun.of(run, _across(), monkeypatch)
    whole = await scripted.whole(tmp_path / "a")
    stop = 30
    rest = await scripted.resumed(stop, tmp_path / "b")
    # every prompt after resuming is the live one: the schedule and what the rule had accrued come
    # back from the trace's records
    assert [r.messages for r in rest.requests] == [r.messages for r in whole.requests[stop:]]
    live = whole.requests[stop]
    assert len(_held(live.messages)) >= 3 and not _repeated(_held(live.messages))
    plain = await scripted.whole(tmp_path / "c", policy=_across(False), calls=stop + 1)
    assert _repeated(_held(plain.requests[stop].messages))  # what the notes repeat without it


def _held(messages: list[dict[str, Any]]) -> list[frozenset[str]]:
    """The kept lines of each note of a prompt."""
    texts = [m["content"] or "" for m in messages]
    return [held_lines(Message("user", t)) for t in texts if t.startswith("[Iterations ")]


def _repeated(held: list[frozenset[str]]) -> set[str]:
    return {line for i, lines in enumerate(held) for line in lines if any(line in h for h in held[:i])}
