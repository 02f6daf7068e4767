"""Fault injection at the edges users hit: OpenTelemetry collectors that are dead, hanging or
traces-only, broken ``OTEL_*`` settings, MCP servers that leak secrets or are not MCP servers,
unreachable model endpoints and local servers without a key.

Every case is a real CLI process (tests/cli_harness.py) and ends in its exit code and at most one
sentence about the fault on stderr, never a traceback or the SDKs' retry logs.
"""

from __future__ import annotations

import itertools
import json
import signal
import socket
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from cli_harness import CliResult, run_cli, start_cli
from fake_openai_server import FakeOpenAIServer, Hang, free_port
from otlp_receiver import OTLPReceiver

from tiered_agent._model import connection_failure
from tiered_agent.telemetry._pipelines import cli_telemetry

MODEL = "openai/gpt-4o-mini"
KEY = "sk-test-edges-0123456789"


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as fake:
        fake.respond = lambda request: "Done."
        yield fake


@pytest.fixture
def hanging_collector() -> Iterator[str]:
    """An OTLP endpoint that accepts connections and never answers."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    stop.set()
    thread.join(5)
    for connection in held:
        connection.close()
    listener.close()


def run_args(server: FakeOpenAIServer, tmp_path: Path, *more: str) -> list[str]:
    return [
        "run",
        "Say done.",
        "--model",
        MODEL,
        "--api-base",
        server.base_url,
        "--trace-dir",
        str(tmp_path / "traces"),
        *more,
    ]


def problems(result: CliResult) -> list[str]:
    """The stderr lines that are not the run's own progress (warnings, errors, SDK records)."""
    return [line for line in result.stderr.splitlines() if line.strip() and "Traceback" not in line]


# ================================================================ OpenTelemetry (issue 16 #14, #18; 19.4)
@pytest.mark.parametrize(
    ("setting", "sentence"),
    [
        (
            "OTEL_METRIC_EXPORT_INTERVAL=0",
            "OTEL_METRIC_EXPORT_INTERVAL=0 is not valid: it must be a whole number",
        ),
        ("OTEL_METRIC_EXPORT_INTERVAL=-1000", "OTEL_METRIC_EXPORT_INTERVAL=-1000 is not valid"),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE=0", "OTEL_BSP_MAX_EXPORT_BATCH_SIZE=0 is not valid"),
        ("OTEL_BSP_MAX_QUEUE_SIZE=0", "OTEL_BSP_MAX_QUEUE_SIZE=0 is not valid"),
        ("OTEL_BSP_SCHEDULE_DELAY=-5", "OTEL_BSP_SCHEDULE_DELAY=-5 is not valid"),
        ("OTEL_BSP_MAX_QUEUE_SIZE=abc", "OTEL_BSP_MAX_QUEUE_SIZE=abc is not valid"),
        (
            "OTEL_EXPORTER_OTLP_TIMEOUT=soon",
            "OTEL_EXPORTER_OTLP_TIMEOUT=soon is not valid: it must be a number",
        ),
        ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE=4096", "must not exceed OTEL_BSP_MAX_QUEUE_SIZE (2048)"),
    ],
)
def test_a_bad_otel_setting_is_one_sentence_and_exit_2(
    server: FakeOpenAIServer, tmp_path: Path, setting: str, sentence: str
) -> None:
    name, value = setting.split("=")
    env = {
        "OPENAI_API_KEY": KEY,
        "OTEL_EXPORTER_OTLP_ENDPOINT": f"http://127.0.0.1:{free_port()}",
        name: value,
    }
    result = run_cli(run_args(server, tmp_path, "--otel"), cwd=tmp_path, env=env)
    assert result.code == 2, result.stderr
    assert problems(result) == [problems(result)[0]] and sentence in result.stderr
    assert problems(result)[0].startswith("error: ") and "Traceback" not in result.stderr
    assert server.chat_requests == []  # refused before the run


def test_a_dead_collector_is_one_warning_and_the_run_succeeds(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    env = {"OPENAI_API_KEY": KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint}
    result = run_cli(run_args(server, tmp_path, "--otel"), cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    [warning] = problems(result)  # was 12 lines of exporter retries
    assert f"OpenTelemetry export to {endpoint} failed (connection refused)" in warning
    assert "Done." in result.stdout


def test_a_hanging_collector_is_given_up_at_exit(
    server: FakeOpenAIServer, tmp_path: Path, hanging_collector: str
) -> None:
    env = {"OPENAI_API_KEY": KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": hanging_collector}
    env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "30"  # without the exit budget, each export would wait 30 s
    result = run_cli(run_args(server, tmp_path, "--otel"), cwd=tmp_path, env=env, timeout=120)
    assert result.code == 0, result.stderr
    [warning] = problems(result)
    assert f"export to {hanging_collector} did not finish within 2 s at exit" in warning


def test_sigterm_shutdown_with_a_hanging_collector_is_bounded(tmp_path: Path, hanging_collector: str) -> None:
    with FakeOpenAIServer() as server:
        server.respond = lambda request: Hang()
        env = {"OPENAI_API_KEY": KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": hanging_collector}
        env["OTEL_EXPORTER_OTLP_TIMEOUT"] = "30"
        child = start_cli(run_args(server, tmp_path, "--otel"), cwd=tmp_path, env=env)
        deadline = time.monotonic() + 60
        while not server.chat_requests and time.monotonic() < deadline:
            time.sleep(0.05)
        assert server.chat_requests, "the run never reached the model"
        child.send(signal.SIGTERM)
        result = child.wait(120)
    assert result.code == 128 + signal.SIGTERM, result.stderr
    interrupted, warning = problems(result)  # the resume hint, then the one telemetry warning
    assert interrupted.startswith("interrupted by SIGTERM; continue with: tiered-agent resume ")
    assert f"export to {hanging_collector} did not finish within 2 s at exit" in warning


def test_a_traces_only_collector_gets_a_note_about_metrics(server: FakeOpenAIServer, tmp_path: Path) -> None:
    with OTLPReceiver(traces_only=True) as receiver:
        env = {"OPENAI_API_KEY": KEY, "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint}
        result = run_cli(run_args(server, tmp_path), cwd=tmp_path, env=env)
    assert result.code == 0, result.stderr
    assert {s.name.split()[0] for s in receiver.spans} >= {"invoke_agent", "chat"}  # the spans arrived
    [note] = problems(result)
    assert f"the OpenTelemetry collector at {receiver.endpoint} does not take metrics (HTTP 405" in note
    assert "set OTEL_METRICS_EXPORTER=none" in note


def test_the_pipelines_give_up_within_their_budget(
    hanging_collector: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from opentelemetry import metrics, trace

    monkeypatch.setattr(trace, "set_tracer_provider", lambda provider: None)  # the test process's
    monkeypatch.setattr(metrics, "set_meter_provider", lambda provider: None)  # globals stay as they are
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", hanging_collector)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TIMEOUT", "3")  # the abandoned export ends soon after
    exporting = cli_telemetry(True)
    assert exporting is not None and exporting.watch is not None
    tracer = exporting.telemetry.tracer()
    tracer.start_span("one").end()
    assert exporting.shutdown(budget_s=0.5) is False  # gave up instead of waiting out the collector
    assert exporting.watch.warning is not None and "did not finish within 0.5 s" in exporting.watch.warning


# ================================================================ MCP (issue 16 #10, #20)
def test_a_secret_in_an_mcp_servers_env_never_reaches_the_console(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    secret = "lit3ral-crm-s3cret-0042"
    leak = "import os, sys; sys.exit('login failed for ' + os.environ['CRM_API_KEY'])"
    config = tmp_path / "mcp.json"
    entry = {"command": "python3", "args": ["-c", leak], "env": {"CRM_API_KEY": secret}}
    config.write_text(json.dumps({"mcpServers": {"crm": entry}}))
    result = run_cli(
        run_args(server, tmp_path, "--mcp-config", str(config)), cwd=tmp_path, env={"OPENAI_API_KEY": KEY}
    )
    assert result.code == 1, result.stderr
    assert secret not in result.stderr + result.stdout
    assert problems(result)[-1] == (
        "error: MCP server 'crm' exited during startup; its last stderr line: 'login failed for [redacted]'"
    )
    assert not (tmp_path / "traces").exists() or list((tmp_path / "traces").iterdir()) == []  # never started


@pytest.fixture
def json_api() -> Iterator[str]:
    """A web API that is not an MCP server: every request gets 200 and a JSON object."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = b'{"status": "ok", "items": []}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    web = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=web.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{web.server_address[1]}/api/v2"
    web.shutdown()
    web.server_close()


def test_a_web_api_as_an_mcp_server_is_one_sentence(
    server: FakeOpenAIServer, tmp_path: Path, json_api: str
) -> None:
    url = json_api
    config = tmp_path / "mcp.json"
    config.write_text(json.dumps({"mcpServers": {"web": {"url": url}}}))
    result = run_cli(
        run_args(server, tmp_path, "--mcp-config", str(config)), cwd=tmp_path, env={"OPENAI_API_KEY": KEY}
    )
    assert result.code == 1, result.stderr
    sentence = (
        f"error: MCP server 'web' at {url} did not answer as an MCP server (its reply is not JSON-RPC): "
        "check that the URL is the server's MCP endpoint"
    )
    assert problems(result) == [sentence]  # was a 1.9 KB pydantic validation dump
    assert len(result.stderr) < 300


# ================================================================ model endpoints (19.4)
def test_an_unreachable_api_base_names_the_url_and_the_cause(tmp_path: Path) -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"
    args = [
        "run",
        "x",
        "--model",
        MODEL,
        "--api-base",
        base,
        "--max-retries",
        "0",
        "--trace-dir",
        str(tmp_path),
    ]
    result = run_cli(args, cwd=tmp_path, env={"OPENAI_API_KEY": KEY})
    assert result.code == 1
    assert (
        f"failed after 1 attempt(s): cannot connect to {base} (connection refused)"
        in result.stdout + result.stderr
    )


def test_a_local_server_without_a_key_gets_the_placeholder_hint(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    result = run_cli(run_args(server, tmp_path), cwd=tmp_path, env={})
    assert result.code == 1, result.stderr
    assert (
        f"set OPENAI_API_KEY or pass api_key; a server at {server.base_url} that checks no key accepts any "
        "placeholder (e.g. OPENAI_API_KEY=sk-local)"
    ) in result.stdout + result.stderr
    assert server.chat_requests == []  # litellm refused before sending


def test_connection_failure_reads_the_os_cause_from_the_chain() -> None:
    def chained(*links: BaseException) -> BaseException:
        for outer, inner in itertools.pairwise(links):
            outer.__cause__ = inner
        return links[0]

    class ConnectError(Exception):  # as httpx names it
        pass

    refused = chained(
        RuntimeError("Connection error."),
        ConnectError("x"),
        ConnectionRefusedError(111, "Connect call failed"),
    )
    assert connection_failure(refused) == "connection refused"
    dns = chained(RuntimeError("Connection error."), socket.gaierror(-2, "Name or service not known"))
    assert connection_failure(dns) == "name or service not known"
    assert (
        connection_failure(chained(RuntimeError("APIConnectionError"), ValueError("socket closed"))) is None
    )
    assert connection_failure(ValueError("x")) is None
