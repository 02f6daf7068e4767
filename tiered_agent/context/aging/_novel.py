"""Novel-lines elision: an old output keeps its first lines and the lines that tell something new.

Information dedup instead of head/tail cuts. Given the references already shown
later in the prompt (``seen``: newer iterations, verbatim or aged, and the
task), an output keeps its first ``head`` lines plus each line that carries a
reference (:func:`~._refs.refs`: an identifier, path or number) not in
``seen``, up to ``max_lines`` lines; every kept line adds its references to
``seen``. Runs of left-out lines become ``[... 37 lines ...]`` (one line: ``[...]``). A superseded
output (the same file read again, the same command re-run later) thus
collapses by itself: its lines hold nothing new.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._refs import Refs, refs

__all__ = ["Elided", "gap", "kept_lines", "novel_lines"]


@dataclass(frozen=True, slots=True)
class Elided:
    """The lines of an output as shown: ``body`` (kept lines and gap markers), how many of how many."""

    body: str
    shown: int
    total: int
    kept: tuple[int, ...] = ()  # the indexes of the lines kept, ascending


def gap(count: int, unit: str = "lines") -> str:
    """``[... 37 lines ...]``; one left-out line is just ``[...]``."""
    return "[...]" if count == 1 else f"[... {count:,} {unit} ...]"


def _cut(line: str, limit: int) -> str:
    return line if len(line) <= limit else line[:limit].rstrip() + " [...]"


def novel_lines(
    lines: Sequence[str],
    seen: set[str],
    *,
    head: int,
    max_lines: int,
    line_chars: int,
    keys: Sequence[str] | None = None,
    unit: str = "lines",
    names: Sequence[Refs] | None = None,
) -> Elided:
    """The first ``head`` lines and the lines with a reference not in ``seen`` (updated in place).

    ``keys[i]`` is the part of line ``i`` whose references count (default: the
    line itself); a line longer than ``line_chars`` is shown cut, and only the
    references of what is shown join ``seen``. ``names[i]``: the references of ``keys[i]`` (or of
    line ``i``) when the caller has them (:func:`~._refs.line_refs`).
    """
    keep: list[int] = []
    for index, line in enumerate(lines):
        if len(keep) >= max_lines:
            break
        key = line if keys is None else keys[index]
        if index < head or not seen.issuperset(refs(key) if names is None else names[index]):
            keep.append(index)  # a reference not in seen (no set built)
            shown = _cut(key, line_chars)
            seen.update(names[index] if names is not None and shown is key else refs(shown))
    return Elided(kept_lines(lines, keep, line_chars, unit), len(keep), len(lines), tuple(keep))


def kept_lines(lines: Sequence[str], keep: Sequence[int], line_chars: int, unit: str = "lines") -> str:
    """``lines`` at the indexes ``keep`` (ascending), each cut to ``line_chars``, every run of
    left-out lines one :func:`gap`."""
    out: list[str] = []
    previous = -1
    for index in keep:
        if index > previous + 1:
            out.append(gap(index - previous - 1, unit))
        out.append(_cut(lines[index], line_chars))
        previous = index
    if previous < len(lines) - 1:
        out.append(gap(len(lines) - 1 - previous, unit))
    return "\n".join(out)
