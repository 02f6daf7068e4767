"""Workspace confinement and the file tools (list_dir, read_file, search_text, write_file, edit_file)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import orjson
import pytest

from tiered_agent import _workspace
from tiered_agent._errors import ConfigurationError, PathOutsideWorkspace, ToolError
from tiered_agent._messages import ToolCall
from tiered_agent._tools import Tool, ToolOutcome, ToolSet
from tiered_agent._workspace import Workspace, workspace_tools

pytestmark = pytest.mark.anyio


@pytest.fixture
def layout(tmp_path: Path) -> tuple[Workspace, Path]:
    """A workspace ``tmp_path/ws`` and a sibling directory ``tmp_path/outside`` holding a secret."""
    root = tmp_path / "ws"
    (root / "src" / "pkg").mkdir(parents=True)
    (root / "src" / "main.py").write_text("import os\n\ndef main():\n    return 42\n")
    (root / "src" / "pkg" / "util.py").write_text("def helper():\n    return 'main'\n")
    (root / "README.md").write_text("# Demo\nmain entry point\n")
    (root / ".git").mkdir()
    (root / ".git" / "config").write_text("main = secret\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret main\n")
    return Workspace(root), outside


def tools_by_name(ws: Workspace, **flags: bool) -> dict[str, Tool]:
    return {t.name: t for t in workspace_tools(ws, **flags)}


async def run(ws: Workspace, name: str, **arguments: Any) -> ToolOutcome:
    tools = ToolSet(workspace_tools(ws, allow_write=True))
    return await tools.execute(ToolCall(id="c1", name=name, arguments=orjson.dumps(arguments).decode()))


# --------------------------------------------------------------------------- confinement


def test_construction_has_no_side_effects(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    assert ws.root == tmp_path.resolve()
    assert list(tmp_path.iterdir()) == []


def test_a_missing_or_file_root_is_a_configuration_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigurationError, match=r"workspace root .*/not/yet does not exist"):
        Workspace(tmp_path / "not" / "yet")
    assert not (tmp_path / "not").exists()  # nothing created
    (tmp_path / "file").write_text("x")
    with pytest.raises(ConfigurationError, match="is not a directory"):
        Workspace(tmp_path / "file")


def test_resolve_inside(layout: tuple[Workspace, Path]) -> None:
    ws, _ = layout
    assert ws.resolve(".") == ws.root
    assert ws.resolve("") == ws.root
    assert ws.resolve("src/main.py") == ws.root / "src" / "main.py"
    assert ws.resolve("src/../README.md") == ws.root / "README.md"
    assert ws.resolve("new/file.txt") == ws.root / "new" / "file.txt"  # need not exist
    (ws.root / "inner_link").symlink_to(ws.root / "src")
    assert ws.resolve("inner_link/main.py") == ws.root / "src" / "main.py"


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("/etc/passwd", "absolute path '/etc/passwd' is not allowed"),
        ("..", "escapes the workspace root through '..'"),
        ("../outside/secret.txt", "escapes the workspace root through '..'"),
        ("src/../../outside", "escapes the workspace root through '..'"),
    ],
)
def test_resolve_refuses_lexical_escapes(layout: tuple[Workspace, Path], path: str, message: str) -> None:
    ws, _ = layout
    with pytest.raises(PathOutsideWorkspace, match=message.replace("(", r"\(").replace(".", r"\.")):
        ws.resolve(path)


def test_resolve_refuses_symlinks_outside(layout: tuple[Workspace, Path]) -> None:
    ws, outside = layout
    (ws.root / "file_link").symlink_to(outside / "secret.txt")
    (ws.root / "dir_link").symlink_to(outside)
    (ws.root / "src" / "deep_link").symlink_to(outside)
    (ws.root / "dangling").symlink_to(outside / "missing.txt")
    (ws.root / "dotdot_link").symlink_to(ws.root / "src")  # inside, but "dotdot_link/../.." is not
    for path in ("file_link", "dir_link/secret.txt", "src/deep_link/secret.txt", "dangling", "dir_link"):
        with pytest.raises(PathOutsideWorkspace, match="leads outside the workspace root through a symlink"):
            ws.resolve(path)
    (ws.root / "src" / "up").symlink_to(outside.parent)
    with pytest.raises(PathOutsideWorkspace):
        ws.resolve("src/up/outside/secret.txt")


async def test_tools_report_escapes_to_the_model(layout: tuple[Workspace, Path]) -> None:
    ws, outside = layout
    (ws.root / "dir_link").symlink_to(outside)
    for name, args in [
        ("read_file", {"path": "dir_link/secret.txt"}),
        ("read_file", {"path": "/etc/passwd"}),
        ("list_dir", {"path": "../outside"}),
        ("search_text", {"pattern": "secret", "path": "dir_link"}),
        ("write_file", {"path": "../evil.txt", "content": "x"}),
        ("edit_file", {"path": "dir_link/secret.txt", "old": "top", "new": "bottom"}),
    ]:
        outcome = await run(ws, name, **args)
        assert outcome.is_error, (name, args)
        assert outcome.error_kind == "tool_error"
    assert not (ws.root.parent / "evil.txt").exists()
    assert (outside / "secret.txt").read_text() == "top secret main\n"


def test_tool_selection_flags(layout: tuple[Workspace, Path]) -> None:
    ws, _ = layout
    assert list(tools_by_name(ws)) == ["list_dir", "read_file", "search_text"]
    assert list(tools_by_name(ws, allow_write=True)) == [
        "list_dir",
        "read_file",
        "search_text",
        "write_file",
        "edit_file",
    ]
    shell = tools_by_name(ws, allow_shell=True)
    assert list(shell) == ["list_dir", "read_file", "search_text", "run_shell"]
    assert [t.read_only for t in shell.values()] == [True, True, True, False]
    for t in workspace_tools(ws, allow_write=True, allow_shell=True):
        assert len(t.description) > 40, t.name
        props = t.parameters["properties"]
        assert all(p.get("description") for p in props.values()), t.name


# --------------------------------------------------------------------------- list_dir


def test_list_dir_depths_and_markers(layout: tuple[Workspace, Path]) -> None:
    ws, _ = layout
    list_dir = tools_by_name(ws)["list_dir"].fn
    assert list_dir(".", 1) == "README.md\nsrc/"
    assert list_dir(".", 3) == "README.md\nsrc/\nsrc/main.py\nsrc/pkg/\nsrc/pkg/util.py"
    assert list_dir("src", 1) == "src/main.py\nsrc/pkg/"
    (ws.root / "empty").mkdir()
    assert list_dir("empty", 1) == "empty/ is empty"
    with pytest.raises(ToolError, match="is a file"):
        list_dir("README.md", 1)
    with pytest.raises(ToolError, match="does not exist"):
        list_dir("nope", 1)


def test_list_dir_does_not_follow_symlinked_dirs(layout: tuple[Workspace, Path]) -> None:
    ws, _ = layout
    (ws.root / "loop").symlink_to(ws.root)
    listing = tools_by_name(ws)["list_dir"].fn(".", 3)
    assert "loop" in listing.splitlines()
    assert not any(line.startswith("loop/") for line in listing.splitlines())


def test_list_dir_is_bounded(tmp_path: Path) -> None:
    for i in range(510):
        (tmp_path / f"f{i:03}.txt").write_text("")
    listing = tools_by_name(Workspace(tmp_path))["list_dir"].fn(".", 1).splitlines()
    assert len(listing) == 501
    assert listing[0] == "f000.txt"
    assert listing[-1] == "[listing stopped at 500 entries]"


async def test_list_dir_depth_is_validated(layout: tuple[Workspace, Path]) -> None:
    ws, _ = layout
    outcome = await run(ws, "list_dir", depth=0)
    assert outcome.error_kind == "invalid_arguments"
    assert "- depth: Input should be greater than or equal to 1 (got 0)" in outcome.content


# --------------------------------------------------------------------------- read_file


def test_read_file_ranges(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("".join(f"line {i}\n" for i in range(1, 13)))
    read = tools_by_name(Workspace(tmp_path))["read_file"].fn
    full = read("f.txt", 1, None).splitlines()
    assert full[0] == "f.txt (lines 1-12 of 12)"
    assert full[1] == "1\tline 1"  # unpadded: padding is tokens the model reads for nothing
    assert full[12] == "12\tline 12"
    assert len(full) == 13
    assert read("f.txt", 3, 5) == "f.txt (lines 3-5 of 12)\n3\tline 3\n4\tline 4\n5\tline 5"
    assert read("f.txt", 12, 12) == "f.txt (lines 12-12 of 12)\n12\tline 12"
    assert read("f.txt", 11, 99).splitlines()[0] == "f.txt (lines 11-12 of 12)"
    with pytest.raises(
        ToolError, match=re.escape("start_line 13 is past the end of 'f.txt', which has 12 lines")
    ):
        read("f.txt", 13, None)
    with pytest.raises(ToolError, match=r"end_line \(2\) is before start_line \(4\)"):
        read("f.txt", 4, 2)


def test_read_file_line_endings_and_empty(tmp_path: Path) -> None:
    (tmp_path / "crlf.txt").write_bytes(b"a\r\nb\r\nno newline at end")
    (tmp_path / "empty.txt").write_bytes(b"")
    read = tools_by_name(Workspace(tmp_path))["read_file"].fn
    assert read("crlf.txt", 1, None) == "crlf.txt (lines 1-3 of 3)\n1\ta\n2\tb\n3\tno newline at end"
    assert read("empty.txt", 1, None) == "empty.txt is empty (0 lines)"


def test_read_file_refuses_directories_and_binaries(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    (tmp_path / "blob.bin").write_bytes(b"\x7fELF\x00\x01\x02" * 10)
    read = tools_by_name(Workspace(tmp_path))["read_file"].fn
    with pytest.raises(ToolError, match="'d' is a directory; use list_dir"):
        read("d", 1, None)
    with pytest.raises(ToolError, match=r"'blob.bin' is a binary file \(70 bytes\)"):
        read("blob.bin", 1, None)


def test_read_file_caps_lines_per_call(tmp_path: Path) -> None:
    (tmp_path / "long.txt").write_text("x\n" * 2500)
    out = tools_by_name(Workspace(tmp_path))["read_file"].fn("long.txt", 1, None).splitlines()
    assert out[0] == "long.txt (lines 1-2000 of 2500)"
    assert len(out) == 2002
    assert out[-1] == "[stopped at 2000 lines; continue with start_line=2001]"


def test_read_file_streams_a_large_file(tmp_path: Path) -> None:
    import tracemalloc

    line = "0123456789abcdef" * 6 + "\n"  # 97 bytes
    with (tmp_path / "big.log").open("w") as handle:
        for _ in range(20):
            handle.write(line * 10_000)  # 19.4 MB, 200,000 lines
        handle.write("é" * 5_000 + "\r\n" + "tail without newline")
    read = tools_by_name(Workspace(tmp_path))["read_file"].fn
    tracemalloc.start()
    try:
        out = read("big.log", 199_999, None)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 2_000_000  # the file is 19 MB: it was never held in memory
    lines = out.splitlines()
    assert lines[0] == "big.log (lines 199999-200002 of 200002)"
    assert lines[1] == "199999\t" + line.rstrip("\n")
    assert lines[3] == "200001\t" + "é" * 2000 + "… [line cut, 5000 chars]"
    assert lines[4] == "200002\ttail without newline"
    first = read("big.log", 1, 2).splitlines()
    assert first == ["big.log (lines 1-2 of 200002)", "1\t" + line.rstrip("\n"), "2\t" + line.rstrip("\n")]


async def test_read_file_start_line_validated(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\n")
    outcome = await run(Workspace(tmp_path), "read_file", path="f.txt", start_line=0)
    assert outcome.error_kind == "invalid_arguments"


# --------------------------------------------------------------------------- search_text


async def test_search_text_matches_and_skips_git(layout: tuple[Workspace, Path]) -> None:
    ws, _ = layout
    search = tools_by_name(ws)["search_text"].fn
    assert (await search(r"main", ".", None, 100)).splitlines() == [
        "README.md:2: main entry point",
        "src/main.py:3: def main():",
        "src/pkg/util.py:2: return 'main'",
    ]
    assert (await search(r"main", ".", "*.py", 100)).splitlines() == [
        "src/main.py:3: def main():",
        "src/pkg/util.py:2: return 'main'",
    ]
    assert await search(r"main", ".", "src/pkg/*", 100) == "src/pkg/util.py:2: return 'main'"
    assert await search(r"return", "src/main.py", None, 100) == "src/main.py:4: return 42"
    assert await search(r"zzz", ".", None, 100) == "No matches for 'zzz' in '.'."


async def test_search_text_bounds(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "many.txt").write_text("hit\n" * 50)
    (tmp_path / "big.txt").write_text("hit " * 1000)
    (tmp_path / "bin.dat").write_bytes(b"hit\x00hit")
    (tmp_path / "wide.txt").write_text("hit" + "y" * 1000 + "\n")
    monkeypatch.setattr(_workspace, "SEARCH_MAX_FILE_BYTES", 2000)
    search = tools_by_name(Workspace(tmp_path))["search_text"].fn
    lines = (await search("hit", ".", None, 5)).splitlines()
    assert lines[:5] == [f"many.txt:{i}: hit" for i in range(1, 6)]
    assert lines[5] == "[stopped after 5 matches; narrow the pattern, path or glob]"
    assert lines[6] == "[1 file(s) over 2000 bytes not searched]"
    assert len(lines) == 7
    wide = await search("hit", "wide.txt", None, 10)
    assert wide == "wide.txt:1: hit" + "y" * 297 + "… [line cut, 1003 chars]"


async def test_search_text_invalid_regex(tmp_path: Path) -> None:
    search = tools_by_name(Workspace(tmp_path))["search_text"].fn
    with pytest.raises(ToolError, match=r"invalid regular expression '\(unclosed'"):
        await search("(unclosed", ".", None, 10)


async def test_search_text_invalid_regex_outcome_and_bounds(tmp_path: Path) -> None:
    ws = Workspace(tmp_path)
    outcome = await run(ws, "search_text", pattern="[a-")
    assert (outcome.is_error, outcome.error_kind) == (True, "tool_error")
    assert outcome.content.startswith("Error: invalid regular expression '[a-'")
    too_many = await run(ws, "search_text", pattern="a", max_results=5000)
    assert too_many.error_kind == "invalid_arguments"


async def test_search_text_ignores_symlinked_files_outside(layout: tuple[Workspace, Path]) -> None:
    ws, outside = layout
    (ws.root / "leak.txt").symlink_to(outside / "secret.txt")
    assert (
        await tools_by_name(ws)["search_text"].fn("secret", ".", None, 100)
        == "No matches for 'secret' in '.'."
    )


# --------------------------------------------------------------------------- write_file / edit_file


def test_write_file(tmp_path: Path) -> None:
    write = tools_by_name(Workspace(tmp_path), allow_write=True)["write_file"].fn
    assert write("a/b/new.txt", "one\ntwo\n") == "Created a/b/new.txt: 8 bytes, 2 lines"
    assert (tmp_path / "a" / "b" / "new.txt").read_text() == "one\ntwo\n"
    assert write("a/b/new.txt", "é") == "Overwrote a/b/new.txt: 2 bytes, 1 lines"
    with pytest.raises(ToolError, match="is a directory"):
        write("a", "x")


def test_edit_file(tmp_path: Path) -> None:
    path = tmp_path / "code.py"
    path.write_text("x = 1\ny = 1\nz = 2\n")
    edit = tools_by_name(Workspace(tmp_path), allow_write=True)["edit_file"].fn
    assert edit("code.py", "z = 2", "z = 3", 1) == "Replaced 1 occurrence(s) in code.py (first at line 3)"
    assert path.read_text() == "x = 1\ny = 1\nz = 3\n"
    with pytest.raises(ToolError, match=re.escape("old text occurs 2 times in 'code.py' but count=1")):
        edit("code.py", "= 1", "= 5", 1)
    assert path.read_text() == "x = 1\ny = 1\nz = 3\n"  # unchanged after an error
    with pytest.raises(ToolError, match=re.escape("old text not found in 'code.py'")):
        edit("code.py", "w = 9", "w = 0", 1)
    assert edit("code.py", "= 1", "= 5", 2) == "Replaced 2 occurrence(s) in code.py (first at line 1)"
    assert edit("code.py", "= 5", "= 6", 0) == "Replaced 2 occurrence(s) in code.py (first at line 1)"
    assert path.read_text() == "x = 6\ny = 6\nz = 3\n"
    with pytest.raises(ToolError, match="identical"):
        edit("code.py", "x", "x", 1)
    with pytest.raises(ToolError, match="must not be empty"):
        edit("code.py", "", "x", 1)
    with pytest.raises(ToolError, match="does not exist"):
        edit("missing.py", "a", "b", 1)


def test_edit_file_preserves_crlf_and_refuses_binary(tmp_path: Path) -> None:
    (tmp_path / "win.txt").write_bytes(b"a\r\nb\r\n")
    (tmp_path / "bin.dat").write_bytes(b"a\x00b")
    edit = tools_by_name(Workspace(tmp_path), allow_write=True)["edit_file"].fn
    edit("win.txt", "b", "c", 1)
    assert (tmp_path / "win.txt").read_bytes() == b"a\r\nc\r\n"
    with pytest.raises(ToolError, match="binary"):
        edit("bin.dat", "a", "c", 1)


async def test_edit_file_count_validated(tmp_path: Path) -> None:
    (tmp_path / "f.txt").write_text("a\n")
    outcome = await run(Workspace(tmp_path), "edit_file", path="f.txt", old="a", new="b", count=-1)
    assert outcome.error_kind == "invalid_arguments"
    assert (tmp_path / "f.txt").read_text() == "a\n"


def test_symlink_loop_is_a_tool_error(tmp_path: Path) -> None:
    os.symlink(tmp_path / "loop_a", tmp_path / "loop_b")
    os.symlink(tmp_path / "loop_b", tmp_path / "loop_a")
    with pytest.raises(ToolError):
        Workspace(tmp_path).resolve("loop_a/x")
