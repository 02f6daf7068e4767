"""Searching text files line by line for a regular expression, with a deadline that holds.

Python's ``re`` backtracks: ``(a+)+$`` on forty ``a`` and a ``!`` runs for hours, in C, holding
the GIL, where no timeout and no signal reaches it. So ``search_text`` never runs a model's pattern
with ``re`` in the runtime's process:

- a pattern RE2 accepts (``google-re2``: linear time, no backtracking, and it releases the GIL) is
  matched in a worker thread, checking the deadline (and whether its caller gave up) between files;
- any other pattern (backreferences, lookarounds, or no ``google-re2`` installed) is matched with
  ``re`` in a child process that the caller kills at the deadline, and that kills itself
  (``SIGALRM``) if its caller is gone.

This module is that child too (``python -I -S _grep.py``): it imports only the standard library,
and :func:`search_files` is the one search loop both use.
"""

from __future__ import annotations

import json
import os
import re
import signal
import stat
import sys
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["Found", "Pattern", "SearchLimits", "read_reply", "request", "search_files"]

_SNIFF_BYTES = 8192


class Pattern(Protocol):
    def search(self, text: str, /) -> Any: ...


@dataclass(frozen=True, slots=True)
class SearchLimits:
    max_results: int
    max_file_bytes: int
    max_files: int
    max_line_chars: int
    seconds: float


@dataclass
class Found:
    """What a search found: ``path:line: text`` lines and what it skipped or left undone."""

    lines: list[str] = field(default_factory=list)
    files_seen: int = 0
    skipped_large: int = 0
    timed_out: bool = False
    too_many_files: bool = False
    current: str | None = None  # the file being searched (where a stopped search stalled)

    def to_dict(self) -> dict[str, Any]:
        return {
            "lines": self.lines,
            "files_seen": self.files_seen,
            "skipped_large": self.skipped_large,
            "timed_out": self.timed_out,
            "too_many_files": self.too_many_files,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Found:
        if not isinstance(data, dict):
            return cls()
        lines = [str(line) for line in data.get("lines", ()) if isinstance(line, str)]
        return cls(
            lines,
            _count(data.get("files_seen")),
            _count(data.get("skipped_large")),
            data.get("timed_out") is True,
            data.get("too_many_files") is True,
        )


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else 0


class Stop(Protocol):
    def is_set(self) -> bool: ...


def search_files(
    pattern: Pattern,
    files: Iterable[tuple[str, str]],
    limits: SearchLimits,
    found: Found | None = None,
    stop: Stop | None = None,
) -> Found:
    """Search ``files`` ((path to open, path to show)) in order until ``limits`` stop it; matches
    are appended to ``found.lines`` as they are found.

    A file that is not a regular file, is over ``max_file_bytes``, cannot be read or holds a NUL
    byte in its first 8 KiB is skipped. The deadline, and ``stop`` (a ``threading.Event`` its
    caller sets when it gives up), are checked before each file.
    """
    found = Found() if found is None else found
    deadline = time.monotonic() + limits.seconds
    for path, shown in files:
        if len(found.lines) >= limits.max_results or (stop is not None and stop.is_set()):
            break
        found.files_seen += 1
        if found.files_seen > limits.max_files:
            found.too_many_files = True
            break
        if time.monotonic() > deadline:
            found.timed_out = True
            break
        found.current = shown
        _search_file(pattern, path, shown, limits, found)
    found.current = None
    return found


def _search_file(pattern: Pattern, path: str, shown: str, limits: SearchLimits, found: Found) -> None:
    data = _read(path, limits.max_file_bytes, found)
    if data is None or b"\x00" in data[:_SNIFF_BYTES]:
        return
    for number, line in enumerate(_split_lines(data.decode("utf-8", errors="replace")), start=1):
        if pattern.search(line):
            found.lines.append(f"{shown}:{number}: {_cut_line(line.strip(), limits.max_line_chars)}")
            if len(found.lines) >= limits.max_results:
                return


def _read(path: str, max_bytes: int, found: Found) -> bytes | None:
    """The file's bytes; None for what is not a regular file, too large, or unreadable."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return None
        if info.st_size > max_bytes:
            found.skipped_large += 1
            return None
        os.set_blocking(fd, True)
        with os.fdopen(fd, "rb", closefd=False) as handle:
            return handle.read(max_bytes + 1)
    except OSError:
        return None
    finally:
        os.close(fd)


def _split_lines(text: str) -> list[str]:
    """Lines as editors and grep count them: split on \\n only, a final newline ends the last line."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    return [line.removesuffix("\r") for line in lines]


def _cut_line(line: str, limit: int) -> str:
    if len(line) <= limit:
        return line
    return f"{line[:limit]}… [line cut, {len(line)} chars]"


# ---------------------------------------------------------------- the child process
def request(pattern: str, files: list[tuple[str, str]], limits: SearchLimits) -> bytes:
    """What the caller writes to the child's stdin."""
    return json.dumps(
        {
            "pattern": pattern,
            "files": files,
            "limits": [
                limits.max_results,
                limits.max_file_bytes,
                limits.max_files,
                limits.max_line_chars,
                limits.seconds,
            ],
        }
    ).encode("utf-8", "surrogatepass")


def read_reply(data: bytes) -> Found:
    """What the child wrote, as far as it got: one JSON line per match as it was found, then one
    line with the totals (missing when the child was killed at the deadline)."""
    found = Found()
    for line in data.decode("utf-8", "replace").splitlines():
        try:
            item = json.loads(line)
        except ValueError:
            continue
        if isinstance(item, dict) and isinstance(item.get("line"), str):
            found.lines.append(item["line"])
        elif isinstance(item, dict) and isinstance(item.get("file"), str):
            found.files_seen += 1
            found.current = item["file"]
        elif isinstance(item, dict) and "totals" in item:
            totals = Found.from_dict(item["totals"])
            totals.lines = found.lines
            found = totals
    return found


class _Streamed(list[str]):
    """Match lines written to stdout the moment they are found (a kill keeps what was written)."""

    def append(self, line: str) -> None:
        super().append(line)
        _emit({"line": line})


class _Progress(Found):
    """Each file announced before it is searched: a killed search still says where it stalled."""

    def __setattr__(self, name: str, value: Any) -> None:
        super().__setattr__(name, value)
        if name == "current" and value is not None:
            _emit({"file": value})


def _emit(item: dict[str, str]) -> None:
    sys.stdout.write(json.dumps(item) + "\n")
    sys.stdout.flush()


def _main() -> int:
    job = json.loads(sys.stdin.buffer.read().decode("utf-8", "surrogatepass"))
    limits = SearchLimits(*job["limits"])
    signal.alarm(max(int(limits.seconds) + 2, 1))  # a caller that died cannot kill this: the alarm does
    pattern = re.compile(job["pattern"])
    files: Iterator[tuple[str, str]] = ((str(a), str(b)) for a, b in job["files"])
    found = search_files(pattern, files, limits, _Progress(lines=_Streamed()))
    totals = found.to_dict()
    totals["lines"] = []
    sys.stdout.write(json.dumps({"totals": totals}) + "\n")
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(_main())
