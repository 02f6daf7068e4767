"""Hostile models, files and runs through the real CLI (issue 16): a child process per run, a fake
OpenAI-compatible server on 127.0.0.1, signals, FIFOs, secrets, escapes and non-UTF-8 input.

Each test fails on the code before the fix (it hung, crashed, leaked or lied) and holds now.
"""

from __future__ import annotations

import json
import os
import signal
import threading
from pathlib import Path

import anyio
import orjson
import pytest
from cli_harness import CliResult, notes_workspace, run_cli, start_cli
from click.testing import CliRunner
from fake_openai_server import FakeOpenAIServer, Hang, RawReply
from fakes import make_usage, text_reply, tool_reply
from hostile_traces import provider_problems, sample_lines, write_lines, write_sample_trace
from processes import still_running

from tiered_agent import Agent, ToolSet, tool
from tiered_agent._instructions import load_instructions
from tiered_agent._messages import ToolCall
from tiered_agent._shell import shell_tool
from tiered_agent._trace import MessageEvent, RunStarted, read_trace
from tiered_agent.cli import cli
from tiered_agent.testing import FunctionModel, calls

MODEL = "openai/gpt-4o-mini"
KEY = "sk-test-hostile-0123456789"
ENV = {"OPENAI_API_KEY": KEY}
CATASTROPHIC = "a" * 40 + "!"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return notes_workspace(tmp_path)


def _run_args(server: FakeOpenAIServer, workspace: Path, tmp_path: Path, task: str = "x") -> list[str]:
    return [
        "run",
        task,
        "--model",
        MODEL,
        "--api-base",
        server.base_url,
        "--workspace",
        str(workspace),
        "--trace-dir",
        str(tmp_path / "traces"),
    ]


def _wait_for(path: Path, seconds: float = 30) -> None:
    waiter = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if path.exists() and path.stat().st_size:
            return
        waiter.wait(0.02)
    raise AssertionError(f"{path} never appeared")


def _trace_of(tmp_path: Path) -> Path:
    return next((tmp_path / "traces").glob("*.jsonl"))


# ================================================================ 1: a catastrophic regex in a run
def test_a_catastrophic_pattern_in_a_run_is_answered_at_once(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    pytest.importorskip("re2")
    (workspace / "a.txt").write_text(f"{CATASTROPHIC}\n")
    server.script(tool_reply([("c1", "search_text", {"pattern": r"(a+)+$"})]), text_reply("no match"))
    result = run_cli(_run_args(server, workspace, tmp_path), cwd=tmp_path, env=ENV)  # was: frozen for good
    assert result.code == 0, result.stderr
    assert server.chat_requests[1].body["messages"][-1]["content"] == "No matches for '(a+)+$' in '.'."


def test_sigterm_stops_a_run_whose_search_backtracks(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    (workspace / "a.txt").write_text(f"{CATASTROPHIC}\n")
    server.script(
        tool_reply([("c1", "search_text", {"pattern": r"(a+)+(?=!)x"})]), text_reply("never reached")
    )
    child = start_cli(_run_args(server, workspace, tmp_path), cwd=tmp_path, env=ENV)
    waiter = threading.Event()
    for _ in range(1500):  # until the model asked for the search
        if server.chat_requests:
            break
        waiter.wait(0.02)
    waiter.wait(1.0)  # the search's child process is backtracking now (for hours, if left alone)
    child.send(signal.SIGTERM)
    ended = child.wait(60)  # was: SIGTERM ignored, only kill -9 ended it, and no run_end
    assert ended.code == 128 + signal.SIGTERM, ended.stderr
    assert "Traceback" not in ended.stderr and len(server.chat_requests) == 1
    events = read_trace(_trace_of(tmp_path))
    assert events[-1].type == "run_end"


# ================================================================ 2: two resumes of one trace
def test_a_second_resume_is_refused_naming_the_first(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    trace = write_sample_trace(tmp_path / "run.jsonl", workspace)
    before = trace.read_bytes()
    server.script(Hang())  # the first resume waits for its model: it holds the trace
    args = [
        "resume",
        str(trace),
        "--api-base",
        server.base_url,
        "--workspace",
        str(workspace),
        "--follow-up",
        "go on",
    ]
    first = start_cli(args, cwd=tmp_path, env=ENV, name="first")
    waiter = threading.Event()
    for _ in range(1500):
        if server.chat_requests:
            break
        waiter.wait(0.02)
    second = run_cli(args, cwd=tmp_path, env=ENV, name="second")
    first.send(signal.SIGTERM)
    first_ended = first.wait(60)
    assert second.code == 2, second.stderr
    assert second.stderr.strip().startswith(f"error: {trace} is in use by process {first.pid} (")
    assert "wait for that run to end (or stop it) before resuming it" in second.stderr
    assert first_ended.code == 128 + signal.SIGTERM
    events = read_trace(trace)
    assert sum(isinstance(e, RunStarted) for e in events) == 2  # the sample's and the first resume's
    assert trace.read_bytes().startswith(before)


# ================================================================ 3: a lone surrogate in the reply
def test_a_reply_with_a_lone_surrogate_is_traced_and_printed(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    body = (
        b'{"id": "x", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini", "choices": '
        b'[{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", '
        b'"content": "bad \\ud800 surrogate"}}], "usage": {"prompt_tokens": 5, "completion_tokens": 3, '
        b'"total_tokens": 8}}'
    )
    server.script(RawReply(body))
    result = run_cli(_run_args(server, workspace, tmp_path), cwd=tmp_path, env=ENV)
    assert result.code == 0, result.stderr  # was: exit 1, a traceback, and the paid reply lost
    assert "bad \\ud800 surrogate" in result.stdout
    events = read_trace(_trace_of(tmp_path))
    replies = [e.message for e in events if isinstance(e, MessageEvent) and e.message.role == "assistant"]
    assert [m.content for m in replies] == ["bad \\ud800 surrogate"]


# ================================================================ 5: the endpoint of a resume
def test_resume_sends_the_key_only_where_the_command_line_or_environment_says(
    workspace: Path, tmp_path: Path
) -> None:
    with FakeOpenAIServer() as recorded, FakeOpenAIServer() as chosen:
        trace = write_sample_trace(tmp_path / "run.jsonl", workspace)
        lines = sample_lines(trace)
        lines[0]["config"]["api_base"] = recorded.base_url
        write_lines(trace, lines)
        chosen.script(text_reply("from the chosen endpoint"), text_reply("again"))
        args = ["resume", str(trace), "--workspace", str(workspace), "--follow-up", "go on"]
        result = run_cli(args, cwd=tmp_path, env={**ENV, "OPENAI_API_BASE": chosen.base_url})
        assert result.code == 0, result.stderr
        assert recorded.chat_requests == [] and len(chosen.chat_requests) == 1
        assert f"endpoint: {chosen.base_url} ($OPENAI_API_BASE)" in result.stdout
        assert (
            f"the run used the endpoint {recorded.base_url}, which this resume does not use" in result.stdout
        )
        recorded.script(text_reply("at the recorded endpoint, on request"))
        again = run_cli([*args, "--api-base", recorded.base_url], cwd=tmp_path, env=ENV, name="again")
        assert again.code == 0, again.stderr
        assert len(recorded.chat_requests) == 1  # used only when repeated with --api-base
        assert f"endpoint: {recorded.base_url} (--api-base)" in again.stdout


# ================================================================ 6: spill files are redacted
def test_a_spilled_output_is_redacted_like_the_trace(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    token = "ghp_HOSTILEspill0123456789abcdef"
    monkeypatch.setenv("GITHUB_TOKEN", token)

    @tool
    def dump() -> str:
        """Return a 5 MB log that ends with a token."""
        return "log line\n" * 580_000 + f"token={os.environ['GITHUB_TOKEN']}\n"

    model = FunctionModel.scripted([calls(("dump", {})), "done"])
    result = anyio.run(Agent(model, tools=[dump], trace_dir=tmp_path).run, "dump it")
    spilled = list(result.trace_path.with_suffix(".outputs").glob("*.out"))
    assert len(spilled) == 1
    data = spilled[0].read_bytes()
    assert token.encode() not in data and data.endswith(b"token=[redacted]\n")  # was: the raw token
    assert data.count(b"log line\n") == 580_000
    assert token not in result.trace_path.read_text()


# ================================================================ 11 and 21: descendants and kill -9
@pytest.mark.anyio
async def test_setsid_env_i_descendants_do_not_survive_the_command(tmp_path: Path) -> None:
    command = (
        "setsid env -i /bin/sleep 1234 & echo $! > one.pid; "
        "(setsid env -i /bin/sh -c '/bin/sleep 1235 & echo $! > two.pid' &); "
        "while [ ! -s two.pid ]; do sleep 0.02; done; echo started"
    )
    tools = ToolSet([shell_tool(tmp_path)])
    call = ToolCall("c", "run_shell", orjson.dumps({"command": command}).decode())
    outcome = await tools.execute(call)
    assert outcome.content == "started\nexit code: 0"
    pids = [int((tmp_path / name).read_text()) for name in ("one.pid", "two.pid")]
    assert still_running(pids) == []  # was: both left running, their environment marker cleared


def test_kill_9_during_run_shell_leaves_nothing_running(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    shell = {"command": "echo $$ > shell.pid; (setsid /bin/sleep 61 & echo $! > daemon.pid); exec sleep 60"}
    server.script(tool_reply([("c1", "run_shell", shell)]), text_reply("resumed"))
    child = start_cli([*_run_args(server, workspace, tmp_path), "--allow-shell"], cwd=tmp_path, env=ENV)
    _wait_for(workspace / "daemon.pid")
    child.send(signal.SIGKILL)
    assert child.wait(30).code == -signal.SIGKILL
    pids = [int((workspace / name).read_text()) for name in ("shell.pid", "daemon.pid")]
    assert still_running(pids) == []  # was: the group and the daemon ran on, resume did not clean up
    trace = _trace_of(tmp_path)
    resumed = run_cli(
        ["resume", str(trace), "--api-base", server.base_url, "--workspace", str(workspace)],
        cwd=tmp_path,
        env=ENV,
    )
    assert resumed.code == 0 and "resumed" in resumed.stdout, resumed.stderr


# ================================================================ 12: negative usage
def test_negative_usage_neither_defeats_the_budget_nor_prints_negative(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    lying = make_usage(prompt=-15_000_000, completion=-5)
    server.respond = lambda request: tool_reply(
        [(f"c{len(server.chat_requests)}", "read_file", {"path": "notes.txt"})], lying
    )
    args = [*_run_args(server, workspace, tmp_path), "--token-budget", "3000", "--max-iterations", "30"]
    result = run_cli(args, cwd=tmp_path, env=ENV)
    assert result.code == 1 and "stopped: token_budget" in result.stdout, result.stdout
    assert " -" not in result.stdout.replace(" - ", "")  # no negative number anywhere
    assert "prompt 0 · completion 0" in result.stdout  # the provider's figures read as missing
    assert len(server.chat_requests) < 30


# ================================================================ 13: terminal escapes
HOSTILE_ANSWER = "done \x1b]0;pwned\x07\x1b[2J\x1b[31mred\r\u202egnp.exe\x9b"


def test_control_characters_are_printed_as_escapes(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.script(
        tool_reply([("c1", "read_file", {"path": "no\x1b[2J.txt"})]),
        text_reply(HOSTILE_ANSWER),
    )
    result = run_cli(_run_args(server, workspace, tmp_path), cwd=tmp_path, env=ENV)
    assert result.code == 0, result.stderr
    printed = result.stdout + result.stderr
    for raw in ("\x1b", "\x07", "\r", "\u202e", "\x9b"):
        assert raw not in printed  # was: the answer printed with raw ESC, OSC and U+202E
    assert "done \\x1b]0;pwned\\x07\\x1b[2J\\x1b[31mred\\r\\u202egnp.exe\\x9b" in result.stdout
    assert "no\\u001b[2J.txt" in result.stdout  # the call's JSON arguments keep their own escapes
    shown = CliRunner().invoke(cli, ["trace", "show", str(_trace_of(tmp_path))], env={"COLUMNS": "200"})
    assert shown.exit_code == 0 and "\x1b" not in shown.output
    as_json = CliRunner().invoke(cli, ["trace", "show", "--json", str(_trace_of(tmp_path))])
    assert as_json.exit_code == 0 and "\u202e" not in as_json.stdout and "\x9b" not in as_json.stdout
    json.loads(as_json.stdout)  # still JSON


# ================================================================ 15: non-UTF-8 input
def test_a_non_utf8_task_is_one_sentence_and_no_trace(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    result = run_cli(_run_args(server, workspace, tmp_path, task="bad \udcff task"), cwd=tmp_path, env=ENV)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "TASK is not valid UTF-8 text (byte 0xff at character 5); pass it as UTF-8." in result.stderr
    assert not list((tmp_path / "traces").glob("*.jsonl")) if (tmp_path / "traces").exists() else True
    assert server.chat_requests == []


def test_a_non_utf8_workspace_is_one_sentence_and_agents_md_never_crashes(
    server: FakeOpenAIServer, tmp_path: Path
) -> None:
    odd = Path(os.fsdecode(bytes(tmp_path) + b"/ws\xff"))
    odd.mkdir()
    (odd / "AGENTS.md").write_text("Always answer in French.\n")
    result = run_cli(_run_args(server, odd, tmp_path), cwd=tmp_path, env=ENV)
    assert result.code == 2 and "Traceback" not in result.stderr
    assert "--workspace is not valid UTF-8 text (byte 0xff at character" in result.stderr
    instructions = load_instructions(odd, home=tmp_path)  # the library: the path is shown escaped
    assert "ws\\udcff" in instructions.text and "Always answer in French." in instructions.text
    instructions.text.encode("utf-8")  # was: UnicodeEncodeError


# ================================================================ 16: a summary model that never answers
def test_bench_with_a_summary_model_that_fails_reports_no_savings(tmp_path: Path) -> None:
    source = Path(__file__).parent.parent / "traces" / "tau-bench" / "task11_trial0.jsonl"
    out = tmp_path / "out"
    args = ["bench", str(source), "--policies", "kb-labs-adr", "--summary-model", "nonexistent/model"]
    result = CliRunner().invoke(cli, [*args, "--out", str(out), "--workers", "1"])
    assert result.exit_code == 1, result.output
    assert "--summary-model 'nonexistent/model' could not summarize (ModelNotFoundError" in result.stderr
    assert "the numbers of 'kb-labs-adr' would claim savings its summaries never made" in result.stderr
    assert not (out / "bench.json").exists()  # was: exit 0 and "kb-labs-adr saves 21.3%"


# ================================================================ 19: a damaged history at resume
def test_resume_repairs_a_duplicated_history_and_says_what_it_did(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    trace = write_sample_trace(tmp_path / "run.jsonl", workspace)
    lines = sample_lines(trace)
    lines.insert(10, lines[9])  # iteration 2's reply twice
    lines.insert(20, lines.pop(22))  # iteration 4's result (line 23) before its call (now line 22)
    write_lines(trace, lines)
    server.script(text_reply("repaired and done"))
    args = [
        "resume",
        str(trace),
        "--api-base",
        server.base_url,
        "--workspace",
        str(workspace),
        "--follow-up",
        "go on",
    ]
    result = run_cli(args, cwd=tmp_path, env=ENV)
    assert result.code == 0, result.stderr
    assert provider_problems(server.chat_requests[0].body["messages"]) == []  # was: 400 at every resume
    assert "resume_repair: line 11: dropped, a duplicate of line 10" in result.stdout
    assert "resume_repair: line 21: moved after the call it answers" in result.stdout


# ================================================================ 20: FIFOs on the command line
def test_resume_and_bench_refuse_a_fifo_in_one_sentence(workspace: Path, tmp_path: Path) -> None:
    fifo = tmp_path / "run.jsonl"
    os.mkfifo(fifo)
    result = run_cli(["resume", str(fifo), "--workspace", str(workspace)], cwd=tmp_path, env=ENV, timeout=30)
    assert result.code == 2, result.stderr  # was: a hang
    assert f"{fifo} is a FIFO (named pipe), not a regular file, so it cannot be a trace." in result.stderr
    bench = CliRunner().invoke(cli, ["bench", str(fifo), "--out", str(tmp_path / "out")])
    assert bench.exit_code == 1  # was: "no such file"
    assert f"{fifo}: a FIFO (named pipe), not a file or folder of recorded runs or traces" in bench.stderr


# ================================================================ 4: read_file on a FIFO in a run
def test_read_file_on_a_fifo_goes_back_to_the_model(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    os.mkfifo(workspace / "pipe")
    server.script(tool_reply([("c1", "read_file", {"path": "pipe"})]), text_reply("no pipe reading"))
    result: CliResult = run_cli(_run_args(server, workspace, tmp_path), cwd=tmp_path, env=ENV, timeout=60)
    assert result.code == 0, result.stderr  # was: a hang, and no exit after SIGTERM
    tool_message = server.chat_requests[1].body["messages"][-1]
    assert tool_message["content"] == "Error: 'pipe' is a FIFO (named pipe): only regular files can be read"
