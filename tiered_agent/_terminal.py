"""The CLI's rich console: text from a model, a tool or a trace cannot drive the user's terminal.

Control characters (ESC starts colour, cursor and OSC title sequences; ``\r`` and backspace
overwrite what was printed) and Unicode bidi overrides (U+202E shows text reversed) in anything
printed are shown as escapes (``\x1b``, ``\u202e``, see :func:`~._text.terminal_safe`). Rich
escapes its own markup but passes these through.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Iterable
from typing import Any

from rich.console import Console, ConsoleOptions, RenderableType
from rich.segment import Segment
from rich.text import Text

from ._text import terminal_safe

__all__ = ["TerminalConsole", "silence_stdout"]


def silence_stdout() -> None:
    """Point descriptor 1 at ``/dev/null`` (its reader went away): what is still buffered or
    printed goes nowhere, and the interpreter's flush at exit raises nothing."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, 1)
    finally:
        os.close(devnull)


class TerminalConsole(Console):
    """A rich console that prints control characters and bidi overrides of any text as escapes.

    Strings are escaped before rich parses them (:meth:`render_str`), and every rendered segment
    after rich laid it out (:meth:`render`, for ``Text`` built elsewhere): rich's own styling
    (written from styles, not from text) is untouched, and so is every text without such
    characters.
    """

    def render_str(self, text: str, **options: Any) -> Text:
        """Escaped before rich makes a ``Text`` of it (which would drop ``\r`` and BEL unseen)."""
        return super().render_str(terminal_safe(text), **options)

    def render(self, renderable: RenderableType, options: ConsoleOptions | None = None) -> Iterable[Segment]:
        for segment in super().render(renderable, options):
            safe = terminal_safe(segment.text) if segment.control is None else segment.text
            yield segment if safe is segment.text else Segment(safe, segment.style)

    def on_broken_pipe(self) -> None:
        """The reader of stdout went away (``| head -1``): stdout now writes to ``/dev/null`` (so
        the interpreter's flush at exit raises nothing) and :class:`BrokenPipeError` is raised for
        the command to stop as it sees fit, where rich would ``SystemExit(1)`` wherever it printed."""
        self.quiet = True
        silence_stdout()
        raise BrokenPipeError(errno.EPIPE, "standard output is closed (broken pipe)")

    @classmethod
    def for_cli(cls, *, stderr: bool = False, **options: Any) -> TerminalConsole:
        """The CLI's console: no highlighting, and a sentence is never cut into lines."""
        return cls(stderr=stderr, highlight=False, soft_wrap=True, **options)
