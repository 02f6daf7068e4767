"""Shell words: the one lexer the context steps read shell commands with.

Two readers read the commands an agent ran: ``Dedup`` (does a command only read?
:mod:`.dedup._shell`) and the working memory (what did it do to files?
:mod:`.summary.memory._shell`). Both split a command here, with one grammar of quoting: a word is
a run of *pieces*, each plain characters, single-quoted text (taken as is), double-quoted text or
an escaped character (:func:`unquote` removes the quoting). The grammar is read at two
strictnesses, because the readers must decide differently about a command a shell would refuse:

- :func:`words` (``Dedup``): the POSIX shell's words and operators over the whole command, exactly
  the tokens of :mod:`shlex` in POSIX mode with the shell's operators as punctuation (a property
  test); ``None`` when the command does not lex (an unclosed quote, a trailing escape), because
  unknown is never a read. It also tells whether the shell would expand something (``$`` or a
  backquote outside single quotes), found in the same pass over the pieces.
- :func:`line_words` (the working memory): one line at a time, never failing: a lone quote is a
  word of its own (its text empty), a file descriptor and its redirection are one word (``2>``,
  ``2>&1``, ``>&-``, ``>|``), double-quoted text keeps its backslashes (a path never holds one), any
  whitespace separates words. The working memory reads what it can of any text.

Runs of plain characters are matched whole (possessively), never one character per regex
iteration. Each reader memoizes its reading per command and run, so a command is lexed once per
run at each strictness.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

__all__ = [
    "LINE_SEPARATORS",
    "OPERATOR_CHARS",
    "Words",
    "heredoc_lines",
    "line_words",
    "simple_commands",
    "unquote",
    "words",
]

OPERATOR_CHARS = "();<>|&\n"  # what the POSIX lexer takes as punctuation (runs of it are one operator)
_QUOTING = re.compile(r"['\"\\]")  # what the lexers treat specially besides blanks and operators

# A word's pieces: single-quoted, double-quoted, an escaped character, plain (one group each).
_PIECES = re.compile(r"""'([^']*)'|"((?:[^"\\]++|\\.)*+)"|\\(.)|([^'"\\]+)""", re.S)
_DOUBLE_ESCAPE = re.compile(r'\\(["\\])')  # inside double quotes, the POSIX shell resolves \" and \\ only
_ESCAPES = re.compile(r"\\.", re.S)
_EXPANSIONS = frozenset("$`")

# --- the POSIX reading (whole command; blanks are space and tab)
_PLAIN_WORDS = re.compile(r"[();<>|&\n]+|[^();<>|&\n \t]+")  # operators and words, without quoting
# One token after blanks: an operator, or a word of plain runs, quoted texts and escaped characters
_LEXED = re.compile(
    r"[ \t]*(?:(?P<operator>[();<>|&\n]+)"
    r"""|(?P<word>(?:[^();<>|&\n \t'"\\]++|'[^']*'|"(?:[^"\\]++|\\.)*+"|\\.)+))""",
    re.S,
)
_BLANKS = re.compile(r"[ \t]*")
_HEREDOC = re.compile(r"<<-?\s*(['\"]?)([\w.-]+)\1")

# --- the lenient reading (one line; blanks are any whitespace)
LINE_SEPARATORS = frozenset({";", "&&", "||", "|", "&", "(", ")", ";;", "|&"})
_LINE_WORD = re.compile(
    r"""\d*>&\d*-?|\d*>[>|]?|<|(?:[^\s'"\\;&|()<>]++|\\.|'[^']*'|"(?:[^"\\]++|\\.)*+")+|&&|\|\||;;|\|&|[;&|()]"""
    r"""|['"]"""
)


def unquote(word: str, *, posix: bool = True) -> str:
    """``word`` without its quoting: quotes removed, escaped characters as themselves; inside double
    quotes ``\\"`` and ``\\\\`` are resolved (``posix``) or kept as written."""
    if not _QUOTING.search(word):
        return word
    return "".join(_text(piece, posix) for piece in _PIECES.findall(word))


def _text(piece: tuple[str, str, str, str], posix: bool) -> str:
    single, double, escaped, plain = piece
    if escaped:
        return escaped
    if plain:
        return plain
    if double:
        return _DOUBLE_ESCAPE.sub(r"\1", double) if posix else double
    return single


def _expands(piece: tuple[str, str, str, str]) -> bool:
    """Whether the shell expands something in a piece: ``$`` or a backquote, plain or double-quoted
    (not escaped)."""
    _, double, _, plain = piece
    if plain:
        return not _EXPANSIONS.isdisjoint(plain)
    return bool(double) and not _EXPANSIONS.isdisjoint(_ESCAPES.sub("", double))


@dataclass(frozen=True, slots=True)
class Words:
    """A command's POSIX words and operators (quoting removed), and whether the shell would expand
    something in it (parameter, arithmetic or command substitution)."""

    tokens: tuple[str, ...]
    expands: bool


def words(command: str) -> Words | None:
    """The command's words and operators as the POSIX shell lexes them (see the module docstring),
    None when it does not lex (an unclosed quote, a trailing escape)."""
    if not _QUOTING.search(command):  # most commands: words and operators only
        return Words(tuple(_PLAIN_WORDS.findall(command)), not _EXPANSIONS.isdisjoint(command))
    tokens: list[str] = []
    expands = False
    position, end = 0, len(command)
    while position < end:
        found = _LEXED.match(command, position)
        if found is None:  # at the end, or at a quote or escape that does not close
            return Words(tuple(tokens), expands) if _BLANKS.fullmatch(command, position) else None
        operator, word = found.group("operator", "word")
        if operator is not None:
            tokens.append(operator)
        elif not _QUOTING.search(word):
            tokens.append(word)
            expands = expands or not _EXPANSIONS.isdisjoint(word)
        else:
            pieces = _PIECES.findall(word)
            tokens.append("".join(_text(piece, True) for piece in pieces))
            expands = expands or any(map(_expands, pieces))
        position = found.end()
    return Words(tuple(tokens), expands)


def line_words(line: str) -> list[str]:
    """One line's words (quoting removed, double-quoted backslashes kept) and operators, leniently
    (see the module docstring); what matches nothing (whitespace, a trailing backslash) is skipped."""
    return [
        word if word in LINE_SEPARATORS else unquote(word, posix=False) for word in _LINE_WORD.findall(line)
    ]


def heredoc_lines(command: str) -> Iterator[tuple[str, list[str] | None]]:
    """Each line of ``command`` without the here-document it opens, and that document's lines
    (None when it opens none). The document ends at its marker alone on a line (``<<-``: after
    leading tabs) or at the end of the command."""
    lines = command.splitlines()
    i = 0
    while i < len(lines):
        line, i = lines[i], i + 1
        start = _HEREDOC.search(line)
        if start is None:
            yield line, None
            continue
        end, strip = start.group(2), line[start.start() + 2 : start.start() + 3] == "-"
        body: list[str] = []
        while i < len(lines) and (lines[i].lstrip("\t") if strip else lines[i]).rstrip() != end:
            body.append(lines[i])
            i += 1
        i += 1  # the end marker
        yield line[: start.start()] + line[start.end() :], body


def simple_commands(line: list[str]) -> Iterator[list[str]]:
    """The simple commands of one line's words (:func:`line_words`): the runs between
    :data:`LINE_SEPARATORS`, empty ones left out."""
    current: list[str] = []
    for word in line:
        if word in LINE_SEPARATORS:
            if current:
                yield current
            current = []
        else:
            current.append(word)
    if current:
        yield current
