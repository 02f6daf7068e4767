"""Truncate: exact markers, head vs head_tail, line limits; retrieval results, hidden outputs left whole."""

from __future__ import annotations

import re
import string

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._errors import ConfigurationError
from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent._trace import Cut
from tiered_agent.context._names import RETRIEVE_TOOL_NAME
from tiered_agent.context._policy import Policy
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.pipeline._build import build_prompt
from tiered_agent.context.steps import Mask, Step, Truncate
from tiered_agent.context.steps._truncate import TruncationMode, count_lines, truncate_output

COUNTER = TokenCounter("o200k_base")

HINT = '; full output: context_retrieve(tool_call_id="call_7")'


def alphabet_text(n: int) -> str:
    letters = string.ascii_lowercase
    return "".join(letters[i % 26] for i in range(n))


def numbered_lines(n: int, trailing_newline: bool = True) -> str:
    text = "\n".join(f"line {i}" for i in range(n))
    return text + "\n" if trailing_newline else text


def test_head_mode_exact_marker_and_numbers() -> None:
    text = alphabet_text(10_244)
    shown, omitted = truncate_output(text, max_chars=500, mode="head", tool_call_id="call_7")
    assert omitted == 9_744
    assert shown == text[:500] + "\n[... 9,744 of 10,244 chars omitted" + HINT + "]"


def test_head_tail_keeps_both_halves() -> None:
    text = alphabet_text(10_244)
    shown, omitted = truncate_output(text, max_chars=500, mode="head_tail", tool_call_id="call_7")
    assert omitted == 9_744
    marker = "[... 9,744 of 10,244 chars omitted" + HINT + "]"
    assert shown == text[:250] + "\n" + marker + "\n" + text[-250:]


def test_head_tail_odd_budget_gives_head_the_extra_char() -> None:
    text = alphabet_text(2_000)
    shown, omitted = truncate_output(text, max_chars=101, mode="head_tail", tool_call_id="x")
    assert omitted == 1_899
    head, _, rest = shown.partition("\n")
    assert head == text[:51]
    assert rest.endswith("\n" + text[-50:])


def test_marker_without_retrieval_hint() -> None:
    text = alphabet_text(10_244)
    shown, _ = truncate_output(text, max_chars=500, mode="head", tool_call_id="call_7", retrieval=False)
    assert shown == text[:500] + "\n[... 9,744 of 10,244 chars omitted]"
    shown, _ = truncate_output(text, max_chars=500, mode="head", tool_call_id=None)
    assert shown.endswith("\n[... 9,744 of 10,244 chars omitted]")


def test_tool_call_id_is_quoted_as_json() -> None:
    shown, _ = truncate_output("x" * 1000, max_chars=10, mode="head", tool_call_id='a"b')
    assert shown.endswith('context_retrieve(tool_call_id="a\\"b")]')


def test_short_output_is_untouched() -> None:
    text = alphabet_text(500)
    assert truncate_output(text, max_chars=500, mode="head", tool_call_id="c") == (text, 0)
    assert truncate_output("", max_chars=1, max_lines=1, tool_call_id="c") == ("", 0)
    assert truncate_output(text, max_chars=None, max_lines=None) == (text, 0)


def test_never_truncates_when_it_would_not_save_anything() -> None:
    # 520 chars with a 500 budget: 500 + marker (~90 chars) is longer than the original.
    text = alphabet_text(520)
    assert truncate_output(text, max_chars=500, mode="head", tool_call_id="call_7") == (text, 0)
    # Without the hint the marker is short enough to pay off.
    shown, omitted = truncate_output(text, max_chars=450, mode="head", retrieval=False)
    assert omitted == 70
    assert len(shown) < len(text)


def test_max_lines_head() -> None:
    text = numbered_lines(600)
    shown, omitted = truncate_output(text, max_chars=None, max_lines=256, mode="head", tool_call_id="call_7")
    head = numbered_lines(256)
    assert omitted == len(text) - len(head)
    assert shown == head + f"[... {omitted:,} of {len(text):,} chars, 344 of 600 lines omitted" + HINT + "]"


def test_max_lines_head_tail_like_codex_and_adk() -> None:
    text = numbered_lines(600)
    shown, omitted = truncate_output(
        text, max_chars=10 * 1024, max_lines=256, mode="head_tail", tool_call_id="c"
    )
    lines = shown.splitlines()
    assert lines[:128] == [f"line {i}" for i in range(128)]
    assert lines[-128:] == [f"line {i}" for i in range(472, 600)]
    assert len(lines) == 257
    assert "344 of 600 lines omitted" in lines[128]
    kept = len(numbered_lines(128)) + len("".join(f"line {i}\n" for i in range(472, 600)))
    assert omitted == len(text) - kept


def test_max_lines_without_trailing_newline() -> None:
    text = numbered_lines(30, trailing_newline=False)
    assert len(text) == 229
    shown, omitted = truncate_output(text, max_chars=None, max_lines=4, mode="head_tail", retrieval=False)
    assert omitted == 200  # kept "line 0\nline 1\n" (14) + "line 28\nline 29" (15)
    assert shown == "line 0\nline 1\n[... 200 of 229 chars, 26 of 30 lines omitted]\nline 28\nline 29"


def test_tiny_line_outputs_are_not_cut_when_the_marker_costs_more() -> None:
    text = numbered_lines(10, trailing_newline=False)
    assert truncate_output(text, max_chars=None, max_lines=4, mode="head_tail", retrieval=False) == (text, 0)


def test_chars_bind_inside_the_line_budget() -> None:
    text = ("y" * 1_000 + "\n") * 3  # 3 lines, well under max_lines
    shown, omitted = truncate_output(text, max_chars=200, max_lines=256, mode="head_tail", retrieval=False)
    assert omitted == len(text) - 200
    assert "lines omitted" not in shown
    assert shown.startswith("y" * 100 + "\n[... ")
    assert shown.endswith("]\n" + "y" * 99 + "\n")


def test_count_lines() -> None:
    assert count_lines("") == 0
    assert count_lines("a") == 1
    assert count_lines("a\n") == 1
    assert count_lines("a\nb") == 2
    assert count_lines("\n\n") == 2


@settings(max_examples=200, deadline=None)
@given(
    text=st.text(alphabet="ab\n", max_size=400),
    max_chars=st.one_of(st.none(), st.integers(1, 300)),
    max_lines=st.one_of(st.none(), st.integers(1, 40)),
    mode=st.sampled_from(["head", "head_tail"]),
    retrieval=st.booleans(),
)
def test_truncation_properties(
    text: str, max_chars: int | None, max_lines: int | None, mode: TruncationMode, retrieval: bool
) -> None:
    shown, omitted = truncate_output(
        text,
        max_chars=max_chars,
        max_lines=max_lines,
        mode=mode,
        tool_call_id="t1",
        retrieval=retrieval,
    )
    if omitted == 0:
        assert shown == text
        return
    assert len(shown) < len(text)
    match = re.search(
        r"\[\.\.\. ([\d,]+) of ([\d,]+) chars(, [\d,]+ of [\d,]+ lines)? omitted[^\]]*\]", shown
    )
    assert match is not None
    assert int(match.group(1).replace(",", "")) == omitted
    assert int(match.group(2).replace(",", "")) == len(text)
    head = shown[: match.start()]
    head = head[:-1] if head.endswith("\n") and not text.startswith(head) else head
    tail = shown[match.end() + 1 :]
    assert text.startswith(head)
    assert text.endswith(tail)
    assert len(head) + len(tail) == len(text) - omitted
    if max_chars is not None:
        assert len(head) + len(tail) <= max_chars
    if max_lines is not None:
        assert count_lines(head) + count_lines(tail) <= max_lines
    if mode == "head":
        assert tail == ""


def _tool(call_id: str, content: str, name: str = "read", iteration: int = 1) -> Message:
    return Message(role="tool", content=content, tool_call_id=call_id, name=name, iteration=iteration)


def _apply(messages: list[Message], *steps: Step, retrieval: bool = True) -> tuple[list[Message], list[Cut]]:
    built = build_prompt(messages, Policy("t", steps, retrieval=retrieval), summary=None, counter=COUNTER)
    return list(built.messages), list(built.stats.truncations)


def test_the_step_records_each_cut_and_skips_retrieval_results() -> None:
    big = alphabet_text(1_000)
    messages = [
        Message(role="system", content="s"),
        Message(role="user", content=big),
        Message(
            role="assistant",
            content=big,
            tool_calls=(ToolCall("c1", "read", "{}"), ToolCall("c2", RETRIEVE_TOOL_NAME, "{}")),
            iteration=3,
        ),
        _tool("c1", big, iteration=3),
        _tool("c2", big, name=RETRIEVE_TOOL_NAME, iteration=3),
        _tool("c3", "short", iteration=3),
    ]
    out, cuts = _apply(messages, Truncate(max_chars=100, mode="head"))
    assert [m is o for m, o in zip(messages, out, strict=True)] == [True, True, True, False, True, True]
    assert (
        out[3].content
        == big[:100] + '\n[... 900 of 1,000 chars omitted; full output: context_retrieve(tool_call_id="c1")]'
    )
    assert out[3].tool_call_id == "c1" and out[3].name == "read" and out[3].iteration == 3
    assert messages[3].content == big  # input untouched
    assert len(cuts) == 1
    cut = cuts[0]
    assert (cut.tool_call_id, cut.iteration, cut.tool) == ("c1", 3, "read")
    assert (cut.original_chars, cut.kept_chars, cut.omitted_chars) == (1_000, 100, 900)


def test_outputs_hidden_by_an_earlier_step_are_not_cut() -> None:
    big = alphabet_text(1_000)
    messages = [_tool("c1", big), _tool("c2", big)]
    out, cuts = _apply(messages, Mask(keep=1), Truncate(max_chars=100))
    assert out[0].content == '[output omitted; context_retrieve(tool_call_id="c1")]'
    assert [c.tool_call_id for c in cuts] == ["c2"]
    out, cuts = _apply(messages, *PRESETS["full"].steps)
    assert out == messages and cuts == []


def test_the_step_without_retrieval_has_no_hint() -> None:
    out, _ = _apply([_tool("c1", alphabet_text(1_000))], Truncate(max_chars=100), retrieval=False)
    assert out[0].content is not None
    assert out[0].content.endswith("\n" + alphabet_text(1_000)[-50:])
    assert "[... 900 of 1,000 chars omitted]" in out[0].content


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"max_chars": 0}, "Truncate.max_chars must be a positive integer or None, got 0"),
        ({"max_chars": None, "max_lines": None}, "Truncate needs max_chars or max_lines"),
        ({"mode": "tail"}, "Truncate.mode must be 'head' or 'head_tail', got 'tail'"),
    ],
)
def test_invalid_values_are_one_clear_sentence(fields: dict[str, object], error: str) -> None:
    with pytest.raises(ConfigurationError, match=error.replace("(", r"\(").replace(")", r"\)")):
        Truncate(**fields)  # type: ignore[arg-type]
