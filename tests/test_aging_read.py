"""The note of the files the agent read and still works on (``context/aging/_read.py``)."""

from __future__ import annotations

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context.aging._read import read_note, reads
from tiered_agent.context.aging._schedule import AgingSchedule, Epoch
from tiered_agent.context.aging._step import iteration_groups
from tiered_agent.context.pipeline._build import build_prompt, validate_pairs
from tiered_agent.context.steps import Age

COUNTER = TokenCounter("o200k_base")
SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix the rounding bug.")
FILE = [f"def helper_{n}(value):  # line {n}" for n in range(1, 31)]


def _iteration(k: int, command: str, output: str, text: str = "") -> list[Message]:
    """Iteration ``k``: the agent says ``text``, runs ``command`` in Codex's shell and gets ``output``."""
    arguments = json.dumps({"command": ["bash", "-lc", command]})
    return [
        Message("assistant", text or f"Step {k}.", (ToolCall(f"call_{k}", "shell", arguments),), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="shell", iteration=k),
    ]


def _codex_output(text: str) -> str:
    return json.dumps({"output": text, "metadata": {"exit_code": 0, "duration_seconds": 0.1}})


def _run(
    last: int, *, named_from: int, read_again: int | None = None, patch_at: int | None = None
) -> list[Message]:
    """The agent reads src/calc.py in iteration 1 (and again in ``read_again``), patches it in
    ``patch_at``, names it from ``named_from`` on; other iterations list directories."""
    history = [SYSTEM, TASK]
    for k in range(1, last + 1):
        if k in (1, read_again):
            history += _iteration(k, "sed -n '1,200p' src/calc.py", _codex_output("\n".join(FILE) + "\n"))
        elif k == patch_at:
            history += _iteration(k, "sed -i 's/helper_1/helper_one/' src/calc.py", _codex_output(""))
        elif k >= named_from:
            output = _codex_output(f"{k} passed\n")
            history += _iteration(k, "python -m pytest", output, "Back to src/calc.py.")
        else:
            history += _iteration(
                k, f"ls dir{k}", _codex_output("\n".join(f"f{k}_{n}.txt" for n in range(30)))
            )
    return history


def test_a_hidden_read_of_a_file_still_in_play_is_shown_as_it_was_read() -> None:
    history = _run(12, named_from=11)
    note = read_note(iteration_groups(history), through=9, at=12, max_chars=8000, recent=5, retrieval=True)
    assert note is not None and note.iteration == 0 and note.role == "user"
    assert note.text == "\n".join(
        [
            "[Files you read and are still working on: your reads up to iteration 9, as shown:]",
            '=== src/calc.py (read in iteration 1; context_retrieve(tool_call_id="call_1"))',
            "output: " + FILE[0],
            *FILE[1:],
            "metadata.exit_code: 0",
            "metadata.duration_seconds: 0.1",
            "=== end of read",
        ]
    )


def test_no_note_for_a_file_out_of_play_too_long_still_shown_or_off() -> None:
    groups = iteration_groups(_run(30, named_from=40))  # read in 1, never named again
    assert read_note(groups, through=27, at=30, max_chars=8000, recent=10, retrieval=True) is None
    history = _run(12, named_from=11)
    groups = iteration_groups(history)
    assert read_note(groups, through=9, at=12, max_chars=500, recent=5, retrieval=True) is None  # too long
    assert (
        read_note(groups, through=0, at=12, max_chars=8000, recent=5, retrieval=True) is None
    )  # none hidden
    assert read_note(groups, through=9, at=12, max_chars=0, recent=5, retrieval=True) is None  # off


def test_a_read_repeated_shows_only_its_newest_output_and_a_later_change_is_named() -> None:
    history = _run(14, named_from=40, read_again=6, patch_at=8)
    note = read_note(iteration_groups(history), through=11, at=14, max_chars=8000, recent=10, retrieval=False)
    assert note is not None
    assert note.text.count("=== src/calc.py") == 1
    assert "=== src/calc.py (read in iteration 6; changed since, in iteration 8)" in note.text


def test_reads_are_the_files_a_call_reads_with_their_outputs() -> None:
    groups = iteration_groups(_run(3, named_from=40))
    found, changed = reads(groups, 3)
    assert [(r.iteration, r.call_id, r.paths) for r in found] == [(1, "call_1", ("src/calc.py",))]
    assert changed == {}


def test_the_age_step_shows_the_read_note_after_the_aged_iterations_only_when_asked() -> None:
    history = _run(12, named_from=11)
    schedule = AgingSchedule((Epoch(at=12, through=10, condensed=6),))
    policy = Policy("p", (Age(window=2, min_chars=100, condense_after=6, chunk=2, read_chars=8000),))
    built = build_prompt(history, policy, summary=None, counter=COUNTER, schedule=schedule)
    validate_pairs(built.messages)
    texts = [m.text for m in built.messages]
    at = next(i for i, t in enumerate(texts) if t.startswith("[Files you read"))
    assert [m.iteration for m in built.messages[at - 2 : at]] == [10, 10]  # after the aged iterations
    assert built.messages[at + 1 :] == tuple(history[-4:])  # then the window, verbatim
    assert all(line in texts[at] for line in FILE)
    off = Policy("p", (Age(window=2, min_chars=100, condense_after=6, chunk=2),))
    without = build_prompt(history, off, summary=None, counter=COUNTER, schedule=schedule)
    assert len(without.messages) == len(built.messages) - 1
    assert not any(m.text.startswith("[Files you read") for m in without.messages)
    assert sum(FILE[20] in m.text for m in without.messages) == 0  # aging hid the line the note keeps


def test_the_knob_is_validated_and_round_trips_through_json() -> None:
    policy = Policy("p", (Age(read_chars=12000),))
    again = Policy.from_dict(orjson.loads(orjson.dumps(policy.to_dict())))
    assert again == policy
    try:
        Age(read_chars=-1)
    except Exception as error:
        assert "read_chars" in str(error)
    else:
        raise AssertionError("a negative budget was accepted")


@given(st.text(max_size=300), st.text(max_size=300))
def test_arbitrary_calls_and_outputs_never_raise(arguments: str, output: str) -> None:
    history = [
        SYSTEM,
        TASK,
        Message("assistant", "x", (ToolCall("c1", "shell", arguments),), iteration=1),
        Message("tool", output, tool_call_id="c1", name="shell", iteration=1),
        Message("assistant", "y", (), iteration=2),
    ]
    read_note(iteration_groups(history), through=1, at=2, max_chars=8000, recent=10, retrieval=True)
