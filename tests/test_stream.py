"""The streamed bench (``_stream.py``): the document of the replay held in memory, whatever the order
runs finish in, the workers or where the per-run detail goes; exact sums; the detail file."""

from __future__ import annotations

import dataclasses
import math
import random
import shutil
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._errors import ConfigurationError
from tiered_agent.bench._aggregate import Aggregate, Header
from tiered_agent.bench._detail import DetailSpool, read_jsonl, write_document
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._metrics import Totals
from tiered_agent.bench._record import record_of
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
from tiered_agent.bench._report import build_document, dumps, strip_timing
from tiered_agent.bench._stream import stream_bench
from tiered_agent.bench._sums import _INTS, ExactSum, Histogram, TotalsSum
from tiered_agent.cli import cli

ROOT = Path(__file__).resolve().parents[1]
TRACES = [
    ROOT / "traces" / "mini-swe-agent" / "psf__requests-2317.jsonl",  # recorded usage: calibrated, checked
    ROOT / "traces" / "mini-swe-agent" / "django__django-12708.jsonl",
    ROOT / "traces" / "tau-bench" / "task35_trial3.jsonl",
    ROOT / "traces" / "openhands" / "traj_safety-daemon.jsonl",
    ROOT / "traces" / "swe-agent" / "ctf_rev_rock.jsonl",
]
POLICIES = ["full", "tiered", "masking", "kb-labs-adr"]


@pytest.fixture(scope="module")
def inputs(tmp_path_factory: pytest.TempPathFactory) -> list[Path]:
    """The traces, and one of them twice (a copy: the same run id, numbered ``#2``)."""
    folder = tmp_path_factory.mktemp("inputs")
    copy = folder / "copy.jsonl"
    shutil.copyfile(TRACES[0], copy)
    return [*TRACES, copy]


@pytest.fixture(scope="module")
def in_memory(inputs: list[Path]) -> dict[str, Any]:
    loaded = load_runs(inputs)
    result = replay_runs(loaded.runs, resolve_policies(POLICIES), ReplaySettings())
    return build_document(result, [str(p) for p in inputs])


def _streamed(inputs: list[Path], tmp_path: Path, **options: Any) -> dict[str, Any]:
    with stream_bench(inputs, resolve_policies(POLICIES), detail_dir=tmp_path, **options) as streamed:
        detail = list(streamed.detail.entries()) if streamed.detail is not None else None
        return streamed.aggregate.document(runs=detail)


# ----------------------------------------------------------------------------- the document
def test_the_streamed_bench_writes_the_document_of_the_replay_in_memory(
    inputs: list[Path], in_memory: dict[str, Any], tmp_path: Path
) -> None:
    streamed = _streamed(inputs, tmp_path)
    assert dumps(strip_timing(streamed)) == dumps(strip_timing(in_memory))
    ids = [r["run_id"] for r in streamed["runs"]]
    assert ids == sorted(ids) and "mini-swe-agent/psf__requests-2317#2" in ids
    assert streamed["calibration"]["gemini"]["measured"]  # the premise: a calibration was fitted
    assert not list(tmp_path.iterdir())  # the detail's temporary file is gone


def test_worker_processes_write_the_same_document(
    inputs: list[Path], in_memory: dict[str, Any], tmp_path: Path
) -> None:
    streamed = _streamed(inputs, tmp_path, workers=2)
    assert dumps(strip_timing(streamed)) == dumps(strip_timing(in_memory))


def test_the_order_runs_arrive_in_does_not_change_the_document(inputs: list[Path]) -> None:
    result = replay_runs(load_runs(inputs).runs, resolve_policies(POLICIES), ReplaySettings())
    records = [
        record_of(i, r, result.settings, result.calibration)
        for i, r in zip(result.runs, result.replays, strict=True)
    ]
    header = Header.of(result.settings, result.policies, result.calibration, paths=["x"])
    documents = set()
    for seed in range(4):
        order = random.Random(seed).sample(records, len(records))
        halves = Aggregate(header), Aggregate(header)  # as two shards, then merged
        for index, record in enumerate(order):
            halves[index % 2].add(record)
        halves[0].merge(halves[1])
        documents.add(dumps(strip_timing(halves[0].document())))
    assert len(documents) == 1


def test_a_run_added_twice_is_refused(inputs: list[Path]) -> None:
    result = replay_runs(load_runs(inputs[:1]).runs, resolve_policies(["full"]), ReplaySettings())
    record = record_of(result.runs[0], result.replays[0], result.settings, result.calibration)
    aggregate = Aggregate(Header.of(result.settings, result.policies, result.calibration))
    aggregate.add(record)
    with pytest.raises(ValueError, match="added twice"):
        aggregate.add(record)


def test_the_runs_of_no_input_are_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text("", encoding="utf-8")
    with pytest.raises(ConfigurationError, match=r"no recorded runs found in .* \(1 input skipped"):
        stream_bench([tmp_path], resolve_policies(["full"]))


# ----------------------------------------------------------------------------- exact sums
def test_totals_fields_summed_as_integers_are_integers() -> None:
    """A field added to Totals with other semantics (a rate, a maximum) must not be summed silently."""
    types = {f.name: f.type for f in dataclasses.fields(Totals)}
    assert {name: types[name] for name in _INTS} == dict.fromkeys(_INTS, "int")


_FLOATS = st.floats(min_value=-1e12, max_value=1e12, allow_nan=False, allow_infinity=False)


@settings(max_examples=200, deadline=None)
@given(st.lists(_FLOATS, max_size=60), st.randoms(use_true_random=False))
def test_an_exact_sum_is_the_correctly_rounded_sum_in_any_order(
    values: list[float], rng: random.Random
) -> None:
    forward, shuffled, split = ExactSum(), ExactSum(), ExactSum()
    for value in values:
        forward.add(value)
    for value in rng.sample(values, len(values)):
        shuffled.add(value)
    half = len(values) // 2
    other = ExactSum()
    for value in values[:half]:
        split.add(value)
    for value in values[half:]:
        other.add(value)
    split.merge(other)
    assert forward.value == shuffled.value == split.value == math.fsum(values)
    again = ExactSum.from_state(orjson.loads(orjson.dumps(forward.state())), "s")
    assert again.value == forward.value


def test_an_exact_sum_of_integers_is_an_integer_like_sum() -> None:
    total = ExactSum()
    assert total.value == 0 and isinstance(total.value, int)  # sum([]) is 0
    total.add(3)
    total.add(4)
    read = ExactSum.from_state(orjson.loads(orjson.dumps(total.state())), "s")
    assert isinstance(total.value, int) and isinstance(read.value, int) and read.value == 7
    total.add(0.5)
    assert total.value == 7.5
    assert ExactSum.from_state(orjson.loads(orjson.dumps(total.state())), "s").value == 7.5


def test_sequential_float_sums_drift_and_exact_ones_do_not() -> None:
    """Why the bench sums exactly: adding thousands of tenths in order drifts in the 6th decimal,
    so the total would depend on the order the runs finish in."""
    values = [0.1 * k for k in range(1, 20_001)]
    total = ExactSum()
    for value in reversed(values):
        total.add(value)
    assert total.value == math.fsum(values)
    assert sum(values) != sum(reversed(values))  # the premise: plain sums depend on the order


def test_totals_state_round_trips(inputs: list[Path]) -> None:
    result = replay_runs(load_runs(inputs[:2]).runs, resolve_policies(["kb-labs-adr"]), ReplaySettings())
    records = [
        record_of(i, r, result.settings, result.calibration)
        for i, r in zip(result.runs, result.replays, strict=True)
    ]
    total = TotalsSum()
    for record in records:
        policy = record.policies["kb-labs-adr"]
        total.add(policy.totals, scale=record.scale, usd_void=policy.usd_void)
    again = TotalsSum.from_state(orjson.loads(orjson.dumps(total.state())), "t")
    assert again.totals() == total.totals()
    assert total.totals().cost_usd is not None and total.totals().priced_runs == 2


def test_a_histogram_percentile_is_within_two_percent() -> None:
    rng = random.Random(7)
    values = [rng.lognormvariate(-7, 1.5) for _ in range(5000)]
    histogram = Histogram()
    for value in values:
        histogram.add_bucket(Histogram.bucket(value))
    ordered = sorted(values)
    for q in (50, 99):
        exact = ordered[max(1, math.ceil(q / 100 * len(values))) - 1]
        assert abs(histogram.percentile(q) / exact - 1) < 0.02
    assert Histogram().percentile(50) == 0.0


# ----------------------------------------------------------------------------- the detail
def test_inline_detail_is_written_as_the_document_holding_it(
    in_memory: dict[str, Any], tmp_path: Path
) -> None:
    runs = in_memory["runs"]
    without = {k: v for k, v in in_memory.items() if k != "runs"}
    with DetailSpool(tmp_path) as spool:
        for entry in reversed(runs):  # any order in, sorted out
            spool.add(entry["run_id"], orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))
        written = write_document(without, tmp_path / "bench.json", spool.lines())
        assert written.read_bytes() == dumps(in_memory)
        lines = spool.write_jsonl(tmp_path / "bench.runs.jsonl")
    assert list(read_jsonl(lines)) == runs
    empty = write_document(without, tmp_path / "empty.json", iter(()))
    assert empty.read_bytes() == dumps(without | {"runs": []})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bench.json", "bench.runs.jsonl", "empty.json"]


def test_a_detail_line_that_is_not_a_run_is_one_sentence(tmp_path: Path) -> None:
    path = tmp_path / "bench.runs.jsonl"
    path.write_bytes(b'{"run_id": "a", "steps": 1}\n\n[1, 2]\n')
    with pytest.raises(ConfigurationError, match=r"bench.runs.jsonl: line 3 is not a run's detail"):
        list(read_jsonl(path))


@pytest.fixture(scope="module")
def plain() -> dict[str, Any]:
    """The in-memory document of the traces given once (what the command below replays)."""
    result = replay_runs(load_runs(TRACES).runs, resolve_policies(POLICIES), ReplaySettings())
    return build_document(result, [str(p) for p in TRACES])


@pytest.mark.parametrize("mode", ["jsonl", "inline", "none"])
def test_the_command_puts_the_detail_where_asked(mode: str, plain: dict[str, Any], tmp_path: Path) -> None:
    json_path = tmp_path / "doc" / "result.json"
    args = ["bench", *map(str, TRACES), "--policies", ",".join(POLICIES), "--out", str(tmp_path / "out")]
    result = CliRunner().invoke(
        cli, [*args, "--json", str(json_path), "--run-detail", mode, "--workers", "1"]
    )
    assert result.exit_code == 0, result.output
    document = orjson.loads(json_path.read_bytes())
    files = sorted(p.name for p in json_path.parent.iterdir())
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    if mode == "jsonl":
        assert document.pop("runs_file") == "result.runs.jsonl"
        assert files == ["result.json", "result.runs.jsonl"]
        assert list(read_jsonl(json_path.parent / "result.runs.jsonl")) == plain["runs"]
        assert dumps(strip_timing(document | {"runs": plain["runs"]})) == dumps(strip_timing(plain))
    elif mode == "inline":
        assert files == ["result.json"]
        assert dumps(strip_timing(document)) == dumps(strip_timing(plain))  # the in-memory document
    else:
        assert files == ["result.json"] and "runs_file" not in document
        assert dumps(strip_timing(document)) == dumps(
            strip_timing({k: v for k, v in plain.items() if k != "runs"})
        )
    assert ("## Per-run highlights" in report) == (mode != "none")
    assert ("](bench.png)" in report) and (tmp_path / "out" / "bench.png").exists()
