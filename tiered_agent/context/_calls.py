"""The conventions the context steps read a tool call by, whatever the agent family named its tools.

One place for what every reader of a call agrees on: the names of the shell-like and patch tools,
the argument keys that hold a path, a command or a file's whole text, decoding a call's JSON
arguments (a raw argument, like the patch Codex's ``apply_patch`` sends, stays readable), and
finding the shell script a call runs (Codex's ``["bash", "-lc", SCRIPT]`` is that script). The
readers: the files the agent wrote (:mod:`.aging._written`), the working memory's facts about a
call (:mod:`.summary.memory._calls`) and the shell reads Dedup may serve (:mod:`.dedup._shell`).

What a reader does with a call stays its own (the working memory also reads files the agent only
looked at, Dedup only ever serves a read); this module only names what they read.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = [
    "COMMAND_KEYS",
    "INTERPRETERS",
    "PATCH_KEYS",
    "PATCH_PROGRAMS",
    "PATCH_TOOLS",
    "PATH_KEYS",
    "SHELL_TOOLS",
    "TEXT_KEYS",
    "argv_patch",
    "call_arguments",
    "patch_argument",
    "path_argument",
    "shell_command",
    "string_argument",
]

SHELL_TOOLS = frozenset({"bash", "Bash", "run_shell", "exec_command", "shell", "execute_bash", "local_shell"})
"""Tools whose call runs a shell command (by their exact names)."""
PATCH_TOOLS = frozenset({"apply_patch", "patch", "apply_diff"})
"""Tools whose call applies an ``apply_patch`` envelope or a unified diff (lowercase names)."""
PATCH_KEYS = ("input", "patch", "diff")
"""Argument keys that hold a patch tool's patch (``input``: the raw argument), in lookup order."""
PATCH_PROGRAMS = frozenset({"apply_patch", "patch", "applypatch"})
"""Programs a shell command hands a patch to (a here-document, or Codex's ``["apply_patch", PATCH]``)."""
INTERPRETERS = frozenset({"bash", "sh", "zsh", "dash"})
"""Shells an argv runs a script with (``["bash", "-lc", SCRIPT]``)."""
COMMAND_KEYS = ("command", "cmd", "script")
"""Argument keys that hold a shell command, in the order they are looked for."""
PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "target_file", "notebook_path", "file_name")
"""Argument keys that hold the file a file tool works on, in the order they are looked for."""
TEXT_KEYS = ("file_text", "content", "text", "contents", "new_source")
"""Argument keys that hold the whole text a file tool writes, in the order they are looked for."""


def call_arguments(arguments: str) -> dict[str, Any]:
    """A call's arguments as a mapping: its JSON object, else ``{"input": value}`` (a raw argument,
    such as the patch Codex's ``apply_patch`` sends, or a JSON value that is not an object)."""
    try:
        data = orjson.loads(arguments or "{}")
    except orjson.JSONDecodeError:
        return {"input": arguments}
    return data if isinstance(data, dict) else {"input": data}


def string_argument(args: Mapping[str, Any], keys: tuple[str, ...]) -> str | None:
    """The first of ``keys`` whose value is a string (None when none is)."""
    for key in keys:
        value = args.get(key)
        if isinstance(value, str):
            return value
    return None


def patch_argument(args: Mapping[str, Any]) -> str:
    """The patch a patch tool applies: the first non-empty :data:`PATCH_KEYS` string ("" when none)."""
    for key in PATCH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def path_argument(args: Mapping[str, Any]) -> str:
    """The file a call works on: the first non-blank :data:`PATH_KEYS` string, stripped ("" when none)."""
    for key in PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value.strip()
    return ""


def _command_value(args: object) -> str | list[str] | None:
    """The first :data:`COMMAND_KEYS` value that is a non-blank string or an argv of strings."""
    if not isinstance(args, Mapping):
        return None
    for key in COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return value
    return None


def shell_command(args: object) -> str | None:
    """The shell command a call runs: the first :data:`COMMAND_KEYS` value that is a non-blank
    string, or an argv (an interpreter's ``-c`` script, else the words joined as the shell would
    read them); None when there is none."""
    value = _command_value(args)
    return _argv_script(value) if isinstance(value, list) else value


def argv_patch(args: object) -> str | None:
    """The patch a call hands straight to a patch program as its one argument (Codex's
    ``{"command": ["apply_patch", PATCH]}``), else None."""
    value = _command_value(args)
    if isinstance(value, list) and len(value) == 2 and value[0].rsplit("/", 1)[-1] in PATCH_PROGRAMS:
        return value[1]
    return None


def _argv_script(argv: list[str]) -> str:
    """An interpreter's ``-c`` script (``["bash", "-lc", SCRIPT]``), else the words as one command."""
    interpreter = len(argv) == 3 and argv[0].rsplit("/", 1)[-1] in INTERPRETERS
    if interpreter and argv[1].startswith("-") and "c" in argv[1]:
        return argv[2]
    return shlex.join(argv)
