"""``search_text``'s engine: RE2 in-process where the pattern allows, else ``re`` in a killable child.

See :mod:`._grep` for why a model's pattern never runs with ``re`` in this process. The choice is
per pattern: RE2 (``google-re2``, when installed) takes everything but backreferences,
lookarounds and a few Python-only escapes; those go to the child process, which is killed at the
deadline and reports the matches it had found by then.

RE2 differs from ``re`` in one way a search can notice: ``\\d``, ``\\w``, ``\\s`` and ``\\b`` are
ASCII-only there (``re`` also matches other scripts' digits and letters).
"""

from __future__ import annotations

import contextlib
import functools
import re
import signal
import subprocess
import sys
import threading
from collections.abc import Iterable
from itertools import islice
from pathlib import Path

import anyio
import anyio.to_thread
import structlog
from anyio.abc import Process

from . import _grep
from ._errors import ToolError
from ._grep import Found, Pattern, SearchLimits

__all__ = ["compile_pattern", "search"]

log = structlog.get_logger(__name__)

_CHILD_GRACE_S = 2.0
_RE2_MAX_MEM = 64 << 20  # bytes RE2 may use for one compiled pattern


def compile_pattern(pattern: str) -> Pattern | None:
    """``pattern`` compiled by RE2, or None when RE2 is missing or does not accept it. Raises
    :class:`ToolError` (for the model) when ``pattern`` is not a valid Python regular expression."""
    try:
        re.compile(pattern)
    except (re.error, RecursionError, OverflowError) as exc:
        raise ToolError(f"invalid regular expression {pattern!r}: {exc}") from exc
    return _re2(pattern)


def _re2(pattern: str) -> Pattern | None:
    try:
        import re2  # type: ignore[import-not-found,unused-ignore]
    except ImportError:
        return None
    options = re2.Options()
    options.log_errors = False
    options.max_mem = _RE2_MAX_MEM
    try:
        compiled: Pattern = re2.compile(pattern, options=options)
    except Exception as exc:  # re2.error (unsupported syntax, too large) and friends: use the child
        log.debug("search.re2_declined", error=str(exc)[:200])
        return None
    return compiled


async def search(pattern: str, files: Iterable[tuple[str, str]], limits: SearchLimits) -> Found:
    """Search ``files`` ((path to open, path to show), walked lazily) for ``pattern`` within
    ``limits``. Cancelling this (the tool's timeout, a stopped run) stops the search at once: the
    worker thread at its next file, the child process by SIGKILL."""
    compiled = compile_pattern(pattern)
    stop = threading.Event()
    try:
        if compiled is not None:
            work = functools.partial(_grep.search_files, compiled, files, limits, stop=stop)
            return await anyio.to_thread.run_sync(work, abandon_on_cancel=True)
        listed = await anyio.to_thread.run_sync(_first, files, limits.max_files + 1, abandon_on_cancel=True)
        return await _in_child(pattern, listed, limits)
    finally:
        stop.set()


def _first(files: Iterable[tuple[str, str]], count: int) -> list[tuple[str, str]]:
    return list(islice(files, count))


async def _in_child(pattern: str, files: list[tuple[str, str]], limits: SearchLimits) -> Found:
    """Run the search with ``re`` in a child process, killed at the deadline (or when cancelled)."""
    try:
        child = await anyio.open_process(
            [sys.executable, "-I", "-S", str(Path(_grep.__file__))],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env={},
            start_new_session=True,
        )
    except OSError as exc:
        raise ToolError(f"could not start the regular-expression search: {exc.strerror or exc}") from exc
    out = bytearray()
    try:
        with anyio.move_on_after(limits.seconds + _CHILD_GRACE_S) as scope:
            await _exchange(child, _grep.request(pattern, files, limits), out)
            await child.wait()
    finally:
        with anyio.CancelScope(shield=True):
            if child.returncode is None:
                child.kill()
            await child.aclose()
    found = _grep.read_reply(bytes(out))
    if scope.cancelled_caught or child.returncode == -signal.SIGALRM:
        found.timed_out = True
        log.info("search.child_stopped", matches=len(found.lines), seconds=limits.seconds)
    elif child.returncode != 0:
        raise ToolError(f"the regular-expression search failed (exit code {child.returncode})")
    return found


async def _exchange(child: Process, request: bytes, out: bytearray) -> None:
    """Send the request, then read what the child writes until it closes its output."""
    assert child.stdin is not None and child.stdout is not None
    async with anyio.create_task_group() as group:

        async def send() -> None:
            assert child.stdin is not None
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await child.stdin.send(request)
            await child.stdin.aclose()

        group.start_soon(send)
        async for chunk in child.stdout:
            out += chunk
