"""The fast redaction returns exactly what the plain one did, on a corpus and on random texts.

``reference`` below is the redaction as it was before it was made fast (every pattern applied with
``pattern.sub`` over the whole text, the environment read on every call); the current ``redact``
must agree with it on every input, including secrets inside megabytes of output.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent import _trace
from tiered_agent._messages import Message, ToolCall
from tiered_agent._scrub import CleanTexts, sub_around, sub_at
from tiered_agent._trace import REDACTED, redact, register_secret, remembering_clean_texts

ENV_SECRET = "envsecretvalue-0123456789"
REGISTERED = "registered-key-abcdef"


def reference(value: Any) -> Any:
    values = {
        v for n, v in os.environ.items() if len(v) >= _trace.MIN_SECRET_CHARS and _trace.is_secret_name(n)
    }
    ordered = tuple(sorted(values | _trace._registered, key=lambda v: (-len(v), v)))
    pattern = re.compile("|".join(re.escape(v) for v in ordered)) if ordered else None
    return _reference(value, pattern)


def _reference(value: Any, secrets: re.Pattern[str] | None) -> Any:
    if isinstance(value, str):
        return _reference_text(value, secrets)
    if isinstance(value, dict):
        return {
            k: REDACTED
            if isinstance(k, str) and _trace._SECRET_KEY.search(k) and v
            else _reference(v, secrets)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [_reference(v, secrets) for v in value]
    if isinstance(value, Message):
        content = None if value.content is None else _reference_text(value.content, secrets)
        calls = tuple(ToolCall(c.id, c.name, _reference_text(c.arguments, secrets)) for c in value.tool_calls)
        return Message(value.role, content, calls, value.tool_call_id, value.name, value.iteration)
    return value


def _reference_text(text: str, secrets: re.Pattern[str] | None) -> str:
    if secrets is not None:
        text = secrets.sub(REDACTED, text)
    text = _trace._SECRET_VALUE.sub(REDACTED, text)
    text = _trace._PRIVATE_KEY.sub(_trace.private_key_redacted, text)
    if "=" in text:
        text = _trace._URL_QUERY_SECRET.sub(rf"\1{REDACTED}", text)
    if "@" in text:
        text = _trace._URL_USERINFO.sub(rf"\1{REDACTED}@", text)
    return text


@pytest.fixture(autouse=True)
def secrets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_SERVICE_API_KEY", ENV_SECRET)
    monkeypatch.setattr(_trace, "_registered", {REGISTERED})


FILLER = "".join(f"    x_{i} = compute(a={i}, b='task-{i}')  # see docs at line {i}\n" for i in range(25_000))
CASES = [
    "",
    "nothing here",
    f"key={ENV_SECRET} and {REGISTERED}",
    "Authorization: Bearer abcdefgh.ijkl-mnop",
    "Bearer\n   abcdefgh12345678 spans a line",
    "Bearer short",
    "sk-abcdefghijklmnop sk-ant-abcdefghijklmnopqr xsk-abcdefghijklmnop task-abcdefghijklmnop",
    "_sk-abcdefghijklmnop Ksk-abcdefghijklmnop é sk-abcdefghijklmnop",
    "Bearer sk-abcdefghijklmnopqrst overlap",
    "https://user:pass@host/x git+ssh://me:pw@github.com/a ftp://anon@ftp.example",
    "\u212aelvin://u:p@host and \u017fcheme://a:b@h and 9x://a:b@c and x.y://u@h",
    "http://example.com/a?api-key=XYZ&token=abc;sig=123#frag &key=short ?password='q'",
    "line one\n@ at start\nhttps://a:b@c\nno scheme :// here @ there\n://x@y",
    "mail me at someone@example.com, not a url",
    FILLER,
    FILLER[:400_000] + f"token={ENV_SECRET}&x\nhttps://admin:hunter2@db.internal/\n" + FILLER[400_000:],
    "sk-" + "a" * 2_000_000 + " Bearer " + "b" * 50,
    f"{FILLER}Bearer abcdefgh12345678\n{REGISTERED}\nsk-{'z' * 30}",
]


@pytest.mark.parametrize("index", range(len(CASES)))
def test_the_same_as_before_on_the_corpus(index: int) -> None:
    text = CASES[index]
    assert redact(text) == reference(text)
    with remembering_clean_texts():
        assert redact(text) == reference(text)
        assert redact(text) == reference(text)  # again: a clean text remembered, or scanned anew


def test_secrets_inside_a_large_output_are_redacted() -> None:
    text = CASES[15]
    out = redact(text)
    assert ENV_SECRET not in out and "hunter2" not in out
    assert out.count(REDACTED) == 2 and len(out) < len(text)


def test_structures_and_messages_match_the_reference() -> None:
    value = {
        "api_key": "sk-zzzzzzzzzzzzzzzz",
        "nested": [1, 2.5, None, True, ("a", f"b {ENV_SECRET}")],
        "iterations": list(range(300)),
        "empty": [],
        "tuple_of_numbers": (1, 2),
        "message": Message("tool", CASES[15], tool_call_id="c1", name="bash", iteration=3),
        "call": Message("assistant", None, (ToolCall("c2", "f", f'{{"k": "{REGISTERED}"}}'),), iteration=4),
    }
    assert redact(value) == reference(value)


@pytest.fixture
def run_scope() -> Iterator[CleanTexts]:
    with remembering_clean_texts() as clean:
        yield clean


def test_a_remembered_clean_text_is_scanned_again_for_a_new_secret(
    monkeypatch: pytest.MonkeyPatch, run_scope: CleanTexts
) -> None:
    text = "x" * 5_000 + " later-secret-value " + "y" * 5_000
    assert redact(text) is text  # clean, remembered
    monkeypatch.setenv("OTHER_TOKEN", "later-secret-value")
    assert redact(text) == reference(text) == text.replace("later-secret-value", REDACTED)
    register_secret("y" * 8)
    try:
        assert redact(text) == reference(text)
    finally:
        _trace._registered.discard("y" * 8)


PIECES = [
    "sk-",
    "sk-ant-",
    "Bearer",
    " ",
    "\n",
    "\t",
    "://",
    "@",
    "=",
    "?token=",
    "&api_key=",
    ";sig=",
    "#",
    "abcdefgh",
    "0123456789ab",
    "-",
    "_",
    ".",
    "+",
    "/",
    "'",
    "<",
    "\u212a",
    "\u017f",
    "é",
    "x",
    "http",
    ENV_SECRET[:10],
    ENV_SECRET,
    REGISTERED,
]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=60), st.integers(0, 3))
def test_random_texts_match_the_reference(pieces: list[str], repeat: int) -> None:
    text = "".join(pieces) * (1 + repeat * 400)  # also well past the remembered-text threshold
    assert redact(text) == reference(text)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40))
def test_the_fast_substitutions_equal_re_sub(pieces: list[str]) -> None:
    text = "".join(pieces)
    value = _trace._SECRET_VALUE
    assert sub_at(value, ("Bearer", "sk-"), "<X>", text) == value.sub("<X>", text)
    userinfo = _trace._URL_USERINFO
    fast = sub_around(
        userinfo, "://", r"\1<X>@", text, lead=_trace._SCHEME_CHAR, follow=_trace._USERINFO_REST
    )
    assert fast == userinfo.sub(r"\1<X>@", text)


def test_clean_texts_are_remembered_by_the_run_at_work_only() -> None:
    text = "z" * 5_000
    redact(text)  # outside any run: nothing remembered anywhere
    with remembering_clean_texts() as first:
        assert redact(text) is text
        secrets = _trace._secrets_of(_trace._secret_values())
        assert first.known(text, secrets)
        with remembering_clean_texts() as second:  # another run (a batch's neighbour): its own memory
            assert not second.known(text, secrets)
    assert _trace._CLEAN.get() is None


def test_clean_texts_are_bounded_and_keyed_by_identity() -> None:
    memo = CleanTexts(max_texts=2, max_chars=100)
    a, b, c = "a" * 40, "b" * 40, "c" * 40
    key = object()
    for text in (a, b, c):
        memo.add(text, key)
    assert not memo.known(a, key) and memo.known(b, key) and memo.known(c, key)
    assert not memo.known(b, object())
    assert not memo.known("".join(["b"] * 40), key)  # equal, but another object
    memo.add("d" * 90, key)
    assert not memo.known(b, key) and not memo.known(c, key)
