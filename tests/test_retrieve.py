"""context_retrieve: filters, ranking, paging, splitting, no-match listing, errors, the Tool."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from tiered_agent._errors import ToolError
from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent._tools import ToolSet
from tiered_agent.context._names import RETRIEVE_TOOL_NAME
from tiered_agent.context.retrieve._tool import make_retrieve_tool, parse_iterations, retrieve

COUNTER = TokenCounter("o200k_base")
BIG = "\n".join(f"line {n}: the quick brown fox jumps over the lazy dog" for n in range(400))


def turn(i: int, name: str, output: str, arguments: dict[str, Any] | None = None) -> list[Message]:
    call = ToolCall(f"call_{i}", name, json.dumps(arguments or {}))
    return [
        Message("assistant", f"thought {i}", tool_calls=(call,), iteration=i),
        Message("tool", output, tool_call_id=f"call_{i}", name=name, iteration=i),
    ]


def make_history() -> list[Message]:
    history = [Message("system", "sys", iteration=0), Message("user", "the task", iteration=0)]
    history += turn(1, "read_file", "config loader: parse yaml", {"path": "config.py"})
    history += turn(2, "run_shell", "pytest: 2 failed, yaml error in yaml parser", {"command": "pytest"})
    history += turn(3, "read_file", BIG, {"path": "big.txt"})
    history += turn(4, "read_file", "utils: nothing special", {"path": "utils.py"})
    history += turn(5, "run_shell", "exit code: 0", {"command": "ls"})
    history += turn(
        6, RETRIEVE_TOOL_NAME, "config loader: parse yaml (a previous retrieval)", {"iteration": "1"}
    )
    return history


def get(**kwargs: Any) -> Any:
    kwargs.setdefault("counter", COUNTER)
    return retrieve(make_history(), **kwargs)


# --------------------------------------------------------------------------- filters
def test_single_iteration_returns_messages_and_outputs_with_headers() -> None:
    result = get(iteration=2)
    assert result.matched == 2 and (result.page, result.pages) == (1, 1)
    assert [item.kind for item in result.items] == ["assistant", "run_shell"]
    assert "--- iteration 2 | assistant ---\nthought 2" in result.text
    assert (
        "--- iteration 2 | run_shell | call_2 ---\npytest: 2 failed, yaml error in yaml parser" in result.text
    )
    assert "[page 1 of 1]" in result.text


@pytest.mark.parametrize("spec", ["3-4", "3..4", " 3 - 4 "])
def test_iteration_range_with_tool_name(spec: str) -> None:
    result = get(iteration=spec, tool_name="read_file", page_tokens=100_000)
    assert [(i.iteration, i.tool_call_id) for i in result.items] == [(3, "call_3"), (4, "call_4")]
    assert result.items[0].content == BIG  # the full, untruncated content


def test_tool_call_id() -> None:
    result = get(tool_call_id="call_4")
    assert result.matched == 1
    assert result.items[0].content == "utils: nothing special"
    assert "--- iteration 4 | read_file | call_4 ---" in result.text


def test_tool_name_is_case_insensitive_and_and_combines_filters() -> None:
    assert [i.iteration for i in get(tool_name="RUN_SHELL").items] == [2, 5]
    assert get(tool_name="run_shell", tool_call_id="call_4").matched == 0


def test_topic_ranks_by_keyword_occurrences_then_iteration() -> None:
    result = get(topic="YAML config", page_tokens=100_000)
    # call_2: "yaml" x2; call_1: "config" x2 (arguments + output) + "yaml" x1 = 3
    assert [(i.tool_call_id, i.score) for i in result.items] == [("call_1", 3), ("call_2", 2)]
    tie = get(topic="nothing exit")
    assert [i.tool_call_id for i in tie.items] == ["call_4", "call_5"]  # 1 each: by iteration


def test_retrievals_are_never_retrievable() -> None:
    assert get(iteration=6).matched == 1  # only the assistant message
    assert all(i.kind != RETRIEVE_TOOL_NAME for i in get(topic="retrieval previous config").items)
    assert get(tool_name=RETRIEVE_TOOL_NAME).matched == 0


# --------------------------------------------------------------------------- paging
def test_paging_one_item_per_page_with_exact_navigation() -> None:
    history = [Message("user", "task", iteration=0)]
    for i in range(1, 4):
        history += turn(i, "read_file", " ".join(f"w{i}x{n}" for n in range(40)))
    one = COUNTER.count_text(history[2].text)
    page_tokens = one + 30  # one item (+ header) fits, two do not
    first = retrieve(history, tool_name="read_file", page_tokens=page_tokens, counter=COUNTER)
    assert (first.page, first.pages, first.matched) == (1, 3, 3)
    assert "[page 1 of 3; call again with page=2]" in first.text
    assert [i.tool_call_id for i in first.items] == ["call_1"]
    last = retrieve(history, tool_name="read_file", page=3, page_tokens=page_tokens, counter=COUNTER)
    assert [i.tool_call_id for i in last.items] == ["call_3"] and "[page 3 of 3; last page]" in last.text
    with pytest.raises(ToolError, match="page 4 does not exist"):
        retrieve(history, tool_name="read_file", page=4, page_tokens=page_tokens, counter=COUNTER)


def test_oversize_item_is_split_across_pages_and_reassembles() -> None:
    page_tokens = 300
    first = get(tool_call_id="call_3", page_tokens=page_tokens)
    assert first.pages > 5 and first.matched == 1
    parts = []
    for page in range(1, first.pages + 1):
        result = get(tool_call_id="call_3", page=page, page_tokens=page_tokens)
        (item,) = result.items
        assert item.part == (page, first.pages)
        assert f"--- iteration 3 | read_file | call_3 | part {page}/{first.pages} ---" in result.text
        assert COUNTER.count_text(f"{item.header}\n{item.content}") <= page_tokens
        parts.append(item.content)
    assert "".join(parts) == BIG
    assert all(p.endswith("\n") for p in parts[:-1])  # cut at line ends


def test_big_page_returns_the_item_whole() -> None:
    result = get(tool_call_id="call_3", page_tokens=100_000)
    assert result.pages == 1 and result.items[0].part is None and BIG in result.text


# --------------------------------------------------------------------------- no match, errors
def test_no_match_lists_what_exists() -> None:
    result = get(iteration=42)
    assert (result.matched, result.items) == (0, ())
    assert "No history item matched iteration=42." in result.text
    assert "History holds iterations 0-6." in result.text
    assert "Tool outputs: read_file x3, run_shell x2." in result.text
    assert "call_5 (run_shell, iteration 5)" in result.text and "call_6" not in result.text


def test_a_miss_echoes_a_huge_topic_capped() -> None:
    topic = "zzz" + "x" * 1_000_000  # a model pasted a megabyte into topic
    result = get(topic=topic, tool_call_id="nope")
    assert result.matched == 0
    assert len(result.text) < 1_000
    assert f"topic='zzz{'x' * 196}… [1,000,005 chars]" in result.text


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({}, "at least one filter"),
        ({"tool_call_id": ""}, "at least one filter"),
        ({"iteration": 1, "page": 0}, "page must be >= 1"),
        ({"iteration": "3-x"}, "range like"),
        ({"iteration": "7-3"}, "reversed"),
        ({"iteration": -1}, ">= 0"),
        ({"topic": "  "}, "topic is empty"),
    ],
)
def test_invalid_arguments_raise_tool_error(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(ToolError, match=message):
        get(**kwargs)


def test_parse_iterations() -> None:
    assert parse_iterations(7) == (7, 7)
    assert parse_iterations("7") == (7, 7)
    assert parse_iterations("3..7") == (3, 7)
    with pytest.raises(ToolError):
        parse_iterations(True)


# --------------------------------------------------------------------------- the tool
@pytest.mark.anyio
async def test_tool_reads_the_live_history_and_reports_retrievals() -> None:
    history = make_history()
    seen: list[dict[str, Any]] = []
    tool = make_retrieve_tool(lambda: history, counter=COUNTER, page_tokens=4000, on_retrieval=seen.append)
    assert (tool.name, tool.read_only, tool.internal) == (RETRIEVE_TOOL_NAME, True, True)
    assert "shortened" in tool.description and "summarized" in tool.description
    assert set(tool.parameters["properties"]) == {"iteration", "tool_call_id", "tool_name", "topic", "page"}
    tools = ToolSet([tool])
    history += turn(7, "read_file", "APPENDED LATER", {"path": "late.py"})
    outcome = await tools.execute(ToolCall("r1", RETRIEVE_TOOL_NAME, '{"tool_call_id": "call_7"}'))
    assert not outcome.is_error and "APPENDED LATER" in outcome.content
    assert seen == [
        {
            "filters": {"tool_call_id": "call_7"},
            "matched": 1,
            "page": 1,
            "pages": 1,
            "items": 1,
            "chars": len(outcome.content),
        }
    ]
    bad = await tools.execute(ToolCall("r2", RETRIEVE_TOOL_NAME, '{"iteration": "1", "page": 9}'))
    assert bad.is_error and re.search(r"page 9 does not exist", bad.content)
    assert len(seen) == 1
