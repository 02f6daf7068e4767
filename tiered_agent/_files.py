"""Opening files that may not be files: FIFOs, devices and sockets are refused, never waited on.

``open()`` on a FIFO blocks until a writer appears (forever, in a thread no signal reaches), and
``/dev/zero`` reads without end. Everything that reads a path given by a user or a model (the
workspace tools, the trace reader, ``trace show``) opens it with :func:`open_regular`: the open
itself cannot block (``O_NONBLOCK``), and what it opened must be a regular file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import BinaryIO

__all__ = [
    "NotRegularFile",
    "describe_mode",
    "open_regular",
    "open_regular_for_appending",
    "open_regular_for_writing",
]


class NotRegularFile(OSError):
    """The path names a FIFO, a device, a socket or a directory: ``kind`` says which (a noun phrase,
    ``"a FIFO (named pipe)"``), the message names the path too."""

    def __init__(self, path: Path | str, kind: str) -> None:
        phrase = kind if kind.startswith("not ") else f"{kind}, not a regular file"
        super().__init__(f"{path} is {phrase}")
        self.kind = kind


def describe_mode(mode: int) -> str:
    """What a ``st_mode`` is, as a noun phrase (``"a FIFO (named pipe)"``)."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO (named pipe)"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _not_regular(path: Path | str, mode: int) -> NotRegularFile:
    return NotRegularFile(path, describe_mode(mode))


def open_regular(path: Path | str) -> BinaryIO:
    """``path`` opened for binary reading; :class:`NotRegularFile` when it is not a regular file,
    another ``OSError`` when it cannot be opened. Never blocks on a FIFO."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    return _checked(fd, path, "rb")


def open_regular_for_writing(path: Path | str, *, create: bool = True) -> BinaryIO:
    """``path`` opened for writing from its start (created if missing, its old content cut), or
    :class:`NotRegularFile`; never blocks on a FIFO (nothing is truncated before the check)."""
    flags = os.O_WRONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0) | (os.O_CREAT if create else 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO with no reader
            raise _not_regular(path, stat.S_IFIFO) from None
        raise
    handle = _checked(fd, path, "wb")
    os.ftruncate(handle.fileno(), 0)
    return handle


def open_regular_for_appending(path: Path | str, *, create: bool = False, buffered: bool = True) -> BinaryIO:
    """A regular file opened for appending (created if missing when ``create``), or
    :class:`NotRegularFile`; never blocks on a FIFO. ``buffered=False``: every write goes to the
    file at once (the trace)."""
    flags = (
        os.O_WRONLY
        | os.O_APPEND
        | os.O_NONBLOCK
        | getattr(os, "O_CLOEXEC", 0)
        | (os.O_CREAT if create else 0)
    )
    try:
        fd = os.open(path, flags, 0o644)
    except OSError as exc:
        if exc.errno == errno.ENXIO:  # a FIFO with no reader
            raise _not_regular(path, stat.S_IFIFO) from None
        raise
    return _checked(fd, path, "ab", buffering=-1 if buffered else 0)


def _checked(fd: int, path: Path | str, mode: str, buffering: int = -1) -> BinaryIO:
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _not_regular(path, info.st_mode)
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    handle: BinaryIO = os.fdopen(fd, mode, buffering=buffering)  # type: ignore[assignment]
    return handle
