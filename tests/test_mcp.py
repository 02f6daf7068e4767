"""MCP tool servers through full agent runs: a real SDK server over stdio and streamable HTTP.

The server is tests/mcp_test_server.py (the SDK's ``MCPServer``). Agent runs use
``FunctionModel`` (no litellm); the CLI test drives ``tiered-agent run --mcp-config
examples/mcp.json`` as a subprocess against examples/fake_model.py, exactly as the
README shows.
"""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)
from structlog.testing import capture_logs

from tiered_agent import (
    Agent,
    AuthenticationError,
    ConfigurationError,
    MCPHttpServer,
    MCPServerError,
    MCPSseServer,
    MCPStdioServer,
    StopReason,
    ToolError,
    load_mcp_config,
)
from tiered_agent._trace import MessageEvent, RunEnded, RunStarted, ToolResult, read_trace
from tiered_agent.mcp import render_result, tool_name
from tiered_agent.testing import AgentRequest, FunctionModel, calls, text

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[1]
SERVER = ROOT / "tests" / "mcp_test_server.py"
PNG_BYTES = len(
    base64.b64decode(
        "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
    )
)


# ---------------------------------------------------------------- helpers
def stdio_server(tmp_path: Path, name: str = "test", **kwargs: Any) -> MCPStdioServer:
    env = {
        "MCP_TEST_CALL_LOG": str(tmp_path / "calls.log"),
        "MCP_TEST_PID_FILE": str(tmp_path / f"{name}.pid"),
        "SECRET_TOKEN": "s3cr3t-env-value",
    }
    return MCPStdioServer(name, sys.executable, (str(SERVER),), env=env, **kwargs)


def server_calls(tmp_path: Path) -> Counter[str]:
    log = tmp_path / "calls.log"
    return Counter(log.read_text().split()) if log.exists() else Counter()


def is_gone(pid: int) -> bool:
    """True when no process (not even a zombie) has this pid."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def tool_outputs(trace: Path) -> dict[str, str]:
    return {
        e.message.tool_call_id or "": e.message.content or ""
        for e in read_trace(trace)
        if isinstance(e, MessageEvent) and e.message.role == "tool"
    }


def agent(tmp_path: Path, model: FunctionModel, servers: list[Any]) -> Agent:
    return Agent(model, mcp_servers=servers, trace_dir=tmp_path / "traces")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, proc: subprocess.Popen[bytes], timeout_s: float = 30.0) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"server exited early: {proc.stderr.read() if proc.stderr else b''!r}")
        with socket.socket() as sock:
            if sock.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError(f"nothing listens on 127.0.0.1:{port} after {timeout_s} s")


@pytest.fixture
def background() -> Iterator[Callable[..., subprocess.Popen[bytes]]]:
    """Start processes that are terminated (and waited for) after the test."""
    started: list[subprocess.Popen[bytes]] = []

    def start(*args: str, port: int) -> subprocess.Popen[bytes]:
        proc = subprocess.Popen(
            [sys.executable, *args], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
        )
        started.append(proc)
        wait_for_port(port, proc)
        return proc

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(timeout=10)


# ---------------------------------------------------------------- a full run over stdio
async def test_stdio_server_tools_in_a_full_run(tmp_path: Path) -> None:
    model = FunctionModel.scripted(
        [
            calls(("c1", "test__add", {"a": 2, "b": 3}), ("c2", "test__pixel", {}), ("c3", "test__pid", {})),
            calls(
                ("c4", "test__add", {"a": 2, "b": 3}),  # identical read-only call: served from the cache
                ("c5", "test__add", {"a": "x"}),  # invalid: never reaches the server
                ("c6", "test__fail", {"reason": "no"}),  # an isError result
            ),
            calls(("c7", "test__shout_text", {"text": "hi"}), ("c8", "test__sleep", {"seconds": 60})),
            calls(("c9", "test__lines", {"n": 40_000})),  # 1.04 MB: capped, spilled, truncated in the prompt
            calls(("c10", "context_retrieve", {"tool_call_id": "c9"})),
            text("done"),
        ]
    )
    result = await agent(tmp_path, model, [stdio_server(tmp_path, tool_timeout_s=2.0)]).run("use the tools")

    assert result.stop_reason is StopReason.ANSWERED and result.output == "done"
    offered = {t["function"]["name"]: t["function"] for t in model.requests[0].tools}
    assert set(offered) == {  # context_retrieve's schema comes once something is hidden (tiered)
        *(f"test__{n}" for n in ("add", "shout_text", "pixel", "fail", "pid", "lines", "sleep", "header")),
    }
    assert offered["test__add"]["description"] == "Add two integers."
    assert offered["test__add"]["parameters"]["properties"]["a"]["type"] == "integer"
    outputs = tool_outputs(result.trace_path)
    assert outputs["c1"] == "5"
    assert outputs["c2"] == f"[image: image/png, {PNG_BYTES} bytes, not shown]"
    assert outputs["c4"].startswith("[already called in iteration 1 (tool_call_id=c1)") and outputs[
        "c4"
    ].endswith("\n5")
    assert outputs["c5"] == (
        "Error: invalid arguments for tool 'test__add':\n"
        "- (arguments): 'b' is a required property\n"
        "- a: 'x' is not of type 'integer'\n"
        "Expected parameters: a (required), b (required)."
    )
    assert outputs["c6"] == "Error: Error executing tool fail: refused: no"
    assert outputs["c7"] == "HI"
    assert outputs["c8"] == "Error: tool 'test__sleep' timed out after 2 s and was stopped."
    full = "\n".join(f"line {i:06d} of the output" for i in range(40_000)).encode()
    spilled = result.trace_path.with_suffix(".outputs") / "c9.out"
    assert spilled.read_bytes() == full  # the whole output, next to the trace
    assert outputs["c9"].startswith("line 000000") and outputs["c9"].endswith(
        f"[output capped: showing the first 1000000 of {len(full)} bytes; "
        f"the full output ({len(full)} bytes) is saved at {spilled}]"
    )
    seen = next(m["content"] for m in model.requests[4].messages if m.get("tool_call_id") == "c9")
    assert (  # tiered cuts at 10,000 chars, at 50,000 while the cut is the first thing the prompt hides
        len(seen) < 50_200 and 'context_retrieve(tool_call_id="c9")' in seen
    )  # truncated, with the way back
    assert outputs["c10"].count("line 0") > 100 and "call again with page=2" in outputs["c10"]

    events = read_trace(result.trace_path)
    results = {e.tool_call_id: e for e in events if isinstance(e, ToolResult)}
    assert results["c4"].dedup_of == "c1"
    kinds = {call_id: results[call_id].error_kind for call_id in ("c5", "c6", "c8")}
    assert kinds == {"c5": "invalid_arguments", "c6": "tool_error", "c8": "timeout"}
    # add ran once: the duplicate came from the cache and the invalid call was refused locally
    assert server_calls(tmp_path) == Counter(["add", "pixel", "pid", "fail", "shout.text", "sleep", "lines"])

    started = next(e for e in events if isinstance(e, RunStarted))
    record = started.config["mcp_servers"]
    assert [(r["name"], r["transport"]) for r in record] == [("test", "stdio")]
    assert record[0]["tools"]["test__shout_text"] == "shout.text"
    assert {"test__add", "test__pixel", "test__pid"} <= set(started.config["read_only_tools"])
    assert "test__fail" not in started.config["read_only_tools"]
    assert "s3cr3t-env-value" not in result.trace_path.read_text()  # env values never reach the trace
    assert is_gone(int(outputs["c3"]))  # the server stopped with the run


async def test_server_killed_mid_run_gives_tool_errors_and_the_run_continues(tmp_path: Path) -> None:
    def model_fn(request: AgentRequest) -> Any:
        results = [m["content"] for m in request.messages if m["role"] == "tool"]
        if not results:
            return calls(("c1", "test__pid", {}))
        if len(results) == 1:
            os.kill(int(results[0]), signal.SIGKILL)
            return calls(("c2", "test__add", {"a": 1, "b": 1}))
        if len(results) == 2:
            return calls(("c3", "test__add", {"a": 1, "b": 2}))
        return text("carried on")

    result = await agent(tmp_path, FunctionModel(model_fn), [stdio_server(tmp_path)]).run("x")

    assert result.stop_reason is StopReason.ANSWERED and result.output == "carried on"
    outputs = tool_outputs(result.trace_path)
    for call_id in ("c2", "c3"):
        assert outputs[call_id] == (
            "Error: MCP server 'test' is no longer running (connection closed): its tools cannot be "
            "used for the rest of this run; continue without them."
        )
    assert is_gone(int(outputs["c1"]))


async def test_cancelling_a_run_stops_the_server(tmp_path: Path) -> None:
    model = FunctionModel.scripted([calls(("c1", "test__sleep", {"seconds": 60}))])
    run_agent = agent(tmp_path, model, [stdio_server(tmp_path)])
    async with anyio.create_task_group() as group:
        group.start_soon(run_agent.run, "sleep")
        with anyio.fail_after(30):
            while not server_calls(tmp_path)["sleep"]:  # the call is in flight on the server
                await anyio.sleep(0.05)
        group.cancel_scope.cancel()

    pid = int((tmp_path / "test.pid").read_text())
    assert is_gone(pid)
    trace = next((tmp_path / "traces").glob("*.jsonl"))
    ended = read_trace(trace)[-1]
    assert isinstance(ended, RunEnded) and ended.stop_reason == "cancelled"


async def test_an_error_in_the_run_stops_the_server_and_propagates_unwrapped(tmp_path: Path) -> None:
    def model_fn(request: AgentRequest) -> Any:
        if request.index == 0:
            return calls(("c1", "test__pid", {}))
        raise AuthenticationError("the provider rejected the key")

    with pytest.raises(AuthenticationError, match="rejected the key"):  # not an ExceptionGroup
        await agent(tmp_path, FunctionModel(model_fn), [stdio_server(tmp_path)]).run("x")
    assert is_gone(int((tmp_path / "test.pid").read_text()))


# ---------------------------------------------------------------- servers that do not start
async def test_missing_command_is_a_configuration_error(tmp_path: Path) -> None:
    ghost = MCPStdioServer("ghost", "definitely-not-an-mcp-server-command")
    with pytest.raises(ConfigurationError) as caught:
        await agent(tmp_path, FunctionModel.scripted([]), [ghost]).run("x")
    assert str(caught.value) == (
        "MCP server 'ghost': command 'definitely-not-an-mcp-server-command' is not found; "
        "fix it in the MCP config"
    )


async def test_server_exiting_during_startup_is_one_sentence_with_its_stderr(tmp_path: Path) -> None:
    broken = MCPStdioServer("broken", sys.executable, ("-c", "import sys; sys.exit('API_TOKEN is missing')"))
    with capture_logs() as logs, pytest.raises(MCPServerError) as caught:
        await agent(tmp_path, FunctionModel.scripted([]), [broken]).run("x")
    assert str(caught.value) == (
        "MCP server 'broken' exited during startup; its last stderr line: 'API_TOKEN is missing'"
    )
    stderr_logs = [entry for entry in logs if entry["event"] == "mcp_server_stderr"]
    assert stderr_logs == [
        {
            "event": "mcp_server_stderr",
            "log_level": "debug",
            "server": "broken",
            "line": "API_TOKEN is missing",
        }
    ]


async def test_startup_timeout_stops_every_server_of_the_run(tmp_path: Path) -> None:
    code = "import os, sys, time; open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(120)"

    def never_answers(name: str, timeout_s: float) -> MCPStdioServer:
        pid_file = str(tmp_path / f"{name}.pid")
        return MCPStdioServer(name, sys.executable, ("-c", code, pid_file), startup_timeout_s=timeout_s)

    servers = [never_answers("slow", 60.0), never_answers("mute", 2.0)]
    with (
        anyio.fail_after(30),  # not the 60 s "slow" may take: it is abandoned when "mute" fails
        pytest.raises(MCPServerError, match=r"^MCP server 'mute' did not start within 2 s$"),
    ):
        await agent(tmp_path, FunctionModel.scripted([]), servers).run("x")
    # the other server, still starting when "mute" failed, was abandoned and stopped too
    for name in ("slow", "mute"):
        assert is_gone(int((tmp_path / f"{name}.pid").read_text()))


# ---------------------------------------------------------------- streamable HTTP
async def test_http_server_with_expanded_headers(tmp_path: Path, background: Any) -> None:
    port = free_port()
    background(str(SERVER), "--http", str(port), port=port)
    config = tmp_path / "mcp.json"
    entry = {
        "type": "streamable-http",
        "url": f"http://127.0.0.1:{port}/mcp",
        "headers": {"X-Client": "${CLIENT_NAME:-anonymous}", "Authorization": "Bearer ${API_TOKEN}"},
    }
    config.write_text(json.dumps({"mcpServers": {"remote": entry}}))
    servers = load_mcp_config(config, environ={"API_TOKEN": "tok-s3cr3t", "CLIENT_NAME": "tiered"})
    model = FunctionModel.scripted(
        [calls(("h1", "remote__header", {"name": "X-Client"}), ("h2", "remote__add", {"a": 1})), text("ok")]
    )
    result = await agent(tmp_path, model, list(servers)).run("x")

    assert result.output == "ok"
    outputs = tool_outputs(result.trace_path)
    assert outputs["h1"] == "tiered"
    assert outputs["h2"].startswith("Error: invalid arguments for tool 'remote__add':")
    started = next(e for e in read_trace(result.trace_path) if isinstance(e, RunStarted))
    assert [(r["name"], r["transport"]) for r in started.config["mcp_servers"]] == [("remote", "http")]
    assert "tok-s3cr3t" not in result.trace_path.read_text()


async def test_unreachable_http_server_is_one_sentence(tmp_path: Path) -> None:
    port = free_port()
    remote = MCPHttpServer("remote", f"http://127.0.0.1:{port}/mcp?token=abc", headers={"X-Key": "k"})
    with pytest.raises(MCPServerError) as caught:
        await agent(tmp_path, FunctionModel.scripted([]), [remote]).run("x")
    message = str(caught.value)
    assert message.startswith(f"MCP server 'remote' at http://127.0.0.1:{port}/mcp cannot be reached: ")
    assert "token=abc" not in message and "\n" not in message


# ---------------------------------------------------------------- the CLI, as the README shows it
def test_cli_mcp_config_end_to_end(tmp_path: Path, background: Any) -> None:
    port = free_port()
    background("examples/fake_model.py", "--port", str(port), port=port)
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update(
        OPENAI_API_KEY="sk-test-not-real",
        COLUMNS="200",
        PATH=f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}",  # an activated venv
    )
    args = [
        "run",
        "Add 2 and 3",
        "--model",
        "openai/gpt-4o-mini",
        "--api-base",
        f"http://127.0.0.1:{port}/v1",
    ]
    args += ["--mcp-config", "examples/mcp.json", "--trace-dir", str(tmp_path / "traces")]
    proc = subprocess.run(
        [sys.executable, "-m", "tiered_agent", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    # the repeated add is served from the dedup cache, and the prompt points to the first result
    answer = (
        "The MCP tools answered: 5 | 3 | [same output as iteration 1 (tool_call_id=call_0_0), shown above] | "
        "noted (1 note(s) kept) | MCP tools work offline"
    )
    assert answer in proc.stdout
    assert "Traceback" not in proc.stderr
    trace = next((tmp_path / "traces").glob("*.jsonl"))
    started = json.loads(trace.read_text().splitlines()[0])
    assert started["config"]["mcp_servers"][0]["tools"]["demo__add"] == "add"


BANNER_THEN_EXIT = (
    "print('My server v1', flush=True); import time; time.sleep(0.5); raise SystemExit('no key')"
)


@pytest.mark.parametrize(
    ("servers", "code", "expected"),
    [
        ('{"x": {"command": "node", "args": ["a.js"],}}', 2, "error: MCP config {path} is not valid JSON: "),
        (  # a banner on stdout makes the SDK log a traceback: the CLI keeps it to one line
            json.dumps({"broken": {"command": sys.executable, "args": ["-c", BANNER_THEN_EXIT]}}),
            1,
            "error: MCP server 'broken' exited during startup; its last stderr line: 'no key'",
        ),
    ],
    ids=["invalid-file", "server-exits"],
)
def test_cli_mcp_failures_are_one_sentence(tmp_path: Path, servers: str, code: int, expected: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text('{"mcpServers": ' + servers + "}")
    args = ["--mcp-config", str(config), "--trace-dir", str(tmp_path / "t"), "--context-window", "128000"]
    proc = subprocess.run(
        [sys.executable, "-m", "tiered_agent", "run", "x", "--model", "openai/gpt-4o-mini", *args],
        cwd=tmp_path,
        env={**os.environ, "OPENAI_API_KEY": "sk-test-not-real", "COLUMNS": "300"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == code, proc.stdout + proc.stderr
    assert proc.stderr.strip().splitlines()[-1].startswith(expected.format(path=config)), proc.stderr
    assert (
        "Traceback" not in proc.stderr and proc.stderr.count("no key") <= 1
    )  # server stderr: in the log only


# ---------------------------------------------------------------- SSE, read-only tools, odd URLs
async def test_sse_server_through_the_sdks_sse_client(tmp_path: Path, background: Any) -> None:
    port = free_port()
    background(str(SERVER), "--sse", str(port), port=port)
    config = tmp_path / "mcp.json"
    entry = {"type": "sse", "url": f"http://127.0.0.1:{port}/sse", "headers": {"X-Client": "tiered"}}
    config.write_text(json.dumps({"mcpServers": {"legacy": entry}}))
    [server] = load_mcp_config(config)
    assert isinstance(server, MCPSseServer) and server.transport == "sse"
    model = FunctionModel.scripted([calls(("c1", "legacy__add", {"a": 2, "b": 3})), text("ok")])
    result = await agent(tmp_path, model, [server]).run("x")
    assert result.output == "ok" and tool_outputs(result.trace_path)["c1"] == "5"
    started = next(e for e in read_trace(result.trace_path) if isinstance(e, RunStarted))
    assert [(r["name"], r["transport"]) for r in started.config["mcp_servers"]] == [("legacy", "sse")]


async def test_an_sse_endpoint_spoken_to_as_streamable_http_gets_a_hint(
    tmp_path: Path, background: Any
) -> None:
    port = free_port()
    background(str(SERVER), "--sse", str(port), port=port)
    remote = MCPHttpServer("legacy", f"http://127.0.0.1:{port}/sse")  # no "type": "sse"
    with pytest.raises(MCPServerError) as caught:
        await agent(tmp_path, FunctionModel.scripted([]), [remote]).run("x")
    assert str(caught.value) == (
        f"MCP server 'legacy' at http://127.0.0.1:{port}/sse answered HTTP 405; the URL looks like an SSE "
        'endpoint: add "type": "sse" to the server\'s config'
    )


async def test_read_only_in_the_config_marks_unannotated_tools(tmp_path: Path) -> None:
    server = stdio_server(tmp_path, read_only=["shout.text", "no_such_tool"])
    assert server.read_only == frozenset({"shout.text", "no_such_tool"})
    model = FunctionModel.scripted(
        [
            calls(("c1", "test__shout_text", {"text": "hi"})),
            calls(("c2", "test__shout_text", {"text": "hi"})),  # the same read-only call: served again
            text("done"),
        ]
    )
    with capture_logs() as logs:
        result = await agent(tmp_path, model, [server]).run("x")
    assert result.output == "done" and server_calls(tmp_path)["shout.text"] == 1
    started = next(e for e in read_trace(result.trace_path) if isinstance(e, RunStarted))
    assert "test__shout_text" in started.config["read_only_tools"]
    assert "test__fail" not in started.config["read_only_tools"]  # neither annotated nor listed
    [warning] = [e for e in logs if e["event"] == "mcp_read_only_unknown_tools"]
    assert "'no_such_tool'" in warning["detail"] and "'shout.text'" not in warning["detail"]
    everything = stdio_server(tmp_path, name="all", read_only=True)
    loaded = await _tools_of(everything)
    assert all(t.read_only for t in loaded) and len(loaded) > 5


async def _tools_of(server: MCPStdioServer) -> list[Any]:
    from tiered_agent.mcp import open_mcp_tools

    async with open_mcp_tools([server]) as mcp:
        return list(mcp.tools)


@pytest.fixture
def web_server() -> Iterator[Callable[[int, str, bytes], str]]:
    """A plain HTTP server (not MCP) answering every request with one status, type and body."""
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    from threading import Thread

    servers: list[ThreadingHTTPServer] = []

    def start(status: int, content_type: str, body: bytes) -> str:
        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            do_GET = do_POST

            def log_message(self, *args: Any) -> None:
                pass

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/api"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("content_type", "body", "what"),
    [
        ("application/json", b'{"hello": "world"}', "its reply is not JSON-RPC"),
        ("text/html", b"<html><body>Welcome</body></html>", "Unexpected content type: text/html"),
    ],
    ids=["json", "html"],
)
async def test_a_url_that_is_not_an_mcp_server_is_one_short_sentence(
    tmp_path: Path, web_server: Callable[[int, str, bytes], str], content_type: str, body: bytes, what: str
) -> None:
    url = web_server(200, content_type, body)
    with pytest.raises(MCPServerError) as caught:
        await agent(tmp_path, FunctionModel.scripted([]), [MCPHttpServer("web", url)]).run("x")
    assert str(caught.value) == (
        f"MCP server 'web' at {url} did not answer as an MCP server ({what}): check that the URL is the "
        "server's MCP endpoint"
    )  # not the 2 KB pydantic validation dump


async def test_a_run_that_never_started_leaves_no_trace(tmp_path: Path) -> None:
    broken = MCPStdioServer("broken", sys.executable, ("-c", "raise SystemExit('no key')"))
    with pytest.raises(MCPServerError):
        await agent(tmp_path, FunctionModel.scripted([]), [broken]).run("x")
    assert list((tmp_path / "traces").glob("*")) == []  # no file holding only a run_end
    done = await agent(tmp_path, FunctionModel.scripted([text("first")]), []).run("x")
    before = done.trace_path.read_bytes()
    with pytest.raises(MCPServerError):  # a resume that cannot start appends nothing
        await agent(tmp_path, FunctionModel.scripted([]), [broken]).resume(done.trace_path, "again")
    assert done.trace_path.read_bytes() == before


async def test_secrets_in_a_servers_env_are_redacted_from_its_sentences(tmp_path: Path) -> None:
    leak = "import os, sys; sys.exit('cannot log in with ' + os.environ['BILLING_API_KEY'])"
    secret = "lit3ral-billing-s3cret-42"
    broken = MCPStdioServer("billing", sys.executable, ("-c", leak), env={"BILLING_API_KEY": secret})
    with pytest.raises(MCPServerError) as caught:
        await agent(tmp_path, FunctionModel.scripted([]), [broken]).run("x")
    assert str(caught.value) == (
        "MCP server 'billing' exited during startup; its last stderr line: 'cannot log in with [redacted]'"
    )
    headers = {"Authorization": "Basic dXNlcjpwYXNzd29yZDEyMw==", "X-Client": "tiered-agent"}
    remote = MCPHttpServer("remote", f"http://127.0.0.1:{free_port()}/mcp", headers=headers)
    with pytest.raises(MCPServerError) as caught:
        await agent(tmp_path, FunctionModel.scripted([]), [remote]).run("x")
    from tiered_agent._trace import redact

    assert redact("token dXNlcjpwYXNzd29yZDEyMw== and tiered-agent") == "token [redacted] and tiered-agent"


async def test_startup_timeout_from_the_config(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    mute = {
        "command": sys.executable,
        "args": ["-c", "import time; time.sleep(60)"],
        "startupTimeoutMs": 1500,
    }
    config.write_text(json.dumps({"mcpServers": {"mute": mute}}))
    [server] = load_mcp_config(config)
    assert server.startup_timeout_s == 1.5
    with (
        anyio.fail_after(30),
        pytest.raises(MCPServerError, match=r"^MCP server 'mute' did not start within 1.5 s$"),
    ):
        await agent(tmp_path, FunctionModel.scripted([]), [server]).run("x")


# ---------------------------------------------------------------- the config file
def test_load_mcp_config_reads_the_common_variants(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {
        "files": {
            "command": "npx",
            "args": ["-y", "server-files", "${HOME_DIR}"],
            "env": {"TOKEN": "${env:TOKEN}", "PORT": 3000, "DEBUG": False},
            "cwd": "/srv",
            "autoApprove": ["read"],
        },
        "docs": {"url": "https://docs.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}},
        "typed": {"type": "http", "url": "https://typed.example/mcp"},
        "windsurf": {"serverUrl": "https://w.example/mcp", "transport": "streamableHttp"},
        "local": {"type": "stdio", "command": "${BIN:-/usr/bin/srv}"},
        "off": {"command": "x", "disabled": True},
        "off2": {"url": "https://x.example", "enabled": False},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    loaded = load_mcp_config(config, environ={"HOME_DIR": "/home/u", "TOKEN": "t0k"})

    assert [s.name for s in loaded] == ["files", "docs", "typed", "windsurf", "local"]
    files, docs, typed, windsurf, local = loaded
    assert isinstance(files, MCPStdioServer) and isinstance(local, MCPStdioServer)
    assert files.args == ("-y", "server-files", "/home/u") and files.cwd == Path("/srv")
    assert dict(files.env) == {"TOKEN": "t0k", "PORT": "3000", "DEBUG": "false"}
    assert isinstance(docs, MCPHttpServer) and dict(docs.headers) == {"Authorization": "Bearer t0k"}
    assert isinstance(typed, MCPHttpServer) and isinstance(windsurf, MCPHttpServer)
    assert windsurf.url == "https://w.example/mcp" and local.command == "/usr/bin/srv"
    assert "t0k" not in repr(files) + repr(docs)  # values that may be secrets stay out of reprs
    vscode = tmp_path / "vscode.json"
    vscode.write_text(json.dumps({"servers": {"a": {"command": "srv"}}}))
    assert [s.name for s in load_mcp_config(vscode)] == ["a"]


def test_load_mcp_config_reads_sse_timeouts_and_read_only(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    servers = {
        "legacy": {"type": "sse", "url": "https://old.example/sse"},
        "slow": {"command": "npx", "startupTimeout": 90, "toolTimeoutMs": 2500, "readOnly": True},
        "db": {"command": "uvx", "readOnly": ["read_query", "list_tables"], "startup_timeout_sec": 12},
        "plain": {"url": "https://new.example/mcp", "tool_timeout_sec": 5, "readOnly": False},
    }
    config.write_text(json.dumps({"mcpServers": servers}))
    legacy, slow, db, plain = load_mcp_config(config)
    assert isinstance(legacy, MCPSseServer) and isinstance(legacy, MCPHttpServer)
    assert type(plain) is MCPHttpServer and plain.transport == "http" and legacy.transport == "sse"
    assert (slow.startup_timeout_s, slow.tool_timeout_s, slow.read_only) == (90, 2.5, True)
    assert (db.startup_timeout_s, db.tool_timeout_s) == (12, 60.0)
    assert db.read_only == frozenset({"read_query", "list_tables"})
    assert (plain.tool_timeout_s, plain.read_only, legacy.read_only) == (5, False, False)


def test_vscode_input_variables_are_sent_as_written_with_a_warning(tmp_path: Path) -> None:
    config = tmp_path / "mcp.json"
    entry = {"url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${input:api-token}"}}
    config.write_text(json.dumps({"servers": {"x": entry}}))
    with capture_logs() as logs:
        [server] = load_mcp_config(config)
    assert (
        isinstance(server, MCPHttpServer) and server.headers["Authorization"] == "Bearer ${input:api-token}"
    )
    [warning] = [e for e in logs if e["event"] == "mcp_config_input_not_expanded"]
    assert warning["log_level"] == "warning"
    assert (
        "server 'x': headers.Authorization uses ${input:api-token}, a VS Code input prompt"
        in warning["detail"]
    )


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ("{not json", "is not valid JSON"),
        ('{"servers": []}', 'expected an object {"mcpServers": {"<name>": {...}}}'),
        (
            '{"mcpServers": {"a": {"command": "x", "url": "http://h"}}}',
            "server 'a' has both a command and a url",
        ),
        ('{"mcpServers": {"a": {"type": "sse", "command": "x"}}}', "declares type 'sse' but has no url"),
        ('{"mcpServers": {"a": {"type": "http", "command": "x"}}}', "declares type 'http' but has no url"),
        (
            '{"mcpServers": {"a": {"type": "ws", "url": "http://h"}}}',
            "unknown type 'ws' (use stdio, http or sse)",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "startupTimeout": 30000}}}',
            "'startupTimeout' is 30000 seconds, over an hour; for milliseconds write 'startupTimeoutMs'",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "tool_timeout_sec": 9000}}}',
            "for milliseconds write 'tool_timeout_ms'",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "toolTimeout": 0}}}',
            "'toolTimeout' must be a positive number",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "toolTimeout": "5"}}}',
            "'toolTimeout' must be a positive number",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "startupTimeout": 5, "startupTimeoutMs": 5000}}}',
            "sets its startup timeout twice",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "readOnly": "yes"}}}',
            "'readOnly' must be true, false or a list",
        ),
        (
            '{"mcpServers": {"a": {"command": "x", "readOnly": [1]}}}',
            "'readOnly' must be true, false or a list",
        ),
        ('{"mcpServers": {"a": {"args": ["x"]}}}', "needs a command (stdio server) or a url"),
        ('{"mcpServers": {"a": {"command": "x", "args": "y"}}}', "'args' must be a list of strings"),
        ('{"mcpServers": {"a": {"url": "ftp://h"}}}', "url must start with http:// or https://"),
        (
            '{"mcpServers": {"a": {"url": "http://h", "headers": {"K": "${NOPE_UNSET}"}}}}',
            "environment variable NOPE_UNSET (used in headers.K) is not set",
        ),
    ],
)
def test_load_mcp_config_errors_are_one_sentence(tmp_path: Path, document: str, message: str) -> None:
    config = tmp_path / "mcp.json"
    config.write_text(document)
    with pytest.raises(ConfigurationError) as caught:
        load_mcp_config(config, environ={})
    assert message in str(caught.value) and str(caught.value).startswith(f"MCP config {config}")


def test_agent_rejects_repeated_server_names() -> None:
    servers = [MCPStdioServer("a", "x"), MCPHttpServer("a", "http://h/mcp")]
    with pytest.raises(ConfigurationError, match="two MCP servers are named 'a'"):
        Agent(FunctionModel.scripted([]), mcp_servers=servers)


async def test_tools_whose_names_collide_are_refused_and_the_others_offered() -> None:
    from mcp.types import Tool as MCPTool

    from tiered_agent.mcp._client import ServerConnection
    from tiered_agent.mcp._runtime import _load

    connection = ServerConnection(MCPStdioServer("srv", "x"))
    names = ("get.item", "get_item", "mine", "other")
    connection.tools = [MCPTool(name=n, input_schema={"type": "object"}) for n in names]
    with capture_logs() as logs:
        loaded = _load([connection], taken=("srv__mine",))  # a tool of the run's own
    assert [t.name for t in loaded.tools] == ["srv__get_item", "srv__other"]
    assert loaded.servers[0]["refused"] == {
        "get_item": "its name 'srv__get_item' is taken by tool 'get.item' of MCP server 'srv'",
        "mine": "its name 'srv__mine' is taken by a tool of the run",
    }
    assert [e["detail"] for e in logs if e["event"] == "mcp_tool_refused"] == [
        "tool 'get_item' of MCP server 'srv' is not offered to the model: its name 'srv__get_item' is "
        "taken by tool 'get.item' of MCP server 'srv'",
        "tool 'mine' of MCP server 'srv' is not offered to the model: its name 'srv__mine' is taken by "
        "a tool of the run",
    ]


HOSTILE_SERVER = ROOT / "tests" / "mcp_hostile_server.py"


async def test_a_hostile_server_the_run_goes_on_with_what_works(tmp_path: Path) -> None:
    """Case 39: megabytes, binary, errors, a call that never returns, a server that exits mid-call,
    colliding and odd names, schemas that refer to themselves, are invalid or enormous."""
    server = MCPStdioServer("h", sys.executable, (str(HOSTILE_SERVER),), tool_timeout_s=2.0)
    model = FunctionModel.scripted(
        [
            calls(
                ("c1", "h__huge", {"megabytes": 3}),
                ("c2", "h__picture", {}),
                ("c3", "h__broken", {"reason": "no"}),
            ),
            calls(
                ("c4", "h__forever", {}),
                ("c5", "h__self_ref", {"a": 1}),
                ("c6", "h__root_ref", {"a": 1}),
                ("c7", "h__get_item", {"text": "x"}),
                ("c8", "h__na_ve_tool__", {"text": "y"}),
            ),
            calls(("c9", "h__die", {})),
            calls(("c10", "h__nul", {})),
            text("done"),
        ]
    )
    with anyio.fail_after(120):
        result = await Agent(model, mcp_servers=[server], trace_dir=tmp_path / "traces").run("x")

    assert (result.stop_reason, result.output) == (StopReason.ANSWERED, "done")
    offered = {t["function"]["name"] for t in model.requests[0].tools}
    assert "h__enormous" not in offered and {"h__get_item", "h__self_ref", "h__invalid"} <= offered
    outputs = tool_outputs(result.trace_path)
    assert (
        outputs["c1"].startswith("0123456789abcdef")
        and "[output capped: showing the first 1000000" in outputs["c1"]
    )
    assert outputs["c2"] == "[image: image/png, 4,096 bytes, not shown]"
    assert outputs["c3"] == "Error: Error executing tool broken: no"
    assert outputs["c4"] == "Error: tool 'h__forever' timed out after 2 s and was stopped."
    for call_id, name in (
        ("c5", "h__self_ref"),
        ("c6", "h__root_ref"),
    ):  # RecursionError out of the run before
        assert outputs[call_id] == (
            f"Error: tool {name!r} cannot be called: checking arguments against its input schema never "
            "ends (the schema refers to itself); use another tool."
        )
    assert (outputs["c7"], outputs["c8"]) == ("x", "y")
    gone = "Error: MCP server 'h' is no longer running (connection closed)"
    assert outputs["c9"].startswith(gone) and outputs["c10"].startswith(gone)
    started = next(e for e in read_trace(result.trace_path) if isinstance(e, RunStarted))
    [record] = started.config["mcp_servers"]
    assert record["tools"]["h__get_item"] == "get.item"
    assert record["tools"]["h__na_ve_tool__"] == "naïve tool ✓"
    assert record["refused"] == {
        "get item": "its name 'h__get_item' is taken by tool 'get.item' of MCP server 'h'",
        "get_item": "its name 'h__get_item' is taken by tool 'get.item' of MCP server 'h'",
        "enormous": "its input schema is 484,922 bytes; at most 100,000 are sent to a model",
    }


async def test_a_user_tool_named_like_a_server_tool_keeps_its_name(tmp_path: Path) -> None:
    from tiered_agent import tool

    @tool(name="test__add")
    def mine(a: int, b: int) -> str:
        """Not the server's add."""
        return "mine"

    model = FunctionModel.scripted([calls(("c1", "test__add", {"a": 1, "b": 2})), text("done")])
    agent_ = Agent(model, tools=[mine], mcp_servers=[stdio_server(tmp_path)], trace_dir=tmp_path / "traces")
    result = await agent_.run("x")  # ConfigurationError ("duplicate tool name") before
    assert result.output == "done" and tool_outputs(result.trace_path)["c1"] == "mine"
    started = next(e for e in read_trace(result.trace_path) if isinstance(e, RunStarted))
    assert started.config["mcp_servers"][0]["refused"] == {
        "add": "its name 'test__add' is taken by a tool of the run"
    }


def test_refusal_of_schemas_no_provider_takes() -> None:
    from mcp.types import Tool as MCPTool

    from tiered_agent.mcp._adapt import refusal

    assert refusal(MCPTool(name="a", input_schema={"type": "object"})) is None
    assert refusal(MCPTool(name="a", input_schema={"type": "array"})) == (
        "its input schema is of type 'array'; a tool's parameters must be an object"
    )
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(300):
        deep = {"type": "object", "properties": {"a": deep}}
    assert (refusal(MCPTool(name="a", input_schema=deep)) or "").startswith(
        "its input schema cannot be sent as JSON (Recursion limit reached)"
    )


def test_tool_names_fit_the_rule_and_stay_distinct() -> None:
    assert tool_name("my server", "shout.text") == "my_server__shout_text"
    long_a, long_b = tool_name("s", "x" * 80 + "a"), tool_name("s", "x" * 80 + "b")
    assert len(long_a) == len(long_b) == 64 and long_a != long_b
    assert all(c.isalnum() or c in "_-" for c in long_a)


def test_a_tool_with_an_invalid_schema_is_kept_without_local_validation() -> None:
    from mcp.types import Tool as MCPTool

    from tiered_agent.mcp._adapt import adapt_tool

    async def call(name: str, arguments: dict[str, Any]) -> str:
        return name

    spec = MCPTool(name="odd", input_schema={"type": "object", "properties": {"a": {"type": "nonsense"}}})
    adapted = adapt_tool(MCPStdioServer("srv", "x"), spec, call)
    assert adapted.name == "srv__odd" and adapted.validator is None
    assert adapted.description == "Tool 'odd' of the MCP server 'srv'." and not adapted.read_only


# ---------------------------------------------------------------- results as text
def test_render_result_describes_non_text_content() -> None:
    blob = base64.b64encode(b"\x00" * 1000).decode()
    result = CallToolResult(
        content=[
            TextContent(text="hello"),
            ImageContent(data=blob, mime_type="image/jpeg"),
            AudioContent(data=blob, mime_type="audio/wav"),
            ResourceLink(
                uri="file:///r.txt", name="r", mime_type="text/plain", size=12, description="A file."
            ),
            EmbeddedResource(
                resource=TextResourceContents(uri="mem://a", mime_type="text/plain", text="body")
            ),
            EmbeddedResource(resource=BlobResourceContents(uri="mem://b", blob=blob)),
        ]
    )
    assert render_result(result).splitlines() == [
        "hello",
        "[image: image/jpeg, 1,000 bytes, not shown]",
        "[audio: audio/wav, 1,000 bytes, not shown]",
        "[resource link: file:///r.txt, name 'r', text/plain, 12 bytes] A file.",
        "[resource: mem://a, text/plain]",
        "body",
        "[resource: mem://b, 1,000 bytes of binary data, not shown]",
    ]


def test_render_result_structured_content_and_errors() -> None:
    structured = CallToolResult(content=[], structured_content={"temp": 21.5, "unit": "C"})
    assert render_result(structured) == '{"temp":21.5,"unit":"C"}'
    both = CallToolResult(content=[TextContent(text="21.5 C")], structured_content={"temp": 21.5})
    assert render_result(both) == "21.5 C"
    with pytest.raises(ToolError, match=r"^quota exceeded$"):
        render_result(CallToolResult(content=[TextContent(text="quota exceeded")], is_error=True))
    with pytest.raises(ToolError, match="without a message"):
        render_result(CallToolResult(content=[], is_error=True))
