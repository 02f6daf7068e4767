"""``bench --shard K/N``: the shards partition the runs, the same way everywhere, and a run's numbers do
not depend on the shard it landed in."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiered_agent._errors import ConfigurationError
from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent.bench._fleet import Fleet
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
from tiered_agent.bench._report import build_document
from tiered_agent.bench._shard import Shard

ROOT = Path(__file__).resolve().parents[1]
READ = "read_file"
SCHEMA = {"type": "function", "function": {"name": READ, "parameters": {"type": "object"}}}


def _run(run_id: str, steps: int, *, usage_ratio: float) -> RecordedRun:
    """A gpt-4o run whose recorded prompt tokens are ``usage_ratio`` x a rough local count."""
    messages = [Message("system", "You are a coding agent."), Message("user", f"Task {run_id}")]
    usage = []
    for k in range(1, steps + 1):
        call = ToolCall(f"c{k}", READ, f'{{"path": "m{k}.py"}}')
        messages.append(Message("assistant", f"Reading m{k}.py", (call,), iteration=k))
        body = "\n".join(f"def f_{k}_{i}(): return {k * 100 + i}" for i in range(40))
        messages.append(Message("tool", body, tool_call_id=f"c{k}", name=READ, iteration=k))
        usage.append(Usage(prompt_tokens=int(usage_ratio * 500 * k), completion_tokens=10, requests=1))
    return RecordedRun(
        run_id=run_id,
        source=f"memory:{run_id}",
        format="tiered-agent",
        messages=tuple(messages),
        tools=(SCHEMA,),
        read_only_tools=frozenset({READ}),
        usage=tuple(usage),
        model="gpt-4o",
    )


# ----------------------------------------------------------------------------- choosing
@pytest.mark.parametrize("count", [1, 2, 3, 7])
def test_the_shards_partition_the_runs(count: int) -> None:
    ids = [f"mini-swe-agent/django__django-{n}" for n in range(1000)]
    shards = [Shard(k, count) for k in range(1, count + 1)]
    owners = {i: [str(s) for s in shards if s.holds(i)] for i in ids}
    assert all(len(o) == 1 for o in owners.values())  # every run in exactly one shard
    sizes = [sum(1 for o in owners.values() if o == [str(s)]) for s in shards]
    assert sum(sizes) == 1000
    assert min(sizes) >= 1000 / count * 0.8  # a hash spreads them evenly


def test_a_shard_is_chosen_by_run_id_the_same_on_every_machine_and_in_any_order() -> None:
    runs = load_runs([ROOT / "traces"]).runs
    shard = Shard(2, 3)
    chosen = [r.run_id for r in shard.select(runs)]
    assert sorted(chosen) == sorted(r.run_id for r in shard.select(list(reversed(runs))))
    # sha256 of the id, fixed: a machine with another hash seed or file order picks the same
    owners = {
        i: [k for k in (1, 2, 3, 4) if Shard(k, 4).holds(i)]
        for i in ("codex/rollout-1", "tau-bench/airline-0")
    }
    assert owners == {"codex/rollout-1": [4], "tau-bench/airline-0": [3]}


def test_copies_of_a_run_land_in_one_shard_and_are_numbered_as_unsharded() -> None:
    runs = [_run(f"r{i}", 2, usage_ratio=1.0) for i in range(6)]
    everything = [*runs, runs[0]]  # the same file given twice
    owner = next(Shard(k, 2) for k in (1, 2) if Shard(k, 2).holds("r0"))
    selected = owner.select(everything)
    assert sum(1 for r in selected if r.run_id == "r0") == 2
    ids = [r.run_id for r in replay_runs(selected, resolve_policies(["full"])).runs]
    assert "r0" in ids and "r0#2" in ids


@pytest.mark.parametrize("text", ["", "3", "1/0", "0/4", "5/4", "a/b", "1/2/3", "-1/2", "1 / "])
def test_a_bad_shard_is_one_sentence(text: str) -> None:
    with pytest.raises(ConfigurationError, match=r"shard|K/N"):
        Shard.parse(text)


def test_shard_text_is_parsed() -> None:
    assert Shard.parse(" 2/8 ") == Shard(2, 8)
    assert str(Shard.parse("1/1")) == "1/1"


# ----------------------------------------------------------------------------- numbers
def test_a_run_has_the_same_numbers_in_its_shard_as_unsharded() -> None:
    # Two groups of runs whose recorded usage calibrates differently: a shard measuring the
    # calibration on its own runs alone would price them differently.
    runs = [_run(f"low{i}", 3 + i % 3, usage_ratio=1.0) for i in range(5)]
    runs += [_run(f"high{i}", 3 + i % 2, usage_ratio=2.0) for i in range(5)]
    policies = resolve_policies(["tiered"])
    settings = ReplaySettings()
    whole = build_document(replay_runs(runs, policies, settings), ["m"])
    by_id = {r["run_id"]: r for r in whole["runs"]}
    inputs = {r["run_id"]: r for r in whole["inputs"]["runs"]}
    seen: list[str] = []
    own_calibration_differs = False
    for k in (1, 2, 3):
        selection = Fleet(Shard(k, 3)).select(runs, settings.tokenizer)
        assert selection.note is not None and selection.note.startswith(f"shard {k}/3: ")
        part = build_document(
            replay_runs(selection.runs, policies, settings, calibration=selection.calibration), ["m"]
        )
        assert part["calibration"] == whole["calibration"]
        for entry in part["runs"]:
            assert entry == by_id[entry["run_id"]]
        for entry in part["inputs"]["runs"]:
            assert entry == inputs[entry["run_id"]]
        alone = build_document(replay_runs(selection.runs, policies, settings), ["m"])
        own_calibration_differs |= alone["calibration"] != whole["calibration"]
        seen += [r["run_id"] for r in part["runs"]]
    assert sorted(seen) == sorted(r.run_id for r in runs)
    assert own_calibration_differs  # the premise: calibrating per shard would change the numbers


def test_without_a_shard_every_run_is_selected_and_calibrated_by_the_replay() -> None:
    runs = [_run("a", 2, usage_ratio=1.0), _run("b", 2, usage_ratio=1.0)]
    selection = Fleet().select(runs, "o200k_base")
    assert (selection.runs, selection.calibration, selection.note) == (tuple(runs), None, None)


# ----------------------------------------------------------------------------- the command
def test_bench_shards_on_the_command_line_cover_the_unsharded_runs(tmp_path: Path) -> None:
    from click.testing import CliRunner

    from tiered_agent.cli import cli

    traces = sorted((ROOT / "traces").rglob("*.jsonl"))[:5]
    runner = CliRunner()
    documents = []
    for shard in (None, "1/2", "2/2"):
        out = tmp_path / (shard or "all").replace("/", "-")
        args = ["bench", *map(str, traces), "--policies", "full", "--out", str(out), "--workers", "1"]
        result = runner.invoke(cli, [*args, *(["--shard", shard] if shard else [])])
        assert result.exit_code == 0, result.output
        document = json.loads((out / "bench.json").read_text())
        lines = (out / document["runs_file"]).read_text().splitlines()  # the per-run detail, beside it
        documents.append(document | {"runs": [json.loads(line) for line in lines]})
    whole, *parts = documents
    merged = sorted((r for d in parts for r in d["runs"]), key=lambda r: r["run_id"])
    assert merged == whole["runs"]
    assert all(d["calibration"] == whole["calibration"] for d in parts)


def test_bench_refuses_a_bad_shard_in_one_sentence() -> None:
    from click.testing import CliRunner

    from tiered_agent.cli import cli

    result = CliRunner().invoke(cli, ["bench", "--shard", "3/2"])
    assert result.exit_code == 2
    assert "shard 3/2 does not exist" in result.output and "Traceback" not in result.output


def test_an_empty_shard_writes_an_empty_document(tmp_path: Path) -> None:
    """A CI matrix wider than the runs: the shards without runs succeed with nothing replayed."""
    from click.testing import CliRunner

    from tiered_agent.cli import cli

    traces = sorted((ROOT / "traces").rglob("*.jsonl"))[:2]
    assert not Shard(1, 100).select(load_runs(traces).runs)
    args = ["bench", *map(str, traces), "--policies", "full", "--out", str(tmp_path), "--shard", "1/100"]
    result = CliRunner().invoke(cli, args)
    assert result.exit_code == 0, result.output
    assert "shard 1/100: 0 of 2 runs (0 model calls)" in result.output
    assert json.loads((tmp_path / "bench.json").read_text())["inputs"]["run_count"] == 0
