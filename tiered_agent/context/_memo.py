"""Memos of pure text functions, owned by the run that asks.

Some functions of the context steps are pure and called with the same arguments prompt after
prompt (an old message's references, its condensed line, a shell command's facts): worth
remembering, but never process-wide (a server running thousands of runs would keep every run's
text). A function decorated with :func:`run_memo` keeps its results in the :class:`MemoTables` of
the run at work, which :func:`scope` makes current: every entry point of
:class:`~._manager.ContextManager` enters the scope of its run (:func:`in_run`), so a memo lives
exactly as long as its run, and the policies replaying one run share it (the replay hands them one
:class:`~._step.RunMemos`). Called outside any run's scope, a decorated function computes its
value and keeps nothing.

The invariant: a decorated function returns a value equal to what the undecorated function
returns for the same arguments, in or out of a scope (only the object's identity can differ,
and only between runs or once an entry was evicted). Each table is bounded by the decorator's
``maxsize``: the oldest entry goes first.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Concatenate, ParamSpec, Protocol, TypeVar, cast

__all__ = ["MemoTables", "in_run", "in_run_async", "outside_runs", "run_memo", "scope"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

_KEYWORDS = object()  # separates positional from keyword arguments in a memo key
_MISSING = object()  # no entry
_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


class MemoTables(dict[Callable[..., Any], dict[Any, Any]]):
    """One run's memo tables: a bounded table per decorated function (made at its first call)."""

    __slots__ = ()


_CURRENT: ContextVar[MemoTables | None] = ContextVar("tiered_agent_run_memos", default=None)


@contextmanager
def scope(tables: MemoTables) -> Iterator[MemoTables]:
    """Make ``tables`` the memo tables of the code run inside (the task's context only)."""
    token = _CURRENT.set(tables)
    try:
        yield tables
    finally:
        _CURRENT.reset(token)


def _one_argument(function: Callable[..., Any]) -> bool:
    """Whether ``function`` takes exactly one argument, by position (its memo is keyed by that argument
    itself: no tuple per entry)."""
    try:
        parameters = tuple(inspect.signature(function).parameters.values())
    except (TypeError, ValueError):  # no signature to read: keyed as any other
        return False
    return len(parameters) == 1 and parameters[0].kind in _POSITIONAL


def _key(one: bool, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A call's memo key: the argument itself for a function of one argument (:data:`_MISSING` for
    a call by keyword or a wrong call, computed, or raising, as the plain function would), else
    the positional and keyword arguments."""
    if one:
        return args[0] if len(args) == 1 and not kwargs else _MISSING
    return (*args, _KEYWORDS, *kwargs.items()) if kwargs else args


def _store(table: dict[Any, Any], key: Any, value: Any, maxsize: int) -> None:
    """Keep ``value`` under ``key``, dropping the oldest entry once ``table`` holds ``maxsize``."""
    if len(table) >= maxsize:
        del table[next(iter(table))]
    table[key] = value


def run_memo(
    maxsize: int, keep: Callable[[Any], bool] | None = None
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Remember a pure function's results in the current run's tables (at most ``maxsize``);
    ``keep``: only the results it accepts (the others cost less to compute again than to hold).

    A function of one argument is keyed by the argument itself (a call by keyword is not
    remembered); any other by its positional and keyword arguments."""
    if maxsize < 1:
        raise ValueError("a run memo keeps at least one entry")

    def decorate(function: Callable[_P, _R]) -> Callable[_P, _R]:
        if _one_argument(function):
            return _by_argument(function, maxsize, keep)
        return _by_arguments(function, maxsize, keep)

    return decorate


def _by_arguments(
    function: Callable[_P, _R], maxsize: int, keep: Callable[[Any], bool] | None
) -> Callable[_P, _R]:
    """:func:`run_memo`'s wrapper of any other function: keyed by its positional and keyword
    arguments (:func:`_key`)."""

    @functools.wraps(function)
    def memoized(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        tables = _CURRENT.get()
        if tables is None:
            return function(*args, **kwargs)
        key = _key(False, args, kwargs)
        table = tables.get(memoized)
        if table is None:  # the function's first call in this run
            table = tables[memoized] = {}
        value = table.get(key, _MISSING)  # a miss raises nothing (a refused result is asked again)
        if value is _MISSING:
            value = function(*args, **kwargs)
            if keep is None or keep(value):
                _store(table, key, value, maxsize)
        return cast(_R, value)

    return memoized


def _by_argument(
    function: Callable[_P, _R], maxsize: int, keep: Callable[[Any], bool] | None
) -> Callable[_P, _R]:
    """:func:`run_memo`'s wrapper of a function of one argument: keyed by the argument itself,
    looked up without a key built per call nor an exception per miss (most of the memos)."""

    @functools.wraps(function)
    def remembered(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        tables = _CURRENT.get()
        if tables is None or kwargs or len(args) != 1:  # a call by keyword, or a wrong call: plain
            return function(*args, **kwargs)
        table = tables.get(remembered)
        if table is None:  # the function's first call in this run
            table = tables[remembered] = {}
        value = table.get(args[0], _MISSING)
        if value is _MISSING:
            value = function(*args, **kwargs)
            if keep is None or keep(value):
                _store(table, args[0], value, maxsize)
        return cast(_R, value)

    return remembered


class _InRun(Protocol):
    @property
    def memo_tables(self) -> MemoTables: ...


_S = TypeVar("_S", bound=_InRun)


def in_run(method: Callable[Concatenate[_S, _P], _R]) -> Callable[Concatenate[_S, _P], _R]:
    """Run a method of an object that owns a run's ``memo_tables`` in that run's scope."""

    def scoped(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        token = _CURRENT.set(self.memo_tables)  # :func:`scope`, without a generator per call
        try:
            return method(self, *args, **kwargs)
        finally:
            _CURRENT.reset(token)

    functools.update_wrapper(scoped, method)
    return scoped


def in_run_async(
    method: Callable[Concatenate[_S, _P], Awaitable[_R]],
) -> Callable[Concatenate[_S, _P], Awaitable[_R]]:
    """:func:`in_run` for a coroutine method (the scope holds while it is awaited)."""

    async def scoped(self: _S, /, *args: _P.args, **kwargs: _P.kwargs) -> _R:
        token = _CURRENT.set(self.memo_tables)
        try:
            return await method(self, *args, **kwargs)
        finally:
            _CURRENT.reset(token)

    functools.update_wrapper(scoped, method)
    return scoped


def outside_runs(function: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
    """``function`` awaited outside any run's scope: the tools a dispatch runs (a task they start,
    say a connection kept for later runs, must not hold this run's memos)."""

    async def unscoped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        token = _CURRENT.set(None)
        try:
            return await function(*args, **kwargs)
        finally:
            _CURRENT.reset(token)

    return unscoped
