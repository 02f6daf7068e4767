"""Runs that switched models: each step is priced, and cached, as the model that answered it.

Claude Code runs a slash command or a skill with ``model: haiku`` on Haiku in the middle of an
Opus session, and ``/model`` switches for the rest of it; Codex records the model in each
``turn_context``. The provider bills each call at its model's prices, and each model has its own
prompt cache.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import claude_log
import orjson
import pytest
from bench_cli import invoke

from tiered_agent._messages import Usage
from tiered_agent._providers import model_prices
from tiered_agent.bench._import_common import switched_models
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._pricing import RunCosting

OPUS, HAIKU = "claude-opus-4-5-20251101", "claude-haiku-4-5-20251001"


_MINUTE = "2026-01-22T21:19"


def _reply(uuid: str, parent: str, msg: str, model: str, second: int) -> dict[str, Any]:
    return claude_log.reply(uuid, parent, msg, model, second, minute=_MINUTE)


def _prompt(uuid: str, parent: str | None, text: str, second: int) -> dict[str, Any]:
    return claude_log.prompt(uuid, parent, text, second, minute=_MINUTE)


def _session() -> list[dict[str, Any]]:
    return [
        _prompt("u1", None, "Write the plan.", 0),
        _reply("a1", "u1", "m1", OPUS, 1),
        _prompt("u2", "a1", "/publish-session", 2),
        _reply("a2", "u2", "m2", HAIKU, 3),
        _reply("a3", "a2", "m2", HAIKU, 3),  # a second block of the same response
        _prompt("u3", "a3", "and now?", 4),
        _reply("a4", "u3", "m3", OPUS, 5),
    ]


def test_switched_models_fills_unnamed_steps_and_is_empty_for_one_model() -> None:
    assert switched_models(["a", None, "a"]) == ()
    assert switched_models([None, None]) == ()
    assert switched_models([None, "a", None, "b", None]) == ("a", "a", "a", "b", "b")


def test_claude_code_records_the_model_of_each_step(tmp_path: Path) -> None:
    [run] = load_runs([claude_log.write(tmp_path / "s.jsonl", _session())], strict=True).runs
    assert run.model == OPUS and run.steps == 3
    assert run.step_models == (OPUS, HAIKU, OPUS)
    assert [run.model_at(s) for s in (1, 2, 3, 4)] == [OPUS, HAIKU, OPUS, None]
    one = [r for r in _session() if r["type"] == "user" or r["message"]["model"] == OPUS]
    [single] = load_runs([claude_log.write(tmp_path / "one.jsonl", one)], strict=True).runs
    assert single.step_models == () and single.model_at(1) is None


def test_codex_records_the_model_of_each_turn(tmp_path: Path) -> None:
    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": "2025-10-05T03:32:00.000Z", "type": kind, "payload": payload}

    def turn(model: str, text: str, answer: str) -> list[dict[str, Any]]:
        return [
            line("turn_context", {"model": model}),
            line("response_item", {"type": "message", "role": "user",
                                   "content": [{"type": "input_text", "text": text}]}),
            line("response_item", {"type": "message", "role": "assistant",
                                   "content": [{"type": "output_text", "text": answer}]}),
        ]  # fmt: skip

    records = [line("session_meta", {"id": "s", "cli_version": "0.80.0"}),
               *turn("gpt-5-codex", "Plan.", "A plan."), *turn("gpt-5-mini", "Check.", "Checked."),
               *turn("gpt-5-codex", "Go.", "Done.")]  # fmt: skip
    [run] = load_runs([claude_log.write(tmp_path / "rollout.jsonl", records)], strict=True).runs
    assert run.model == "gpt-5-codex"
    assert run.step_models == ("gpt-5-codex", "gpt-5-mini", "gpt-5-codex")


def test_each_step_is_billed_at_its_own_model_prices() -> None:
    opus, haiku = model_prices(OPUS), model_prices(HAIKU)
    assert opus is not None and haiku is not None and haiku.input < opus.input
    usage = (Usage(2010, 5, 0, 1, None, 2000),) * 3
    costing = RunCosting.of(OPUS, scale=1.0, recorded_model=OPUS, usage=usage, calibration={},
                            step_models=(OPUS, HAIKU, OPUS))  # fmt: skip
    assert costing.step_usd(2, 2010, 0, 2000, 5) == pytest.approx(10 * 1e-6 + 2000 * 1.25e-6 + 5 * 5e-6)
    assert costing.step_usd(1, 2010, 0, 2000, 5) == pytest.approx(10 * 5e-6 + 2000 * 6.25e-6 + 5 * 2.5e-5)
    assert costing.input_rates(2, 2010) == pytest.approx((1e-7, 1.25e-6, 1e-6))
    assert costing.output_usd(2, 2010, 5) == pytest.approx(5 * 5e-6)
    # what the provider billed: the recorded call at the prices of the model that answered it
    assert costing.recorded_usd(usage[1], 0, 2) == pytest.approx(10 * 1e-6 + 2000 * 1.25e-6 + 5 * 5e-6)
    assert costing.recorded_usd(usage[0], 0, 1) == pytest.approx(10 * 5e-6 + 2000 * 6.25e-6 + 5 * 2.5e-5)
    # --price-model prices every replayed step as one model; the recorded bill stays per model
    forced = RunCosting.of("claude-sonnet-4-5", scale=1.0, recorded_model=OPUS, usage=usage, calibration={},
                           step_models=(OPUS, HAIKU, OPUS), priced_as_recorded=False)  # fmt: skip
    assert forced.step_usd(2, 2010, 0, 2000, 5) == forced.step_usd(1, 2010, 0, 2000, 5)
    assert forced.recorded_usd(usage[1], 0, 2) == costing.recorded_usd(usage[1], 0, 2)


def test_the_bench_bills_a_switched_session_per_model(tmp_path: Path) -> None:
    """End to end: the recorded bill of the session is the sum of each call at its model's list
    prices (the Haiku call five times cheaper than at Opus's)."""
    path = claude_log.write(tmp_path / "s.jsonl", _session())
    result = invoke("bench", path, "--policies", "tiered", "--workers", "1", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    doc = orjson.loads((tmp_path / "out" / "bench.json").read_bytes())
    per_call = [10 * 5e-6 + 2000 * 6.25e-6 + 5 * 2.5e-5, 10 * 1e-6 + 2000 * 1.25e-6 + 5 * 5e-6]
    assert doc["recorded"]["cost_usd"] == pytest.approx(per_call[0] * 2 + per_call[1], abs=1e-6)


def test_the_models_of_each_step_survive_the_trace_round_trip(tmp_path: Path) -> None:
    from tiered_agent.bench._importers import write_run_trace

    [run] = load_runs([claude_log.write(tmp_path / "s.jsonl", _session())], strict=True).runs
    write_run_trace(run, tmp_path / "t.jsonl")
    [back] = load_runs([tmp_path / "t.jsonl"], strict=True).runs
    assert back.step_models == (OPUS, HAIKU, OPUS)
    # a hand-edited recording with a model that is not a name, or too few, is ignored, not half read
    plain = dataclasses.replace(run, step_models=())
    assert plain.with_recording({"step_models": [OPUS, HAIKU, OPUS]}).step_models == (OPUS, HAIKU, OPUS)
    assert plain.with_recording({"step_models": [OPUS, 3, OPUS]}).step_models == ()
    assert plain.with_recording({"step_models": [OPUS, ""]}).step_models == ()
