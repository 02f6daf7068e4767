"""Run-owned memos (``context/_memo.py``): a decorated function keeps results only in the scope of
the run at work, never across runs or outside one; its values equal the plain function's; tables are
bounded; every entry point of the context manager works in its run's scope; and no module of the
context package keeps a process-wide memo."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from pathlib import Path

import pytest

from tiered_agent import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent._tools import ToolOutcome
from tiered_agent.context import _memo
from tiered_agent.context._dispatch import ToolKind
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._memo import MemoTables, run_memo, scope
from tiered_agent.context._step import RunMemos
from tiered_agent.context.aging._refs import refs

COUNTER = TokenCounter("o200k_base")
CONTEXT = Path(__file__).resolve().parents[1] / "tiered_agent" / "context"


def _counted(maxsize: int) -> tuple[list[tuple[object, ...]], object]:
    calls: list[tuple[object, ...]] = []

    @run_memo(maxsize)
    def shout(text: str, times: int = 1) -> str:
        calls.append((text, times))
        return text.upper() * times

    return calls, shout


def test_outside_a_run_nothing_is_kept() -> None:
    calls, shout = _counted(8)
    assert [shout("a"), shout("a")] == ["A", "A"]  # type: ignore[operator]
    assert calls == [("a", 1), ("a", 1)]


def test_a_run_keeps_its_results_and_shares_them_with_no_other_run() -> None:
    calls, shout = _counted(8)
    first, second = MemoTables(), MemoTables()
    with scope(first):
        assert [shout("a"), shout("a"), shout("a", times=2), shout("a", 2)] == ["A", "A", "AA", "AA"]  # type: ignore[operator]
    assert calls == [("a", 1), ("a", 2), ("a", 2)]  # keyword and positional calls are keyed apart
    with scope(second):
        assert shout("a") == "A"  # type: ignore[operator]
    assert calls[-1] == ("a", 1) and len(calls) == 4
    assert _memo._CURRENT.get() is None  # each scope ended where it was left
    assert sum(len(table) for table in first.values()) == 3


def test_a_table_is_bounded_and_drops_its_oldest_entry_first() -> None:
    calls, shout = _counted(2)
    tables = MemoTables()
    with scope(tables):
        for text in ["a", "b", "c", "b", "a"]:
            shout(text)  # type: ignore[operator]
    assert [text for text, _ in calls] == ["a", "b", "c", "a"]  # "a" was dropped when "c" came
    assert max(len(table) for table in tables.values()) == 2


def test_a_memo_keeps_only_the_results_its_keep_accepts() -> None:
    calls: list[str] = []

    @run_memo(8, keep=bool)
    def words(text: str) -> tuple[str, ...]:
        calls.append(text)
        return tuple(w for w in text.split() if len(w) > 3)

    tables = MemoTables()
    with scope(tables):
        assert [words("a an"), words("a an"), words("some text"), words("some text")] == [
            (),
            (),
            ("some", "text"),
            ("some", "text"),
        ]
    assert calls == ["a an", "a an", "some text"]  # the empty result is computed again, never kept
    assert list(tables[words].values()) == [("some", "text")]


def test_a_lines_references_are_remembered_within_the_run_only() -> None:
    lines = [f"line {n}: call parse_args" for n in range(3)]
    with scope(MemoTables()):
        found = [refs(line) for line in lines]
        assert all(refs(line) is got for line, got in zip(lines, found, strict=True))
    assert found == [("parse_args",)] * 3
    assert refs(lines[0]) == found[0] and refs(lines[0]) is not found[0]  # outside the run: computed again


def test_a_scope_ends_when_its_code_raises() -> None:
    with pytest.raises(RuntimeError), scope(MemoTables()):
        raise RuntimeError("boom")
    assert _memo._CURRENT.get() is None


def test_a_memo_keeps_at_least_one_entry() -> None:
    with pytest.raises(ValueError, match="at least one"):
        run_memo(0)


def _history(last: int) -> list[Message]:
    messages = [Message(role="user", content="Fix the bug in src/app.py", iteration=0)]
    for k in range(1, last + 1):
        call = ToolCall(id=f"c{k}", name="bash", arguments=f'{{"command": "cat src/mod_{k}.py"}}')
        asked = Message(role="assistant", content=f"reading mod_{k}", tool_calls=(call,), iteration=k)
        messages.append(asked)
        body = "\n".join(f"def handler_{k}_{j}(value_{j}): return value_{j}" for j in range(40))
        messages.append(Message(role="tool", content=body, tool_call_id=f"c{k}", name="bash", iteration=k))
    return messages


@pytest.mark.anyio
async def test_the_manager_works_in_its_own_run_scope_and_policies_of_one_run_share_it() -> None:
    history = _history(12)
    shared = RunMemos()
    first = ContextManager("tiered", counter=COUNTER, clock=None, memos=shared)
    second = ContextManager("kb-labs-adr", counter=COUNTER, clock=None, memos=shared)
    alone = ContextManager("tiered", counter=COUNTER, clock=None)
    assert first.memo_tables is second.memo_tables
    assert alone.memo_tables is not first.memo_tables
    for manager in (first, alone):
        for last in range(4, 13):
            await manager.prepare(history[: 1 + 2 * last])
    assert _memo._CURRENT.get() is None  # the scope ends with each call
    kept = {table_key.__name__ for table_key, table in first.memo_tables.items() if table}
    assert "refs" in kept  # aging read the old outputs' references through the run's memo
    assert {k.__name__ for k, t in alone.memo_tables.items() if t} == kept
    assert not any(first.memo_tables[key] is alone.memo_tables[key] for key in first.memo_tables)
    text = history[4].text
    assert refs(text) == refs.__wrapped__(text)  # type: ignore[attr-defined]


@pytest.mark.anyio
@pytest.mark.parametrize("policy", ["full", "tiered"])  # no step at the dispatch; dedup serving
async def test_the_tools_a_dispatch_runs_are_outside_the_run_scope(policy: str) -> None:
    manager = ContextManager(policy, counter=COUNTER, clock=None)
    seen: list[object] = []

    async def execute(indexes: Sequence[int]) -> list[ToolOutcome]:
        seen.append(_memo._CURRENT.get())
        return [ToolOutcome("ok") for _ in indexes]

    call = ToolCall(id="c1", name="bash", arguments='{"command": "ls"}')
    results = await manager.dispatch([call], lambda _: ToolKind(read_only=True), execute, iteration=1)
    assert [r.outcome.content for r in results] == ["ok"] and seen == [None]
    assert _memo._CURRENT.get() is None


def _memo_decorators(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            for decorator in node.decorator_list:
                name = ast.unparse(decorator)
                if "lru_cache" in name or name.split("(")[0].endswith(("functools.cache", "cache", "cached")):
                    found.append(f"{path.name}:{node.name} @{name}")
    return found


def test_no_module_of_the_context_package_keeps_a_process_wide_memo() -> None:
    modules = sorted(CONTEXT.rglob("*.py"))
    assert len(modules) > 40
    assert [found for path in modules for found in _memo_decorators(path)] == []
    assert _memo_decorators(Path(_memo.__file__)) == []
