"""CLI mistakes are one sentence and exit code 2, found before the slow litellm import."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from tiered_agent.cli import _app as _cli

# Runs the CLI in a fresh interpreter and reports whether it imported litellm.
_PROBE = """
import runpy, sys
sys.argv = ["tiered-agent", *sys.argv[1:]]
try:
    runpy.run_module("tiered_agent", run_name="__main__")
except SystemExit as exc:
    code = exc.code
print("litellm imported:", "litellm" in sys.modules, file=sys.stderr)
sys.exit(code)
"""


def probe(args: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")} | {"COLUMNS": "200"}
    return subprocess.run(
        [sys.executable, "-c", _PROBE, *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def one_error(stderr: str) -> str:
    """The ``Error: ...`` line of a click usage error; there is exactly one and no traceback."""
    assert "Traceback" not in stderr
    errors = [line for line in stderr.splitlines() if line.startswith("Error: ")]
    assert len(errors) == 1, stderr
    return errors[0]


def test_an_unknown_log_level_is_bad_usage(tmp_path: Path) -> None:
    proc = probe(["--log-level", "loud", "run", "x", "--model", "openai/m"], tmp_path)
    assert proc.returncode == 2
    assert one_error(proc.stderr).startswith("Error: Invalid value for '--log-level': 'loud' is not one of")
    assert "litellm imported: False" in proc.stderr


def test_a_trace_dir_blocked_by_a_file_is_bad_usage_before_litellm(tmp_path: Path) -> None:
    (tmp_path / "afile").write_text("x")
    proc = probe(["run", "x", "--model", "openai/m", "--trace-dir", "afile/traces"], tmp_path)
    assert proc.returncode == 2
    assert one_error(proc.stderr) == (
        "Error: Invalid value for '--trace-dir': cannot write traces to afile/traces: Not a directory."
    )
    assert "litellm imported: False" in proc.stderr


def test_an_unwritable_trace_dir_is_bad_usage_before_litellm(tmp_path: Path) -> None:
    target = Path("/sys/tiered-agent-traces")  # sysfs refuses new directories, even to root
    if not Path("/sys").is_dir() or (os.access("/sys", os.W_OK) and _can_mkdir(target)):
        pytest.skip("no read-only /sys here")
    proc = probe(["run", "x", "--model", "openai/m", "--trace-dir", str(target)], tmp_path)
    assert proc.returncode == 2
    message = one_error(proc.stderr)
    assert message.startswith(f"Error: Invalid value for '--trace-dir': cannot write traces to {target}: ")
    assert message.endswith(("Operation not permitted.", "Permission denied.", "Read-only file system."))
    assert "litellm imported: False" in proc.stderr


def _can_mkdir(path: Path) -> bool:
    try:
        path.mkdir()
    except OSError:
        return False
    path.rmdir()
    return True


def invoke(command: str, args: list[str]) -> Result:
    """``tiered-agent COMMAND ARGS`` in process (without the group: logging stays as the tests set it)."""
    return CliRunner().invoke(getattr(_cli, command), args)


def test_an_unreadable_global_instructions_directory_is_one_sentence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from test_instructions import deny

    home = tmp_path / "home"
    (home / ".tiered_agent").mkdir(parents=True)
    (home / ".tiered_agent" / "AGENTS.md").write_text("rules\n")
    monkeypatch.setenv("HOME", str(home))
    deny(monkeypatch, home / ".tiered_agent")
    try:
        args = ["x", "--model", "openai/m", "--workspace", str(tmp_path), "--trace-dir", str(tmp_path / "t")]
        result = invoke("run", args)
    finally:
        (home / ".tiered_agent").chmod(0o755)
    assert result.exit_code == 2, result.output
    agents = home / ".tiered_agent" / "AGENTS.md"
    assert result.stderr.strip() == (
        f"error: cannot read the instructions in {agents}: Permission denied; "
        "fix its permissions or move it away"
    )


def test_resume_of_a_file_that_is_no_trace_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "notes.jsonl").write_text(
        '{"v": 1, "type": "run_end", "stop_reason": "x", "output": null, "iterations": 0, "usage": {}}\n'
    )
    result = invoke("resume", [str(tmp_path / "notes.jsonl"), "--workspace", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: {tmp_path / 'notes.jsonl'} is not a tiered-agent run trace (no readable run_start)"
    )


def test_resume_of_a_trace_whose_run_start_is_unreadable_names_the_line(tmp_path: Path) -> None:
    """A ``run_start`` nested past 255 levels was "no run_start" and nothing more (round 22)."""
    start = (
        '{"v": 1, "type": "run_start", "run_id": "r", "model": "m", "task": "t", "config": {"x": '
        + "[" * 300
        + "]" * 300
        + "}}\n"
    )
    trace = tmp_path / "deep.jsonl"
    trace.write_text(start + '{"v": 1, "type": "message", "message": {"role": "user", "content": "t"}}\n')
    before = trace.read_bytes()
    result = invoke("resume", [str(trace), "--workspace", str(tmp_path), "--policy", "tiered"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: {trace} is not a tiered-agent run trace (no readable run_start; its line 1 is "
        "unreadable: not JSON (nested deeper than 255 levels: line 1 column 342 (char 341)))"
    )
    assert trace.read_bytes() == before


def test_resume_of_an_answered_run_needs_a_follow_up(tmp_path: Path) -> None:
    from tiered_agent._messages import Message
    from tiered_agent._trace import MessageEvent, RunStarted, TraceWriter

    trace = tmp_path / "done.jsonl"
    with TraceWriter(trace) as writer:
        writer.write(RunStarted("r1", "openai/gpt-4o-mini", "q", {"context": {"name": "tiered"}}))
        writer.write(MessageEvent(Message("system", "sys")))
        writer.write(MessageEvent(Message("user", "q")))
        writer.write(MessageEvent(Message("assistant", "the answer", iteration=1)))
    result = invoke("resume", [str(trace), "--workspace", str(tmp_path)])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        f"error: {trace}: the run already answered; pass follow_up (--follow-up) to continue it"
    )


def test_resume_with_a_recorded_policy_this_version_cannot_read_says_which_preset_it_uses(
    tmp_path: Path,
) -> None:
    """A run recorded by another version whose policy's steps this one cannot read resumes with the
    preset of the policy's name, and says so: the settings may differ from the run's."""
    from tiered_agent._messages import Message
    from tiered_agent._trace import MessageEvent, RunStarted, TraceWriter

    trace = tmp_path / "done.jsonl"
    recorded = {"name": "tiered", "steps": [{"kind": "age", "no_such_field": 1}]}
    with TraceWriter(trace) as writer:
        writer.write(RunStarted("r1", "openai/gpt-4o-mini", "q", {"context": recorded}))
        writer.write(MessageEvent(Message("system", "sys")))
        writer.write(MessageEvent(Message("user", "q")))
        writer.write(MessageEvent(Message("assistant", "the answer", iteration=1)))
    result = invoke("resume", [str(trace), "--workspace", str(tmp_path)])
    assert result.exit_code == 2, result.output
    note, error = result.stderr.strip().splitlines()
    assert note.startswith("note: the run's recorded policy cannot be read here (")
    assert note.endswith("resuming with the preset 'tiered' of this version (--policy picks another)")
    assert error == f"error: {trace}: the run already answered; pass follow_up (--follow-up) to continue it"


def test_shell_env_without_allow_shell_is_one_sentence(tmp_path: Path) -> None:
    args = ["x", "--model", "openai/m", "--workspace", str(tmp_path), "--trace-dir", str(tmp_path / "t")]
    result = invoke("run", [*args, "--shell-env", "GITHUB_TOKEN"])
    assert result.exit_code == 2, result.output
    assert result.stderr.strip() == (
        "error: shell_env (--shell-env) only applies to run_shell: "
        "enable it with allow_shell=True (--allow-shell)"
    )
