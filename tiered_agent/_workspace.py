"""A workspace confined to one root directory, and the file tools that work inside it.

Every path a tool receives goes through :meth:`Workspace.resolve`, which
refuses absolute paths, ``..`` escapes and symlinks (anywhere in the chain)
leading outside the root. Read tools are always available; ``write_file`` /
``edit_file`` and ``run_shell`` are opt-in.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Iterator, Sequence
from pathlib import Path, PurePosixPath, PureWindowsPath
from typing import Annotated, BinaryIO

from pydantic import Field

from ._errors import ConfigurationError, PathOutsideWorkspace, ToolError
from ._files import NotRegularFile, open_regular, open_regular_for_writing
from ._grep import Found, SearchLimits
from ._search import search
from ._shell import DEFAULT_SHELL_TIMEOUT_S, shell_tool
from ._tools import Tool, tool

__all__ = [
    "LIST_DIR_MAX_ENTRIES",
    "READ_FILE_MAX_LINES",
    "READ_TOOL_TIMEOUT_S",
    "SEARCH_MAX_FILE_BYTES",
    "SEARCH_TIMEOUT_S",
    "Workspace",
    "workspace_tools",
]

LIST_DIR_MAX_ENTRIES = 500
READ_FILE_MAX_LINES = 2000
READ_FILE_MAX_LINE_CHARS = 2000
SEARCH_MAX_FILE_BYTES = 1_000_000
SEARCH_MAX_FILES = 20_000
SEARCH_MAX_LINE_CHARS = 300
SEARCH_TIMEOUT_S = 30.0  # a search stops here and reports what it found (a pattern that backtracks)
READ_TOOL_TIMEOUT_S = 30.0  # list_dir, read_file: a filesystem that hangs (a dead network mount)
_SKIP_DIRS = frozenset({".git"})
_SNIFF_BYTES = 8192
_LINE_BYTES = READ_FILE_MAX_LINE_CHARS * 4 + 4  # enough bytes for the characters a line shows
_COUNT_CHUNK = 1 << 20
_CONTINUATION_BYTES = bytes(range(0x80, 0xC0))  # UTF-8 bytes that do not start a character
# what a path may hold before the system refuses it (ENAMETOOLONG): a name, and the whole path
_MAX_NAME_BYTES = 255
_MAX_PATH_BYTES = 4096
_QUOTED_PATH_CHARS = 200  # how much of a path a refusal quotes back to the model

Depth = Annotated[int, Field(ge=1, le=10)]
LineNumber = Annotated[int, Field(ge=1)]
MaxResults = Annotated[int, Field(ge=1, le=1000)]
Count = Annotated[int, Field(ge=0)]


class Workspace:
    """A directory tree the agent's tools may touch; nothing outside it is reachable.

    The root must be an existing directory (:class:`ConfigurationError` otherwise); nothing is
    created.
    """

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self._root = Path(root).resolve()
        if not self._root.is_dir():
            problem = "does not exist" if not self._root.exists() else "is not a directory"
            raise ConfigurationError(f"workspace root {self._root} {problem}")

    @property
    def root(self) -> Path:
        return self._root

    def __repr__(self) -> str:
        return f"Workspace({str(self._root)!r})"

    def resolve(self, path: str) -> Path:
        """The real path of ``path`` (relative to the root); raises PathOutsideWorkspace if it escapes,
        ToolError (one sentence, the path quoted at most 200 characters) if the system cannot name it:
        a name over 255 bytes, a path over 4,096, a NUL byte, a symlink loop."""
        text = path.strip() or "."
        if PurePosixPath(text).is_absolute() or PureWindowsPath(text).is_absolute():
            raise PathOutsideWorkspace(
                f"absolute path {_quote(path)} is not allowed: use a path relative to the workspace root"
            )
        if ".." in PurePosixPath(os.path.normpath(text)).parts:
            raise PathOutsideWorkspace(f"path {_quote(path)} escapes the workspace root through '..'")
        _check_length(path, text)
        try:
            real = (self._root / text).resolve()
        except (OSError, RuntimeError, ValueError) as exc:  # symlink loops, NUL bytes
            raise ToolError(f"cannot resolve path {_quote(path)}: {exc}") from exc
        if not real.is_relative_to(self._root):
            raise PathOutsideWorkspace(
                f"path {_quote(path)} leads outside the workspace root through a symlink (to {real})"
            )
        if len(os.fsencode(real)) > _MAX_PATH_BYTES:  # short as written, long under the root
            raise ToolError(
                f"path {_quote(path)} is too long: under the workspace root it is over 4,096 bytes"
            )
        return real

    def relative(self, path: Path) -> str:
        """``path`` (inside the root) as the model should write it: POSIX, relative, '.' for the root."""
        rel = path.relative_to(self._root).as_posix()
        return rel or "."

    def existing(self, path: str) -> Path:
        real = self.resolve(path)
        if not real.exists():
            raise ToolError(f"{path!r} does not exist (paths are relative to the workspace root)")
        return real


# --------------------------------------------------------------------------- helpers


def _quote(path: str) -> str:
    """``path`` as a refusal shows it: quoted, its middle cut past 200 characters (a model may send
    a path of megabytes; the sentence stays one sentence)."""
    if len(path) <= _QUOTED_PATH_CHARS:
        return repr(path)
    half = _QUOTED_PATH_CHARS // 2
    return f"{path[:half]!r}...{path[-half:]!r} ({len(path):,} characters)"


def _check_length(path: str, text: str) -> None:
    """ToolError when ``text`` holds a name over 255 bytes or is over 4,096 bytes: the system
    would refuse it (ENAMETOOLONG) in whatever call met it first."""
    data = text.encode("utf-8", "surrogatepass")
    if len(data) > _MAX_PATH_BYTES:
        raise ToolError(f"path {_quote(path)} is too long ({len(data):,} bytes; at most 4,096)")
    longest = max(data.split(b"/"), key=len)
    if len(longest) > _MAX_NAME_BYTES:
        raise ToolError(
            f"path {_quote(path)} holds a name of {len(longest):,} bytes; a file name is at most 255"
        )


def _open_file(path: str, real: Path) -> BinaryIO:
    """``real`` opened for reading; a FIFO, a device or a socket is refused (never waited on)."""
    try:
        return open_regular(real)
    except NotRegularFile as exc:
        raise ToolError(f"{path!r} is {exc.kind}: only regular files can be read") from None
    except OSError as exc:
        raise ToolError(f"cannot read {path!r}: {exc.strerror or exc}") from None


def _walk(ws: Workspace, top: Path, max_depth: int) -> Iterator[tuple[Path, bool]]:
    """(path, is_dir) below ``top`` in sorted tree order; never follows symlinked directories."""
    try:
        entries = sorted(os.scandir(top), key=lambda entry: entry.name)
    except OSError as exc:
        raise ToolError(f"cannot list {ws.relative(top)!r}: {exc.strerror}") from exc
    for entry in entries:
        if entry.name in _SKIP_DIRS:
            continue
        is_dir = entry.is_dir(follow_symlinks=False)
        yield Path(entry.path), is_dir
        if is_dir and max_depth > 1:
            yield from _walk(ws, Path(entry.path), max_depth - 1)


def _iter_files(ws: Workspace, top: Path, glob: str | None) -> Iterator[Path]:
    if top.is_file():
        yield top
        return
    for root, dirs, files in os.walk(top):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS)
        for name in sorted(files):
            path = Path(root) / name
            if glob is None or _glob_match(ws.relative(path), name, glob):
                yield path


def _glob_match(rel: str, name: str, pattern: str) -> bool:
    return fnmatch.fnmatch(rel, pattern) if "/" in pattern else fnmatch.fnmatch(name, pattern)


def _search_candidates(ws: Workspace, top: Path, glob: str | None) -> Iterator[tuple[str, str]]:
    """(real path, path as the model writes it) of each file to search; symlinks out of the root
    and what is not a file are left out (the search itself refuses FIFOs and devices)."""
    for path in _iter_files(ws, top, glob):
        try:
            real = path.resolve()
            if real.is_relative_to(ws.root) and real.is_file():
                yield str(real), ws.relative(path)
        except (OSError, RuntimeError):  # a symlink loop, a name the system refuses: not a file to search
            continue


def _text_file(ws: Workspace, path: str) -> tuple[Path, BinaryIO]:
    """The resolved path of a text file and the file, open for reading (the caller closes it)."""
    real = ws.existing(path)
    if real.is_dir():
        raise ToolError(f"{path!r} is a directory; use list_dir to see its contents")
    handle = _open_file(path, real)
    if b"\x00" in handle.read(_SNIFF_BYTES):
        size = os.fstat(handle.fileno()).st_size
        handle.close()
        raise ToolError(f"{path!r} is a binary file ({size} bytes); it cannot be shown as text")
    handle.seek(0)
    return real, handle


def _read_range(handle: BinaryIO, first: int, last: int) -> tuple[list[str], int]:
    """Lines ``first..last`` (1-based, inclusive, each cut to READ_FILE_MAX_LINE_CHARS) and the
    file's number of lines, counted as editors and grep count them (a final newline ends the last
    line). Streams: memory stays bounded by what is shown, however large the file or long its lines."""
    shown: list[str] = []
    total = 0
    with handle:
        while total < last:
            head = handle.readline(_LINE_BYTES)
            if not head:
                return shown, total
            total += 1
            chars, piece, ending = _chars(head), head, head[-2:]
            while len(piece) == _LINE_BYTES and not piece.endswith(b"\n"):  # a long line: count the rest
                piece = handle.readline(_LINE_BYTES)
                chars, ending = chars + _chars(piece), (ending + piece)[-2:]
            if total >= first:
                shown.append(_render_line(head, chars, ending))
        return shown, total + _count_lines(handle)


def _chars(data: bytes) -> int:
    return len(data.translate(None, _CONTINUATION_BYTES))


def _render_line(head: bytes, chars: int, ending: bytes) -> str:
    """One line as read_file shows it: without its line ending, cut past READ_FILE_MAX_LINE_CHARS."""
    text = head.decode("utf-8", errors="replace")
    for end in (b"\n", b"\r"):  # a final "\r" goes with the "\n", as editors count lines
        if ending.endswith(end):
            chars, text, ending = chars - 1, text.removesuffix(end.decode()), ending[:-1]
    if chars <= READ_FILE_MAX_LINE_CHARS:
        return text
    return f"{text[:READ_FILE_MAX_LINE_CHARS]}… [line cut, {chars} chars]"


def _count_lines(handle: BinaryIO) -> int:
    """Lines from the handle's position (at a line start) to the end of the file."""
    count = 0
    last = b"\n"
    while chunk := handle.read(_COUNT_CHUNK):
        count += chunk.count(b"\n")
        last = chunk[-1:]
    return count + (last != b"\n")


# --------------------------------------------------------------------------- tools


def _read_tools(ws: Workspace) -> list[Tool]:
    @tool(read_only=True, timeout_s=READ_TOOL_TIMEOUT_S)
    def list_dir(path: str = ".", depth: Depth = 1) -> str:
        """List the files and directories under a workspace directory, one per line; directories end
        with "/". Paths are relative to the workspace root and can be passed to the other tools as
        they are. The .git directory is skipped; at most 500 entries are shown.

        Args:
            path: Directory to list, relative to the workspace root ("." is the root).
            depth: How many levels to descend (1 = only direct children, at most 10).
        """
        top = ws.existing(path)
        if not top.is_dir():
            raise ToolError(f"{path!r} is a file, not a directory; use read_file to read it")
        lines: list[str] = []
        for entry, is_dir in _walk(ws, top, depth):
            if len(lines) == LIST_DIR_MAX_ENTRIES:
                return "\n".join([*lines, f"[listing stopped at {LIST_DIR_MAX_ENTRIES} entries]"])
            lines.append(f"{ws.relative(entry)}{'/' if is_dir else ''}")
        return "\n".join(lines) if lines else f"{ws.relative(top)}/ is empty"

    @tool(read_only=True, timeout_s=READ_TOOL_TIMEOUT_S)
    def read_file(path: str, start_line: LineNumber = 1, end_line: LineNumber | None = None) -> str:
        """Read a text file from the workspace with line numbers, optionally only lines start_line to
        end_line (1-based, inclusive). At most 2000 lines are returned per call; the first line of
        the output states the range shown and the file's total number of lines.

        Args:
            path: File to read, relative to the workspace root.
            start_line: First line to show (1-based).
            end_line: Last line to show, inclusive (default: the end of the file).
        """
        if end_line is not None and end_line < start_line:
            raise ToolError(f"end_line ({end_line}) is before start_line ({start_line})")
        real, handle = _text_file(ws, path)
        wanted = start_line + READ_FILE_MAX_LINES - 1
        lines, total = _read_range(handle, start_line, min(end_line or wanted, wanted))
        if total == 0:
            return f"{ws.relative(real)} is empty (0 lines)"
        if start_line > total:
            raise ToolError(f"start_line {start_line} is past the end of {path!r}, which has {total} lines")
        last = start_line + len(lines) - 1
        body = [f"{number}\t{line}" for number, line in enumerate(lines, start=start_line)]  # unpadded
        header = f"{ws.relative(real)} (lines {start_line}-{last} of {total})"
        footer = []
        if last < min(end_line or total, total):
            footer = [f"[stopped at {READ_FILE_MAX_LINES} lines; continue with start_line={last + 1}]"]
        return "\n".join([header, *body, *footer])

    @tool(read_only=True, timeout_s=SEARCH_TIMEOUT_S + READ_TOOL_TIMEOUT_S)
    async def search_text(
        pattern: str, path: str = ".", glob: str | None = None, max_results: MaxResults = 100
    ) -> str:
        """Search text files for a regular expression (Python syntax); prints "path:line: text" for
        each matching line. Binary files, the .git directory and files over 1 MB are skipped. Use glob
        to restrict the files searched, e.g. "*.py" (file names) or "src/*.py" (paths). A search
        stops after 30 s with the matches found so far.

        Args:
            pattern: Regular expression searched for in each line (like Python's re.search).
            path: File or directory to search, relative to the workspace root.
            glob: Optional fnmatch pattern for file names, or for paths when it contains "/".
            max_results: Stop after this many matching lines (at most 1000).
        """
        top = ws.existing(path)
        limits = SearchLimits(
            max_results, SEARCH_MAX_FILE_BYTES, SEARCH_MAX_FILES, SEARCH_MAX_LINE_CHARS, SEARCH_TIMEOUT_S
        )
        found = await search(pattern, _search_candidates(ws, top, glob), limits)
        return _search_report(found, limits, pattern, path)

    return [list_dir, read_file, search_text]


def _search_report(found: Found, limits: SearchLimits, pattern: str, path: str) -> str:
    lines = list(found.lines) or [f"No matches for {_quote(pattern)} in {_quote(path)}."]
    if len(found.lines) >= limits.max_results:
        lines.append(f"[stopped after {limits.max_results} matches; narrow the pattern, path or glob]")
    if found.too_many_files:
        lines.append(f"[stopped after scanning {limits.max_files} files; narrow the path or glob]")
    if found.timed_out:
        where = f", in {found.current}" if found.current else ""
        lines.append(
            f"[search stopped after {limits.seconds:g} s{where}, with the matches above (scanned "
            f"{found.files_seen} file(s)); the pattern may backtrack catastrophically, e.g. nested "
            "repetition like (a+)+: simplify it, or narrow the path or glob]"
        )
    if found.skipped_large:
        lines.append(f"[{found.skipped_large} file(s) over {limits.max_file_bytes} bytes not searched]")
    return "\n".join(lines)


def _write_tools(ws: Workspace) -> list[Tool]:
    @tool
    def write_file(path: str, content: str) -> str:
        """Create or overwrite a text file in the workspace with the given content; missing parent
        directories are created.

        Args:
            path: File to write, relative to the workspace root.
            content: The complete new content of the file.
        """
        real = ws.resolve(path)
        if real.is_dir():
            raise ToolError(f"{path!r} is a directory")
        existed = real.exists()
        _make_parents(path, real)
        data = content.encode("utf-8", "backslashreplace")
        _write(path, real, data)
        verb = "Overwrote" if existed else "Created"
        return f"{verb} {ws.relative(real)}: {len(data)} bytes, {len(content.splitlines())} lines"

    @tool
    def edit_file(path: str, old: str, new: str, count: Count = 1) -> str:
        """Edit a text file by replacing the exact text `old` with `new`. `old` must occur in the file,
        and at most `count` times (count=0 replaces every occurrence); whitespace and indentation must
        match exactly. Include enough surrounding lines in `old` to make it unique.

        Args:
            path: File to edit, relative to the workspace root.
            old: The exact text to replace.
            new: The replacement text.
            count: Most occurrences expected and replaced; 0 means replace all.
        """
        if not old:
            raise ToolError("old must not be empty; use write_file to create or overwrite a file")
        if old == new:
            raise ToolError("old and new are identical; nothing to change")
        real, text = _read_for_edit(ws, path)
        found = text.count(old)
        if found == 0:
            raise ToolError(f"old text not found in {path!r}; read the file and copy the text exactly")
        if count and found > count:
            raise ToolError(
                f"old text occurs {found} times in {path!r} but count={count}; add surrounding text "
                f"to make it unique, or pass count={found} (or 0) to replace every occurrence"
            )
        first_line = text[: text.index(old)].count("\n") + 1
        _write(path, real, text.replace(old, new).encode("utf-8", "backslashreplace"))
        return f"Replaced {found} occurrence(s) in {ws.relative(real)} (first at line {first_line})"

    return [write_file, edit_file]


def _make_parents(path: str, real: Path) -> None:
    """Create the folders above ``real``; one that is a file (``a.txt/b``) is one sentence."""
    try:
        real.parent.mkdir(parents=True, exist_ok=True)
    except (FileExistsError, NotADirectoryError):
        raise ToolError(f"cannot create {_quote(path)}: a part of it is a file, not a directory") from None


def _write(path: str, real: Path, data: bytes) -> None:
    """Replace the file's content; a FIFO, a device or a socket is refused (never waited on)."""
    try:
        with open_regular_for_writing(real) as handle:
            handle.write(data)
    except NotRegularFile as exc:
        raise ToolError(f"{path!r} is {exc.kind}: only regular files can be written") from None


def _read_for_edit(ws: Workspace, path: str) -> tuple[Path, str]:
    real = ws.existing(path)
    if real.is_dir():
        raise ToolError(f"{path!r} is a directory")
    with _open_file(path, real) as handle:
        data = handle.read()
    if b"\x00" in data[:_SNIFF_BYTES]:
        raise ToolError(f"{path!r} is a binary file; edit_file only edits text")
    try:
        return real, data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ToolError(
            f"{path!r} is not valid UTF-8 ({exc.reason}); edit_file only edits UTF-8 text"
        ) from exc


def workspace_tools(
    ws: Workspace,
    *,
    allow_write: bool = False,
    allow_shell: bool = False,
    shell_timeout_s: float = DEFAULT_SHELL_TIMEOUT_S,
    shell_env: Sequence[str] = (),
) -> list[Tool]:
    """The tools bound to ``ws``: list_dir, read_file, search_text; write_file, edit_file and
    run_shell only when allowed. run_shell sees a minimal environment (PATH, HOME, the locale...,
    never the runtime's keys) plus the variables named in ``shell_env`` (names or patterns)."""
    tools = _read_tools(ws)
    if allow_write:
        tools.extend(_write_tools(ws))
    if allow_shell:
        tools.append(shell_tool(ws.root, timeout_s=shell_timeout_s, pass_env=shell_env))
    elif shell_env:
        raise ConfigurationError(
            "shell_env (--shell-env) only applies to run_shell: "
            "enable it with allow_shell=True (--allow-shell)"
        )
    return tools
