"""The benchmark's outputs: the JSON document (schema in docs/bench-json-schema.md), report.md, the table.

Everything a report shows is derived from the JSON document, so a saved
``--json`` file can be rendered again. Timings live only under the top-level
``"timing"`` key (:func:`strip_timing`); the rest is a pure function of the
inputs and settings, with every list and mapping sorted.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ._metrics import CacheValidation, Fidelity, Totals, fidelity, percentile, totals, validate_caching
from ._replay import ABLATIONS, BASELINE, BenchResult

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "SCHEMA_VERSION",
    "TIMING_KEY",
    "build_document",
    "dumps",
    "policies_by_cost",
    "render_markdown",
    "render_table",
    "strip_timing",
    "write_json",
]

SCHEMA_VERSION = 1
TIMING_KEY = "timing"
_MAX_MISSED_LISTED = 20


def _r(value: float) -> float:
    return round(value, 6)


def _ratio(part: float, whole: float) -> float | None:
    return _r(part / whole) if whole else None


def _totals_dict(t: Totals, full: Totals | None) -> dict[str, Any]:
    adjusted = t.retrieval_adjusted_input_tokens
    base_input = full.input_tokens if full else 0
    base_cost = full.effective_cost if full else 0.0
    return {
        "runs": t.runs,
        "steps": t.steps,
        "prompt_tokens": t.prompt_tokens,
        "summary_input_tokens": t.summary_input_tokens,
        "summary_output_tokens": t.summary_output_tokens,
        "input_tokens": t.input_tokens,
        "peak_prompt_tokens": t.peak_prompt_tokens,
        "cached_tokens": t.cached_tokens,
        "cached_share": _r(t.cached_share),
        "output_tokens": t.output_tokens,
        "effective_cost": _r(t.effective_cost),
        "input_cost": _r(t.input_cost),
        "input_cost_savings_vs_full": _r(1 - t.input_cost / full.input_cost)
        if full and full.input_cost
        else None,
        "prefix_rewrites": t.prefix_rewrites,
        "prefix_rewrite_rate": _r(t.rewrite_rate),
        "cost_vs_full": _ratio(t.effective_cost, base_cost),
        "token_savings_vs_full": _r(1 - t.input_tokens / base_input) if base_input else None,
        "cost_savings_vs_full": _r(1 - t.effective_cost / base_cost) if base_cost else None,
        "salient": t.salient,
        "missed": t.missed,
        "miss_rate": _r(t.miss_rate),
        "steps_with_miss": t.steps_with_miss,
        "retrieval_tokens": t.retrieval_tokens,
        "retrieval_adjusted_input_tokens": adjusted,
        "retrieval_adjusted_savings_vs_full": (
            _r(1 - adjusted / base_input) if adjusted is not None and base_input else None
        ),
        "over_hard_limit_steps": t.over_hard_limit_steps,
        "compactions": t.compactions,
        "dedup_hits": t.dedup_hits,
        "truncated_chars": t.truncated_chars,
    }


def _validation_dict(v: CacheValidation | None) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        "runs": v.runs,
        "steps": v.steps,
        "mean_abs_error_cached_share": _r(v.mean_abs_error),
        "simulated_cached_share": _r(v.simulated_share),
        "recorded_cached_share": _r(v.recorded_share),
        "cached_share_ratio": _r(v.share_ratio),
        "per_run": [
            {
                "run_id": r.run_id,
                "steps": r.steps,
                "mean_abs_error_cached_share": _r(r.mean_abs_error),
                "simulated_cached_share": _r(r.simulated_share),
                "recorded_cached_share": _r(r.recorded_share),
            }
            for r in v.per_run
        ],
    }


def _fidelity_dict(f: Fidelity | None) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "runs": len(f.per_run),
        "steps": f.steps,
        "replayed_prompt_tokens": f.replayed_prompt_tokens,
        "recorded_prompt_tokens": f.recorded_prompt_tokens,
        "ratio": _r(f.ratio),
        "per_run": [
            {
                "run_id": r.run_id,
                "steps": r.steps,
                "replayed_prompt_tokens": r.replayed_prompt_tokens,
                "recorded_prompt_tokens": r.recorded_prompt_tokens,
                "ratio": _r(r.ratio),
            }
            for r in f.per_run
        ],
    }


def _settings_dict(result: BenchResult) -> dict[str, Any]:
    s = result.settings
    return {
        "tokenizer": s.tokenizer,
        "context_window": s.context_window,
        "context_window_nominal": True,
        "cache_discount": s.cache_discount,
        "output_price_ratio": s.output_price_ratio,
        "baseline": BASELINE,
        "summarizer": s.summary_model or "digest",
        "hard_limit_enforced": False,
        "cost_unit": "uncached input token",
    }


def _inputs_dict(
    result: BenchResult, paths: Sequence[str], skipped: Sequence[Mapping[str, str]]
) -> dict[str, Any]:
    return {
        "paths": sorted(paths),
        "skipped": sorted(({"path": s["path"], "reason": s["reason"]} for s in skipped), key=_skip_key),
        "run_count": len(result.runs),
        "step_count": sum(r.steps for r in result.runs),
        "runs": [
            {
                "run_id": r.run_id,
                "source": r.source,
                "format": r.format,
                "model": r.model,
                "steps": r.steps,
                "recorded_usage": r.has_usage,
            }
            for r in result.runs
        ],
    }


def _skip_key(entry: Mapping[str, str]) -> tuple[str, str]:
    return entry["path"], entry["reason"]


def _policy_meta(name: str, result: BenchResult) -> dict[str, Any]:
    config = result.policies[name]
    base, _, ablation = name.partition(":")
    return {
        "config": config.to_dict(),
        "ablation_of": base if ablation in ABLATIONS else None,
        "retrieval_active": config.retrieval_active,
    }


def _runs_list(result: BenchResult, names: Sequence[str]) -> list[dict[str, Any]]:
    pricing = result.settings.pricing
    out = []
    for replay in result.replays:
        full = totals([replay.policies[BASELINE]], pricing)
        policies = {}
        for name in names:
            metrics = replay.policies[name]
            entry = _totals_dict(totals([metrics], pricing), full)
            del entry["runs"]
            missed = sorted({s for step in metrics.steps for s in step.missed})
            entry["missed_strings"] = missed[:_MAX_MISSED_LISTED]
            entry["per_step"] = {
                "prompt_tokens": [s.prompt_tokens for s in metrics.steps],
                "cached_tokens": [s.cached_tokens for s in metrics.steps],
                "missed": [len(s.missed) for s in metrics.steps],
            }
            policies[name] = entry
        out.append({"run_id": replay.run_id, "steps": len(replay.output_tokens), "policies": policies})
    return out


def _timing_dict(result: BenchResult, names: Sequence[str]) -> dict[str, Any]:
    policies = {}
    for name in names:
        seconds = [s.build_seconds for r in result.replays for s in r.policies[name].steps]
        policies[name] = {
            "steps": len(seconds),
            "build_ms_median": _r(percentile(seconds, 50) * 1000),
            "build_ms_p99": _r(percentile(seconds, 99) * 1000),
        }
    return {"elapsed_seconds": _r(result.elapsed_seconds), "policies": policies}


def build_document(
    result: BenchResult, paths: Sequence[str] = (), skipped: Sequence[Mapping[str, str]] = ()
) -> dict[str, Any]:
    """The JSON document of a benchmark result (see docs/bench-json-schema.md).

    ``skipped``: the inputs the importers skipped (``{"path", "reason"}`` each).
    """
    names = sorted(result.policies)
    pricing = result.settings.pricing
    per_policy = {n: totals([r.policies[n] for r in result.replays], pricing) for n in names}
    full = per_policy[BASELINE]
    full_runs = [r.policies[BASELINE] for r in result.replays]
    usage = {r.run_id: r.usage for r in result.runs}
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": "tiered-agent bench",
        "inputs": _inputs_dict(result, paths, skipped),
        "settings": _settings_dict(result),
        "policies": {
            n: _policy_meta(n, result) | {"totals": _totals_dict(per_policy[n], full)} for n in names
        },
        "runs": _runs_list(result, names),
        "validation": {"caching": _validation_dict(validate_caching(full_runs, usage))},
        "fidelity": _fidelity_dict(fidelity(full_runs, usage)),
        TIMING_KEY: _timing_dict(result, names),
    }


def strip_timing(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document without its timing fields (what determinism is checked on)."""
    return {k: v for k, v in document.items() if k != TIMING_KEY}


def dumps(document: Mapping[str, Any]) -> bytes:
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"


def write_json(document: Mapping[str, Any], path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(dumps(document))
    return path


def policies_by_cost(document: Mapping[str, Any]) -> list[str]:
    """Policy names, cheapest effective cost first (ties by name)."""
    policies = document["policies"]
    return sorted(policies, key=lambda n: (policies[n]["totals"]["effective_cost"], n))


# --------------------------------------------------------------------------- rendering
def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:+.1f}%"


def _share(value: float | None) -> str:
    return "n/a" if value is None else f"{value * 100:.1f}%"


def _compact(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.2f}{suffix}"
    return f"{value:.0f}"


def _table_rows(document: Mapping[str, Any], *, compact: bool = False) -> list[list[str]]:
    timing = document.get(TIMING_KEY, {}).get("policies", {})
    number = _compact if compact else (lambda v: f"{v:,.0f}")
    rows = []
    for name in policies_by_cost(document):
        t = document["policies"][name]["totals"]
        ms = timing.get(name)
        rows.append(
            [
                name,
                number(t["input_tokens"]),
                _pct(t["token_savings_vs_full"]),
                number(t["effective_cost"]),
                _pct(t["cost_savings_vs_full"]),
                _share(t["cached_share"]),
                number(t["peak_prompt_tokens"]),
                _share(t["miss_rate"]),
                _pct(t["retrieval_adjusted_savings_vs_full"]),
                f"{ms['build_ms_median']:.2f}/{ms['build_ms_p99']:.1f}" if ms else "n/a",
            ]
        )
    return rows


TABLE_HEADERS = (
    "policy",
    "input tokens",
    "token savings",
    "effective cost",
    "cost savings",
    "cached share",
    "peak prompt",
    "miss rate",
    "savings with retrieval",
    "build ms p50/p99",
)
_SHORT_HEADERS = (
    "policy",
    "input",
    "saved",
    "cost",
    "cost saved",
    "cached",
    "peak",
    "miss",
    "w/ retr.",
    "ms p50/p99",
)


def render_table(document: Mapping[str, Any]) -> Table:
    """The policies as a rich table, cheapest first (rich is imported here, not at module import)."""
    from rich.table import Table

    s = document["settings"]
    table = Table(
        title=(
            f"Replay: {document['inputs']['run_count']} runs, {document['inputs']['step_count']:,} steps, "
            f"{s['tokenizer']}, nominal window {s['context_window']:,}"
        ),
        caption=(
            f"savings vs full; cost: cached input {s['cache_discount']}x, output {s['output_price_ratio']}x "
            "the input price; miss: salient strings hidden"
        ),
        pad_edge=False,
    )
    for index, header in enumerate(_SHORT_HEADERS):
        table.add_column(header, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for row in _table_rows(document, compact=True):
        table.add_row(*row)
    return table


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _md_header(document: Mapping[str, Any]) -> list[str]:
    inputs, s = document["inputs"], document["settings"]
    formats = sorted({r["format"] for r in inputs["runs"]})
    return [
        "# Replay benchmark",
        "",
        f"{inputs['run_count']} recorded runs ({', '.join(formats) or 'none'}), "
        f"{inputs['step_count']:,} model calls, replayed through {len(document['policies'])} context "
        "policies. Tokens counted with "
        f"`{s['tokenizer']}`; nominal context window {s['context_window']:,} tokens (thresholds such as "
        "compaction at a share of the window depend on it). Savings are relative to `full` (the whole "
        "history every call). Effective cost is in uncached-input-token units: cached prompt tokens at "
        f"{s['cache_discount']}x, output tokens at {s['output_price_ratio']}x.",
        "",
    ]


def _md_caching(document: Mapping[str, Any]) -> list[str]:
    policies = document["policies"]
    full = policies[BASELINE]["totals"]
    lines = [
        "## Prompt caching",
        "",
        "Input cost counts cached prompt tokens at the discount; a *prefix rewrite* is a step whose prompt "
        "differs from the previous prompt before that prompt's end, so the cache stops there. "
        f"`full` only appends: cached share {_share(full['cached_share'])}, "
        f"{full['prefix_rewrites']} rewrites.",
        "",
    ]
    rows = []
    for name in policies_by_cost(document):
        t = policies[name]["totals"]
        rows.append(
            [
                f"`{name}`",
                _pct(t["token_savings_vs_full"]),
                _pct(t["input_cost_savings_vs_full"]),
                _share(t["cached_share"]),
                _share(t["prefix_rewrite_rate"]),
            ]
        )
    lines += _md_table(
        ["policy", "token savings", "input cost savings", "cached share", "steps rewriting"], rows
    )
    losers = [
        n
        for n in policies_by_cost(document)
        if (policies[n]["totals"]["input_cost_savings_vs_full"] or 0.0)
        < (policies[n]["totals"]["token_savings_vs_full"] or 0.0) - 0.05
    ]
    if losers:
        lines += [
            "",
            "Rewriting the prompt before its end breaks the cached prefix: "
            + ", ".join(f"`{n}`" for n in losers)
            + " save less on input cost than on tokens.",
        ]
    return [*lines, ""]


def _md_validation(document: Mapping[str, Any]) -> list[str]:
    lines = ["## Checks against recorded provider usage", ""]
    v, f = document["validation"]["caching"], document["fidelity"]
    if v is None and f is None:
        return [*lines, "No input run recorded provider usage; nothing to check against.", ""]
    if v is not None:
        lines.append(
            f"- Cache simulation vs recorded `cached_tokens` ({v['runs']} runs, {v['steps']:,} steps, "
            "`full`): "
            f"mean absolute error of the per-step cached share {v['mean_abs_error_cached_share']:.3f}; "
            f"total cached share simulated {_share(v['simulated_cached_share'])} vs recorded "
            f"{_share(v['recorded_cached_share'])} (ratio {v['cached_share_ratio']:.3f})."
        )
    if f is not None:
        worst = sorted(f["per_run"], key=lambda r: (abs(r["ratio"] - 1), r["run_id"]))[-1]
        lines.append(
            f"- Baseline fidelity: replayed `full` prompt tokens / recorded provider prompt tokens = "
            f"{f['ratio']:.3f} over {f['runs']} runs ({f['steps']:,} steps); farthest run "
            f"`{worst['run_id']}` at {worst['ratio']:.3f}."
        )
    return [*lines, ""]


def _md_highlights(document: Mapping[str, Any]) -> list[str]:
    runs = document["runs"]
    if not runs:
        return []
    best = [n for n in policies_by_cost(document) if n != BASELINE][:3]
    top = sorted(runs, key=lambda r: (-r["policies"][BASELINE]["input_tokens"], r["run_id"]))[:5]
    rows = [
        [f"`{r['run_id']}`", str(r["steps"]), f"{r['policies'][BASELINE]['input_tokens']:,}"]
        + [_pct(r["policies"][n]["cost_savings_vs_full"]) for n in best]
        for r in top
    ]
    lines = ["## Per-run highlights", "", "Largest runs (by `full` input tokens), cost savings:", ""]
    lines += _md_table(["run", "steps", "full tokens", *(f"`{n}`" for n in best)], rows)
    misses = sorted(
        (
            (r["policies"][n]["missed"], r["run_id"], n)
            for r in runs
            for n in best
            if r["policies"][n]["missed"]
        ),
        key=lambda x: (-x[0], x[1], x[2]),
    )[:5]
    if misses:
        lines += ["", "Most missed strings among those policies:", ""]
        for _, run_id, name in misses:
            entry = next(r for r in runs if r["run_id"] == run_id)["policies"][name]
            examples = ", ".join(f"`{s}`" for s in entry["missed_strings"][:5])
            counts = f"{entry['missed']}/{entry['salient']} ({_share(entry['miss_rate'])})"
            lines.append(f"- `{run_id}` under `{name}`: {counts}, e.g. {examples}")
    return [*lines, ""]


METHOD_NOTES = (
    "Each recorded step is replayed through `ContextManager.prepare`, the call the live agent makes, with "
    "the history of the earlier iterations (observations of read-only tools served by the dedup cache "
    "exactly as the agent's tool runner would).",
    "Prompt tokens = messages + per-message framing + tool schemas (including `context_retrieve` when a "
    "policy registers it), counted locally. Output tokens per step are the recorded completion tokens "
    "when present, else the assistant message's token count; they are the same for every policy.",
    "Prompt caching: the longest common token prefix with the previous request of the same run is cached "
    "(tool schemas first, then messages serialized as role + content + tool calls).",
    "Missed information: identifiers, paths and numbers (4+ characters, code-like) of the recorded action "
    "that first appeared in an earlier observation, are absent from the system prompt, task and tool "
    "schemas, and are absent from the prompt the policy built. Miss rate = missed / salient.",
    "Retrieval-adjusted tokens charge each step with at least one miss one `context_retrieve` round trip: "
    "the call plus the first page it would return (a lower bound: the re-sent prompt of the extra call is "
    "not charged).",
    "The hard limit is not enforced during replay; steps over it are counted (`over_hard_limit_steps`).",
    "Timings (prompt-building time per step) are machine-dependent and excluded from determinism.",
)


def render_markdown(document: Mapping[str, Any], chart: str | None = None) -> str:
    """report.md: the table, caching, checks, per-run highlights and method notes."""
    lines = _md_header(document)
    lines += ["## Policies (cheapest first)", ""]
    lines += _md_table(TABLE_HEADERS, [[f"`{r[0]}`", *r[1:]] for r in _table_rows(document)])
    lines.append("")
    if chart:
        lines += [f"![per-step prompt tokens and totals]({chart})", ""]
    lines += _md_caching(document) + _md_validation(document) + _md_highlights(document)
    summarizer = document["settings"]["summarizer"]
    summaries = (
        "Summaries use the deterministic digest (no model calls, 0 tokens)."
        if summarizer == "digest"
        else f"Summaries are made by `{summarizer}`; its input and output tokens are charged to each policy."
    )
    notes = [f"{METHOD_NOTES[0]} {summaries}", *METHOD_NOTES[1:]]
    lines += ["## Method", ""] + [f"- {note}" for note in notes] + [""]
    return "\n".join(lines)
