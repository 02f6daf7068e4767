"""The bench's cache models, calibration, dollars and agent families, end to end (offline)."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner
from samples import read_messages

from tiered_agent._messages import Usage
from tiered_agent._providers import CACHE_MODELS, model_prices
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._calibration import calibrate, full_prompt_tokens
from tiered_agent.bench._importers import write_run_trace
from tiered_agent.bench._pricing import family_of, plan_run
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, policy_config, replay_runs, resolve_policies
from tiered_agent.bench._report import build_document, render_family_table, render_markdown
from tiered_agent.cli._bench import bench

SHARED = Path(__file__).resolve().parents[2] / "shared" / "trajectories"
COUNTER = IdCounter("o200k_base")


def _run(
    run_id: str,
    steps: int,
    *,
    model: str | None = "gpt-4o",
    fmt: str = "tiered-agent",
    provider_per_replayed: float | None = 2.0,
) -> RecordedRun:
    """A run whose recorded prompt tokens are ``provider_per_replayed`` x the replayed ``full`` ones."""
    run = RecordedRun(
        run_id,
        f"memory:{run_id}",
        fmt,
        read_messages(run_id, steps),
        tools=({"type": "function", "function": {"name": "read_file"}},),
        read_only_tools=frozenset({"read_file"}),
        model=model,
    )
    if provider_per_replayed is None:
        return run
    replayed = full_prompt_tokens(run, COUNTER)
    usage = tuple(Usage(round(p * provider_per_replayed), 30, 0, 1) for p in replayed)
    return dataclasses.replace(run, usage=usage)


def _document(runs: list[RecordedRun], policies: list[str], **settings: Any) -> dict[str, Any]:
    return build_document(replay_runs(runs, resolve_policies(policies), ReplaySettings(**settings)), ["m"])


# ----------------------------------------------------------------------------- calibration
def test_calibration_is_recorded_over_replayed_per_provider() -> None:
    runs = [
        _run("a", 6),
        _run("b", 9, provider_per_replayed=3.0),
        _run("g", 5, model="gemini/gemini-2.5-pro"),
    ]
    calibration = calibrate(runs, COUNTER)
    assert sorted(calibration) == ["gemini", "openai"]
    openai = calibration["openai"]
    replayed = sum(full_prompt_tokens(runs[0], COUNTER)) + sum(full_prompt_tokens(runs[1], COUNTER))
    assert (openai.runs, openai.steps, openai.replayed_prompt_tokens) == (2, 15, replayed)
    assert openai.factor == pytest.approx(
        (2 * sum(full_prompt_tokens(runs[0], COUNTER)) + 3 * sum(full_prompt_tokens(runs[1], COUNTER)))
        / replayed,
        abs=1e-3,
    )
    assert calibration["gemini"].factor == pytest.approx(2.0, abs=1e-3)
    assert calibrate([_run("none", 4, provider_per_replayed=None)], COUNTER) == {}


def test_calibration_in_the_document_is_the_inverse_of_fidelity() -> None:
    document = _document([_run("a", 6), _run("b", 8)], ["tiered"], cache_model="ideal")
    calibration, fidelity = document["calibration"]["openai"], document["fidelity"]
    assert calibration["measured"] is True
    assert calibration["replayed_prompt_tokens"] == fidelity["replayed_prompt_tokens"]
    assert calibration["recorded_prompt_tokens"] == fidelity["recorded_prompt_tokens"]
    assert calibration["factor"] == pytest.approx(1 / fidelity["ratio"], abs=1e-5)
    assert calibration["factor"] == pytest.approx(2.0, abs=1e-3)
    # the calibrated totals of `full` are the recorded prompt tokens
    full = document["policies"]["full"]["totals"]
    assert full["calibrated_input_tokens"] == pytest.approx(fidelity["recorded_prompt_tokens"], abs=2)


# ----------------------------------------------------------------------------- auto selection
@pytest.mark.parametrize(
    ("recorded", "chosen", "price", "expected"),
    [
        ("google/gemini-3-pro-preview", "auto", None, ("gemini", "recorded model", "gemini")),
        ("gpt-4o", "auto", None, ("openai", "recorded model", "openai")),
        ("claude-haiku-4-5", "auto", None, ("anthropic", "recorded model", "anthropic")),
        (None, "auto", None, ("openai", "default (no model recorded)", "openai")),
        ("llama-3", "auto", None, ("openai", "default (unknown model llama-3)", "openai")),
        (
            "google/gemini-3-pro-preview",
            "auto",
            "claude-sonnet-4-5",
            ("anthropic", "price model", "anthropic"),
        ),
        ("google/gemini-3-pro-preview", "ideal", None, ("ideal", "--cache-model", "gemini")),
        (None, "gemini", None, ("gemini", "--cache-model", "gemini")),
    ],
)
def test_auto_picks_the_cache_model_of_the_priced_model(
    recorded: str | None, chosen: str, price: str | None, expected: tuple[str, str, str]
) -> None:
    plan = plan_run(recorded, chosen, price, {})
    assert (plan.cache_model.name, plan.cache_model_source, plan.provider) == expected
    assert plan.token_scale == 1.0  # nothing measured


def test_plan_minimum_of_the_priced_claude_model_and_price_keys() -> None:
    assert plan_run("claude-haiku-4-5", "anthropic", None, {}).cache_model.min_tokens == 4096
    assert plan_run(None, "anthropic", None, {}).cache_model.min_tokens == 1024
    assert plan_run("google/gemini-3-pro-preview", "auto", None, {}).price_model == (
        "vertex_ai/gemini-3-pro-preview"
    )
    assert plan_run(None, "auto", None, {}).price_model is None
    assert plan_run(None, "auto", "gpt-5", {}).price_model == "gpt-5"


def test_runs_record_their_plan() -> None:
    runs = [_run("a", 4), _run("n", 4, model=None, provider_per_replayed=None)]
    entries = {r["run_id"]: r for r in _document(runs, ["full"])["inputs"]["runs"]}
    assert (entries["a"]["cache_model"], entries["a"]["cache_model_source"]) == ("openai", "recorded model")
    assert (entries["a"]["price_model"], entries["a"]["provider"], entries["a"]["family"]) == (
        "gpt-4o",
        "openai",
        "tiered-agent",
    )
    assert entries["a"]["token_scale"] == pytest.approx(2.0, abs=1e-3)
    assert (entries["n"]["cache_model_source"], entries["n"]["price_model"]) == (
        "default (no model recorded)",
        None,
    )


# ----------------------------------------------------------------------------- dollars
def _expected_full_usd(
    document: dict[str, Any], run_id: str, key: str, scale: float, out_scale: float
) -> float:
    prices = model_prices(key)
    assert prices is not None
    entry = next(r for r in document["runs"] if r["run_id"] == run_id)["policies"]["full"]["per_step"]
    return sum(
        prices.cost(p * scale, c * scale, w * scale, 30 * out_scale)
        for p, c, w in zip(
            entry["prompt_tokens"], entry["cached_tokens"], entry["cache_write_tokens"], strict=True
        )
    )


def test_dollars_on_a_tiny_replay_as_the_recorded_model() -> None:
    document = _document([_run("a", 8)], ["masking"], cache_model="ideal")
    full = document["policies"]["full"]["totals"]
    # ideal cache: full reads the whole previous request (its prompt minus the 3-token reply primer)
    steps = document["runs"][0]["policies"]["full"]["per_step"]
    assert steps["cached_tokens"] == [0, *(p - 3 for p in steps["prompt_tokens"][:-1])]
    factor = document["calibration"]["openai"]["factor"]
    # recorded completions are gpt-4o tokens already: no conversion when priced as gpt-4o
    expected = _expected_full_usd(document, "a", "gpt-4o", factor, 1.0)
    assert full["cost_usd"] == pytest.approx(expected, rel=1e-5)
    assert full["priced_runs"] == 1 and full["cost_usd_savings_vs_full"] == 0.0
    masking = document["policies"]["masking"]["totals"]
    assert masking["cost_usd_savings_vs_full"] == pytest.approx(
        1 - masking["cost_usd"] / full["cost_usd"], abs=1e-6
    )
    assert document["pricing"]["models"]["gpt-4o"] == {
        "input": 2.5e-6,
        "output": 1e-5,
        "cache_read": 1.25e-6,
        "cache_write": 2.5e-6,
        "cache_write_1h": 2.5e-6,  # OpenAI bills no writes, whatever their lifetime
    }
    # the usage records no cost: the recorded usage is priced at gpt-4o's list prices (nothing cached)
    validation = document["validation"]["cost_usd"]
    recorded = sum(
        u.prompt_tokens * 2.5e-6 + u.completion_tokens * 1e-5 for u in _run("a", 8).usage if u is not None
    )
    assert validation["recorded_source"] == "list prices of the recorded usage"
    assert validation["recorded_cost_usd"] == pytest.approx(recorded, rel=1e-6)
    assert validation["simulated_cost_usd"] == pytest.approx(full["cost_usd"], rel=1e-6)
    assert validation["per_family"]["tiered-agent"]["ratio"] == validation["ratio"]
    assert document["recorded"]["cost_usd"] == pytest.approx(recorded, rel=1e-6)
    assert document["recorded"]["policies_cost_usd"]["full"] == pytest.approx(full["cost_usd"], rel=1e-6)


def test_dollars_with_a_price_model_of_another_provider() -> None:
    """Priced as Claude: anthropic is not calibrated (scale 1), and gpt-4o's recorded completions are
    converted back to replayed tokens (/2) first."""
    document = _document([_run("a", 8)], ["tiered"], price_model="claude-sonnet-4-5")
    run = document["inputs"]["runs"][0]
    assert (run["price_model"], run["cache_model"], run["token_scale"]) == (
        "claude-sonnet-4-5",
        "anthropic",
        1.0,
    )
    assert document["calibration"]["anthropic"]["measured"] is False
    full = document["policies"]["full"]["totals"]
    assert full["cache_write_tokens"] > 0  # Anthropic bills writes
    expected = _expected_full_usd(document, "a", "claude-sonnet-4-5", 1.0, 0.5)
    assert full["cost_usd"] == pytest.approx(expected, rel=1e-5)
    assert document["settings"]["price_model"] == "claude-sonnet-4-5"


def test_only_some_runs_priced() -> None:
    runs = [_run("a", 5), _run("n", 5, model=None, provider_per_replayed=None)]
    document = _document(runs, ["tiered"])
    pricing = document["pricing"]
    assert (pricing["priced_runs"], pricing["unpriced_runs"]) == (1, ["n"])
    totals = document["policies"]["full"]["totals"]
    per_run = {r["run_id"]: r["policies"]["full"]["cost_usd"] for r in document["runs"]}
    assert per_run["n"] is None
    assert totals["priced_runs"] == 1 and totals["cost_usd"] == pytest.approx(per_run["a"], abs=1e-6)
    everything = _document(runs, ["tiered"], price_model="gpt-5")["policies"]["full"]["totals"]
    assert everything["priced_runs"] == 2
    none = _document([runs[1]], ["tiered"])
    assert none["policies"]["full"]["totals"]["cost_usd"] is None
    assert "No run could be priced" in render_markdown(none)


def test_summarizer_tokens_are_priced_or_make_the_cost_unknown() -> None:
    from fakes import make_usage, scripted_provider, text_reply

    run = _run("s", 12)
    policies = {"full": policy_config("full"), "sum5": policy_config("adk-compaction")}  # every 5
    reply = text_reply("Goal: fix it.", make_usage(prompt=300, completion=40))

    with scripted_provider(respond=lambda request: reply):
        result = replay_runs(
            [run], policies, ReplaySettings(summary_model="fake/gpt-4o-mini", cache_model="ideal")
        )
    priced = build_document(result, ["s"])  # the summaries priced as litellm's gpt-4o-mini
    assert priced["pricing"]["summary_model"] == "gpt-4o-mini"
    mini = model_prices("gpt-4o-mini")
    assert mini is not None
    totals = priced["policies"]["sum5"]["totals"]
    calls = totals["summary_input_tokens"] // 300
    assert calls >= 2 and totals["summary_output_tokens"] == 40 * calls
    entry = priced["runs"][0]["policies"]["sum5"]
    steps_only = entry["cost_usd"] - calls * (300 * mini.input + 40 * mini.output)
    # the same replay, had the summarizer been a model litellm does not price
    other = dataclasses.replace(result.settings, summary_model="fake/no-such-summarizer")
    unpriced = build_document(dataclasses.replace(result, settings=other), ["s"])
    assert unpriced["pricing"]["summary_model_priced"] is False
    assert unpriced["policies"]["sum5"]["totals"]["cost_usd"] is None  # its summaries cannot be priced
    assert (
        unpriced["policies"]["full"]["totals"]["cost_usd"] == priced["policies"]["full"]["totals"]["cost_usd"]
    )
    assert steps_only == pytest.approx(
        sum(
            model_prices("gpt-4o").cost(p * 2, c * 2, 0, 30)  # type: ignore[union-attr]
            for p, c in zip(
                entry["per_step"]["prompt_tokens"], entry["per_step"]["cached_tokens"], strict=True
            )
        ),
        rel=1e-3,
    )


# ----------------------------------------------------------------------------- families
def test_family_of_formats() -> None:
    assert [family_of(f) for f in ("mini-swe-agent", "swe-agent", "tau-bench", "openhands", "weird")] == [
        "swe-shell",
        "swe-shell",
        "tau-bench",
        "openhands",
        "weird",
    ]


def test_families_are_the_same_totals_over_subsets() -> None:
    runs = [
        _run("m1", 6, fmt="mini-swe-agent"),
        _run("s1", 4, fmt="swe-agent"),
        _run("t1", 5, fmt="tau-bench", model=None, provider_per_replayed=None),
    ]
    document = _document(runs, ["tiered", "masking"])
    families = document["families"]
    assert sorted(families) == ["swe-shell", "tau-bench"]
    assert (families["swe-shell"]["runs"], families["swe-shell"]["steps"]) == (2, 10)
    for name, policy in document["policies"].items():
        pooled = policy["totals"]
        parts = [f["policies"][name]["totals"] for f in families.values()]
        for key in ("prompt_tokens", "cached_tokens", "steps", "missed", "calibrated_input_tokens"):
            assert pooled[key] == sum(p[key] for p in parts), key
        assert pooled["cost_usd"] == pytest.approx(
            families["swe-shell"]["policies"][name]["totals"]["cost_usd"]
        )
        assert families["tau-bench"]["policies"][name]["totals"]["cost_usd"] is None
    text = render_markdown(document)
    assert "## Per agent family" in text and "swe-shell (2 runs)" in text
    table = render_family_table(document)
    assert [c.header for c in table.columns] == ["policy", "swe-shell (2)", "tau-bench (1)"]


# ----------------------------------------------------------------------------- the command
def test_command_cache_and_price_model(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    write_run_trace(_run("alpha", 6), traces / "alpha.jsonl")
    json_path = tmp_path / "bench.json"
    args = [str(traces), "--policies", "tiered", "--out", str(tmp_path / "out"), "--json", str(json_path)]
    result = CliRunner().invoke(bench, [*args, "--cache-model", "gemini", "--price-model", "gpt-5"])
    assert result.exit_code == 0, result.output
    document = orjson.loads(json_path.read_bytes())
    assert (document["settings"]["cache_model"], document["settings"]["price_model"]) == ("gemini", "gpt-5")
    assert document["inputs"]["runs"][0]["cache_model"] == "gemini"
    assert document["policies"]["tiered"]["totals"]["cost_usd"] > 0
    assert "USD" in result.output
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "## Dollars" in report and "Cache model: `gemini`" in report


def test_command_rejects_an_unknown_price_model_in_one_sentence() -> None:
    result = CliRunner().invoke(bench, ["--price-model", "no-such-model-xyz"])
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        "Error: litellm's price map has no model 'no-such-model-xyz', so --price-model cannot price the runs "
        "(try a name such as claude-sonnet-4-5 or gpt-5)."
    ]


def test_command_rejects_an_unknown_cache_model() -> None:
    result = CliRunner().invoke(bench, ["--cache-model", "azure"])
    assert result.exit_code == 2
    assert "auto" in result.output and "anthropic" in result.output


def test_command_cache_model_choices_match_the_providers_module() -> None:
    from tiered_agent._providers import CACHE_MODEL_NAMES
    from tiered_agent.cli._options import CACHE_MODEL_CHOICES

    assert CACHE_MODEL_CHOICES == CACHE_MODEL_NAMES
    assert set(CACHE_MODELS) == set(CACHE_MODEL_NAMES) - {"auto"}


# ----------------------------------------------------------------------------- recorded Gemini runs
@pytest.mark.skipif(not SHARED.is_dir(), reason="shared trajectories not present")
def test_gemini_cache_model_tracks_recorded_cache_better_than_ideal() -> None:
    from tiered_agent.bench._importers import load_file

    folder = SHARED / "mini-swe-agent_gemini-3-pro_long"
    runs = [run for path in sorted(folder.glob("*.traj.json"))[:6] for run in load_file(path)]

    def check(cache_model: str) -> dict[str, Any]:
        return _document(runs, ["full"], cache_model=cache_model)["validation"]["caching"]  # type: ignore[no-any-return]

    gemini, ideal = check("gemini"), check("ideal")
    assert gemini["cache_models"] == ["gemini"] and gemini["steps"] == ideal["steps"] > 400
    assert gemini["mean_abs_error_cached_share"] < ideal["mean_abs_error_cached_share"] - 0.03
    gap = abs(gemini["simulated_cached_share"] - gemini["recorded_cached_share"])
    assert gap < abs(ideal["simulated_cached_share"] - ideal["recorded_cached_share"]) / 2
