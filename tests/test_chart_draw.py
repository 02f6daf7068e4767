"""The bench's charts are drawn at the same time (forked children on Linux), and none is lost."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from tiered_agent.bench._chart import Drawing, draw_charts

PARENT = os.getpid()


def _writer(path: Path, *, fail_in_child: bool = False, fail: bool = False) -> tuple[Drawing, Path]:
    def draw() -> Path:
        if fail or (fail_in_child and os.getpid() != PARENT):
            raise RuntimeError(f"cannot draw {path.name}")
        path.write_text(f"{path.name} by {os.getpid()}")
        return path

    return draw, path


def test_every_chart_is_drawn_and_the_others_in_children(tmp_path: Path) -> None:
    drawings = {name: _writer(tmp_path / f"{name}.png") for name in ("chart", "frontier", "third")}
    paths = draw_charts(drawings)
    assert paths == {name: tmp_path / f"{name}.png" for name in drawings}
    authors = {name: path.read_text().split(" by ")[1] for name, path in paths.items()}
    assert authors["chart"] == str(PARENT)
    if sys.platform == "linux":
        assert str(PARENT) not in (authors["frontier"], authors["third"])


def test_a_chart_whose_child_failed_is_drawn_here(tmp_path: Path) -> None:
    drawings = {
        "chart": _writer(tmp_path / "a.png"),
        "frontier": _writer(tmp_path / "b.png", fail_in_child=True),
    }
    paths = draw_charts(drawings)
    assert paths["frontier"].read_text() == f"b.png by {PARENT}"


def test_a_chart_that_cannot_be_drawn_raises_here(tmp_path: Path) -> None:
    drawings = {"chart": _writer(tmp_path / "a.png"), "frontier": _writer(tmp_path / "b.png", fail=True)}
    with pytest.raises(RuntimeError, match=r"cannot draw b\.png"):
        draw_charts(drawings)
    assert (tmp_path / "a.png").exists()
