"""The files the agent wrote: what each call wrote, each file's current text, and the note that shows it.

An agent that writes ``reproduce.py`` with a heredoc, ``str_replace``s a function or applies a
patch goes on to re-run, extend or rewrite that same file with the same names. Aging cuts old call
arguments to their head and a condensed note keeps one line per call, so the only whole copy of
the agent's own current code would be gone. :func:`written_note` keeps it in view: at each aging
epoch, one note lists the files with a write the epoch hid (aged or condensed; since the file's
newest whole write: an earlier patch of a file patched again just now counts) and that the run
still works on (written, run, read or named by the agent in its last ``recent`` iterations), each
with its current text (the newest whole write with the later exact replacements applied) or, when
that cannot be known, its hunks, within a budget of characters: the files used most recently
first, each whole (text or all its hunks) as far as the budget goes, then the newest hunks that
fit of the files too long for that. The note changes only at epochs, which rewrite the prompt after the aged
iterations anyway, so it costs its tokens and no extra rewrite.

Writes are recognized from the call alone (:func:`call_writes`), whatever the tool:

* shell-like tools (``bash``, ``Bash``, ``run_shell``, ``exec_command``, ``shell``,
  ``execute_bash``, ``local_shell``; Codex's ``["bash", "-lc", SCRIPT]``): a heredoc into a file
  (``cat > f <<'EOF'``, ``cat <<EOF >> f``, ``tee [-a] f <<EOF``), ``printf``/``echo`` into a file,
  and an ``apply_patch``/``patch``/``git apply`` heredoc (a ``python - <<EOF`` that writes files is
  out of scope);
* Codex ``apply_patch`` (its own tool, raw or JSON): ``*** Add File``, ``*** Update File`` hunks
  (exact replacements), ``*** Delete File``; a unified diff likewise;
* Claude Code ``Write``/``Edit``/``MultiEdit``; ``str_replace_editor``-style ``create``,
  ``str_replace``, ``insert``, ``append``; our workspace ``write_file``/``edit_file``.

The patch grammar is the one reading of :func:`.._patches.parse_patch`; the tool names, argument
keys and shell command of a call are read as :mod:`.._calls` names them (the working memory reads
calls by the same two). Arbitrary text never raises here: a call that cannot be read writes nothing
(fail open).
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from ..._messages import Message, ToolCall
from ..._tokens import TokenCounter
from .._calls import (
    PATCH_PROGRAMS,
    PATCH_TOOLS,
    SHELL_TOOLS,
    TEXT_KEYS,
    argv_patch,
    call_arguments,
    patch_argument,
    path_argument,
    shell_command,
    string_argument,
)
from .._memo import run_memo
from .._names import retrieve_call
from .._patches import parse_patch
from .._shell import heredoc_lines, line_words, simple_commands
from ..summary.memory._calls import call_facts

__all__ = [
    "FileWrite",
    "WrittenFile",
    "WrittenFiles",
    "call_writes",
    "note_tokens",
    "write_failed",
    "written_files",
    "written_note",
]

_WRITE_TOOLS = frozenset({"Write", "write_file", "create_file", "write"})
_EDIT_TOOLS = frozenset({"Edit", "edit_file", "MultiEdit", "str_replace", "replace_in_file"})
_EDITOR_TOOLS = frozenset({"str_replace_editor", "file_editor", "text_editor", "str_replace_based_edit_tool"})
_ESCAPE = re.compile(r"\\([nt\\])")
_GAP = "\n[...]\n"  # between two hunks of a file shown
_MAX_ARGUMENT_CHARS = 1_000_000  # longer arguments are not read (a pathological call)


@dataclass(frozen=True, slots=True)
class FileWrite:
    """One thing a call wrote to one file.

    ``whole``: ``text`` is the file's whole new text; else ``text`` is new text put in place of
    ``old`` (an exact replacement), appended (``append``), inserted after line ``line``, or a hunk
    whose place is unknown (``old`` None, no ``append``, no ``line``). ``deleted``: the file is gone.
    """

    path: str
    text: str
    whole: bool = False
    old: str | None = None
    append: bool = False
    line: int | None = None
    deleted: bool = False


# --------------------------------------------------------------------------- recognizing writes
def call_writes(call: ToolCall) -> tuple[FileWrite, ...]:
    """What ``call`` wrote, file by file, in order; () for a call that writes nothing it can read."""
    return _call_writes(call.name, call.arguments)


@run_memo(4096)
def _call_writes(name: str, arguments: str) -> tuple[FileWrite, ...]:
    """:func:`call_writes` by the call's name and arguments (remembered for the run at work)."""
    if len(arguments) > _MAX_ARGUMENT_CHARS:
        return ()
    try:
        return tuple(_writes(name, call_arguments(arguments)))
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):  # fail open: nothing known
        return ()


def _writes(name: str, args: Mapping[str, Any]) -> Iterator[FileWrite]:
    if name in SHELL_TOOLS:
        target = args.get("action", args) if name == "local_shell" else args
        patch = argv_patch(target)
        command = shell_command(target) if patch is None else None
        if patch is not None:
            yield from patch_writes(patch)
        elif command is not None:
            yield from shell_writes(command)
    elif name in PATCH_TOOLS:
        yield from patch_writes(patch_argument(args))
    elif name in _EDITOR_TOOLS:
        yield from _editor_writes(args)
    elif name in _WRITE_TOOLS:
        path, text = path_argument(args), string_argument(args, TEXT_KEYS)
        if path and text is not None:
            yield FileWrite(path, text, whole=True)
    elif name in _EDIT_TOOLS:
        yield from _edit_writes(args)


def _editor_writes(args: Mapping[str, Any]) -> Iterator[FileWrite]:
    """``str_replace_editor``-style tools (OpenHands, SWE-agent, Anthropic's text editor)."""
    path, command = path_argument(args), args.get("command")
    if not path:
        return
    if command == "create":
        text = string_argument(args, ("file_text", "content"))
        if text is not None:
            yield FileWrite(path, text, whole=True)
    elif command == "str_replace":
        old, new = string_argument(args, ("old_str",)), string_argument(args, ("new_str",))
        if old:
            yield FileWrite(path, new or "", old=old)
    elif command == "insert":
        new, line = string_argument(args, ("new_str", "text")), args.get("insert_line")
        if new is not None:
            at = line if isinstance(line, int) and not isinstance(line, bool) and line >= 0 else None
            yield FileWrite(path, new, line=at)
    elif command == "append":
        new = string_argument(args, ("new_str", "text", "file_text"))
        if new is not None:
            yield FileWrite(path, new, append=True)


def _edit_writes(args: Mapping[str, Any]) -> Iterator[FileWrite]:
    """Claude Code's ``Edit``/``MultiEdit``, our ``edit_file``: exact replacements."""
    path = path_argument(args)
    if not path:
        return
    edits = args.get("edits")
    pairs = edits if isinstance(edits, list) else [args]
    for edit in pairs:
        if not isinstance(edit, Mapping):
            continue
        old = string_argument(edit, ("old_string", "old_str", "old", "search"))
        new = string_argument(edit, ("new_string", "new_str", "new", "replace"))
        if old and new is not None:
            yield FileWrite(path, new, old=old)


def patch_writes(text: str) -> Iterator[FileWrite]:
    """An ``apply_patch`` envelope or a unified diff (:func:`.._patches.parse_patch`): an added file
    whole (each hunk), each hunk of an update as an exact replacement, a deleted file gone."""
    for file in parse_patch(text):
        if file.verb == "delete":
            yield FileWrite(file.path, "", deleted=True)
            continue
        for hunk in file.hunks:
            if not hunk.lines:
                continue
            new = "\n".join(hunk.new)
            if file.verb == "add":
                yield FileWrite(file.path, new + "\n", whole=True)
            else:
                yield FileWrite(file.path, new, old="\n".join(hunk.old) or None)


def shell_writes(command: str) -> Iterator[FileWrite]:
    """Files a shell command writes with text it names: heredocs into files or into a patch tool,
    ``printf``/``echo`` redirected into a file."""
    for line, document in heredoc_lines(command):
        body = None if document is None else "".join(f"{text}\n" for text in document)
        for segment in simple_commands(line_words(line)):
            yield from _segment_writes(segment, body)


_REDIRECT = re.compile(r"\d*(>>?|>\||&>>?)")


def _split_redirects(words: list[str]) -> tuple[list[str], list[tuple[str, str]]]:
    """A simple command's words without its output redirections, and those (operator, target)."""
    plain: list[str] = []
    redirects: list[tuple[str, str]] = []
    stream = iter(words)
    for word in stream:
        if _REDIRECT.fullmatch(word):
            redirects.append((word, next(stream, "")))
        elif not word.startswith(("<", "2>", "&")) and not word.endswith(">&1"):
            plain.append(word)
    return plain, redirects


def _segment_writes(words: list[str], body: str | None) -> Iterator[FileWrite]:
    plain, redirects = _split_redirects(words)
    program = plain[0].rsplit("/", 1)[-1] if plain else ""
    if body is not None and (program in PATCH_PROGRAMS or plain[:2] == ["git", "apply"]):
        yield from patch_writes(body)
        return
    targets = [(op, path) for op, path in redirects if _is_path(path)]
    if body is not None and program == "tee":
        op = ">>" if "-a" in plain or "--append" in plain else ">"
        targets = [(op, w) for w in plain[1:] if not w.startswith("-") and _is_path(w)]
    elif body is None and program in ("printf", "echo") and targets:
        body = _printed(program, plain[1:])
        targets = targets[-1:]
    elif body is None or program not in ("cat", ""):
        return
    yield from (_body_write(op, path, body) for op, path in targets)


def _body_write(operator: str, path: str, text: str) -> FileWrite:
    if operator.endswith(">>"):
        return FileWrite(path, text, append=True)
    return FileWrite(path, text, whole=True)


def _printed(program: str, args: list[str]) -> str:
    if program == "echo":
        newline = "-n" not in args
        words = [a for a in args if a not in ("-n", "-e", "-E")]
        return " ".join(words) + ("\n" if newline else "")
    return _ESCAPE.sub(lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), "\\"), args[0]) if args else ""


def _is_path(word: str) -> bool:
    return (
        bool(word) and not word.startswith(("-", "/dev/", "&")) and "$" not in word and word not in (".", "/")
    )


# --------------------------------------------------------------------------- the files' current text
@dataclass(frozen=True, slots=True)
class WrittenFile:
    """A file as the agent's writes left it: ``text`` its current text when every write since the
    newest whole one applied (else None), ``hunks`` the new text of the writes since then, ``last`` the
    iteration of its newest write, ``whole_at`` that of its newest whole write (0: none)."""

    path: str
    text: str | None
    hunks: tuple[str, ...]
    last: int
    whole_at: int
    changed: int = 0  # the newest iteration that changed it since then in a way not read here (0: none)
    first: int = 0  # the iteration of the oldest write ``text`` or ``hunks`` hold (0: unknown)


def _apply(text: str | None, write: FileWrite) -> str | None:
    """``text`` after ``write`` (None: unknown)."""
    if write.whole:
        return write.text
    if text is None:
        return None
    if write.append:
        return text + write.text
    if write.old is not None:
        return text.replace(write.old, write.text, 1) if write.old in text else None
    return _insert(text, write.text, write.line)


def _insert(text: str, added: str, line: int | None) -> str | None:
    """``text`` with ``added`` after its line ``line`` (0: at the top); None when unknown."""
    lines = text.splitlines(keepends=True)
    if line is None or line > len(lines):
        return None
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    added = added if added.endswith("\n") else added + "\n"
    return "".join([*lines[:line], added, *lines[line:]])


_CHANGES = frozenset({"written", "edited", "deleted"})


_PREFIX_CHARS = 256  # an output's start, where the prefixes below are looked for
_FAILED_PREFIXES = ("failed in sandbox", "<tool_use_error>")  # the call did not run / the tool refused
_REFUSALS = ("error:", "Error:", "No replacement was performed", "ERROR:")  # a patch or edit tool's own


def write_failed(call: ToolCall, output: str) -> bool:
    """Whether ``output`` says ``call`` wrote nothing: the harness never ran it (Codex's ``failed in
    sandbox``), the tool refused it (Claude Code's ``<tool_use_error>``), or a call that only
    patches or edits (a patch or edit tool, Codex's ``["apply_patch", PATCH]``) reports an error
    or a non-zero exit code. A shell command's exit code says nothing of a write earlier in it."""
    text = output[:_PREFIX_CHARS].lstrip()
    if text.startswith(_FAILED_PREFIXES):
        return True
    code: object = None
    if text.startswith('{"output"'):  # Codex's {"output": ..., "metadata": {"exit_code": ...}}
        text, code = _codex_output(output.lstrip())
    if code in (0, None) and not text.startswith(_REFUSALS):
        return False
    return call.name not in SHELL_TOOLS or argv_patch(call_arguments(call.arguments)) is not None


def _codex_output(text: str) -> tuple[str, object]:
    """The output and exit code of a Codex tool result (("", None) when it does not read)."""
    try:
        data = orjson.loads(text)
    except orjson.JSONDecodeError:
        return "", None
    if not isinstance(data, dict):
        return "", None
    meta, output = data.get("metadata"), data.get("output")
    return (output if isinstance(output, str) else ""), (
        meta.get("exit_code") if isinstance(meta, dict) else None
    )


def _changed_unread(call: ToolCall, files: Mapping[str, WrittenFile], read: set[str]) -> list[str]:
    """The known files ``call`` changes in a way :func:`call_writes` cannot read (``sed -i``, a
    redirection of a program's output, ``cp``/``mv``/``rm``, as the working memory reads a call; a
    Python program's literal writes, :func:`program_writes`): ``read`` are the paths whose writes it
    did read; a known script's literal writes, :func:`script_writes`)."""
    touched = [t.path for t in call_facts(call).touches if t.kind in _CHANGES]
    touched += program_writes(call)
    touched += script_writes(call, files)
    return [path for path in dict.fromkeys(touched) if path in files and path not in read]


def program_writes(call: ToolCall) -> tuple[str, ...]:
    """The files a shell call's Python program (``python - <<EOF``, ``python -c``) or ``ed`` script
    certainly writes, their text computed by the program: the literal paths of
    :func:`python_written_paths`, the file ``ed`` edits; () when there is none or it cannot be read."""
    if call.name not in SHELL_TOOLS:
        return ()
    return _program_writes(call.name, call.arguments)


@run_memo(4096)
def _program_writes(name: str, arguments: str) -> tuple[str, ...]:
    return _read_command(name, arguments, _shell_programs)


def script_writes(call: ToolCall, files: Mapping[str, WrittenFile]) -> list[str]:
    """The files a shell call's ``python SCRIPT`` certainly writes when the agent's writes left
    SCRIPT's text known (``files``): the literal paths of :func:`python_written_paths` in that text
    (a script not written here, or whose text is unknown, is not read)."""
    if call.name not in SHELL_TOOLS or not files:
        return []
    written: list[str] = []
    for script in _python_scripts(call.name, call.arguments):
        known = files.get(script) or files.get(script.removeprefix("./"))
        if known is not None and known.text is not None:
            written += python_written_paths(known.text)
    return written


@run_memo(4096)
def _python_scripts(name: str, arguments: str) -> tuple[str, ...]:
    """The script files a shell call runs with ``python [OPTIONS] SCRIPT`` (not ``-c``, ``-m``, ``-``)."""
    return _read_command(name, arguments, _scripts_run)


def _read_command(name: str, arguments: str, read: Callable[[str], Iterable[str]]) -> tuple[str, ...]:
    """What ``read`` finds in a shell call's command, each once; () when the call cannot be read
    (fail open: nothing known)."""
    if len(arguments) > _MAX_ARGUMENT_CHARS:
        return ()
    try:
        args = call_arguments(arguments)
        command = shell_command(args.get("action", args) if name == "local_shell" else args)
        return tuple(dict.fromkeys(read(command))) if command else ()
    except (ValueError, TypeError, KeyError, IndexError, RecursionError):
        return ()


def _scripts_run(command: str) -> Iterator[str]:
    for line, _ in heredoc_lines(command):
        for segment in simple_commands(line_words(line)):
            plain = _split_redirects(segment)[0]
            if plain and _PYTHON.fullmatch(plain[0].rsplit("/", 1)[-1]):
                script = _script_argument(plain[1:])
                if script is not None:
                    yield script


def _script_argument(words: list[str]) -> str | None:
    """The script of a Python interpreter's arguments (None: ``-c``, ``-m``, ``-``, or none)."""
    stream = iter(words)
    for word in stream:
        if word in ("-c", "-m", "-"):
            return None
        if word in ("-W", "-X", "-Q"):
            next(stream, None)
        elif not word.startswith("-"):
            return word if _is_path(word) else None
    return None


def _shell_programs(command: str) -> Iterator[str]:
    for line, document in heredoc_lines(command):
        for segment in simple_commands(line_words(line)):
            plain = _split_redirects(segment)[0]
            program = plain[0].rsplit("/", 1)[-1] if plain else ""
            if _PYTHON.fullmatch(program):
                source = "\n".join(document) if document is not None and "-" in plain[1:2] else None
                source = _python_c(plain) if source is None else source
                yield from python_written_paths(source or "")
            elif program in ("ed", "ex") and document is not None:
                yield from (w for w in plain[1:] if not w.startswith("-") and _is_path(w))


def _python_c(plain: list[str]) -> str | None:
    """The program of ``python -c PROGRAM`` (None when the words are not that)."""
    at = plain.index("-c") if "-c" in plain else -1
    return plain[at + 1] if 0 < at < len(plain) - 1 else None


_PYTHON = re.compile(r"python(?:\d+(?:\.\d+)*)?")
_LITERAL = r"""(?:[rRbB]?(?:'([^'\\\n]+)'|"([^"\\\n]+)"))"""
# open(PATH, MODE) with a mode that writes; Path(PATH).write_text / write_bytes / open(MODE)
_OPEN = re.compile(rf"""\bopen\(\s*(?:{_LITERAL}|(\w+))\s*,\s*(?:mode\s*=\s*)?[rRbB]?['"]([rwaxbt+]+)['"]""")
_PATH_CALL = re.compile(
    rf"""(?:\bPath\(\s*{_LITERAL}\s*\)|\b(\w+))\s*\.(?:write_text|write_bytes|open\(\s*(?:mode\s*=\s*)?['"]([rwaxbt+]+)['"])"""
)
_BINDING = re.compile(
    rf"""^[ \t]*(\w+)\s*=\s*(?:(?:pathlib\.)?Path\(\s*{_LITERAL}\s*\)|{_LITERAL})[ \t]*(?:#.*)?$""", re.M
)
_PARAMETERS = re.compile(r"\b(?:def\s+\w+\s*\(([^)]*)\)|lambda([^:]*):)")
_NAME = re.compile(r"\w+")
_ASSIGNED = re.compile(r"^[ \t]*(\w+)\s*(?:=(?!=)|\+=)|\bfor\s+(\w+)\s+in\b|\bas\s+(\w+)", re.M)


def python_written_paths(source: str) -> Iterator[str]:
    """The files a Python program certainly writes, by literal path only: ``open(PATH, 'w'|'a'|'x'|
    'r+')``, ``Path(PATH).write_text(...)``/``write_bytes``/``open('w')``, or the same through a name
    bound once, to such a literal path (``path = Path('f.py')`` ... ``path.write_text(text)``); a
    path the program computes is never guessed."""
    if "open" not in source and "write_" not in source:
        return
    bound = _bound_paths(source)
    for found in _OPEN.finditer(source):
        path = found.group(1) or found.group(2) or bound.get(found.group(3) or "")
        if path and _writes_mode(found.group(4)):
            yield path
    for found in _PATH_CALL.finditer(source):
        path = found.group(1) or found.group(2) or bound.get(found.group(3) or "")
        if path and (found.group(4) is None or _writes_mode(found.group(4))):
            yield path


def _writes_mode(mode: str) -> bool:
    return not {"w", "a", "x", "+"}.isdisjoint(mode)


def _bound_paths(source: str) -> dict[str, str]:
    """Names bound exactly once in ``source``, to a literal path (``Path('f')`` or ``'f'``)."""
    counts: dict[str, int] = {}
    names = [found.group(1) or found.group(2) or found.group(3) for found in _ASSIGNED.finditer(source)]
    for found in _PARAMETERS.finditer(source):
        names += _NAME.findall(found.group(1) or found.group(2) or "")
    for name in names:
        counts[name] = counts.get(name, 0) + 1
    bound: dict[str, str] = {}
    for found in _BINDING.finditer(source):
        path = next((g for g in found.groups()[1:] if g), "")
        if counts.get(found.group(1)) == 1 and _is_path(path):
            bound[found.group(1)] = path
    return bound


Act = tuple[int, ToolCall, str | None]
"""A call of the history: its iteration, the call, its tool result's text (None: unanswered)."""


def written_files(
    calls: Iterable[tuple[int, ToolCall]], outputs: Mapping[str, str] | None = None
) -> dict[str, WrittenFile]:
    """Each file the calls (``(iteration, call)``, oldest first; ``outputs``: their tool results'
    texts by call id) wrote, as they left it; a deleted file is dropped. A file a later call
    changed in a way this module cannot read (``sed -i f``, ``python gen.py > f``) keeps the text
    the agent's writes left, with that call's iteration in ``changed`` (until its next whole
    write), so the note never passes it off as current. A call whose output says it wrote nothing
    (:func:`write_failed`) is passed over."""
    outputs = outputs or {}
    return _fold((k, call, outputs.get(call.id)) for k, call in calls)


def _fold(calls: Iterable[Act]) -> dict[str, WrittenFile]:
    """:func:`written_files` of calls with their outputs."""
    files: dict[str, WrittenFile] = {}
    _advance(files, calls)
    return files


def _advance(files: dict[str, WrittenFile], calls: Iterable[Act]) -> None:
    """Apply ``calls`` (oldest first) to ``files``, the state the calls before them left
    (:func:`written_files` is this fold from nothing); a call whose output says it wrote nothing
    (:func:`write_failed`) changes nothing."""
    for iteration, call, output in calls:
        writes = call_writes(call)
        if (writes or files) and output is not None and write_failed(call, output):
            continue
        for path in _changed_unread(call, files, {w.path for w in writes}) if files else ():
            files[path] = replace(files[path], changed=iteration)
        for write in writes:
            _write(files, iteration, write)


def _write(files: dict[str, WrittenFile], iteration: int, write: FileWrite) -> None:
    """Apply one write of iteration ``iteration`` to ``files``."""
    if write.deleted:
        files.pop(write.path, None)
        return
    known = files.get(write.path)
    text = _apply(known.text if known is not None else None, write)
    if write.whole or known is None:
        hunks: tuple[str, ...] = () if write.whole else (write.text,)
        whole_at, changed, first = (iteration if write.whole else 0), 0, iteration
    else:
        hunks, whole_at, changed = (*known.hunks, write.text), known.whole_at, known.changed
        first = known.first
    files[write.path] = WrittenFile(write.path, text, hunks, iteration, whole_at, changed, first)


_HOLDS = 4096  # (name, text) pairs a run's :class:`WrittenFiles` remembers whether the text names


class WrittenFiles:
    """:func:`written_files` of calls that mostly extend the calls asked about before (a run's
    history only grows): the files after the longest of the last few call lists asked about that
    begins the new one (its calls the same objects at the same iterations), advanced by the rest.
    Owned by one run (its aging memo); never shared between runs."""

    def __init__(self, kept: int = 4) -> None:
        self._kept = kept
        # (the calls, the files they left): the newest last; a kept dict is never changed
        self._states: list[tuple[list[Act], dict[str, WrittenFile]]] = []
        # by iteration: (its messages, what :func:`_calls` / :func:`_agent_texts` read of them)
        self._calls: dict[int, tuple[tuple[Message, ...], list[Act]]] = {}
        self._texts: dict[int, tuple[tuple[Message, ...], str]] = {}
        self._holds: dict[tuple[str, str], bool] = {}  # :func:`_holds` by (name, text), bounded
        # the last answer of :meth:`calls`: the iterations it read, their tuples, the calls (not changed)
        self._last: tuple[list[int], list[tuple[Message, ...]], list[Act]] = ([], [], [])

    def holds(self, name: str, text: str) -> bool:
        """:func:`_holds`, once per name and text (the texts of :meth:`texts` are the same objects
        from one note to the next, so their hashes are computed once)."""
        key = (name, text)
        found = self._holds.get(key)
        if found is None:
            if len(self._holds) >= _HOLDS:
                self._holds.clear()
            found = self._holds[key] = _holds(name, text)
        return found

    def calls(self, groups: Mapping[int, tuple[Message, ...]], upto: int) -> list[Act]:
        """:func:`_calls`, each iteration's calls read once while its messages stay the same tuple
        (a tuple's messages never change, so the same object is the same calls); the calls of the
        iterations the previous answer read, when they are the same tuples (compared in C), are that
        answer's (a run's history mostly grows at its newest end)."""
        keys = sorted(groups)
        keys = keys[bisect_right(keys, 0) : bisect_right(keys, upto)]
        tuples = list(map(groups.__getitem__, keys))
        last_keys, last_tuples, last_out = self._last
        done = len(last_keys)
        if done <= len(keys) and keys[:done] == last_keys and tuples[:done] == last_tuples:
            out = list(last_out)
        else:
            out, done = [], 0
        known = self._calls
        for iteration, messages in zip(keys[done:], tuples[done:], strict=True):
            hit = known.get(iteration)
            if hit is None or hit[0] is not messages:
                hit = known[iteration] = (messages, _calls({iteration: messages}, iteration))
            out.extend(hit[1])
        self._last = (keys, tuples, out)
        return out

    def texts(self, groups: Mapping[int, tuple[Message, ...]], first: int, last: int) -> dict[int, str]:
        """:func:`_agent_texts`, each iteration's text joined once while its messages stay the same
        tuple (the texts of iterations before ``first`` go once they outnumber those asked for)."""
        out: dict[int, str] = {}
        known = self._texts
        if len(known) > 2 * (last - first + 1) + 8:
            known = self._texts = {k: hit for k, hit in known.items() if k >= first}
        for iteration in range(first, last + 1):
            messages = groups.get(iteration, ())
            hit = known.get(iteration)
            if hit is None or hit[0] is not messages:
                hit = known[iteration] = (
                    messages,
                    _agent_texts({iteration: messages}, iteration, iteration)[iteration],
                )
            out[iteration] = hit[1]
        return out

    def of(self, calls: Iterable[Act]) -> Mapping[str, WrittenFile]:
        """``written_files(calls)`` (the result is shared: do not change it)."""
        wanted = list(calls)
        done: list[Act] = []
        files: dict[str, WrittenFile] = {}
        for state in self._states:
            known = state[0]
            if len(done) < len(known) <= len(wanted) and _begins(wanted, known):
                done, files = state
        if len(done) == len(wanted):
            return files
        files = dict(files)
        _advance(files, wanted[len(done) :])
        if len(self._states) >= self._kept:
            del self._states[0]
        self._states.append((wanted, files))
        return files


def _begins(calls: list[Act], prefix: list[Act]) -> bool:
    """Whether ``calls`` begins with ``prefix``: equal calls (the same objects, mostly) at the same
    iterations, compared in C; the files they leave depend on nothing else."""
    return calls[: len(prefix)] == prefix


# --------------------------------------------------------------------------- the note
def _calls(groups: Mapping[int, tuple[Message, ...]], upto: int) -> list[Act]:
    """The calls of iterations ``1..upto``, oldest first, with their iterations and the text of the
    tool result of the same iteration that answers each (None when none does)."""
    acts: list[Act] = []
    for iteration in sorted(k for k in groups if 0 < k <= upto):
        messages = groups[iteration]
        outputs = {m.tool_call_id: m.content for m in messages if m.role == "tool" and m.tool_call_id}
        acts += (
            (iteration, call, outputs.get(call.id))
            for message in messages
            if message.role == "assistant"
            for call in message.tool_calls
        )
    return acts


def _agent_texts(groups: Mapping[int, tuple[Message, ...]], first: int, last: int) -> dict[int, str]:
    """Each iteration's agent text in ``first..last`` (its assistant messages' content and call
    arguments, one per line), read once per note for every file it asks about."""
    out: dict[int, str] = {}
    for iteration in range(first, last + 1):
        parts = [
            text
            for message in groups.get(iteration, ())
            if message.role == "assistant"
            for text in (message.content or "", *(c.arguments for c in message.tool_calls))
        ]
        out[iteration] = "\n".join(parts)
    return out


def _named_at(
    path: str, newest: Sequence[tuple[int, str]], holds: Callable[[str, str], bool] | None = None
) -> int:
    """The newest iteration of ``newest`` (:func:`_agent_texts`' items, newest first) that names
    ``path``'s file name, else 0 (``holds``: :func:`_holds`, or a memo of it). A name is never found
    across two texts: the line break between them is no part of a name."""
    name = path.rstrip("/").rsplit("/", 1)[-1]
    if not name or "\n" in name:
        return 0
    holds = _holds if holds is None else holds
    return next((k for k, text in newest if holds(name, text)), 0)


def _holds(name: str, text: str) -> bool:
    """Whether ``text`` names the file name ``name`` (not as part of a longer name)."""
    return name in text and re.search(rf"(?<![\w.-]){re.escape(name)}(?![\w-])", text) is not None


def _whole_text(file: WrittenFile, room: int) -> tuple[str, bool] | None:
    """The file's current text (True), else all its hunks since its newest whole write (False), if
    within ``room`` characters."""
    if file.text is not None and len(file.text) <= room:
        return file.text, True
    joined = _GAP.join(file.hunks)
    return (joined, False) if file.hunks and len(joined) <= room else None


def _newest_hunks(file: WrittenFile, room: int) -> tuple[str, bool] | None:
    """The newest of the file's hunks since its newest whole write that fit in ``room`` (False)."""
    kept: list[str] = []
    size = 0
    for hunk in reversed(file.hunks):
        size += len(hunk) + (len(_GAP) if kept else 0)
        if size > room:
            break
        kept.append(hunk)
    return (_GAP.join(reversed(kept)), False) if kept else None


def _shown(in_play: list[WrittenFile], room: int) -> dict[str, tuple[str, bool]]:
    """What the note shows of each file, by path: first each file whole (its text, or all its hunks)
    as far as the room goes, the most recently used first; then, in the room left, the newest
    hunks of the files too long for that."""
    shown: dict[str, tuple[str, bool]] = {}
    for read in (_whole_text, _newest_hunks):
        for file in in_play:
            if file.path not in shown and (found := read(file, room)) is not None:
                shown[file.path] = found
                room -= len(found[0])
    return shown


def written_note(
    groups: Mapping[int, tuple[Message, ...]],
    *,
    through: int,
    at: int,
    max_chars: int,
    recent: int,
    retrieval: bool,
    files_of: WrittenFiles | None = None,
) -> Message | None:
    """The note of the files the agent wrote with a hidden write (iteration ``<= through``, since the
    file's newest whole write) that its last ``recent`` iterations up to ``at`` still work on, within
    ``max_chars`` of text (:func:`_shown`); None when there is none. ``files_of``: the run's (reads
    only the calls it has not read yet)."""
    if max_chars <= 0 or through <= 0:
        return None
    low = max(1, at - recent + 1)
    files: Mapping[str, WrittenFile]
    if files_of is None:
        files, texts, holds = _fold(_calls(groups, at)), _agent_texts(groups, low, at), None
    else:  # each call, each iteration's text and each file name in it read once per run
        files, texts = files_of.of(files_of.calls(groups, at)), files_of.texts(groups, low, at)
        holds = files_of.holds
    newest = sorted(texts.items(), reverse=True)
    used = [(max(f.last, _named_at(f.path, newest, holds)), f) for f in files.values() if f.first <= through]
    in_play = sorted(((u, f) for u, f in used if u >= low), key=lambda item: (-item[0], item[1].path))
    files_in_play = [file for _, file in in_play]
    shown = _shown(files_in_play, max_chars)
    parts = [_section(f, *shown[f.path], retrieval=retrieval) for f in files_in_play if f.path in shown]
    if not parts:
        return None
    header = (
        f"[Files you wrote and are still working on, as your writes up to iteration {through} left them:]"
    )
    return Message(role="user", content="\n".join([header, *parts]), iteration=0)


def note_tokens(note: Message, counter: TokenCounter) -> int:
    """``counter.count_message(note)`` for a note :func:`written_note` made, counted as its header
    line and its sections: the header's line feed is followed by a section's ``=``, a visible
    character other than ``/``, where no pre-token of the tokenizer spans (the cut of
    :class:`~..._tokens.PieceEncoder`), so the count is the two parts' counts summed; the sections,
    the same as long as the files shown are, are then one lookup (the header names the iteration
    the note ages through, new at nearly every prompt)."""
    header, _, body = note.text.partition("\n")
    if note.role != "user" or note.tool_calls or not body.startswith(_SECTION):
        return counter.count_message(note)
    return counter.count_message({"role": "user", "content": header + "\n"}) + counter.count_part(body)


_SECTION = "=== "  # how each section of the note starts


def _section(file: WrittenFile, shown: str, whole: bool, *, retrieval: bool) -> str:
    what = "current text" if whole else "your edits since it was last written whole"
    if file.changed:
        what = "text as your writes left it" if whole else what
        what += f", before iteration {file.changed} changed it by a command this note does not follow"
        if retrieval:
            what += f" ({retrieve_call('iteration', str(file.changed))})"
    where = f" (written in iteration {file.last}"
    where += f"; {retrieve_call('iteration', str(file.last))})" if retrieval else ")"
    body = shown if shown.endswith("\n") else shown + "\n"
    return f"{_SECTION}{file.path}: {what}{where}\n{body}=== end of {file.path}"
