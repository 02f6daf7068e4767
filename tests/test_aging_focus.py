"""``Age(focus_reads=K)``: a read of a file the agent is still working on stays whole when it ages.

A read is an output that shows one file (``cat``, ``nl -ba f | sed -n``, ``grep`` in one file,
an editor's ``view``); the agent is still working on the file when it named it (path or file
name) after the read, in its last K iterations up to the epoch. Off (0) in the class; 3 in the
default preset since round 25; ``benchmarks/tune_tiered.py``'s ``focus-*`` candidates measure it (results.md,
round 24)."""

from __future__ import annotations

import orjson
import pytest

from tiered_agent import Message, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.aging._forms import AgedStyle, age_batch
from tiered_agent.context.aging._reads import file_read
from tiered_agent.context.steps import Age, step_from_dict

SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix the loader.")
# a numbered read of 60 lines whose lines name nothing new after the first few: aged, it keeps a few
SOURCE = "\n".join(f"   {n}\t    value = compute(value)  # step" for n in range(400, 460))
READ = "nl -ba src/pkg/loader.py | sed -n '400,459p'"


def _iteration(k: int, reasoning: str, command: str, output: str) -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": command}).decode())
    return k, (
        Message("assistant", reasoning, (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def _aged(focus: int, later: list[tuple[str, str]], command: str = READ, output: str = SOURCE) -> str:
    """Iteration 1's output aged at an epoch whose batch runs through the ``later`` iterations."""
    batch = [_iteration(1, "Read the loop.", command, output)]
    batch += [_iteration(k, text, cmd, "ok") for k, (text, cmd) in enumerate(later, start=2)]
    style = AgedStyle(max_lines=10, head_lines=2, min_chars=100, shown_by="outputs", focus=focus)
    return age_batch(style, (SYSTEM, TASK), batch, 1, 1)[1][1].text


def test_a_read_of_a_file_named_since_stays_whole_only_with_focus() -> None:
    later = [("Now edit loader.py at line 430.", "sed -i '430s/step/done/' src/pkg/loader.py")]
    assert _aged(3, later) == SOURCE  # the agent works on the file: its read, whole
    elided = _aged(0, later)
    assert elided.startswith("[older output: ")
    assert "   430\t" not in elided  # without the rule the line its edit takes went


def test_the_file_name_alone_counts_and_a_path_too() -> None:
    assert _aged(3, [("The bug is in `loader.py`.", "ls")]) == SOURCE
    assert _aged(3, [("Check it.", "grep -n compute src/pkg/loader.py")]) == SOURCE


def test_a_read_of_a_file_not_named_since_is_aged_as_before() -> None:
    later = [("Run the tests.", "pytest tests/test_other.py")]
    assert _aged(3, later) == _aged(0, later)
    assert _aged(3, later).startswith("[older output: ")


def test_a_naming_older_than_the_last_k_iterations_does_not_count() -> None:
    later = [
        ("Look at loader.py again later.", "ls"),
        ("Unrelated.", "ls docs"),
        ("Unrelated too.", "ls tests"),
    ]
    # the epoch's newest iteration is 4: focus 2 reads iterations 3-4, focus 3 reads 2-4
    assert _aged(2, later).startswith("[older output: ")
    assert _aged(3, later) == SOURCE


def test_an_output_that_is_no_read_is_aged_even_when_its_file_is_named() -> None:
    command = "python src/pkg/loader.py"  # runs the file: its output does not show it
    later = [("loader.py printed the loop.", "ls")]
    assert _aged(3, later, command=command).startswith("[older output: ")
    assert file_read(ToolCall("c", "bash", orjson.dumps({"command": command}).decode())) is None


def test_file_read_names_the_file_and_fails_open() -> None:
    read = file_read(ToolCall("c", "bash", orjson.dumps({"command": READ}).decode()))
    assert read is not None
    assert (read.path, read.start, read.name) == ("src/pkg/loader.py", 400, "loader.py")
    assert file_read(ToolCall("c", "bash", "{not json")) is None
    assert file_read(ToolCall("c", "context_retrieve", '{"tool_call_id": "call_1"}')) is None


def test_off_by_default_validated_and_round_trips() -> None:
    assert Age().focus_reads == 0
    age = next(s for s in PRESETS["tiered"].steps if isinstance(s, Age))
    assert age.focus_reads == 3  # the default since round 25 (results.md)
    focused = Age(focus_reads=3)
    assert focused.style(True).focus == 3
    assert step_from_dict(focused.to_dict()) == focused
    with pytest.raises(ConfigurationError, match=r"Age\.focus_reads must be >= 0"):
        Age(focus_reads=-1)
