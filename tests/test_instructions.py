"""AGENTS.md loading: hierarchy order, de-duplication, the size cap, and the system prompt."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tiered_agent._errors import ConfigurationError
from tiered_agent._instructions import (
    Instructions,
    build_system_prompt,
    find_project_root,
    load_instructions,
)


@pytest.fixture
def tree(tmp_path: Path) -> dict[str, Path]:
    """home/.tiered_agent/AGENTS.md, proj/ (a git checkout) with AGENTS.md, proj/sub/ with AGENTS.md."""
    home = tmp_path / "home"
    (home / ".tiered_agent").mkdir(parents=True)
    (home / ".tiered_agent" / "AGENTS.md").write_text("GLOBAL rules\n")
    proj = tmp_path / "proj"
    (proj / ".git").mkdir(parents=True)
    (proj / "AGENTS.md").write_text("PROJECT rules\n")
    sub = proj / "pkg" / "sub"
    sub.mkdir(parents=True)
    (sub / "AGENTS.md").write_text("CWD rules\n")
    return {"home": home, "proj": proj, "sub": sub}


def test_order_global_project_cwd(tree: dict[str, Path]) -> None:
    result = load_instructions(tree["sub"], home=tree["home"])
    expected_sources = (
        tree["home"] / ".tiered_agent" / "AGENTS.md",
        tree["proj"] / "AGENTS.md",
        tree["sub"] / "AGENTS.md",
    )
    assert result.sources == expected_sources
    assert not result.truncated
    text = result.text
    positions = [text.index("GLOBAL rules"), text.index("PROJECT rules"), text.index("CWD rules")]
    assert positions == sorted(positions)
    for path in expected_sources:  # each file is named in a header
        assert f": {path}\n" in text
    assert text.index(f": {expected_sources[1]}") < text.index("PROJECT rules")


def test_project_root_is_cwd_is_included_once(tree: dict[str, Path]) -> None:
    result = load_instructions(tree["proj"], home=tree["home"])
    assert result.sources == (tree["home"] / ".tiered_agent" / "AGENTS.md", tree["proj"] / "AGENTS.md")
    assert result.text.count("PROJECT rules") == 1


def test_nearest_marker_wins_and_missing_files_are_skipped(tree: dict[str, Path]) -> None:
    (tree["proj"] / "pkg" / "pyproject.toml").write_text("[project]\n")
    (tree["proj"] / "pkg" / "AGENTS.md").write_text("PKG rules\n")
    assert find_project_root(tree["sub"]) == tree["proj"] / "pkg"
    (tree["sub"] / "AGENTS.md").unlink()
    result = load_instructions(tree["sub"], home=tree["home"])
    assert result.sources == (
        tree["home"] / ".tiered_agent" / "AGENTS.md",
        tree["proj"] / "pkg" / "AGENTS.md",
    )
    assert "PROJECT rules" not in result.text
    for marker in ("package.json", "go.mod"):
        other = tree["home"] / marker.replace(".", "_")
        other.mkdir()
        (other / marker).write_text("")
        assert find_project_root(other) == other


def test_no_files_gives_empty_instructions(tmp_path: Path) -> None:
    (tmp_path / "AGENTS.md").write_text("   \n\n")  # blank files do not count
    result = load_instructions(tmp_path, home=tmp_path / "nohome")
    assert result == Instructions(text="", sources=(), truncated=False)
    assert not result
    assert build_system_prompt("You are helpful.", result) == "You are helpful."


def test_cap_with_visible_note(tree: dict[str, Path]) -> None:
    (tree["sub"] / "AGENTS.md").write_text("C" * 40_000)
    full = load_instructions(tree["sub"], home=tree["home"], cap_bytes=10**6)
    capped = load_instructions(tree["sub"], home=tree["home"])
    assert capped.truncated
    assert not full.truncated
    total = len(full.text.encode())
    kept, note = capped.text.split("\n\n[AGENTS.md instructions cut at 32 KiB; ", 1)
    assert len(kept.encode()) == 32 * 1024
    assert note == f"{total - 32 * 1024} bytes omitted]"
    assert kept == full.text[: 32 * 1024]
    assert capped.sources == full.sources
    assert "GLOBAL rules" in capped.text  # the cut falls at the end, on the most specific file


def test_cap_never_splits_a_character(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    (tmp_path / "AGENTS.md").write_text("é" * 100)  # 2 bytes per character
    full = load_instructions(tmp_path, home=tmp_path / "nohome", cap_bytes=10**6).text
    cap = len(full[: full.index("é")].encode()) + 51  # in the middle of the 26th "é"
    result = load_instructions(tmp_path, home=tmp_path / "nohome", cap_bytes=cap)
    assert result.truncated
    kept, note = result.text.split("\n\n[AGENTS.md instructions cut at ", 1)
    assert kept.endswith("é" * 25)
    assert not kept.endswith("é" * 26)
    assert note == f"{cap} bytes; {len(full.encode()) - (cap - 1)} bytes omitted]"


def test_build_system_prompt(tree: dict[str, Path]) -> None:
    instructions = load_instructions(tree["sub"], home=tree["home"])
    prompt = build_system_prompt("You are a coding agent.\n", instructions)
    assert prompt.startswith("You are a coding agent.\n\nInstructions from AGENTS.md files")
    assert prompt.endswith(instructions.text)


def deny(monkeypatch: pytest.MonkeyPatch, directory: Path) -> None:
    """Make ``directory`` unreadable: chmod 000, and for root (who reads anything) the error
    every other user gets."""
    directory.chmod(0)
    if os.geteuid() == 0:
        real = Path.is_file

        def is_file(self: Path) -> bool:
            if self.is_relative_to(directory):
                raise PermissionError(13, "Permission denied", str(self))
            return real(self)

        monkeypatch.setattr(Path, "is_file", is_file)


def test_an_unreadable_global_directory_is_one_configuration_error(
    tree: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    hidden = tree["home"] / ".tiered_agent"
    deny(monkeypatch, hidden)
    try:
        with pytest.raises(ConfigurationError) as caught:
            load_instructions(tree["sub"], home=tree["home"])
    finally:
        hidden.chmod(0o755)
    assert str(caught.value) == (
        f"cannot read the instructions in {hidden / 'AGENTS.md'}: Permission denied; "
        "fix its permissions or move it away"
    )
