"""Hostile traces (issue 16): malformed lines, huge iteration numbers, duplicated and reordered
history, lone surrogates, FIFOs and devices, two writers at once.

Every reader (the strict one, the lenient scan, ``trace show|stats|html``, the bench, ``resume``)
reads or skips each line with its reason: never a traceback, never a hang.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from click.testing import CliRunner
from hostile_traces import hang_guard, provider_problems, sample_lines, write_lines, write_sample_trace

from tiered_agent import Agent, Workspace, workspace_tools
from tiered_agent._errors import ConfigurationError, TraceFormatError, TraceInUse
from tiered_agent._lock import TraceLock, lock_path
from tiered_agent._messages import Message, Usage, to_openai
from tiered_agent._model import map_usage
from tiered_agent._resume import INTERRUPTED, ResumeState
from tiered_agent._trace import (
    AgingRecord,
    ContextRecord,
    ErrorEvent,
    MessageEvent,
    ModelRequest,
    ModelResponse,
    RunStarted,
    SkippedLine,
    SummaryEvent,
    TraceWriter,
    read_trace,
    scan_trace,
)
from tiered_agent.bench._importers import load_runs
from tiered_agent.cli import cli
from tiered_agent.inspect import build_run, collect_stats, load_trace, render_page
from tiered_agent.inspect._tables import iteration_table, totals_table
from tiered_agent.testing import AgentRequest, FunctionModel

# The sample's lines: 1 run_start, 2 system, 3 task, then 5 per iteration k (request, reply,
# response, result message, tool_result): iteration k's reply is line 5k, its result 5k + 2.
REPLY = {k: 5 * k for k in range(1, 7)}
RESULT = {k: 5 * k + 2 for k in range(1, 7)}


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "notes.txt").write_text("notes\n")
    return write_sample_trace(tmp_path / "run.jsonl", tmp_path / "ws")


def _edited(path: Path, line: int, edit: Any) -> Path:
    lines = sample_lines(path)
    edit(lines[line - 1])
    return write_lines(path, lines)


def _set(key: str, value: Any) -> Any:
    return lambda data: data.__setitem__(key, value)


def _set_message(key: str, value: Any) -> Any:
    return lambda data: data["message"].__setitem__(key, value)


# The crash sites (#7, #8): the line, the edit, and the reason every reader gives.
MALFORMED = {
    "message is a string": (
        RESULT[2],
        _set("message", "x"),
        "message.message: a message is a JSON string, not an object",
    ),
    "tool_calls is a string": (
        REPLY[2],
        _set_message("tool_calls", "abc"),
        "message.message: tool_calls is a JSON string, not a list",
    ),
    "tool_call_id is an object": (
        RESULT[2],
        _set_message("tool_call_id", {"a": 1}),
        "message.message: tool_call_id is a JSON object, not text",
    ),
    "run_start tools is a string": (1, _set("tools", "x"), "run_start.tools is a JSON string, not a list"),
    "run_start model is a number": (1, _set("model", 5), "run_start.model is a JSON number, not text"),
    "run_start config is a string": (
        1,
        _set("config", "x"),
        "run_start.config is a JSON string, not an object",
    ),
    "a tool schema's function is a string": (
        1,
        lambda data: data["tools"][0].__setitem__("function", "read_file"),
        "run_start.tools[0].function is a JSON string, not an object",
    ),
    "iteration is huge": (
        RESULT[3],
        _set_message("iteration", 10**12),
        "message.message: iteration 1000000000000 is out of range (0 to 1,000,000)",
    ),
    "usage is a list": (
        REPLY[2] + 1,
        _set("usage", [1]),
        "model_response.usage is a JSON list, not an object",
    ),
}


def test_the_sample_trace_is_a_valid_run(sample: Path) -> None:
    scan = scan_trace(sample)
    assert scan.skipped == () and len(scan.events) == len(sample.read_bytes().splitlines())
    history = [e.message for e in scan.events if isinstance(e, MessageEvent)]
    assert provider_problems(to_openai(history)) == [] and len(history) == 2 + 2 * 6


@pytest.mark.parametrize("case", list(MALFORMED))
def test_each_reader_skips_a_malformed_line_with_its_reason(case: str, sample: Path) -> None:
    line, edit, reason = MALFORMED[case]
    path = _edited(sample, line, edit)
    total = len(path.read_bytes().splitlines())
    scan = scan_trace(path)
    assert scan.skipped == (SkippedLine(line, reason),)
    assert len(scan.events) == total - 1
    with pytest.raises(TraceFormatError) as strict:  # the strict reader: file, line and reason, nothing else
        read_trace(path)
    assert str(strict.value) == f"{path}:{line}: {reason}"
    loaded = load_trace(path)  # trace show | stats | html
    assert f"line {line}: {reason}" in (loaded.warning or "")
    run = build_run(loaded)
    iteration_table(run, width=200), totals_table(run.totals), render_page(run, embed_chars=2000)
    assert collect_stats([path]).warnings == (loaded.warning,)
    loaded_runs = load_runs([path])  # the bench skips the file with the reason
    assert [(s.path, s.reason) for s in loaded_runs.skipped] == [(str(path), f"line {line}: {reason}")]


@pytest.mark.parametrize("case", ["message is a string", "tool_calls is a string", "usage is a list"])
def test_trace_show_stats_and_html_print_one_warning_and_no_traceback(case: str, sample: Path) -> None:
    line, edit, reason = MALFORMED[case]
    path = _edited(sample, line, edit)
    for args in (["show", str(path)], ["stats", str(path)], ["html", str(path), "-o", str(path) + ".html"]):
        result = CliRunner().invoke(cli, ["trace", *args], env={"COLUMNS": "60"})  # the warning: one line
        assert result.exit_code == 0, (args, result.output, result.exception)
        assert result.exception is None or isinstance(result.exception, SystemExit)
        assert result.stderr.count("warning:") == 1 and f"line {line}: {reason}" in result.stderr


# ================================================================ resume: skip, repair, bound
def _resume(path: Path, workspace: Path, requests: list[AgentRequest], **kw: Any) -> Any:
    def answer(request: AgentRequest) -> Message:
        requests.append(request)
        return Message("assistant", "resumed and done")

    agent = Agent(
        FunctionModel(answer),
        tools=workspace_tools(Workspace(workspace)),
        context="tiered",
        trace_dir=path.parent,
    )

    async def main() -> Any:
        with anyio.fail_after(60):
            return await agent.resume(path, **kw)

    with hang_guard(90, "resume"):
        return anyio.run(main, backend="asyncio")


@pytest.mark.parametrize("case", ["message is a string", "tool_call_id is an object", "iteration is huge"])
def test_resume_skips_a_malformed_line_records_why_and_sends_a_valid_history(
    case: str, sample: Path, tmp_path: Path
) -> None:
    line, edit, reason = MALFORMED[case]
    path = _edited(sample, line, edit)
    requests: list[AgentRequest] = []
    result = _resume(path, tmp_path / "ws", requests, follow_up="go on")
    assert result.output == "resumed and done"
    assert provider_problems(requests[0].messages) == []  # the provider accepts what was sent
    events = scan_trace(path).events  # the bad line is still there (skipped again at every read)
    notes = [e.message for e in events if isinstance(e, ErrorEvent) and e.kind == "resume_repair"]
    assert notes[0] == f"line {line}: {reason}"
    lost = [m for m in requests[0].messages if m.get("content") == INTERRUPTED]
    assert [m["tool_call_id"] for m in lost] == [f"c{3 if case == 'iteration is huge' else 2}"]


def test_resume_repairs_duplicated_and_reordered_lines(sample: Path, tmp_path: Path) -> None:
    lines = sample_lines(sample)
    reply2, result3, result4, reply4 = (
        lines[REPLY[2] - 1],
        lines[RESULT[3] - 1],
        lines[RESULT[4] - 1],
        lines[REPLY[4] - 1],
    )
    lines.insert(REPLY[2], reply2)  # the reply of iteration 2 twice (lines 10 and 11)
    lines.insert(RESULT[3] + 1, result3)  # a result twice
    lines.remove(result4)
    lines.insert(lines.index(reply4), result4)  # a result before the call it answers
    path = write_lines(sample, lines)

    state = ResumeState.load(path, "go on")
    assert provider_problems(to_openai(state.history)) == []
    assert state.notes == (
        "line 11: dropped, a duplicate of line 10",
        "line 19: dropped, a result for call 'c3' that no call of iteration 3 is waiting for",
        "line 22: moved after the call it answers",
    )
    assert [m.tool_call_id for m in state.history if m.role == "tool"] == [f"c{k}" for k in range(1, 7)]
    requests: list[AgentRequest] = []
    result = _resume(path, tmp_path / "ws", requests, follow_up="go on")
    assert result.output == "resumed and done" and provider_problems(requests[0].messages) == []
    again = ResumeState.load(path, "and on")  # the repair is deterministic: the next resume agrees
    assert again.history[: len(state.history)] == state.history
    assert provider_problems(to_openai(again.history)) == []


def test_a_trace_without_a_task_is_refused_naming_it(sample: Path) -> None:
    lines = [line for index, line in enumerate(sample_lines(sample), 1) if index != 3]
    path = write_lines(sample, lines)
    with pytest.raises(ConfigurationError, match=r"run\.jsonl: the trace holds no task"):
        ResumeState.load(path, "go on")


def test_huge_iterations_in_summaries_and_aging_records_are_ignored(sample: Path, tmp_path: Path) -> None:
    lines = sample_lines(sample)
    summary = next(i for i, line in enumerate(lines) if line["type"] == "summary")
    lines[summary]["last_iteration"] = 10**12  # skipped at load: out of range
    lines.insert(summary, {**lines[summary], "last_iteration": 900_000})  # in range, but not this history's
    request = next(
        i for i, line in enumerate(lines) if line["type"] == "model_request" and line["iteration"] == 6
    )
    lines[request]["context"] = {"aging": {"epoch": {"at": 999_999, "through": 5, "condensed": 0}}}
    path = write_lines(sample, lines)
    state = ResumeState.load(path, "go on")
    assert not any(isinstance(event, SummaryEvent) for event in state.records)
    epochs = [aging.epoch for aging in _agings(state.records) if aging.epoch is not None]
    assert epochs and epochs[-1][1] == 2  # epochs up to iteration 5's record
    assert any("summary of iterations 1-900000 ignored" in n for n in state.notes)
    assert any("aging record ignored" in n for n in state.notes)
    assert _resume(path, tmp_path / "ws", [], follow_up="go on").output == "resumed and done"


def _agings(records: tuple[Any, ...]) -> list[AgingRecord]:
    requests = [event for event in records if isinstance(event, ModelRequest)]
    return [aging for event in requests if (aging := ContextRecord.from_dict(event.context).aging)]


# ================================================================ lone surrogates, negative usage
def test_the_writer_escapes_lone_surrogates_instead_of_failing(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    with TraceWriter(path) as writer:
        writer.write(RunStarted("r", "m", "bad \udcff task"))  # a non-UTF-8 byte, decoded by Python
        writer.write(MessageEvent(Message("assistant", "bad \ud800 surrogate", iteration=1)))
    started, reply = read_trace(path)
    assert isinstance(started, RunStarted) and started.task == "bad \\udcff task"
    assert isinstance(reply, MessageEvent) and reply.message.content == "bad \\ud800 surrogate"


def test_negative_and_odd_usage_is_read_as_missing(sample: Path) -> None:
    bad = {"prompt_tokens": -15_000_000, "completion_tokens": 2.5, "cached_tokens": "9", "cost": -1.0}
    assert Usage.from_dict(bad) == Usage(requests=0)
    assert map_usage({"prompt_tokens": -1_000_000, "completion_tokens": -5}) == Usage(requests=1)
    assert map_usage({"prompt_tokens": float("nan"), "completion_tokens": 10**20}) == Usage(requests=1)
    path = _edited(sample, REPLY[1] + 1, lambda data: data["usage"].update(bad))
    response = next(e for e in read_trace(path) if isinstance(e, ModelResponse))
    assert response.usage == Usage(requests=1)  # the line is kept; its bad figures are not
    assert build_run(load_trace(path)).totals.prompt_tokens >= 0


# ================================================================ FIFOs and devices (#20)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_fifo_or_a_device_is_refused_in_one_sentence(kind: str, tmp_path: Path) -> None:
    if kind == "fifo":
        path = tmp_path / "run.jsonl"
        os.mkfifo(path)
        what = "a FIFO (named pipe)"
    else:
        path, what = Path("/dev/zero"), "a character device"
    sentence = f"{path} is {what}, not a regular file: it cannot be a trace"
    with hang_guard(10, "reading a FIFO"):
        for read in (scan_trace, read_trace, load_trace):
            with pytest.raises(TraceFormatError) as refused:
                read(path)
            assert str(refused.value) == sentence
        result = CliRunner().invoke(cli, ["trace", "show", str(path)], env={"COLUMNS": "200"})
        assert result.exit_code == 2 and sentence in result.stderr and "Traceback" not in result.output
        stats = collect_stats([path])
        assert stats.warnings == (sentence,) and stats.skipped == (str(path),)
        with pytest.raises(ConfigurationError) as bench:
            load_runs([path])
        assert str(bench.value) == f"{path}: {what}, not a file or folder of recorded runs or traces"


def test_an_overlong_line_is_skipped_unread(sample: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tiered_agent import _trace

    monkeypatch.setattr(_trace, "MAX_LINE_BYTES", 4096)
    lines = sample_lines(sample)
    lines[RESULT[2] - 1]["message"]["content"] = "x" * 10_000
    path = write_lines(sample, lines)
    assert scan_trace(path).skipped == (SkippedLine(RESULT[2], "longer than 0 MB"),)


# ================================================================ the trace lock (#2)
def test_a_second_writer_is_refused_naming_the_holder(sample: Path) -> None:
    before = sample.read_bytes()
    with TraceLock(sample):
        with pytest.raises(TraceInUse) as refused:
            TraceWriter(sample).open()
        assert str(refused.value).startswith(f"{sample} is in use by process {os.getpid()} (")
        assert "wait for that run to end (or stop it) before resuming it" in str(refused.value)
        with pytest.raises(TraceInUse):
            _resume(sample, sample.parent / "ws", [], follow_up="go on")
    assert sample.read_bytes() == before  # nothing appended by the refused ones
    assert not lock_path(sample).exists()  # released and removed


def test_the_lock_of_a_killed_holder_is_taken_over(sample: Path) -> None:
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import fcntl, os, sys, time; fd = os.open(sys.argv[1], os.O_RDWR | os.O_CREAT); "
            "fcntl.flock(fd, fcntl.LOCK_EX); os.write(fd, b'{\"pid\": %d}' % os.getpid()); "
            "print('locked', flush=True); time.sleep(60)",
            str(lock_path(sample)),
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"locked\n"
        with pytest.raises(TraceInUse, match=f"in use by process {holder.pid}"):
            TraceLock(sample).acquire()
    finally:
        holder.send_signal(signal.SIGKILL)  # kill -9: its flock goes with it, its .lock file stays
        holder.wait()
    assert lock_path(sample).exists()
    lock = TraceLock(sample).acquire()
    assert orjson.loads(lock_path(sample).read_bytes())["pid"] == os.getpid()
    lock.release()
