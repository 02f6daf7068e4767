"""Finding and killing everything a shell command started, including what left its session.

``run_shell`` starts each command in a new session, so killing the process group covers what it
starts, except a descendant that calls ``setsid`` (``setsid server &``, daemons that double-fork).
Each command therefore carries a marker in its environment, :data:`MARKER` = a fresh token, which
every descendant inherits. After the command, :func:`kill_command` kills (SIGKILL, in rounds until
none is left) every process that carries the token or descends from one that does, and reaps the
ones that were re-parented to the runtime.

On Linux the runtime also becomes a *child subreaper* (``prctl(PR_SET_CHILD_SUBREAPER)``, once, at
the first command): orphaned descendants are re-parented to it instead of init, so they stay in its
process tree and it reaps them after the kill. Where ``/proc`` or ``prctl`` is missing (macOS),
only the process group is killed.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import os
import signal
import sys
import time
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache

import structlog

__all__ = ["MARKER", "become_subreaper", "command_processes", "kill_command", "start_ticks"]

MARKER = "TIERED_AGENT_SHELL_ID"
_PROC_DIR = "/proc"
_PR_SET_CHILD_SUBREAPER = 36
_MAX_ROUNDS = 50
_ROUND_PAUSE_S = 0.005
_REAP_WAIT_S = 0.5

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Proc:
    pid: int
    ppid: int
    state: str
    start: int  # clock ticks after boot

    @property
    def alive(self) -> bool:
        return self.state not in ("Z", "X")


@cache
def become_subreaper() -> bool:
    """Make this process a child subreaper (Linux); True when it is one. Done once per process."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)
        failed = libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0
    except (OSError, AttributeError) as exc:  # no libc or no prctl: the process group kill remains
        log.debug("shell.subreaper_unavailable", error=str(exc))
        return False
    if failed:
        log.debug("shell.subreaper_unavailable", error=os.strerror(ctypes.get_errno()))
    return not failed


def start_ticks() -> int:
    """Now, in the clock ticks of ``/proc/<pid>/stat``'s start time (0 where unknown)."""
    try:
        uptime = float((_read(f"{_PROC_DIR}/uptime") or b"").split()[0])
    except (ValueError, IndexError):
        return 0
    return int(uptime * os.sysconf("SC_CLK_TCK"))


def command_processes(token: str, since: int = 0) -> set[int]:
    """Live processes of one command: those started at or after ``since`` whose environment
    carries ``MARKER=token``, and every descendant of those (never this process)."""
    table = _snapshot()
    needle = f"\0{MARKER}={token}\0".encode()
    roots = [p.pid for p in table.values() if p.alive and p.start >= since - 1 and _carries(p.pid, needle)]
    children: dict[int, list[int]] = {}
    for p in table.values():
        children.setdefault(p.ppid, []).append(p.pid)
    found: set[int] = set()
    stack = roots
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, ()))
    found.discard(os.getpid())
    return {pid for pid in found if table[pid].alive}


def kill_command(token: str, since: int = 0, *, spare: int | None = None) -> set[int]:
    """SIGKILL every process of the command (see :func:`command_processes`) until none is left,
    reap those re-parented to this process, and return their pids. ``spare`` (the shell itself,
    whose exit status its owner collects) is killed but never reaped here."""
    killed: set[int] = set()
    for _ in range(_MAX_ROUNDS):
        targets = command_processes(token, since)
        if not targets:
            break
        for pid in targets:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        killed |= targets
        time.sleep(_ROUND_PAUSE_S)
    else:
        log.warning("shell.descendants_survive", token=token, pids=sorted(targets))
    _reap(killed - {spare} if spare is not None else killed)
    return killed


def _reap(pids: Iterable[int]) -> None:
    """Collect the exit status of killed processes that are (now) children of this one."""
    pending = set(pids)
    deadline = time.monotonic() + _REAP_WAIT_S
    while pending and time.monotonic() < deadline:
        for pid in list(pending):
            try:
                done, _ = os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:  # not our child (init or another parent reaps it)
                pending.discard(pid)
                continue
            if done:
                pending.discard(pid)
        if pending:
            time.sleep(_ROUND_PAUSE_S)


def _snapshot() -> dict[int, _Proc]:
    table: dict[int, _Proc] = {}
    try:
        names = os.listdir(_PROC_DIR)
    except OSError:
        return table
    for name in names:
        if name.isdigit():
            proc = _read_stat(int(name))
            if proc is not None:
                table[proc.pid] = proc
    return table


def _read(path: str) -> bytes | None:
    """A small /proc file in one read (os.open: a scan reads hundreds, pathlib costs 5x as much)."""
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while chunk := os.read(fd, 1 << 16):
            chunks.append(chunk)
        return b"".join(chunks)
    except OSError:  # the process exited while being read
        return None
    finally:
        os.close(fd)


def _read_stat(pid: int) -> _Proc | None:
    stat = _read(f"{_PROC_DIR}/{pid}/stat")
    if stat is None:
        return None
    # "pid (comm) state ppid pgrp session ... starttime(22nd)"; comm may hold spaces and parentheses.
    fields = stat[stat.rfind(b")") + 2 :].split()
    try:
        return _Proc(pid, int(fields[1]), fields[0].decode(), int(fields[19]))
    except (IndexError, ValueError):
        return None


def _carries(pid: int, needle: bytes) -> bool:
    environ = _read(f"{_PROC_DIR}/{pid}/environ")  # None: gone, or another user's process
    return environ is not None and needle in b"\0" + environ
