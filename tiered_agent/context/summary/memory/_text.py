"""Text helpers of the working memory: shortening, todo lists, decisions, constraints, feedback.

Everything here is a pure function of one string (memoized where a rolling summary
re-reads the same text). A *decision* is the one sentence of an agent message that
states a finding or an intended change (``The issue is that ...``, ``I'll replace
line 428 ...``); routine narration (``Let me look at the file.``) is not one.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping
from typing import Any

import orjson

from ..._memo import run_memo

__all__ = [
    "Todo",
    "compact_json",
    "compact_value",
    "constraints",
    "decision",
    "identifiers",
    "is_context_block",
    "is_feedback",
    "latest_todo",
    "one_line",
    "shorten",
    "structured_todo",
    "task_text",
]

Todo = tuple[tuple[str, ...], int]  # (open items, done count) of a todo list

_TODO_LINE = re.compile(r"^\s*[-*]\s*\[([ xX])\]\s+(.+?)\s*$", re.M)
_SENTENCE = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(\"'])|\n+")
_IDENTIFIER = re.compile(r"[A-Za-z_][\w.]*\w|\d[\w.-]*\w")
_MARKUP = re.compile(r"^(?:THOUGHT|DISCUSSION|Thought|Reasoning)\s*:\s*|```[\w-]*|</?\w+>")
# The decision patterns are written in lower case and match case-insensitively (``re.I``). On ASCII
# text, that is the same as the pattern matching the lower-cased text case-sensitively (lower-casing
# ASCII keeps every position, and only non-ASCII characters fold otherwise, such as the Kelvin sign
# or the long s), which runs about twice as fast: ``_ASCII`` holds those case-sensitive copies.
_FINDING_SOURCE = (
    r"\b(?:the (?:issue|problem|bug|cause|error|reason|fix) (?:is|was|seems|lies|comes)|root cause|caused by"
    r"|this (?:confirms|means|shows)|confirm(?:s|ed) that|indicates that|turns out|is defined in"
    r"|is imported from|the fix works|works now|is fixed|now passes?|all tests pass|is not used)\b"
)
_FINDING = re.compile(_FINDING_SOURCE, re.I)
_CHANGE_VERBS = (
    r"(?:fix|change|modify|replace|add|remove|delete|implement|update|rename|revert|refactor|patch|edit"
    r"|rewrite|move|insert|handle|convert|decode|encode|wrap|override|book|cancel|refund|transfer|upgrade"
    r"|downgrade|switch|apply)\w*"
)
_I_WILL = r"i(?:'ll| will| need to| should| am going to|'m going to| can just| can)"
_WE_WILL = r"we (?:need to|should|must|will|can)"
_CHANGE_SOURCE = (
    rf"\b(?:{_I_WILL}|{_WE_WILL}|let(?:'s| me)|(?:so|then),? i|the (?:solution|approach|plan) is to|next,? i)"
    rf"\s+(?:\w+\s+){{0,3}}?{_CHANGE_VERBS}\b"
    r"|\bto fix (?:this|it|the)\b|\bthe fix (?:is|should|will)\b|\binstead of\b"
)
_CHANGE = re.compile(_CHANGE_SOURCE, re.I)
_CODEISH = re.compile(r"`[^`]+`|\w+\(|\b\w+_\w+\b|\b[a-z]+[A-Z]\w*\b|[\w-]+\.\w{1,4}\b|\b\d{2,}\b")
_CONSTRAINT = re.compile(
    r"\b(?:do not|don't|must not|never|should not|shouldn't|cannot|can't|avoid|only|without|must"
    r"|required?)\b",
    re.I,
)
_NEGATIVE = re.compile(r"\b(?:do not|don't|must not|never|should not|shouldn't|avoid|without)\b", re.I)
_FEEDBACK = re.compile(
    r"EXACTLY ONE (?:action|bash code block)|format your (?:action|response)|<response_example>"
    r"|Your last reply was empty|did not (?:contain|include) (?:a|any) (?:tool call|command|action)"
    r"|^\[Request interrupted",
    re.I,
)
_CONTEXT_BLOCK = re.compile(
    r"^<(?:environment_context|user_instructions|system-reminder|permissions instructions)>|^Caveat:", re.I
)
_ROUTINE_SOURCE = (
    r"\b(?:i(?:'ll| will| need to| should| am going to|'m going to)?|we (?:need to|should|will)"
    r"|let(?:'s| me))\s+(?:now\s+|first\s+|also\s+|then\s+)?(?:verify|check|run|re-run|rerun|test|look"
    r"|see|examine|inspect|read|view|explore|investigate|try|confirm|search|find|list|open|locate|understand"
    r"|start|create a|write a|reproduce)\b"
)
_ROUTINE = re.compile(_ROUTINE_SOURCE, re.I)
# (finding, change, routine): as written, and the case-sensitive copies for lower-cased ASCII text
_UNICODE = (_FINDING, _CHANGE, _ROUTINE)
_ASCII = (re.compile(_FINDING_SOURCE), re.compile(_CHANGE_SOURCE), re.compile(_ROUTINE_SOURCE))
_TAG_LINE = re.compile(r"^\s*</?[\w-]+>\s*$", re.M)
_PREAMBLE = re.compile(
    r"^(?:Consider the following PR description:|We're currently solving the following issue within our "
    r"repository\. Here's the issue text:|ISSUE:)\s*",
    re.I,
)
_TODO_STATUS_DONE = frozenset({"completed", "done", "complete", "finished"})
_COMPACT_CHARS = 400


def one_line(text: str) -> str:
    return " ".join(text.split())


def shorten(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = one_line(text)
    return flat if len(flat) <= limit else flat[: limit - 1].rstrip() + "…"


@run_memo(8192)
def identifiers(text: str) -> frozenset[str]:
    """The identifier-like words of a text (names, dotted names, numbers)."""
    words = set(_IDENTIFIER.findall(text))
    words.update(part for word in list(words) if "." in word for part in word.split("."))
    return frozenset(words)


# --------------------------------------------------------------------------- todo lists
def latest_todo(texts: Iterable[str]) -> Todo | None:
    """The last markdown checkbox list among ``texts``: its open items and how many are done."""
    latest: Todo | None = None
    for text in texts:
        found = _TODO_LINE.findall(text)
        if found:
            open_items = tuple(shorten(item, 120) for mark, item in found if mark == " ")
            latest = (open_items, len(found) - len(open_items))
    return latest


def structured_todo(args: Mapping[str, Any]) -> Todo | None:
    """A plan tool's list (Claude Code's TodoWrite ``todos``, Codex's ``update_plan`` ``plan``)."""
    items = args.get("todos") or args.get("plan") or args.get("items")
    if not isinstance(items, list):
        return None
    open_items: list[str] = []
    done = 0
    for item in items:
        if not isinstance(item, Mapping):
            continue
        text = str(item.get("content") or item.get("step") or item.get("title") or "")
        if str(item.get("status", "")).lower() in _TODO_STATUS_DONE:
            done += 1
        elif text:
            open_items.append(shorten(text, 120))
    return (tuple(open_items), done) if open_items or done else None


# --------------------------------------------------------------------------- sentences
def _sentence_at(text: str, ends: list[int], position: int) -> tuple[int, str]:
    """The sentence of ``text`` around ``position``: (its index, its text)."""
    index = bisect.bisect_right(ends, position)
    begin = ends[index - 1] if index else 0
    end = ends[index] if index < len(ends) else len(text)
    return index, text[begin:end].strip(" \n-*#>")


def _candidates(text: str) -> dict[str, tuple[int, int, str]]:
    """The best sentence of each kind: kind -> (0 if it names code else 1, index, sentence)."""
    ascii_text = text.isascii()
    finding, change, routine = _ASCII if ascii_text else _UNICODE
    read = text.lower() if ascii_text else text  # the same positions (see _ASCII)
    kinds = (("finding", finding), ("change", change))
    matches = [(kind, m.start()) for kind, pattern in kinds for m in pattern.finditer(read)]
    if not matches:
        return {}
    ends = [m.end() for m in _SENTENCE.finditer(text)]
    best: dict[str, tuple[int, int, str]] = {}
    for kind, position in matches:
        if kind in best and best[kind][0] == 0:
            continue  # already the first sentence of this kind that names code
        index, sentence = _sentence_at(text, ends, position)
        if len(sentence) <= 12 or sentence.endswith("?"):
            continue
        lowered = sentence.lower() if ascii_text else sentence
        if kind == "change" and (routine.search(lowered) or finding.search(lowered)):
            continue
        candidate = (0 if _CODEISH.search(sentence) else 1, index, sentence)
        best[kind] = min(best.get(kind, candidate), candidate)
    return best


@run_memo(8192)
def decision(text: str, limit: int = 200) -> str | None:
    """What an agent message decided: its best finding and its best intended change (the ones that
    name code first), in the order written; None when it states neither."""
    cleaned = _MARKUP.sub(" ", text)
    best = _candidates(cleaned)
    if not best:
        return None
    chosen = sorted(best.values(), key=lambda item: item[1])
    return shorten(" ".join(sentence for _, _, sentence in chosen), limit)


# --------------------------------------------------------------------------- the task
@run_memo(1024)
def task_text(text: str) -> str:
    """The task without markup and boilerplate preambles, on one line."""
    cleaned = _PREAMBLE.sub("", _TAG_LINE.sub("", text).strip())
    return one_line(_PREAMBLE.sub("", cleaned))


@run_memo(1024)
def constraints(text: str, limit: int = 3) -> tuple[str, ...]:
    """Up to ``limit`` lines of ``text`` that constrain the work (``DO NOT MODIFY: tests``);
    prohibitions first, in the order written."""
    lines = [line.strip(" -*#>") for line in text.splitlines() if _CONSTRAINT.search(line)]
    lines = [line for line in lines if 12 < len(line) <= 160]
    negative = [line for line in lines if _NEGATIVE.search(line)]
    ordered = negative + [line for line in lines if line not in negative]
    return tuple(dict.fromkeys(ordered))[:limit]


def is_feedback(text: str) -> bool:
    """A harness message after the task (format reminders, empty-reply nudges), not a request."""
    return bool(_FEEDBACK.search(text.strip())) or is_context_block(text)


def is_context_block(text: str) -> bool:
    """An environment or instructions block a harness sends next to the task (Codex, Claude Code)."""
    return bool(_CONTEXT_BLOCK.search(text.strip()))


# --------------------------------------------------------------------------- structured values
def _leaf(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def _scalar(key: str, value: Any) -> str:
    if isinstance(value, bool):
        return key if value else f"no {key}"
    if isinstance(value, int | float):
        return f"{key} {value}"
    return str(value)


_COMPACT_DEPTH = 32  # nested objects and arrays shown; deeper ones are "..."


def _compact(value: Any, key: str = "", depth: int = 0) -> str:
    if depth > _COMPACT_DEPTH and isinstance(value, Mapping | list):
        return "..."
    if isinstance(value, Mapping):
        kept = value.items()
        items = [(str(k), v) for k, v in kept if v not in (None, "", [], {}) and not _repeats(v, key)]
        if depth > 0 and all(_leaf(v) for _, v in items):
            return " ".join(_scalar(k, v) for k, v in items)
        separator = "; " if depth == 0 else ", "
        parts = [
            f"{k} {_compact(v, k, depth + 1)}" if not _leaf(v) else _labelled(k, v, depth) for k, v in items
        ]
        return separator.join(parts)
    if isinstance(value, list):
        inner = [_compact(item, key, depth + 1) for item in value]
        return ", ".join(f"({text})" if "," in text else text for text in inner)
    return _scalar(key, value) if depth == 0 or isinstance(value, bool) else str(value)


def _repeats(value: Any, key: str) -> bool:
    """A scalar that only repeats its key (``{"id": "id"}``); a nested value never does (and ``str``
    of one nested a thousand levels deep would not return)."""
    return not isinstance(value, Mapping | list) and str(value) == key


def _labelled(key: str, value: Any, depth: int) -> str:
    text = _scalar(key, value)
    return text if text.startswith((key, f"no {key}")) else f"{key} {text}"


def compact_value(value: Any, limit: int = _COMPACT_CHARS) -> str:
    """A decoded JSON value in a few readable words (keys, ids and amounts kept)."""
    return shorten(_compact(value), limit)


def compact_json(text: str, limit: int = _COMPACT_CHARS) -> str | None:
    """A JSON object or list in a few readable words (keys, ids and amounts kept), or None."""
    stripped = text.strip()
    if not stripped.startswith(("{", "[")):
        return None
    try:
        value = orjson.loads(stripped)
    except orjson.JSONDecodeError:
        return None
    return shorten(_compact(value), limit)
