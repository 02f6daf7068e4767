"""The bench document's parts as JSON (schema: docs/bench-json-schema.md), one function per part.

Each takes typed values (totals, checks, settings) and returns the plain dict the document
holds: rounded to 6 decimals, keys and lists in a fixed order. The run-by-run records
(``_record.py``) and the folded totals (``_aggregate.py``) both go through these, so a run's
entry and the pooled totals are formatted by the same code wherever they are computed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .._providers import DEFAULT_CACHE_MODEL, ModelPrices
from .._trace import StepError
from ..context._policy import Policy
from ._anatomy import Anatomy, anatomy_dict
from ._calibration import ProviderCalibration
from ._groups import groups_of
from ._metrics import PolicyRunMetrics, Totals
from ._pricing import long_ttl_steps
from ._replay import ABLATIONS, BASELINE, ReplaySettings, RunInfo
from ._report_faithful import ruler_totals
from ._validation import CalibratedFidelity, DollarCheck, Recorded

__all__ = [
    "SCHEMA_VERSION",
    "TIMING_KEY",
    "caching_dict",
    "caching_entry",
    "calibration_entry",
    "cost_validation_dict",
    "dumps",
    "fidelity_dict",
    "fidelity_entry",
    "inputs_entry",
    "policy_meta",
    "prices_dict",
    "recorded_dict",
    "rounded",
    "run_detail",
    "settings_dict",
    "strip_timing",
    "totals_dict",
    "unmeasured_entry",
]

SCHEMA_VERSION = 4
TIMING_KEY = "timing"
_MAX_MISSED_LISTED = 20
_MAX_ERRORS_LISTED = 10  # per run and policy; the count is exact


def rounded(value: float) -> float:
    """A float as the document holds it (6 decimals)."""
    return round(value, 6)


def _ratio(part: float, whole: float) -> float | None:
    return rounded(part / whole) if whole else None


def _usd_savings(t: Totals, full: Totals | None) -> float | None:
    if t.cost_usd is None or full is None or not full.cost_usd or full.priced_runs != t.priced_runs:
        return None
    return rounded(1 - t.cost_usd / full.cost_usd)


def totals_dict(t: Totals, full: Totals | None) -> dict[str, Any]:
    """A policy's totals (over all runs, a family or one run) next to ``full``'s on the same runs."""
    adjusted = t.retrieval_adjusted_input_tokens
    base_input = full.input_tokens if full else 0
    base_cost = full.effective_cost if full else 0.0
    return {
        "cache_write_tokens": t.cache_write_tokens,
        "calibrated_input_tokens": t.calibrated_input_tokens,
        "calibrated_cached_tokens": t.calibrated_cached_tokens,
        "cost_usd": None if t.cost_usd is None else rounded(t.cost_usd),
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
        "cached_share": rounded(t.cached_share),
        "output_tokens": t.output_tokens,
        "effective_cost": rounded(t.effective_cost),
        "input_cost": rounded(t.input_cost),
        "input_cost_savings_vs_full": rounded(1 - t.input_cost / full.input_cost)
        if full and full.input_cost
        else None,
        "prefix_rewrites": t.prefix_rewrites,
        "prefix_rewrite_rate": rounded(t.rewrite_rate),
        "cost_vs_full": _ratio(t.effective_cost, base_cost),
        "token_savings_vs_full": rounded(1 - t.input_tokens / base_input) if base_input else None,
        "cost_savings_vs_full": rounded(1 - t.effective_cost / base_cost) if base_cost else None,
        "salient": t.salient,
        "missed": t.missed,
        "miss_rate": rounded(t.miss_rate),
        "steps_with_miss": t.steps_with_miss,
        "retrieval_tokens": t.retrieval_tokens,
        "recoverable_missed": t.recoverable,
        "miss_rate_adjusted": rounded(t.miss_rate_adjusted),
        "recovery_tokens": t.recovery_tokens,
        "word_salient": t.word_salient,
        "word_missed": t.word_missed,
        "word_miss_rate": rounded(t.word_miss_rate),
        "long_runs": t.long_runs,
        "long_run_peak_tokens": t.long_run_peak_tokens,
        "long_run_peak_vs_full": _ratio(t.long_run_peak_tokens, full.long_run_peak_tokens) if full else None,
        "retrieval_adjusted_input_tokens": adjusted,
        "retrieval_adjusted_savings_vs_full": (
            rounded(1 - adjusted / base_input) if adjusted is not None and base_input else None
        ),
        "over_hard_limit_steps": t.over_hard_limit_steps,
        "compactions": t.compactions,
        "dedup_hits": t.dedup_hits,
        "truncated_chars": t.truncated_chars,
        "step_errors": t.step_errors,
    } | ruler_totals(t, full)


# --------------------------------------------------------------------------- checks
def caching_dict(runs: int, steps: int, error: float, simulated: float, recorded: float) -> dict[str, Any]:
    """The cache simulation against the recorded cache hits (pooled, a family, or one run)."""
    return {
        "runs": runs,
        "steps": steps,
        "mean_abs_error_cached_share": rounded(error),
        "simulated_cached_share": rounded(simulated),
        "recorded_cached_share": rounded(recorded),
        "cached_share_ratio": rounded(simulated / recorded if recorded else 0.0),
    }


def _dollars_summary(v: DollarCheck) -> dict[str, Any]:
    return {
        "runs": v.runs,
        "steps": v.steps,
        "recorded_cost_usd": rounded(v.recorded_usd),
        "simulated_cost_usd": rounded(v.simulated_usd),
        "ratio": rounded(v.ratio),
        "recorded_source": v.source,
    }


def cost_validation_dict(
    v: DollarCheck | None, per_family: Mapping[str, DollarCheck | None]
) -> dict[str, Any] | None:
    if v is None:
        return None
    families = {f: _dollars_summary(c) for f, c in sorted(per_family.items()) if c is not None}
    return {**_dollars_summary(v), "per_family": families}


def fidelity_dict(
    pooled: tuple[int, int, int, int] | None,
    calibrated: CalibratedFidelity | None,
    per_family: Mapping[str, CalibratedFidelity | None],
    per_run: Sequence[Mapping[str, Any]],
) -> dict[str, Any] | None:
    """``pooled``: (runs, steps, replayed tokens, recorded tokens) of ``full`` on the steps with
    recorded usage; ``per_run``: each run's entry, sorted by run id."""
    if pooled is None:
        return None
    runs, steps, replayed, recorded = pooled
    return {
        "runs": runs,
        "steps": steps,
        "replayed_prompt_tokens": replayed,
        "recorded_prompt_tokens": recorded,
        "ratio": rounded(replayed / recorded),
        "calibrated_mean_abs_rel_error": rounded(calibrated.mean_abs_rel_error) if calibrated else None,
        "per_family": {
            name: {
                "runs": c.runs,
                "steps": c.steps,
                "calibrated_mean_abs_rel_error": rounded(c.mean_abs_rel_error),
            }
            for name, c in sorted(per_family.items())
            if c is not None
        },
        "per_run": list(per_run),
    }


def fidelity_entry(run_id: str, steps: int, replayed: int, recorded: int) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "steps": steps,
        "replayed_prompt_tokens": replayed,
        "recorded_prompt_tokens": recorded,
        "ratio": rounded(replayed / recorded),
    }


def caching_entry(run_id: str, steps: int, error: float, simulated: float, recorded: float) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "steps": steps,
        "mean_abs_error_cached_share": rounded(error),
        "simulated_cached_share": rounded(simulated),
        "recorded_cached_share": rounded(recorded),
    }


def recorded_dict(v: Recorded | None) -> dict[str, Any] | None:
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
        "cached_share": rounded(v.cached_share),
        "priced_runs": v.priced_runs,
        "cost_usd": None if v.cost_usd is None else rounded(v.cost_usd),
        "policies_cost_usd": {n: rounded(usd) for n, usd in v.policy_usd.items()},
        "policies_cost_usd_vs_recorded": {
            n: rounded(usd / v.cost_usd) for n, usd in v.policy_usd.items() if v.cost_usd
        },
        "full_cost_usd": None if full is None else rounded(full),
    }


# --------------------------------------------------------------------------- what was replayed, and how
def settings_dict(s: ReplaySettings) -> dict[str, Any]:
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


def inputs_entry(r: RunInfo) -> dict[str, Any]:
    """A run's entry in ``inputs.runs``: where it comes from and how it was replayed and priced."""
    return {
        "run_id": r.run_id,
        "source": r.source,
        "format": r.format,
        "model": r.model,
        "steps": r.steps,
        "uncounted_steps": r.uncounted_steps,
        "recorded_usage": r.has_usage,
        "endpoints": r.endpoints,
        "family": r.family,
        "groups": list(groups_of(r.format)),
        "cache_model": r.cache_model,
        "cache_model_source": r.cache_model_source,
        "provider": r.provider,
        "token_scale": rounded(r.token_scale),
        "price_model": r.price_model,
        "unrecorded_prefix_tokens": r.prefix_tokens,
        "unrecorded_prefix_source": r.prefix_source,
        "compactions_followed": r.restarts,
        "long_ttl_steps": len(long_ttl_steps(r.usage, r.cache_writes_1h)),
    }


def policy_meta(name: str, config: Policy) -> dict[str, Any]:
    """A policy's configuration, what it is an ablation of, and whether it registers retrieval."""
    base, _, ablation = name.partition(":")
    return {
        "config": config.to_dict(),
        "ablation_of": base if ablation in ABLATIONS else None,
        "retrieval_active": config.retrieval_active,
    }


def calibration_entry(c: ProviderCalibration) -> dict[str, Any]:
    """A provider's measured calibration."""
    return {
        "runs": c.runs,
        "steps": c.steps,
        "replayed_prompt_tokens": c.replayed_prompt_tokens,
        "recorded_prompt_tokens": c.recorded_prompt_tokens,
        "factor": rounded(c.factor),
        "measured": True,
        "fit": c.fit,
        "prefix_runs": c.prefix_runs,
    }


def unmeasured_entry() -> dict[str, Any]:
    """The calibration of a provider runs are scaled to that no run measured (factor 1)."""
    return {
        "runs": 0,
        "steps": 0,
        "replayed_prompt_tokens": 0,
        "recorded_prompt_tokens": 0,
        "factor": 1.0,
        "measured": False,
        "fit": None,
        "prefix_runs": 0,
    }


def prices_dict(prices: ModelPrices) -> dict[str, Any]:
    return {
        "input": prices.input,
        "output": prices.output,
        "cache_read": prices.cache_read,
        "cache_write": prices.cache_write,
        "cache_write_1h": prices.write_1h,
    }


# --------------------------------------------------------------------------- one run in detail
def run_detail(
    run_id: str,
    steps: int,
    per_policy: Mapping[str, tuple[PolicyRunMetrics, Totals]],
    anatomy: Anatomy | None = None,
    uncounted: int = 0,
) -> dict[str, Any]:
    """A run's entry in ``runs``: per policy its totals (without ``runs``), the strings it missed
    and its per-step series (of its counted steps: ``uncounted`` leading ones have none);
    ``full``'s cost anatomy (``_anatomy.py``). ``per_policy``: name -> (metrics, totals of this run)."""
    full = per_policy[BASELINE][1]
    policies = {}
    for name in sorted(per_policy):
        metrics, t = per_policy[name]
        entry = totals_dict(t, full)
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
    totals = {name: t for name, (_, t) in per_policy.items()}
    return {
        "run_id": run_id,
        "steps": steps,
        "uncounted_steps": uncounted,
        "policies": policies,
        "anatomy": anatomy_dict(anatomy, totals, BASELINE),
    }


def _missed_lists(metrics: PolicyRunMetrics) -> dict[str, list[str]]:
    """A run's missed strings under the salient, line and own-writing rulers (sorted, the first few)."""
    lists = {
        "missed_strings": {s for step in metrics.steps for s in step.missed},
        "line_missed_strings": {s for step in metrics.steps for s in step.line_missed},
        "own_missed_strings": {s for step in metrics.steps for s in step.own_missed},
    }
    return {key: sorted(found)[:_MAX_MISSED_LISTED] for key, found in lists.items()}


def _step_error_dict(error: StepError) -> dict[str, Any]:
    """A context step that raised and was skipped for one prompt (``runs[].policies[].step_error_list``)."""
    return {
        "iteration": error.iteration,
        "step": error.step,
        "phase": error.phase,
        "error": error.error,
        "message": error.message,
    }


# --------------------------------------------------------------------------- the file
def strip_timing(document: Mapping[str, Any]) -> dict[str, Any]:
    """The document without its timing fields (what determinism is checked on)."""
    return {k: v for k, v in document.items() if k != TIMING_KEY}


def dumps(document: Mapping[str, Any]) -> bytes:
    """The document as the bench writes it: keys sorted, indented by two spaces, a final newline."""
    return orjson.dumps(document, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n"
