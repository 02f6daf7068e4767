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

from .._providers import DEFAULT_CACHE_MODEL, ModelPrices, model_prices, price_map_source, provider_of
from .._trace import StepError
from ._calibration import token_scale
from ._losses import costlier_than_full
from ._metrics import (
    CacheValidation,
    Fidelity,
    PolicyRunMetrics,
    Totals,
    fidelity,
    percentile,
    totals,
    validate_caching,
)
from ._pricing import RunCosting, long_ttl_steps
from ._replay import ABLATIONS, BASELINE, BenchResult, RunInfo
from ._report_faithful import ruler_totals
from ._validation import (
    CalibratedFidelity,
    DollarCheck,
    Recorded,
    as_recorded,
    calibrated_fidelity,
    check_dollars,
    recorded_totals,
)

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "SCHEMA_VERSION",
    "TIMING_KEY",
    "build_document",
    "dumps",
    "policies_by_cost",
    "render_family_table",
    "render_markdown",
    "render_table",
    "step_error_counts",
    "strip_timing",
    "write_json",
]

SCHEMA_VERSION = 4
TIMING_KEY = "timing"
_MAX_MISSED_LISTED = 20
_MAX_ERRORS_LISTED = 10  # per run and policy; the count is exact


def _r(value: float) -> float:
    return round(value, 6)


def _ratio(part: float, whole: float) -> float | None:
    return _r(part / whole) if whole else None


def _usd_savings(t: Totals, full: Totals | None) -> float | None:
    if t.cost_usd is None or full is None or not full.cost_usd or full.priced_runs != t.priced_runs:
        return None
    return _r(1 - t.cost_usd / full.cost_usd)


def _totals_dict(t: Totals, full: Totals | None) -> dict[str, Any]:
    adjusted = t.retrieval_adjusted_input_tokens
    base_input = full.input_tokens if full else 0
    base_cost = full.effective_cost if full else 0.0
    return {
        "cache_write_tokens": t.cache_write_tokens,
        "calibrated_input_tokens": t.calibrated_input_tokens,
        "calibrated_cached_tokens": t.calibrated_cached_tokens,
        "cost_usd": None if t.cost_usd is None else _r(t.cost_usd),
        "cost_usd_savings_vs_full": _usd_savings(t, full),
        "priced_runs": t.priced_runs,
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
        "recoverable_missed": t.recoverable,
        "miss_rate_adjusted": _r(t.miss_rate_adjusted),
        "recovery_tokens": t.recovery_tokens,
        "word_salient": t.word_salient,
        "word_missed": t.word_missed,
        "word_miss_rate": _r(t.word_miss_rate),
        "long_runs": t.long_runs,
        "long_run_peak_tokens": t.long_run_peak_tokens,
        "long_run_peak_vs_full": _ratio(t.long_run_peak_tokens, full.long_run_peak_tokens) if full else None,
        "retrieval_adjusted_input_tokens": adjusted,
        "retrieval_adjusted_savings_vs_full": (
            _r(1 - adjusted / base_input) if adjusted is not None and base_input else None
        ),
        "over_hard_limit_steps": t.over_hard_limit_steps,
        "compactions": t.compactions,
        "dedup_hits": t.dedup_hits,
        "truncated_chars": t.truncated_chars,
        "step_errors": t.step_errors,
    } | ruler_totals(t, full)


def _caching_summary(v: CacheValidation) -> dict[str, Any]:
    return {
        "runs": v.runs,
        "steps": v.steps,
        "mean_abs_error_cached_share": _r(v.mean_abs_error),
        "simulated_cached_share": _r(v.simulated_share),
        "recorded_cached_share": _r(v.recorded_share),
        "cached_share_ratio": _r(v.share_ratio),
    }


def _validation_dict(
    v: CacheValidation | None, cache_models: set[str], per_family: Mapping[str, CacheValidation | None]
) -> dict[str, Any] | None:
    if v is None:
        return None
    return {
        **_caching_summary(v),
        "cache_models": sorted(cache_models),
        "per_family": {f: _caching_summary(c) for f, c in sorted(per_family.items()) if c is not None},
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


def _dollars_summary(v: DollarCheck) -> dict[str, Any]:
    return {
        "runs": v.runs,
        "steps": v.steps,
        "recorded_cost_usd": _r(v.recorded_usd),
        "simulated_cost_usd": _r(v.simulated_usd),
        "ratio": _r(v.ratio),
        "recorded_source": v.source,
    }


def _cost_validation_dict(
    v: DollarCheck | None, per_family: Mapping[str, DollarCheck | None]
) -> dict[str, Any] | None:
    if v is None:
        return None
    families = {f: _dollars_summary(c) for f, c in sorted(per_family.items()) if c is not None}
    return {**_dollars_summary(v), "per_family": families}


def _fidelity_dict(
    f: Fidelity | None,
    calibrated: CalibratedFidelity | None,
    per_family: Mapping[str, CalibratedFidelity | None],
) -> dict[str, Any] | None:
    if f is None:
        return None
    return {
        "runs": len(f.per_run),
        "steps": f.steps,
        "replayed_prompt_tokens": f.replayed_prompt_tokens,
        "recorded_prompt_tokens": f.recorded_prompt_tokens,
        "ratio": _r(f.ratio),
        "calibrated_mean_abs_rel_error": _r(calibrated.mean_abs_rel_error) if calibrated else None,
        "per_family": {
            name: {
                "runs": c.runs,
                "steps": c.steps,
                "calibrated_mean_abs_rel_error": _r(c.mean_abs_rel_error),
            }
            for name, c in sorted(per_family.items())
            if c is not None
        },
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


def _recorded_dict(v: Recorded | None) -> dict[str, Any] | None:
    if v is None:
        return None
    full = v.policy_usd.get(BASELINE)
    return {
        "runs": v.runs,
        "steps": v.steps,
        "prompt_tokens": v.prompt_tokens,
        "cached_tokens": v.cached_tokens,
        "cache_write_tokens": v.cache_write_tokens,
        "output_tokens": v.output_tokens,
        "cached_share": _r(v.cached_share),
        "priced_runs": v.priced_runs,
        "cost_usd": None if v.cost_usd is None else _r(v.cost_usd),
        "policies_cost_usd": {n: _r(usd) for n, usd in v.policy_usd.items()},
        "policies_cost_usd_vs_recorded": {
            n: _r(usd / v.cost_usd) for n, usd in v.policy_usd.items() if v.cost_usd
        },
        "full_cost_usd": None if full is None else _r(full),
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
        "cache_model": s.cache_model,
        "cache_model_default": DEFAULT_CACHE_MODEL,
        "price_model": s.price_model,
        "routing": s.routing,
    }


def _inputs_dict(
    result: BenchResult,
    paths: Sequence[str],
    skipped: Sequence[Mapping[str, str]],
    skipped_lines: Sequence[Mapping[str, Any]],
) -> dict[str, Any]:
    return {
        "paths": sorted(paths),
        "skipped": sorted(({"path": s["path"], "reason": s["reason"]} for s in skipped), key=_skip_key),
        "skipped_lines": sorted((dict(s) for s in skipped_lines), key=lambda s: str(s["path"])),
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
                "endpoints": r.endpoints,
                "family": r.family,
                "cache_model": r.cache_model,
                "cache_model_source": r.cache_model_source,
                "provider": r.provider,
                "token_scale": _r(r.token_scale),
                "price_model": r.price_model,
                "unrecorded_prefix_tokens": r.prefix_tokens,
                "unrecorded_prefix_source": r.prefix_source,
                "compactions_followed": r.restarts,
                "long_ttl_steps": len(long_ttl_steps(r.usage, r.cache_writes_1h)),
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


def _runs_list(
    result: BenchResult, names: Sequence[str], costing: Mapping[str, RunCosting]
) -> list[dict[str, Any]]:
    pricing = result.settings.pricing
    out = []
    for replay in result.replays:
        full = totals([replay.policies[BASELINE]], pricing, costing)
        policies = {}
        for name in names:
            metrics = replay.policies[name]
            entry = _totals_dict(totals([metrics], pricing, costing), full)
            del entry["runs"]
            entry |= _missed_lists(metrics)
            entry["step_error_list"] = [_step_error_dict(e) for e in metrics.step_errors[:_MAX_ERRORS_LISTED]]
            entry["per_step"] = {
                "prompt_tokens": [s.prompt_tokens for s in metrics.steps],
                "cached_tokens": [s.cached_tokens for s in metrics.steps],
                "cache_write_tokens": [s.cache_write_tokens for s in metrics.steps],
                "missed": [len(s.missed) for s in metrics.steps],
                "line_missed": [len(s.line_missed) for s in metrics.steps],
                "own_missed": [len(s.own_missed) for s in metrics.steps],
            }
            policies[name] = entry
        out.append({"run_id": replay.run_id, "steps": len(replay.output_tokens), "policies": policies})
    return out


def _missed_lists(metrics: PolicyRunMetrics) -> dict[str, list[str]]:
    """A run's missed strings under the salient, line and own-writing rulers (sorted, the first few)."""
    lists = {
        "missed_strings": {s for step in metrics.steps for s in step.missed},
        "line_missed_strings": {s for step in metrics.steps for s in step.line_missed},
        "own_missed_strings": {s for step in metrics.steps for s in step.own_missed},
    }
    return {key: sorted(found)[:_MAX_MISSED_LISTED] for key, found in lists.items()}


def _step_error_dict(error: StepError) -> dict[str, Any]:
    return {
        "iteration": error.iteration,
        "step": error.step,
        "phase": error.phase,
        "error": error.error,
        "message": error.message,
    }


def step_error_counts(document: Mapping[str, Any]) -> dict[str, int]:
    """Policies with step errors in a bench document, and how many (empty: none, as expected)."""
    return {
        name: entry["totals"]["step_errors"]
        for name, entry in document["policies"].items()
        if entry["totals"].get("step_errors")
    }


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


def _costings(result: BenchResult) -> dict[str, RunCosting]:
    """USD pricing of each run: its model's prices and token scale (see ``_pricing.py``)."""
    summary = result.settings.summary_model
    summary_prices = model_prices(summary) if summary else None
    return {
        r.run_id: RunCosting.of(
            r.price_model,
            scale=r.token_scale,
            recorded_model=r.model,
            usage=r.usage,
            calibration=result.calibration,
            summary_prices=summary_prices,
            writes_1h=r.cache_writes_1h,
        )
        for r in result.runs
    }


def _policy_totals(
    replays: Sequence[Mapping[str, PolicyRunMetrics]],
    names: Sequence[str],
    result: BenchResult,
    costing: Mapping[str, RunCosting],
) -> dict[str, dict[str, Any]]:
    """``{name: totals dict}`` over a subset of the runs: the one totals implementation for the
    pooled numbers and for each family."""
    pricing = result.settings.pricing
    per_policy = {n: totals([r[n] for r in replays], pricing, costing) for n in names}
    losses = costlier_than_full(replays, names, pricing, costing, baseline=BASELINE)
    return {n: _totals_dict(per_policy[n], per_policy[BASELINE]) | losses[n] for n in names}


def _families_dict(
    result: BenchResult, names: Sequence[str], costing: Mapping[str, RunCosting]
) -> dict[str, Any]:
    family = {r.run_id: r.family for r in result.runs}
    out = {}
    for name in sorted(set(family.values())):
        subset = [r for r in result.replays if family[r.run_id] == name]
        policies = _policy_totals([r.policies for r in subset], names, result, costing)
        out[name] = {
            "runs": len(subset),
            "steps": policies[BASELINE]["steps"],
            "policies": {n: {"totals": t} for n, t in policies.items()},
            "recorded": _recorded_dict(_recorded(result, costing, {r.run_id for r in subset})),
        }
    return out


def _recorded(
    result: BenchResult, costing: Mapping[str, RunCosting], run_ids: set[str] | None = None
) -> Recorded | None:
    """What the runs (``run_ids``: a subset) cost as recorded, and each policy on the same runs."""
    runs = [r for r in result.runs if run_ids is None or r.run_id in run_ids]
    replays = [r.policies for r in result.replays if run_ids is None or r.run_id in run_ids]
    return recorded_totals(
        replays,
        {r.run_id: r.usage for r in runs},
        {r.run_id: r.cache_writes_1h for r in runs},
        costing,
        frozenset(r.run_id for r in runs if as_recorded(r.model, r.price_model)),
    )


def _validation(result: BenchResult, costing: Mapping[str, RunCosting]) -> dict[str, Any]:
    """``validation`` and ``fidelity``: ``full`` against the recorded usage, pooled and per family."""
    full = {r.run_id: r.policies[BASELINE] for r in result.replays}
    usage = {r.run_id: r.usage for r in result.runs}
    writes = {r.run_id: r.cache_writes_1h for r in result.runs}
    scales = {r.run_id: token_scale(result.calibration, provider_of(r.model)) for r in result.runs}
    families = sorted({r.family for r in result.runs})

    def runs_of(family: str | None, *, priced: bool = False) -> list[RunInfo]:
        return [
            r
            for r in result.runs
            if (family is None or r.family == family) and (not priced or as_recorded(r.model, r.price_model))
        ]

    def caching(family: str | None) -> CacheValidation | None:
        return validate_caching([full[r.run_id] for r in runs_of(family)], usage)

    def dollars(family: str | None) -> DollarCheck | None:
        return check_dollars([full[r.run_id] for r in runs_of(family, priced=True)], usage, writes, costing)

    def calibrated(family: str | None) -> CalibratedFidelity | None:
        return calibrated_fidelity([full[r.run_id] for r in runs_of(family)], usage, scales)

    pooled = caching(None)
    validated = {v.run_id for v in pooled.per_run} if pooled else set()
    models = {r.cache_model for r in result.runs if r.run_id in validated}
    return {
        "validation": {
            "caching": _validation_dict(pooled, models, {f: caching(f) for f in families}),
            "cost_usd": _cost_validation_dict(dollars(None), {f: dollars(f) for f in families}),
        },
        "fidelity": _fidelity_dict(
            fidelity(list(full.values()), usage), calibrated(None), {f: calibrated(f) for f in families}
        ),
    }


def _calibration_dict(result: BenchResult) -> dict[str, Any]:
    measured = {
        p: {
            "runs": c.runs,
            "steps": c.steps,
            "replayed_prompt_tokens": c.replayed_prompt_tokens,
            "recorded_prompt_tokens": c.recorded_prompt_tokens,
            "factor": _r(c.factor),
            "measured": True,
            "fit": c.fit,
            "prefix_runs": c.prefix_runs,
        }
        for p, c in result.calibration.items()
    }
    unmeasured = {r.provider for r in result.runs if r.provider and r.provider not in measured}
    for provider in unmeasured:
        measured[provider] = {
            "runs": 0,
            "steps": 0,
            "replayed_prompt_tokens": 0,
            "recorded_prompt_tokens": 0,
            "factor": 1.0,
            "measured": False,
            "fit": None,
            "prefix_runs": 0,
        }
    return dict(sorted(measured.items()))


def _prices_dict(prices: ModelPrices) -> dict[str, Any]:
    return {
        "input": prices.input,
        "output": prices.output,
        "cache_read": prices.cache_read,
        "cache_write": prices.cache_write,
        "cache_write_1h": prices.write_1h,
    }


def _pricing_dict(result: BenchResult) -> dict[str, Any]:
    s = result.settings
    keys = sorted({r.price_model for r in result.runs if r.price_model})
    summary = model_prices(s.summary_model) if s.summary_model else None
    return {
        "source": price_map_source(),
        "unit": "USD per token",
        "price_model": s.price_model,
        "priced_runs": sum(1 for r in result.runs if r.price_model),
        "unpriced_runs": [r.run_id for r in result.runs if not r.price_model],
        "models": {k: _prices_dict(p) for k in keys if (p := model_prices(k)) is not None},
        "summary_model": None if summary is None else summary.model,
        "summary_model_priced": None if not s.summary_model else summary is not None,
    }


def build_document(
    result: BenchResult,
    paths: Sequence[str] = (),
    skipped: Sequence[Mapping[str, str]] = (),
    skipped_lines: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The JSON document of a benchmark result (see docs/bench-json-schema.md).

    ``skipped``: the inputs the importers skipped (``{"path", "reason"}`` each); ``skipped_lines``:
    the lines skipped in files whose other lines were read (``SkippedLines.to_dict`` each).
    """
    names = sorted(result.policies)
    costing = _costings(result)
    pooled = _policy_totals([r.policies for r in result.replays], names, result, costing)
    return {
        "schema_version": SCHEMA_VERSION,
        "generator": "tiered-agent bench",
        "inputs": _inputs_dict(result, paths, skipped, skipped_lines),
        "settings": _settings_dict(result),
        "calibration": _calibration_dict(result),
        "pricing": _pricing_dict(result),
        "policies": {n: _policy_meta(n, result) | {"totals": pooled[n]} for n in names},
        "families": _families_dict(result, names, costing),
        "recorded": _recorded_dict(_recorded(result, costing)),
        "runs": _runs_list(result, names, costing),
        **_validation(result, costing),
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


def _usd(value: float | None, *, compact: bool = False) -> str:
    if value is None:
        return "n/a"
    if compact and abs(value) >= 1000:
        return "$" + _compact(value)
    return f"${value:,.2f}"


def _compact(value: float) -> str:
    for limit, suffix in ((1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(value) >= limit:
            return f"{value / limit:.2f}{suffix}"
    return f"{value:.0f}"


def _recorded_row(document: Mapping[str, Any], compact: bool) -> list[str]:
    """The ``recorded`` row: what the runs with recorded usage cost as billed (its USD covers only those)."""
    recorded = document.get("recorded")
    if not recorded or recorded["cost_usd"] is None:
        return []
    cells = ["n/a"] * len(TABLE_HEADERS)
    cells[0] = "recorded" if compact else "recorded (as billed)"
    cells[TABLE_HEADERS.index("cached share")] = _share(recorded["cached_share"])
    cells[TABLE_HEADERS.index("cost USD")] = _usd(recorded["cost_usd"], compact=compact)
    return cells


def _table_rows(document: Mapping[str, Any], *, compact: bool = False) -> list[list[str]]:
    timing = document.get(TIMING_KEY, {}).get("policies", {})
    number = _compact if compact else (lambda v: f"{v:,.0f}")
    rows = [row for row in [_recorded_row(document, compact)] if row]
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
                _share(t["line_miss_rate"]),
                _share(t["own_miss_rate"]),
                _pct(t["retrieval_adjusted_savings_vs_full"]),
                f"{ms['build_ms_median']:.2f}/{ms['build_ms_p99']:.1f}" if ms else "n/a",
                _usd(t["cost_usd"], compact=compact),
                _pct(t["cost_usd_savings_vs_full"]),
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
    "line miss",
    "own miss",
    "savings with retrieval",
    "build ms p50/p99",
    "cost USD",
    "USD savings",
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
    "line",
    "own",
    "w/ retr.",
    "ms p50/p99",
    "USD",
    "USD saved",
)


def render_table(document: Mapping[str, Any]) -> Table:
    """The policies as a rich table, cheapest first (rich is imported here, not at module import)."""
    from rich.table import Table

    s = document["settings"]
    table = Table(
        title=(
            f"Replay: {document['inputs']['run_count']} runs, {document['inputs']['step_count']:,} steps, "
            f"{s['tokenizer']}, nominal window {s['context_window']:,}, cache model {s['cache_model']}"
        ),
        caption=(
            f"savings vs full; cost: cached input {s['cache_discount']}x, output {s['output_price_ratio']}x "
            f"the input price; miss: salient strings hidden, line: without their output line, own: the "
            f"agent's own writing (docs/rulers.md); {_usd_caption(document)}"
        ),
        pad_edge=False,
    )
    for index, header in enumerate(_SHORT_HEADERS):
        table.add_column(header, justify="left" if index == 0 else "right", no_wrap=index == 0)
    for row in _table_rows(document, compact=True):
        table.add_row(*row)
    return table


def _usd_caption(document: Mapping[str, Any]) -> str:
    pricing, inputs = document["pricing"], document["inputs"]
    if not pricing["priced_runs"]:
        return "USD: no run priced (--price-model)"
    model = pricing["price_model"] or "each run's recorded model"
    return f"USD: {pricing['priced_runs']}/{inputs['run_count']} runs priced as {model}, calibrated tokens"


def render_family_table(document: Mapping[str, Any]) -> Table:
    """Cost savings vs ``full`` per policy and agent family (units, and USD where priced)."""
    from rich.table import Table

    table = Table(title="Per agent family: cost savings vs full (units / USD)", pad_edge=False)
    families = document["families"]
    table.add_column("policy", no_wrap=True)
    for family, entry in families.items():
        table.add_column(f"{family} ({entry['runs']})", justify="right")
    for row in _family_rows(document):
        table.add_row(*row)
    return table


def _family_rows(document: Mapping[str, Any]) -> list[list[str]]:
    families = document["families"]
    rows = []
    for name in policies_by_cost(document):
        cells = [name]
        for entry in families.values():
            t = entry["policies"][name]["totals"]
            usd = f" / {_pct(t['cost_usd_savings_vs_full'])}" if t["cost_usd"] is not None else ""
            cells.append(_pct(t["cost_savings_vs_full"]) + usd)
        rows.append(cells)
    return rows


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
        f"{s['cache_discount']}x, output tokens at {s['output_price_ratio']}x, tokens written to the cache "
        "at the cache model's write premium. "
        f"Cache model: `{s['cache_model']}`"
        + (
            f" (each run's own model; unknown models: `{s['cache_model_default']}`)"
            if s["cache_model"] == "auto"
            else ""
        )
        + f". {_usd_caption(document)} (see Dollars).",
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
    cost = document["validation"]["cost_usd"]
    if v is None and f is None:
        return [*lines, "No input run recorded provider usage; nothing to check against.", ""]
    if v is not None:
        models = ", ".join(f"`{m}`" for m in v["cache_models"])
        lines.append(
            f"- Cache simulation ({models}) vs recorded `cached_tokens` ({v['runs']} runs, "
            f"{v['steps']:,} steps, `full`): "
            f"mean absolute error of the per-step cached share {v['mean_abs_error_cached_share']:.3f}; "
            f"total cached share simulated {_share(v['simulated_cached_share'])} vs recorded "
            f"{_share(v['recorded_cached_share'])} (ratio {v['cached_share_ratio']:.3f})."
        )
    if f is not None:
        worst = sorted(f["per_run"], key=lambda r: (abs(r["ratio"] - 1), r["run_id"]))[-1]
        calibrated = f["calibrated_mean_abs_rel_error"]
        lines.append(
            "- Baseline fidelity: replayed `full` prompt tokens (with each run's unrecorded prefix) / "
            f"recorded provider prompt tokens = {f['ratio']:.3f} over {f['runs']} runs ({f['steps']:,} "
            f"steps); farthest run `{worst['run_id']}` at {worst['ratio']:.3f}. Calibrated (x each "
            f"provider's scale), the per-step prompt is off by {calibrated * 100:.1f}% on average."
        )
    if cost is not None:
        lines.append(
            f"- Dollars: `full` priced as the recorded model ({cost['runs']} runs, {cost['steps']:,} steps) "
            f"{_usd(cost['simulated_cost_usd'])} vs the recorded usage's {_usd(cost['recorded_cost_usd'])} "
            f"({cost['recorded_source']}; ratio {cost['ratio']:.3f})."
        )
    return [*lines, "", *_md_validation_families(document), ""]


def _md_validation_families(document: Mapping[str, Any]) -> list[str]:
    """Per agent family: where the simulation can be trusted."""
    caching = (document["validation"]["caching"] or {}).get("per_family", {})
    cost = (document["validation"]["cost_usd"] or {}).get("per_family", {})
    sizes = (document["fidelity"] or {}).get("per_family", {})
    rows = []
    for family in sorted(set(caching) | set(cost) | set(sizes)):
        c, d, z = caching.get(family), cost.get(family), sizes.get(family)
        rows.append(
            [
                family,
                str(c["steps"]) if c else "n/a",
                f"{c['mean_abs_error_cached_share']:.3f}" if c else "n/a",
                f"{_share(c['simulated_cached_share'])} vs {_share(c['recorded_cached_share'])}"
                if c
                else "n/a",
                f"{_usd(d['simulated_cost_usd'])} vs {_usd(d['recorded_cost_usd'])} ({d['ratio']:.3f}x)"
                if d
                else "n/a",
                f"{z['calibrated_mean_abs_rel_error'] * 100:.1f}%" if z else "n/a",
            ]
        )
    if not rows:
        return []
    headers = [
        "family",
        "steps",
        "cached-share MAE",
        "cached share sim vs rec",
        "`full` USD vs recorded",
        "prompt error",
    ]
    return ["Per agent family (`full` against the recorded usage):", "", *_md_table(headers, rows)]


def _md_recorded(document: Mapping[str, Any]) -> list[str]:
    """What the runs cost as recorded, and each policy on the same runs."""
    recorded = document.get("recorded")
    if not recorded or recorded["cost_usd"] is None:
        return []
    lines = [
        "## As recorded",
        "",
        f"{recorded['priced_runs']} of the {recorded['runs']} runs with recorded usage are priced as their "
        f"recorded model: they cost {_usd(recorded['cost_usd'])} as recorded ({recorded['steps']:,} calls, "
        f"{recorded['prompt_tokens']:,} provider prompt tokens, {_share(recorded['cached_share'])} read from "
        "the cache). Each policy replayed over the same runs:",
        "",
    ]
    rows = [
        [f"`{name}`", _usd(usd), f"{recorded['policies_cost_usd_vs_recorded'].get(name, 0.0):.3f}x"]
        for name, usd in sorted(recorded["policies_cost_usd"].items(), key=lambda x: (x[1], x[0]))
    ]
    return [*lines, *_md_table(["policy", "cost USD", "vs recorded"], rows), ""]


def _md_dollars(document: Mapping[str, Any]) -> list[str]:
    pricing, calibration = document["pricing"], document["calibration"]
    lines = ["## Dollars", ""]
    if not pricing["priced_runs"]:
        lines += [
            "No run could be priced: no recorded model is in litellm's price map (use --price-model).",
            "",
        ]
        return lines
    lines.append(
        f"Prices: {pricing['source']}, USD per 1M tokens. {_usd_caption(document)}. A policy's `cost USD` "
        "sums the priced runs; every policy is priced over the same runs."
    )
    if pricing["unpriced_runs"]:
        shown = ", ".join(f"`{r}`" for r in pricing["unpriced_runs"][:8])
        more = len(pricing["unpriced_runs"]) - 8
        lines.append(
            f"Not priced ({len(pricing['unpriced_runs'])} runs: no recorded model, or one litellm does not "
            f"price): {shown}{f' and {more} more' if more > 0 else ''}."
        )
    rows = [
        [f"`{k}`", *(f"{p[x] * 1e6:.3f}" for x in ("input", "output", "cache_read", "cache_write"))]
        for k, p in pricing["models"].items()
    ]
    lines += ["", *_md_table(["model", "input", "output", "cache read", "cache write"], rows), ""]
    lines.append(
        "Calibrated tokens: the dollar figures count each replayed token as `factor` provider tokens "
        "(recorded / replayed prompt tokens of that provider's runs with recorded usage); every token "
        "column elsewhere is replayed (uncalibrated) tokens. Factor 1.0 where nothing was measured."
    )
    rows = [
        [f"`{p}`", str(c["runs"]), f"{c['steps']:,}", f"{c['factor']:.4f}", "yes" if c["measured"] else "no"]
        for p, c in calibration.items()
    ]
    lines += ["", *_md_table(["provider", "runs", "steps", "factor", "measured"], rows), ""]
    return lines


def _md_families(document: Mapping[str, Any]) -> list[str]:
    families = document["families"]
    headers = ["policy", *(f"{f} ({e['runs']} runs)" for f, e in families.items())]
    rows = [[f"`{r[0]}`", *r[1:]] for r in _family_rows(document)]
    return [
        "## Per agent family",
        "",
        "Cost savings vs `full` within each family (uncached-input-token units / USD where priced):",
        "",
        *_md_table(headers, rows),
        "",
    ]


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


def _md_routing(document: Mapping[str, Any]) -> list[str]:
    """One sentence when the cache accounting pins each run to its first endpoint (``--routing sticky``)."""
    if document["settings"].get("routing") != "sticky":
        return []
    routed = sum(1 for r in document["inputs"]["runs"] if r["endpoints"] > 1)
    return [
        "Routing: `sticky`: every call of a run is served by the cache of the endpoint that served its first "
        f"call (what pinning the endpoint saves; runs that recorded more than one endpoint: {routed}).",
        "",
    ]


METHOD_NOTES = (
    "Each recorded step is replayed through `ContextManager.prepare`, the call the live agent makes, with "
    "the history of the earlier iterations (observations of read-only tools served by the dedup cache "
    "exactly as the agent's tool runner would).",
    "Prompt tokens = messages + per-message framing + tool schemas (including `context_retrieve` when a "
    "policy registers it), counted locally. Output tokens per step are the recorded completion tokens "
    "when present, else the assistant message's token count; they are the same for every policy.",
    "Prompt caching: each request (tool schemas first, then messages serialized as role + content + tool "
    "calls) is compared with the previous request of the same run served by the same endpoint (where a "
    "router recorded which served each step; else the previous request); the cache model's rules decide "
    "what is billed as read (and, for explicit caches, written): `ideal` every common token of the "
    "previous request; `gemini` whole 2,048-token blocks, minus an expected 3.5% of missed hits; `openai` "
    "from 1,024 tokens in 128-token "
    "increments; `anthropic` up to breakpoints on the system prompt and the newest message, writes at "
    "1.25x. Sizes are in provider tokens (replayed tokens x the calibration factor).",
    "Missed information, by four rulers (exact definitions: docs/rulers.md). Salient: identifiers, paths "
    "and numbers (4+ characters, code-like) of the recorded action that first appeared in an earlier "
    "observation, are absent from the system prompt, task and tool schemas, and are absent from the "
    "prompt the policy built. Word: the same check with every word of 4+ characters. Line: the names and "
    "values (3+ characters, not ordinary words) the action took from an earlier observation, counted as "
    "shown only where the prompt holds them with their line of that output (a mention in the agent's "
    "text, a command or a note's summary line is not the line). Own: the names and values the agent "
    "wrote first itself (edits, scripts, commands), shown only with the line that held them. Miss rate "
    "= missed / needed, per ruler; the worst ruler is the largest of the four.",
    "Retrieval-adjusted tokens charge each step with at least one miss one `context_retrieve` round trip: "
    "the call plus the first page it would return (a lower bound: the re-sent prompt of the extra call is "
    "not charged).",
    "Retrieval turns: a missed string (salient, line or own) is recoverable when it lies in an earlier "
    "message whose exact retrieval call the prompt shows (`context_retrieve(tool_call_id=...)` for that "
    "output, `context_retrieve(iteration=...)` for its iteration). Each step with a recoverable miss "
    "costs one extra model turn: its prompt again, at the cache price the step's own request just "
    "filled, plus 20 tokens per call and what each call returns (at most one page), uncached; "
    "`input_cost_adjusted` adds those turns to the input cost. The adjusted miss rates count only the "
    "misses no shown call recovers.",
    "The hard limit is not enforced during replay; steps over it are counted (`over_hard_limit_steps`).",
    "Timings (prompt-building time per step) are machine-dependent and excluded from determinism.",
)


def _md_step_errors(document: Mapping[str, Any]) -> list[str]:
    """A warning when context steps raised (each was skipped for that prompt; 0 expected)."""
    errors = step_error_counts(document)
    if not errors:
        return []
    counts = ", ".join(f"`{name}` {count}" for name, count in errors.items())
    return [
        f"**Step errors**: {sum(errors.values())} ({counts}). Each failing step was skipped for that "
        "prompt (the numbers are those of the prompts built without it); the errors are listed per run "
        "under `runs[].policies[].step_error_list` in the JSON.",
        "",
    ]


def render_markdown(
    document: Mapping[str, Any], chart: str | None = None, frontier: str | None = None
) -> str:
    """report.md: the table, caching, checks, per family lean and faithful, highlights, method notes."""
    from ._report_faithful import md_faithful

    lines = _md_header(document) + _md_routing(document) + _md_step_errors(document)
    lines += ["## Policies (cheapest first)", ""]
    lines += _md_table(TABLE_HEADERS, [[f"`{r[0]}`", *r[1:]] for r in _table_rows(document)])
    lines.append("")
    if chart:
        lines += [f"![per-step prompt tokens and totals]({chart})", ""]
    lines += md_faithful(document, frontier)
    lines += _md_caching(document) + _md_dollars(document) + _md_families(document)
    lines += _md_recorded(document) + _md_validation(document) + _md_highlights(document)
    summarizer = document["settings"]["summarizer"]
    summaries = (
        "Summaries use the deterministic digest (no model calls, 0 tokens)."
        if summarizer == "digest"
        else f"Summaries are made by `{summarizer}`; its input and output tokens are charged to each policy."
    )
    notes = [f"{METHOD_NOTES[0]} {summaries}", *METHOD_NOTES[1:]]
    lines += ["## Method", ""] + [f"- {note}" for note in notes] + [""]
    return "\n".join(lines)
