"""``benchmarks/repeat_outputs.py``: outputs that repeat the previous output of the same call."""

from __future__ import annotations

from types import ModuleType

from bench_scripts import ROOT, load_script


def _script() -> ModuleType:
    return load_script("repeat_outputs")


def test_the_changed_lines_are_those_not_in_the_previous_output_in_order() -> None:
    changed = _script().changed_lines
    before = "collected 3 items\ntest_a PASSED\ntest_b FAILED\nseed 123\n1 failed in 0.3s"
    after = "collected 3 items\ntest_a PASSED\ntest_b PASSED\nseed 456\n0 failed in 0.2s"
    assert changed(before, after) == (2, "test_b PASSED\nseed 456\n0 failed in 0.2s")
    assert changed(before, before) == (5, "")


def test_the_bundled_runs_repeat_some_outputs_and_the_saving_is_within_them() -> None:
    found = _script().repeats([ROOT / "traces" / "mini-swe-agent"])
    shell = found["swe-shell"]
    assert shell["all"] > 0 and 0 < shell["diff saving"] < shell["near"] < shell["all"]
    assert shell["identical"] < shell["all"]
