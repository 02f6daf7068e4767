"""The JSON document (schema keys, determinism), report.md, the rich table, the chart and the command."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from click.testing import CliRunner

from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent.bench._chart import longest_run, write_chart
from tiered_agent.bench._frontier import frontier, write_frontier
from tiered_agent.bench._importers import write_run_trace
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
from tiered_agent.bench._report import (
    SCHEMA_VERSION,
    build_document,
    dumps,
    policies_by_cost,
    render_markdown,
    render_table,
    strip_timing,
    write_json,
)
from tiered_agent.cli._bench import bench

DOCS = Path(__file__).resolve().parents[1] / "docs" / "bench-json-schema.md"
TOP_KEYS = {
    "schema_version",
    "generator",
    "inputs",
    "settings",
    "policies",
    "runs",
    "validation",
    "fidelity",
    "timing",
    "calibration",
    "pricing",
    "families",
    "groups",
    "targets",
    "recorded",
    "anatomy",
}
ANATOMY_KEYS = {
    "tokens",
    "input_cost",
    "input_cost_by_kind",
    "input_cost_shares",
    "reach_input_cost",
    "reach_tokens",
    "usd",
    "usd_by_kind",
    "usd_shares",
    "reach_usd",
    "saving_over_reach",
}
TOTALS_KEYS = {
    "runs",
    "steps",
    "prompt_tokens",
    "summary_input_tokens",
    "summary_output_tokens",
    "input_tokens",
    "peak_prompt_tokens",
    "cached_tokens",
    "cached_share",
    "output_tokens",
    "effective_cost",
    "input_cost",
    "input_cost_savings_vs_full",
    "prefix_rewrites",
    "prefix_rewrite_rate",
    "cost_vs_full",
    "token_savings_vs_full",
    "cost_savings_vs_full",
    "salient",
    "missed",
    "miss_rate",
    "steps_with_miss",
    "retrieval_tokens",
    "retrieval_adjusted_input_tokens",
    "retrieval_adjusted_savings_vs_full",
    "over_hard_limit_steps",
    "compactions",
    "dedup_hits",
    "truncated_chars",
    "step_errors",
    "cache_write_tokens",
    "calibrated_input_tokens",
    "calibrated_cached_tokens",
    "cost_usd",
    "cost_usd_savings_vs_full",
    "priced_runs",
    "recoverable_missed",
    "miss_rate_adjusted",
    "recovery_tokens",
    "input_cost_adjusted",
    "input_cost_adjusted_savings_vs_full",
    "word_salient",
    "word_missed",
    "word_miss_rate",
    "long_runs",
    "long_run_peak_tokens",
    "long_run_peak_vs_full",
    # the line and own-writing rulers, the worst ruler, the retrieval turns (docs/rulers.md)
    "line_needed",
    "line_missed",
    "line_miss_rate",
    "line_recoverable_missed",
    "line_miss_rate_adjusted",
    "own_needed",
    "own_missed",
    "own_miss_rate",
    "own_recoverable_missed",
    "own_miss_rate_adjusted",
    "worst_miss_rate",
    "worst_ruler",
    "retrieval_turns",
    "retrieval_turn_tokens",
    "retrieval_turn_output_tokens",
    "retrieval_turn_input_cost",
}
# per set of runs (pooled, family): the runs that cost more than full
LOSS_KEYS = {
    "runs_costlier_than_full",
    "runs_costlier_than_full_share",
    "worst_excess_vs_full",
    "worst_excess_run",
    "interval_95",
}
RUN_POLICY_KEYS = (TOTALS_KEYS - {"runs"}) | {
    "missed_strings",
    "line_missed_strings",
    "own_missed_strings",
    "step_error_list",
    "per_step",
}


def _run(run_id: str, steps: int, *, usage: bool = True) -> RecordedRun:
    messages = [Message("system", "You are a coding agent."), Message("user", f"Fix {run_id}.")]
    for k in range(1, steps + 1):
        call = ToolCall(f"c{k}", "read_file", f'{{"path": "src/mod_{k}.py"}}')
        messages.append(Message("assistant", f"Check value_{k - 1}", (call,), iteration=k))
        body = "\n".join(f"value_{k} line {i} = {k * 100 + i}" for i in range(60))
        messages.append(Message("tool", body, tool_call_id=f"c{k}", name="read_file", iteration=k))
    records = tuple(Usage(500 * k, 30, 450 * (k - 1), 1) for k in range(1, steps + 1)) if usage else ()
    return RecordedRun(
        run_id,
        f"memory:{run_id}",
        "tiered-agent",
        tuple(messages),
        tools=({"type": "function", "function": {"name": "read_file"}},),
        read_only_tools=frozenset({"read_file"}),
        usage=records,
    )


@pytest.fixture(scope="module")
def document() -> dict[str, Any]:
    runs = [_run("alpha", 14), _run("beta", 22, usage=False), _run("gamma", 6)]
    result = replay_runs(
        runs,
        resolve_policies(["tiered", "masking", "tiered:truncation-only"]),
        ReplaySettings(context_window=20_000),
    )
    return build_document(result, ["memory"])


def test_document_schema_keys(document: dict[str, Any]) -> None:
    assert set(document) == TOP_KEYS
    assert document["schema_version"] == SCHEMA_VERSION == 4
    assert set(document["settings"]) == {
        "tokenizer",
        "context_window",
        "context_window_nominal",
        "cache_discount",
        "output_price_ratio",
        "baseline",
        "summarizer",
        "hard_limit_enforced",
        "cost_unit",
        "cache_model",
        "cache_model_default",
        "price_model",
        "routing",
    }
    assert document["settings"]["context_window"] == 20_000
    assert set(document["inputs"]) == {
        "paths", "skipped", "skipped_lines", "failed", "run_count", "step_count", "uncounted_steps", "runs"
    }  # fmt: skip
    assert document["inputs"]["skipped"] == [] and document["inputs"]["skipped_lines"] == []
    assert document["inputs"]["step_count"] == 42
    assert list(document["policies"]) == sorted(["full", "tiered", "masking", "tiered:truncation-only"])
    for name, policy in document["policies"].items():
        assert set(policy) == {"config", "ablation_of", "retrieval_active", "totals"}
        assert set(policy["totals"]) == TOTALS_KEYS | LOSS_KEYS
        assert policy["config"]["name"] == name
    assert document["policies"]["tiered:truncation-only"]["ablation_of"] == "tiered"
    assert document["policies"]["full"]["totals"]["token_savings_vs_full"] == 0.0
    assert document["policies"]["full"]["totals"]["retrieval_adjusted_input_tokens"] is None
    assert [r["run_id"] for r in document["runs"]] == ["alpha", "beta", "gamma"]
    for run in document["runs"]:
        assert set(run) == {"run_id", "steps", "uncounted_steps", "policies", "anatomy"}
        assert set(run["anatomy"]) == ANATOMY_KEYS
        for entry in run["policies"].values():
            assert set(entry) == RUN_POLICY_KEYS
            assert set(entry["per_step"]) == {
                "prompt_tokens",
                "cached_tokens",
                "cache_write_tokens",
                "missed",
                "line_missed",
                "own_missed",
            }
            assert len(entry["per_step"]["prompt_tokens"]) == run["steps"]
    assert set(document["anatomy"]) == ANATOMY_KEYS
    for family in document["families"].values():
        assert set(family) == {"runs", "steps", "policies", "recorded", "anatomy"}
        assert set(family["anatomy"]) == ANATOMY_KEYS
    assert set(document["timing"]) == {"elapsed_seconds", "policies"}
    assert set(document["timing"]["policies"]["tiered"]) == {"steps", "build_ms_median", "build_ms_p99"}


def test_validation_and_fidelity_cover_runs_with_usage(document: dict[str, Any]) -> None:
    validation, fidelity = document["validation"]["caching"], document["fidelity"]
    assert validation["runs"] == fidelity["runs"] == 2  # beta recorded no usage
    assert validation["steps"] == fidelity["steps"] == 20
    assert [r["run_id"] for r in fidelity["per_run"]] == ["alpha", "gamma"]
    full = {r["run_id"]: r for r in document["runs"]}
    replayed = sum(sum(full[i]["policies"]["full"]["per_step"]["prompt_tokens"]) for i in ("alpha", "gamma"))
    assert fidelity["replayed_prompt_tokens"] == replayed
    assert fidelity["recorded_prompt_tokens"] == 500 * (14 * 15 // 2 + 6 * 7 // 2)
    assert fidelity["ratio"] == pytest.approx(replayed / fidelity["recorded_prompt_tokens"], abs=1e-6)
    assert set(validation) == {
        "runs",
        "steps",
        "mean_abs_error_cached_share",
        "simulated_cached_share",
        "recorded_cached_share",
        "cached_share_ratio",
        "cache_models",
        "per_family",
        "per_run",
    }
    assert list(validation["per_family"]) == ["tiered-agent"]
    assert validation["per_family"]["tiered-agent"]["steps"] == 20
    # the replay counts the whole prompt of these runs: nothing is estimated to be missing
    assert fidelity["calibrated_mean_abs_rel_error"] is not None
    assert [r["unrecorded_prefix_source"] for r in document["inputs"]["runs"]] == ["recorded"] * 3


def test_totals_are_the_sum_of_the_runs(document: dict[str, Any]) -> None:
    for name, policy in document["policies"].items():
        runs = [r["policies"][name] for r in document["runs"]]
        assert policy["totals"]["prompt_tokens"] == sum(r["prompt_tokens"] for r in runs)
        assert policy["totals"]["peak_prompt_tokens"] == max(
            max(r["per_step"]["prompt_tokens"]) for r in runs
        )
        assert policy["totals"]["missed"] == sum(sum(r["per_step"]["missed"]) for r in runs)
    # masking rewrites an older output every step once past its 10 outputs: the cache breaks there
    masking, full = document["policies"]["masking"]["totals"], document["policies"]["full"]["totals"]
    assert full["prefix_rewrites"] == 0
    assert masking["prefix_rewrites"] > 0
    assert masking["cached_share"] < full["cached_share"]
    assert masking["input_cost_savings_vs_full"] < masking["token_savings_vs_full"]


def test_json_is_sorted_and_deterministic(document: dict[str, Any], tmp_path: Path) -> None:
    path = write_json(document, tmp_path / "out" / "bench.json")
    loaded = orjson.loads(path.read_bytes())
    assert strip_timing(loaded) == strip_timing(document)
    assert "timing" not in strip_timing(document)
    text = dumps(strip_timing(document)).decode()
    keys = re.findall(r'^  "(\w+)":', text, flags=re.MULTILINE)
    assert keys == sorted(keys)


def test_schema_doc_names_every_key() -> None:
    text = DOCS.read_text(encoding="utf-8")
    for key in TOP_KEYS | TOTALS_KEYS | LOSS_KEYS | RUN_POLICY_KEYS | ANATOMY_KEYS:
        assert f"`{key}`" in text, key


def test_markdown_and_table(document: dict[str, Any]) -> None:
    order = policies_by_cost(document)
    costs = [document["policies"][n]["totals"]["effective_cost"] for n in order]
    assert costs == sorted(costs)
    text = render_markdown(document, chart="bench.png", frontier="frontier.png")
    assert text.startswith("# Replay benchmark")
    assert "nominal context window 20,000 tokens" in text
    for section in (
        "## Policies (cheapest first)",
        "## Prompt caching",
        "## Checks against recorded provider usage",
        "## Per-run highlights",
        "## Method",
        "![per-step prompt tokens and totals](bench.png)",
        "## Lean and faithful: per family",
        "| policy | tokens saved | input cost saved | with retrieval turns | USD saved | salient | word | "
        "line | own | worst ruler |",
        "![input cost saved vs the worst ruler, per family](frontier.png)",
    ):
        assert section in text
    rows = [line for line in text.splitlines() if line.startswith("| `")]
    assert [re.match(r"\| `([^`]+)`", r).group(1) for r in rows[: len(order)]] == order  # type: ignore[union-attr]
    table = render_table(document)
    assert table.row_count == 4
    assert [c.header for c in table.columns][:3] == ["policy", "input", "saved"]


def test_the_frontier_chart_and_its_pareto_line(document: dict[str, Any], tmp_path: Path) -> None:
    points = {"cheap-lossy": (20.0, 50.0), "lean": (4.0, 40.0), "dominated": (6.0, 30.0), "full": (0.0, 0.0)}
    assert frontier(points) == ["full", "lean", "cheap-lossy"]
    path = write_frontier(document, tmp_path / "frontier.png")
    assert path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and path.stat().st_size > 10_000


def test_chart_is_a_png(document: dict[str, Any], tmp_path: Path) -> None:
    path = write_chart(document, tmp_path / "chart" / "bench.png")
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 10_000
    run = longest_run(document)
    assert run is not None and run["run_id"] == "beta"


# ----------------------------------------------------------------------------- the command
def test_command_rejects_an_unknown_policy() -> None:
    result = CliRunner().invoke(bench, ["--policies", "tiered,nope"])
    assert result.exit_code == 2
    assert "unknown policy 'nope'" in result.output
    assert "tiered:dedup-only" in result.output


def test_command_rejects_bad_numbers() -> None:
    assert CliRunner().invoke(bench, ["--cache-discount", "2"]).exit_code == 2
    assert CliRunner().invoke(bench, ["--context-window", "0"]).exit_code == 2
    assert CliRunner().invoke(bench, ["--tokenizer", "gpt2"]).exit_code == 2


def test_command_writes_report_chart_and_json(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    write_run_trace(_run("alpha", 8), traces / "alpha.jsonl")
    out, json_path = tmp_path / "out", tmp_path / "bench.json"
    result = CliRunner().invoke(
        bench,
        [
            str(traces),
            "--policies",
            "tiered",
            "--out",
            str(out),
            "--json",
            str(json_path),
            "--tokenizer",
            "cl100k_base",
            "--cache-discount",
            "0.25",
            "--output-price-ratio",
            "5",
        ],
    )
    assert result.exit_code == 0, result.output
    document = orjson.loads(json_path.read_bytes())
    assert sorted(document["policies"]) == ["full", "tiered"]
    assert document["settings"]["tokenizer"] == "cl100k_base"
    assert document["settings"]["cache_discount"] == 0.25
    assert document["settings"]["output_price_ratio"] == 5.0
    assert document["settings"]["summarizer"] == "digest"  # offline unless --summary-model names a model
    assert document["inputs"]["run_count"] == 1
    assert (out / "report.md").read_text(encoding="utf-8").startswith("# Replay benchmark")
    assert (out / "bench.png").read_bytes()[:4] == b"\x89PNG"
    assert (out / "frontier.png").read_bytes()[:4] == b"\x89PNG"
    assert "](frontier.png)" in (out / "report.md").read_text(encoding="utf-8")
    assert "tiered" in result.output


def test_summary_model_digest_is_the_offline_digest(tmp_path: Path) -> None:
    traces = tmp_path / "traces"
    traces.mkdir()
    write_run_trace(_run("alpha", 12), traces / "alpha.jsonl")
    json_path = tmp_path / "bench.json"
    args = [
        str(traces),
        "--policies",
        "kb-labs-adr",
        "--out",
        str(tmp_path / "out"),
        "--json",
        str(json_path),
    ]
    result = CliRunner().invoke(bench, [*args, "--summary-model", "digest"])
    assert result.exit_code == 0, result.output
    document = orjson.loads(json_path.read_bytes())
    assert document["settings"]["summarizer"] == "digest"
    assert document["policies"]["kb-labs-adr"]["totals"]["summary_input_tokens"] == 0


def test_command_fails_with_one_sentence_on_a_bad_file(tmp_path: Path) -> None:
    bad = tmp_path / "broken.json"
    bad.write_text('{"messages": "not a list"', encoding="utf-8")
    result = CliRunner().invoke(bench, [str(bad), "--strict", "--out", str(tmp_path / "out")])
    assert result.exit_code == 1
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("Error: ")
    assert "broken.json" in lines[0]


def test_command_module_import_is_cheap() -> None:
    code = (
        "import sys, tiered_agent.cli._bench as c; "
        "print(sorted(m for m in ('matplotlib', 'rich', 'litellm', 'tiktoken') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"
