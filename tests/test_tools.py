"""@tool schema generation, ToolSet bookkeeping, and ToolSet.execute's handling of every bad case."""

from __future__ import annotations

import re
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any, Literal

import anyio
import orjson
import pytest
from pydantic import BaseModel, Field, ValidationError
from structlog.testing import capture_logs

from tiered_agent._errors import ConfigurationError, ToolError
from tiered_agent._messages import ToolCall
from tiered_agent._tools import Tool, ToolOutcome, ToolSet, ToolTimeout, tool
from tiered_agent._workspace import Workspace, workspace_tools

pytestmark = pytest.mark.anyio


@tool(read_only=True, timeout_s=5)
def find_items(
    query: str, limit: Annotated[int, Field(ge=1)] = 10, kind: Literal["a", "b"] | None = None
) -> str:
    """Find items matching a query.

    This second paragraph is not part of the description.

    Args:
        query: Text to look for.
            The continuation line belongs to query.
        limit (int): Maximum number of items.
        kind: Restrict to one kind.

    Returns:
        The matching items, one per line.
    """
    return f"{query}|{limit}|{kind}"


def call(name: str, arguments: Any = None, call_id: str = "call_1") -> ToolCall:
    raw = arguments if isinstance(arguments, str) else orjson.dumps(arguments or {}).decode()
    return ToolCall(id=call_id, name=name, arguments=raw)


# --------------------------------------------------------------------------- schema


def test_schema_from_hints_and_docstring() -> None:
    assert find_items.schema() == {
        "type": "function",
        "function": {
            "name": "find_items",
            "description": "Find items matching a query.",
            "parameters": {
                "type": "object",
                "properties": {
                    "query": {
                        "type": "string",
                        "description": "Text to look for. The continuation line belongs to query.",
                    },
                    "limit": {
                        "type": "integer",
                        "minimum": 1,
                        "default": 10,
                        "description": "Maximum number of items.",
                    },
                    "kind": {
                        "anyOf": [{"type": "string", "enum": ["a", "b"]}, {"type": "null"}],
                        "default": None,
                        "description": "Restrict to one kind.",
                    },
                },
                "required": ["query"],
            },
        },
    }
    assert find_items.read_only is True
    assert find_items.timeout_s == 5
    assert find_items.internal is False


def test_bare_decorator_and_overrides() -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    @tool(name="renamed", description="Custom description.", internal=True)
    def other(x: int) -> str:
        """Ignored docstring.

        Args:
            x: A number.
        """
        return str(x)

    assert ping.name == "ping"
    assert ping.read_only is False
    assert ping.timeout_s is None
    assert ping.parameters == {"type": "object", "properties": {}}
    assert other.name == "renamed"
    assert other.description == "Custom description."
    assert other.internal is True
    assert other.parameters["properties"]["x"] == {"type": "integer", "description": "A number."}


def test_nested_model_parameter_keeps_property_named_title() -> None:
    class Book(BaseModel):
        title: str
        pages: int = 1

    @tool
    def add_book(book: Book) -> str:
        """Add a book.

        Args:
            book: The book to add.
        """
        assert isinstance(book, Book)
        return book.title

    schema = add_book.parameters
    assert "title" not in schema
    book_def = schema["$defs"]["Book"]
    assert set(book_def["properties"]) == {"title", "pages"}
    assert "title" not in book_def["properties"]["title"]
    assert add_book.validate_arguments({"book": {"title": "Dune"}})["book"] == Book(title="Dune")


def test_configuration_mistakes_raise_at_decoration() -> None:
    class Opaque:
        pass

    def no_doc(x: int) -> str:
        return ""

    def star_args(*items: int) -> str:
        """Doc."""
        return ""

    def star_kwargs(**items: int) -> str:
        """Doc."""
        return ""

    def unsupported(x: Opaque) -> str:
        """Doc."""
        return ""

    def unannotated(x) -> str:  # type: ignore[no-untyped-def]
        """Doc."""
        return ""

    def positional_only(x: int, /) -> str:
        """Doc."""
        return ""

    def documents_ghost(x: int) -> str:
        """Doc.

        Args:
            y: Not a parameter.
        """
        return ""

    cases: dict[Callable[..., Any], str] = {
        no_doc: "no docstring",
        star_args: "*args",
        star_kwargs: "*args/**kwargs",
        unsupported: "unsupported parameter type",
        unannotated: "no type annotation",
        positional_only: "positional-only",
        documents_ghost: "unknown parameter(s) y",
    }
    for fn, message in cases.items():
        with pytest.raises(ConfigurationError, match=re.escape(message)):
            tool(fn)
    with pytest.raises(ConfigurationError, match="name"):
        tool(name="has space")(find_items.fn)


# --------------------------------------------------------------------------- ToolSet


def test_toolset_bookkeeping() -> None:
    @tool
    def ping() -> str:
        """Answer pong."""
        return "pong"

    tools = ToolSet([find_items])
    assert tools.get("find_items") is find_items
    assert tools.get("ping") is None
    bigger = tools.with_tools(ping)
    assert [t.name for t in bigger] == ["find_items", "ping"]
    assert [t.name for t in tools] == ["find_items"]  # the original is unchanged
    assert [s["function"]["name"] for s in bigger.schemas()] == ["find_items", "ping"]
    assert len(bigger) == 2
    assert "ping" in bigger
    with pytest.raises(ConfigurationError, match="duplicate tool name 'ping'"):
        bigger.with_tools([ping])
    with pytest.raises(ConfigurationError, match="duplicate"):
        ToolSet([find_items, find_items])


async def test_execute_success_sync_and_async() -> None:
    @tool
    async def add(a: int, b: int = 2) -> str:
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        return str(a + b)

    tools = ToolSet([find_items, add])
    outcome = await tools.execute(call("find_items", {"query": "x", "kind": "b"}))
    assert outcome == ToolOutcome(content="x|10|b", is_error=False, error_kind=None, original_bytes=6)
    assert (await tools.execute(call("add", {"a": 40}))).content == "42"
    assert (await tools.execute(call("add", '{"a": "5", "b": 1}'))).content == "6"  # lax coercion


async def test_sync_tool_runs_in_worker_thread() -> None:
    seen: list[int] = []

    @tool
    def where() -> str:
        """Report the thread."""
        seen.append(threading.get_ident())
        return "ok"

    await ToolSet([where]).execute(call("where", ""))
    assert seen
    assert seen[0] != threading.get_ident()


async def test_unknown_tool_lists_available() -> None:
    outcome = await ToolSet([find_items]).execute(call("nope"))
    assert outcome.is_error
    assert outcome.error_kind == "unknown_tool"
    assert outcome.content == "Error: unknown tool 'nope'. Available tools: find_items."


async def test_invalid_json_quotes_parse_error() -> None:
    outcome = await ToolSet([find_items]).execute(call("find_items", '{"query": '))
    assert outcome.is_error
    assert outcome.error_kind == "invalid_json"
    assert "not valid JSON" in outcome.content
    assert "line 1 column" in outcome.content  # orjson's own message is quoted


async def test_arguments_must_be_an_object() -> None:
    outcome = await ToolSet([find_items]).execute(call("find_items", "[1, 2]"))
    assert outcome.error_kind == "invalid_arguments"
    assert "must be a JSON object, got list" in outcome.content


async def test_validation_errors_are_concise() -> None:
    outcome = await ToolSet([find_items]).execute(call("find_items", {"limit": 0, "kind": "z", "extra": 1}))
    assert outcome.is_error
    assert outcome.error_kind == "invalid_arguments"
    lines = outcome.content.splitlines()
    assert lines[0] == "Error: invalid arguments for tool 'find_items':"
    assert "- query: Field required" in lines
    assert "- limit: Input should be greater than or equal to 1 (got 0)" in lines
    assert any(line.startswith("- kind") for line in lines)
    assert "- extra: Extra inputs are not permitted (got 1)" in lines
    assert lines[-1] == "Expected parameters: query (required), limit, kind."
    assert "https://" not in outcome.content  # no pydantic URLs


async def test_empty_arguments_mean_no_arguments() -> None:
    outcome = await ToolSet([find_items]).execute(call("find_items", "  "))
    assert outcome.error_kind == "invalid_arguments"
    assert "- query: Field required" in outcome.content


async def test_manual_tool_without_model_checks_signature() -> None:
    def fn(a: int) -> str:
        return f"a={a}"

    manual = Tool(
        name="manual", description="d", parameters={"type": "object"}, fn=fn, read_only=True, timeout_s=None
    )
    tools = ToolSet([manual])
    assert (await tools.execute(call("manual", {"a": 3}))).content == "a=3"
    bad = await tools.execute(call("manual", {"a": 1, "b": 3}))
    assert bad.error_kind == "invalid_arguments"
    assert "unexpected keyword argument 'b'" in bad.content


async def test_validator_hook_checks_arguments_instead_of_the_signature() -> None:
    received: list[dict[str, Any]] = []

    async def fn(**arguments: Any) -> str:
        received.append(arguments)
        return "ok"

    def validate(arguments: Any) -> list[tuple[str, str]]:
        return [] if isinstance(arguments.get("n"), int) else [("n", "must be an integer")]

    schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
    checked = Tool(name="checked", description="d", parameters=schema, fn=fn, validator=validate)
    tools = ToolSet([checked])
    assert (await tools.execute(call("checked", {"n": 2}))).content == "ok"
    bad = await tools.execute(call("checked", {"n": "2"}))
    assert bad.error_kind == "invalid_arguments" and received == [{"n": 2}]
    assert bad.content == (
        "Error: invalid arguments for tool 'checked':\n- n: must be an integer\n"
        "Expected parameters: n (required)."
    )


async def test_tool_error_and_exception() -> None:
    @tool
    def refuses() -> str:
        """Always refuses."""
        raise ToolError("the file is locked")

    @tool
    def crashes() -> str:
        """Always crashes."""
        raise KeyError("boom")

    tools = ToolSet([refuses, crashes])
    refused = await tools.execute(call("refuses"))
    assert (refused.content, refused.is_error, refused.error_kind) == (
        "Error: the file is locked",
        True,
        "tool_error",
    )
    with capture_logs() as logs:
        crashed = await tools.execute(call("crashes", call_id="c9"))
    assert crashed.is_error
    assert crashed.error_kind == "exception"
    assert crashed.content == "Error: tool 'crashes' raised KeyError: 'boom'"
    entry = next(e for e in logs if e["event"] == "tool_exception")
    assert entry["tool"] == "crashes"
    assert entry["call_id"] == "c9"
    assert entry["exc_info"] is True
    assert entry["log_level"] == "error"


async def test_timeout_async_and_sync() -> None:
    release = threading.Event()

    @tool(timeout_s=0.05)
    async def slow_async() -> str:
        """Sleep."""
        await anyio.sleep(30)
        return "never"

    @tool(timeout_s=0.05)
    def slow_sync() -> str:
        """Block a thread."""
        release.wait(30)
        return "never"

    @tool
    async def default_limited() -> str:
        """Sleep."""
        await anyio.sleep(30)
        return "never"

    tools = ToolSet([slow_async, slow_sync, default_limited], default_timeout_s=0.05)
    try:
        for name in ("slow_async", "slow_sync", "default_limited"):
            outcome = await tools.execute(call(name))
            assert outcome.is_error
            assert outcome.error_kind == "timeout"
            assert outcome.content == f"Error: tool '{name}' timed out after 0.05 s and was stopped."
    finally:
        release.set()


async def test_tool_timeout_error_kind() -> None:
    @tool
    def self_limited() -> str:
        """Enforces its own limit."""
        raise ToolTimeout("command timed out after 3 s")

    outcome = await ToolSet([self_limited]).execute(call("self_limited"))
    assert (outcome.error_kind, outcome.is_error) == ("timeout", True)


@pytest.mark.parametrize("is_async", [True, False])
async def test_cancellation_propagates(is_async: bool) -> None:
    started = anyio.Event()
    release = threading.Event()

    async def async_body() -> str:
        started.set()
        await anyio.sleep(30)
        return "never"

    def sync_body() -> str:
        anyio.from_thread.run_sync(started.set)
        release.wait(30)
        return "never"

    body = async_body if is_async else sync_body
    body.__doc__ = "Wait."
    waiting = tool(timeout_s=60)(body)
    results: list[ToolOutcome] = []

    async def runner() -> None:
        results.append(await ToolSet([waiting]).execute(call(waiting.name)))

    try:
        with anyio.CancelScope() as scope:
            async with anyio.create_task_group() as group:
                group.start_soon(runner)
                await started.wait()
                scope.cancel()
    finally:
        release.set()
    assert scope.cancelled_caught
    assert results == []  # cancellation did not turn into a tool result


# --------------------------------------------------------------------------- result conversion


def _returning(value: object) -> Tool:
    def produce() -> object:
        return value

    produce.__doc__ = "Produce a value."
    return tool(produce)


async def test_non_str_results_are_converted() -> None:
    class Point(BaseModel):
        x: int

    cases: list[tuple[object, str]] = [
        ({"a": [1, 2], "b": None}, '{"a":[1,2],"b":null}'),
        ([1, "two"], '[1,"two"]'),
        (None, ""),
        (42, "42"),
        (Point(x=3), '{"x":3}'),
        ({"p": Path("/x")}, '{"p":"/x"}'),
        ("héllo".encode(), "héllo"),
    ]
    for value, expected in cases:
        outcome = await ToolSet([_returning(value)]).execute(call("produce"))
        assert outcome.content == expected
        assert not outcome.is_error
        assert outcome.original_bytes == len(expected.encode())


async def test_lone_surrogates_are_written_as_escapes() -> None:
    outcome = await ToolSet([_returning("a\ud800b")]).execute(call("produce"))
    assert outcome.content == "a\\ud800b"  # visible, and nothing else of the text is lost
    orjson.dumps(outcome.content)  # serialisable for the trace


async def test_invalid_utf8_is_replaced_and_said(tmp_path: Path) -> None:
    outcome = await ToolSet([_returning(b"caf\xe9 ok \xff")]).execute(call("produce"))
    assert not outcome.is_error
    assert outcome.error_kind == "invalid_utf8"
    assert outcome.content.startswith("caf\ufffd ok \ufffd\n")
    assert "not valid UTF-8: 2 undecodable byte sequence(s)" in outcome.content


async def test_binary_output_is_described_and_spilled(tmp_path: Path) -> None:
    blob = b"\x89PNG\r\n\x1a\n\x00\x00\xff\xfe" * 10
    tools = ToolSet([_returning(blob)])
    outcome = await tools.execute(call("produce"))
    assert outcome.error_kind == "binary_output"
    assert outcome.content == "[binary output, 120 bytes, not shown]"
    assert outcome.original_bytes == 120
    spilled = await tools.execute(call("produce", call_id="bin/1"), spill_dir=tmp_path / "spill")
    assert spilled.spill_path == tmp_path / "spill" / "bin_1.out"
    assert spilled.spill_path.read_bytes() == blob
    assert str(spilled.spill_path) in spilled.content


async def test_huge_output_is_capped_and_spilled_in_full(tmp_path: Path) -> None:
    size = 100_000_000
    unit = "0123456789abcdef"
    big = unit * (size // len(unit))
    tools = ToolSet([_returning(big)])
    outcome = await tools.execute(call("produce", call_id="call_big"), spill_dir=tmp_path)
    assert not outcome.is_error
    assert outcome.error_kind == "output_capped"
    assert outcome.original_bytes == size
    head, note = outcome.content.split("\n\n[output capped", 1)
    assert head == big[:1_000_000]
    path = tmp_path / "call_big.out"
    assert outcome.spill_path == path
    assert f"showing the first 1000000 of {size} bytes" in note
    assert f"saved at {path}" in note
    assert path.stat().st_size == size
    assert path.read_bytes() == big.encode()


async def test_capped_without_spill_dir_says_what_was_dropped() -> None:
    tools = ToolSet([_returning("é" * 10)], max_output_bytes=5)  # 20 bytes, 2 per char
    outcome = await tools.execute(call("produce"))
    assert outcome.error_kind == "output_capped"
    assert outcome.original_bytes == 20
    assert outcome.spill_path is None
    assert outcome.content == "éé\n\n[output capped: showing the first 5 of 20 bytes; 15 bytes dropped]"


async def test_internal_tools_are_never_capped() -> None:
    def context_tool() -> str:
        return "x" * 50

    internal = Tool(
        name="ctx",
        description="d",
        parameters={"type": "object", "properties": {}},
        fn=context_tool,
        read_only=True,
        timeout_s=None,
        internal=True,
    )
    outcome = await ToolSet([internal], max_output_bytes=10).execute(call("ctx"))
    assert outcome.content == "x" * 50
    assert outcome.error_kind is None


async def test_a_reused_call_id_gets_its_own_spill_file(tmp_path: Path) -> None:
    first, second = "a" * 30, "b" * 30
    outputs = iter([first, second])

    @tool
    def produce() -> str:
        """Produce the next output."""
        return next(outputs)

    tools = ToolSet([produce], max_output_bytes=10)
    one = await tools.execute(call("produce", call_id="call_1"), spill_dir=tmp_path)
    two = await tools.execute(
        call("produce", call_id="call_1"), spill_dir=tmp_path
    )  # the model reused the id
    assert (one.spill_path, two.spill_path) == (tmp_path / "call_1.out", tmp_path / "call_1.2.out")
    assert one.spill_path.read_text() == first and two.spill_path.read_text() == second
    assert f"saved at {one.spill_path}]" in one.content and f"saved at {two.spill_path}]" in two.content


async def test_a_failed_spill_fails_only_that_call(tmp_path: Path) -> None:
    blocked = tmp_path / "outputs"
    blocked.write_text("a file where the spill directory should be")  # like a full or read-only disk

    @tool
    def blob() -> bytes:
        """Produce binary output."""
        return b"\x89PNG\x00\xff" * 5

    tools = ToolSet([_returning("x" * 30), blob], max_output_bytes=10)
    capped = await tools.execute(call("produce"), spill_dir=blocked)
    assert (capped.is_error, capped.error_kind, capped.original_bytes) == (True, "spill_failed", 30)
    assert capped.content.startswith("x" * 10 + "\n\n[output capped: showing the first 10 of 30 bytes; ")
    assert "saving the full output failed (File exists), so 20 bytes are lost]" in capped.content
    binary = await tools.execute(call("blob"), spill_dir=blocked)
    assert (binary.is_error, binary.error_kind) == (True, "spill_failed")
    assert binary.content == "[binary output, 30 bytes, not shown; saving it failed: File exists]"


def _made(default: int, doc: str, kind: type = int) -> Tool:
    """A tool defined in a function, as a workspace's tools are (a new function every call)."""

    async def count(n: int = default) -> str:
        return str(n)

    count.__doc__ = f"Count.\n\n    Args:\n        n: {doc}\n    "
    count.__annotations__ = {"n": kind, "return": str}
    return tool(count)


def test_tools_of_one_shape_share_their_argument_model() -> None:
    first, again = _made(3, "how many"), _made(3, "how many")
    assert first.fn is not again.fn
    assert first.arguments_model is again.arguments_model  # one pydantic class, not one per agent
    assert first.parameters == again.parameters
    # any difference in the shape gets its own model, with its own schema
    assert _made(4, "how many").parameters["properties"]["n"]["default"] == 4
    assert _made(3, "how much").parameters["properties"]["n"]["description"] == "how much"
    as_float = _made(3, "how many", float)
    assert as_float.arguments_model is not first.arguments_model
    assert as_float.parameters["properties"]["n"]["type"] == "number"
    assert first.arguments_model is not None and as_float.arguments_model is not None
    with pytest.raises(ValidationError):
        first.arguments_model.model_validate({"n": 1.5})
    assert as_float.arguments_model.model_validate({"n": 1.5}).model_dump(by_alias=True) == {"n": 1.5}


def test_workspace_tools_share_models_across_workspaces(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = {t.name: t for t in workspace_tools(Workspace(tmp_path / "a"))}
    two = {t.name: t for t in workspace_tools(Workspace(tmp_path / "b"))}
    assert one.keys() == two.keys()
    assert all(one[name].arguments_model is two[name].arguments_model for name in one)
    assert all(one[name].fn is not two[name].fn for name in one)  # each bound to its own workspace
