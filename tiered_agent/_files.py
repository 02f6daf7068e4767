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
from types import TracebackType
from typing import BinaryIO

from ._errors import ConfigurationError, OutputWriteError

__all__ = [
    "NotRegularFile",
    "OutputFiles",
    "describe_mode",
    "open_regular",
    "open_regular_for_appending",
    "open_regular_for_writing",
    "write_all",
    "write_fully",
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


class OutputFiles:
    """A set of output files written whole or not at all: each is written under a hidden partial
    name beside its final one (:meth:`partial`), and :meth:`commit` renames them all over their
    final names at once (``os.replace``, atomic per file). Leaving the ``with`` block without
    committing (a full disk, a signal, any error) removes every partial file: the files an earlier
    run left under the final names stay as they were, and no file is ever half-written under its
    final name. :meth:`check` refuses, before any work, a final name that is a FIFO, a device, a
    folder or a symbolic link that leads nowhere (replacing it would break what it is) and a folder
    that cannot take a new file.
    """

    def __init__(self) -> None:
        self._staged: list[tuple[Path, Path]] = []

    @staticmethod
    def check(final: Path) -> None:
        """:class:`ConfigurationError` (one sentence naming ``final``) when ``final`` cannot be written
        as an output: it is not a regular file, or its folder cannot be made or written."""
        try:
            mode = os.lstat(final).st_mode
        except FileNotFoundError:
            mode = None
        except OSError as exc:
            raise ConfigurationError(f"cannot write {final} ({exc.strerror or exc})") from None
        if mode is not None and stat.S_ISLNK(mode):
            try:
                mode = os.stat(final).st_mode
            except OSError as exc:
                raise ConfigurationError(
                    f"{final} is a symbolic link that leads nowhere ({exc.strerror or exc})"
                ) from None
            final = _target(final)
        if mode is not None and not stat.S_ISREG(mode):
            raise ConfigurationError(f"{final} is {describe_mode(mode)}, not a regular file")
        if len(os.fsencode(final.name)) > 240:  # its partial name must fit too (255 bytes)
            raise ConfigurationError(f"cannot write {final} (File name too long)")
        folder = final.parent
        while not folder.exists() and folder != folder.parent:  # nothing is made before the work
            folder = folder.parent
        if not folder.is_dir():
            raise ConfigurationError(f"cannot write {final} ({folder} is not a folder)")
        if not os.access(folder, os.W_OK | os.X_OK):
            why = "Read-only file system" if _read_only(folder) else "Permission denied"
            raise ConfigurationError(f"cannot write {final} ({why})")

    def partial(self, final: Path) -> Path:
        """Where to write ``final`` until :meth:`commit` (its folder is made). A symbolic link is
        kept: the file it leads to is the one replaced."""
        final = _target(final)
        final.parent.mkdir(parents=True, exist_ok=True)
        partial = final.with_name(f".{final.name[:200]}.{os.getpid()}.partial")
        self._staged.append((partial, final))
        return partial

    def commit(self) -> list[Path]:
        """Rename every partial file over its final name; the final names, in order."""
        done = [final for _, final in self._staged]
        for partial, final in self._staged:
            os.replace(partial, final)
        self._staged.clear()
        return done

    def discard(self) -> None:
        """Remove every partial file not committed."""
        for partial, _ in self._staged:
            partial.unlink(missing_ok=True)
        self._staged.clear()

    def __enter__(self) -> OutputFiles:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.discard()


def _read_only(folder: Path) -> bool:
    try:
        return bool(os.statvfs(folder).f_flag & os.ST_RDONLY)
    except OSError:
        return False


def _target(path: Path) -> Path:
    """The file a symbolic link leads to (the link itself stays), else ``path``."""
    return Path(os.path.realpath(path)) if path.is_symlink() else path


def write_fully(fd: int, data: bytes) -> None:
    """Write all of ``data`` to ``fd``, however many writes it takes; an ``OSError`` (a full disk, a
    file too large) propagates."""
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def write_all(fd: int, data: bytes, path: Path | str, what: str) -> None:
    """Write all of ``data`` to ``fd`` (``path``, which holds ``what``); a write that fails (a full
    disk, a file too large) is :class:`OutputWriteError`, one sentence naming the file."""
    try:
        write_fully(fd, data)
    except OSError as exc:
        raise OutputWriteError(f"cannot write {what} {path} ({exc.strerror or exc})") from None
