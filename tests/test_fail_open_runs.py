"""A run whose replay raises never ends the bench: it is left out, listed under ``inputs.failed``
with its error, warned about (an error under ``--strict``), and merged like any other run; and
usage a damaged log got wrong never makes the replay send an impossible prompt."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import structlog
from bench_cli import invoke, load_json
from click.testing import Result

from tiered_agent._errors import ConfigurationError
from tiered_agent._logging import _printable
from tiered_agent._messages import Usage
from tiered_agent.bench import _stream
from tiered_agent.bench._calibration import MAX_PREFIX_TOKENS, MAX_REQUEST_TOKENS, _prefix, fit
from tiered_agent.bench._importers import load_runs

ROOT = Path(__file__).resolve().parents[1]
TRACES = [
    ROOT / "traces" / "tau-bench" / "task2_trial1.jsonl",
    ROOT / "traces" / "tau-bench" / "task35_trial3.jsonl",
    ROOT / "traces" / "mini-swe-agent" / "psf__requests-2317.jsonl",
]
BROKEN = "tau-bench/task35_trial3"


@pytest.fixture
def one_run_breaks(monkeypatch: pytest.MonkeyPatch) -> None:
    """The replay of one run raises (the serial backend runs it in this process)."""
    replay_job = _stream.replay_job

    def breaking(run: Any, *args: Any) -> Any:
        if run.run_id == BROKEN:
            raise OverflowError("unsigned int is greater than maximum")
        return replay_job(run, *args)

    monkeypatch.setattr(_stream, "replay_job", breaking)


def _bench(out: Path, *extra: str, code: int = 0) -> Result:
    result = invoke("bench", *TRACES, "--policies", "full,tiered", "--workers", "1", "--out", out, *extra)
    assert result.exit_code == code, result.output
    return result


@pytest.mark.usefixtures("one_run_breaks")
def test_a_failing_run_is_left_out_listed_and_warned_about(tmp_path: Path) -> None:
    result = _bench(tmp_path / "b")
    assert "Warning: the replay of 1 run(s) failed" in result.output and BROKEN in result.output
    document = load_json(tmp_path / "b" / "bench.json")
    [failed] = document["inputs"]["failed"]
    assert failed["run_id"] == BROKEN
    assert failed["reason"].startswith("OverflowError: unsigned int is greater than maximum (at ")
    assert document["inputs"]["run_count"] == len(TRACES) - 1
    assert BROKEN not in {r["run_id"] for r in document["inputs"]["runs"]}
    assert "**Failed runs**" in (tmp_path / "b" / "report.md").read_text()


@pytest.mark.usefixtures("one_run_breaks")
def test_strict_fails_on_a_failing_run(tmp_path: Path) -> None:
    result = _bench(tmp_path / "b", "--strict", code=1)
    assert "Error: the replay of 1 run(s) failed" in result.output


@pytest.mark.usefixtures("one_run_breaks")
def test_failed_runs_merge_like_the_unsharded_bench(tmp_path: Path) -> None:
    _bench(tmp_path / "whole")
    whole = load_json(tmp_path / "whole" / "bench.json")
    shards = []
    for k in (1, 2):
        _bench(tmp_path / f"s{k}", "--shard", f"{k}/2")
        shards.append(tmp_path / f"s{k}" / "bench.json")
    assert sum(len(load_json(s)["inputs"]["failed"]) for s in shards) == 1
    result = invoke("bench", "merge", *shards, "--out", tmp_path / "m")
    assert result.exit_code == 0 and "the replay of 1 run(s) failed" in result.output, result.output
    merged = load_json(tmp_path / "m" / "bench.json")
    merged.pop("timing"), whole.pop("timing")
    assert merged == whole


def test_the_runtimes_own_errors_still_end_the_bench(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A named error (a summary model that fails, a configuration) stops the bench in one sentence,
    with nothing written: it is not one run's bug to leave out."""

    def failing(run: Any, *args: Any) -> Any:
        raise ConfigurationError("the summary model is not reachable")

    monkeypatch.setattr(_stream, "replay_job", failing)
    result = _bench(tmp_path / "b", code=1)
    assert "Error: the summary model is not reachable" in result.output
    assert not (tmp_path / "b" / "bench.json").exists()


def test_no_failed_runs_is_an_empty_list(tmp_path: Path) -> None:
    _bench(tmp_path / "b")
    assert load_json(tmp_path / "b" / "bench.json")["inputs"]["failed"] == []


# ----------------------------------------------------------------------------- damaged usage
def test_a_prompt_no_model_holds_is_not_measured() -> None:
    """A recorded prompt over MAX_REQUEST_TOKENS (here 1.5 billion tokens, as a damaged log said) is
    not a point of the calibration; the run's other steps still are."""
    [run] = load_runs([TRACES[2]]).runs
    assert sum(u is not None and u.prompt_tokens > 0 for u in run.usage) > 2  # the premise
    damaged = list(run.usage)
    first = next(i for i, u in enumerate(damaged) if u is not None and u.prompt_tokens > 0)
    damaged[first] = Usage(prompt_tokens=1_500_001_018, cached_tokens=1_500_000_000, requests=1)
    counted = {run.run_id: [1000 * (i + 1) for i in range(len(run.usage))]}
    clean = fit([run], tokens=counted).providers
    broken = fit([_with_usage(run, damaged)], tokens=counted).providers
    [provider] = clean
    assert broken[provider].steps == clean[provider].steps - 1
    assert broken[provider].recorded_prompt_tokens < MAX_REQUEST_TOKENS


def _with_usage(run: Any, usage: list[Usage | None]) -> Any:
    return dataclasses.replace(run, usage=tuple(usage))


def test_the_prefix_estimate_is_capped() -> None:
    assert _prefix([(100, MAX_REQUEST_TOKENS)], 0.5) == MAX_PREFIX_TOKENS
    assert _prefix([(100, 1100)], 1.0) == 1000  # a plausible estimate as it was


# ----------------------------------------------------------------------------- the console
def test_console_lines_escape_control_characters() -> None:
    event: structlog.typing.EventDict = {"event": "bench.run_failed", "run_id": "a\x1b[31mb", "n": 3}
    assert _printable(None, "error", event) == {"event": "bench.run_failed", "run_id": "a\\x1b[31mb", "n": 3}
    assert _printable(None, "error", {"text": "tab\tand\nnewline"}) == {"text": "tab\tand\nnewline"}
    assert _printable(None, "error", {"path": "evil\u202etxt.sh"}) == {"path": "evil\\u202etxt.sh"}
