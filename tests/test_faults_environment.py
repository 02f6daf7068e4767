"""The runtime's own environment (round 25, docs/faults.md cases 57-66): a full disk under the bench's
outputs, output paths that are FIFOs, links to nothing or read-only, a reader of stdout gone, closed
standard streams, odd terminal sizes and encodings, signals while the bench writes, a trace whose
folder is deleted mid-run, a low open-file limit, a tokenizer cache variable pointing nowhere.

Each test failed before its fix (a traceback, a hang, a half-written or deleted file, output
silently lost) and holds now. The CLI runs in child processes (``cli_harness``) or, where only
click's parsing matters, in-process.
"""

from __future__ import annotations

import os
import resource
import shutil
import signal
import subprocess
import sys
import threading
from pathlib import Path

import orjson
import pytest
from cli_harness import notes_workspace, run_cli
from fake_openai_server import FakeOpenAIServer
from fakes import text_reply, tool_reply
from hostile_traces import write_sample_trace
from rich.console import Console

from tiered_agent._files import OutputFiles
from tiered_agent._trace import RunEnded, RunStarted, TraceWriter, read_trace
from tiered_agent.cli import _batch as batch_cli
from tiered_agent.cli import _process

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "traces" / "mini-swe-agent" / "psf__requests-2317.jsonl"
MODEL = "openai/gpt-4o-mini"
ENV = {"OPENAI_API_KEY": "sk-test-environment-0123456789"}
BENCH = ["bench", str(MINI), "--policies", "full,tiered", "--workers", "1"]
OUTPUTS = ("bench.json", "bench.runs.jsonl", "report.md", "bench.png", "frontier.png")


def _earlier_outputs(out: Path) -> dict[str, bytes]:
    out.mkdir(parents=True, exist_ok=True)
    earlier = {name: f"earlier {name}\n".encode() for name in OUTPUTS}
    for name, data in earlier.items():
        (out / name).write_bytes(data)
    return earlier


def _files_in(folder: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()}  # never a FIFO


def _cli(
    args: list[str],
    cwd: Path,
    *,
    fsize_limit: int | None = None,
    stdout: str = "file",
    env: dict[str, str] | None = None,
) -> subprocess.CompletedProcess[str]:
    """``python -m tiered_agent ARGS`` in a fresh process (the bench forks its chart children, which a
    ``cli_harness`` child, a daemon process, may not); ``stdout="broken"``: a pipe nobody reads."""

    def limits() -> None:
        if fsize_limit is not None:
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_limit, fsize_limit))

    environment = {**os.environ, "COLUMNS": "200", **(env or {})}
    if stdout != "broken":
        return subprocess.run(
            [sys.executable, "-m", "tiered_agent", *args],
            cwd=cwd,
            env=environment,
            capture_output=True,
            text=True,
            timeout=300,
            preexec_fn=limits,
            check=False,
        )
    reader, writer = os.pipe()
    os.close(reader)
    try:
        return subprocess.run(
            [sys.executable, "-m", "tiered_agent", *args],
            cwd=cwd,
            env=environment,
            stdout=writer,
            stderr=subprocess.PIPE,
            text=True,
            timeout=300,
            check=False,
        )
    finally:
        os.close(writer)


def _run_args(server: FakeOpenAIServer, workspace: Path, traces: Path) -> list[str]:
    args = ["run", "x", "--model", MODEL, "--api-base", server.base_url, "--workspace", str(workspace)]
    return [*args, "--trace-dir", str(traces)]


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    return notes_workspace(tmp_path)


# ================================================================ 57: a full disk under the bench's outputs
def test_a_full_disk_keeps_the_earlier_outputs_and_names_the_file(tmp_path: Path) -> None:
    out = tmp_path / "out"
    earlier = _earlier_outputs(out)
    result = _cli([*BENCH, "--out", str(out)], tmp_path, fsize_limit=20_000)
    assert result.returncode == 1, result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith(f"Error: cannot write {out}/") and "(File too large)" in last, result.stderr
    assert "Traceback" not in result.stderr
    assert _files_in(out) == earlier  # was: bench.png cut at the limit, bench.json half-written


def test_the_bench_writes_every_output_whole_when_there_is_room(tmp_path: Path) -> None:
    out = tmp_path / "out"
    _earlier_outputs(out)
    result = _cli([*BENCH, "--out", str(out)], tmp_path)
    assert result.returncode == 0, result.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS)  # no partial file left
    document = orjson.loads((out / "bench.json").read_bytes())
    assert document["runs_file"] == "bench.runs.jsonl" and len(document["inputs"]["runs"]) == 1
    assert (out / "bench.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_output_files_are_renamed_together_or_not_at_all(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("old a")
    with pytest.raises(OSError, match="disk full"), OutputFiles() as files:
        files.partial(tmp_path / "a").write_text("new a")
        files.partial(tmp_path / "b").write_text("new b")
        raise OSError("disk full")
    assert _files_in(tmp_path) == {"a": b"old a"}
    with OutputFiles() as files:
        files.partial(tmp_path / "a").write_text("new a")
        files.partial(tmp_path / "b").write_text("new b")
        assert files.commit() == [tmp_path / "a", tmp_path / "b"]
    assert _files_in(tmp_path) == {"a": b"new a", "b": b"new b"}


# ================================================================ 58: output paths that are not files
def test_bench_outputs_that_cannot_be_written_are_refused_before_the_replay(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo.json"
    os.mkfifo(fifo)
    nowhere = tmp_path / "nowhere.json"
    nowhere.symlink_to(tmp_path / "missing" / "x.json")
    cases = {
        fifo: f"Error: {fifo} is a FIFO (named pipe), not a regular file.",
        nowhere: f"Error: {nowhere} is a symbolic link that leads nowhere (No such file or directory).",
        tmp_path
        / (
            "x" * 300 + ".json"
        ): f"Error: cannot write {tmp_path / ('x' * 300 + '.json')} (File name too long).",
    }
    for path, sentence in cases.items():
        result = run_cli(
            [*BENCH, "--json", str(path), "--out", str(tmp_path / "o")], cwd=tmp_path, timeout=60
        )
        assert result.code == 2, result.stderr  # was: a hang on the FIFO, the link replaced
        assert result.stderr.strip().splitlines()[-1] == sentence
    assert nowhere.is_symlink() and fifo.exists()


def test_a_bench_json_that_is_a_link_is_written_through_it(tmp_path: Path) -> None:
    target = tmp_path / "kept" / "target.json"
    target.parent.mkdir()
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    args = [*BENCH, "--json", str(link), "--run-detail", "none", "--out", str(tmp_path / "o")]
    result = _cli(args, tmp_path)
    assert result.returncode == 0, result.stderr
    assert link.is_symlink() and orjson.loads(target.read_bytes())["inputs"]["runs"]


def test_bench_prompts_keeps_a_link_to_nothing_and_names_a_full_disk(tmp_path: Path) -> None:
    link = tmp_path / "prompts.jsonl"
    link.symlink_to(tmp_path / "missing" / "p.jsonl")
    result = run_cli(["bench", "prompts", str(MINI), "-o", str(link)], cwd=tmp_path)
    assert result.code == 2 and link.is_symlink(), result.stderr  # was: the link deleted
    assert (
        result.stderr.strip().splitlines()[-1]
        == f"Error: {link} exists; name a new file (nothing is overwritten)."
    )
    full = tmp_path / "full.jsonl"
    result = run_cli(["bench", "prompts", str(MINI), "-o", str(full)], cwd=tmp_path, fsize_limit=10_000)
    assert result.code == 1, result.stderr
    sentence = f"Error: cannot write {full} (File too large); nothing was kept"
    assert result.stderr.strip().splitlines()[-1] == sentence and not full.exists()


def test_trace_html_refuses_a_fifo_and_keeps_the_earlier_page_on_a_full_disk(tmp_path: Path) -> None:
    trace = write_sample_trace(tmp_path / "run.jsonl", tmp_path)
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    result = run_cli(["trace", "html", str(trace), "-o", str(fifo)], cwd=tmp_path, timeout=60)
    assert result.code == 2 and "is a FIFO (named pipe), not a regular file." in result.stderr  # was: a hang
    page = tmp_path / "earlier.html"
    page.write_text("earlier page")
    result = run_cli(["trace", "html", str(trace), "-o", str(page)], cwd=tmp_path, fsize_limit=2_000)
    assert result.code == 2 and f"cannot write {page}: File too large." in result.stderr
    assert _files_in(tmp_path).get("earlier.html") == b"earlier page"
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".partial")]


# ================================================================ 59: a reader of stdout gone
def test_a_broken_stdout_pipe_is_a_quiet_141_for_trace_and_bench(tmp_path: Path) -> None:
    trace = write_sample_trace(tmp_path / "run.jsonl", tmp_path)
    shown = run_cli(["trace", "show", str(trace)], cwd=tmp_path, stdout="broken")
    assert shown.code == 128 + signal.SIGPIPE and shown.stderr == "", shown.stderr  # was: 1
    out = tmp_path / "out"
    benched = _cli([*BENCH, "--out", str(out)], tmp_path, stdout="broken")
    assert benched.returncode == 128 + signal.SIGPIPE and "Error" not in benched.stderr, benched.stderr
    assert sorted(p.name for p in out.iterdir()) == sorted(OUTPUTS)  # was: only bench.runs.jsonl written


def test_a_run_whose_stdout_reader_left_stops_resumably(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.script(tool_reply([("c1", "read_file", {"path": "notes.txt"})]), text_reply("resumed answer"))
    traces = tmp_path / "traces"
    result = run_cli(_run_args(server, workspace, traces), cwd=tmp_path, env=ENV, stdout="broken")
    trace = next(traces.glob("*.jsonl"))
    assert result.code == 128 + signal.SIGPIPE, (
        result.stderr
    )  # was: 1 and a traceback, run_end "SystemExit: 1"
    assert "Traceback" not in result.stderr
    assert (
        result.stderr.strip().splitlines()[-1]
        == f"interrupted by SIGPIPE; continue with: tiered-agent resume {trace}"
    )
    events = read_trace(trace)
    assert isinstance(events[-1], RunEnded) and events[-1].stop_reason == "cancelled"
    resumed = run_cli(["resume", str(trace), "--api-base", server.base_url], cwd=tmp_path, env=ENV)
    assert resumed.code == 0 and "resumed answer" in resumed.stdout, resumed.stderr
    assert [e.type for e in read_trace(trace) if e.type in ("run_start", "run_end")] == [
        "run_start",
        "run_end",
        "run_start",
        "run_end",
    ]


# ================================================================ 60: closed standard streams
def test_a_run_with_stderr_closed_runs_and_writes_nothing_into_its_trace(
    server: FakeOpenAIServer, workspace: Path, tmp_path: Path
) -> None:
    server.script(text_reply("the answer"))
    traces = tmp_path / "traces"
    result = run_cli(_run_args(server, workspace, traces), cwd=tmp_path, env=ENV, closed=(2,))
    assert result.code == 0, result.stdout  # was: 1, AttributeError on sys.stderr, no run
    assert "the answer" in result.stdout
    events = read_trace(next(traces.glob("*.jsonl")))
    assert isinstance(events[0], RunStarted) and isinstance(events[-1], RunEnded)


def test_trace_show_with_stdout_closed_says_so(tmp_path: Path) -> None:
    trace = write_sample_trace(tmp_path / "run.jsonl", tmp_path)
    result = run_cli(["trace", "show", str(trace)], cwd=tmp_path, closed=(1,))
    assert result.code == 0
    assert (
        result.stderr.strip() == "warning: standard output is closed; what this command prints is discarded"
    )


# ================================================================ 61: terminal sizes and encodings
@pytest.mark.parametrize(
    ("columns", "low", "high"), [("0", 1_000, 20_000), ("1", 1_000, 20_000), ("99999999", 1_000, 60_000)]
)
def test_a_terminal_width_no_terminal_has_is_ignored(
    tmp_path: Path, columns: str, low: int, high: int
) -> None:
    trace = write_sample_trace(tmp_path / "run.jsonl", tmp_path)
    result = run_cli(["trace", "show", str(trace)], cwd=tmp_path, env={"COLUMNS": columns})
    assert result.code == 0, result.stderr
    assert low < len(result.stdout) < high  # was: nothing at 0, a column of letters at 1, MBs of rules
    assert "tool calls" in result.stdout


def test_sane_terminal_size_drops_and_caps_what_no_terminal_has(monkeypatch: pytest.MonkeyPatch) -> None:
    for value, expected in (
        ("0", None),
        ("19", None),
        ("20", "20"),
        ("120", "120"),
        ("5000", "1000"),
        ("abc", "abc"),
    ):
        monkeypatch.setenv("COLUMNS", value)
        monkeypatch.setenv("LINES", "0")
        _process._sane_terminal_size()
        assert os.environ.get("COLUMNS") == expected and "LINES" not in os.environ


def test_an_ascii_only_stdout_gets_escapes_not_a_traceback(tmp_path: Path) -> None:
    trace = write_sample_trace(tmp_path / "run.jsonl", tmp_path)
    env = {**os.environ, "PYTHONIOENCODING": "ascii", "COLUMNS": "120"}
    result = subprocess.run(
        [sys.executable, "-m", "tiered_agent", "trace", "show", str(trace)],
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr.decode()  # was: UnicodeEncodeError
    assert b"Traceback" not in result.stderr and result.stdout.isascii()


# ================================================================ 62: signals while the bench works
# A job a non-interactive shell starts in the background (a CI script's ``&``) inherits SIGINT
# ignored, which the CLI keeps ignored (as ``nohup``'s): the child gets Python's default back first.
_WITH_SIGINT = (
    "import runpy, signal; signal.signal(signal.SIGINT, signal.default_int_handler); "
    "runpy.run_module('tiered_agent', run_name='__main__')"
)


@pytest.mark.slow
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGHUP, signal.SIGINT])
def test_a_signal_stops_the_bench_cleanly_at_any_phase(tmp_path: Path, signum: int) -> None:
    out, temp = tmp_path / "out", tmp_path / "tmp"
    temp.mkdir()
    earlier = _earlier_outputs(out)
    inputs = tmp_path / "inputs"  # the shipped runs three times: a replay of seconds even on an idle machine
    for copy in range(3):
        shutil.copytree(ROOT / "traces", inputs / f"copy{copy}")
    child = subprocess.Popen(
        [sys.executable, "-c", _WITH_SIGINT, "bench", str(inputs), "--out", str(out), "--workers", "1"],
        cwd=tmp_path,
        env={**os.environ, "TMPDIR": str(temp)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    waiter = threading.Event()
    for _ in range(3000):  # until the replay spooled runs (not between a temporary file's creation
        names = {p.name.split("-")[2] for p in temp.iterdir() if p.name.startswith("tiered-agent-")}
        if names == {"runs", "ids"}:  # and its cleanup's registration, microseconds apart)
            break
        waiter.wait(0.02)
    waiter.wait(0.3)
    assert child.poll() is None, "the bench ended before the signal: nothing was tested"
    child.send_signal(signum)
    waiter.wait(0.2)
    child.send_signal(signum)  # a second signal during the clean stop changes nothing
    _, stderr = child.communicate(timeout=120)
    assert child.returncode == 128 + signum, stderr  # was: 1 ("Aborted!") for SIGINT, killed for SIGTERM
    assert stderr.strip().splitlines()[-1] == f"interrupted by {signal.Signals(signum).name}"
    assert "Traceback" not in stderr
    assert list(temp.iterdir()) == []  # was: the run spool and its ids folder left in TMPDIR
    assert _files_in(out) == earlier  # no partial file, nothing half-written


def test_a_second_signal_during_the_clean_stop_is_ignored() -> None:
    saved = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        _process._stop_once()
        with pytest.raises(_process.Interrupted) as stopped:
            os.kill(os.getpid(), signal.SIGTERM)
            threading.Event().wait(1)
        assert stopped.value.signum == signal.SIGTERM
        os.kill(os.getpid(), signal.SIGHUP)  # during the clean stop: nothing raised
        threading.Event().wait(0.2)
    finally:
        for signum, handler in saved.items():
            signal.signal(signum, handler)


# ================================================================ 63: the trace's folder deleted mid-run
def test_a_trace_whose_folder_is_deleted_is_written_again_whole(tmp_path: Path) -> None:
    folder = tmp_path / "traces"
    trace = write_sample_trace(tmp_path / "sample.jsonl", tmp_path)
    events = read_trace(trace)
    path = folder / "run.jsonl"
    with TraceWriter(path) as writer:
        for event in events[:3]:
            writer.write(event)
        writer.flush()
        for leftover in folder.iterdir():
            leftover.unlink()
        folder.rmdir()  # rm -rf traces/ while the run goes on
        for event in events[3:]:
            writer.write(event)
        writer.flush()  # was: appended to a file no name leads to, the whole trace lost
        assert writer.lock.held
    assert read_trace(path) == events


# ================================================================ 64: a low open-file limit
def test_batch_concurrency_fits_the_open_file_limit(monkeypatch: pytest.MonkeyPatch) -> None:
    import resource

    limits = {"now": (64, 64)}

    def setrlimit(kind: int, value: tuple[int, int]) -> None:
        if value[0] > limits["now"][1]:
            raise ValueError("not allowed to raise maximum limit")
        limits["now"] = value

    monkeypatch.setattr(resource, "getrlimit", lambda kind: limits["now"])
    monkeypatch.setattr(resource, "setrlimit", setrlimit)
    err = Console(record=True, width=200)
    assert batch_cli.fit_open_files(50, err) == 8  # (64 - 32) // 4
    assert (
        "the open-file limit (ulimit -n 64) leaves room for 8 agent(s) at once, not 50" in err.export_text()
    )
    limits["now"] = (64, 4096)
    assert batch_cli.fit_open_files(50, Console(record=True)) == 50 and limits["now"] == (232, 4096)


# ================================================================ 65: TIKTOKEN_CACHE_DIR pointing nowhere
def test_the_token_counter_reads_the_bundled_encodings_whatever_the_cache_variable_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import tiktoken.registry

    from tiered_agent import _tokens

    monkeypatch.setenv("TIKTOKEN_CACHE_DIR", str(tmp_path / "nowhere"))
    monkeypatch.setattr(tiktoken.registry, "ENCODINGS", {})  # nothing loaded yet in this process
    _tokens._encoding.cache_clear()
    try:
        encoding = _tokens._encoding("o200k_base")  # was: a download (a traceback offline)
    finally:
        _tokens._encoding.cache_clear()
    assert encoding.encode("hello world") == [24912, 2375]
    assert os.environ["TIKTOKEN_CACHE_DIR"] == str(tmp_path / "nowhere")


# ================================================================ 66: a deleted working directory
def test_a_deleted_working_directory_is_one_sentence_and_exit_2(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()

    def enter_then_delete() -> None:
        os.chdir(gone)
        os.rmdir(gone)

    result = subprocess.run(
        [sys.executable, "-c", "from tiered_agent.cli import main; main()", "bench", str(MINI), "--out", "x"],
        preexec_fn=enter_then_delete,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    # was: exit 1, "Error: [Errno 2] No such file or directory" and the worker pool's tracebacks
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip() == (
        "Error: the current directory no longer exists (it was deleted or moved); "
        "cd to an existing directory and run the command again"
    )
