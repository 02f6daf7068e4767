"""End to end over real HTTP: litellm → fake OpenAI-compatible server on 127.0.0.1 → our loop and tools."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from fake_openai_server import FakeOpenAIServer, HTTPRequest, auth_error_response
from fakes import make_usage, text_reply, tool_reply

from tiered_agent import Agent, LiteLLMModel, RetryPolicy, Workspace, workspace_tools
from tiered_agent._trace import MessageEvent, ModelResponse, RetrievalEvent, read_trace

BIG_LINES = [f"def handler_{i}(): return retry_delay * {i}  # line {i}" for i in range(300)]
BIG = "\n".join(BIG_LINES) + "\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    (root / "big.py").write_text(BIG)
    (root / "notes.txt").write_text("the retry delay doubles each attempt\n")
    return root


def retrieval_model(request: HTTPRequest) -> object:
    """Read big.py; follow the truncation hint with context_retrieve page by page; answer with the result."""
    messages = request.body["messages"]
    tool_messages = [m for m in messages if m["role"] == "tool"]
    usage = make_usage(prompt=1000 + 100 * len(messages), completion=20, cached=800)
    if not tool_messages:
        return tool_reply([("call_read", "read_file", {"path": "big.py"})], usage)
    last = tool_messages[-1]["content"]
    if len(tool_messages) == 1:
        hint = re.search(r'context_retrieve\(tool_call_id="([^"]+)"\)', last)
        assert hint, f"no retrieval hint in the truncated output: {last[-300:]}"
        return tool_reply([("call_get1", "context_retrieve", {"tool_call_id": hint.group(1)})], usage)
    next_page = re.search(r"call again with page=(\d+)", last)
    if next_page:
        args = {"tool_call_id": "call_read", "page": int(next_page.group(1))}
        return tool_reply([(f"call_get{next_page.group(1)}", "context_retrieve", args)], usage)
    retrieved = "".join(m["content"] for m in tool_messages[1:])
    found = all(f"def handler_{i}():" in retrieved for i in range(300))
    return text_reply(f"retrieved full output: {found}", usage)


@pytest.mark.anyio
async def test_truncated_output_is_recovered_with_the_hinted_retrieval(
    workspace: Path, tmp_path: Path
) -> None:
    with FakeOpenAIServer() as server:
        server.respond = retrieval_model
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test-not-real")
        agent = Agent(
            model,
            tools=workspace_tools(Workspace(workspace)),
            context="kb-labs-adr",  # 500-char outputs: big.py is cut
            trace_dir=tmp_path / "traces",
        )
        result = await agent.run("How is the retry delay used in big.py?")

    assert result.output == "retrieved full output: True"
    assert result.usage.prompt_tokens == sum(
        1000 + 100 * len(r.body["messages"]) for r in server.chat_requests
    )
    assert result.usage.cached_tokens == 800 * 4 and result.usage.requests == 4
    second = server.chat_requests[1].body
    assert "context_retrieve" in [t["function"]["name"] for t in second["tools"]]
    assert len(second["messages"][-1]["content"]) < 1000  # the model saw the truncated form
    events = read_trace(result.trace_path)
    retrievals = [e for e in events if isinstance(e, RetrievalEvent)]
    assert [(r.filters, r.page, r.pages) for r in retrievals] == [
        ({"tool_call_id": "call_read"}, 1, 2),
        ({"tool_call_id": "call_read"}, 2, 2),
    ]
    full = [
        e.message for e in events if isinstance(e, MessageEvent) and e.message.tool_call_id == "call_read"
    ]
    assert "handler_299" in (full[0].content or "")  # the trace holds the untruncated output
    assert [e.usage.cached_tokens for e in events if isinstance(e, ModelResponse)] == [800] * 4
    assert "sk-test-not-real" not in result.trace_path.read_text()


def _cli(
    args: list[str], cwd: Path, env_extra: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    env.update({"COLUMNS": "200", "OPENAI_API_KEY": "sk-test-not-real", **(env_extra or {})})
    return subprocess.run(
        [sys.executable, "-m", "tiered_agent", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def multi_step_model(request: HTTPRequest) -> object:
    n = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
    usage = make_usage(prompt=900 + 50 * n, completion=30, cached=512 if n else 0)
    steps = [
        tool_reply([("c1", "list_dir", {"path": "."})], usage),
        tool_reply(
            [("c2", "read_file", {"path": "big.py"}), ("c3", "read_file", {"path": "notes.txt"})], usage
        ),
        tool_reply([("c4", "search_text", {"pattern": "handler_29[0-9]"})], usage),
    ]
    return steps[n] if n < len(steps) else text_reply("The retry delay doubles each attempt.", usage)


def test_cli_run_multi_step_against_loopback_server(workspace: Path, tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    with FakeOpenAIServer() as server:
        server.respond = multi_step_model
        proc = _cli(
            [
                "run",
                "Explain the retry delay",
                "--model",
                "openai/gpt-4o-mini",
                "--api-base",
                server.base_url,
                "--workspace",
                str(workspace),
                "--trace-dir",
                str(traces),
            ],
            cwd=tmp_path,
        )
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "The retry delay doubles each attempt." in out
    assert re.search(r"iter 1 prompt 900 tok \(0\.7% of 128,000", out), out
    assert "read_file" in out and "search_text" in out
    assert re.search(r"saved \d+% vs full history", out)
    trace = next(traces.glob("*.jsonl"))
    assert str(trace) in out.replace("\n", "")
    contents = [json.loads(line) for line in trace.read_text().splitlines()]
    outputs = {
        e["message"]["tool_call_id"]: e["message"]["content"]
        for e in contents
        if e["type"] == "message" and e["message"]["role"] == "tool"
    }
    read_big = outputs["c2"].splitlines()  # full, untruncated tool output in the trace
    assert read_big[0] == "big.py (lines 1-300 of 300)"
    assert [line.split("\t", 1)[1] for line in read_big[1:]] == BIG_LINES
    assert contents[-1]["type"] == "run_end" and contents[-1]["stop_reason"] == "answered"


def test_cli_without_model_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    proc = _cli(["run", "x"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "No model given" in proc.stderr and "Traceback" not in proc.stderr


def test_cli_rejected_credentials_is_one_sentence_and_exit_1(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(auth_error_response())
        proc = _cli(
            [
                "run",
                "x",
                "--model",
                "openai/gpt-4o-mini",
                "--api-base",
                server.base_url,
                "--trace-dir",
                str(tmp_path / "t"),
            ],
            cwd=tmp_path,
        )
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stderr and "OPENAI_API_KEY" in proc.stderr


def test_cli_help_does_not_import_litellm(tmp_path: Path) -> None:
    code = (
        "import sys, runpy; sys.argv=['tiered-agent','--help']\n"
        "try:\n    runpy.run_module('tiered_agent', run_name='__main__')\nexcept SystemExit:\n    pass\n"
        "assert 'litellm' not in sys.modules, 'litellm imported by --help'\nprint('OK')"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=tmp_path, timeout=60, check=False
    )
    assert proc.returncode == 0 and proc.stdout.strip().endswith("OK"), proc.stderr
    assert "bench" in proc.stdout and "run" in proc.stdout


@pytest.mark.anyio
async def test_refused_connection_is_retried_then_reported(tmp_path: Path) -> None:
    from fake_openai_server import free_port

    delays: list[float] = []

    async def record(delay: float) -> None:
        delays.append(delay)

    model = LiteLLMModel(
        "openai/gpt-4o-mini",
        api_base=f"http://127.0.0.1:{free_port()}/v1",
        api_key="sk-test",
        retry=RetryPolicy(max_attempts=3, jitter=0.0),
        sleep=record,
    )
    result = await Agent(model, trace_dir=tmp_path).run("x")
    assert result.stop_reason.value == "error" and "3 attempt" in (result.error or "")
    assert delays == [1.0, 2.0]


@pytest.mark.anyio
async def test_the_trace_records_the_endpoint_a_router_named_and_the_bench_reads_it(tmp_path: Path) -> None:
    """OpenRouter's ``provider`` reaches the trace as the call's route; the replay's cache per endpoint."""
    from fake_openai_server import RawReply

    from tiered_agent.bench._import_trace import load_trace_run

    routed = {**text_reply("done").to_openai("gpt-4o-mini"), "provider": "Google AI Studio"}
    with FakeOpenAIServer() as server:
        server.script(RawReply(json.dumps(routed).encode()))
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test")
        result = await Agent(model, trace_dir=tmp_path).run("x")
    [response] = [e for e in read_trace(result.trace_path) if isinstance(e, ModelResponse)]
    assert response.route == "Google AI Studio"
    assert load_trace_run(result.trace_path).routes == ("Google AI Studio",)


def test_cli_unknown_policy_is_bad_usage(tmp_path: Path) -> None:
    proc = _cli(["run", "x", "--model", "openai/gpt-4o-mini", "--policy", "nope"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "Invalid value for '--policy': 'nope' is not one of 'tiered'" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_cli_context_window_for_a_model_litellm_does_not_know(workspace: Path, tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(tool_reply([("c1", "list_dir", {})], make_usage(prompt=2_000)), text_reply("done"))
        args = ["run", "x", "--model", "openai/my-finetune", "--api-base", server.base_url]
        proc = _cli([*args, "--context-window", "8000", "--workspace", str(workspace)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "prompt 2,000 tok (25.0% of 8,000;" in proc.stdout


SUMMARY_REQUEST = "[Working memory request."


class SummarizingModel:
    """Eleven iterations of tool calls, then an answer; a summary request gets a working memory.

    Agent requests are counted here: once a summary lands, the prompt holds fewer messages.
    """

    def __init__(self) -> None:
        self.agent_requests = 0

    def __call__(self, request: HTTPRequest) -> object:
        messages = request.body["messages"]
        if messages[-1]["role"] == "user" and str(messages[-1]["content"]).startswith(SUMMARY_REQUEST):
            return text_reply("Task: explain\nFiles:\n- notes.txt: read 1", make_usage(1500, 25, cached=1400))
        n = self.agent_requests
        self.agent_requests += 1
        usage = make_usage(prompt=900 + 50 * n, completion=30)
        if n < 11:
            return tool_reply([(f"c{n}", "read_file", {"path": "notes.txt", "end_line": 1 + n % 2})], usage)
        return text_reply("The retry delay doubles each attempt.", usage)


def _summarizing_run(workspace: Path, tmp_path: Path, *extra: str) -> tuple[list[HTTPRequest], list[dict]]:
    traces = tmp_path / "traces"
    with FakeOpenAIServer() as server:
        server.respond = SummarizingModel()
        args = [
            "run",
            "Explain the retry delay",
            "--model",
            "openai/gpt-4o-mini",
            "--api-base",
            server.base_url,
        ]
        args += ["--workspace", str(workspace), "--trace-dir", str(traces), "--policy", "kb-labs-adr", *extra]
        proc = _cli(args, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    events = [json.loads(line) for line in next(traces.glob("*.jsonl")).read_text().splitlines()]
    return server.chat_requests, [e for e in events if e["type"] == "summary"]


def test_cli_run_summarizes_with_its_own_model_riding_the_cached_prompt(
    workspace: Path, tmp_path: Path
) -> None:
    requests, summaries = _summarizing_run(workspace, tmp_path)
    asked = [r for r in requests if str(r.body["messages"][-1]["content"]).startswith(SUMMARY_REQUEST)]
    agent = [r for r in requests if r not in asked]
    assert len(asked) == 1 and len(agent) == 12  # kb-labs-adr: a summary of 1-5 queued after iteration 10
    summary = asked[0].body
    assert summary["model"] == "gpt-4o-mini"  # the run's own model, at its --api-base
    # the 10th prompt the agent sent, byte for byte, then the instruction
    assert json.dumps(summary["messages"][:-1]) == json.dumps(agent[9].body["messages"])
    assert json.dumps(summary["tools"]) == json.dumps(agent[9].body["tools"])
    assert "iterations 1-5" in summary["messages"][-1]["content"]
    assert [(s["first_iteration"], s["last_iteration"], s["model"]) for s in summaries] == [
        (1, 5, "openai/gpt-4o-mini")
    ]
    assert (summaries[0]["input_tokens"], summaries[0]["output_tokens"]) == (1500, 25)


def test_cli_summary_model_digest_makes_no_summary_request(workspace: Path, tmp_path: Path) -> None:
    requests, summaries = _summarizing_run(workspace, tmp_path, "--summary-model", "digest")
    assert not [r for r in requests if str(r.body["messages"][-1]["content"]).startswith(SUMMARY_REQUEST)]
    assert [(s["first_iteration"], s["last_iteration"], s["model"]) for s in summaries] == [(1, 5, None)]
    assert summaries[0]["text"].startswith("Working memory of iterations 1-5\nTask: Explain the retry delay")
