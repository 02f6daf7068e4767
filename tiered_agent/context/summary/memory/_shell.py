"""What a shell command does to files: reads (with line ranges), writes, in-place edits, deletions.

Parsed from the command text alone (the lenient shell words of :func:`..._shell.line_words`, one
line at a time, heredoc bodies kept apart):
``nl -ba f | sed -n '40,60p'`` reads lines 40-60 of ``f``; ``cat <<'EOF' > f`` writes ``f``
(the body's line count and definitions are kept); ``sed -i '428s/a/b/' f`` edits line 428;
``rm f`` deletes it. A command that only reads or lists is *quiet*: the working memory shows
it under its file, not as a command. Memoized per command string.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..._memo import run_memo
from ..._shell import heredoc_lines, line_words, simple_commands
from ._code import Touch, View, definitions, numbered_positions, patch_touches

__all__ = ["ShellFacts", "is_test_command", "shell_facts", "shell_files"]

_PATH_TOKEN = re.compile(r"[\w./~+@-]+")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_SED_ADDRESS = re.compile(r"^(\d+)(?:,(\d+|\$))?\s*([a-zA-Z=])")
_HEAD_COUNT = re.compile(r"^-(?:n\s*)?(\d+)$")
_REDIRECT = re.compile(r"\d*(>>?|>\|)|(<)")
_DUPLICATE = re.compile(r"\d*>&\d*-?")
_READ_PROGS = frozenset(
    {
        *("cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "wc", "sed", "awk", "nl"),
        *("diff", "stat", "file", "jq", "sort", "uniq", "cut", "xxd", "od"),
    }
)
# Programs that only look at or move files: their effect shows under the files, not as a command.
_QUIET_PROGS = _READ_PROGS | {
    *(
        "ls",
        "find",
        "tree",
        "pwd",
        "cd",
        "echo",
        "printf",
        "which",
        "true",
        "rm",
        "cp",
        "mv",
        "mkdir",
        "touch",
    ),
    *("tee", "chmod", ""),
}
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "sed", "awk"})
_PREFIX_PROGS = frozenset({"sudo", "time", "nohup", "env", "timeout", "xargs", "command"})
_TEST_COMMAND = re.compile(
    r"\b(?:py\.?test|runtests\.py|unittest|tox|nox|jest|vitest|mocha|rspec|phpunit|ctest)\b"
    r"|\b(?:npm|yarn|pnpm)\s+(?:run\s+)?test\b|\b(?:go|cargo|mvn|gradle|dotnet|mix)\s+test\b"
    r"|\bmake\s+(?:check|test)\b|\bmanage\.py\s+test\b"
)
_NOTE_CHARS = 70


@dataclass(frozen=True, slots=True)
class ShellFacts:
    """What one shell command does to files, and how to read its output."""

    touches: tuple[Touch, ...] = ()
    view: View | None = None  # the one file its output shows, if any
    quiet: bool = False  # only reads, lists or edits files: shown under its files, not as a command
    test: bool = False  # runs a test suite


def is_test_command(command: str) -> bool:
    """True for a test-suite run: pytest, unittest, ``npm test``, ``go test``, django's runtests.py ..."""
    return bool(_TEST_COMMAND.search(command))


def shell_files(command: str) -> list[tuple[str, str]]:
    """``(category, path)`` pairs a shell command reads, writes or edits (``read``/``written``/``edited``)."""
    return [(t.kind, t.path) for t in shell_facts(command).touches if t.kind in ("read", "written", "edited")]


# --------------------------------------------------------------------------- segments
def _is_path(token: str) -> bool:
    if token.startswith("-") or token.startswith("/dev/") or not _PATH_TOKEN.fullmatch(token):
        return False
    if set(token) <= {".", "/"}:
        return False
    return "/" in token or bool(_EXTENSION.search(token))


# --------------------------------------------------------------------------- one segment
@dataclass
class _Segment:
    program: str
    args: list[str]
    redirects: list[tuple[str, str]]  # (operator, target)


def _parse_segment(tokens: list[str]) -> _Segment | None:
    words: list[str] = []
    redirects: list[tuple[str, str]] = []
    stream = iter(tokens)
    for token in stream:
        redirect = _REDIRECT.fullmatch(token)
        if redirect:
            redirects.append((redirect.group(1) or "<", next(stream, "")))
        elif not _DUPLICATE.fullmatch(token):
            words.append(token)
    while words and ("=" in words[0] or words[0].rsplit("/", 1)[-1] in _PREFIX_PROGS):
        words.pop(0)
    if not words:
        return _Segment("", [], redirects) if redirects else None
    return _Segment(words[0].rsplit("/", 1)[-1], words[1:], redirects)


def _positional(program: str, args: list[str]) -> tuple[list[str], list[str]]:
    """The options, and the arguments that look like paths (a grep-like pattern is not one)."""
    options = [a for a in args if a.startswith("-")]
    positional = [a for a in args if not a.startswith("-")]
    if program in _PATTERN_FIRST and not {"-e", "-f"} & set(options) and positional:
        positional = positional[1:]
    return options, [p for p in positional if _is_path(p)]


def _sed_expression(args: list[str]) -> str:
    for i, arg in enumerate(args):
        if arg == "-e" and i + 1 < len(args):
            return args[i + 1]
        if not arg.startswith("-"):
            return arg
    return ""


def _without_suffix(args: list[str]) -> list[str]:
    """``sed``'s arguments without the empty backup suffix BSD sed takes after ``-i`` (``sed -i '' ...``)."""
    return [a for i, a in enumerate(args) if a or i == 0 or args[i - 1] != "-i"]


def _sed_lines(expression: str) -> tuple[tuple[int, int], ...]:
    found = _SED_ADDRESS.match(expression.strip())
    if found is None:
        return ()
    first = int(found.group(1))
    end = found.group(2)
    last = first if end is None or end == "$" else int(end)
    return ((first, max(first, last)),)


def _shorten(text: str, limit: int = _NOTE_CHARS) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def _body_touch(path: str, body: list[str], verb: str) -> Touch:
    defs = definitions(numbered_positions(body, 1))
    return Touch(path, "written", note=f"{verb}, {len(body)} lines", defs=defs)


def _segment_touches(segment: _Segment, body: list[str]) -> list[Touch]:
    program, args = segment.program, segment.args
    if program == "sed":
        args = _without_suffix(args)
    if body and (program == "patch" or (program == "git" and args[:1] == ["apply"])):
        return list(patch_touches("\n".join(body)))
    options, paths = _positional(program, args)
    touches = _program_touches(program, args, options, paths)
    for operator, target in segment.redirects:
        if not _is_path(target):
            continue
        if operator == "<":
            touches.append(Touch(target, "read"))
        elif operator == ">>":
            lines = f", {len(body)} lines" if body else ""
            touches.append(Touch(target, "edited", note=f"appended{lines}"))
        elif body:
            touches.append(_body_touch(target, body, "heredoc"))
        else:
            touches.append(Touch(target, "written"))
    if program == "tee" and body:
        touches = [_body_touch(p, body, "heredoc") for p in paths] or touches
    return touches


def _program_touches(program: str, args: list[str], options: list[str], paths: list[str]) -> list[Touch]:
    if program in ("sed", "perl") and any(o.startswith("-i") for o in options):
        expression = _sed_expression([a for a in args if not a.startswith("-i")])
        note = f"{program} {_shorten(expression)}"
        lines = _sed_lines(expression) if program == "sed" else ()
        return [Touch(p, "edited", lines, note) for p in paths]
    if program in ("tee", "touch"):
        return [Touch(p, "written") for p in paths]
    if program in ("cp", "mv") and len(paths) >= 2:
        return [Touch(p, "read") for p in paths[:-1]] + [Touch(paths[-1], "written")]
    if program == "rm":
        return [Touch(p, "deleted") for p in paths]
    if program in _READ_PROGS and not _recursive(program, options):
        return [Touch(p, "read") for p in paths]
    return []


def _recursive(program: str, options: list[str]) -> bool:
    """A search over directories (``grep -r``, ``rg``): its hits name the files, its arguments do not."""
    if program == "rg":
        return True
    return program in _PATTERN_FIRST and any(
        o in ("-r", "-R", "--recursive") or (o[1:2] != "-" and "r" in o.lower()) for o in options
    )


# --------------------------------------------------------------------------- the view
def _start_line(segments: list[_Segment]) -> int | None:
    """The file line the output's first line stands for, when the pipeline shows a contiguous slice."""
    for segment in segments:
        if segment.program == "sed" and "-n" in segment.args:
            lines = _sed_lines(_sed_expression([a for a in segment.args if a != "-n"]))
            return lines[0][0] if lines else None
    first = segments[0]
    if first.program == "cat" and len(segments) == 1:
        return 1
    if first.program == "head" and all(
        _HEAD_COUNT.match(a) or a == "-n" or a.isdigit() or _is_path(a) for a in first.args
    ):
        return 1
    return None


def _view(segments: list[_Segment], touches: list[Touch]) -> View | None:
    reads = {t.path for t in touches if t.kind == "read"}
    if any(t.kind != "read" for t in touches) or not segments:
        return None
    if any(_recursive(s.program, [a for a in s.args if a.startswith("-")]) for s in segments):
        return View(None)
    if len(reads) == 1:
        return View(next(iter(reads)), _start_line(segments))
    return View(None) if any(s.program in _PATTERN_FIRST for s in segments) else None


def _is_quiet(segments: list[_Segment]) -> bool:
    return bool(segments) and all(s.program in _QUIET_PROGS for s in segments)


@run_memo(4096)
def shell_facts(command: str) -> ShellFacts:
    """Files a shell command reads, writes, edits or deletes; how its output maps to file lines."""
    touches: list[Touch] = []
    segments: list[_Segment] = []
    lines: list[str] = []
    for line, document in heredoc_lines(command):
        lines.append(line)
        body = document or []
        for tokens in simple_commands(line_words(line)):
            segment = _parse_segment(tokens)
            if segment is None:
                continue
            segments.append(segment)
            touches.extend(_segment_touches(segment, body))
    test = is_test_command("\n".join(lines))  # not what a heredoc body says
    return ShellFacts(tuple(touches), _view(segments, touches), _is_quiet(segments) and not test, test)
