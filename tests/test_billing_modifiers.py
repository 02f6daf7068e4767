"""Billing modifiers: a Claude Code call in fast mode (``usage.speed: "fast"``) or run in the US only
(``usage.inference_geo: "us"``) is billed at its model's prices times the provider's multiplier,
and fast mode has its own prompt cache (the speed is part of the cache key).
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import claude_log
import orjson
import pytest
import structlog
from bench_cli import invoke

from tiered_agent._messages import Usage
from tiered_agent._providers import billing_multiplier, model_prices
from tiered_agent.bench._importers import load_runs, write_run_trace
from tiered_agent.bench._pricing import RunCosting

OPUS = "claude-opus-4-6"  # litellm lists "us" (1.1); fast mode (6x) is Anthropic's published figure
OPUS_48 = "claude-opus-4-8"  # litellm lists both: "us" 1.1, "fast" 2

# One call: 10 uncached, 2,000 written (5-minute), 5 output tokens, at Opus 4.6's list prices.
_STANDARD_CALL = 10 * 5e-6 + 2000 * 6.25e-6 + 5 * 2.5e-5


_MINUTE = "2026-03-02T10:00"


def _reply(uuid: str, parent: str, msg: str, second: int, **tier: str) -> dict[str, Any]:
    return claude_log.reply(uuid, parent, msg, OPUS, second, minute=_MINUTE, service_tier="standard", **tier)


def _prompt(uuid: str, parent: str | None, text: str, second: int) -> dict[str, Any]:
    return claude_log.prompt(uuid, parent, text, second, minute=_MINUTE)


def _session() -> list[dict[str, Any]]:
    """Standard, then fast mode (``/fast``), then fast and US-only, then standard again."""
    return [
        _prompt("u1", None, "Plan the change.", 0),
        _reply("a1", "u1", "m1", 1, speed="standard", inference_geo=""),
        _prompt("u2", "a1", "Go on, quickly.", 2),
        _reply("a2", "u2", "m2", 3, speed="fast", inference_geo="global"),
        _prompt("u3", "a2", "And the tests.", 4),
        _reply("a3", "u3", "m3", 5, speed="FAST", inference_geo="us"),
        _prompt("u4", "a3", "Done?", 6),
        _reply("a4", "u4", "m4", 7),
    ]


def test_the_multipliers_come_from_litellm_else_the_providers_published_figure() -> None:
    assert billing_multiplier(OPUS_48, "fast") == 2.0
    assert billing_multiplier(OPUS_48, "us") == pytest.approx(1.1)
    assert billing_multiplier(OPUS, "us") == pytest.approx(1.1)
    assert billing_multiplier(OPUS, "fast") == 6.0  # not in litellm's map: Anthropic's pricing page
    assert billing_multiplier(f"{OPUS}-20260205", "fast") == 6.0
    assert billing_multiplier("claude-sonnet-4-5", "fast") is None  # no fast mode there
    assert billing_multiplier(OPUS, "eu") is None
    assert billing_multiplier("no-such-model", "fast") is None


def test_scaled_prices_multiply_every_price_and_leave_one_unchanged() -> None:
    prices = model_prices(OPUS_48)
    assert prices is not None
    fast = prices.scaled(2.0)
    fields = ("input", "output", "cache_read", "cache_write", "write_1h")
    assert [getattr(fast, f) for f in fields] == pytest.approx([getattr(prices, f) * 2 for f in fields])
    assert prices.scaled(1.0) is prices


def test_claude_code_records_each_steps_billing_modifiers(tmp_path: Path) -> None:
    [run] = load_runs([claude_log.write(tmp_path / "s.jsonl", _session())], strict=True).runs
    assert run.step_billing == ("", "fast", "fast+us", "")
    assert [run.billing_at(s) for s in (1, 2, 3, 4, 5)] == [(), ("fast",), ("fast", "us"), (), ()]
    # fast mode has its own cache; US-only inference shares the run's
    assert [run.cache_partition(s) for s in (1, 2, 3, 4)] == [None, f"{OPUS} fast", f"{OPUS} fast", None]
    plain = [r for r in _session() if r["type"] == "user" or r["message"]["id"] in ("m1", "m4")]
    [standard] = load_runs([claude_log.write(tmp_path / "plain.jsonl", plain)], strict=True).runs
    assert standard.step_billing == () and standard.cache_partition(1) is None


def test_each_step_is_billed_with_its_modifiers() -> None:
    usage = (Usage(2010, 5, 0, 1, None, 2000),) * 4
    costing = RunCosting.of(OPUS, scale=1.0, recorded_model=OPUS, usage=usage, calibration={},
                            step_billing=("", "fast", "fast+us", ""))  # fmt: skip
    assert costing.step_usd(1, 2010, 0, 2000, 5) == pytest.approx(_STANDARD_CALL)
    assert costing.step_usd(2, 2010, 0, 2000, 5) == pytest.approx(6 * _STANDARD_CALL)
    assert costing.step_usd(3, 2010, 0, 2000, 5) == pytest.approx(6 * 1.1 * _STANDARD_CALL)
    assert costing.recorded_usd(usage[2], 0, 3) == pytest.approx(6 * 1.1 * _STANDARD_CALL)
    assert costing.input_rates(2, 2010) == pytest.approx((6 * 5e-7, 6 * 6.25e-6, 6 * 5e-6))
    # --price-model prices every replayed call at that model's standard rates; the bill stays as billed
    forced = RunCosting.of("claude-sonnet-4-5", scale=1.0, recorded_model=OPUS, usage=usage, calibration={},
                           step_billing=("", "fast", "fast+us", ""), priced_as_recorded=False)  # fmt: skip
    assert forced.step_usd(2, 2010, 0, 2000, 5) == forced.step_usd(1, 2010, 0, 2000, 5)
    assert forced.recorded_usd(usage[1], 0, 2) == pytest.approx(6 * _STANDARD_CALL)


def test_a_modifier_no_price_list_names_is_the_standard_rate_with_one_warning() -> None:
    usage = (Usage(2010, 5, 0, 1, None, 2000),) * 3
    with structlog.testing.capture_logs() as logs:
        costing = RunCosting.of(OPUS, scale=1.0, recorded_model=OPUS, usage=usage, calibration={},
                                step_billing=("eu", "eu", "fast+eu"))  # fmt: skip
    assert costing.step_usd(1, 2010, 0, 2000, 5) == pytest.approx(_STANDARD_CALL)
    assert costing.step_usd(3, 2010, 0, 2000, 5) == pytest.approx(6 * _STANDARD_CALL)
    warned = [e for e in logs if e["event"] == "pricing.unknown_modifier"]
    # one per (model, tier) for the replayed prices and one for the recorded ones
    assert {(e["model"], e["modifier"]) for e in warned} == {(OPUS, "eu")}
    assert len(warned) == 4


def test_the_bench_bills_fast_mode_and_us_inference(tmp_path: Path) -> None:
    """End to end: the session's recorded bill is each call at its list prices times its modifiers."""
    path = claude_log.write(tmp_path / "s.jsonl", _session())
    result = invoke("bench", path, "--policies", "full", "--workers", "1", "--out", tmp_path / "out")
    assert result.exit_code == 0, result.output
    doc = orjson.loads((tmp_path / "out" / "bench.json").read_bytes())
    expected = _STANDARD_CALL * (1 + 6 + 6 * 1.1 + 1)
    assert doc["recorded"]["cost_usd"] == pytest.approx(expected, abs=1e-6)


def test_the_billing_modifiers_survive_the_trace_round_trip(tmp_path: Path) -> None:
    [run] = load_runs([claude_log.write(tmp_path / "s.jsonl", _session())], strict=True).runs
    write_run_trace(run, tmp_path / "t.jsonl")
    [back] = load_runs([tmp_path / "t.jsonl"], strict=True).runs
    assert back.step_billing == ("", "fast", "fast+us", "")
    plain = dataclasses.replace(run, step_billing=())
    assert plain.with_recording({"step_billing": ["", "fast", "", ""]}).step_billing == ("", "fast", "", "")
    assert plain.with_recording({"step_billing": ["", "", "", ""]}).step_billing == ()
    assert plain.with_recording({"step_billing": ["", 2, "", ""]}).step_billing == ()
    assert plain.with_recording({"step_billing": ["fast"]}).step_billing == ()


def test_an_odd_modifier_value_is_named_other(tmp_path: Path) -> None:
    records = _session()[:2]
    records[1]["message"]["usage"]["speed"] = "fa+st\n" * 20
    [run] = load_runs([claude_log.write(tmp_path / "s.jsonl", records)], strict=True).runs
    assert run.step_billing == ("other",)
