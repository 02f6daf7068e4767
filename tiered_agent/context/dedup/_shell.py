"""Which shell calls only read: the commands a shell-like tool may have served from the dedup cache.

A call of a shell-like tool (:data:`.._calls.SHELL_TOOLS`: ``bash``, ``run_shell``, ``exec_command``,
``shell``, ``Bash`` ...) is a **read** when its command, split by the POSIX shell's rules
(:func:`.._shell.words`: the tokens of :mod:`shlex`, the shell's operators as punctuation), is a
list of simple commands joined by ``|``, ``&&``, ``||``, ``;`` or newlines, each of them a program of
:data:`READ_PROGRAMS` whose options do not make it write or run something else (``sed -n`` with
print-only scripts and without ``-i``; ``find`` without ``-exec``/``-delete``/``-fprint``; ``git
status|diff|log|show|...`` without ``--output``; ``tail`` without ``-f`` ...), and whose only
redirections send output to ``/dev/null`` or to another descriptor (``2>&1``).

Everything else is not a read, and the dedup step treats it as a write (it invalidates the
cache): command substitution or expansion (``$``, a backquote, outside single quotes),
subshells, process substitution, here-documents, background jobs, variable assignments, a
program given by path, an unknown program or option, a command the lexer cannot split,
arguments of an unexpected shape (an argument the tool's schema does not describe, such as
``run_in_background`` or an interactive input), a command over :data:`MAX_COMMAND_CHARS`. Unknown
is never a read.

:func:`shell_read_key` is the cache key of a shell read: the tool, its working directory and the
command text, so a repeated command with another description or timeout is the same read.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterator, Mapping, Sequence

from .._calls import INTERPRETERS, SHELL_TOOLS
from .._memo import run_memo
from .._shell import OPERATOR_CHARS, words

__all__ = ["MAX_COMMAND_CHARS", "READ_PROGRAMS", "is_read_command", "shell_read_key"]

MAX_COMMAND_CHARS = 4000

# Argument names that hold the command, the directory it runs in, or change nothing about what it
# reads. Any other argument (``run_in_background``, ``is_input``, ``yield_time_ms`` ...) makes the
# call not a read.
_COMMAND_KEYS = ("command", "cmd")
_DIRECTORY_KEYS = ("workdir", "cwd")
_INERT_KEYS = frozenset({"description", "timeout", "timeout_s", "timeout_ms", "justification"})
_SCRIPT_FLAGS = frozenset({"-c", "-lc", "-cl"})

_SEPARATORS = frozenset({"|", "&&", "||", ";"})
_NULL_TARGETS = frozenset({"/dev/null"})
_OUTPUT_REDIRECTS = frozenset({">", ">>", "&>", "&>>", ">|"})

_SED_ADDRESS = r"(?:\d+|\$)"
_SED_PRINT = re.compile(rf"^\s*(?:{_SED_ADDRESS}(?:\s*,\s*{_SED_ADDRESS})?)?\s*p\s*$")
_SED_FLAGS = frozenset("nErsuz")
_FIND_ACTIONS = frozenset(
    {"-exec", "-execdir", "-ok", "-okdir", "-delete", "-fprint", "-fprint0", "-fprintf", "-fls"}
)
_GIT_READS = frozenset({"status", "diff", "log", "show", "blame", "grep", "ls-files", "rev-parse"})
_GIT_FORBIDDEN = ("--output", "-O", "--open-files-in-pager")
_TAIL_FORBIDDEN = ("-f", "-F", "--follow", "--pid", "--retry")
_RG_FORBIDDEN = ("--pre", "--pre-glob")
_SORT_FORBIDDEN = ("--output", "--compress-program", "--temporary-directory")


def _any_args(args: Sequence[str]) -> bool:
    return True


def _without(forbidden: Sequence[str]) -> Callable[[Sequence[str]], bool]:
    """Arguments none of which is one of ``forbidden`` (``--opt`` also as ``--opt=value``)."""

    def check(args: Sequence[str]) -> bool:
        return not any(a == f or a.startswith(f"{f}=") for a in args for f in forbidden)

    return check


def _tail(args: Sequence[str]) -> bool:
    short = (a for a in args if a.startswith("-") and not a.startswith("--"))
    return _without(_TAIL_FORBIDDEN)(args) and not any("f" in a or "F" in a for a in short)


def _sort(args: Sequence[str]) -> bool:
    short = (a for a in args if a.startswith("-") and not a.startswith("--"))
    return _without(_SORT_FORBIDDEN)(args) and not any(set(a[1:]) & set("oT") for a in short)


def _uniq(args: Sequence[str]) -> bool:
    """``uniq IN OUT`` writes OUT: at most one operand."""
    return sum(1 for a in args if not a.startswith("-") or a == "-") <= 1


def _sed(args: Sequence[str]) -> bool:
    """``sed -n`` whose every script only prints line ranges (``'40,80p'``), never in place."""
    quiet, rest = False, list(args)
    scripts: list[str] = []
    while rest:
        arg = rest.pop(0)
        if arg.startswith("-") and len(arg) > 1:
            quieting = _sed_option(arg, rest, scripts)
            if quieting is None:
                return False
            quiet = quiet or quieting
        elif not scripts:
            scripts.append(arg)
    commands = [part for script in scripts for part in script.split(";")]
    return quiet and bool(commands) and all(_SED_PRINT.match(part) for part in commands)


def _sed_option(arg: str, rest: list[str], scripts: list[str]) -> bool | None:
    """One ``sed`` option: whether it makes sed quiet, its script (taken from ``rest``) added to
    ``scripts``; None for an option that may write (``-i``) or that is not known."""
    if arg in {"-e", "--expression"} or arg.startswith("--expression="):
        script = arg.partition("=")[2] if "=" in arg else rest.pop(0) if rest else None
        if script is not None:
            scripts.append(script)
        return None if script is None else False
    if arg in {"--quiet", "--silent"}:
        return True
    if arg.startswith("--"):
        return None
    takes_script = arg.endswith("e")
    flags = arg[1:-1] if takes_script else arg[1:]
    if not set(flags) <= _SED_FLAGS or (takes_script and not rest):
        return None
    if takes_script:
        scripts.append(rest.pop(0))
    return "n" in flags


def _find(args: Sequence[str]) -> bool:
    return not any(a in _FIND_ACTIONS for a in args)


def _git(args: Sequence[str]) -> bool:
    """``git [--no-pager] [-C DIR] SUBCOMMAND ...`` with a reading subcommand."""
    rest = list(args)
    while rest and rest[0] in {"--no-pager", "-C"}:
        if rest.pop(0) == "-C":
            if not rest:
                return False
            rest.pop(0)
    if not rest or rest[0] not in _GIT_READS:
        return False
    return _without(_GIT_FORBIDDEN)(rest[1:])


READ_PROGRAMS: Mapping[str, Callable[[Sequence[str]], bool]] = {
    **dict.fromkeys(("cat", "nl", "wc", "ls", "pwd", "grep", "egrep", "fgrep", "head"), _any_args),
    **dict.fromkeys(("stat", "diff", "cmp", "cut", "tr", "echo", "true", "basename", "dirname"), _any_args),
    "tail": _tail,
    "sed": _sed,
    "find": _find,
    "git": _git,
    "rg": _without(_RG_FORBIDDEN),
    "sort": _sort,
    "uniq": _uniq,
}


def _is_operator(token: str) -> bool:
    return bool(token) and all(c in OPERATOR_CHARS for c in token)


def _segments(tokens: Sequence[str]) -> Iterator[list[str] | None]:
    """The simple commands between separators; None for an operator that is not a separator or an
    allowed redirection (the redirections themselves are checked and dropped here)."""
    segment: list[str] = []
    open_ended = False  # the last operator was a separator that needs a command after it
    rest = list(tokens)
    while rest:
        token = rest.pop(0)
        if not _is_operator(token):
            segment.append(token)
            open_ended = False
            continue
        separator = token.replace("\n", "")
        if not separator:  # a line break ends a command; blank lines end nothing
            if segment:
                yield segment
            segment = []
        elif separator in _SEPARATORS:
            yield segment
            segment, open_ended = [], True
        elif not _allowed_redirect(token, rest):
            yield None
            return
    if segment or open_ended:
        yield segment


def _allowed_redirect(operator: str, rest: list[str]) -> bool:
    """An output redirection to /dev/null, a descriptor duplication (``2>&1``) or an input file;
    consumes its target from ``rest``."""
    if not rest or _is_operator(rest[0]):
        return False
    target = rest.pop(0)
    if operator in _OUTPUT_REDIRECTS:
        return target in _NULL_TARGETS
    if operator in {">&", "<&"}:
        return target.isdigit() or target == "-"
    return operator == "<"


def _is_read_segment(words: Sequence[str]) -> bool:
    if not words:
        return False
    program, *args = words
    check = READ_PROGRAMS.get(program)
    return check is not None and check(args)


@run_memo(4096)
def is_read_command(command: str) -> bool:
    """Whether the shell command only reads (see the module docstring); unknown is not a read."""
    if not command.strip() or len(command) > MAX_COMMAND_CHARS:
        return False
    lexed = words(command)
    if lexed is None or lexed.expands:
        return False
    segments = list(_segments(lexed.tokens))
    return bool(segments) and all(segment is not None and _is_read_segment(segment) for segment in segments)


def _command_text(value: object) -> str | None:
    """The script of a command given as text, or as an argv list (``["bash", "-lc", SCRIPT]`` or
    the program's own words)."""
    if isinstance(value, str):
        return value
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        return None
    if len(value) == 3 and value[0].rsplit("/", 1)[-1] in INTERPRETERS and value[1] in _SCRIPT_FLAGS:
        return str(value[2])
    return shlex.join(value)


def _local_shell_action(value: object) -> object:
    """Codex's ``local_shell_call`` action (``{"type": "exec", "command": argv, "working_directory":
    ..., "timeout_ms": ..., "env": {}, "user": null}``) as the arguments of a shell tool."""
    if not isinstance(value, dict) or value.get("type") != "exec" or value.get("env") or value.get("user"):
        return None
    out = {k: v for k, v in value.items() if k not in {"type", "env", "user", "working_directory"}}
    if value.get("working_directory") is not None:
        out["workdir"] = value["working_directory"]
    return out


@run_memo(4096)
def shell_read_key(tool: str, arguments: str) -> str | None:
    """The dedup cache key of a shell-like tool's call when its command only reads, else None."""
    if tool not in SHELL_TOOLS:
        return None
    try:
        value = json.loads(arguments)
    except (ValueError, TypeError, RecursionError):
        return None
    if tool == "local_shell":
        value = _local_shell_action(value)
    if not isinstance(value, dict):
        return None
    commands = [value[k] for k in _COMMAND_KEYS if k in value]
    directories = [value[k] for k in _DIRECTORY_KEYS if k in value]
    known = {*_COMMAND_KEYS, *_DIRECTORY_KEYS, *_INERT_KEYS}
    if len(commands) != 1 or len(directories) > 1 or not set(value) <= known:
        return None
    command = _command_text(commands[0])
    directory = directories[0] if directories else ""
    if command is None or not isinstance(directory, str) or not is_read_command(command):
        return None
    return f"{tool}\x00shell\x00{directory}\x00{command}"
