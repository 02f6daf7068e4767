"""The benchmark's outputs: the JSON document (schema in docs/bench-json-schema.md), report.md, the table.

Everything a report shows is derived from the JSON document, so a saved
``--json`` file can be rendered again (with its per-run detail, from the
document's ``runs`` or the JSON-lines file beside it). Timings live only under
the top-level ``"timing"`` key (:func:`strip_timing`); the rest is a pure
function of the inputs and settings, with every list and mapping sorted. The
document is folded run by run (``_record.py``, ``_aggregate.py``): the same code
builds it here from a replay in memory, in the streamed bench and in ``bench merge``.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from ._aggregate import Aggregate, Header
from ._document import SCHEMA_VERSION, TIMING_KEY, dumps, strip_timing
from ._record import record_of
from ._replay import BASELINE, BenchResult
from ._report_anatomy import md_anatomy

if TYPE_CHECKING:
    from rich.table import Table

__all__ = [
    "SCHEMA_VERSION",
    "TIMING_KEY",
    "Highlights",
    "build_document",
    "dumps",
    "longest_key",
    "policies_by_cost",
    "render_family_table",
    "render_markdown",
    "render_table",
    "step_error_counts",
    "strip_timing",
    "write_json",
]


def step_error_counts(document: Mapping[str, Any]) -> dict[str, int]:
    """Policies with step errors in a bench document, and how many (empty: none, as expected)."""
    return {
        name: entry["totals"]["step_errors"]
        for name, entry in document["policies"].items()
        if entry["totals"].get("step_errors")
    }


def build_document(
    result: BenchResult,
    paths: Sequence[str] = (),
    skipped: Sequence[Mapping[str, str]] = (),
    skipped_lines: Sequence[Mapping[str, Any]] = (),
) -> dict[str, Any]:
    """The JSON document of a benchmark result (see docs/bench-json-schema.md), with its runs.

    ``skipped``: the inputs the importers skipped (``{"path", "reason"}`` each); ``skipped_lines``:
    the lines skipped in files whose other lines were read (``SkippedLines.to_dict`` each).
    """
    header = Header.of(
        result.settings,
        result.policies,
        result.calibration,
        paths=paths,
        skipped=skipped,
        skipped_lines=skipped_lines,
    )
    aggregate = Aggregate(header)
    details = []
    for info, replay in zip(result.runs, result.replays, strict=True):
        record = record_of(info, replay, result.settings, result.calibration, detail=True)
        aggregate.add(record)
        details.append(orjson.loads(record.detail or b"{}"))
    aggregate.elapsed_seconds = result.elapsed_seconds
    return aggregate.document(runs=sorted(details, key=lambda r: str(r["run_id"])))


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
            f"Replay: {document['inputs']['run_count']} runs, {document['inputs']['step_count']:,} steps"
            f"{_uncounted_note(document['inputs'], 'counted in runs read before')}, "
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
    table.add_column("policy", no_wrap=True)
    for family, entry in run_sets(document):
        table.add_column(f"{family} ({entry['runs']})", justify="right")
    for row in _family_rows(document):
        table.add_row(*row)
    return table


def run_sets(document: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """(label, entry) of each family, then of each group (``_groups.py``): the sets of runs reported
    alike (a group's label says so: a format may name a family anything)."""
    groups = document.get("groups") or {}
    return [*document["families"].items(), *((f"{g} (group)", e) for g, e in groups.items())]


def _family_rows(document: Mapping[str, Any]) -> list[list[str]]:
    families = run_sets(document)
    rows = []
    for name in policies_by_cost(document):
        cells = [name]
        for _, entry in families:
            t = entry["policies"][name]["totals"]
            usd = f" / {_pct(t['cost_usd_savings_vs_full'])}" if t["cost_usd"] is not None else ""
            cells.append(_pct(t["cost_savings_vs_full"]) + usd)
        rows.append(cells)
    return rows


def _md_table(headers: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def _uncounted_note(inputs: Mapping[str, Any], what: str) -> str:
    """`` (N of them ...)`` when some runs' leading calls were counted in a run read before (a history
    copied into another file: ``inputs.uncounted_steps``), else nothing."""
    uncounted = inputs.get("uncounted_steps", 0)
    return f" ({uncounted:,} of them {what})" if isinstance(uncounted, int) and uncounted > 0 else ""


def _md_header(document: Mapping[str, Any]) -> list[str]:
    inputs, s = document["inputs"], document["settings"]
    formats = sorted({r["format"] for r in inputs["runs"]})
    return [
        "# Replay benchmark",
        "",
        f"{inputs['run_count']} recorded runs ({', '.join(formats) or 'none'}), "
        f"{inputs['step_count']:,} model calls"
        f"{_uncounted_note(inputs, 'copied from runs read before: replayed, not counted')}, replayed through "
        f"{len(document['policies'])} context policies. Tokens counted with "
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
    families = run_sets(document)
    headers = ["policy", *(f"{f} ({e['runs']} runs)" for f, e in families)]
    rows = [[f"`{r[0]}`", *r[1:]] for r in _family_rows(document)]
    return [
        "## Per agent family",
        "",
        "Cost savings vs `full` within each family, then each group of families (`real-sessions`: the "
        "Claude Code and Codex session logs; uncached-input-token units / USD where priced):",
        "",
        *_md_table(headers, rows),
        "",
    ]


@dataclass
class Highlights:
    """What report.md and the chart show of single runs, found in one pass over the per-run detail
    (so a detail file of any size is read line by line, never held)."""

    best: tuple[str, ...]  # the three cheapest policies but full
    largest: list[tuple[int, str, int, tuple[float | None, ...]]] = field(default_factory=list)
    misses: list[tuple[int, str, str, int, float, tuple[str, ...]]] = field(default_factory=list)
    longest: Mapping[str, Any] | None = None  # the run the chart draws: most steps, then largest

    _KEPT = 5

    @classmethod
    def of(cls, document: Mapping[str, Any], runs: Iterable[Mapping[str, Any]]) -> Highlights:
        found = cls(tuple(n for n in policies_by_cost(document) if n != BASELINE)[:3])
        for run in runs:
            found._add(run)
        found._trim()
        return found

    def _add(self, run: Mapping[str, Any]) -> None:
        policies = run["policies"]
        full = policies[BASELINE]["input_tokens"]
        savings = tuple(policies[n]["cost_savings_vs_full"] for n in self.best)
        self.largest.append((-full, run["run_id"], run["steps"], savings))
        for name in self.best:
            entry = policies[name]
            if entry["missed"]:
                examples = tuple(entry["missed_strings"][:5])
                self.misses.append(
                    (-entry["missed"], run["run_id"], name, entry["salient"], entry["miss_rate"], examples)
                )
        if self.longest is None or longest_key(run) < longest_key(self.longest):
            self.longest = run
        if len(self.largest) > 10 * self._KEPT or len(self.misses) > 10 * self._KEPT:
            self._trim()

    def _trim(self) -> None:
        self.largest = heapq.nsmallest(self._KEPT, self.largest)
        self.misses = heapq.nsmallest(self._KEPT, self.misses, key=lambda m: (m[0], m[1], m[2]))


def longest_key(run: Mapping[str, Any]) -> tuple[int, int, str]:
    """The run the chart draws comes first: the most steps, then the largest ``full`` input, then by id."""
    return -run["steps"], -run["policies"][BASELINE]["input_tokens"], run["run_id"]


def _md_highlights(highlights: Highlights) -> list[str]:
    if not highlights.largest:
        return []
    best = highlights.best
    rows = [
        [f"`{run_id}`", str(steps), f"{-negative:,}", *(_pct(v) for v in savings)]
        for negative, run_id, steps, savings in highlights.largest
    ]
    lines = ["## Per-run highlights", "", "Largest runs (by `full` input tokens), cost savings:", ""]
    lines += _md_table(["run", "steps", "full tokens", *(f"`{n}`" for n in best)], rows)
    if highlights.misses:
        lines += ["", "Most missed strings among those policies:", ""]
        for negative, run_id, name, salient, rate, examples in highlights.misses:
            shown = ", ".join(f"`{s}`" for s in examples)
            lines.append(f"- `{run_id}` under `{name}`: {-negative}/{salient} ({_share(rate)}), e.g. {shown}")
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
        "under `policies[].step_error_list` in the per-run detail (the JSON's `runs_file`, or its `runs`).",
        "",
    ]


def _md_failed_runs(document: Mapping[str, Any]) -> list[str]:
    """A warning when runs' replays raised (each left out of every total; none expected)."""
    failed = document["inputs"].get("failed", [])
    if not failed:
        return []
    listed = "; ".join(f"`{f['run_id']}`: {f['reason']}" for f in failed[:5])
    more = f"; and {len(failed) - 5} more (`inputs.failed`)" if len(failed) > 5 else ""
    return [
        f"**Failed runs**: the replay of {len(failed)} run(s) raised; they are left out of every "
        f"total: {listed}{more}.",
        "",
    ]


def render_markdown(
    document: Mapping[str, Any],
    chart: str | None = None,
    frontier: str | None = None,
    highlights: Highlights | None = None,
) -> str:
    """report.md: the table, caching, checks, per family lean and faithful, highlights, method notes.

    ``highlights``: of the document's per-run detail (default: of its ``runs``; none without them)."""
    from ._report_faithful import md_faithful
    from ._report_spread import md_spread
    from ._targets import md_targets

    if highlights is None:
        highlights = Highlights.of(document, document.get("runs", ()))
    lines = _md_header(document) + _md_routing(document) + _md_step_errors(document)
    lines += _md_failed_runs(document)
    lines += ["## Policies (cheapest first)", ""]
    lines += _md_table(TABLE_HEADERS, [[f"`{r[0]}`", *r[1:]] for r in _table_rows(document)])
    lines.append("")
    if chart:
        lines += [f"![per-step prompt tokens and totals]({chart})", ""]
    lines += md_faithful(document, frontier)
    lines += _md_caching(document) + _md_dollars(document) + _md_families(document) + md_spread(document)
    lines += md_anatomy(document, policies_by_cost(document)) + md_targets(document)
    lines += _md_recorded(document) + _md_validation(document) + _md_highlights(highlights)
    summarizer = document["settings"]["summarizer"]
    summaries = (
        "Summaries use the deterministic digest (no model calls, 0 tokens)."
        if summarizer == "digest"
        else f"Summaries are made by `{summarizer}`; its input and output tokens are charged to each policy."
    )
    notes = [f"{METHOD_NOTES[0]} {summaries}", *METHOD_NOTES[1:]]
    lines += ["## Method", ""] + [f"- {note}" for note in notes] + [""]
    return "\n".join(lines)
