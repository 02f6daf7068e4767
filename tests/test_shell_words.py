"""The context steps' one shell lexer (``context/_shell.py``): what ``Dedup`` and the working memory
read of a command, each at its strictness, against the rules they read it by before sharing it."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.context._shell import line_words, unquote, words
from tiered_agent.context.dedup._shell import is_read_command

_ALPHABET = st.sampled_from("ab -./$`'\"\\;|&()<>\n\t2é{}")


def _expands_per_character(command: str) -> bool:
    """Dedup's rule as first written: ``$`` or a backquote outside single quotes, a character at a
    time (a backslash escapes the next character outside single quotes)."""
    quote, escaped = "", False
    for char in command:
        if escaped:
            escaped = False
        elif quote == "'":
            quote = "" if char == "'" else quote
        elif char == "\\":
            escaped = True
        elif char in "$`":
            return True
        elif char == '"':
            quote = "" if quote == '"' else '"'
        elif char == "'" and not quote:
            quote = "'"
    return False


@settings(max_examples=1500, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=30))
def test_an_expansion_is_found_in_the_pass_that_lexes(command: str) -> None:
    lexed = words(command)
    if lexed is not None:  # a command that does not lex is never a read, expansion or not
        assert lexed.expands == _expands_per_character(command)


def test_expansions_by_quoting() -> None:
    commands = ("cat $HOME", "echo '$x'", 'echo "$x"', r'echo "\$x"', r"echo \$x")
    assert [words(c).expands for c in commands] == [True, False, True, False, False]  # type: ignore[union-attr]
    assert words("echo \"it's\"'$y'").expands is False  # type: ignore[union-attr]
    assert words('echo "it\'s $y"').expands is True  # type: ignore[union-attr]
    assert words("cat `x`").expands is True  # type: ignore[union-attr]
    assert is_read_command("cat 'a$b'") and not is_read_command('cat "a$b"')


_PIECES_PER_MATCH = re.compile(r"""'([^']*)'|"((?:[^"\\]++|\\.)*+)"|\\(.)|([^'"\\]+)""")


def _memory_unquote(word: str) -> str:
    """The working memory's rule as first written: the last group of each match."""
    if not any(c in word for c in "'\"\\"):
        return word
    return "".join(m[m.lastindex or 0] for m in _PIECES_PER_MATCH.finditer(word))


@settings(max_examples=1000, deadline=None)
@given(st.text(alphabet=_ALPHABET, max_size=30))
def test_the_working_memory_keeps_double_quoted_backslashes(line: str) -> None:
    raw = re.findall(
        r"""\d*>&\d*-?|\d*>[>|]?|<|(?:[^\s'"\\;&|()<>]++|\\.|'[^']*'|"(?:[^"\\]++|\\.)*+")+|&&|\|\||;;|\|&|[;&|()]|['"]""",
        line,
    )
    separators = {";", "&&", "||", "|", "&", "(", ")", ";;", "|&"}
    assert line_words(line) == [w if w in separators else _memory_unquote(w) for w in raw]


def test_unquoting_at_both_strictnesses() -> None:
    assert unquote('"a\\"b"') == 'a"b' and unquote('"a\\"b"', posix=False) == 'a\\"b'
    assert unquote("'a b'\\ c\"d\"") == "a b cd" == unquote("'a b'\\ c\"d\"", posix=False)
    assert unquote("''") == "" and unquote("'") == ""
    assert line_words("grep -n 'x y' a.py 2>&1 | head >&2") == [
        "grep",
        "-n",
        "x y",
        "a.py",
        "2>&1",
        "|",
        "head",
        ">&2",
    ]
    assert line_words("echo 'open") == ["echo", "", "open"]
    assert line_words("echo x >| out.txt 2>|err") == ["echo", "x", ">|", "out.txt", "2>|", "err"]
    assert words("echo 'open") is None
    assert words("grep -n 'x y' a.py 2>&1") == words("grep -n x\\ y a.py 2>&1")
