"""Issue 18 (``Age(fade_after=N, fade_keep=K)``, off by default): a third level. A condensed note
whose chunk is at least N iterations behind the condensed boundary fades to its iteration lines and,
under each, at most K of its kept lines, those naming what the agent named since the note was written;
its head still names the chunk's retrieval call. What stays and goes, the schedule's and the records'
new fields, the step and the aging state agreeing, the break-even rule counting the re-sent notes,
and resume deciding as the live run."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import orjson
import pytest
from condensed_notes import kept_lines
from scripted_runs import ScriptedRun

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent._tokens import TokenCounter
from tiered_agent._trace import AgingCarry, AgingRecord, ContextRecord
from tiered_agent.bench._importers import load_runs
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.aging._breakeven import CacheTerms
from tiered_agent.context.aging._condense import call_line, faded_note
from tiered_agent.context.aging._forms import FormsMemo
from tiered_agent.context.aging._schedule import AgingSchedule, Epoch
from tiered_agent.context.aging._state import AgingState, schedule_from_records
from tiered_agent.context.aging._step import Age

pytestmark = pytest.mark.anyio

NOTE = (
    '[Iterations 1-2, one line each; full text: context_retrieve(iteration="1-2")]\n'
    "1. Look. → bash: cat a.py → exit 0, 40 lines\n"
    "    def parse_args(argv):\n"
    "    MAX_DEPTH = 12\n"
    "    def other_helper():\n"
    "2. Run. → bash: python a.py → exit 1: ValueError\n"
    "    File a.py, line 3, in parse_args\n"
    "    report_line_1"
)


def test_a_faded_note_keeps_its_lines_and_what_was_named_since() -> None:
    note = Message("user", NOTE, iteration=1)
    faded = faded_note(note, {"parse_args", "MAX_DEPTH", "report_line_1"}, keep=1).message
    assert faded.iteration == 1
    assert faded.text.splitlines()[0] == (
        "[Iterations 1-2, one line each, faded (most kept lines dropped); "
        'full text: context_retrieve(iteration="1-2")]'
    )
    assert kept_lines(faded, 1) == ["def parse_args(argv):"]  # the first of the two named since
    assert kept_lines(faded, 2) == ["File a.py, line 3, in parse_args"]
    both = faded_note(note, {"parse_args", "MAX_DEPTH"}, keep=4).message
    assert kept_lines(both, 1) == ["def parse_args(argv):", "MAX_DEPTH = 12"]
    bare = faded_note(note, set(), keep=4).message
    assert [line for line in bare.text.splitlines() if line.startswith("    ")] == []
    assert len(bare.text.splitlines()) == 3  # the head and the two iteration lines
    # a sub-agent's report keeps its iteration's lines whole
    whole = faded_note(note, set(), keep=0, whole={2}).message
    assert kept_lines(whole, 2) == ["File a.py, line 3, in parse_args", "report_line_1"]
    assert kept_lines(whole, 1) == []


def test_a_faded_note_may_keep_any_line_or_those_naming_what_no_newer_output_shows() -> None:
    note = Message("user", NOTE, iteration=1)
    first = faded_note(note, None, keep=1).message  # any kept line, up to 1 per iteration
    assert [kept_lines(first, k) for k in (1, 2)] == [
        ["def parse_args(argv):"],
        ["File a.py, line 3, in parse_args"],
    ]
    unseen = faded_note(note, None, keep=8, shown={"parse_args", "argv", "a.py", "report_line_1"}).message
    assert [kept_lines(unseen, k) for k in (1, 2)] == [["MAX_DEPTH = 12", "def other_helper():"], []]
    # its lines may stand for the iterations' own (the calls alone, :func:`call_line`)
    calls = faded_note(note, set(), keep=0, lines={1: "1. bash: cat a.py → exit 0, 40 lines"}).message
    assert calls.text.splitlines()[1:] == ["1. bash: cat a.py → exit 0, 40 lines", NOTE.splitlines()[5]]


def test_a_line_without_reasoning_is_the_calls_and_what_came_back() -> None:
    assert (
        call_line(3, _run(3, "mod")) == "3. bash: cat mod_3.py → 30 lines"
    )  # no reasoning; no exit code recorded


def test_the_parts_of_a_faded_note_count_as_its_text() -> None:
    faded = faded_note(Message("user", NOTE, iteration=1), {"MAX_DEPTH"}, keep=2)
    assert "".join(faded.parts) == faded.message.text
    counter = TokenCounter()
    assert faded.tokens(counter) == counter.count_message(faded.message)


def test_the_schedule_records_what_faded_and_when() -> None:
    schedule = AgingSchedule((Epoch(8, 6, 2), Epoch(12, 10, 6), Epoch(20, 18, 14, 6), Epoch(30, 28, 20, 14)))
    assert schedule.faded == 14
    assert list(schedule.chunks()) == [(1, 2, 8), (3, 6, 12), (7, 14, 20), (15, 20, 30)]
    assert list(schedule.fades()) == [(2, 20), (6, 20), (14, 30)]
    assert AgingSchedule.from_list(schedule.to_list()) == schedule
    assert Epoch(8, 6, 2).to_dict() == {"at": 8, "through": 6, "condensed": 2}  # as before
    assert schedule.upto(5).faded == 5
    with pytest.raises(ValueError, match="faded"):
        Epoch(8, 6, 2, 4)
    with pytest.raises(ValueError, match="go back"):
        AgingSchedule((Epoch(8, 6, 2, 2), Epoch(9, 7, 2, 0)))


def test_the_records_round_trip_and_older_ones_read_as_nothing_faded() -> None:
    carry = AgingCarry(rent=3.0, rent_condense=1.0, rent_fade=2.5)
    record = AgingRecord(18, 14, (20, 18, 14), carry, faded=6)
    assert AgingRecord.from_dict(orjson.loads(orjson.dumps(record.to_dict()))) == record
    assert "rent_fade" not in AgingCarry(rent=1.0).to_dict()  # records without fading stay as they were
    assert "faded" not in AgingRecord(4, 2).to_dict()
    assert AgingRecord.from_dict({"through": 4, "carry": {**AgingCarry().to_dict()}}) == AgingRecord(
        4, carry=AgingCarry()
    )
    assert AgingCarry.from_dict({**AgingCarry().to_dict(), "rent_fade": "x"}) is None
    context = {"aging": record.to_dict()}
    records = [ContextRecord.from_dict(context)]
    assert schedule_from_records(records) == AgingSchedule((Epoch(20, 18, 14, 6),))
    hostile = {"aging": {**record.to_dict(), "faded": 99}}  # more faded than condensed: left out
    assert schedule_from_records([ContextRecord.from_dict(hostile)]) == AgingSchedule()


def _run(k: int, name: str) -> tuple[Message, ...]:
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": f"cat {name}_{k}.py"}).decode())
    lines = "\n".join(f"value_{k}_{j} = compute_{k}_{j}()" for j in range(30))
    return (
        Message("assistant", f"Read it, use value_{k - 6}_3 and value_{k - 12}_3.", (call,), iteration=k),
        Message("tool", lines, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def _history(n: int) -> list[Message]:
    head = [Message("system", "sys"), Message("user", "fix it")]
    return head + [m for k in range(1, n + 1) for m in _run(k, "mod")]


def test_the_step_renders_faded_notes_and_the_state_counts_them() -> None:
    step = Age(fade_after=0, fade_keep=2)
    history = _history(24)
    schedule = AgingSchedule((Epoch(10, 8, 4), Epoch(16, 14, 10), Epoch(22, 20, 16, 10)))
    aged = step._render(schedule, tuple(history), False, None)
    notes = aged.notes[1:]
    assert [("faded" in n.text.splitlines()[0]) for n in notes] == [True, True, False]
    # iteration 3's note keeps, of its lines, the one the agent named again since (iteration 15)
    unfaded = Age()._render(AgingSchedule(schedule.epochs[:2]), tuple(history), False, None).notes[1:]
    assert len(kept_lines(unfaded[0], 3)) > 1 and "value_3_3 = compute_3_3()" in kept_lines(unfaded[0], 3)
    assert kept_lines(notes[0], 3) == ["value_3_3 = compute_3_3()"]
    # iterations 5-10 (condensed at 16) were named again by 17-22 (as value_{k-12}_3): 5-10 keep one
    assert [kept_lines(notes[1], k) for k in (5, 10)] == [
        ["value_5_3 = compute_5_3()"],
        ["value_10_3 = compute_10_3()"],
    ]
    # the render follows the schedule: without the fade, the same notes as written
    plain = AgingSchedule((*schedule.epochs[:2], Epoch(22, 20, 16)))
    assert [n.text for n in step._render(plain, tuple(history), False, None).notes[1:3]] == [
        n.text for n in unfaded
    ]
    counter = TokenCounter()
    state = AgingState(step, counter=counter, terms=CacheTerms(), retrieval=False)
    state.restore(schedule)
    state._absorb(history)
    state._account()
    assert state._notes == sum(counter.count_message(n) for n in notes)
    # the memoized render (the run's) equals the plain one
    assert step._render(schedule, tuple(history), False, FormsMemo()).notes == aged.notes


def _decide(
    step: Age, history: list[Message], schedule: AgingSchedule, rent: float, calls: int = 30
) -> AgingState:
    """The aging state of a run of ``calls`` calls with ``rent`` paid toward fading."""
    state = AgingState(step, counter=TokenCounter(), terms=CacheTerms(), retrieval=False)
    state.restore(schedule, AgingCarry(calls=calls, rent_fade=rent))
    state._absorb(history)
    state._account()
    return state


def test_a_fade_goes_along_with_an_epoch_once_its_rent_covers_the_notes_it_re_sends() -> None:
    step = Age(fade_after=0, fade_keep=2)
    history = _history(24)
    schedule = AgingSchedule((Epoch(10, 8, 4), Epoch(16, 14, 10)))
    epoch = Epoch(22, 20, 16)
    poor = _decide(step, history, schedule, 0.0)
    assert poor._fade_along(epoch, 22) == epoch  # nothing paid yet: no fade
    rich = _decide(step, history, schedule, 1e9)
    assert rich._fade_along(epoch, 22) == Epoch(22, 20, 16, 10)
    off = _decide(Age(), history, schedule, 1e9)
    assert off._fade_along(epoch, 22) == epoch
    # only the chunk 6 behind: it saves less than the rewrite from it costs, which pays back only in
    # a long run (within a third of the calls made so far)
    assert _decide(Age(fade_after=6), history, schedule, 1e9)._fade_along(epoch, 22) == epoch
    later = _decide(Age(fade_after=6), history, schedule, 1e9, calls=10_000)
    assert later._fade_along(epoch, 22) == Epoch(22, 20, 16, 4)


def test_a_cold_only_fade_waits_for_a_request_that_finds_nothing_cached() -> None:
    """``fade_cold``: the fade goes along only with a request after an idle gap past the cache's
    lifetime (the whole prompt is written again anyway), never on a warm one, whatever was paid."""
    step = Age(fade_after=0, fade_keep=2, fade_cold=True)
    terms = CacheTerms(read=0.1, write=1.25, explicit=True, ttl_s=300.0)
    history = _history(24)
    schedule = AgingSchedule((Epoch(10, 8, 4), Epoch(16, 14, 10)))
    epoch = Epoch(22, 20, 16)
    state = AgingState(step, counter=TokenCounter(), terms=terms, retrieval=False)
    state.restore(schedule, AgingCarry(calls=30, rent_fade=1e9))
    state._absorb(history)
    state._account()
    state.idle.observe(1_000.0, terms)
    state.idle.observe(1_060.0, terms)  # a minute after the previous request: warm
    assert state._fade_along(epoch, 22) == epoch
    state.idle.observe(2_000.0, terms)  # 940 s later: the cache expired
    assert state._fade_along(epoch, 22) == Epoch(22, 20, 16, 10)
    # without fade_cold the warm request fades as well
    warm = AgingState(
        dataclasses.replace(step, fade_cold=False), counter=TokenCounter(), terms=terms, retrieval=False
    )
    warm.restore(schedule, AgingCarry(calls=30, rent_fade=1e9))
    warm._absorb(history)
    warm._account()
    warm.idle.observe(1_000.0, terms)
    warm.idle.observe(1_060.0, terms)
    assert warm._fade_along(epoch, 22) == Epoch(22, 20, 16, 10)


def test_the_knobs_are_validated_and_round_trip() -> None:
    with pytest.raises(ConfigurationError, match="fade_after"):
        Age(fade_after=-1)
    with pytest.raises(ConfigurationError, match="fade_keep"):
        Age(fade_keep=-1)
    with pytest.raises(ConfigurationError, match="refresh_chunks"):
        Age(fade_after=4, refresh_chunks=True)
    with pytest.raises(ConfigurationError, match="fade_named"):
        Age(fade_named="never")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="fade_reasoning"):
        Age(fade_reasoning=0)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="fade_cold"):
        Age(fade_cold=1)  # type: ignore[arg-type]
    step = Age(fade_after=10, fade_keep=1, fade_named="unseen", fade_reasoning=False, fade_cold=True)
    assert Policy.from_dict(Policy("p", [step]).to_dict()).steps == (step,)
    assert Age().fade_after is None


# ----------------------------------------------------------------------------- live, resumed
TRACES = Path(__file__).resolve().parents[1] / "traces"


def _fading() -> Policy:
    tiered = PRESETS["tiered"]
    steps = tuple(
        dataclasses.replace(s, fade_after=0, fade_keep=1, fade_cold=False) if isinstance(s, Age) else s
        for s in tiered.steps
    )
    return tiered.replace(name="fade", steps=steps)


def _faded(messages: list[dict[str, object]]) -> int:
    """The faded notes of a prompt."""
    texts = [str(m["content"] or "") for m in messages]
    return sum(1 for t in texts if t.startswith("[Iterations ") and "faded" in t.split("\n", 1)[0])


async def test_the_resumed_prompts_are_the_live_ones(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run = load_runs([TRACES / "mini-swe-agent" / "matplotlib__matplotlib-26466.jsonl"]).runs[0]
    scripted = ScriptedRun.of(run, _fading(), monkeypatch)
    whole = await scripted.whole(tmp_path / "a")
    faded = [_faded(r.messages) for r in whole.requests]
    stop = next(i for i, n in enumerate(faded) if n) - 1  # stop right before the first fade
    rest = await scripted.resumed(stop, tmp_path / "b")
    # the fade, decided after resuming on what the rule had accrued before it, is the live one
    assert [r.messages for r in rest.requests] == [r.messages for r in whole.requests[stop:]]
    assert max(faded) >= 2


def test_a_faded_note_keeps_whole_what_the_condensed_note_kept_whole() -> None:
    """With ``keep_user_chars``, a user message repeating an older one of the chunk word for word is
    boilerplate the condensed note did not keep whole: its iteration fades like any other."""
    from tiered_agent.context.aging._reports import Reports
    from tiered_agent.context.aging._step import _whole

    reminder = "Please always provide EXACTLY ONE action in triple backticks."
    chunk = [
        (k, (Message("assistant", f"step {k}", iteration=k), Message("user", text, iteration=k)))
        for k, text in ((1, reminder), (2, "ok"), (3, reminder))
    ]
    assert _whole(chunk, Reports(user_max_chars=2_000)) == {1, 2}
    assert _whole(chunk, Reports(user_max_chars=0)) == set()
    assert _whole(chunk, Reports(user_max_chars=10)) == {2}
