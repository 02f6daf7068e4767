"""How a run memo keys its entries (``context/_memo.py``): a function of one argument by the argument
itself (no tuple held per entry), any other by its arguments; a call by keyword or a wrong call is
computed as the plain function would be, never answered from another call's entry."""

from __future__ import annotations

import pytest

from tiered_agent.context._memo import MemoTables, run_memo, scope


def test_a_function_of_one_argument_is_keyed_by_the_argument() -> None:
    calls: list[object] = []

    @run_memo(8)
    def size(value: object) -> int:
        calls.append(value)
        return len(str(value))

    tables = MemoTables()
    text, pair = "some text", ("a", "b")
    with scope(tables):
        assert [size(text), size(text), size(pair), size(pair), size(value=text)] == [9, 9, 10, 10, 9]
    assert calls == [text, pair, text]  # the keyword call is computed, not remembered
    table = tables[size]
    assert list(table) == [text, pair] and next(iter(table)) is text  # the arguments themselves


def test_a_wrong_call_raises_as_the_plain_function_does() -> None:
    @run_memo(8)
    def first(pair: tuple[str, str]) -> str:
        return pair[0]

    with scope(MemoTables()):
        assert first(("a", "b")) == "a"
        with pytest.raises(TypeError):
            first("a", "b")  # type: ignore[call-arg]  # an entry keyed ("a", "b") exists: still an error


def test_a_function_of_several_arguments_keeps_them_apart() -> None:
    @run_memo(8, keep=bool)
    def joined(left: str, right: str = "") -> str:
        return left + right

    tables = MemoTables()
    with scope(tables):
        assert [joined("a", "b"), joined("ab"), joined("a", right="b"), joined("", "")] == [
            "ab",
            "ab",
            "ab",
            "",
        ]
    keys = list(tables[joined])
    assert len(keys) == 3 and keys[:2] == [("a", "b"), ("ab",)]  # positional, and keyword apart
    assert "" not in tables[joined].values()  # keep refused the empty result


def test_one_argument_keys_hold_no_tuple() -> None:
    @run_memo(4096)
    def upper(text: str) -> str:
        return text.upper()

    tables = MemoTables()
    texts = [f"line {n}" for n in range(1000)]
    with scope(tables):
        for text in texts:
            upper(text)
    assert all(key is text for key, text in zip(tables[upper], texts, strict=True))
