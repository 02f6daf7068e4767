"""Groups of runs next to the families (``real-sessions``: the runs read from Claude Code and Codex
session logs) and issue 18's targets: summed like a family, reported, never invented for a bench
without such runs."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from samples import read_messages

from tiered_agent._messages import Usage
from tiered_agent.bench._groups import REAL_SESSIONS, groups_of
from tiered_agent.bench._importers import FORMATS, load_runs, write_run_trace
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
from tiered_agent.bench._report import build_document, render_markdown
from tiered_agent.bench._targets import (
    ISSUE_18,
    Target,
    TargetSet,
    dominance_line,
    dominating,
    targets_dict,
    targets_lines,
)

ROOT = Path(__file__).resolve().parents[1]
CLAUDE = (
    ROOT / "tests/fixtures/home/.claude/projects/-home-user-demo/5f0c1d2e-0000-4000-8000-000000000001.jsonl"
)
ADDITIVE = (
    "runs",
    "steps",
    "prompt_tokens",
    "input_tokens",
    "cached_tokens",
    "salient",
    "missed",
    "word_salient",
)


def _run(run_id: str, fmt: str, steps: int = 5) -> RecordedRun:
    return RecordedRun(
        run_id,
        f"memory:{run_id}",
        fmt,
        read_messages(run_id, steps, lines=50, system_repeat=30),
        tools=({"type": "function", "function": {"name": "read_file"}},),
        read_only_tools=frozenset({"read_file"}),
        model="gpt-4o",
        usage=tuple(Usage(900 + 150 * k, 30, 0, 1) for k in range(steps)),
    )


def _document(runs: list[RecordedRun]) -> dict[str, Any]:
    replayed = replay_runs(runs, resolve_policies(["tiered"]), ReplaySettings(price_model="gpt-4o"))
    return build_document(replayed, ["m"])


def _table(document: dict[str, Any], tmp_path: Path) -> str:
    path = tmp_path / "bench.json"
    path.write_bytes(orjson.dumps(document))
    script = ROOT / "scripts" / "results_table.py"
    return subprocess.run(
        [sys.executable, str(script), str(path), "--families"], check=True, capture_output=True, text=True
    ).stdout


def test_the_group_is_the_session_log_formats_only() -> None:
    assert {f: groups_of(f) for f in FORMATS} == {
        "mini-swe-agent": (),
        "swe-agent": (),
        "tau-bench": (),
        "openhands": (),
        "claude-code": (REAL_SESSIONS,),
        "codex": (REAL_SESSIONS,),
        "tiered-agent": (),
    }
    assert groups_of("") == groups_of("real-sessions") == ()


def test_a_trace_of_a_session_stays_a_session_a_live_trace_does_not(tmp_path: Path) -> None:
    [session, *_] = load_runs([CLAUDE]).runs
    write_run_trace(session, tmp_path / "copy.jsonl")
    write_run_trace(dataclasses.replace(session, format="tiered-agent"), tmp_path / "live.jsonl")
    copy, live = (load_runs([tmp_path / name]).runs[0] for name in ("copy.jsonl", "live.jsonl"))
    assert groups_of(copy.format) == (REAL_SESSIONS,) and groups_of(live.format) == ()


def test_the_group_sums_its_runs_exactly_as_a_family() -> None:
    runs = [_run("cc-a", "claude-code", 6), _run("cc-b", "claude-code", 3), _run("cx", "codex", 4)]
    document = _document([*runs, _run("swe", "mini-swe-agent", 5)])
    group, families = document["groups"][REAL_SESSIONS], document["families"]
    assert group["runs"] == 3 and group["steps"] == 13
    for name in ("full", "tiered"):
        totals = group["policies"][name]["totals"]
        parts = [families[f]["policies"][name]["totals"] for f in ("claude-code", "codex")]
        assert {k: totals[k] for k in ADDITIVE} == {k: sum(p[k] for p in parts) for k in ADDITIVE}
    assert group["policies"]["tiered"]["totals"]["token_savings_vs_full"] > 0
    assert {r["run_id"]: r["groups"] for r in document["inputs"]["runs"]} == {
        "cc-a": [REAL_SESSIONS],
        "cc-b": [REAL_SESSIONS],
        "cx": [REAL_SESSIONS],
        "swe": [],
    }
    alone = _document([_run("cc-a", "claude-code", 6)])  # one family: the group is that family
    assert alone["groups"][REAL_SESSIONS] == alone["families"]["claude-code"]


def test_a_bench_without_sessions_prints_no_group(tmp_path: Path) -> None:
    document = _document([_run("swe-1", "mini-swe-agent"), _run("swe-2", "swe-agent")])
    assert document["groups"] == {}
    [swe, sessions] = document["targets"]
    assert (swe["name"], swe["runs"], sessions["name"], sessions["runs"]) == (
        "swe-shell",
        2,
        REAL_SESSIONS,
        0,
    )
    assert all(c["met"] is None and c["value"] is None for c in sessions["targets"])
    report = render_markdown(document)
    assert "(group)" not in report
    assert "**real-sessions** (`tiered`): no run of this group in the bench, not measured." in report
    table = _table(document, tmp_path)
    assert "real-sessions (group" not in table and "not measured" in table


def test_a_bench_of_sessions_only_reports_the_group(tmp_path: Path) -> None:
    document = _document([_run("cc", "claude-code"), _run("cx", "codex")])
    assert list(document["families"]) == ["claude-code", "codex"]
    assert document["groups"][REAL_SESSIONS]["runs"] == 2
    report = render_markdown(document)
    assert "**real-sessions (group)** (2 runs)" in report and "real-sessions (group) (2 runs)" in report
    assert "**swe-shell** (`tiered`): no run of this family in the bench, not measured." in report
    table = _table(document, tmp_path)
    assert "\nreal-sessions (group, 2 runs):\n" in table and "| real-sessions (group, 2) |" in table
    usd = document["groups"][REAL_SESSIONS]["policies"]["tiered"]["totals"]["cost_usd_savings_vs_full"]
    assert f"dollars saved {usd * 100:.1f}% (target >= 35%: {'met' if usd >= 0.35 else 'not met'})" in table


def test_targets_are_checked_against_their_thresholds() -> None:
    sets = (
        TargetSet(
            "groups",
            "g",
            (
                Target("a", "a", 0.35, at_most=False),
                Target("b", "b", 0.05, at_most=True),
                Target("c", "c", 0.05, at_most=True),
                Target("d", "d", 0.05, at_most=True),
            ),
        ),
    )
    totals = {"a": 0.35, "b": 0.0500001, "c": None, "d": True}
    document = {"groups": {"g": {"runs": 4, "policies": {"tiered": {"totals": totals}}}}}
    [entry] = targets_dict(document, sets)
    assert [(c["value"], c["met"]) for c in entry["targets"]] == [
        (0.35, True),
        (0.0500001, False),
        (None, None),
        (None, None),
    ]
    [line] = targets_lines([entry])
    assert line.startswith("- **g** (`tiered`, 4 runs; 1 of 4 met): a 35.0% (target >= 35%: met); b 5.0%")
    assert "c n/a (target <= 5%: not measured)" in line
    assert targets_dict({}, ISSUE_18)[1]["runs"] == 0  # an empty document: nothing measured, no error


@pytest.mark.parametrize(
    "hostile",
    [
        {"groups": None},
        {"groups": {"real-sessions": {}}},
        {"families": ["swe-shell"]},
        {"families": {"swe-shell": {"runs": "9", "policies": {"tiered": []}}}},
    ],
)
def test_targets_of_a_document_of_another_shape_are_not_measured(hostile: dict[str, Any]) -> None:
    entries = targets_dict(hostile)
    assert all(c["met"] is None for e in entries for c in e["targets"])
    assert [e["runs"] for e in entries] == [0, 0]


def _policy(cost: float, *rates: float) -> dict[str, Any]:
    keys = ("miss_rate", "word_miss_rate", "line_miss_rate", "own_miss_rate")
    return {"totals": {"input_cost_savings_vs_full": cost, **dict(zip(keys, rates, strict=True))}}


def test_a_preset_cheaper_and_no_lossier_on_every_ruler_is_named() -> None:
    """Issue 18's last target: no preset both cheaper and at most as lossy on every ruler, in any
    family (ablations are not presets; a tie on cost is not cheaper; a missing figure never counts)."""
    fine = {"tiered": _policy(0.3, 0.01, 0.02, 0.02, 0.01), "lossy": _policy(0.5, 0.01, 0.3, 0.02, 0.01)}
    document: dict[str, Any] = {
        "policies": fine,
        "families": {
            "a": {"policies": {**fine, "tiered:aging-only": _policy(0.4, 0.0, 0.0, 0.0, 0.0)}},
            "b": {
                "policies": {"tiered": _policy(0.3, 0.01, 0.02, 0.02, 0.01), "same": _policy(0.3, 0, 0, 0, 0)}
            },
            "c": {
                "policies": {
                    "tiered": _policy(0.1, 0.02, 0.02, 0.02, 0.02),
                    "better": _policy(0.2, 0.02, 0.0, 0.02, 0.01),
                }
            },
        },
        "groups": {"g": {"policies": {"tiered": _policy(0.1, 0, 0, 0, 0), "odd": {"totals": {}}}}},
    }
    assert dominating(document) == [("c", "better")]
    assert dominance_line(document).endswith("`better` on c (target: none: not met).")
    del document["families"]["c"]
    assert dominating(document) == [] and dominance_line(document).endswith("none (target: none: met).")
    assert dominating({"policies": "x", "families": [1]}) == []  # a document of another shape
