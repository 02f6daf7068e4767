"""Text at the boundaries: surrogates, terminal control codes, NUL bytes, non-UTF-8 input, and the
endpoint a resume names."""

from __future__ import annotations

import io
import json

import orjson
from rich.table import Table
from rich.text import Text

from tiered_agent._endpoint import resume_endpoint
from tiered_agent._terminal import TerminalConsole
from tiered_agent._text import clean_surrogates, escape_nul, json_terminal_safe, terminal_safe, undecodable

ATTACK = "title\x1b]0;pwned\x07 clear\x1b[2J back\rspace\x08 csi\x9b rtl\u202eexe.txt iso\u2066 ok\ttab\nline"


def test_terminal_safe_escapes_what_a_terminal_acts_on_and_keeps_the_rest() -> None:
    assert terminal_safe(ATTACK) == (
        "title\\x1b]0;pwned\\x07 clear\\x1b[2J back\\rspace\\x08 csi\\x9b rtl\\u202eexe.txt iso\\u2066"
        " ok\ttab\nline"
    )
    plain = "naïve café, 日本語, emoji 🙂, tab\tand newline\n"
    assert terminal_safe(plain) is plain
    assert terminal_safe("path \udcff") == "path \\udcff"  # a non-UTF-8 path stays printable


def test_the_console_escapes_strings_markup_and_text_objects() -> None:
    out = io.StringIO()
    console = TerminalConsole(
        file=out, force_terminal=True, width=200, color_system="standard", highlight=False
    )
    console.print(ATTACK, markup=False)
    console.print(f"[bold]{ATTACK}[/]")
    table = Table("cell")
    table.add_row(Text(ATTACK))  # a Text built elsewhere (trace show's tables) is escaped when rendered
    console.print(table)
    printed = out.getvalue()
    assert "\x1b]0;" not in printed and "\x07" not in printed and "\u202e" not in printed
    assert "\x1b[2J" not in printed and "\r" not in printed and "\x9b" not in printed
    assert printed.count("title\\x1b]0;pwned\\x07") == 2  # a Text drops BEL itself (rich), then escapes ESC
    assert printed.count("title\\x1b]0;pwned") == 3
    assert "\x1b[1m" in printed  # rich's own styling still reaches the terminal


def test_clean_surrogates_keeps_the_text_and_shows_the_odd_code_point() -> None:
    assert clean_surrogates("bad \ud800 surrogate") == "bad \\ud800 surrogate"
    assert clean_surrogates("bytes \udcff\udcfe") == "bytes \\udcff\\udcfe"
    text = "fine ✓"
    assert clean_surrogates(text) is text
    orjson.dumps(clean_surrogates("x\udfff"))  # now encodable


def test_undecodable_names_the_first_non_utf8_byte() -> None:
    assert undecodable("bad \udcff task") == "byte 0xff at character 5"
    assert undecodable("lone \ud800") == "U+D800 at character 6"
    assert undecodable("fine ✓") is None


def test_json_terminal_safe_is_the_same_json_value() -> None:
    value = {"answer": ATTACK, "n": [1, 2]}
    data = orjson.dumps(value)
    safe = json_terminal_safe(data)
    assert json.loads(safe) == value
    assert "\u202e".encode() not in safe and "\x9b".encode() not in safe and b"\x1b" not in safe


def test_escape_nul() -> None:
    assert escape_nul("a\x00b") == "a\\x00b"
    text = "no nul"
    assert escape_nul(text) is text


def test_the_resume_endpoint_is_the_command_lines_or_the_environments_never_the_traces() -> None:
    recorded = "http://collector.example/v1"
    env = {"OPENAI_API_BASE": "http://127.0.0.1:9/v1"}
    chosen = resume_endpoint(None, recorded, "openai/gpt-4o-mini", env)
    assert chosen.api_base is None  # litellm reads the environment itself
    assert chosen.described == "endpoint: http://127.0.0.1:9/v1 ($OPENAI_API_BASE)"
    assert chosen.note is not None and f"pass --api-base {recorded} to use it again" in chosen.note
    repeated = resume_endpoint(recorded, recorded, "openai/gpt-4o-mini", env)
    assert repeated.api_base == recorded and repeated.note is None
    assert repeated.described == f"endpoint: {recorded} (--api-base)"
    default = resume_endpoint(None, None, "anthropic/claude-sonnet-4-5", {})
    assert (
        default.described
        == "endpoint: the default of the provider of 'anthropic/claude-sonnet-4-5' (no --api-base given)"
    )
    keyed = resume_endpoint(None, "http://x.example/v1?api-key=SECRETkey0123456789", "openai/m", {})
    assert keyed.note is not None and "SECRETkey" not in keyed.note and "[redacted]" in keyed.note
