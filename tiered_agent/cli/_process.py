"""The process around a command: its standard streams, its terminal's size and its signals.

Set up once, by :func:`prepare_process` before click parses the command line, and :func:`stops`
around the command:

- A standard stream the caller closed (``2>&-``) is reopened on ``/dev/null``: Python would leave
  ``sys.stderr`` None (logging then crashed) and the next file opened would take descriptor 2, so
  that whatever a child process or a stray write sends to "stderr" would land in a trace.
- Text the streams' encoding cannot hold (``PYTHONIOENCODING=ascii``, a Latin-1 locale) is written
  as escapes (``\\xb7``), never a ``UnicodeEncodeError``.
- ``COLUMNS`` / ``LINES`` that no terminal has (0, 1, 10 million) are ignored, as rich ignores text:
  rich printed nothing at 0 columns and 300 MB of rules at 99,999,999.
- SIGTERM, SIGHUP and Ctrl-C stop a command the same way (:class:`Interrupted`, a
  ``KeyboardInterrupt``): every ``finally`` and ``with`` runs, so temporary files are removed and
  no output is left half-written. A second signal during that clean stop is ignored. ``run``,
  ``resume`` and ``batch`` replace these handlers while their agents run (their own clean stop).
- A working directory that was deleted (or moved away) is refused in one sentence, exit 2: every
  relative path, and the worker processes the bench starts, would fail on it, with tracebacks from
  their cleanup.
- A reader that went away (``| head -1``) ends the command quietly with 141 (128 + SIGPIPE), as a
  Unix tool killed by SIGPIPE does: no traceback, no "Exception ignored" at exit.

Every stop by a signal exits 128 + its number with one line on stderr.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterator
from types import FrameType

import click

from .._terminal import silence_stdout

__all__ = [
    "MAX_COLUMNS",
    "MIN_COLUMNS",
    "Interrupted",
    "prepare_process",
    "stops",
]

MIN_COLUMNS, MAX_COLUMNS = 20, 1000  # a terminal width outside these is not one anybody reads
_MAX_LINES = 10_000
_STOPPING = (signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
EXIT_PIPE = 128 + signal.SIGPIPE


class Interrupted(KeyboardInterrupt):
    """SIGTERM, SIGHUP or SIGINT (``signum``) stopped the command; a ``KeyboardInterrupt``, so
    whatever handles Ctrl-C handles it."""

    def __init__(self, signum: int) -> None:
        super().__init__(signal.Signals(signum).name)
        self.signum = signum


def _reopen_closed_streams() -> bool:
    """Descriptors 0-2 that are closed are opened on ``/dev/null``; whether stdout was closed."""
    closed = []
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.append(fd)
            target = os.open(os.devnull, os.O_RDWR)  # the lowest free descriptor: fd itself
            if target != fd:
                os.dup2(target, fd)
                os.close(target)
    for fd, name, mode in ((0, "stdin", "r"), (1, "stdout", "w"), (2, "stderr", "w")):
        if fd in closed or getattr(sys, name) is None:
            setattr(sys, name, open(fd, mode, encoding="utf-8", closefd=False))  # noqa: SIM115
    return 1 in closed


def _escape_unencodable() -> None:
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):
                reconfigure(errors="backslashreplace")


def _sane_terminal_size() -> None:
    """Drop ``COLUMNS`` / ``LINES`` values no terminal has (rich would print at that width)."""
    for name, low, high in (("COLUMNS", MIN_COLUMNS, MAX_COLUMNS), ("LINES", 1, _MAX_LINES)):
        value = os.environ.get(name)
        if value is None or not value.strip().isdigit():
            continue  # rich ignores what is not a number itself
        number = int(value)
        if number < low:
            del os.environ[name]
        elif number > high:
            os.environ[name] = str(high)


def _stop_once() -> None:
    """SIGTERM, SIGHUP and SIGINT raise :class:`Interrupted` once; a later one is ignored (the
    clean stop it would interrupt is already under way: temporary files are being removed)."""
    stopping: list[int] = []

    def handler(signum: int, frame: FrameType | None) -> None:
        if stopping:
            return
        stopping.append(signum)
        raise Interrupted(signum)

    for signum in _STOPPING:
        with contextlib.suppress(ValueError, OSError):  # not the main thread, or not allowed
            if signal.getsignal(signum) is not signal.SIG_IGN:  # nohup: stays ignored
                signal.signal(signum, handler)


def _check_working_directory() -> None:
    try:
        os.getcwd()
    except FileNotFoundError:
        click.echo(
            "Error: the current directory no longer exists (it was deleted or moved); "
            "cd to an existing directory and run the command again",
            err=True,
        )
        raise SystemExit(2) from None


def prepare_process() -> None:
    """Streams, terminal size and signal handlers as this module's docstring says; once, before
    click parses the command line."""
    stdout_closed = _reopen_closed_streams()
    _check_working_directory()
    _escape_unencodable()
    _sane_terminal_size()
    _stop_once()
    if stdout_closed:
        click.echo("warning: standard output is closed; what this command prints is discarded", err=True)


@contextlib.contextmanager
def stops() -> Iterator[None]:
    """Around a command: a signal or a reader gone ends it quietly with 128 + N (``SystemExit``),
    one line on stderr for a signal, nothing for a broken pipe."""
    try:
        yield
    except BrokenPipeError:
        silence_stdout()
        raise SystemExit(EXIT_PIPE) from None
    except KeyboardInterrupt as exc:
        signum = exc.signum if isinstance(exc, Interrupted) else int(signal.SIGINT)
        with contextlib.suppress(OSError, ValueError):
            click.echo(f"interrupted by {signal.Signals(signum).name}", err=True)
        raise SystemExit(128 + signum) from None
