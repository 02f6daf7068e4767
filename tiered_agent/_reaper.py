"""The supervisor of one shell command: it starts the command, and kills everything it started.

``run_shell`` does not start ``bash`` itself but this small program (``python -I -S _reaper.py``,
standard library only), which:

1. becomes a *child subreaper* (Linux ``prctl(PR_SET_CHILD_SUBREAPER)``): whatever the command
   starts stays in this process's tree even when it detaches, double-forks, calls ``setsid`` and
   clears its environment (``setsid env -i daemon &``), because an orphan is re-parented to the
   nearest subreaper instead of init;
2. forks and runs the command in its own process group, and writes ``pid N`` and, when the command
   exits, ``exit N`` (its exit code, negative for a signal) to the status pipe;
3. waits on its *lifeline*, a pipe whose other end only the runtime holds. When the lifeline
   closes, because the runtime is done with the command or because the runtime died (even by
   ``kill -9``: the kernel closes its descriptors), it SIGKILLs every process of its tree, in
   rounds until none is left, reaps them, and exits. SIGTERM, SIGINT and SIGHUP do the same.

So no command outlives its tool call, and a run killed mid-command leaves nothing running behind
it. Where there is no ``/proc`` or no ``prctl`` (macOS), the command's process group is killed.

``_reaper.py --serve COMMAND...`` supervises a long-lived server that speaks over the supervisor's
own stdin and stdout (an MCP stdio server, which the MCP SDK starts). The command inherits stdin
and stays in the supervisor's process group (a signal to the group reaches both); its stdout is
relayed whole line by whole line, and a line over :data:`MAX_LINE` bytes is not relayed (the MCP
SDK joins a line's parts quadratically: 50 MB took it over 10 s of CPU) but answered, when its
JSON-RPC ``id`` leads it, by a JSON-RPC error for that id, and noted on stderr. The supervisor stays
until the command exits, a stop signal arrives (then the command gets SIGTERM and
:data:`_SERVE_GRACE_S` to exit), or the supervisor's parent dies; then it kills the command's whole
tree, as above, and exits with the command's exit code. Invariant: when the supervisor is gone,
nothing the command started runs (a subreaper's descendants cannot escape).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import re
import select
import signal
import sys
import threading
import time

__all__ = ["MAX_LINE", "descendants", "main"]

_PROC_DIR = "/proc"
_PR_SET_CHILD_SUBREAPER = 36
_MAX_ROUNDS = 100
_ROUND_PAUSE_S = 0.005
_STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
# Python ignores these at startup; an ignored signal stays ignored across exec (subprocess restores them)
_SERVE_GRACE_S = 1.0  # under the MCP SDK's 2 s between SIGTERM and SIGKILL of the supervisor
_EXEC_FAILED = 127
MAX_LINE = 16 * 1024 * 1024  # bytes of one relayed stdout line (a JSON-RPC message) at most
_READ = 1 << 16
_HEAD = 4096  # bytes kept of a line too long, to find its id
# a JSON-RPC id leading a message: the first key, or the second after "jsonrpc"
_LEADING_ID = re.compile(
    rb'\A\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")\s*[,}]'
)
_RESTORED = tuple(getattr(signal, name) for name in ("SIGPIPE", "SIGXFZ", "SIGXFSZ") if hasattr(signal, name))


def main(argv: list[str]) -> int:
    """``_reaper.py STATUS_FD LIFELINE_FD COMMAND...`` or ``_reaper.py --serve COMMAND...``; see the
    module docstring."""
    if argv[1] == "--serve":
        return serve(argv[2:])
    status_fd, lifeline_fd, command = int(argv[1]), int(argv[2]), argv[3:]
    for fd in (status_fd, lifeline_fd):
        os.set_inheritable(fd, False)
    wake_r, stop = _catch_signals()
    _become_subreaper()
    child = _spawn(command)
    _release_output()
    _write(status_fd, f"pid {child}\n")
    _supervise(child, status_fd, lifeline_fd, wake_r, stop)
    _kill_tree(child)
    return 0


def _catch_signals() -> tuple[int, list[int]]:
    """(the read end of the pipe each signal wakes the loop through, the stop signals received so
    far): SIGCHLD only wakes the loop, a stop signal is also appended to the list."""
    wake_r, wake_w = os.pipe()
    os.set_blocking(wake_w, False)
    signal.set_wakeup_fd(wake_w)
    signal.signal(signal.SIGCHLD, _ignore)
    stop: list[int] = []
    for number in _STOP_SIGNALS:
        signal.signal(number, lambda signum, frame: stop.append(signum))
    return wake_r, stop


def _ignore(signum: int, frame: object) -> None:
    """A handler that does nothing: the signal only wakes the loop (through the wakeup fd)."""


def _spawn(command: list[str], stdout: int | None = None) -> int:
    """Fork and exec ``command``: in its own process group, or with ``stdout`` (``--serve``) in
    this process's group writing to ``stdout``."""
    pid = os.fork()
    if pid == 0:  # the command: default signal handling, then exec
        try:
            if stdout is None:
                os.setpgid(0, 0)
            else:
                os.dup2(stdout, 1)
            signal.set_wakeup_fd(-1)
            for number in (*_STOP_SIGNALS, signal.SIGCHLD, *_RESTORED):
                signal.signal(number, signal.SIG_DFL)
            os.execvp(command[0], command)
        except OSError as exc:
            _write(2, f"cannot start {command[0]!r}: {exc.strerror}\n")
        finally:
            os._exit(_EXEC_FAILED)
    if stdout is None:
        with contextlib.suppress(OSError):  # both sides set it: no window where the group does not exist
            os.setpgid(pid, pid)
    return pid


def serve(command: list[str]) -> int:
    """Run ``command`` on this process's stdin and stdout until it exits, a stop signal arrives or
    the parent dies; then kill its tree. Returns the command's exit code (negative for a signal)."""
    parent = os.getppid()
    wake_r, stop = _catch_signals()
    _become_subreaper()
    out_r, out_w = os.pipe()
    child = _spawn(command, stdout=out_w)
    os.close(out_w)
    relay = threading.Thread(target=_relay, args=(out_r, os.dup(1), os.dup(2)), daemon=True)
    relay.start()
    _release_output()
    status = _watch(child, parent, wake_r, stop)
    if status is None:
        status = _stop_child(child)
    else:  # what the command wrote before it exited still reaches the client
        relay.join(_SERVE_GRACE_S)
    _kill_tree(child)
    return _EXEC_FAILED if status is None else os.waitstatus_to_exitcode(status)


def _relay(source: int, sink: int, notes: int) -> None:
    """Copy ``source`` to ``sink`` whole line by whole line until EOF; see the module docstring.
    Once ``sink`` is closed, read on and discard (the command never blocks on a full pipe)."""
    lines = _Lines()
    with contextlib.suppress(OSError):
        while chunk := os.read(source, _READ):
            out = lines.feed(chunk)
            for note in lines.take_notes():
                _write(notes, note)
            while out and sink >= 0:
                try:
                    out = out[os.write(sink, out) :]
                except OSError:
                    sink = -1


class _Lines:
    """Splits a byte stream into whole lines; a line over :data:`MAX_LINE` becomes its refusal."""

    def __init__(self) -> None:
        self.parts: list[bytes] = []
        self.size = 0
        self.head: bytes | None = None  # set while a line too long is skipped
        self.notes: list[str] = []

    def feed(self, chunk: bytes) -> bytes:
        """The complete lines that ``chunk`` ends, to relay (refusals in place of lines too long)."""
        out: list[bytes] = []
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            self._add(chunk[start : end + 1])
            out.append(self._finish())
            start = end + 1
        if start < len(chunk):
            self._add(chunk[start:])
        return b"".join(out)

    def take_notes(self) -> list[str]:
        notes, self.notes = self.notes, []
        return notes

    def _add(self, part: bytes) -> None:
        self.size += len(part)
        if self.head is None:
            self.parts.append(part)
            if self.size > MAX_LINE:
                self.head = b"".join(self.parts)[:_HEAD]
                self.parts = []

    def _finish(self) -> bytes:
        line, head, size = b"".join(self.parts), self.head, self.size
        self.parts, self.head, self.size = [], None, 0
        if head is None:
            return line
        found = _LEADING_ID.match(head)
        self.notes.append(
            f"tiered-agent: the server wrote a stdout line of {size:,} bytes, over the {MAX_LINE:,} "
            f"an MCP message may be here; it was not read"
            f"{'' if found else ' (no JSON-RPC id leads it, so no request was answered)'}\n"
        )
        return b"" if found is None else _refusal(found.group(1), size)


def _refusal(request_id: bytes, size: int) -> bytes:
    """A JSON-RPC error for ``request_id`` saying its reply was too long to read."""
    message = f"the server's reply is {size:,} bytes, over the {MAX_LINE:,} a reply may be; it was not read"
    error = json.dumps({"code": -32603, "message": message})
    return b'{"jsonrpc": "2.0", "id": ' + request_id + b', "error": ' + error.encode() + b"}\n"


def _watch(child: int, parent: int, wake_fd: int, stop: list[int]) -> int | None:
    """The command's wait status once it exits; ``None`` when told to stop or orphaned first."""
    while not stop and os.getppid() == parent:
        ready, _, _ = select.select([wake_fd], [], [], 1.0)
        if ready:
            with contextlib.suppress(OSError):
                os.read(wake_fd, 512)
        status = _reap(child)
        if status is not None:
            return status
    return None


def _stop_child(child: int) -> int | None:
    """SIGTERM the command and give it :data:`_SERVE_GRACE_S` to exit."""
    with contextlib.suppress(OSError):
        os.kill(child, signal.SIGTERM)
    deadline = time.monotonic() + _SERVE_GRACE_S
    while time.monotonic() < deadline:
        status = _reap(child)
        if status is not None:
            return status
        time.sleep(_ROUND_PAUSE_S * 4)
    return None


def _release_output() -> None:
    """Stop holding the command's output pipe (the runtime reads it until every holder closes it)."""
    null = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(null, fd)
    os.close(null)


def _supervise(child: int, status_fd: int, lifeline_fd: int, wake_fd: int, stop: list[int]) -> None:
    """Report the command's exit, reap orphans, and return when the lifeline closes or a stop
    signal arrives."""
    reported = False
    while not stop:
        ready, _, _ = select.select([lifeline_fd, wake_fd], [], [], 1.0)
        if wake_fd in ready:
            with contextlib.suppress(OSError):
                os.read(wake_fd, 512)
        status = _reap(child)
        if status is not None and not reported:
            _write(status_fd, f"exit {os.waitstatus_to_exitcode(status)}\n")
            reported = True
        if lifeline_fd in ready:
            return


def _reap(child: int) -> int | None:
    """Collect every exited child; the wait status of ``child`` if it was among them."""
    found = None
    while True:
        try:
            pid, status = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return found
        if pid == 0:
            return found
        if pid == child:
            found = status


def _kill_tree(child: int) -> None:
    """SIGKILL the command's group and every descendant of this process until none is left."""
    for _ in range(_MAX_ROUNDS):
        with contextlib.suppress(OSError):
            os.killpg(child, signal.SIGKILL)
        targets = descendants(os.getpid())
        for pid in targets:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGKILL)
        _reap(child)
        if not targets:
            return
        time.sleep(_ROUND_PAUSE_S)


def descendants(root: int) -> set[int]:
    """Live processes below ``root`` in the process tree (empty where there is no ``/proc``)."""
    parents = _parents()
    children: dict[int, list[int]] = {}
    for pid, ppid in parents.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = list(children.get(root, ()))
    while stack:
        pid = stack.pop()
        if pid not in found:
            found.add(pid)
            stack.extend(children.get(pid, ()))
    return found


def _parents() -> dict[int, int]:
    """pid -> parent pid of every live (not zombie) process."""
    table: dict[int, int] = {}
    try:
        names = os.listdir(_PROC_DIR)
    except OSError:
        return table
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{_PROC_DIR}/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:  # exited while we looked
            continue
        # "pid (comm) state ppid ..."; comm may hold spaces and parentheses.
        fields = stat[stat.rfind(b")") + 2 :].split()
        if len(fields) > 1 and fields[0] not in (b"Z", b"X"):
            table[int(name)] = int(fields[1])
    return table


def _become_subreaper() -> None:
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):  # no libc or no prctl: the group kill remains
        libc = ctypes.CDLL(None, use_errno=True)  # this process's own symbols, libc's among them
        libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def _write(fd: int, text: str) -> None:
    with contextlib.suppress(OSError):  # the runtime is gone: nobody reads the status any more
        os.write(fd, text.encode())


if __name__ == "__main__":
    sys.exit(main(sys.argv))
