"""run_shell: exit codes, combined output, output cap, and process-group killing."""

from __future__ import annotations

import re
from pathlib import Path

import anyio
import orjson
import pytest
from processes import process_gone

from tiered_agent._errors import ConfigurationError, ToolError
from tiered_agent._messages import ToolCall
from tiered_agent._shell import shell_tool
from tiered_agent._tools import ToolSet, ToolTimeout

pytestmark = pytest.mark.anyio


async def _wait_gone(pid: int) -> bool:
    with anyio.move_on_after(10):
        while not process_gone(pid):
            await anyio.sleep(0.02)
    return process_gone(pid)


async def test_exit_code_and_combined_output(tmp_path: Path) -> None:
    run = shell_tool(tmp_path).fn
    assert await run("echo out; echo err >&2; exit 3") == "out\nerr\nexit code: 3"
    assert await run("true") == "(no output)\nexit code: 0"
    assert await run("printf 'no newline'") == "no newline\nexit code: 0"
    assert await run("kill -9 $$") == "(no output)\nexit code: -9 (killed by SIGKILL)"


async def test_runs_in_workspace_root_without_stdin(tmp_path: Path) -> None:
    run = shell_tool(tmp_path).fn
    assert await run("pwd") == f"{tmp_path}\nexit code: 0"
    assert await run("cat; echo done") == "done\nexit code: 0"  # stdin is empty, nothing hangs
    assert await run("echo $PAGER") == "cat\nexit code: 0"


async def test_output_cap_keeps_head_and_tail(tmp_path: Path) -> None:
    run = shell_tool(tmp_path, max_output_bytes=100).fn
    out = await run("for i in $(seq 1 1000); do printf '%04d\\n' $i; done")  # 5000 bytes
    head, rest = out.split("\n[... ", 1)
    cut, tail = rest.split(" ...]\n", 1)
    assert head == "".join(f"{i:04d}\n" for i in range(1, 11))
    assert cut == "4900 bytes of output cut (5000 bytes in total)"
    assert tail == "".join(f"{i:04d}\n" for i in range(991, 1001)) + "exit code: 0"


async def test_timeout_kills_whole_process_group(tmp_path: Path) -> None:
    run = shell_tool(tmp_path, term_grace_s=0.2).fn
    # The child ignores SIGTERM (so does the grandchild, which inherits it): SIGKILL must follow.
    command = (
        "echo started; bash -c 'trap \"\" TERM; sleep 300 & echo $! > grand.pid; echo $$ > child.pid; wait'"
    )
    with pytest.raises(ToolTimeout) as caught:
        await run(command, 1.0)
    message = str(caught.value)
    assert message.startswith("command timed out after 1 s; its process group was killed.")
    assert message.endswith("Partial output:\nstarted\n")
    child = int((tmp_path / "child.pid").read_text())
    grandchild = int((tmp_path / "grand.pid").read_text())
    assert await _wait_gone(child)
    assert await _wait_gone(grandchild)


async def test_timeout_through_toolset_is_a_timeout_outcome(tmp_path: Path) -> None:
    tools = ToolSet([shell_tool(tmp_path, term_grace_s=0.1)])
    arguments = orjson.dumps({"command": "echo partial; sleep 30", "timeout_s": 1}).decode()
    outcome = await tools.execute(ToolCall(id="c", name="run_shell", arguments=arguments))
    assert outcome.is_error
    assert outcome.error_kind == "timeout"
    assert "timed out after 1 s" in outcome.content
    assert "partial" in outcome.content


async def test_background_processes_are_killed_when_command_finishes(tmp_path: Path) -> None:
    run = shell_tool(tmp_path).fn
    out = await run("sleep 300 > /dev/null 2>&1 & echo $! > bg.pid; echo launched")
    assert out == "launched\nexit code: 0"
    assert await _wait_gone(int((tmp_path / "bg.pid").read_text()))


async def test_cancellation_kills_the_group(tmp_path: Path) -> None:
    run = shell_tool(tmp_path, term_grace_s=0.1).fn
    pid_file = tmp_path / "sleep.pid"

    with anyio.fail_after(20), anyio.CancelScope() as scope:
        async with anyio.create_task_group() as group:
            group.start_soon(run, f"sleep 300 & echo $! > {pid_file}; wait")
            while not pid_file.exists() or not pid_file.read_text().strip():
                await anyio.sleep(0.02)
            scope.cancel()
    assert scope.cancelled_caught
    assert await _wait_gone(int(pid_file.read_text()))


async def test_requested_timeout_is_clamped(tmp_path: Path) -> None:
    run = shell_tool(tmp_path, timeout_s=0.3, max_timeout_s=0.4, term_grace_s=0.1).fn
    with pytest.raises(ToolError, match=re.escape("timed out after 0.4 s")):
        await run("sleep 30", 100)
    with pytest.raises(ToolError, match=re.escape("timed out after 0.3 s")):
        await run("sleep 30")


def test_schema_and_configuration(tmp_path: Path) -> None:
    run_shell = shell_tool(tmp_path, timeout_s=30, max_timeout_s=120)
    assert run_shell.name == "run_shell"
    assert run_shell.read_only is False
    props = run_shell.parameters["properties"]
    assert props["command"]["type"] == "string"
    assert "default 30, at most 120" in props["timeout_s"]["description"]
    assert run_shell.parameters["required"] == ["command"]
    with pytest.raises(ConfigurationError):
        shell_tool(tmp_path, timeout_s=0)
    with pytest.raises(ConfigurationError):
        shell_tool(tmp_path, timeout_s=10, max_timeout_s=5)


async def test_setsid_descendants_do_not_survive_the_command(tmp_path: Path) -> None:
    run = shell_tool(tmp_path).fn
    command = (
        "setsid sleep 301 > /dev/null 2>&1 & echo $! > a.pid; "  # a new session, still a child of bash
        "setsid -f sh -c 'echo $$ > b.pid; exec sleep 302' > /dev/null 2>&1; "  # forked away: orphan
        "(setsid sh -c 'sleep 303 & echo $! > c.pid; wait' > /dev/null 2>&1 &); "  # double fork
        "while [ ! -s b.pid ] || [ ! -s c.pid ]; do sleep 0.02; done; echo launched"
    )
    assert await run(command) == "launched\nexit code: 0"
    for name in ("a.pid", "b.pid", "c.pid"):
        assert await _wait_gone(int((tmp_path / name).read_text())), f"{name} survived"


async def test_setsid_descendants_are_killed_on_timeout(tmp_path: Path) -> None:
    run = shell_tool(tmp_path, term_grace_s=0.1).fn
    with pytest.raises(ToolTimeout):
        await run("setsid -f sh -c 'echo $$ > d.pid; exec sleep 304'; sleep 30", 1.0)
    assert await _wait_gone(int((tmp_path / "d.pid").read_text()))


async def test_minimal_environment_and_chosen_variables(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-for-the-shell-0123456789")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_passed_on_purpose_0123")
    monkeypatch.setenv("DB_PASSWORD", "hunter2-hunter2")
    monkeypatch.setenv("MY_TOOL_HOME", "/opt/tool")
    monkeypatch.setenv("LC_ALL", "C.UTF-8")
    out = await shell_tool(tmp_path).fn("env")
    names = {line.split("=", 1)[0] for line in out.splitlines() if "=" in line}
    assert {"PATH", "HOME", "LC_ALL"} <= names
    assert not {"OPENAI_API_KEY", "GITHUB_TOKEN", "DB_PASSWORD", "MY_TOOL_HOME"} & names
    chosen = await shell_tool(tmp_path, pass_env=["GITHUB_TOKEN", "MY_TOOL_*"]).fn("env")
    # passed (its line is there), and redacted by the tool itself before its output is cut
    assert "GITHUB_TOKEN=[redacted]" in chosen and "MY_TOOL_HOME=/opt/tool" in chosen
    assert "ghp_passed_on_purpose_0123" not in chosen
    assert "OPENAI_API_KEY" not in chosen and "DB_PASSWORD" not in chosen
    with pytest.raises(ConfigurationError):
        shell_tool(tmp_path, pass_env="GITHUB_TOKEN")  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError):
        shell_tool(tmp_path, pass_env=["NOT A NAME"])
