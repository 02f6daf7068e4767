"""Hostile MCP stdio servers (round 24, docs/faults.md cases 43-47): the transport and the process.

The servers are ``tests/mcp_stdio_hostile.py`` (plain JSON-RPC: garbage on stdout, replies twice or
with another id, never initialized, a child that outlives it, SIGTERM ignored) and
``tests/mcp_hostile_server.py`` (the official SDK's ``MCPServer``). Every run must return (bounded),
tell the model what failed, and leave no process behind (checked by pid).
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from structlog.testing import capture_logs
from test_mcp import is_gone

from tiered_agent import Agent, ConfigurationError, MCPServerError, MCPStdioServer, StopReason
from tiered_agent._logging import _sdk_records_redacted
from tiered_agent._reaper import MAX_LINE
from tiered_agent._trace import MessageEvent, read_trace, register_secret
from tiered_agent.mcp._client import _StderrLog
from tiered_agent.testing import FunctionModel, calls, text

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
STDIO_SERVER = ROOT / "tests" / "mcp_stdio_hostile.py"
SDK_SERVER = ROOT / "tests" / "mcp_hostile_server.py"


def server(tmp_path: Path, mode: str, **kwargs: Any) -> MCPStdioServer:
    env = {
        "MCP_STDIO_MODE": mode,
        "MCP_STDIO_PID_FILE": str(tmp_path / "server.pid"),
        "MCP_STDIO_CHILD_FILE": str(tmp_path / "child.pid"),
    }
    options = {"tool_timeout_s": 5.0, "startup_timeout_s": 20.0, **kwargs}
    return MCPStdioServer("h", sys.executable, (str(STDIO_SERVER),), env=env, **options)


def pids(tmp_path: Path) -> list[int]:
    return [
        int((tmp_path / name).read_text())
        for name in ("server.pid", "child.pid")
        if (tmp_path / name).exists()
    ]


def tool_outputs(trace: Path) -> dict[str, str]:
    return {
        e.message.tool_call_id or "": e.message.content or ""
        for e in read_trace(trace)
        if isinstance(e, MessageEvent) and e.message.role == "tool"
    }


async def bad_then_good(tmp_path: Path, config: MCPStdioServer) -> dict[str, str]:
    """A run that calls the misbehaving ``echo bad``, then ``echo good``, then answers."""
    model = FunctionModel.scripted(
        [calls(("c1", "h__echo", {"text": "bad"})), calls(("c2", "h__echo", {"text": "good"})), text("done")]
    )
    with anyio.fail_after(120):
        result = await Agent(model, mcp_servers=[config], trace_dir=tmp_path / "traces").run("x")
    assert (result.stop_reason, result.output) == (StopReason.ANSWERED, "done")
    return tool_outputs(result.trace_path)


# ---------------------------------------------------------------- garbage on stdout
@pytest.mark.parametrize("mode", ["badutf8-before", "badutf8-between"])
async def test_bytes_that_are_not_utf8_on_stdout_are_skipped_like_any_line_that_is_not_json_rpc(
    tmp_path: Path, mode: str
) -> None:
    """Case 43: they killed the SDK's stdout reader: startup waited out its timeout, every later
    call timed out."""
    outputs = await bad_then_good(tmp_path, server(tmp_path, mode))
    assert outputs == {"c1": "bad", "c2": "good"}


@pytest.mark.parametrize("mode", ["banner-before", "partial-before", "banner-between", "partial-between"])
async def test_lines_that_are_not_json_rpc_are_skipped(tmp_path: Path, mode: str) -> None:
    """Held already: the SDK skips such a line (and logs it, see the redaction test below)."""
    outputs = await bad_then_good(tmp_path, server(tmp_path, mode))
    assert outputs == {"c1": "bad", "c2": "good"}


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["bigline-before", "bigline-between"])
async def test_a_50_mb_line_on_stdout_is_not_handed_to_the_sdk(tmp_path: Path, mode: str) -> None:
    """Case 44: the SDK joins a line's parts quadratically: over 10 s of CPU for 50 MB, so the
    server did not start within its timeout (here 20 s on a busy machine), or the calls timed out."""
    with capture_logs() as logs:
        outputs = await bad_then_good(tmp_path, server(tmp_path, mode))
    assert outputs == {"c1": "bad", "c2": "good"}
    notes = [e["line"] for e in logs if e["event"] == "mcp_server_stderr"]
    assert notes == [
        f"tiered-agent: the server wrote a stdout line of {50 * 1024 * 1024 + 1:,} bytes, over the "
        f"{MAX_LINE:,} an MCP message may be here; it was not read "
        "(no JSON-RPC id leads it, so no request was answered)"
    ]


@pytest.mark.slow
async def test_a_reply_over_16_mib_is_answered_as_an_error_for_its_call(tmp_path: Path) -> None:
    """Case 44: the model is told at once, and the next call is answered."""
    outputs = await bad_then_good(tmp_path, server(tmp_path, "huge-reply"))
    size = 20 * 1024 * 1024 + len(
        '{"jsonrpc": "2.0", "id": 2, "result": {"content": [{"type": "text", "text": ""}]}}\n'
    )
    assert outputs["c1"] == (
        f"Error: MCP server 'h' rejected the call: the server's reply is {size:,} bytes, over the "
        f"{MAX_LINE:,} a reply may be; it was not read"
    )
    assert outputs["c2"] == "good"


# ---------------------------------------------------------------- protocol
async def test_replies_twice_or_to_another_id_leave_the_run_going(tmp_path: Path) -> None:
    """Held already: extra replies are dropped; a reply to an id nobody asked for is too, and the
    call it should have answered times out, with the model told."""
    assert await bad_then_good(tmp_path / "a", server(tmp_path, "twice")) == {"c1": "bad", "c2": "good"}
    outputs = await bad_then_good(tmp_path / "b", server(tmp_path, "other-id", tool_timeout_s=2.0))
    assert outputs == {"c1": "Error: tool 'h__echo' timed out after 2 s and was stopped.", "c2": "good"}


@pytest.mark.parametrize(
    ("mode", "expected"),
    [
        ("no-init", r"^MCP server 'h' did not start within 2 s$"),
        ("exit-init", r"^MCP server 'h' exited during startup$"),
    ],
)
async def test_a_server_that_never_initializes_is_one_sentence(
    tmp_path: Path, mode: str, expected: str
) -> None:
    """Held already."""
    config = server(tmp_path, mode, startup_timeout_s=2.0)
    with anyio.fail_after(60), pytest.raises(MCPServerError, match=expected):
        await Agent(FunctionModel.scripted([]), mcp_servers=[config], trace_dir=tmp_path / "t").run("x")
    assert all(is_gone(pid) for pid in pids(tmp_path))


# ---------------------------------------------------------------- the process
async def test_a_child_the_server_forked_does_not_outlive_it(tmp_path: Path) -> None:
    """Case 45: the server exits when its stdin closes, before the SDK's kill; the child it forked
    (same process group) was left running, re-parented to init."""
    await bad_then_good(tmp_path, server(tmp_path, "fork"))
    server_pid, child_pid = pids(tmp_path)
    assert is_gone(server_pid) and is_gone(child_pid)


async def test_a_child_an_sdk_server_forked_does_not_outlive_it(tmp_path: Path) -> None:
    """Case 45 with the official SDK's server."""
    env = {"MCP_HOSTILE_CHILD_FILE": str(tmp_path / "child.pid")}
    config = MCPStdioServer("h", sys.executable, (str(SDK_SERVER),), env=env)
    model = FunctionModel.scripted([calls(("c1", "h__get_item", {"text": "x"})), text("done")])
    with anyio.fail_after(120):
        result = await Agent(model, mcp_servers=[config], trace_dir=tmp_path / "t").run("x")
    assert tool_outputs(result.trace_path) == {"c1": "x"}
    assert is_gone(int((tmp_path / "child.pid").read_text()))


async def test_a_server_that_ignores_sigterm_and_its_stdin_ends_with_the_run(tmp_path: Path) -> None:
    """Held already (now through the supervisor): bounded, and nothing left."""
    with anyio.fail_after(60):
        await bad_then_good(tmp_path, server(tmp_path, "stubborn"))
    [server_pid] = pids(tmp_path)
    assert is_gone(server_pid)


async def test_a_directory_as_the_command_says_so(tmp_path: Path) -> None:
    """Case 46: it said 'not executable'. A missing and a non-executable file held already."""
    (tmp_path / "plain").write_text("#!/bin/sh\n")
    expected = {
        str(tmp_path): "a directory",
        str(tmp_path / "plain"): "not executable",
        str(tmp_path / "missing"): "not found",
        "no-such-mcp-command-here": "not found",
    }
    for command, problem in expected.items():
        config = MCPStdioServer("h", command)
        with pytest.raises(ConfigurationError) as caught:
            await Agent(FunctionModel.scripted([]), mcp_servers=[config], trace_dir=tmp_path / "t").run("x")
        assert (
            str(caught.value) == f"MCP server 'h': command {command!r} is {problem}; fix it in the MCP config"
        )


# ---------------------------------------------------------------- stderr
def test_stderr_is_read_in_bounded_lines(tmp_path: Path) -> None:
    """Case 47: one stderr line of hundreds of MB was held whole in memory before it was logged."""
    stderr = _StderrLog("h")
    with capture_logs() as logs:
        stderr.writer.write("e" * 200_000 + "\nlast\n")
        stderr.close_writer()
        stderr._thread.join(30)
    lines = [e["line"] for e in logs if e["event"] == "mcp_server_stderr"]
    assert [len(line) for line in lines] == [65_536, 65_536, 65_536, 3_392, 4]
    assert stderr.tail[-1] == "last"


async def test_a_stderr_flood_neither_blocks_the_server_nor_the_run(tmp_path: Path) -> None:
    """Held already: 300 MB of stderr written while the server answers."""
    env = {"MCP_HOSTILE_STDERR_MB": "300"}
    config = MCPStdioServer("h", sys.executable, (str(SDK_SERVER),), env=env, tool_timeout_s=60.0)
    model = FunctionModel.scripted([calls(("c1", "h__get_item", {"text": "x"})), text("done")])
    with anyio.fail_after(120):
        result = await Agent(model, mcp_servers=[config], trace_dir=tmp_path / "t").run("x")
    assert tool_outputs(result.trace_path) == {"c1": "x"}


def test_sdk_records_at_debug_are_redacted_before_they_are_cut() -> None:
    """Case 47: at --log-level debug the SDK logged a stdout line it could not parse with its
    traceback, and pydantic kept the two ends of the line: 12 characters of a secret in the middle
    of it reached the console, which the redaction could no longer recognize."""
    from mcp.client.stdio import _parse_line

    secret = "tok-9f8e7d6c5b4a39281706"
    register_secret(secret)
    exc = _parse_line(f"stdout leak {secret} " + "x" * 100)
    assert isinstance(exc, ValueError)
    record = logging.LogRecord(
        "mcp.client.stdio",
        logging.ERROR,
        __file__,
        1,
        "Failed to parse %s",
        ("JSONRPC",),
        (type(exc), exc, None),
    )
    assert _sdk_records_redacted(record)
    assert record.getMessage() == (
        "Failed to parse JSONRPC: ValidationError: Invalid JSON: expected value at line 1 column 1: "
        f"'stdout leak [redacted] {'x' * 100}'"
    )
    assert record.exc_info is None and "tok-9f8e" not in logging.Formatter().format(record)
    assert "tok-9f8e" in str(exc) and secret not in str(exc)  # pydantic's own message, cut


_LIBRARY_USER = """
import sys, anyio
from pathlib import Path
from tiered_agent import Agent, MCPStdioServer
from tiered_agent.testing import FunctionModel, calls, text

server = MCPStdioServer("h", sys.executable, (sys.argv[1],), tool_timeout_s=5.0, env={
    "MCP_STDIO_MODE": "leak-before", "MCP_STDIO_TOKEN": "tok-9f8e7d6c5b4a39281706"})
model = FunctionModel.scripted([calls(("c1", "h__echo", {"text": "good"})), text("done")])
result = anyio.run(Agent(model, mcp_servers=[server], trace_dir=Path(sys.argv[2])).run, "x")
print(result.stop_reason.value, result.output)
"""


def test_a_library_user_without_logging_sees_the_sdk_record_redacted_on_one_line(tmp_path: Path) -> None:
    """Case 49: a program that never configures logging got the SDK's record of a stdout line it could
    not parse through Python's last-resort handler, traceback and all, with the first 12 characters of
    a token the server's ``env`` gave it."""
    args = [sys.executable, "-c", _LIBRARY_USER, str(STDIO_SERVER), str(tmp_path / "traces")]
    done = subprocess.run(
        args,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
    )
    assert (done.returncode, done.stdout.splitlines()[-1]) == (0, "answered done")
    assert "Traceback" not in done.stderr and "tok-9f8e" not in done.stderr
    assert "Failed to parse JSONRPC message from server: ValidationError: " in done.stderr
    assert "'stdout leak [redacted] xxxx" in done.stderr


_KILLED_RUNTIME = """
import sys, time, anyio
from pathlib import Path
from tiered_agent import Agent, MCPStdioServer
from tiered_agent.testing import FunctionModel, text

def model(request):
    time.sleep(120)
    return text("never")

server = MCPStdioServer("h", sys.executable, (sys.argv[1],), env={
    "MCP_STDIO_MODE": "stubborn", "MCP_STDIO_PID_FILE": sys.argv[2]})
anyio.run(Agent(FunctionModel(model), mcp_servers=[server], trace_dir=Path(sys.argv[3])).run, "x")
"""


def test_a_server_that_ignores_sigterm_and_its_stdin_dies_with_a_runtime_killed_by_kill_9(
    tmp_path: Path,
) -> None:
    """Case 45: with the runtime gone, nobody sends SIGTERM and nobody kills the group; a server
    that ignores the end of its stdin ran on forever. Its supervisor sees its parent die."""
    pid_file = tmp_path / "server.pid"
    args = [sys.executable, "-c", _KILLED_RUNTIME, str(STDIO_SERVER), str(pid_file), str(tmp_path / "t")]
    runtime = subprocess.Popen(args, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        deadline = time.monotonic() + 60
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        server_pid = int(pid_file.read_text())
    finally:
        runtime.kill()
        runtime.wait()
    deadline = time.monotonic() + 30  # the supervisor looks at its parent every second
    while not is_gone(server_pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    if not is_gone(server_pid):
        os.kill(server_pid, signal.SIGKILL)
        pytest.fail("the server outlived the runtime that started it")
