"""``Age(shown_by=...)``: what later message lets an aged output leave out a line (issue 18).

With ``"any"`` a name the agent mentions later counts as shown, so the output line that held it
goes; with ``"outputs"`` (the default preset's) only a later output, a person's message or a note
shows it: the agent's mention is not the line (its context, its neighbours' values)."""

from __future__ import annotations

import pytest

from tiered_agent import Message, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.aging._forms import AgedStyle, age_batch, preamble
from tiered_agent.context.steps import Age, step_from_dict

SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix the loader.")
FILLER = "\n".join(f"    pass  # filler line {n}" for n in range(40))
LISTING = f"{FILLER}\n    def test_models_import_omitted(self):\n{FILLER}"


def _iteration(k: int, reasoning: str, command: str, output: str) -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", "bash", f'{{"command": "{command}"}}')
    return k, (
        Message("assistant", reasoning, (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def _aged_listing(shown_by: str, later_output: str) -> str:
    batch = [
        _iteration(1, "Search the tests.", "grep -n def tests/test_writer.py", LISTING),
        _iteration(2, "`test_writer.py` has `test_models_import_omitted`.", "ls", later_output),
    ]
    style = AgedStyle(max_lines=10, head_lines=2, min_chars=100, reasoning="novel", shown_by=shown_by)  # type: ignore[arg-type]
    return age_batch(style, (SYSTEM, TASK), batch, 1, 1)[1][1].text


def test_a_name_the_agent_mentions_later_keeps_its_line_only_when_outputs_judge() -> None:
    line = "    def test_models_import_omitted(self):"
    assert line not in _aged_listing("any", "loader.py")  # the mention counted as shown: the line went
    kept = _aged_listing("outputs", "loader.py")
    assert line in kept
    assert kept.startswith("[older output: 3 of 81 lines shown;")


def test_a_later_output_showing_the_name_lets_the_line_go_either_way() -> None:
    later = "tests/test_writer.py: def test_models_import_omitted(self)"
    for shown_by in ("any", "outputs"):
        aged = _aged_listing(shown_by, later)
        assert "test_models_import_omitted" not in aged
        assert aged.startswith("[older output: 2 of 81 lines shown;")


def test_the_preamble_says_which_later_messages_count() -> None:
    assert "numbers not shown later" in preamble(AgedStyle()).text
    assert "numbers no later output shows" in preamble(AgedStyle(shown_by="outputs")).text


def test_the_default_preset_judges_by_outputs_and_the_setting_round_trips() -> None:
    age = next(s for s in PRESETS["tiered"].steps if isinstance(s, Age))
    assert age.shown_by == "outputs"
    assert Age().shown_by == "any"
    assert step_from_dict(age.to_dict()) == age
    with pytest.raises(ConfigurationError, match=r"Age\.shown_by must be 'any' or 'outputs'"):
        Age(shown_by="agent")  # type: ignore[arg-type]
