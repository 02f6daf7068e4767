"""The corpus: every recorded run under ``<repo>/../shared`` through every policy, without a step error.

The shared trajectories (mini-swe-agent, SWE-agent, tau-bench, OpenHands) and the real sessions
(Claude Code, Codex) are runs this project was not written against: the replay of each through
every preset and ablation, exactly as ``tiered-agent bench`` does it, must record no step error
(no context step raised on any of their prompts or tool calls). Skips cleanly when ``../shared``
is absent; slow (it replays every policy over thousands of model calls).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
FOLDERS = [SHARED / "trajectories", SHARED / "sessions"]

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not any(folder.is_dir() for folder in FOLDERS), reason=f"{SHARED} (the shared runs) is absent"
    ),
]


def test_every_policy_replays_the_shared_runs_without_a_step_error() -> None:
    loaded = load_runs([folder for folder in FOLDERS if folder.is_dir()])
    assert loaded.runs, "the shared folders hold recorded runs"
    policies = resolve_policies(None)
    result = replay_runs(loaded.runs, policies, ReplaySettings(), workers=min(2, os.cpu_count() or 1))
    assert {r.run_id for r in result.replays} == {r.run_id for r in result.runs}
    errors = [
        (name, replay.run_id, error)
        for replay in result.replays
        for name, metrics in replay.policies.items()
        for error in metrics.step_errors
    ]
    assert not errors, f"{len(errors)} step errors, e.g. {errors[:5]}"
    steps = sum(len(m.steps) for r in result.replays for m in r.policies.values())
    assert steps == sum(r.steps for r in result.runs) * len(policies)  # every prompt of every policy
