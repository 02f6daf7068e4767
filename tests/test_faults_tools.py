"""Hostile tool calls: catastrophic regular expressions, FIFOs, NUL bytes, secrets at the output cap.

Each case once froze, hung or leaked (issue 16): the tests drive the real tools through
``ToolSet.execute``, as the agent loop does, with a hang guard where the old code hung.
"""

from __future__ import annotations

import os
from pathlib import Path

import anyio
import orjson
import pytest

from tiered_agent import ToolSet, Workspace, _search, _workspace, workspace_tools
from tiered_agent._messages import ToolCall
from tiered_agent._shell import _HeadTail, shell_tool
from tiered_agent._tools import ToolOutcome

pytestmark = pytest.mark.anyio

CATASTROPHIC = "a" * 40 + "!"  # (a+)+$ backtracks 2^40 times on this line under Python's re


def _call(name: str, **arguments: object) -> ToolCall:
    return ToolCall(id=f"c_{name}", name=name, arguments=orjson.dumps(arguments).decode())


async def _run(ws: Workspace, name: str, *, allow_write: bool = False, **arguments: object) -> ToolOutcome:
    tools = ToolSet(workspace_tools(ws, allow_write=allow_write))
    with anyio.fail_after(60):  # the hang guard: the old code never returned here
        return await tools.execute(_call(name, **arguments))


def _grep_children() -> list[int]:
    """Live child processes of this test process running the regular-expression search."""
    found = []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            stat = Path(f"/proc/{name}/stat").read_text()
            cmdline = Path(f"/proc/{name}/cmdline").read_bytes()
        except OSError:
            continue
        fields = stat.rsplit(")", 1)[1].split()
        if int(fields[1]) == os.getpid() and fields[0] not in "ZX" and b"_grep.py" in cmdline:
            found.append(int(name))
    return found


# ================================================================ 1: catastrophic regular expressions
async def test_a_catastrophic_pattern_is_matched_in_linear_time_by_re2(tmp_path: Path) -> None:
    pytest.importorskip("re2")
    (tmp_path / "a.txt").write_text(f"{CATASTROPHIC}\naaaa\n")
    (tmp_path / "code.py").write_text("def handler(event, context):\n    return {'ok': True}\n" * 50)
    ws = Workspace(tmp_path)
    assert _search.compile_pattern(r"(a+)+$") is not None  # RE2 takes it: no child process, no backtracking
    outcome = await _run(ws, "search_text", pattern=r"(a+)+$")
    assert outcome.content == "a.txt:2: aaaa"
    spaces = await _run(ws, "search_text", pattern=r"(\s*\w+\s*)*:", path="code.py", max_results=2)
    assert spaces.content.splitlines() == [
        "code.py:1: def handler(event, context):",
        "code.py:2: return {'ok': True}",
        "[stopped after 2 matches; narrow the pattern, path or glob]",
    ]


async def test_a_pattern_re2_refuses_runs_in_a_child_killed_at_the_deadline(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_workspace, "SEARCH_TIMEOUT_S", 1.0)
    (tmp_path / "1.txt").write_text("qz\n")  # matched by the lookbehind branch before the search stalls
    (tmp_path / "2.txt").write_text(f"{CATASTROPHIC}\n")
    (tmp_path / "3.txt").write_text("qz\n")  # never reached
    pattern = r"(?<=q)z|(a+)+(?=!)x"  # a lookbehind: RE2 refuses it, so Python's re runs it, in a child
    assert _search.compile_pattern(pattern) is None
    outcome = await _run(Workspace(tmp_path), "search_text", pattern=pattern)
    lines = outcome.content.splitlines()
    assert lines[0] == "1.txt:1: qz"
    assert lines[1].startswith(
        "[search stopped after 1 s, in 2.txt, with the matches above (scanned 2 file(s));"
    )
    assert "catastrophically" in lines[1] and len(lines) == 2 and not outcome.is_error
    assert _grep_children() == []


async def test_without_re2_every_pattern_runs_in_the_child(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_search, "_re2", lambda pattern: None)  # google-re2 not installed
    monkeypatch.setattr(_workspace, "SEARCH_TIMEOUT_S", 1.0)
    (tmp_path / "a.txt").write_text(f"{CATASTROPHIC}\n")
    (tmp_path / "b.txt").write_text("plain text\n")
    ws = Workspace(tmp_path)
    plain = await _run(ws, "search_text", pattern=r"pl\w+n")
    assert plain.content == "b.txt:1: plain text"
    stuck = await _run(ws, "search_text", pattern=r"(a+)+$")
    assert stuck.content.startswith("No matches for '(a+)+$' in '.'.\n[search stopped after 1 s")


async def test_cancelling_a_search_kills_its_child_at_once(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text(f"{CATASTROPHIC}\n")
    tools = ToolSet(workspace_tools(Workspace(tmp_path)))
    with anyio.move_on_after(1.0) as scope:  # the run is stopped (SIGTERM) while the search stalls
        await tools.execute(_call("search_text", pattern=r"(a+)+(?=!)x"))
    assert scope.cancelled_caught
    assert _grep_children() == []  # killed by the cancellation, not at its 30 s deadline


async def test_an_invalid_pattern_is_still_one_sentence_for_the_model(tmp_path: Path) -> None:
    outcome = await _run(Workspace(tmp_path), "search_text", pattern="(unclosed")
    assert outcome.is_error and outcome.content.startswith("Error: invalid regular expression '(unclosed'")


# ================================================================ 4: FIFOs and other non-regular files
@pytest.fixture
def fifo_workspace(tmp_path: Path) -> Workspace:
    os.mkfifo(tmp_path / "pipe")
    (tmp_path / "notes.txt").write_text("pipe dreams\n")
    return Workspace(tmp_path)


async def test_read_file_on_a_fifo_is_refused_not_waited_on(fifo_workspace: Workspace) -> None:
    outcome = await _run(fifo_workspace, "read_file", path="pipe")
    assert outcome.is_error and outcome.error_kind == "tool_error"
    assert outcome.content == "Error: 'pipe' is a FIFO (named pipe): only regular files can be read"


async def test_search_text_skips_a_fifo_and_write_tools_refuse_one(fifo_workspace: Workspace) -> None:
    found = await _run(fifo_workspace, "search_text", pattern="pipe")
    assert found.content == "notes.txt:1: pipe dreams"
    written = await _run(fifo_workspace, "write_file", allow_write=True, path="pipe", content="x")
    assert written.content == "Error: 'pipe' is a FIFO (named pipe): only regular files can be written"
    edited = await _run(fifo_workspace, "edit_file", allow_write=True, path="pipe", old="a", new="b")
    assert edited.content == "Error: 'pipe' is a FIFO (named pipe): only regular files can be read"


async def test_read_tools_have_a_timeout() -> None:
    ws_tools = {t.name: t for t in workspace_tools(Workspace("."))}
    assert ws_tools["read_file"].timeout_s == ws_tools["list_dir"].timeout_s == _workspace.READ_TOOL_TIMEOUT_S
    assert ws_tools["search_text"].timeout_s == _workspace.SEARCH_TIMEOUT_S + _workspace.READ_TOOL_TIMEOUT_S


# ================================================================ 21: NUL bytes; 17: the cap and secrets
async def test_nul_bytes_of_shell_output_are_escaped_before_the_model_sees_them(tmp_path: Path) -> None:
    tools = ToolSet([shell_tool(tmp_path)])
    outcome = await tools.execute(_call("run_shell", command=r"printf 'a\000b\000'"))
    assert outcome.content == "a\\x00b\\x00\nexit code: 0"
    assert "\x00" not in outcome.content


SECRET = "sk-proj-HOSTILEcap0123456789abcdefghijklmnopqrstuvwxyz"


@pytest.mark.parametrize("offset", [-20, -1, 0, 5, 30])
def test_the_head_cut_never_leaves_part_of_a_secret(offset: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTILE_CAP_TOKEN", SECRET)
    buffer = _HeadTail(limit=200, margin=4096)
    start = 100 + offset  # the head shows 100 bytes: the secret straddles (or touches) the cut
    buffer.feed(b"x" * start + SECRET.encode() + b"y" * 20_000)
    shown = buffer.render()
    head = shown.split("\n[... ", 1)[0]
    assert SECRET[:6] not in shown and SECRET[-6:] not in shown
    assert head.startswith("x" * min(start, 100))
    assert ("[redacted]" in head) == (start < 100)  # the whole marker, never a piece of the secret


@pytest.mark.parametrize("distance", [5, 40, 99, 100, 150])
def test_the_tail_cut_never_leaves_part_of_a_secret(distance: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOSTILE_CAP_TOKEN", SECRET)
    buffer = _HeadTail(limit=200, margin=4096)
    buffer.feed(b"x" * 20_000 + SECRET.encode() + b"z" * (100 - distance))  # ends `distance` bytes in
    shown = buffer.render()
    assert SECRET[:6] not in shown and SECRET[-6:] not in shown
    assert "bytes of output cut" in shown


def test_a_secret_across_the_cut_of_a_short_overflow_is_redacted_whole(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HOSTILE_CAP_TOKEN", SECRET)
    buffer = _HeadTail(limit=200, margin=4096)  # over the limit, under limit + margins: one text
    buffer.feed(b"x" * 90 + SECRET.encode() + b"y" * 300)
    shown = buffer.render()
    assert SECRET[:6] not in shown and SECRET[-6:] not in shown and "[redacted]" in shown


async def test_run_shell_output_cap_cuts_after_redaction(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HOSTILE_CAP_TOKEN", SECRET)
    tools = ToolSet([shell_tool(tmp_path, max_output_bytes=2000, pass_env=["HOSTILE_CAP_TOKEN"])])
    command = 'head -c 985 /dev/zero | tr "\\0" x; printf "%s" "$HOSTILE_CAP_TOKEN"; head -c 50000 /dev/zero'
    outcome = await tools.execute(_call("run_shell", command=command))
    assert SECRET[:10] not in outcome.content and SECRET[-10:] not in outcome.content
    assert outcome.content.startswith("x" * 985 + "[redacted]")  # was: x*985 + the key's first 15 chars


# ================================================================ 36: paths the system cannot name
@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("x" * 100_000, "is too long (100,000 bytes; at most 4,096)"),
        ("d/" * 3000 + "x", "is too long (6,001 bytes; at most 4,096)"),
        ("y" * 300, "holds a name of 300 bytes; a file name is at most 255"),
    ],
)
@pytest.mark.parametrize(
    ("tool", "extra"), [("read_file", {}), ("list_dir", {}), ("write_file", {"content": "x"})]
)
async def test_a_path_too_long_for_the_system_is_one_short_sentence(
    tmp_path: Path, path: str, says: str, tool: str, extra: dict[str, object]
) -> None:
    outcome = await _run(Workspace(tmp_path), tool, allow_write=True, path=path, **extra)
    assert outcome.error_kind == "tool_error"  # not "exception": no traceback logged
    assert outcome.content.startswith("Error: path '") and outcome.content.endswith(says)
    assert len(outcome.content) < 400  # the path is quoted at most 200 characters, not 100,000
    assert not any(tmp_path.iterdir())


async def test_search_text_skips_a_symlink_loop_the_agent_made(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("needle\n")
    (tmp_path / "loop").symlink_to("loop")  # `ln -s loop loop`, as run_shell can do
    (tmp_path / "b").symlink_to("c")
    (tmp_path / "c").symlink_to("b")
    outcome = await _run(Workspace(tmp_path), "search_text", pattern="needle")
    assert (outcome.error_kind, outcome.content) == (None, "a.txt:1: needle")


async def test_writing_below_a_file_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("x")
    outcome = await _run(Workspace(tmp_path), "write_file", allow_write=True, path="a.txt/b", content="y")
    assert outcome.error_kind == "tool_error"
    assert outcome.content == "Error: cannot create 'a.txt/b': a part of it is a file, not a directory"


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        (
            "read_file",
            {"path": "passwd"},
            "leads outside the workspace root through a symlink (to /etc/passwd)",
        ),
        ("read_file", {"path": "etc/hostname"}, "leads outside the workspace root through a symlink"),
        ("write_file", {"path": "etc/evil", "content": "x"}, "leads outside the workspace root"),
        (
            "read_file",
            {"path": "/proc/self/environ"},
            "is not allowed: use a path relative to the workspace root",
        ),
        ("read_file", {"path": "self/environ"}, "leads outside the workspace root through a symlink"),
        ("read_file", {"path": "zero"}, "leads outside the workspace root through a symlink (to /dev/zero)"),
        ("read_file", {"path": "sub/../../x"}, "escapes the workspace root through '..'"),
        ("read_file", {"path": "sub"}, "'sub' is a directory; use list_dir to see its contents"),
        ("list_dir", {"path": "etc"}, "leads outside the workspace root through a symlink (to /etc)"),
        ("search_text", {"pattern": "root", "path": "etc"}, "leads outside the workspace root"),
    ],
)
async def test_links_out_of_the_workspace_made_by_the_agent_are_refused(
    tmp_path: Path, tool: str, arguments: dict[str, object], says: str
) -> None:
    (tmp_path / "sub").mkdir()
    for name, target in [
        ("passwd", "/etc/passwd"),
        ("etc", "/etc"),
        ("self", "/proc/self"),
        ("zero", "/dev/zero"),
    ]:
        (tmp_path / name).symlink_to(target)
    outcome = await _run(Workspace(tmp_path), tool, allow_write=True, **arguments)
    assert outcome.is_error and outcome.error_kind == "tool_error"
    assert says in outcome.content and "\n" not in outcome.content
    assert not Path("/etc/evil").exists()


@pytest.mark.parametrize(
    "arguments",
    [{"start_line": -5}, {"start_line": 0}, {"start_line": 1.5}, {"end_line": -1}, {"start_line": "9" * 30}],
)
async def test_negative_fractional_or_huge_line_numbers_are_refused(
    tmp_path: Path, arguments: dict[str, object]
) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    outcome = await _run(Workspace(tmp_path), "read_file", path="a.txt", **arguments)
    assert outcome.error_kind in ("invalid_arguments", "tool_error"), outcome.content


async def test_a_huge_start_line_is_past_the_end_not_a_long_read(tmp_path: Path) -> None:
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    outcome = await _run(
        Workspace(tmp_path), "read_file", path="a.txt", start_line=10**18, end_line=10**18 + 5
    )
    assert outcome.content == f"Error: start_line {10**18} is past the end of 'a.txt', which has 2 lines"
