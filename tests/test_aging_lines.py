"""Outputs judged by their lines: JSON string values that hold lines (Codex's ``output``), short
outputs kept whole in condensed notes; a cut that waits while it would send the retrieval schema."""

from __future__ import annotations

import json

import pytest

from tiered_agent import Message, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._policy import Policy
from tiered_agent.context.aging._condense import SHORT_LINES, condensed_note
from tiered_agent.context.aging._forms import AgedStyle, age_batch
from tiered_agent.context.aging._jsonform import json_fields, output_lines
from tiered_agent.context.steps import Truncate, step_from_dict

SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix the loader.")
COUNTER = TokenCounter()


def _codex(k: int, command: str, output: str) -> tuple[int, tuple[Message, ...]]:
    """One Codex iteration: a shell call, and its JSON result with the program's output as a string."""
    call = ToolCall(f"call_{k}", "shell", json.dumps({"command": ["bash", "-lc", command]}))
    result = json.dumps({"output": output, "metadata": {"exit_code": 0, "duration_seconds": 0.1}})
    return k, (
        Message("assistant", f"Step {k}.", (call,), iteration=k),
        Message("tool", result, tool_call_id=f"call_{k}", name="shell", iteration=k),
    )


LISTING = "\n".join(
    f"{n:4d}    value_{n} = compute(x)" if n % 10 == 0 else f"{n:4d}    pass" for n in range(1, 61)
)


def test_a_multi_line_json_string_is_its_lines() -> None:
    text = json.dumps({"output": "total 80\nloader.py\nmain.py " + "x" * 300, "metadata": {"exit_code": 0}})
    fields = json_fields(text)
    assert fields is not None and fields.multiline
    assert fields.lines == ("output: total 80", "loader.py", "main.py " + "x" * 300, "metadata.exit_code: 0")
    assert fields.values == ("total 80", "loader.py", "main.py " + "x" * 300, "0")
    assert output_lines(text) == fields.lines
    assert output_lines("a\nb") == ("a", "b")
    flat = json.dumps({"note": "n" * 300, "id": 7})
    one_per_field = json_fields(flat)
    assert one_per_field is not None and not one_per_field.multiline


def test_an_aged_codex_output_keeps_lines_by_the_rules_of_plain_outputs() -> None:
    """Before: the whole ``output`` string was one field, cut at 240 characters, so ``value_60``
    (line 60) was never shown. Now each line of it is judged like a line of a plain output."""
    batch = [_codex(1, "nl -ba loader.py", LISTING), _codex(2, "ls", "loader.py"), _codex(3, "ls", "main.py")]
    forms = age_batch(AgedStyle(max_lines=10, head_lines=2, min_chars=100), (SYSTEM, TASK), batch, 1, 1)
    aged = forms[1][1].text
    lines = aged.splitlines()
    assert lines[0] == (
        "[older output: 8 of 62 lines of JSON fields shown; "
        'full output: context_retrieve(tool_call_id="call_1")]'
    )
    assert lines[1:3] == ["output:    1    pass", "   2    pass"]
    assert "  60    value_60 = compute(x)" in lines
    assert "  10    value_10 = compute(x)" in lines
    assert "[... 7 lines ...]" in lines  # gaps count lines, not fields
    assert len(aged) < len(batch[0][1][1].text)


def test_a_condensed_note_reads_the_lines_of_a_json_output() -> None:
    chunk = [_codex(1, "nl -ba loader.py", LISTING)]
    later = (Message("assistant", "value_50 is wrong.", iteration=2),)
    note = condensed_note(chunk, retrieval=True, later=later, referred=2)
    assert note.text.splitlines()[1:] == [
        "1. Step 1. → shell: nl -ba loader.py → 62 lines",
        "    50 value_50 = compute(x)",
    ]


def test_a_condensed_note_keeps_short_outputs_whole() -> None:
    """Up to 5 lines: every line, even those naming nothing new; 6 lines: the chosen ones only."""

    def chunk(lines: int) -> list[tuple[int, tuple[Message, ...]]]:
        output = "\n".join(f"row {n}: all good" if n % 2 else f"value_{n} = {n}" for n in range(lines))
        call = ToolCall("call_1", "bash", json.dumps({"command": "cat t"}))
        return [
            (
                1,
                (
                    Message("assistant", "Look.", (call,), iteration=1),
                    Message("tool", output, tool_call_id="call_1", name="bash", iteration=1),
                ),
            )
        ]

    later = (Message("assistant", "value_2 it is.", iteration=2),)
    short = condensed_note(chunk(5), retrieval=False, later=later, referred=1, novel=0).text.splitlines()
    assert short[2:] == [
        "    value_0 = 0",
        "    row 1: all good",
        "    value_2 = 2",
        "    row 3: all good",
        "    value_4 = 4",
    ]
    longer = condensed_note(chunk(6), retrieval=False, later=later, referred=1, novel=0).text.splitlines()
    assert longer[2:] == ["    value_2 = 2"]
    assert SHORT_LINES == 5


def _shell_iteration(k: int, output: str) -> list[Message]:
    call = ToolCall(f"call_{k}", "bash", json.dumps({"command": f"cat big_{k}.txt"}))
    return [
        Message("assistant", f"Read part {k}.", (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    ]


RETRIEVE_SCHEMA = {"type": "function", "function": {"name": "context_retrieve", "parameters": {}}}
BASH_SCHEMA = {"type": "function", "function": {"name": "bash", "parameters": {}}}


@pytest.mark.anyio
async def test_a_deferred_cut_waits_until_the_schema_is_sent() -> None:
    """With ``defer_max_chars``, an output under it is not cut while cutting it would be the first
    retrieval call the prompt names (the tools would change); past it, or once the schema is sent,
    outputs are cut at ``max_chars``. Without it the first cut sends the schema at once."""
    big = "\n".join(f"line {n} value_{n}" for n in range(800))  # ~14,000 chars
    history = [
        SYSTEM,
        TASK,
        *_shell_iteration(1, big),
        *_shell_iteration(2, "ok"),
        *_shell_iteration(3, "ok"),
    ]
    tools = [BASH_SCHEMA, RETRIEVE_SCHEMA]
    steps = (Truncate(max_chars=10_000, defer_max_chars=50_000),)
    policy = Policy("t", steps, retrieval_schema="when_shown")
    async with ContextManager(policy, counter=COUNTER, background=False) as manager:
        prepared = await manager.prepare(history, tools)
    assert prepared.built.messages[3].text == big  # not cut: it would have been the first
    assert [t["function"]["name"] for t in prepared.tools] == ["bash"]
    eager = Policy("t", (Truncate(max_chars=10_000),), retrieval_schema="when_shown")
    async with ContextManager(eager, counter=COUNTER, background=False) as manager:
        prepared = await manager.prepare(history, tools)
    assert "chars omitted" in prepared.built.messages[3].text
    assert [t["function"]["name"] for t in prepared.tools] == ["bash", "context_retrieve"]
    always = Policy("t", steps, retrieval_schema="always")  # the schema is sent: cutting re-sends nothing
    async with ContextManager(always, counter=COUNTER, background=False) as manager:
        prepared = await manager.prepare(history, tools)
    assert "chars omitted" in prepared.built.messages[3].text
    tight = Policy("t", (Truncate(max_chars=10_000, defer_max_chars=12_000),), retrieval_schema="when_shown")
    async with ContextManager(tight, counter=COUNTER, background=False) as manager:
        prepared = await manager.prepare(history, tools)
    capped = prepared.built.messages[3].text
    assert 11_000 < len(capped) < 12_300 and "chars omitted" in capped  # past the deferred budget: cut there
    assert step_from_dict(Truncate(defer_max_chars=7).to_dict()) == Truncate(defer_max_chars=7)
    with pytest.raises(ConfigurationError, match="defer_max_chars"):
        Truncate(defer_max_chars=0)


def test_an_aged_script_keeps_its_lines_the_agent_used_later() -> None:
    """Text the agent wrote (a heredoc script) keeps its head and, past it, the lines naming what its
    later messages name; the rest is cut as before, and the arguments stay valid JSON."""
    script = "import os\n" + "x = 1\n" * 40 + "settings.configure(INSTALLED_APPS=['app_label'])\n"
    script += "y = 2\n" * 40 + "MyModel.objects.create(name=1)\n" + "z = 3\n" * 10
    write = ToolCall("call_1", "bash", json.dumps({"command": f"cat <<'EOF' > repro.py\n{script}EOF"}))
    run = ToolCall("call_2", "bash", json.dumps({"command": "python repro.py"}))
    fix = ToolCall("call_3", "bash", json.dumps({"command": "grep -n INSTALLED_APPS repro.py"}))
    batch = [
        (
            1,
            (
                Message("assistant", "Write it.", (write,), iteration=1),
                Message("tool", "", tool_call_id="call_1", iteration=1),
            ),
        ),
        (
            2,
            (
                Message("assistant", "Run it.", (run,), iteration=2),
                Message("tool", "ok", tool_call_id="call_2", iteration=2),
            ),
        ),
        (
            3,
            (
                Message("assistant", "Check it.", (fix,), iteration=3),
                Message("tool", "ok", tool_call_id="call_3", iteration=3),
            ),
        ),
    ]
    forms = age_batch(AgedStyle(), (SYSTEM, TASK), batch, 1, 1)
    shown = json.loads(forms[1][0].tool_calls[0].arguments)["command"]
    assert shown.startswith("cat <<'EOF' > repro.py\nimport os\nx = 1")
    assert "settings.configure(INSTALLED_APPS=['app_label'])\n" in shown  # named by iteration 3
    assert "MyModel" not in shown and "chars cut]" in shown  # named by nothing later: cut
    assert len(shown) < len(script)


@pytest.mark.anyio
async def test_a_first_cut_past_the_deferred_budget_waits_unless_it_pays_back_at_once() -> None:
    """Past ``defer_max_chars`` the first cut still re-sends the whole prompt (the schema joins the
    tools): it happens only when it spares at least the rest of the prompt's chars, so the tokens
    never written cover the rewrite on the request itself."""
    big = "\n".join(f"line {n} value_{n}" for n in range(800))  # 14,979 chars, cut to 12,000
    policy = Policy("t", (Truncate(max_chars=10_000, defer_max_chars=12_000),), retrieval_schema="when_shown")
    tools = [BASH_SCHEMA, RETRIEVE_SCHEMA]
    earlier = [_shell_iteration(k, "x" * 800) for k in range(1, 5)]  # 3,200 chars before it
    history = [SYSTEM, TASK, *(m for it in earlier for m in it), *_shell_iteration(5, big)]
    async with ContextManager(policy, counter=COUNTER, background=False) as manager:
        prepared = await manager.prepare([*history, *_shell_iteration(6, "ok")], tools)
    assert prepared.built.messages[-3].text == big  # spares 2,979 chars of a ~3,500-char rest: waits
    assert [t["function"]["name"] for t in prepared.tools] == ["bash"]
    short = [SYSTEM, TASK, *_shell_iteration(1, big), *_shell_iteration(2, "ok")]
    async with ContextManager(policy, counter=COUNTER, background=False) as manager:
        prepared = await manager.prepare(short, tools)
    assert "chars omitted" in prepared.built.messages[3].text  # spares more than the rest: cut
    assert [t["function"]["name"] for t in prepared.tools] == ["bash", "context_retrieve"]
