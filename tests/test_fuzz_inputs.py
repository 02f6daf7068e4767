"""``benchmarks/fuzz_inputs.py``: its merge and ``--policy-json`` classes judge as the team promises."""

from __future__ import annotations

import random
from pathlib import Path

from bench_scripts import ROOT, load_script

load_script("fuzz_logs")  # fuzz_inputs imports its mutator, as a sibling script does
fuzz = load_script("fuzz_inputs")


def test_judge_takes_exit_0_or_one_sentence_and_nothing_else() -> None:
    assert fuzz._judge("c", 0, "wrote x") is None
    assert fuzz._judge("c", 2, "warning: y\nError: shard.json: not a bench document\n\n") is None
    assert fuzz._judge("c", 2, "Usage: ...\n") == "c: exit 2 without a sentence: ['Usage: ...']"
    assert fuzz._judge("c", None, "") == "c: did not end in time (a hang)"
    assert (fuzz._judge("c", 1, "Traceback (most recent call last):\n  boom") or "").startswith(
        "c: printed a traceback"
    )
    assert fuzz._judge("c", 1, "failed") == "c: exit 1: failed"


def test_a_few_seeded_policy_files_each_export_or_are_one_sentence(tmp_path: Path) -> None:
    run = ROOT / "traces" / "tau-bench" / "task0_trial0.jsonl"
    failures = fuzz.fuzz_policy(random.Random(23), run, tmp_path, 4, 120.0)
    assert failures == []
    assert len(list(tmp_path.glob("policy*.json"))) == 4
