"""The deterministic digest: a bounded, LLM-free summary of a range of iterations.

It is built from the events of the range only: the goal (the task), the files
read / written / edited (tool arguments and shell commands), the commands run
and their exit codes, the errors seen, the last thoughts of the model, its open
todo items and how often each tool was used. Same input, same text; nothing
after ``last`` is ever read.
"""

from __future__ import annotations

import re
import shlex
from collections import Counter
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import orjson

from .._messages import Message, ToolCall
from ._names import RETRIEVE_TOOL_NAME
from ._types import Summary

__all__ = ["MAX_DIGEST_CHARS", "digest", "error_line", "looks_like_error", "parse_exit_code", "shell_files"]

MAX_DIGEST_CHARS = 2_000
_GOAL_CHARS = 300
_THOUGHT_CHARS = 300
_COMMAND_CHARS = 100
_ERROR_CHARS = 160
_EARLIER_CHARS = 600
_CAPS = {"read": 20, "written": 20, "edited": 20, "commands": 15, "errors": 8, "thoughts": 2, "todo": 12}

_RETURNCODE_TAG = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_EXIT_TEXT = re.compile(
    r"\b(?:exit(?:ed)?(?:\s+with)?[\s_]*(?:code|status)|return[\s_]?code)\s*[:=]?\s*(-?\d+)", re.I
)
_ERROR_LINE = re.compile(r"^\s*(?:[\w.]*(?:Error|Exception)\b|(?:error|fatal|failed)\b)", re.I)
_EXCEPTION_LINE = re.compile(r"^[\w.]*(?:Error|Exception):", re.M)
_FIRST_LINE_ERROR = re.compile(r"^\s*(?:error|fatal|exception)\b", re.I)
_TODO_LINE = re.compile(r"^\s*[-*]\s*\[([ xX])\]\s+(.+?)\s*$", re.M)
_HEREDOC = re.compile(r"(<<-?\s*['\"]?(\w+)['\"]?)([^\n]*)\n.*?^\s*\2\s*$", re.S | re.M)
_PATH_TOKEN = re.compile(r"[\w./~+@-]+")
_EXTENSION = re.compile(r"\.[A-Za-z][A-Za-z0-9]{0,7}$")
_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})

_PATH_KEYS = ("path", "file_path", "filepath", "file", "filename", "target_file")
_PATH_LIST_KEYS = ("paths", "files")
_COMMAND_KEYS = ("command", "cmd", "script")
_READ_PROGS = frozenset(
    {
        *("cat", "head", "tail", "less", "more", "grep", "egrep", "fgrep", "rg", "wc", "sed", "awk", "nl"),
        *("diff", "python", "python3", "pytest", "node", "ruby", "bash", "sh", "source", "stat", "file"),
        *("jq", "sort", "uniq", "cut", "xxd", "od"),
    }
)
_PATTERN_FIRST = frozenset({"grep", "egrep", "fgrep", "rg", "sed", "awk"})
_PREFIX_PROGS = frozenset({"sudo", "time", "nohup", "env", "timeout", "xargs"})


# --------------------------------------------------------------------------- small text helpers
def _one_line(text: str) -> str:
    return " ".join(text.split())


def _shorten(text: str, limit: int) -> str:
    flat = _one_line(text)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


def parse_exit_code(output: str) -> int | None:
    """The exit code reported in a command's output (``<returncode>N</returncode>``, ``exit code: N``)."""
    tags = _RETURNCODE_TAG.findall(output)
    if tags:
        return int(tags[-1])
    texts = _EXIT_TEXT.findall(output)
    return int(texts[-1]) if texts else None


def looks_like_error(output: str, exit_code: int | None = None) -> bool:
    """True for a failed command, a traceback, or an output that starts like an error."""
    if exit_code not in (None, 0):
        return True
    if "Traceback (most recent call last)" in output or _EXCEPTION_LINE.search(output):
        return True
    first = next((line for line in output.splitlines() if line.strip()), "")
    return bool(_FIRST_LINE_ERROR.match(first))


def error_line(output: str) -> str:
    """The most telling line of an error output: the last error-looking line, else the last line
    that is not just the exit code."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    for line in reversed(lines):
        if _ERROR_LINE.match(line):
            return line
    telling = [line for line in lines if not (_EXIT_TEXT.search(line) or _RETURNCODE_TAG.search(line))]
    return (telling or lines or [""])[-1]


# --------------------------------------------------------------------------- tool arguments
def _arguments(call: ToolCall) -> dict[str, Any]:
    try:
        data = orjson.loads(call.arguments or "{}")
    except orjson.JSONDecodeError:
        return {}
    return data if isinstance(data, dict) else {}


def _strings(value: Any) -> Iterator[str]:
    """Every string inside a decoded JSON value, depth-first, in order."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _command_of(args: Mapping[str, Any]) -> str | None:
    for key in _COMMAND_KEYS:
        value = args.get(key)
        if isinstance(value, str) and value.strip():
            return value
        if isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            return shlex.join(value)
    return None


def _file_category(tool_name: str) -> str | None:
    name = tool_name.lower()
    if any(word in name for word in ("edit", "replace", "patch", "insert")):
        return "edited"
    if any(word in name for word in ("write", "create", "save")):
        return "written"
    if any(word in name for word in ("read", "view", "open", "cat")):
        return "read"
    return None


def _argument_paths(args: Mapping[str, Any]) -> list[str]:
    paths = [str(args[key]) for key in _PATH_KEYS if isinstance(args.get(key), str) and args[key]]
    for key in _PATH_LIST_KEYS:
        value = args.get(key)
        if isinstance(value, list):
            paths.extend(str(v) for v in value if isinstance(v, str) and v)
    return paths


# --------------------------------------------------------------------------- shell commands
def _is_path(token: str) -> bool:
    if token.startswith("-") or token.startswith("/dev/") or not _PATH_TOKEN.fullmatch(token):
        return False
    if set(token) <= {".", "/"}:
        return False
    return "/" in token or bool(_EXTENSION.search(token))


def _tokens(line: str) -> list[str]:
    lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: fall back to a plain split
        return line.split()


def _segments(tokens: list[str]) -> Iterator[list[str]]:
    current: list[str] = []
    for token in tokens:
        if token in _SEPARATORS:
            if current:
                yield current
            current = []
        else:
            current.append(token)
    if current:
        yield current


def _segment_files(segment: list[str]) -> list[tuple[str, str]]:
    words: list[str] = []
    found: list[tuple[str, str]] = []
    tokens = iter(segment)
    for token in tokens:
        if token in (">", ">>", "<"):
            target = next(tokens, "")
            if _is_path(target):
                found.append(("written" if token != "<" else "read", target))
        elif not token.startswith(">") and not token.startswith("<"):
            words.append(token)
    while words and ("=" in words[0] or words[0].rsplit("/", 1)[-1] in _PREFIX_PROGS):
        words.pop(0)
    if not words:
        return found
    return _program_files(words[0].rsplit("/", 1)[-1], words[1:]) + found


def _program_files(program: str, args: list[str]) -> list[tuple[str, str]]:
    options, paths = _options_and_paths(program, args)
    return _categorized(program, options, paths)


def _options_and_paths(program: str, args: list[str]) -> tuple[list[str], list[str]]:
    """The options, and the arguments that look like paths (a grep-like pattern is not one)."""
    options = [a for a in args if a.startswith("-")]
    positional = [a for a in args if not a.startswith("-")]
    if program in _PATTERN_FIRST and not {"-e", "-f"} & set(options) and positional:
        positional = positional[1:]
    return options, [p for p in positional if _is_path(p)]


def _categorized(program: str, options: list[str], paths: list[str]) -> list[tuple[str, str]]:
    if program in ("sed", "perl") and any(o.startswith("-i") for o in options):
        return [("edited", p) for p in paths]
    if program in ("tee", "touch"):
        return [("written", p) for p in paths]
    if program in ("cp", "mv") and len(paths) >= 2:
        return [("read", p) for p in paths[:-1]] + [("written", paths[-1])]
    if program in _READ_PROGS:
        return [("read", p) for p in paths]
    return []


def shell_files(command: str) -> list[tuple[str, str]]:
    """``(category, path)`` pairs a shell command reads (``cat``, ``grep``, ``python`` ...) or writes."""
    return list(_shell_files(command))


@lru_cache(maxsize=4096)
def _shell_files(command: str) -> tuple[tuple[str, str], ...]:
    # Rolling digests re-scan the same commands at every trigger: parse each one once.
    stripped = _HEREDOC.sub(lambda m: m.group(1) + m.group(3), command)
    found: list[tuple[str, str]] = []
    for line in stripped.splitlines():
        for segment in _segments(_tokens(line)):
            found.extend(_segment_files(segment))
    return tuple(found)


# --------------------------------------------------------------------------- event collection
# What one message says is computed once per (frozen, hashable) message and memoized: a rolling
# digest re-reads the whole history at every trigger, and re-parsing it each time made the
# digest grow linearly with the run (38 ms at iteration 135 of a benchmark run).
Todo = tuple[tuple[str, ...], int]  # (open items, done count) of a todo list


@dataclass(frozen=True, slots=True)
class _CallFacts:
    id: str
    name: str
    command: str | None
    touches: tuple[tuple[str, str], ...]
    command_line: str | None  # "[it 3] $ first line …"


@dataclass(frozen=True, slots=True)
class _AssistantFacts:
    thought: str | None
    todo: Todo | None
    calls: tuple[_CallFacts, ...]


@dataclass(frozen=True, slots=True)
class _ToolFacts:
    code: int | None
    failed: bool
    error: str  # the error line ('' when none)
    todo: Todo | None


def _latest_todo(texts: Iterable[str]) -> Todo | None:
    latest: Todo | None = None
    for text in texts:
        found = _TODO_LINE.findall(text)
        if found:
            open_items = tuple(_shorten(item, 120) for mark, item in found if mark == " ")
            latest = (open_items, len(found) - len(open_items))
    return latest


@lru_cache(maxsize=8192)
def _assistant_facts(message: Message) -> _AssistantFacts:
    texts = [message.text] if message.text.strip() else []
    calls = []
    for call in message.tool_calls:
        args = _arguments(call)
        texts.extend(_strings(args))
        command = _command_of(args)
        category = _file_category(call.name)
        touches: list[tuple[str, str]] = []
        if category is not None and command is None:
            touches.extend((category, path) for path in _argument_paths(args))
        line = None
        if command is not None:
            touches.extend(shell_files(command))
            lines = command.strip().splitlines()
            more = " …" if len(lines) > 1 else ""
            first_line = lines[0] if lines else command
            line = f"[it {message.iteration}] $ {_shorten(first_line, _COMMAND_CHARS)}{more}"
        calls.append(_CallFacts(call.id, call.name, command, tuple(touches), line))
    thought = (
        f"[it {message.iteration}] {_shorten(message.text, _THOUGHT_CHARS)}" if message.text.strip() else None
    )
    return _AssistantFacts(thought, _latest_todo(texts), tuple(calls))


@lru_cache(maxsize=8192)
def _tool_facts(message: Message) -> _ToolFacts:
    output = message.text
    code = parse_exit_code(output)
    failed = looks_like_error(output, code)
    return _ToolFacts(code, failed, error_line(output) if failed else "", _latest_todo([output]))


@dataclass
class _Events:
    goal: str | None = None
    files: dict[str, dict[str, None]] = field(
        default_factory=lambda: {"read": {}, "written": {}, "edited": {}}
    )
    commands: list[str] = field(default_factory=list)
    command_index: dict[str, int] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)
    thoughts: list[str] = field(default_factory=list)
    todo: tuple[list[str], int] | None = None  # (open items, done count) of the latest list
    tools: Counter[str] = field(default_factory=Counter)
    calls: dict[str, _CallFacts] = field(default_factory=dict)

    def touch(self, category: str, path: str) -> None:
        bucket = self.files[category]
        bucket.pop(path, None)  # most recent touch last
        bucket[path] = None

    def set_todo(self, todo: Todo | None) -> None:
        if todo is not None:
            self.todo = (list(todo[0]), todo[1])


def _on_assistant(events: _Events, message: Message) -> None:
    facts = _assistant_facts(message)
    if facts.thought is not None:
        events.thoughts.append(facts.thought)
    events.set_todo(facts.todo)
    for call in facts.calls:
        events.tools[call.name] += 1
        events.calls[call.id] = call
        for kind, path in call.touches:
            events.touch(kind, path)
        if call.command_line is not None:
            events.command_index[call.id] = len(events.commands)
            events.commands.append(call.command_line)


def _on_tool(events: _Events, message: Message) -> None:
    call = events.calls.get(message.tool_call_id or "")
    name = message.name or (call.name if call else "tool")
    if name == RETRIEVE_TOOL_NAME:
        return  # old content brought back: its errors and todo lists are not news
    facts = _tool_facts(message)
    index = events.command_index.get(message.tool_call_id or "")
    if call is not None and call.command is not None and index is not None:
        outcome = f"exit {facts.code}" if facts.code is not None else ("error" if facts.failed else "ok")
        events.commands[index] += f" -> {outcome}"
    if facts.failed:
        line = facts.error or f"exit {facts.code}"
        events.errors.append(f"[it {message.iteration} {name}] {_shorten(line, _ERROR_CHARS)}")
    events.set_todo(facts.todo)


def _collect(messages: Sequence[Message], lo: int, last: int) -> tuple[_Events, set[int]]:
    events = _Events()
    present: set[int] = set()
    for message in messages:
        if message.iteration > last:
            continue
        if events.goal is None and message.role == "user" and message.iteration == 0 and message.text.strip():
            events.goal = _shorten(message.text, _GOAL_CHARS)
        if message.iteration < lo:
            continue
        present.add(message.iteration)
        if message.role == "assistant":
            _on_assistant(events, message)
        elif message.role == "tool":
            _on_tool(events, message)
    return events, present


# --------------------------------------------------------------------------- rendering
@dataclass
class _Section:
    title: str
    items: list[str]
    inline: bool = False  # "Title: a, b, c" instead of one "- item" line each

    def render(self) -> str:
        if not self.items:
            return ""
        if self.inline:
            return f"{self.title}: {', '.join(self.items)}"
        return "\n".join([f"{self.title}:", *(f"- {item}" for item in self.items)])


def _previous_goal(previous: Summary | None) -> str | None:
    if previous is None:
        return None
    for line in previous.text.splitlines():
        if line.startswith("Goal: "):
            return line[len("Goal: ") :]
    return None


def _sections(events: _Events) -> list[_Section]:
    def recent(items: Iterable[str], cap: str) -> list[str]:
        return list(items)[-_CAPS[cap] :]

    sections = [
        _Section("Files read", recent(events.files["read"], "read"), inline=True),
        _Section("Files written", recent(events.files["written"], "written"), inline=True),
        _Section("Files edited", recent(events.files["edited"], "edited"), inline=True),
        _Section("Commands", recent(events.commands, "commands")),
        _Section("Errors", recent(events.errors, "errors")),
        _Section("Last thoughts", recent(events.thoughts, "thoughts")),
    ]
    if events.todo is not None:
        open_items, done = events.todo
        title = f"Open tasks ({len(open_items)} open, {done} done)"
        sections.append(_Section(title, [f"[ ] {item}" for item in recent(open_items, "todo")]))
    return sections


def _render(head: list[str], sections: list[_Section], tail: list[str]) -> str:
    body = [text for text in (s.render() for s in sections) if text]
    return "\n".join([*head, *body, *tail])


def _fit(head: list[str], sections: list[_Section], tail: list[str], limit: int) -> str:
    """Drop the oldest item of the longest section until the text fits ``limit``."""
    text = _render(head, sections, tail)
    while len(text) > limit:
        candidates = [s for s in sections if s.items]
        if not candidates:
            return text[: limit - 1] + "…"
        longest = max(candidates, key=lambda s: len(s.render()))
        longest.items.pop(0)
        text = _render(head, sections, tail)
    return text


def digest(
    previous: Summary | None,
    messages: Sequence[Message],
    first: int,
    last: int,
    *,
    max_chars: int = MAX_DIGEST_CHARS,
) -> Summary:
    """A deterministic summary of iterations ``first..last`` (``previous.first..last`` when rolling).

    ``messages`` is usually the run's whole history; only iterations up to
    ``last`` are read (iteration 0 for the goal). When ``previous`` covers
    iterations that ``messages`` no longer holds, its text is carried as "Earlier".
    """
    if first < 0 or last < first:
        raise ValueError(f"invalid digest range {first}..{last}")
    lo = min(previous.first, first) if previous is not None else first
    events, present = _collect(messages, lo, last)
    goal = events.goal or _previous_goal(previous)
    head = [f"Digest of iterations {lo}-{last}."]
    if goal:
        head.append(f"Goal: {goal}")
    if previous is not None and previous.first < first and not any(it < first for it in present):
        earlier = _shorten(previous.text.replace("\n", " | "), _EARLIER_CHARS)
        head.append(f"Earlier (iterations {previous.first}-{previous.last}): {earlier}")
    tail: list[str] = []
    if events.tools:
        usage = sorted(events.tools.items(), key=lambda kv: (-kv[1], kv[0]))
        tail.append("Tools used: " + ", ".join(f"{name} x{count}" for name, count in usage))
    if not events.tools and not events.thoughts:
        tail.append("No activity recorded in this range.")
    text = _fit(head, _sections(events), tail, max_chars)
    return Summary(first=lo, last=last, text=text, model=None)
