"""What one tool output says, for the working memory: exit code, error, test counts, the file
lines it showed (and the definitions among them), a compact form of structured results.

Harness wrappers are removed first (mini-swe-agent's ``<returncode>``/``<output>``
tags and elision notes, OpenHands' ``[The command completed with exit code N.]``
and terminal escapes, SWE-agent's ``(Open file: ...)`` footer, our ``exit code: N``).
Memoized per (call, output) pair.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import islice

from ...._messages import Message
from ..._heuristics import RETURNCODE_TAG, error_line, looks_like_error, parse_exit_code
from ..._memo import run_memo
from ._calls import CallFacts
from ._code import Lines, View, definitions, grep_hits, line_ranges, numbered, numbered_positions
from ._text import Todo, compact_json, latest_todo, shorten

__all__ = [
    "OutputFacts",
    "Seen",
    "TestResult",
    "output_facts",
]

_TAGS = re.compile(r"<warning>.*?</warning>|</?(?:output|output_head|output_tail)>", re.S)  # mini-swe-agent
_ESCAPES = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\[\?2004[hl]")  # terminal escapes (OpenHands)
_FOOTERS = re.compile(  # OpenHands', SWE-agent's and our own last lines
    r"^(?:\[The command completed with exit code -?\d+\.\]|\(Current directory: .*\)|bash-\$\s*"
    r"|exit code: -?\d+)$",
    re.M,
)
_ELIDED = re.compile(r"<elided_chars>.*?</elided_chars>", re.S)
_OPEN_FILE = re.compile(r"^\(Open file: (.+?)\)$", re.M)
_HEADERS = (
    re.compile(r"^\[File: (.+?) \(\d+ lines total\)\]$", re.M),  # SWE-agent's window
    re.compile(r"^Here's the result of running `cat -n` on (.+?):$", re.M),  # OpenHands' editor view
    re.compile(r"^(\S+) \(lines \d+-\d+ of \d+\)$", re.M),  # our read_file
)
_EDITED_AT = re.compile(r"\(first at line (\d+)\)")
_PYTEST_COUNTS = re.compile(r"(\d+) (passed|failed|errors?|skipped|xfailed|xpassed|deselected)")
_PYTEST_SUMMARY = re.compile(r"\b\d+ (?:passed|failed|errors?)\b.* in [\d.]+s")
_UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in ", re.M)
_UNITTEST_END = re.compile(r"^(OK(?: \(.*\))?|FAILED \(.*\))\s*$", re.M)
_OTHER_SUMMARY = re.compile(r"^(?:Tests?:\s+.*total|test result: .*|(?:ok|FAIL)\s+\S+.*)$", re.M)
_FAILED_TEST = re.compile(r"^(?:FAILED|ERROR) (\S+::\S+)|^(?:FAIL|ERROR): (\w+ \([\w.]+\))", re.M)
_OUTCOME_CHARS = 100
_EDGE_CHARS = 400
_OUTCOME_LINES = 5
_WORDS = re.compile(r"[A-Za-z0-9_]{2,}")
_HEADER_HINTS = ("[File: ", "Here's the result of running", " (lines ")
_ERROR_CHARS = 160


@dataclass(frozen=True, slots=True)
class Seen:
    """Lines of a file an output showed, and the definitions among them."""

    path: str
    lines: Lines = ()
    defs: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class TestResult:
    summary: str  # "2 failed, 10 passed" / "Ran 12 tests: OK"
    failed: bool
    failures: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class OutputFacts:
    """One tool output as the working memory sees it."""

    code: int | None = None
    failed: bool = False
    error: str = ""  # the telling line of a failure
    outcome: str = ""  # one line of a success
    seen: tuple[Seen, ...] = ()
    open_file: str | None = None  # SWE-agent's open file after this call
    edited_line: int | None = None  # where an edit landed, when the tool says so
    test: TestResult | None = None
    todo: Todo | None = None
    compact: str = ""  # a structured result in a few words (lookups, actions)


# --------------------------------------------------------------------------- cleaning
def _denoise(text: str) -> str:
    if "<" in text:
        text = _TAGS.sub("", text)
    if "\x1b" in text or "[?2004" in text:
        text = _ESCAPES.sub("", text)
    if "exit code" in text or "(Current directory" in text or "bash-$" in text:
        text = _FOOTERS.sub("", text)
    return text.strip("\n")


def _clean(text: str) -> tuple[str, list[str], str | None]:
    """(cleaned text, lines before any elision, the SWE-agent open file)."""
    open_file = _OPEN_FILE.findall(text) if "(Open file: " in text else []
    if open_file:
        text = _OPEN_FILE.sub("", text)
    if "<returncode>" in text:
        text = RETURNCODE_TAG.sub("", text)
    if "<elided_chars>" in text:
        head = _denoise(_ELIDED.split(text, 1)[0]).splitlines()
        return _denoise(_ELIDED.sub("\n", text)), head, open_file[-1].strip() if open_file else None
    cleaned = _denoise(text)
    return cleaned, cleaned.splitlines(), open_file[-1].strip() if open_file else None


def _header_path(text: str) -> str | None:
    """The file a view's first lines name (SWE-agent's window, OpenHands' view, our read_file)."""
    top = text[:_EDGE_CHARS]
    if not any(hint in top for hint in _HEADER_HINTS):
        return None
    for header in _HEADERS:
        found = header.search(top)
        if found:
            return found.group(1).strip()
    return None


# --------------------------------------------------------------------------- file views
def _seen_one(path: str, lines: Sequence[str], head: Sequence[str], start: int | None) -> Seen | None:
    shown = numbered(lines)
    if not shown and start is not None:
        shown = numbered_positions(list(head), start)
    if not shown:
        return Seen(path)
    return Seen(path, line_ranges(shown), definitions(shown))


def _seen(view: View | None, text: str, head: list[str], header: str | None) -> tuple[Seen, ...]:
    path = header or (view.path if view is not None else None)
    lines = text.splitlines()
    if path:
        seen = _seen_one(path, lines, head, view.start if view is not None and not header else None)
        return (seen,) if seen is not None else ()
    if view is None:
        return ()
    hits = grep_hits(lines)
    return tuple(Seen(p, line_ranges(found), definitions(found)) for p, found in hits.items())


# --------------------------------------------------------------------------- tests
def _pytest(text: str) -> str | None:
    summaries = [line for line in text.splitlines() if _PYTEST_SUMMARY.search(line)]
    if not summaries:
        return None
    counts = _PYTEST_COUNTS.findall(summaries[-1])
    return ", ".join(f"{n} {word}" for n, word in counts)


def _unittest(text: str) -> str | None:
    ran = _UNITTEST_RAN.findall(text)
    if not ran:
        return None
    end = _UNITTEST_END.findall(text)
    return f"Ran {ran[-1]} tests: {end[-1] if end else 'no result line'}"


def test_result(text: str, code: int | None) -> TestResult | None:
    """Pass/fail counts of a test run (pytest, unittest/django, jest, go, cargo), if its output has them."""
    summary = _pytest(text) or _unittest(text)
    if summary is None:
        others = _OTHER_SUMMARY.findall(text)
        summary = shorten(others[-1], 80) if others else None
    if summary is None:
        return None
    failed = (code not in (None, 0)) or bool(re.search(r"\bfail|\berror", summary, re.I))
    failures = tuple(shorten(a or b, 90) for a, b in _FAILED_TEST.findall(text))[:3]
    return TestResult(summary, failed, failures)


# --------------------------------------------------------------------------- one output
def _outcome(text: str) -> str:
    """The last line that says something (a closing brace does not), among the last few."""
    for line in reversed(text.rstrip().rsplit("\n", _OUTCOME_LINES)):
        # The first of these "lines" is all the text above the last few: both tests stop early.
        if _WORDS.search(line) is not None and len(list(islice(filter(str.isalnum, line), 3))) == 3:
            return shorten(line, _OUTCOME_CHARS)
    return ""


def _compact_result(kind: str, text: str) -> str:
    if kind not in ("lookup", "action", "other"):
        return ""
    return compact_json(text) or shorten(" | ".join(text.splitlines()[:3]), 200)


@run_memo(8192)
def output_facts(call: CallFacts | None, message: Message) -> OutputFacts:
    """What a tool output says (see the module docstring)."""
    code = parse_exit_code(message.text)
    text, head, open_file = _clean(message.text)
    failed = looks_like_error(text, code)
    kind = call.kind if call is not None else "other"
    viewing = call is not None and kind in ("file", "shell", "search")
    header = _header_path(text) if viewing else None
    edited = _EDITED_AT.search(text) if kind == "file" else None
    return OutputFacts(
        code=code,
        failed=failed,
        error=shorten(error_line(text), _ERROR_CHARS) if failed else "",
        outcome="" if failed else _outcome(text),
        seen=_seen(call.view, text, head, header) if call is not None and viewing and not failed else (),
        open_file=open_file or (header if kind == "file" else None),
        edited_line=int(edited.group(1)) if edited else None,
        test=test_result(text, code) if call is not None and (call.test or kind == "shell") else None,
        todo=latest_todo([text]) if "[" in text else None,
        compact=_compact_result(kind, text),
    )
