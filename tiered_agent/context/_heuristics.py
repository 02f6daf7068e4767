"""Heuristics about command outputs shared by condensing (aging) and the working memory (summaries).

Where harnesses report a command's exit code (mini-swe-agent's ``<returncode>``, ``exit code: N``
lines, OpenHands' ``[The command completed with exit code N.]``), whether an output looks like an
error, and its most telling line. Pure functions of one string: a leaf module that imports nothing
of the package, so that building a prompt never loads the working-memory parser.
"""

from __future__ import annotations

import re

__all__ = ["RETURNCODE_TAG", "error_line", "exit_text", "looks_like_error", "parse_exit_code"]

RETURNCODE_TAG = re.compile(r"<returncode>\s*(-?\d+)\s*</returncode>")
_EXIT_TEXT = re.compile(
    r"\b(?:exit(?:ed)?(?:\s+with)?[\s_]*(?:code|status)|return[\s_]?code)\s*[:=]?\s*(-?\d+)", re.I
)
_ERROR_LINE = re.compile(r"^\s*(?:[\w.]*(?:Error|Exception)\b|(?:error|fatal|failed)\b)", re.I)
_EXCEPTION_LINE = re.compile(r"^[\w.]*(?:Error|Exception):", re.M)
_FIRST_LINE_ERROR = re.compile(r"^\s*(?:error|fatal|exception)\b", re.I)
_EDGE_CHARS = 400


def parse_exit_code(output: str) -> int | None:
    """The exit code reported in a command's output (``<returncode>N</returncode>``, ``exit code: N``),
    looked for where harnesses put it: the first and the last lines."""
    if "<returncode>" in output:
        tags = RETURNCODE_TAG.findall(output)
        if tags:
            return int(tags[-1])
    ends = output if len(output) <= 2 * _EDGE_CHARS else f"{output[:_EDGE_CHARS]}\n{output[-_EDGE_CHARS:]}"
    texts = _EXIT_TEXT.findall(ends)
    return int(texts[-1]) if texts else None


def exit_text(line: str) -> bool:
    """Whether a line is nothing but an exit code in words (``exit code: 1``, ``Exit status 0``)."""
    return _EXIT_TEXT.fullmatch(line.strip().rstrip(".")) is not None


def looks_like_error(output: str, exit_code: int | None = None) -> bool:
    """True for a failed command, a traceback, or an output that starts like an error."""
    if exit_code not in (None, 0):
        return True
    if "Traceback (most recent call last)" in output:
        return True
    if ("Error" in output or "Exception" in output) and _EXCEPTION_LINE.search(output):
        return True
    first = next((line for line in output.splitlines() if line.strip()), "")
    return bool(_FIRST_LINE_ERROR.match(first)) or "timed out" in first.lower()


def error_line(output: str) -> str:
    """The most telling line of an error output: the last error-looking line, else the last line
    that is not just the exit code."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    if lines and "timed out" in lines[0].lower():
        return lines[0]
    for line in reversed(lines):
        if _ERROR_LINE.match(line):
            return line
    telling = [line for line in lines if not (_EXIT_TEXT.search(line) or RETURNCODE_TAG.search(line))]
    return (telling or lines or [""])[-1]
