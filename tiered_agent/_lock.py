"""One writer per trace: an advisory lock beside it (``<trace>.lock``) that names its holder.

Two processes appending to one trace interleave their iterations, and the provider then refuses
every later resume. :class:`TraceLock` is taken before a run or a resume reads or writes its trace
(``flock``, exclusive, non-blocking) and released when the trace is closed. A second one is refused
with :class:`~._errors.TraceInUse`, one sentence naming the holder (its pid, host, program and
start, which the holder writes into the lock file).

A holder that dies, even by ``kill -9``, releases its ``flock`` with its last file descriptor, so a
stale ``.lock`` file left behind is simply taken over. The lock file is opened close-on-exec: a
shell command's background process never inherits (and so never keeps) the lock. On a filesystem
without locks, the run goes on unlocked with a warning.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import sys
import time
from pathlib import Path

import orjson
import structlog

from ._errors import TraceInUse

__all__ = ["TraceLock", "lock_path"]

log = structlog.get_logger(__name__)

_ATTEMPTS = 5  # a holder releasing while we open: the file we locked was unlinked, open it again
_UNSUPPORTED = {errno.ENOLCK, errno.EOPNOTSUPP, errno.ENOSYS, errno.EINVAL}
_MAX_HOLDER_BYTES = 4096


def lock_path(trace: Path) -> Path:
    """Where the lock of ``trace`` lives: ``<trace>.lock``."""
    return trace.with_name(trace.name + ".lock")


class TraceLock:
    """The lock of one trace (see the module docstring). Not reentrant; :meth:`release` is idempotent."""

    def __init__(self, trace: Path) -> None:
        self.trace = trace
        self.path = lock_path(trace)
        self._fd: int | None = None

    @property
    def held(self) -> bool:
        return self._fd is not None

    def acquire(self) -> TraceLock:
        """Take the lock; :class:`TraceInUse` when another process holds it, ``OSError`` when the
        lock file cannot be created."""
        if self._fd is not None:
            return self
        for _ in range(_ATTEMPTS):
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW, 0o644)
            if not self._locked(fd):
                holder = _holder(fd)
                os.close(fd)
                raise TraceInUse(
                    f"{self.trace} is in use by {holder}; wait for that run to end (or stop it) "
                    "before resuming it"
                )
            if _same_file(fd, self.path):
                self._fd = fd
                self._write_holder(fd)
                return self
            os.close(fd)  # the holder released and removed it while we waited: take the new one
        raise TraceInUse(f"{self.trace} is being locked and released by other processes; try again")

    def _locked(self, fd: int) -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        except OSError as exc:
            if exc.errno not in _UNSUPPORTED:
                os.close(fd)
                raise
            log.warning("trace.lock_unsupported", trace=str(self.trace), error=os.strerror(exc.errno or 0))
        return True

    def _write_holder(self, fd: int) -> None:
        holder = {
            "pid": os.getpid(),
            "host": socket.gethostname(),
            "program": os.path.basename(sys.argv[0]) if sys.argv and sys.argv[0] else "python",
            "since": time.time(),
        }
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, orjson.dumps(holder), 0)
        except OSError as exc:  # the lock holds without its label; a refused process says "unknown"
            log.warning("trace.lock_label_failed", trace=str(self.trace), error=exc.strerror or str(exc))

    def release(self) -> None:
        """Remove the lock file and release the lock (in that order: no one can lock a file that is
        about to vanish without noticing, see :meth:`acquire`)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if _same_file(fd, self.path):
                self.path.unlink(missing_ok=True)
        except OSError as exc:
            log.warning("trace.lock_not_removed", lock=str(self.path), error=exc.strerror or str(exc))
        finally:
            os.close(fd)

    def __enter__(self) -> TraceLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def _same_file(fd: int, path: Path) -> bool:
    try:
        opened, current = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except OSError:
        return False
    return (opened.st_dev, opened.st_ino) == (current.st_dev, current.st_ino)


def _holder(fd: int) -> str:
    """The lock holder as a phrase: ``process 4242 (tiered-agent) on host since 21:40:03``."""
    try:
        data = orjson.loads(os.pread(fd, _MAX_HOLDER_BYTES, 0))
    except (OSError, orjson.JSONDecodeError):
        return "another process (it has not said which yet)"
    if not isinstance(data, dict):
        return "another process"
    pid, host, program, since = (data.get(k) for k in ("pid", "host", "program", "since"))
    parts = [f"process {pid}" if isinstance(pid, int) else "another process"]
    if isinstance(program, str) and program:
        parts.append(f"({program[:60]})")
    if isinstance(host, str) and host and host != socket.gethostname():
        parts.append(f"on {host[:60]}")
    if isinstance(since, int | float) and not isinstance(since, bool) and 0 < since < 1e11:
        parts.append(f"since {time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(since))}")
    return " ".join(parts)
