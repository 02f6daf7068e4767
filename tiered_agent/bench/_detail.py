"""The bench's per-run detail (``runs[]``): collected as runs finish, written sorted, read back lazily.

A run's detail (per policy its totals, missed strings and per-step series) is the bulk of a
bench document: hundreds of MB for ten thousand runs. :class:`DetailSpool` appends each run's
entry (one compact JSON line) to a temporary file as the run finishes and keeps only the run id
and where the line lies; at the end the lines are written in run-id order, either as their own
JSON-lines file beside ``bench.json`` (:meth:`DetailSpool.write_jsonl`, the default) or inside
the document (:func:`write_document` with ``inline=True``: byte for byte what
:func:`~._document.dumps` writes of a document holding them). :func:`read_jsonl` reads such a
file back one line at a time (for the report, the chart, ``bench merge``).
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

from .._errors import ConfigurationError
from .._files import write_all
from ._document import dumps

__all__ = ["RUNS_SUFFIX", "DetailSpool", "read_jsonl", "runs_file_for", "write_document"]

RUNS_SUFFIX = ".runs.jsonl"  # bench.json -> bench.runs.jsonl
_MARKER = b'\n  "runs": [],\n'  # the empty runs list of a document, at the top level (keys sorted)


def runs_file_for(json_path: Path) -> Path:
    """Where the per-run detail of the document ``json_path`` goes: ``<stem>.runs.jsonl`` beside it."""
    return json_path.with_name(json_path.stem + RUNS_SUFFIX)


class DetailSpool:
    """Per-run detail lines in a temporary file (in ``folder``), read back sorted by run id."""

    def __init__(self, folder: Path | None = None) -> None:
        if folder is not None:
            folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=".bench-runs-", suffix=".tmp", dir=folder)
        self.path = Path(name)
        self._fd = fd
        self._size = 0
        self._index: list[tuple[str, int, int]] = []  # run id, offset, length

    def add(self, run_id: str, line: bytes) -> None:
        """One run's entry (compact JSON, keys sorted)."""
        write_all(self._fd, line, self.path, "the bench's temporary file of per-run detail")
        self._index.append((run_id, self._size, len(line)))
        self._size += len(line)

    def __len__(self) -> int:
        return len(self._index)

    def lines(self) -> Iterator[bytes]:
        """The entries as written, in run-id order."""
        for _, offset, length in sorted(self._index):
            yield os.pread(self._fd, length, offset)

    def entries(self) -> Iterator[dict[str, Any]]:
        """The entries, parsed, in run-id order."""
        for line in self.lines():
            entry: dict[str, Any] = orjson.loads(line)
            yield entry

    def write_jsonl(self, path: Path) -> Path:
        """Write the entries to ``path``, one line each, sorted (the CLI writes ``path`` as a
        partial file it renames when every output is whole: ``_files.OutputFiles``)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("wb") as out:
            for line in self.lines():
                out.write(line)
                out.write(b"\n")
        return path

    def close(self) -> None:
        if self._fd < 0:
            return
        os.close(self._fd)
        self._fd = -1
        self.path.unlink(missing_ok=True)

    def __enter__(self) -> DetailSpool:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def write_document(document: Mapping[str, Any], path: Path, runs: Iterable[bytes] | None = None) -> Path:
    """Write ``document`` to ``path`` as :func:`~._document.dumps` does; ``runs`` (compact JSON
    lines, sorted) become its ``runs`` list, written one entry at a time (never all in memory).
    The CLI writes ``path`` as a partial file it renames when every output is whole
    (``_files.OutputFiles``)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if runs is None:
        path.write_bytes(dumps(document))
        return path
    head, tail = _split(dumps({**document, "runs": []}))
    with path.open("wb") as out:
        out.write(head)
        first = True
        for line in runs:
            entry = orjson.dumps(orjson.loads(line), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)
            out.write(b'\n  "runs": [\n' if first else b",\n")
            out.write(b"    " + entry.replace(b"\n", b"\n    "))
            first = False
        out.write(b'\n  "runs": [],\n' if first else b"\n  ],\n")
        out.write(tail)
    return path


def _split(text: bytes) -> tuple[bytes, bytes]:
    """The document's text before and after its (empty) top-level ``runs`` list."""
    at = text.find(_MARKER)
    if at < 0:  # cannot happen: "runs" is a top-level key and never the last one
        raise ValueError("the document has no top-level runs list")
    return text[:at], text[at + len(_MARKER) :]


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """The entries of a per-run detail file, one line at a time; a line that is not a JSON object
    is one clear :class:`ConfigurationError` naming the file and the line."""
    try:
        with path.open("rb") as lines:
            for number, line in enumerate(lines, 1):
                if not line.strip():
                    continue
                try:
                    entry = orjson.loads(line)
                except orjson.JSONDecodeError:
                    entry = None
                if not isinstance(entry, dict) or not isinstance(entry.get("run_id"), str):
                    raise ConfigurationError(f"{path}: line {number} is not a run's detail (a JSON object)")
                yield entry
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read the per-run detail ({exc.strerror or exc})") from None
