"""What one tool call is, for the working memory: a shell command, a file read or edit, a search,
a thought, a plan, the final answer, a lookup or an action; with the files it touches.

The agent families the replay reads name their tools differently; the call is
recognized by its name *and* its arguments:

* shell commands: any tool with a ``command``/``cmd``/``script`` argument (``bash``,
  ``run_shell``, ``execute_bash``, Codex's ``shell`` with ``["bash", "-lc", ...]``);
* editors: ``str_replace_editor``-style ``command`` = view/create/str_replace/insert
  (OpenHands, Anthropic's text editor), SWE-agent's windowed commands (``open f 40``,
  ``edit 12:14``, ``create f``, as text or as function calls), Claude Code's
  Read/Edit/MultiEdit/Write, our read_file/write_file/edit_file, ``apply_patch``;
* searches (``grep``, ``search_text``, ``Grep``, ``search_dir`` ...), listings;
* ``think``, plans (TodoWrite, update_plan), ``finish``/``submit``;
* anything else: a *lookup* (``get_*``, ``search_*``, ``calculate`` ...) or an *action*.

Arguments, paths and shell commands are read as :mod:`..._calls` names them (the files the agent
wrote read calls the same way). Memoized per call.
"""

from __future__ import annotations

import dataclasses
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...._messages import ToolCall
from ..._calls import (
    PATCH_TOOLS,
    TEXT_KEYS,
    argv_patch,
    call_arguments,
    patch_argument,
    path_argument,
    shell_command,
)
from ..._memo import run_memo
from ..._names import RETRIEVE_TOOL_NAME
from ._code import Touch, View, definitions, numbered_positions, patch_touches
from ._shell import shell_facts
from ._text import Todo, compact_value, latest_todo, shorten, structured_todo

__all__ = ["CallFacts", "call_facts"]

_EDITOR_COMMANDS = frozenset({"view", "create", "str_replace", "insert", "undo_edit", "append"})
_SWE_COMMANDS = frozenset(
    {
        "open",
        "goto",
        "scroll_up",
        "scroll_down",
        "create",
        "edit",
        "insert",
        "find_file",
        "search_dir",
        "search_file",
        "submit",
    }
)
_READ = frozenset(
    {"read_file", "read", "view", "open", "view_file", "readfile", "cat", "open_file", "notebookread"}
)
_WRITE = frozenset({"write_file", "write", "create", "create_file", "writefile", "notebookwrite"})
_EDIT = frozenset(
    {
        "edit_file",
        "edit",
        "multiedit",
        "str_replace",
        "replace",
        "insert",
        "replace_in_file",
        "notebookedit",
        "search_replace",
    }
)
_SEARCH = frozenset(
    {"grep", "search_text", "search_dir", "search_file", "rg", "ripgrep", "grep_search", "codebase_search"}
)
_LISTING = frozenset({"list_dir", "ls", "glob", "find_file", "list_files", "file_search", "list_directory"})
_FINISH = frozenset({"finish", "submit", "final_answer", "attempt_completion", "task_complete"})
_PLAN = frozenset({"todowrite", "update_plan", "todo_write", "write_todos"})
_LOOKUP_PREFIXES = (
    "get", "search", "list", "find", "fetch", "lookup", "query", "read", "calculate", "check", "view", "show",
    "describe", "retrieve", "web",
)  # fmt: skip
_LABEL_CHARS = 110
_ACTION_CHARS = 240
_EDIT_CHARS = 40


@dataclass(frozen=True, slots=True)
class CallFacts:
    """One tool call as the working memory sees it."""

    id: str
    name: str
    kind: str  # shell | file | search | listing | think | plan | finish | lookup | action | retrieve
    label: str  # one line: "$ pytest -q" or "book_reservation(user_id=..., ...)"
    command: str | None = None
    touches: tuple[Touch, ...] = ()
    view: View | None = None
    quiet: bool = False  # a read-only shell command: shown under its files
    test: bool = False
    text: str = ""  # a thought, the final answer
    todo: Todo | None = None


def _int(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().isdigit():
        return int(value)
    return None


def _label(name: str, args: Mapping[str, Any]) -> str:
    parts = []
    for key, value in args.items():
        if isinstance(value, str | int | float) and not isinstance(value, bool):
            parts.append(f"{key}={shorten(str(value), 40)}")
        elif value not in (None, "", [], {}):
            parts.append(f"{key}=…")
    return shorten(f"{name}({', '.join(parts)})", _LABEL_CHARS)


def _first_line(text: Any) -> str:
    lines = [line.strip() for line in str(text or "").splitlines() if line.strip()]
    return shorten(lines[0], _EDIT_CHARS) if lines else "∅"


def _edit_note(old: Any, new: Any) -> str:
    """The first line an edit changes: ``old → new``, from where they start to differ."""
    old_lines = [line.strip() for line in str(old or "").splitlines() if line.strip()]
    new_lines = [line.strip() for line in str(new or "").splitlines() if line.strip()]
    common = 0
    while common < min(len(old_lines), len(new_lines)) and old_lines[common] == new_lines[common]:
        common += 1
    before = old_lines[common] if common < len(old_lines) else ""
    after = new_lines[common] if common < len(new_lines) else ""
    cut = 0
    while cut < min(len(before), len(after)) and before[cut] == after[cut]:
        cut += 1
    cut = max(0, cut - 12) if cut > _EDIT_CHARS // 2 else 0
    mark = "…" if cut else ""
    if not before or not after:
        return f"+ {_first_line(after)}" if after else f"- {_first_line(before)}"
    return f"{_first_line(mark + before[cut:])} → {_first_line(mark + after[cut:])}"


# --------------------------------------------------------------------------- file tools
def _written(path: str, content: Any, verb: str = "written") -> Touch:
    lines = str(content or "").splitlines()
    defs = definitions(numbered_positions(lines, 1))
    return Touch(
        path, "written", note=f"{verb}, {len(lines)} line{'s' if len(lines) != 1 else ''}", defs=defs
    )


def _read(path: str, start: int | None, end: int | None) -> tuple[Touch, View]:
    lines = ((start, end),) if start is not None and end is not None and end >= start else ()
    return Touch(path, "read", lines), View(path, start)


def _editor(name: str, args: Mapping[str, Any], command: str) -> CallFacts:
    """``str_replace_editor``-style tools: OpenHands, Anthropic's text editor."""
    path = path_argument(args)
    if command == "view":
        view_range = args.get("view_range")
        start = end = None
        if isinstance(view_range, list) and len(view_range) == 2:
            start, end = _int(view_range[0]), _int(view_range[1])
            end = end if end is not None and end > 0 else None
        touch, view = _read(path, start, end)
        return CallFacts("", name, "file", f"view {path}", touches=(touch,), view=view)
    if command in ("create", "append"):
        touch = _written(path, args.get("file_text") or args.get("content"), "created")
        return CallFacts("", name, "file", f"create {path}", touches=(touch,))
    if command == "insert":
        line = _int(args.get("insert_line"))
        lines = ((line, line),) if line is not None else ()
        note = f"insert at {line}: {_first_line(args.get('new_str') or args.get('text'))}"
        return CallFacts("", name, "file", f"insert {path}", touches=(Touch(path, "edited", lines, note),))
    note = _edit_note(args.get("old_str"), args.get("new_str")) if command == "str_replace" else command
    return CallFacts("", name, "file", f"{command} {path}", touches=(Touch(path, "edited", (), note),))


def _file_tool(name: str, lower: str, args: Mapping[str, Any]) -> CallFacts | None:
    path = path_argument(args)
    if not path:
        return None
    if lower in _READ:
        start = _int(args.get("start_line") or args.get("offset") or args.get("line_number"))
        end = _int(args.get("end_line"))
        limit = _int(args.get("limit"))
        if end is None and start is not None and limit is not None:
            end = start + limit - 1
        touch, view = _read(path, start, end)
        return CallFacts("", name, "file", f"{name} {path}", touches=(touch,), view=view)
    if lower in _WRITE:
        content = next((args[k] for k in TEXT_KEYS if k in args), "")
        return CallFacts("", name, "file", f"{name} {path}", touches=(_written(path, content),))
    if lower in _EDIT:
        return CallFacts("", name, "file", f"{name} {path}", touches=(_edit_touch(path, args),))
    return None


def _edit_touch(path: str, args: Mapping[str, Any]) -> Touch:
    edits = args.get("edits")
    if isinstance(edits, list) and edits and isinstance(edits[0], Mapping):
        note = _edit_note(edits[0].get("old_string"), edits[0].get("new_string"))
        return Touch(path, "edited", (), note + (f" (+{len(edits) - 1} more)" if len(edits) > 1 else ""))
    old = args.get("old_string", args.get("old_str", args.get("old", args.get("search"))))
    new = args.get("new_string", args.get("new_str", args.get("new", args.get("replace"))))
    return Touch(path, "edited", (), _edit_note(old, new))


# --------------------------------------------------------------------------- SWE-agent
def _swe_text(name: str, command: str) -> CallFacts:
    """SWE-agent's windowed commands sent as text: ``open f 40``, ``edit 12:14\\n...``, ``create f``."""
    first, _, rest = command.partition("\n")
    words = _split(first)
    args = words[1:]
    if name in ("open", "goto", "scroll_up", "scroll_down"):
        path = args[0] if name == "open" and args else ""
        return CallFacts(
            "",
            name,
            "file",
            shorten(first, _LABEL_CHARS),
            touches=(Touch(path, "read"),),
            view=View(path or None),
        )
    if name == "create" and args:
        return CallFacts("", name, "file", shorten(first, _LABEL_CHARS), touches=(Touch(args[0], "written"),))
    if name in ("edit", "insert"):
        return CallFacts("", name, "file", shorten(first, _LABEL_CHARS), touches=(_swe_edit(args, rest),))
    if name in ("search_dir", "search_file", "find_file"):
        return CallFacts("", name, "search", shorten(first, _LABEL_CHARS), view=View(None))
    return CallFacts("", name, "finish" if name == "submit" else "lookup", shorten(first, _LABEL_CHARS))


def _swe_edit(args: list[str], body: str) -> Touch:
    lines: tuple[tuple[int, int], ...] = ()
    if args:
        first, _, last = args[0].partition(":")
        start, end = _int(first), _int(last or first)
        if start is not None and end is not None:
            lines = ((start, max(start, end)),)
    text = body.rsplit("end_of_edit", 1)[0]
    return Touch("", "edited", lines, _first_line(text))


def _swe_function(name: str, args: Mapping[str, Any]) -> CallFacts | None:
    """SWE-agent's function-calling tools: ``open(path, line_number)``, ``edit(search, replace)`` ..."""
    if name in ("goto", "scroll_up", "scroll_down"):
        return CallFacts("", name, "file", _label(name, args), touches=(Touch("", "read"),), view=View(None))
    if name == "edit" and ("search" in args or "replace" in args):
        note = _edit_note(args.get("search"), args.get("replace"))
        return CallFacts(
            "", name, "file", _label(name, args), touches=(Touch(path_argument(args), "edited", (), note),)
        )
    if name == "insert" and "text" in args and not path_argument(args):
        line = _int(args.get("line"))
        lines = ((line, line),) if line is not None else ()
        return CallFacts(
            "", name, "file", _label(name, args), touches=(Touch("", "edited", lines, "insert"),)
        )
    return None


def _split(line: str) -> list[str]:
    try:
        return shlex.split(line)
    except ValueError:
        return line.split()


# --------------------------------------------------------------------------- dispatch
def _shell(name: str, command: str) -> CallFacts:
    facts = shell_facts(command)
    lines = command.strip().splitlines() or [command]
    label = "$ " + shorten(lines[0], _LABEL_CHARS) + (" …" if len(lines) > 1 else "")
    return CallFacts("", name, "shell", label, command, facts.touches, facts.view, facts.quiet, facts.test)


def _special(name: str, lower: str, args: Mapping[str, Any]) -> CallFacts | None:
    if name == RETRIEVE_TOOL_NAME:
        return CallFacts("", name, "retrieve", name)
    if lower == "think":
        text = str(args.get("thought") or args.get("content") or args.get("input") or "")
        return CallFacts("", name, "think", "think", text=text, todo=latest_todo([text]))
    if lower in _PLAN:
        return CallFacts("", name, "plan", name, todo=structured_todo(args))
    if lower in _FINISH:
        text = str(args.get("message") or args.get("result") or args.get("answer") or args.get("input") or "")
        return CallFacts("", name, "finish", name, text=text)
    patch = patch_argument(args) if lower in PATCH_TOOLS else argv_patch(args)  # or shell(["apply_patch", P])
    if patch is not None:
        return CallFacts("", name, "file", name, touches=patch_touches(patch))
    return None


def _named(name: str, lower: str, args: Mapping[str, Any]) -> CallFacts:
    command = shell_command(args)
    if command is not None and lower in _SWE_COMMANDS and _split(command.partition("\n")[0])[:1] == [lower]:
        return _swe_text(lower, command)
    if isinstance(args.get("command"), str) and args["command"] in _EDITOR_COMMANDS and path_argument(args):
        return _editor(name, args, str(args["command"]))
    if command is not None:
        return _shell(name, command)
    return _swe_function(lower, args) or _file_tool(name, lower, args) or _other(name, lower, args)


def _other(name: str, lower: str, args: Mapping[str, Any]) -> CallFacts:
    if lower in _SEARCH or lower == "search":
        return CallFacts("", name, "search", _label(name, args), view=View(None))
    if lower in _LISTING:
        return CallFacts("", name, "listing", _label(name, args))
    if lower.startswith(_LOOKUP_PREFIXES):
        return CallFacts("", name, "lookup", _label(name, args))
    # An action's arguments are what was done: shown in full, compacted.
    return CallFacts(
        "", name, "action", shorten(f"{name}({compact_value(args, _ACTION_CHARS)})", _ACTION_CHARS)
    )


@run_memo(8192)
def call_facts(call: ToolCall) -> CallFacts:
    """What ``call`` is and which files it touches (see the module docstring)."""
    args = call_arguments(call.arguments)
    lower = call.name.lower()
    facts = _special(call.name, lower, args) or _named(call.name, lower, args)
    return dataclasses.replace(facts, id=call.id, name=call.name)
