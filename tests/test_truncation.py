"""Tier 1 truncation: exact markers, head vs head_tail, line limits, retrieval results left whole."""

from __future__ import annotations

import re
import string

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent.context._config import PRESETS, ContextConfig, TruncationMode
from tiered_agent.context._names import RETRIEVE_TOOL_NAME
from tiered_agent.context._truncation import count_lines, truncate_output, truncate_outputs

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


def test_truncate_outputs_records_each_cut_and_skips_retrieval_results() -> None:
    config = ContextConfig(max_output_chars=100, truncation_mode="head")
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
    out, cuts = truncate_outputs(messages, config)
    assert [m is o for m, o in zip(messages, out, strict=True)] == [True, True, True, False, True, True]
    assert (
        out[3].content
        == big[:100] + '\n[... 900 of 1,000 chars omitted; full output: context_retrieve(tool_call_id="c1")]'
    )
    assert out[3].tool_call_id == "c1" and out[3].name == "read" and out[3].iteration == 3
    assert messages[3].content == big  # input untouched
    assert len(cuts) == 1
    cut = cuts[0]
    assert (cut.tool_call_id, cut.iteration, cut.tool_name) == ("c1", 3, "read")
    assert (cut.original_chars, cut.kept_chars, cut.omitted_chars) == (1_000, 100, 900)


def test_truncate_outputs_respects_skip_and_disabled_config() -> None:
    big = alphabet_text(1_000)
    messages = [_tool("c1", big), _tool("c2", big)]
    out, cuts = truncate_outputs(messages, ContextConfig(max_output_chars=100), skip={0})
    assert out[0] is messages[0]
    assert [c.tool_call_id for c in cuts] == ["c2"]
    out, cuts = truncate_outputs(messages, PRESETS["full"])
    assert out == messages and cuts == []


def test_truncate_outputs_without_retrieval_has_no_hint() -> None:
    config = PRESETS["full"].replace(max_output_chars=100)
    assert not config.retrieval_active
    out, _ = truncate_outputs([_tool("c1", alphabet_text(1_000))], config)
    assert out[0].content is not None
    assert out[0].content.endswith("\n" + alphabet_text(1_000)[-50:])
    assert "[... 900 of 1,000 chars omitted]" in out[0].content
