"""The JSONL trace: every event round-trips, secrets never land, damage is reported precisely."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import structlog
from hypothesis import given
from hypothesis import strategies as st

from tiered_agent import Message, ToolCall, TraceFormatError, Usage
from tiered_agent._trace import (
    REDACTED,
    SCHEMA_VERSION,
    ErrorEvent,
    MessageEvent,
    ModelRequest,
    ModelResponse,
    RetrievalEvent,
    RunEnded,
    RunStarted,
    SummaryEvent,
    ToolResult,
    TraceWriter,
    load_history,
    read_trace,
    redact,
)

EVENTS = [
    RunStarted("r1", "openai/gpt-4o", "task", {"context": {"name": "tiered"}}, [{"type": "function"}], 1.5),
    MessageEvent(Message("system", "sys")),
    MessageEvent(Message("user", "task")),
    MessageEvent(Message("assistant", None, (ToolCall("c1", "read_file", '{"path": "a"}'),), iteration=1)),
    MessageEvent(Message("tool", "x" * 10_000, tool_call_id="c1", name="read_file", iteration=1)),
    ModelRequest(1, 3, 120, 130, 120, {"truncated_outputs": 0}),
    ModelResponse(1, Usage(100, 20, 64, 1, 0.001), "gpt-4o", "tool_calls", 0.5, 2),
    ToolResult(1, "c1", "read_file", False, 0.01, 10_000, None, None),
    ErrorEvent(2, "empty_reply", "nothing"),
    SummaryEvent(1, 5, "summary", None, 0, 0, 10),
    RetrievalEvent(3, {"tool_call_id": "c1"}, 1, 1, 2),
    RunEnded("answered", "done", 3, Usage(300, 60, 64, 3, None), 400, 900, None),
]


def test_every_event_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        for event in EVENTS:
            writer.write(event)
    assert read_trace(path) == EVENTS
    lines = path.read_bytes().splitlines()
    assert len(lines) == len(EVENTS)
    assert all(orjson.loads(line)["v"] == SCHEMA_VERSION for line in lines)
    history = load_history(path)
    assert [m.role for m in history] == ["system", "user", "assistant", "tool"]
    assert history[3].content == "x" * 10_000


def test_writer_appends_only_at_flush(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    writer = TraceWriter(path)
    assert not path.exists()  # no side effect before open()
    writer.open()
    writer.write(EVENTS[1])
    assert path.read_bytes() == b""
    writer.flush()
    assert len(path.read_bytes().splitlines()) == 1
    writer.close()


def test_api_keys_and_authorization_headers_are_redacted(tmp_path: Path) -> None:
    secret = "sk-abcdefghijklmnopqrstuvwx"
    config = {
        "api_key": secret,
        "headers": {"Authorization": f"Bearer {secret}", "X-Other": "fine"},
        "nested": [{"openai_api_key": "value"}],
    }
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.write(RunStarted("r", "m", f"use key {secret} please", config))
    text = path.read_text()
    assert secret not in text and "Bearer sk" not in text
    started = read_trace(path)[0]
    assert isinstance(started, RunStarted)
    assert started.config["headers"] == {"Authorization": "[redacted]", "X-Other": "fine"}
    assert started.task == "use key [redacted] please"
    assert redact({"max_tokens": 5, "prompt_tokens": 3}) == {"max_tokens": 5, "prompt_tokens": 3}


def test_torn_last_line_is_skipped_but_a_corrupt_middle_line_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.write(EVENTS[1])
        writer.write(EVENTS[2])
    with path.open("ab") as f:
        f.write(b'{"v": 1, "type": "mess')  # a crash mid-write
    assert len(read_trace(path)) == 2
    lines = path.read_bytes().splitlines()
    path.write_bytes(b"\n".join([lines[0], b"not json", lines[1]]) + b"\n")
    with pytest.raises(TraceFormatError, match=r"t\.jsonl:2:"):
        read_trace(path)


def test_unknown_schema_version_and_event_type_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    path.write_bytes(b'{"v": 99, "type": "message"}\n{"v": 1, "type": "run_end"}\n')
    with pytest.raises(TraceFormatError, match="schema version 99"):
        read_trace(path)
    path.write_bytes(b'{"v": 1, "type": "mystery"}\n{"v": 1, "type": "run_end"}\n')
    with pytest.raises(TraceFormatError, match="unknown event type 'mystery'"):
        read_trace(path)


# ---------------------------------------------------------------- torn lines, full disks
TORN = b'{"v": 1, "type": "message", "message": {"role": "tool", "cont'


def test_appending_to_a_torn_trace_moves_the_torn_tail_aside_first(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.write(EVENTS[1])
        writer.write(EVENTS[2])
    with path.open("ab") as f:
        f.write(TORN)  # a kill mid-write
    writer = TraceWriter(path).open()
    writer.write(EVENTS[3])
    writer.close()
    assert read_trace(path) == [EVENTS[1], EVENTS[2], EVENTS[3]]  # was: TraceFormatError at line 3
    assert (tmp_path / "t.jsonl.torn").read_bytes() == TORN  # kept, not dropped
    assert writer.torn == tmp_path / "t.jsonl.torn"
    with path.open("ab") as f:  # a second torn tail, this time a complete but unreadable line
        f.write(b"not json\n")
    TraceWriter(path).open().close()
    assert (tmp_path / "t.jsonl.2.torn").read_bytes() == b"not json\n"
    assert read_trace(path) == [EVENTS[1], EVENTS[2], EVENTS[3]]


def test_a_clean_trace_is_left_alone(tmp_path: Path) -> None:
    from tiered_agent._trace import move_torn_tail

    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.write(EVENTS[1])
    before = path.read_bytes()
    assert move_torn_tail(path) is None and path.read_bytes() == before
    assert move_torn_tail(tmp_path / "absent.jsonl") is None
    assert list(tmp_path.iterdir()) == [path]


def test_the_torn_line_warning_is_logged_once_per_file_state(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.write(EVENTS[1])
    with path.open("ab") as f:
        f.write(TORN)
    with structlog.testing.capture_logs() as logs:
        for _ in range(5):
            read_trace(path)
            load_history(path)
    assert [e["event"] for e in logs] == ["trace.torn_last_line"]


_FULL_DISK = """
import resource, sys
from pathlib import Path
from tiered_agent._messages import Message
from tiered_agent._trace import MessageEvent, TraceWriter, read_trace
from tiered_agent._errors import TraceWriteError
path = Path(sys.argv[1])
writer = TraceWriter(path).open()
writer.write(MessageEvent(Message("user", "small")))
writer.flush()
resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))  # the disk is full past 4 KB
writer.write(MessageEvent(Message("tool", "x" * 10_000)))
try:
    writer.flush()
except TraceWriteError as exc:
    print("raised:", exc)
writer.write(MessageEvent(Message("user", "the end")))
writer.close()  # never raises
print("events:", [e.message.content for e in read_trace(path)])
print("ends with a newline:", path.read_bytes().endswith(b"\\n"))
"""


def test_a_failed_write_is_cut_back_to_the_last_complete_line_and_raised_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    path = tmp_path / "t.jsonl"
    proc = subprocess.run(
        [sys.executable, "-c", _FULL_DISK, str(path)], capture_output=True, text=True, timeout=60, check=False
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    assert proc.stdout.splitlines() == [
        f"raised: cannot write the trace {path}: File too large; "
        "it keeps every event written before this one",
        "events: ['small', 'the end']",
        "ends with a newline: True",
    ]


# ---------------------------------------------------------------- secrets
def test_secret_looking_environment_names() -> None:
    from tiered_agent._trace import is_secret_name

    secret = ["OPENAI_API_KEY", "GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD", "GOOGLE_CREDENTIALS"]
    secret += [
        "SLACK_BOT_TOKEN",
        "HF_TOKEN",
        "NPM_AUTH",
        "PGPASSWORD",
        "SMTP_PASS",
        "MYSQL_PWD",
        "GITHUB_PAT",
        "SENTRY_DSN",
    ]
    plain = ["PATH", "HOME", "PWD", "OLDPWD", "SSH_AUTH_SOCK", "TIKTOKEN_CACHE_DIR", "TOKENIZERS_PARALLELISM"]
    plain += ["LANG", "KEYBOARD_LAYOUT", "SHELL", "TERM"]
    assert [n for n in secret if not is_secret_name(n)] == []
    assert [n for n in plain if is_secret_name(n)] == []


def test_environment_secrets_and_registered_keys_are_redacted_everywhere(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from tiered_agent._trace import register_secret

    monkeypatch.setenv("GITHUB_TOKEN", "ghp_abcdefghij0123")
    monkeypatch.setenv("DB_PASSWORD", "correct horse")
    monkeypatch.setenv("DEBUG_TOKEN", "1")  # too short to mean anything: left alone
    monkeypatch.setenv("BUILD_LABEL", "ghp_visible_value")
    register_secret("my-provider-key-42")
    text = "token ghp_abcdefghij0123, pw correct horse, key my-provider-key-42, 1, ghp_visible_value"
    assert redact(text) == "token [redacted], pw [redacted], key [redacted], 1, ghp_visible_value"
    message = Message(
        "assistant",
        "see correct horse",
        (ToolCall("c1", "run", '{"cmd": "login correct horse"}'),),
        iteration=3,
    )
    assert redact(message) == Message(
        "assistant", "see [redacted]", (ToolCall("c1", "run", '{"cmd": "login [redacted]"}'),), iteration=3
    )
    clean = Message("tool", "nothing here", tool_call_id="c1")
    assert redact(clean) is clean


def test_keys_in_urls_are_redacted() -> None:
    assert redact("at https://h.example/v1?api-key=abc123&x=1 failed") == (
        "at https://h.example/v1?api-key=[redacted]&x=1 failed"
    )
    assert redact("GET /x?key=AIzaSyA1&token=t0k3n") == "GET /x?key=[redacted]&token=[redacted]"
    assert redact("postgres://admin:s3cret@db:5432/app") == "postgres://[redacted]@db:5432/app"
    assert (
        redact("see https://example.com/a?page=2 and a@b.c") == "see https://example.com/a?page=2 and a@b.c"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "key:\n-----BEGIN PGP PRIVATE KEY BLOCK-----\n\nlQcYBGlXBg0BEAC0u6dN\n=abcd\n"
            "-----END PGP PRIVATE KEY BLOCK-----\nimported",
            "key:\n-----BEGIN PGP PRIVATE KEY BLOCK-----[redacted]"
            "-----END PGP PRIVATE KEY BLOCK-----\nimported",
        ),
        (
            "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA\n-----END RSA PRIVATE KEY-----",
            "-----BEGIN RSA PRIVATE KEY-----[redacted]-----END RSA PRIVATE KEY-----",
        ),
        (  # cut short (``head -5``): everything after BEGIN goes
            "$ head -3 id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXkt\nAAAAABG5v",
            "$ head -3 id_ed25519\n-----BEGIN OPENSSH PRIVATE KEY-----[redacted]",
        ),
        (  # public material stays
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
            "-----BEGIN PUBLIC KEY-----\nMIIBIjANBg\n-----END PUBLIC KEY-----",
        ),
    ],
)
def test_private_key_blocks_are_redacted_between_their_markers(text: str, expected: str) -> None:
    """A tool output that prints a private key (``cat ~/.ssh/id_rsa``, a password manager's export)
    reaches neither the model nor the trace; its markers say what was there."""
    assert redact(text) == expected
    assert redact(Message("tool", text, tool_call_id="c1")).content == expected


@pytest.mark.parametrize(
    "token",
    [
        "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8",
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnopqrstuvwxyz",
        "xoxb-1234567890-abcdefghijklmnop",
        "AKIAIOSFODNN7EXAMPLE",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
        "glpat-abcdefghij0123456789",
    ],
)
def test_tokens_of_published_shapes_are_redacted(token: str) -> None:
    """A token printed by a tool (``env``, ``cat .npmrc``, ``git remote -v``) is redacted by its shape."""
    assert redact(f"export TOKEN_VALUE={token} # set") == f"export TOKEN_VALUE={REDACTED} # set"


@pytest.mark.parametrize(
    "text", ["ghp_short", "AKIA is a prefix", "the AIza prefix alone", "xoxb-123", "glpat-short", "ASIAN"]
)
def test_words_that_only_begin_like_a_token_stay(text: str) -> None:
    assert redact(text) == text


def _deep_at_by_hand(text: str) -> int:
    """Where ``text`` opens its 256th level, read one character at a time."""
    depth, in_string, escaped = 0, False, False
    for at, char in enumerate(text):
        if in_string:
            escaped, in_string = (not escaped and char == "\\"), escaped or char != '"'
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > 255:
                return at
        elif char in "]}":
            depth -= 1
    return 0


@given(
    st.lists(st.sampled_from(['"', "\\", "[", "]", "{", "}", "a", " ", '\\"', "\\\\", "[" * 40]), max_size=80)
)
def test_where_a_value_nests_too_deep_is_found_as_by_hand(pieces: list[str]) -> None:
    """The depth refusal's position (``_trace._too_deep_at``, which visits only the characters that
    open, close or escape) is the one a reading of every character finds, strings and escapes
    included."""
    from tiered_agent._trace import _too_deep_at

    text = "".join(pieces)
    assert _too_deep_at(text) == _deep_at_by_hand(text)
