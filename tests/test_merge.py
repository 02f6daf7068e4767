"""``tiered-agent bench merge``: the shards of a bench combined are exactly the unsharded bench's
document, report and charts; every mistake in the inputs is one sentence (exit code 2)."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from bench_cli import invoke, load_json

from tiered_agent.bench._document import strip_timing
from tiered_agent.bench._merge import merge_shards
from tiered_agent.context.pipeline._draft import BuildContext, Draft
from tiered_agent.context.steps._truncate import TruncateRuntime

ROOT = Path(__file__).resolve().parents[1]
# Shards of 3: clockout and task11 in 1/3; task42, daemon, ctf and scikit in 2/3; the rest in 3/3 (the
# measured mini-swe-agent runs in 2/3 and 3/3 only: shard 1/3 prices with a calibration it did not see).
TRACES = [
    ROOT / "traces" / "mini-swe-agent" / "psf__requests-2317.jsonl",
    ROOT / "traces" / "mini-swe-agent" / "django__django-12708.jsonl",
    ROOT / "traces" / "mini-swe-agent" / "scikit-learn__scikit-learn-14141.jsonl",
    ROOT / "traces" / "tau-bench" / "task35_trial3.jsonl",
    ROOT / "traces" / "tau-bench" / "task42_trial0.jsonl",
    ROOT / "traces" / "tau-bench" / "task11_trial0.jsonl",
    ROOT / "traces" / "openhands" / "traj_safety-daemon.jsonl",
    ROOT / "traces" / "openhands" / "traj_safety-clockout.jsonl",
    ROOT / "traces" / "swe-agent" / "ctf_rev_rock.jsonl",
]
POLICIES = "full,tiered,kb-labs-adr"


def _bench(out: Path, *extra: str) -> Path:
    """``bench TRACES`` into ``out`` (its bench.json)."""
    result = invoke("bench", *TRACES, "--policies", POLICIES, "--out", out, "--workers", "1", *extra)
    assert result.exit_code == 0, result.output
    return out / "bench.json"


@pytest.fixture(scope="module")
def benched(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The unsharded bench and its three shards (``whole``, ``1``, ``2``, ``3``)."""
    root = tmp_path_factory.mktemp("benched")
    found = {"whole": _bench(root / "whole")}
    for k in (1, 2, 3):
        found[str(k)] = _bench(root / f"shard{k}", "--shard", f"{k}/3")
    return found


def test_merged_shards_are_the_unsharded_bench(benched: dict[str, Path], tmp_path: Path) -> None:
    shards = [benched[k] for k in ("3", "1", "2")]  # any order
    runs = [len(load_json(s)["inputs"]["runs"]) for s in shards]
    assert all(runs) and sum(runs) == len(TRACES)  # the premise: every shard replayed some runs
    result = invoke("bench", "merge", *shards, "--out", tmp_path / "merged")
    assert result.exit_code == 0, result.output
    merged, whole = tmp_path / "merged" / "bench.json", benched["whole"]
    assert load_json(merged)["runs_file"] == "bench.runs.jsonl"
    assert strip_timing(load_json(merged)) == strip_timing(load_json(whole))
    assert (merged.parent / "bench.runs.jsonl").read_bytes() == (
        whole.parent / "bench.runs.jsonl"
    ).read_bytes()
    report, expected = merged.parent / "report.md", whole.parent / "report.md"
    assert _tables_without_timing(report) == _tables_without_timing(expected)
    assert (merged.parent / "bench.png").exists() and (merged.parent / "frontier.png").exists()
    assert "shard" not in load_json(merged)  # a merged document is not a shard


def test_merged_shards_sum_the_cost_anatomy(benched: dict[str, Path], tmp_path: Path) -> None:
    """``full``'s cost anatomy (all runs, per family, per run) is summed across shards, not taken
    from one of them."""
    result = invoke("bench", "merge", benched["2"], benched["1"], benched["3"], "--out", tmp_path / "m")
    assert result.exit_code == 0, result.output
    merged, whole = load_json(tmp_path / "m" / "bench.json"), load_json(benched["whole"])
    anatomy = whole["anatomy"]
    assert anatomy is not None and anatomy["reach_input_cost"] is not None
    assert merged["anatomy"] == anatomy
    assert anatomy != load_json(benched["1"])["anatomy"]
    tokens = sum(sum(kinds.values()) for kinds in anatomy["tokens"].values())
    assert tokens == whole["policies"]["full"]["totals"]["prompt_tokens"]
    for family, entry in whole["families"].items():
        assert merged["families"][family]["anatomy"] == entry["anatomy"] is not None


SESSIONS = [
    ROOT / "tests/fixtures/home/.claude/projects/-home-user-demo/5f0c1d2e-0000-4000-8000-000000000001.jsonl",
    ROOT / "tests/fixtures/home/.claude/projects/-home-user-other/7a7a7a7a-0000-4000-8000-000000000002.jsonl",
    *sorted((ROOT / "tests/fixtures/home/.codex/sessions").rglob("rollout-*.jsonl")),
]


def test_merged_shards_sum_the_real_sessions_group(tmp_path: Path) -> None:
    """The group of session-log runs (``_groups.py``) is summed across shards like a family: the merged
    document equals the unsharded one, and neither shard alone holds the whole group."""
    inputs = [*SESSIONS, TRACES[0], TRACES[3]]

    def bench(out: Path, *extra: str) -> Path:
        result = invoke("bench", *inputs, "--policies", POLICIES, "--out", out, "--workers", "1", *extra)
        assert result.exit_code == 0, result.output
        return out / "bench.json"

    whole = load_json(bench(tmp_path / "whole"))
    shards = [bench(tmp_path / f"s{k}", "--shard", f"{k}/2", "--run-detail", "none") for k in (1, 2)]
    result = invoke("bench", "merge", *shards, "--out", tmp_path / "m", "--run-detail", "none")
    assert result.exit_code == 0, result.output
    merged = load_json(tmp_path / "m" / "bench.json")
    group = whole["groups"]["real-sessions"]
    sessions = sum(whole["families"][f]["runs"] for f in ("claude-code", "codex"))
    assert group["runs"] == sessions >= 4 and whole["inputs"]["run_count"] == sessions + 2
    assert merged["groups"] == whole["groups"] and merged["targets"] == whole["targets"]
    assert all(0 < load_json(s)["groups"]["real-sessions"]["runs"] < sessions for s in shards)


def _tables_without_timing(path: Path) -> list[str]:
    """report.md without the one column that holds timings (build ms)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        cells = line.split("|")
        out.append("|".join(c for i, c in enumerate(cells) if i != 12) if len(cells) > 14 else line)
    return out


def test_a_shard_document_carries_what_merge_needs(benched: dict[str, Path]) -> None:
    document = load_json(benched["2"])
    assert document["shard"]["index"] == 2 and document["shard"]["count"] == 3
    assert document["shard"]["state"]["version"] == 3  # 3: the groups' sums too (2: the cost anatomy)
    assert document["shard"]["state"]["groups"] == {}  # no session among TRACES
    assert all("anatomy" in sums for sums in document["shard"]["state"]["families"].values())
    whole = load_json(benched["whole"])
    assert "shard" not in whole
    assert document["calibration"] == {
        p: c for p, c in whole["calibration"].items() if p in document["calibration"]
    }


def test_inline_shards_merge_into_an_inline_document(benched: dict[str, Path], tmp_path: Path) -> None:
    shards = [_bench(tmp_path / f"s{k}", "--shard", f"{k}/2", "--run-detail", "inline") for k in (1, 2)]
    result = invoke("bench", "merge", *shards, "--out", tmp_path / "m", "--run-detail", "inline")
    assert result.exit_code == 0, result.output
    merged = load_json(tmp_path / "m" / "bench.json")
    whole = load_json(benched["whole"])
    detail = [
        orjson.loads(line)
        for line in (benched["whole"].parent / "bench.runs.jsonl").read_bytes().splitlines()
    ]
    assert merged.pop("runs") == detail
    assert strip_timing(merged) == {k: v for k, v in strip_timing(whole).items() if k != "runs_file"}


def test_the_python_merge_takes_the_shards_in_any_order(benched: dict[str, Path]) -> None:
    one = merge_shards([benched["1"], benched["2"], benched["3"]], detail=False)
    two = merge_shards([benched["3"], benched["2"], benched["1"]], detail=False)
    with one, two:
        assert strip_timing(one.aggregate.document()) == strip_timing(two.aggregate.document())
        assert one.detail is None


def test_step_errors_merge_like_the_unsharded_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def boom(self: TruncateRuntime, draft: Draft, context: BuildContext) -> Draft:
        raise RuntimeError("truncation bug")

    monkeypatch.setattr(TruncateRuntime, "apply", boom)  # every codex prompt skips its truncation (serial)
    traces = [ROOT / "traces" / "tau-bench" / name for name in ("task2_trial1.jsonl", "task35_trial3.jsonl")]

    def bench(out: Path, *extra: str) -> Path:
        result = invoke("bench", *traces, "--policies", "codex", "--out", out, "--workers", "1", *extra)
        assert result.exit_code == 0 and "context step error" in result.output, result.output
        return out / "bench.json"

    whole = bench(tmp_path / "whole")
    shards = [bench(tmp_path / f"s{k}", "--shard", f"{k}/2") for k in (1, 2)]
    result = invoke("bench", "merge", *shards, "--out", tmp_path / "m")
    assert result.exit_code == 0 and "Warning: " in result.output and "context step error" in result.output
    merged = load_json(tmp_path / "m" / "bench.json")
    totals = merged["policies"]["codex"]["totals"]
    assert (
        totals["step_errors"] == totals["steps"] > 0
        and merged["policies"]["full"]["totals"]["step_errors"] == 0
    )
    assert strip_timing(merged) == strip_timing(load_json(whole))
    detail = (tmp_path / "m" / "bench.runs.jsonl").read_bytes()
    assert detail == (whole.parent / "bench.runs.jsonl").read_bytes() and b"truncation bug" in detail


# ----------------------------------------------------------------------------- mistakes
def _refused(*args: str | Path) -> str:
    result = invoke("bench", "merge", *args)
    assert result.exit_code == 2, result.output
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ") and "Traceback" not in result.output
    return lines[0]


def test_a_missing_shard_is_named(benched: dict[str, Path], tmp_path: Path) -> None:
    assert "shard 2/3 missing: merge needs all 3" in _refused(benched["1"], benched["3"], "--out", tmp_path)
    assert "shard 1/3 is given twice" in _refused(benched["1"], benched["1"], benched["2"], benched["3"])


def test_a_document_that_is_not_a_shard_is_refused(benched: dict[str, Path], tmp_path: Path) -> None:
    assert "not a shard" in _refused(benched["whole"], "--out", tmp_path)
    text = tmp_path / "notes.json"
    text.write_text("hello", encoding="utf-8")
    assert "not JSON" in _refused(text, "--out", tmp_path)
    other = tmp_path / "other.json"
    other.write_text('{"a": 1}', encoding="utf-8")
    assert "not a bench document" in _refused(other, "--out", tmp_path)
    assert "cannot read" in _refused(tmp_path / "absent.json", "--out", tmp_path)


def test_shards_of_different_benches_are_refused(benched: dict[str, Path], tmp_path: Path) -> None:
    other = _bench(tmp_path / "other", "--shard", "2/3", "--cache-discount", "0.2")
    message = _refused(benched["1"], other, benched["3"], "--out", tmp_path / "m")
    assert "shards of different benches (their settings differ)" in message
    assert not (tmp_path / "m").exists()


def test_a_damaged_state_is_refused(benched: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "s2"
    shutil.copytree(benched["2"].parent, copy)
    document = load_json(copy / "bench.json")
    family = next(iter(document["shard"]["state"]["families"].values()))
    family["totals"]["full"]["ints"]["steps"] = "many"
    (copy / "bench.json").write_bytes(orjson.dumps(document))
    message = _refused(benched["1"], copy / "bench.json", benched["3"], "--out", tmp_path / "m")
    assert "not a shard document this bench can merge" in message and "steps is not an integer" in message


@pytest.mark.parametrize("groups", [None, [], {"real-sessions": {"runs": "4"}}])
def test_a_state_without_readable_groups_is_refused(
    benched: dict[str, Path], tmp_path: Path, groups: Any
) -> None:
    copy = tmp_path / "s2"
    shutil.copytree(benched["2"].parent, copy)
    document = load_json(copy / "bench.json")
    document["shard"]["state"]["groups"] = groups
    (copy / "bench.json").write_bytes(orjson.dumps(document))
    message = _refused(benched["1"], copy / "bench.json", benched["3"], "--out", tmp_path / "m")
    assert "not a shard document this bench can merge" in message and "groups" in message


def test_a_run_in_two_shards_is_refused(benched: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "forged"
    shutil.copytree(benched["1"].parent, copy)
    document = load_json(copy / "bench.json")
    document["shard"]["index"] = 2  # shard 1 claiming to be shard 2
    (copy / "bench.json").write_bytes(orjson.dumps(document))
    assert "is in two of the documents" in _refused(benched["1"], copy / "bench.json", benched["3"])


def test_the_per_run_detail_must_come_with_the_shard(benched: dict[str, Path], tmp_path: Path) -> None:
    copy = tmp_path / "s2"
    shutil.copytree(benched["2"].parent, copy)
    lines = (copy / "bench.runs.jsonl").read_bytes().splitlines()
    (copy / "bench.runs.jsonl").write_bytes(b"\n".join(lines[:-1]) + b"\n")
    shards = (benched["1"], copy / "bench.json", benched["3"])
    assert "lacks 1 of its runs" in _refused(*shards, "--out", tmp_path / "m")
    (copy / "bench.runs.jsonl").unlink()
    assert "missing (the per-run detail of" in _refused(*shards, "--out", tmp_path / "m")
    result = invoke("bench", "merge", *shards, "--out", tmp_path / "m", "--run-detail", "none")
    assert result.exit_code == 0, result.output  # without the detail, the rest merges
    assert "runs_file" not in load_json(tmp_path / "m" / "bench.json")


def test_shards_without_detail_ask_for_run_detail_none(tmp_path: Path) -> None:
    shards = [_bench(tmp_path / f"s{k}", "--shard", f"{k}/2", "--run-detail", "none") for k in (1, 2)]
    assert "merge with --run-detail none" in _refused(*shards, "--out", tmp_path / "m")


def test_merge_help_is_reachable() -> None:
    result = invoke("bench", "merge", "--help")
    assert result.exit_code == 0 and "SHARDS" in result.output and "bench merge" in result.output
    assert "bench merge SHARD.json" in invoke("bench", "--help").output


# ----------------------------------------------------------------------------- round 22: hostile shards
@pytest.mark.parametrize(
    ("field", "value"),
    [("format", 3), ("run_id", ["x"]), ("steps", "15"), ("family", None), (None, "not an object")],
)
def test_a_run_entry_of_the_wrong_type_is_refused(
    benched: dict[str, Path], tmp_path: Path, field: str | None, value: Any
) -> None:
    """A run whose ``format`` was a number ended the merge with ``TypeError`` sorting the formats for
    the report (``fuzz_merge``, round 22): the shard is refused in one sentence, nothing written."""
    copy = tmp_path / "s2"
    shutil.copytree(benched["2"].parent, copy)
    document = load_json(copy / "bench.json")
    runs = document["inputs"]["runs"]
    if field is None:
        runs[0] = value
    else:
        runs[0][field] = value
    (copy / "bench.json").write_bytes(orjson.dumps(document))
    message = _refused(benched["1"], copy / "bench.json", benched["3"], "--out", tmp_path / "m")
    assert "not a shard document this bench can merge (inputs.runs[0]: " in message
    assert f"{field or 'the entry itself'} is not what a bench writes" in message
    assert not (tmp_path / "m").exists()


def test_a_fifo_is_refused_not_waited_on(benched: dict[str, Path], tmp_path: Path) -> None:
    """A FIFO given as a shard blocked the merge forever; its detail file as one was "missing"."""
    fifo = tmp_path / "shard.json"
    os.mkfifo(fifo)
    assert "is a FIFO (named pipe), not a regular file: not a bench document" in _refused(
        benched["1"], fifo, benched["3"], "--out", tmp_path / "m"
    )
    copy = tmp_path / "s2"
    shutil.copytree(benched["2"].parent, copy)
    (copy / "bench.runs.jsonl").unlink()
    os.mkfifo(copy / "bench.runs.jsonl")
    message = _refused(benched["1"], copy / "bench.json", benched["3"], "--out", tmp_path / "m")
    assert "bench.runs.jsonl: a FIFO (named pipe), not the per-run detail of" in message


def test_a_runs_file_the_system_cannot_name_is_one_sentence(benched: dict[str, Path], tmp_path: Path) -> None:
    """A shard whose ``runs_file`` is 300 chars long ended the merge with ``OSError: File name too
    long`` (round 23's fuzz, seed 11); a missing one is still "missing"."""
    copy = tmp_path / "s2"
    shutil.copytree(benched["2"].parent, copy)
    document = load_json(copy / "bench.json")
    for name, expected in (("x" * 300, "cannot be read (File name too long)"), ("gone.jsonl", "missing")):
        document["runs_file"] = name
        (copy / "bench.json").write_bytes(orjson.dumps(document))
        message = _refused(benched["1"], copy / "bench.json", benched["3"], "--out", tmp_path / "m")
        assert expected in message and "x" * 81 not in message


_HOSTILE: list[Any] = [None, "x", [], {}, -1, 10**30, 1e300, 2.5, True, [1, 2], {"": None}, "../x"]


def _value_paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for key, item in value.items():
            found += _value_paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:2]):
            found += _value_paths(item, (*prefix, index))
    return found


def test_a_shard_with_one_hostile_value_merges_or_is_one_sentence(
    benched: dict[str, Path], tmp_path: Path
) -> None:
    """Seeded: 16 copies of shard 2/3, each with one value replaced by a hostile one; each merges
    (exit 0) or is refused in one sentence (exit 2), never a traceback (``fuzz_merge``, round 22,
    found case 31 this way)."""
    import random

    rng = random.Random(22)
    document = load_json(benched["2"])
    paths = _value_paths(document)[1:]
    for case in range(16):
        copy = tmp_path / f"s{case}"
        shutil.copytree(benched["2"].parent, copy)
        mutated = load_json(benched["2"])
        path = rng.choice(paths)
        parent = mutated
        for key in path[:-1]:
            parent = parent[key]
        parent[path[-1]] = rng.choice(_HOSTILE)
        (copy / "bench.json").write_text(json.dumps(mutated))  # 10**30 too (orjson refuses it)
        result = invoke(
            "bench", "merge", benched["1"], copy / "bench.json", benched["3"], "--out", copy / "m"
        )
        assert result.exception is None or isinstance(result.exception, SystemExit), (path, result.output)
        assert result.exit_code in (0, 2) and "Traceback" not in result.output, (path, result.output)
        if result.exit_code == 2:
            assert [x for x in result.output.splitlines() if x.strip()][-1].startswith("Error: "), path
