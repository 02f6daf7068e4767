"""A sub-agent's report (Claude Code's ``Task``) stays whole when its iteration ages or is condensed."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent import Message, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent.context.aging._condense import condensed_note
from tiered_agent.context.aging._forms import AgedStyle, FormsMemo, age_batch, condensed
from tiered_agent.context.aging._reports import Reports
from tiered_agent.context.steps import Age, step_from_dict

SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix the loader.")
REPORT = "\n".join(f"Finding {n}: module_{n}.py defines handler_{n} at line {n * 10}." for n in range(1, 41))


def _iteration(k: int, tool: str, output: str) -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", tool, json.dumps({"prompt": f"look into part {k}"}))
    return k, (
        Message("assistant", f"Step {k}.", (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name=tool, iteration=k),
    )


def _later(k: int) -> tuple[int, tuple[Message, ...]]:
    return _iteration(k, "Bash", "ok")


def test_an_aged_report_stays_whole_and_another_tools_output_is_cut() -> None:
    batch = [_iteration(1, "Task", REPORT), _iteration(2, "Read", REPORT), _later(3)]
    style = AgedStyle(max_lines=6, head_lines=1, min_chars=100, reports=Reports(frozenset({"Task"}), 5_000))
    forms = age_batch(style, (SYSTEM, TASK), batch, 1, 2)
    assert forms[1][1].text == REPORT
    assert forms[2][1].text.startswith("[older output: ")
    assert "handler_40" not in forms[2][1].text  # named by the newer, whole report: not novel
    plain = age_batch(AgedStyle(max_lines=6, head_lines=1, min_chars=100), (SYSTEM, TASK), batch, 1, 2)
    assert plain[1][1].text.startswith("[older output: ")


def test_a_condensed_note_keeps_a_report_whole_under_its_line() -> None:
    chunk = [_iteration(1, "Task", REPORT), _iteration(2, "Read", REPORT)]
    note = condensed_note(chunk, retrieval=False, reports=Reports(frozenset({"Task"}), 5_000)).text
    lines = note.splitlines()
    assert lines[1].startswith("1. Step 1. → Task: look into part 1 → 40 lines")
    assert lines[2 : 2 + 40] == [f"    {line}" for line in REPORT.splitlines()]
    assert lines[42].startswith("2. Step 2. → Read: look into part 2")
    assert len(lines) == 43  # the Read output, 40 lines long, keeps none under its line
    without = condensed_note(chunk, retrieval=False).text.splitlines()
    assert len(without) == 3


def test_the_default_keeps_claude_codes_task_reports_and_the_knob_is_validated() -> None:
    assert Age().keep_tools == ("Task", "Agent")
    restored = step_from_dict({**Age(keep_tools=("delegate",)).to_dict(), "keep_tools": ["delegate"]})
    assert isinstance(restored, Age) and restored.keep_tools == ("delegate",)
    assert restored.style(True).reports == Reports(frozenset({"delegate"}), 50_000)
    with pytest.raises(ConfigurationError, match=r"Age\.keep_tools must be a list of tool names"):
        Age(keep_tools=("",))
    with pytest.raises(ConfigurationError, match=r"Age\.keep_tools"):
        Age(keep_tools="Task")  # type: ignore[arg-type]


def test_a_report_over_the_size_limit_ages_like_any_output() -> None:
    batch = [_iteration(1, "Task", REPORT), _later(2)]
    small = Reports(frozenset({"Task"}), len(REPORT) - 1)
    forms = age_batch(
        AgedStyle(max_lines=6, head_lines=1, min_chars=100, reports=small), (SYSTEM, TASK), batch, 1, 1
    )
    assert forms[1][1].text.startswith("[older output: ")
    note = condensed_note(batch[:1], retrieval=False, reports=small).text
    assert len(note.splitlines()) == 2
    with pytest.raises(ConfigurationError, match=r"Age\.keep_max_chars must be >= 0"):
        Age(keep_max_chars=-1)


_KEEP = (f"Keep loader_{n}.py as it is; only fix the cache in cache_{n}.py." for n in range(8))
STEER = "\n".join(["Stop: do not touch the public API.", *_KEEP])


def _steered(k: int, text: str) -> tuple[int, tuple[Message, ...]]:
    """Iteration ``k``: a person's message, then the agent's call and its output."""
    _, messages = _iteration(k, "Bash", "ok")
    return k, (Message("user", text, iteration=k), *messages)


def test_a_persons_later_message_stays_whole_at_both_levels_up_to_its_limit() -> None:
    """The human steering the session (a later ``user`` message) is the task as it changes: aged or
    condensed, a message of at most ``keep_user_chars`` stays whole; a longer one (a pasted log)
    ages like an output."""
    batch = [_steered(1, STEER), _later(2)]
    keep = Reports(user_max_chars=len(STEER))
    aged = age_batch(
        AgedStyle(max_lines=3, head_lines=1, min_chars=100, reports=keep), (SYSTEM, TASK), batch, 1, 1
    )
    assert aged[1][0].text == STEER
    note = condensed_note(batch[:1], retrieval=False, reports=keep).text.splitlines()
    assert note[3 : 3 + 9] == [f"    {line}" for line in STEER.splitlines()]  # after the output's line
    short = Reports(user_max_chars=len(STEER) - 1)
    cut = age_batch(
        AgedStyle(max_lines=3, head_lines=1, min_chars=100, reports=short), (SYSTEM, TASK), batch, 1, 1
    )
    assert (
        cut[1][0].text != STEER
        and "cache_7.py" not in condensed_note(batch[:1], retrieval=False, reports=short).text
    )
    assert Age().reports().user_max_chars == 0  # off in tiered
    assert Age(keep_user_chars=2_000).reports().user_max_chars == 2_000
    with pytest.raises(ConfigurationError, match=r"Age\.keep_user_chars must be >= 0"):
        Age(keep_user_chars=-1)


def test_a_later_user_message_repeating_an_earlier_one_word_for_word_is_not_kept_again() -> None:
    """A harness's boilerplate (mini-swe-agent's format reminder, sent again as a user message) is
    not a person's words: the copy after the first ages like an output at both levels; a message
    that differs stays whole. "Earlier" is what the decision is given (the task, the older
    iterations of the batch or chunk), so it is fixed when the iteration ages."""
    other = STEER.replace("Stop:", "Wait:")
    batch = [_steered(1, STEER), _steered(2, STEER), _steered(3, other), _later(4)]
    keep = Reports(user_max_chars=len(STEER))
    style = AgedStyle(max_lines=3, head_lines=1, min_chars=100, reports=keep)
    aged = age_batch(style, (SYSTEM, TASK), batch, 1, 3)
    assert aged[1][0].text == STEER and aged[3][0].text == other
    assert aged[2][0].text.startswith("[older message: ") and "cache_7.py" not in aged[2][0].text
    assert age_batch(style, (SYSTEM, TASK), batch[1:], 2, 3)[2][0].text == STEER  # its source not given
    note = condensed_note(batch[:3], retrieval=False, reports=keep).text.splitlines()
    assert note.count("    Stop: do not touch the public API.") == 1
    assert note.count("    Keep loader_7.py as it is; only fix the cache in cache_7.py.") == 2  # 1 and 3
    assert note.count("    Wait: do not touch the public API.") == 1


@settings(max_examples=40, deadline=None)
@given(st.lists(st.sampled_from([None, STEER, STEER.upper(), "ok"]), min_size=3, max_size=9))
def test_repeats_are_decided_the_same_through_a_runs_memo_as_without(users: list[str | None]) -> None:
    """Aged forms and notes with person's messages (repeated or not) read through a run's memo, as
    the batch or chunk grows and moves, are those rendered without one: the memo's keys hold what
    the decision reads."""
    batch = [_steered(k, text) if text else _later(k) for k, text in enumerate(users, 1)]
    keep = Reports(user_max_chars=len(STEER))
    style = AgedStyle(max_lines=3, head_lines=1, min_chars=100, reports=keep)
    memo = FormsMemo()
    for first in range(1, len(batch)):
        for at in range(first + 1, len(batch) + 1):
            part = batch[first - 1 : at]
            assert age_batch(style, (SYSTEM, TASK), part, first, at - 1, memo=memo) == age_batch(
                style, (SYSTEM, TASK), part, first, at - 1
            )
            note = condensed(part[:-1], retrieval=False, later=part[-1][1], reports=keep, memo=memo)
            assert note == condensed_note(part[:-1], retrieval=False, later=part[-1][1], reports=keep)
