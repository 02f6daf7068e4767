"""``tiered-agent batch`` / ``run_batch``: many agents against the loopback fake model, one trace and
one result line per task; reruns skip what finished and resume what was interrupted."""

from __future__ import annotations

import json
import signal
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from batch_model import KEY, MODEL, NOTES, BatchModel, task_line, write_tasks
from cli_harness import run_cli, start_cli
from fake_openai_server import FakeOpenAIServer

from tiered_agent._trace import RunEnded, RunStarted, read_trace
from tiered_agent.batch import BatchSettings, BatchTask, TaskResult, read_results, run_batch


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text(NOTES)
    return root


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", KEY)


def settings_for(server: FakeOpenAIServer, workspace: Path, tmp_path: Path, **kw: Any) -> BatchSettings:
    return BatchSettings(
        model=MODEL,
        api_base=server.base_url,
        workspace=workspace,
        trace_dir=tmp_path / "traces",
        summary_model="digest",
        max_retries=0,
        **kw,
    )


def lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def ends(trace: str | None) -> list[str]:
    assert trace is not None
    return [e.stop_reason for e in read_trace(trace) if isinstance(e, RunEnded)]


async def wait_for(condition: Any, what: str) -> None:
    with anyio.fail_after(60):
        while not condition():
            await anyio.sleep(0.02)


# ============================================================================ a large batch
@pytest.mark.slow
@pytest.mark.anyio
async def test_200_tasks_at_concurrency_50_then_a_rerun_makes_no_model_call(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    model = BatchModel(delay_s=0.05)
    server.respond = model
    ids = [f"t{n:03d}" for n in range(200)]
    tasks = write_tasks(tmp_path / "tasks.jsonl", ids)
    out = tmp_path / "results.jsonl"
    settings = settings_for(server, workspace, tmp_path)
    seen: list[TaskResult] = []

    report = await run_batch(tasks, out, settings, concurrency=50, on_result=seen.append)

    assert report.counts == {"answered": 200} and (report.ran, report.skipped) == (200, 0)
    assert len(server.chat_requests) == 400 and set(model.calls.values()) == {2}
    assert 1 < model.max_in_flight <= 50  # concurrent, and never more than asked
    rows = lines(out)
    assert sorted(r["id"] for r in rows) == ids and len(seen) == 200
    for row in rows:
        assert row["stop_reason"] == "answered" and row["answer"] == f"answer for {row['id']}"
        assert (row["iterations"], row["segments"]) == (2, 1)
        assert row["usage"] == {
            "prompt_tokens": 250,
            "completion_tokens": 12,
            "cached_tokens": 0,
            "requests": 2,
            "cache_write_tokens": 0,
        }
        assert row["dollars"] > 0 and row["full_tokens"] >= row["sent_tokens"] > 0
        assert ends(row["trace"]) == ["answered"]
    assert len({Path(r["trace"]).parent for r in rows}) == 200  # one trace folder per task
    assert report.usage.prompt_tokens == 200 * 250 and report.dollars == pytest.approx(
        sum(r["dollars"] for r in rows)
    )

    again = await run_batch(tasks, out, settings, concurrency=50)
    assert len(server.chat_requests) == 400  # no model call for a finished task
    assert (again.ran, again.skipped, again.counts) == (0, 200, {"answered": 200})
    assert len(lines(out)) == 200  # nothing appended


# ============================================================================ interrupting
@pytest.mark.anyio
async def test_cancelled_tasks_record_their_end_and_a_rerun_resumes_them(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    model = BatchModel(hold=frozenset({"c", "d"}))
    server.respond = model
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a", "b", "c", "d", "e"])
    out = tmp_path / "results.jsonl"
    settings = settings_for(server, workspace, tmp_path)
    seen: list[TaskResult] = []

    async def batch(scope: anyio.CancelScope) -> None:
        with scope:
            await run_batch(tasks, out, settings, concurrency=5, on_result=seen.append)

    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()
        group.start_soon(batch, scope)
        await wait_for(lambda: len(seen) == 3 and model.held == {"c", "d"}, "three answers, two held")
        scope.cancel()
    assert scope.cancelled_caught

    first = {r["id"]: r for r in lines(out)}
    assert {i: r["stop_reason"] for i, r in first.items()} == {
        "a": "answered",
        "b": "answered",
        "e": "answered",
        "c": "cancelled",
        "d": "cancelled",
    }
    assert ends(first["c"]["trace"]) == ["cancelled"] and first["c"]["iterations"] == 2

    model.hold = frozenset()
    before = dict(model.calls)
    report = await run_batch(tasks, out, settings, concurrency=5)
    assert report.counts == {"answered": 5} and (report.ran, report.skipped) == (2, 3)
    assert {t: model.calls[t] - before.get(t, 0) for t in "abcde"} == {"a": 0, "b": 0, "c": 1, "d": 1, "e": 0}
    resumed = read_results(out)["c"]
    assert (resumed.segments, resumed.answer, resumed.trace) == (2, "answer for c", first["c"]["trace"])
    assert ends(resumed.trace) == ["cancelled", "answered"]
    starts = [e for e in read_trace(resumed.trace or "") if isinstance(e, RunStarted)]
    assert starts[1].source is not None and starts[1].source.startswith("resume of ")
    assert len(lines(out)) == 7  # appended, never rewritten


def test_sigterm_stops_the_batch_with_every_finished_result_on_disk(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    model = BatchModel(hold=frozenset({"c", "d"}))
    server.respond = model
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a", "b", "c", "d", "e"])
    out = tmp_path / "results.jsonl"
    args = ["batch", str(tasks), "--model", MODEL, "--api-base", server.base_url, "--out", str(out)]
    args += ["--workspace", str(workspace), "--trace-dir", str(tmp_path / "traces"), "--concurrency", "5"]
    args += ["--summary-model", "digest"]
    child = start_cli(args, cwd=tmp_path, env={"OPENAI_API_KEY": KEY}, name="batch")
    for _ in range(3000):  # the three free tasks are on disk and the two held ones are mid-run
        if out.exists() and len(out.read_text().splitlines()) == 3 and model.held == {"c", "d"}:
            break
        time.sleep(0.02)
    child.send(signal.SIGTERM)
    ended = child.wait()

    assert ended.code == 128 + signal.SIGTERM, ended.stderr
    assert "interrupted by SIGTERM" in ended.stderr and "Traceback" not in ended.stderr
    rows = {r["id"]: r for r in lines(out)}
    assert {i: r["stop_reason"] for i, r in rows.items()} == {
        "a": "answered",
        "b": "answered",
        "e": "answered",
        "c": "cancelled",
        "d": "cancelled",
    }
    assert all(ends(r["trace"])[-1] == r["stop_reason"] for r in rows.values())

    model.hold = frozenset()
    before = sum(model.calls.values())
    again = run_cli(args, cwd=tmp_path, env={"OPENAI_API_KEY": KEY}, name="rerun")
    assert again.code == 0, again.stderr
    assert sum(model.calls.values()) - before == 2  # c and d: one call each, from where they stopped
    assert {r.stop_reason for r in read_results(out).values()} == {"answered"}
    assert "this run: 2 task(s) run, 3 already finished" in again.stdout


# ============================================================================ lost pieces
@pytest.mark.anyio
async def test_a_result_lost_after_the_task_finished_is_recovered_from_its_trace(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.respond = model = BatchModel()
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a", "b"])
    out = tmp_path / "results.jsonl"
    settings = settings_for(server, workspace, tmp_path)
    await run_batch(tasks, out, settings)
    original = {r["id"]: r for r in lines(out)}
    out.write_text(json.dumps(original["a"]) + "\n")  # b's line was never written (a crash)

    report = await run_batch(tasks, out, settings)
    assert sum(model.calls.values()) == 4 and report.ran == 1  # read back, not run again
    restored = lines(out)[-1]
    assert {k: v for k, v in restored.items() if k != "finished_at"} == {
        k: v for k, v in original["b"].items() if k != "finished_at"
    }


@pytest.mark.anyio
async def test_a_task_killed_mid_run_is_resumed_from_its_trace(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.respond = model = BatchModel()
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a"])
    out = tmp_path / "results.jsonl"
    settings = settings_for(server, workspace, tmp_path)
    await run_batch(tasks, out, settings)
    trace = Path(lines(out)[0]["trace"])
    # kill -9 after iteration 1: the trace stops after the tool result, with no run_end; no result
    kept = []
    for line in trace.read_text().splitlines():
        event = json.loads(line)
        if event["type"] == "model_request" and event["iteration"] == 2:
            break
        kept.append(line)
    trace.write_text("\n".join(kept) + "\n")
    out.unlink()

    report = await run_batch(tasks, out, settings)
    result = read_results(out)["a"]
    assert report.counts == {"answered": 1} and model.calls["a"] == 3  # one more call: iteration 2
    assert (result.segments, result.iterations, result.trace) == (2, 2, str(trace))
    resumed_request = server.chat_requests[-1].body["messages"]
    assert [m["role"] for m in resumed_request] == ["system", "user", "assistant", "tool"]
    assert NOTES.strip() in resumed_request[-1]["content"]


@pytest.mark.anyio
async def test_a_torn_result_line_is_moved_aside_and_an_unreadable_one_reruns_its_task(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.respond = model = BatchModel()
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a", "b", "c"])
    out = tmp_path / "results.jsonl"
    settings = settings_for(server, workspace, tmp_path)
    await run_batch(tasks, out, settings)
    rows = out.read_text().splitlines()
    by_id = {json.loads(r)["id"]: r for r in rows}
    torn = by_id["c"][:40]
    out.write_text(by_id["a"] + "\n" + "not a result\n" + torn)  # b's line garbled, c's cut off

    report = await run_batch(tasks, out, settings)
    assert (tmp_path / "results.jsonl.torn").read_text() == torn  # kept, never dropped
    assert report.counts == {"answered": 3} and report.ran == 2
    assert sum(model.calls.values()) == 6  # b and c were finished in their traces: read back
    text = out.read_text()
    assert text.startswith(by_id["a"] + "\nnot a result\n") and text.endswith("\n")


def test_a_finished_result_with_fields_of_the_wrong_type_is_read_and_never_rerun(tmp_path: Path) -> None:
    """A finished task's line with a count as text (edited by hand, damaged) ended a rerun with a
    ``TypeError`` summing the results (round 22); a raw control character lost the line. Such
    fields read as missing, with a warning naming them; the task is not run again (no model is
    reachable here), and the results file is not touched."""
    from click.testing import CliRunner
    from structlog.testing import capture_logs

    from tiered_agent.cli import cli

    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a", "b"])
    base = {"stop_reason": "answered", "answer": "ok", "iterations": 2, "dollars": 0.01, "segments": 1}
    lines = [
        json.dumps(
            {**base, "id": "a", "iterations": "many", "usage": {"prompt_tokens": "x"}, "dollars": "?"}
        ),
        json.dumps({**base, "id": "b", "answer": "@"}).replace('"@"', '"a\x01b"'),
    ]
    out = tmp_path / "results.jsonl"
    out.write_text("\n".join(lines) + "\n")
    before = out.read_bytes()
    args = ["batch", str(tasks), "--model", MODEL, "--api-base", "http://127.0.0.1:9", "--out", str(out)]
    result = CliRunner().invoke(cli, [*args, "--trace-dir", str(tmp_path / "traces")])
    assert result.exit_code == 0, result.output
    assert "0 task(s) run, 2 already finished" in result.output
    assert out.read_bytes() == before
    with capture_logs() as logs:
        read = read_results(out)
    odd = [e["fields"] for e in logs if e["event"] == "batch.result_fields_read_as_missing"]
    assert odd == [["iterations", "dollars", "usage"]]
    assert read["a"].iterations == 0 and read["a"].usage.prompt_tokens == 0 and read["a"].dollars is None
    assert read["b"].answer == "a\x01b" and read["b"].iterations == 2


@pytest.mark.parametrize("which", ["tasks", "results"])
def test_a_fifo_as_the_tasks_or_results_file_is_one_sentence_not_a_hang(tmp_path: Path, which: str) -> None:
    """Reading either file blocked forever on a FIFO (round 22); a results file that cannot be read
    was a traceback (its ConfigurationError was raised outside the command's handler)."""
    import os
    import subprocess
    import sys

    tasks, out = tmp_path / "tasks.jsonl", tmp_path / "results.jsonl"
    write_tasks(tasks, ["a"])
    fifo = tasks if which == "tasks" else out
    fifo.unlink(missing_ok=True)
    os.mkfifo(fifo)
    args = ["batch", str(tasks), "--model", MODEL, "--api-base", "http://127.0.0.1:9", "--out", str(out)]
    done = subprocess.run(
        [sys.executable, "-m", "tiered_agent", *args, "--trace-dir", str(tmp_path / "traces")],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert f"{fifo} is a FIFO (named pipe), not a regular file: it cannot be a {which} file" in done.stderr


# ============================================================================ failures
@pytest.mark.anyio
async def test_a_failing_task_is_an_error_line_and_the_others_answer(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.respond = BatchModel()
    out = tmp_path / "results.jsonl"
    settings = settings_for(server, workspace, tmp_path)
    tasks = [BatchTask("good", "task good"), BatchTask("bad", "task bad", model="openai/nope")]
    report = await run_batch(tasks, out, settings)
    assert report.counts == {"answered": 1, "error": 1} and not report.ok
    bad = read_results(out)["bad"]
    assert bad.error is not None and "nope" in bad.error and bad.model == "openai/nope"
    assert bad.trace is not None and ends(bad.trace) == ["error"]
    assert KEY not in out.read_text()


# ============================================================================ worker processes
@pytest.mark.slow
@pytest.mark.anyio
async def test_worker_processes_run_the_tasks_and_stop_them_cleanly(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    model = BatchModel(hold=frozenset({"f"}))
    server.respond = model
    tasks = write_tasks(tmp_path / "tasks.jsonl", list("abcdef"))
    out = tmp_path / "results.jsonl"
    settings = settings_for(server, workspace, tmp_path)
    seen: list[TaskResult] = []

    async def batch(scope: anyio.CancelScope) -> None:
        with scope:
            await run_batch(tasks, out, settings, concurrency=4, workers=2, on_result=seen.append)

    async with anyio.create_task_group() as group:
        scope = anyio.CancelScope()
        group.start_soon(batch, scope)
        await wait_for(lambda: len(seen) == 5 and model.held == {"f"}, "five answers, one held")
        scope.cancel()

    rows = {r["id"]: r for r in lines(out)}
    assert {i: r["stop_reason"] for i, r in rows.items()} == {
        **dict.fromkeys("abcde", "answered"),
        "f": "cancelled",
    }
    assert ends(rows["f"]["trace"]) == ["cancelled"]  # stopped in its worker, its end recorded


# ============================================================================ the tasks file
@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{", "line 2: not valid JSON"),
        ("[1, 2]", "line 2: expected a JSON object, got a list"),
        ('{"id": "x", "task": "t", "worksapce": "."}', "line 2: unknown key 'worksapce'"),
        ('{"task": "t"}', 'line 2: "id" must be a non-empty string or an integer'),
        ('{"id": true, "task": "t"}', 'line 2: "id" must be a non-empty string or an integer'),
        ('{"id": "x\\u0000y", "task": "t"}', 'line 2: "id" must be printable'),
        ('{"id": "x", "task": ""}', 'line 2: "task" must be a non-empty string'),
        ('{"id": "x", "task": 3}', 'line 2: "task" must be a non-empty string'),
        (
            '{"id": "x", "task": "t", "workspace": "missing"}',
            "line 2: \"workspace\" 'missing' is not a folder",
        ),
        ('{"id": "x", "task": "t", "policy": "lean"}', "line 2: unknown \"policy\" 'lean'"),
        ('{"id": "one", "task": "again"}', "line 2: id 'one' repeats line 1"),
        # round 22: a home folder of no user was a traceback (RuntimeError from Path.expanduser)
        (
            '{"id": "x", "task": "t", "workspace": "~no-such-user-h22/w"}',
            "line 2: \"workspace\" '~no-such-user-h22/w' names a home folder that does not exist",
        ),
        (
            '{"id": "x", "task": "t", "workspace": "tasks.jsonl"}',
            "line 2: \"workspace\" 'tasks.jsonl' is not a folder",
        ),
        ('{"id": "x", "task": "t", "workspace": ["."]}', 'line 2: "workspace" must be a non-empty string'),
        ('{"id": 1.5, "task": "t"}', 'line 2: "id" must be a non-empty string or an integer'),
        ('{"id": "' + "y" * 201 + '", "task": "t"}', 'line 2: "id" must be printable and at most 200'),
        ('{"id": "x", "task": "t", "policy": 3}', 'line 2: "policy" must be a non-empty string'),
    ],
)
def test_a_bad_task_line_is_one_sentence_naming_the_line(tmp_path: Path, line: str, message: str) -> None:
    from click.testing import CliRunner

    from tiered_agent.cli import cli

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task_line("one") + "\n" + line + "\n")
    args = ["batch", str(tasks), "--model", MODEL, "--out", str(tmp_path / "r.jsonl")]
    result = CliRunner().invoke(cli, [*args, "--trace-dir", str(tmp_path / "traces")])
    assert result.exit_code == 2
    errors = [x for x in result.output.splitlines() if x.startswith("Error: ")]
    assert errors == [errors[0]] and f"{tasks} {message}" in errors[0], result.output
    assert not (tmp_path / "r.jsonl").exists()


def test_task_lines_are_read_with_their_defaults(tmp_path: Path) -> None:
    from tiered_agent.batch import load_tasks

    (tmp_path / "repo").mkdir()
    tasks = tmp_path / "tasks.jsonl"
    tasks.write_bytes(  # a byte-order mark, Windows line ends, a blank line, null for "not given"
        b"\xef\xbb\xbf\r\n"
        + b'{"id": 7, "task": "fix it", "workspace": "repo", "model": "m", "policy": "full"}\r\n'
        + b'{"id": "b", "task": "t", "workspace": null}\n\n'
    )
    assert load_tasks(tasks) == (
        BatchTask("7", "fix it", (tmp_path / "repo").resolve(), "m", "full", line=2),
        BatchTask("b", "t", None, None, None, line=3),
    )


def test_a_task_without_a_model_or_an_empty_file_is_bad_usage(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tiered_agent.cli import cli

    tasks = tmp_path / "tasks.jsonl"
    tasks.write_text(task_line("one") + "\n")
    out = ["--out", str(tmp_path / "r.jsonl"), "--trace-dir", str(tmp_path / "t")]
    result = CliRunner().invoke(cli, ["batch", str(tasks), *out])
    assert result.exit_code == 2
    assert "task 'one' (line 1) has no model: pass --model or give it a \"model\"" in result.output
    tasks.write_text("\n\n")
    result = CliRunner().invoke(cli, ["batch", str(tasks), "--model", MODEL, *out])
    assert result.exit_code == 2 and "has no tasks" in result.output
    result = CliRunner().invoke(cli, ["batch", str(tasks), "--model", MODEL, "--ray", "not an address", *out])
    assert result.exit_code == 2


def test_task_folders_are_safe_and_distinct(tmp_path: Path) -> None:
    from tiered_agent.batch._traces import task_folder

    ids = ["a", "A", "../../etc", "a/b", "a_b", "ü" * 300, ".", "x" * 200]
    folders = [task_folder(tmp_path, i) for i in ids]
    assert len(set(folders)) == len(ids)
    assert all(f.parent == tmp_path and len(f.name) <= 80 and "/" not in f.name for f in folders)
    assert task_folder(tmp_path, "a") == task_folder(tmp_path, "a")


@pytest.mark.anyio
async def test_a_second_batch_on_the_same_results_file_is_refused(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    from tiered_agent._errors import ConfigurationError
    from tiered_agent.batch._results import ResultsFile

    server.respond = model = BatchModel()
    tasks = write_tasks(tmp_path / "tasks.jsonl", ["a"])
    out = tmp_path / "results.jsonl"
    refused = pytest.raises(ConfigurationError, match="another batch is running with the results file")
    with ResultsFile(out), refused:  # a batch running in another process holds it
        await run_batch(tasks, out, settings_for(server, workspace, tmp_path))
    assert sum(model.calls.values()) == 0
    assert (await run_batch(tasks, out, settings_for(server, workspace, tmp_path))).ok
