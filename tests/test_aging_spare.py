"""Issue 18 (``Age(spare_held=True)``, the default): a kept line a condensed note leaves out as a
repeat (held by an earlier note, or kept under a newer iteration of the same note) takes no place
among the lines its iteration keeps: the choice knows the lines held elsewhere, counts what they
name as shown, and lets the next line in. Which lines stay, the memoized path equal to the plain
one, the own lines alike, the knob's validation and JSON."""

from __future__ import annotations

import orjson
import pytest
from condensed_notes import kept_lines

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent.context.aging._condense import Terse, condensed_note, held_lines
from tiered_agent.context.aging._forms import FormsMemo, condensed
from tiered_agent.context.aging._step import Age

READ = [f"value_{i} = {i}00" for i in range(1, 9)]  # 8 lines, each naming what no other line names


def _run(k: int, command: str, output: str, text: str = "Run it.") -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": command}).decode())
    return k, (
        Message("assistant", text, (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def _before() -> frozenset[str]:
    """The kept lines of an earlier note whose only iteration printed the read's first line."""
    older = condensed_note([_run(1, "grep value_1 conf.py", READ[0])], retrieval=False, novel=2)
    return held_lines(older)


@pytest.mark.parametrize(("spare", "kept"), [(False, READ[1:2]), (True, READ[1:3])])
def test_a_line_an_earlier_note_holds_takes_no_place(spare: bool, kept: list[str]) -> None:
    chunk = [_run(2, "cat conf.py", "\n".join(READ))]
    terse = Terse(across=True, spare=spare)
    note = condensed_note(chunk, retrieval=False, novel=2, terse=terse, before=_before())
    # the read's first line is in the earlier note: without spare its place is lost, with it the
    # next line comes in (2 lines shown, as the budget says)
    assert kept_lines(note, 2) == kept
    memoized = condensed(chunk, retrieval=False, novel=2, memo=FormsMemo(), terse=terse, before=_before())
    assert memoized.text == note.text


def test_a_line_a_newer_iteration_keeps_was_never_chosen() -> None:
    # what a newer iteration's kept line names is shown already: the same line is not chosen again,
    # with or without spare (only a short output, kept whole, repeats one; it spends no budget)
    chunk = [_run(1, "cat conf.py", "\n".join(READ)), _run(2, "grep value_1 conf.py", READ[0])]
    notes = [
        condensed_note(chunk, retrieval=False, novel=2, terse=Terse(repeats=True, spare=spare))
        for spare in (False, True)
    ]
    assert [kept_lines(note, 1) for note in notes] == [READ[1:3], READ[1:3]]


def test_what_a_held_line_names_counts_as_shown() -> None:
    # the older iteration's lines name only what the held line names: none is kept for it
    chunk = [
        _run(2, "cat conf.py", "\n".join(["value_1 = 100", "see value_1", "also value_1 here", *READ[1:6]]))
    ]
    note = condensed_note(
        chunk, retrieval=False, novel=2, terse=Terse(across=True, spare=True), before=_before()
    )
    assert kept_lines(note, 2) == READ[1:3]


@pytest.mark.parametrize(("spare", "kept"), [(False, []), (True, ["second_helper = 2"])])
def test_the_agent_own_lines_alike(spare: bool, kept: list[str]) -> None:
    older = condensed_note([_run(1, "grep first_helper x.py", "first_helper = 1")], retrieval=False)
    pad = "# the helpers the next steps use, written once and read again from the file " * 2
    script = f"cat > x.py <<'EOF'\n{pad}\nfirst_helper = 1\nsecond_helper = 2\nEOF"  # past the line's cut
    terse = Terse(across=True, spare=spare)
    note = condensed_note(
        [_run(2, script, "")], retrieval=False, own=1, terse=terse, before=held_lines(older)
    )
    assert kept_lines(note, 2) == kept


def test_the_knob_is_validated_and_round_trips() -> None:
    with pytest.raises(ConfigurationError, match="spare_held"):
        Age(spare_held=1)  # type: ignore[arg-type]
    assert Age().terse() == Terse(True, True, True, True)  # on by default
    assert not Age(spare_held=False).terse().spare
    # nothing is left out as a repeat: no place to spare
    assert not Age(unique_lines=False, across_notes=False).terse().spare
    step = Age(spare_held=False)
    assert Policy.from_dict(Policy("p", [step]).to_dict()).steps == (step,)
