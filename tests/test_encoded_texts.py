"""A run's recorded texts are encoded once: the calibration exports their ids, the replay adopts them.

The replay must build exactly what it builds when it encodes the texts itself, take nothing that
was encoded for other texts or another encoding, and encode none of the adopted texts again.
"""

from __future__ import annotations

import dataclasses
import tempfile
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from test_shard import _run
from test_token_pieces import _texts

from tiered_agent._logging import configure_logging
from tiered_agent._tokens import PieceEncoder, TokenCounter, _encoding
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._calibration import counted_run, full_prompt_tokens, recorded_texts
from tiered_agent.bench._metrics import PolicyRunMetrics
from tiered_agent.bench._pricing import plan_run
from tiered_agent.bench._replay import ReplaySettings, RunInfo, replay_job, replay_runs, resolve_policies
from tiered_agent.bench._spool import park_encoded
from tiered_agent.bench._stream import PlannedRun, ReplayJob, record_unit, stream_bench

_LONG = "\n".join(f"    line {i}: value_{i * 7} = compute({i}, 'x')" for i in range(30))
_TEXTS = [_LONG, "short", "x" * 300, _LONG + "\n/tail\n  indented\n", "héllo\nwörld 🙂\n" * 20]


def _reference(text: str) -> list[int]:
    return _encoding("o200k_base").encode(text, disallowed_special=())


@pytest.fixture
def encodes(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The texts every :class:`PieceEncoder` hands to the tokenizer from now on."""
    seen: list[str] = []
    original = PieceEncoder._encode

    def counting(self: PieceEncoder, text: str) -> list[int]:
        seen.append(text)
        return original(self, text)

    monkeypatch.setattr(PieceEncoder, "_encode", counting)
    yield seen


def test_adopted_ids_are_the_tokenizers_and_nothing_is_encoded_again(encodes: list[str]) -> None:
    encoded = TokenCounter().export(_TEXTS)
    encodes.clear()
    counter = IdCounter()
    assert counter.adopt(_TEXTS, encoded) == len(_TEXTS)
    assert [counter.ids(t).tolist() for t in _TEXTS] == [_reference(t) for t in _TEXTS]
    # a new text made of the adopted texts' lines (a truncation, an aged form) finds their pieces
    cut = "\n".join(_LONG.split("\n")[:10]) + "\n[... 20 lines cut]"
    assert counter.ids(cut).tolist() == _reference(cut)
    assert encodes == ["[... 20 lines cut]"]


@settings(max_examples=150, deadline=None)
@given(st.lists(_texts(), min_size=1, max_size=6))
def test_any_texts_round_trip(texts: list[str]) -> None:
    texts = list(dict.fromkeys(t * 12 for t in texts))  # long enough to be cut into pieces
    counter = IdCounter()
    assert counter.adopt(texts, TokenCounter().export(texts)) == len(texts)
    assert [counter.ids(t).tolist() for t in texts] == [_reference(t) for t in texts]


def test_ids_of_other_texts_or_another_encoding_are_not_taken(encodes: list[str]) -> None:
    encoded = TokenCounter().export(_TEXTS)
    changed = [*_TEXTS[:-1], _TEXTS[-1].replace("w", "W")]
    assert IdCounter().adopt(changed, encoded) == 0
    assert IdCounter().adopt(_TEXTS[:-1], encoded) == 0
    assert IdCounter("cl100k_base").adopt(_TEXTS, encoded) == 0
    torn = dataclasses.replace(encoded, ids=encoded.ids[:-4])
    assert IdCounter().adopt(_TEXTS, torn) == 0
    encodes.clear()
    counter = IdCounter()
    counter.adopt(changed, encoded)
    assert counter.ids(changed[-1]).tolist() == _reference(changed[-1])
    assert encodes  # encoded, not taken from the other text's ids


def _steps(metrics: PolicyRunMetrics) -> list[object]:
    return [s._replace(build_seconds=0.0) for s in metrics.steps]


def test_a_replay_with_adopted_ids_is_the_replay_without(encodes: list[str]) -> None:
    run = _run("adopt", 30, usage_ratio=1.0)
    policies = resolve_policies(["full", "tiered", "kb-labs-adr", "masking"])
    plan = plan_run(run.model, "auto", None, {})
    counts, encoded = counted_run(run, TokenCounter())
    assert counts == full_prompt_tokens(run, TokenCounter())
    encodes.clear()
    own = replay_job(run, policies, ReplaySettings(), plan)
    fresh = len(encodes)
    encodes.clear()
    adopted = replay_job(run, policies, ReplaySettings(), plan, encoded)
    assert {n: _steps(m) for n, m in adopted.policies.items()} == {
        n: _steps(m) for n, m in own.policies.items()
    }
    recorded = set(recorded_texts(run))
    assert not recorded & set(encodes)  # no recorded text is encoded again
    assert len(encodes) < fresh


def test_replay_runs_hands_each_run_its_calibrations_ids(encodes: list[str]) -> None:
    runs = [_run(f"r{i}", 12, usage_ratio=1.3) for i in range(3)]
    policies = resolve_policies(["full"])
    result = replay_runs(runs, policies)
    assert [r.run_id for r in result.replays] == ["r0", "r1", "r2"]
    # every run holds these: encoded once per run (by its calibration), not again by its replay
    assert encodes.count("You are a coding agent.") == 3
    assert encodes.count("def f_1_0(): return 100\n") == 3


# ----------------------------------------------------------------------------- the bench command
TRACE = Path(__file__).resolve().parents[1] / "traces" / "mini-swe-agent" / "psf__requests-2317.jsonl"


def test_the_streamed_bench_encodes_each_text_once_and_removes_what_it_parked(
    encodes: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    with stream_bench([TRACE], resolve_policies(["full"]), workers=1, detail=False) as streamed:
        document = streamed.aggregate.document()
    assert document["calibration"]["gemini"]["measured"]  # the premise: the run was counted
    assert encodes and max(Counter(encodes).values()) == 1  # the replay adopted the calibration's ids
    assert not list(tmp_path.iterdir())  # the parked ids are gone with the bench


def test_parked_ids_that_cannot_be_read_are_encoded_again(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    configure_logging(level="warning")
    run = _run("parked", 8, usage_ratio=1.0)
    plan = plan_run(run.model, "auto", None, {})
    info = RunInfo.of(run, plan)
    job = ReplayJob(resolve_policies(["full", "masking"]), ReplaySettings(), {}, detail=True)
    parked = park_encoded(str(tmp_path), counted_run(run, TokenCounter())[1])
    good = record_unit(None, job, run, PlannedRun(info, plan, parked))
    plain = record_unit(None, job, run, PlannedRun(info, plan))
    Path(parked.path).write_bytes(b"x" * parked.length)  # not what was parked
    torn = record_unit(None, job, run, PlannedRun(info, plan, parked))
    Path(parked.path).unlink()
    gone = record_unit(None, job, run, PlannedRun(info, plan, parked))
    assert good.policies == plain.policies == torn.policies == gone.policies
    assert capsys.readouterr().err.count("bench.parked_ids_unreadable") == 2
