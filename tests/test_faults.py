"""Fault injection: a faulty provider on 127.0.0.1, kills and signals mid-run, a full disk, reused
call ids, setsid descendants and secrets in the environment.

Every fault ends in a recovery or in one sentence, never a traceback; the trace stays loadable and
``tiered-agent resume`` continues it with no completed iteration lost. CLI runs are real child
processes (tests/cli_harness.py); the random iterations are seeded.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import threading
from pathlib import Path
from typing import Any

import pytest
from cli_harness import CliChild, CliResult, run_cli, start_cli
from fake_openai_server import (
    FakeOpenAIServer,
    Hang,
    HTTPRequest,
    RawReply,
    Reset,
    context_length_response,
    model_not_found_response,
    rate_limit_response,
    server_error_response,
)
from fakes import USER, SleepRecorder, make_usage, text_reply, tool_reply
from processes import process_gone, still_running

from tiered_agent import Agent, ContextConfig, LiteLLMModel, RetryPolicy, RunLimits, StopReason, Workspace
from tiered_agent import workspace_tools as ws_tools
from tiered_agent._errors import ModelError
from tiered_agent._trace import ModelRequest, RunEnded, RunStarted, load_history, read_trace

MODEL = "openai/gpt-4o-mini"
KEY = "sk-test-faults-0123456789"
SEED = 20251123
NOTES = "the retry delay doubles each attempt\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES)
    return root


def over_http(server: FakeOpenAIServer, sleep: SleepRecorder, **kw: Any) -> LiteLLMModel:
    kw.setdefault("retry", RetryPolicy(jitter=0.0))
    return LiteLLMModel(MODEL, api_base=server.base_url, api_key=KEY, sleep=sleep, **kw)


def read_notes(call_id: str, usage: dict[str, Any] | None = None) -> Any:
    return tool_reply(
        [(call_id, "read_file", {"path": "notes.txt"})], make_usage() if usage is None else usage
    )


def iteration_of(request: HTTPRequest) -> int:
    """The iteration this request asks for: one more than the assistant messages it carries."""
    return 1 + sum(1 for m in request.body["messages"] if m["role"] == "assistant")


# ================================================================ the provider misbehaves
@pytest.mark.anyio
async def test_a_hanging_provider_is_given_up_after_the_request_timeout(server: FakeOpenAIServer) -> None:
    sleep = SleepRecorder()
    server.script(Hang(), Hang())
    model = over_http(server, sleep, timeout_s=0.3, retry=RetryPolicy(max_attempts=2, jitter=0.0))
    with pytest.raises(ModelError, match=r"failed after 2 attempt\(s\): Timeout"):
        await model.complete(USER, [])
    assert (len(server.chat_requests), sleep.delays) == (2, [1.0])


def test_default_timeout_and_retries_give_up_on_a_silent_provider_in_about_3_minutes() -> None:
    model = LiteLLMModel(MODEL)
    attempts = model.retry.max_attempts
    waits = sum(model.retry.delay(n, rand=lambda: 1.0) for n in range(1, attempts))  # worst jitter
    litellm_slack_s = 1.5  # litellm gives up ~1.4 s after the timeout it was given
    worst = attempts * (model.timeout_s + litellm_slack_s) + waits
    assert (model.timeout_s, attempts) == (60.0, 3)
    assert 180 <= worst <= 200  # was 4 x 120 s + 7 s = 487 s


@pytest.mark.anyio
async def test_reset_connections_are_retried(server: FakeOpenAIServer) -> None:
    sleep = SleepRecorder()
    server.script(Reset(), Reset(), text_reply("after two resets"))
    reply = await over_http(server, sleep).complete(USER, [])
    assert (reply.message.content, reply.attempts, sleep.delays) == ("after two resets", 3, [1.0, 2.0])


@pytest.mark.anyio
async def test_429_and_5xx_sequence_then_success(server: FakeOpenAIServer) -> None:
    sleep = SleepRecorder()
    server.script(rate_limit_response(retry_after=3), server_error_response(), text_reply("finally"))
    reply = await over_http(server, sleep).complete(USER, [])
    assert (reply.message.content, reply.attempts, sleep.delays) == ("finally", 3, [3.0, 2.0])


@pytest.mark.anyio
@pytest.mark.filterwarnings("ignore:Pydantic serializer warnings")
@pytest.mark.parametrize(
    "body",
    [
        b"not json at all",
        b'{"id": "x", "choices": [',
        b"[1, 2]",
        b'{"foo": 1}',
        b'{"choices": [{"message": 5}]}',
        b"",
    ],
)
async def test_a_malformed_200_body_is_reported_once_not_retried(
    server: FakeOpenAIServer, body: bytes
) -> None:
    sleep = SleepRecorder()
    server.script(RawReply(body), text_reply("never reached"))
    with pytest.raises(ModelError, match=r"sent a reply that is not a chat completion") as caught:
        await over_http(server, sleep).complete(USER, [])
    assert (len(server.chat_requests), sleep.delays) == (1, [])
    assert "Traceback" not in str(caught.value) and "\n" not in str(caught.value)


@pytest.mark.anyio
async def test_a_context_length_error_compacts_once_and_the_run_goes_on(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    def respond(request: HTTPRequest) -> Any:
        n = len(server.chat_requests)  # the window hides old iterations from the prompt: count requests
        if n < 5:
            return read_notes(f"c{n}")
        return context_length_response() if n == 5 else text_reply("fits now")

    server.respond = respond
    agent = Agent(
        over_http(server, SleepRecorder()),
        tools=ws_tools(Workspace(workspace)),
        context=ContextConfig(name="windowed", window_iterations=2, summary_every=None, compact_at=None),
        trace_dir=tmp_path / "t",
    )
    result = await agent.run("read the notes")
    assert result.output == "fits now"
    sizes = [len(r.body["messages"]) for r in server.chat_requests]
    assert sizes[-1] < sizes[-2]  # the retry sent a compacted prompt
    assert [e.context["compacted"] for e in read_trace(result.trace_path) if isinstance(e, ModelRequest)][-1]


@pytest.mark.anyio
async def test_without_usage_the_token_budget_counts_locally(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.respond = lambda request: read_notes(f"c{iteration_of(request)}", usage={})  # no usage at all
    budget = 4_000
    agent = Agent(
        over_http(server, SleepRecorder()),
        tools=ws_tools(Workspace(workspace)),
        limits=RunLimits(max_iterations=20, token_budget=budget),
        trace_dir=tmp_path / "t",
    )
    result = await agent.run("read the notes")
    assert result.stop_reason is StopReason.TOKEN_BUDGET  # was: max_iterations, 2.8x over budget
    assert result.usage.total_tokens == 0
    sent = [e.prompt_tokens_local for e in read_trace(result.trace_path) if isinstance(e, ModelRequest)]
    assert 2 <= len(sent) < 20
    assert sum(sent) <= budget


@pytest.mark.anyio
async def test_a_provider_under_reporting_usage_cannot_hide_an_oversized_prompt(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "chunk.txt").write_text("".join(f"row {i}: alpha beta gamma delta\n" for i in range(150)))
    lying = make_usage(prompt=50, completion=5)  # whatever the prompt, "50 tokens"
    server.respond = lambda request: tool_reply(
        [
            (
                f"c{iteration_of(request)}",
                "read_file",
                {"path": "chunk.txt", "start_line": iteration_of(request)},
            )
        ],
        lying,
    )
    window = 8_000
    agent = Agent(
        over_http(server, SleepRecorder(), context_window=window),
        tools=ws_tools(Workspace(workspace)),
        context="full",  # no compaction: only the hard limit stands between the prompt and the window
        limits=RunLimits(max_iterations=15),
        trace_dir=tmp_path / "t",
    )
    result = await agent.run("read it all")
    assert result.stop_reason is StopReason.ERROR and "refusing to send it" in (result.error or "")
    sent = [e.prompt_tokens_local for e in read_trace(result.trace_path) if isinstance(e, ModelRequest)]
    assert max(sent) <= 0.95 * window < sum(sent)  # nothing oversized went out, though the run grew


# ================================================================ ids and descendants
@pytest.mark.anyio
async def test_a_reused_call_id_never_overwrites_a_spilled_output(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    for name, letter in (("big1.txt", "A"), ("big2.txt", "B")):
        (workspace / name).write_text((letter * 700 + "\n") * 2000)  # 1.4 MB each: spilled
    server.script(
        tool_reply([("call_1", "read_file", {"path": "big1.txt"})]),
        tool_reply([("call_1", "read_file", {"path": "big2.txt"})]),  # the same id again
        text_reply("done"),
    )
    agent = Agent(
        over_http(server, SleepRecorder()), tools=ws_tools(Workspace(workspace)), trace_dir=tmp_path
    )
    result = await agent.run("read both")
    outputs = [m.text for m in load_history(result.trace_path) if m.role == "tool"]
    paths = [Path(text.rsplit("is saved at ", 1)[1].rstrip("]")) for text in outputs]
    assert len(set(paths)) == 2
    for path, name, letter in zip(paths, ("big1.txt", "big2.txt"), "AB", strict=True):
        full = path.read_text()
        assert full.startswith(f"{name} (lines 1-2000 of 2000)") and full.count(letter * 700) == 2000


@pytest.mark.anyio
async def test_setsid_descendants_of_run_shell_do_not_survive_the_run(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    import anyio

    command = (
        "setsid -f sh -c 'echo $$ > d1.pid; exec sleep 311' > /dev/null 2>&1; "
        "(setsid sh -c 'sleep 312 & echo $! > d2.pid; wait' > /dev/null 2>&1 &); "
        "while [ ! -s d1.pid ] || [ ! -s d2.pid ]; do sleep 0.02; done; echo daemons up"
    )
    server.script(tool_reply([("c1", "run_shell", {"command": command})]), text_reply("done"))
    tools = ws_tools(Workspace(workspace), allow_shell=True)
    result = await Agent(over_http(server, SleepRecorder()), tools=tools, trace_dir=tmp_path).run("x")
    assert result.output == "done"
    pids = [int((workspace / name).read_text()) for name in ("d1.pid", "d2.pid")]
    with anyio.move_on_after(10):
        while not all(process_gone(pid) for pid in pids):
            await anyio.sleep(0.02)
    assert [pid for pid in pids if not process_gone(pid)] == []


# ================================================================ kill -9 and SIGTERM, then resume
class KillScript:
    """The model of a kill trial. Iterations before ``k`` read a file; at ``k`` the signal lands,
    either while the model is being asked ("model") or while a tool runs ("tool"); after the
    resume, one more read and the answer."""

    def __init__(self, k: int, phase: str, sig: int, workspace: Path) -> None:
        self.k, self.phase, self.sig, self.workspace = k, phase, sig, workspace
        self.child: CliChild | None = None
        self.started = threading.Event()
        self.resumed_at: int | None = None

    def __call__(self, request: HTTPRequest) -> Any:
        n = iteration_of(request)
        if self.resumed_at is not None:
            return read_notes(f"r{n}") if n == self.resumed_at else text_reply("resumed and done")
        if n < self.k:
            return read_notes(f"c{n}")
        if self.phase == "model":
            self.started.wait(10)
            assert self.child is not None
            self.child.send(self.sig)
            return Hang()
        shell = {"command": "echo $$ > shell.pid; touch started; exec sleep 60"}
        return tool_reply([(f"c{n}a", "read_file", {"path": "notes.txt"}), (f"c{n}", "run_shell", shell)])


def _trial(seed: int) -> tuple[int, str]:
    rng = random.Random(seed)
    return rng.randint(2, 5), ("tool", "model")[seed % 2]


def _start_run(script: KillScript, server: FakeOpenAIServer, tmp_path: Path) -> CliChild:
    args = ["run", "read the notes", "--model", MODEL, "--api-base", server.base_url]
    args += ["--workspace", str(script.workspace), "--trace-dir", str(tmp_path / "traces"), "--allow-shell"]
    child = start_cli(args, cwd=tmp_path, env={"OPENAI_API_KEY": KEY}, name="run")
    script.child = child
    script.started.set()
    if script.phase == "tool":
        marker = script.workspace / "started"
        deadline = threading.Event()
        for _ in range(1500):
            if marker.exists() or not child.process.is_alive():
                break
            deadline.wait(0.01)
        assert marker.exists(), (tmp_path / "run.err").read_text()
        child.send(script.sig)
    return child


def _check_completed(history: list[Any], k: int) -> None:
    """Iterations 1..k-1 are all there: each call and its result."""
    for n in range(1, k):
        calls = [m for m in history if m.role == "assistant" and m.iteration == n]
        results = [m for m in history if m.role == "tool" and m.tool_call_id == f"c{n}"]
        assert len(calls) == 1 and calls[0].tool_calls[0].id == f"c{n}", n
        assert len(results) == 1 and NOTES.strip() in results[0].text, n


def _resume(script: KillScript, server: FakeOpenAIServer, trace: Path, tmp_path: Path) -> CliResult:
    before = len(server.chat_requests)
    history = load_history(trace)
    script.resumed_at = 1 + sum(1 for m in history if m.role == "assistant")
    args = ["resume", str(trace), "--api-base", server.base_url, "--workspace", str(script.workspace)]
    result = run_cli([*args, "--allow-shell"], cwd=tmp_path, env={"OPENAI_API_KEY": KEY}, name="resume")
    assert result.code == 0, result.stderr
    assert "resumed and done" in result.stdout and "Traceback" not in result.stderr
    first = server.chat_requests[before].body["messages"]  # what the resumed model saw first
    seen = {m.get("tool_call_id") for m in first if m["role"] == "tool"}
    assert {f"c{n}" for n in range(1, script.k)} <= seen  # 0 completed iterations lost
    return result


def _cleanup_shell(workspace: Path) -> None:
    """After a kill -9 the runtime cannot kill its shell: the test does, by pid."""
    pid_file = workspace / "shell.pid"
    if pid_file.exists() and pid_file.read_text().strip():
        pid = int(pid_file.read_text())
        if not process_gone(pid):
            os.kill(pid, signal.SIGKILL)
        waiter = threading.Event()
        with contextlib.suppress(ChildProcessError):  # not ours to reap (init or the forkserver is)
            for _ in range(200):  # ours when this process is a subreaper (after in-process run_shell)
                if os.waitpid(pid, os.WNOHANG)[0]:
                    break
                waiter.wait(0.01)


@pytest.mark.parametrize("trial", range(2))
def test_kill_9_at_a_random_iteration_then_resume(
    trial: int, server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    k, phase = _trial(SEED + trial)
    script = KillScript(k, phase, signal.SIGKILL, workspace)
    server.respond = script
    try:
        killed = _start_run(script, server, tmp_path).wait()
    finally:
        _cleanup_shell(workspace)
    assert killed.code == -signal.SIGKILL
    trace = next((tmp_path / "traces").glob("*.jsonl"))
    history = load_history(read_trace(trace))  # loadable, however the process died
    _check_completed(history, k)
    if phase == "tool":  # the paid reply of iteration k was on disk before its tools ran
        assert [m.iteration for m in history if m.role == "assistant"][-1] == k
    torn = b'{"v": 1, "type": "message", "message": {"role": "tool", "cont'  # killed mid-write
    with trace.open("ab") as handle:
        handle.write(torn)
    kept = trace.read_bytes()[: -len(torn)]

    _resume(script, server, trace, tmp_path)
    assert trace.with_name(trace.name + ".torn").read_bytes() == torn  # moved aside, not dropped
    assert trace.read_bytes().startswith(kept)  # nothing before it changed
    events = read_trace(trace)
    assert sum(isinstance(e, RunStarted) for e in events) == 2
    assert isinstance(events[-1], RunEnded) and events[-1].stop_reason == "answered"
    resumed = load_history(events)
    assert resumed[: len(history)] == history
    if phase == "tool":  # the calls the kill interrupted got their "interrupted" results
        texts = {m.tool_call_id: m.text for m in resumed if m.role == "tool" and m.iteration == k}
        assert set(texts) == {f"c{k}a", f"c{k}"} and all("interrupted" in t for t in texts.values())


@pytest.mark.parametrize("trial", range(2))
def test_sigterm_at_a_random_iteration_then_resume(
    trial: int, server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    k, phase = _trial(SEED + 100 + trial)
    script = KillScript(k, phase, signal.SIGTERM, workspace)
    server.respond = script
    try:
        ended = _start_run(script, server, tmp_path).wait()
    finally:
        _cleanup_shell(workspace)
    assert ended.code == 128 + signal.SIGTERM, ended.stderr
    trace = next((tmp_path / "traces").glob("*.jsonl"))
    assert "Traceback" not in ended.stderr
    assert f"interrupted by SIGTERM; continue with: tiered-agent resume {trace}" in ended.stderr
    events = read_trace(trace)
    assert isinstance(events[-1], RunEnded) and events[-1].stop_reason == "cancelled"
    history = load_history(events)
    _check_completed(history, k)
    if phase == "tool":  # the paid reply, each call of the step answered, the shell stopped
        texts = {m.tool_call_id: m.text for m in history if m.role == "tool" and m.iteration == k}
        assert set(texts) == {f"c{k}a", f"c{k}"} and "interrupted" in texts[f"c{k}"]
        # (the read finished or was interrupted, by timing; test_agent checks a finished one is kept)
        shell = int((workspace / "shell.pid").read_text())
        assert still_running([shell]) == []  # its process group was killed

    _resume(script, server, trace, tmp_path)
    events = read_trace(trace)
    assert isinstance(events[-1], RunEnded) and events[-1].stop_reason == "answered"
    assert load_history(events)[: len(history)] == history


# ================================================================ a full disk
def test_a_full_disk_ends_in_one_sentence_and_a_trace_without_a_torn_line(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "big.txt").write_text("".join(f"line {i}: {'x' * 60}\n" for i in range(1500)))  # 100 KB
    server.script(
        read_notes("c1"),
        tool_reply([("c2", "read_file", {"path": "big.txt"})]),
        text_reply("never reached"),
    )
    args = ["run", "x", "--model", MODEL, "--api-base", server.base_url, "--workspace", str(workspace)]
    traces = tmp_path / "traces"
    result = run_cli(
        [*args, "--trace-dir", str(traces)], cwd=tmp_path, env={"OPENAI_API_KEY": KEY}, fsize_limit=60_000
    )
    trace = next(traces.glob("*.jsonl"))
    assert result.code == 1, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"error: cannot write the trace {trace}: File too large; it keeps every event written before this one"
    ]
    data = trace.read_bytes()
    assert data.endswith(b"\n") and len(read_trace(trace)) == len(data.splitlines())  # no torn line
    events = read_trace(trace)
    assert isinstance(events[-1], RunEnded) and "File too large" in (events[-1].error or "")
    _check_completed(load_history(events), 2)


# ================================================================ CLI options and secrets
def test_request_timeout_and_max_retries_bound_a_hanging_provider(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.script(Hang(), Hang(), Hang())
    args = ["run", "x", "--model", MODEL, "--api-base", server.base_url, "--workspace", str(workspace)]
    args += ["--trace-dir", str(tmp_path / "t"), "--request-timeout", "0.3", "--max-retries", "1"]
    result = run_cli(args, cwd=tmp_path, env={"OPENAI_API_KEY": KEY})
    assert result.code == 1 and "Traceback" not in result.stderr
    assert "failed after 2 attempt(s): Timeout" in result.stdout
    assert len(server.chat_requests) == 2


SECRETS = {
    "OPENAI_API_KEY": "sk-proj-SECRETopenai0123456789abcdef",
    "GITHUB_TOKEN": "ghp_SECRETgithub0123456789",
    "AWS_SECRET_ACCESS_KEY": "SECRETaws/0123456789+abcdefXYZ",
    "DB_PASSWORD": "SECRET-db-pass-42",
}


def _secrets_run(server: FakeOpenAIServer, workspace: Path, tmp_path: Path, *extra: str) -> CliResult:
    """A run whose model reads the environment and a .env file, then leaks a secret in its answer."""
    (workspace / ".env").write_text("".join(f"{k}={v}\n" for k, v in SECRETS.items()))
    leak = f"Leaking: {SECRETS['DB_PASSWORD']} and https://x.example/v1?api-key={SECRETS['OPENAI_API_KEY']}"
    server.script(
        tool_reply([("c1", "run_shell", {"command": "env | sort"})]),
        tool_reply([("c2", "read_file", {"path": ".env"})]),
        text_reply(leak),  # a model that hallucinates a secret into its answer
    )
    args = ["run", f"use {SECRETS['GITHUB_TOKEN']}", "--model", MODEL, "--api-base", server.base_url]
    args += ["--workspace", str(workspace), "--trace-dir", str(tmp_path / "t"), "--allow-shell", *extra]
    result = run_cli(args, cwd=tmp_path, env=SECRETS)
    assert result.code == 0, result.stderr
    trace = next((tmp_path / "t").glob("*.jsonl")).read_text()
    prompts = json.dumps([r.body for r in server.chat_requests])
    places = {"trace": trace, "stdout": result.stdout, "stderr": result.stderr, "prompt": prompts}
    for name, value in SECRETS.items():
        for where, text in places.items():
            assert value not in text, f"{name} leaked into the {where}"
    assert "DB_PASSWORD=[redacted]" in server.chat_requests[2].body["messages"][-1]["content"]
    assert "Leaking: [redacted] and https://x.example/v1?api-key=[redacted]" in result.stdout
    return result


def test_secrets_never_reach_the_trace_the_console_or_the_prompt(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    _secrets_run(server, workspace, tmp_path)
    shell_output = server.chat_requests[1].body["messages"][-1]["content"]
    assert "HOME=" in shell_output and not any(name in shell_output for name in SECRETS)  # never passed


def test_shell_env_passes_a_chosen_variable_still_redacted(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    _secrets_run(server, workspace, tmp_path, "--shell-env", "GITHUB_TOKEN")
    shell_output = server.chat_requests[1].body["messages"][-1]["content"]
    assert "GITHUB_TOKEN=[redacted]" in shell_output  # passed on purpose, still never shown
    assert "OPENAI_API_KEY" not in shell_output and "AWS_SECRET" not in shell_output  # not passed


def test_a_key_in_the_api_base_is_redacted_from_the_error_sentence(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    secret = "SECRETurlkey0123456789"
    server.script(model_not_found_response("gpt-4o-mini"), model_not_found_response("gpt-4o-mini"))
    args = ["run", "x", "--model", MODEL, "--api-base", f"{server.base_url}?api-key={secret}"]
    result = run_cli([*args, "--trace-dir", str(tmp_path / "t")], cwd=tmp_path, env={"OPENAI_API_KEY": KEY})
    assert result.code == 2 and "Traceback" not in result.stderr
    assert secret not in result.stderr + result.stdout
    assert "?api-key=[redacted]" in result.stderr
    assert all(secret not in p.read_text() for p in (tmp_path / "t").glob("*.jsonl"))
