"""Print the README's results tables (Markdown) from a bench JSON: every preset on every ruler.

One table for all runs, then (``--families``) one per agent family and one per group of families
(``real-sessions``: the Claude Code and Codex session logs; ``tiered_agent/bench/_groups.py``):
tokens, input cost (with the retrieval turns a
recoverable miss costs) and dollars saved against ``full``; the share of what the next action used
that the prompt hid, by each ruler (salient, word, line, own writing: docs/rulers.md); the runs
that cost more than ``full`` (how many, and by how much the worst); and the dollars (input cost) saved
over the reach, the share of ``full``'s cost that lies in re-sent history (docs/results.md, "What a
policy can reach"). Then ``full``'s cost anatomy: all runs, and with ``--families`` each family and
group, and ``tiered``'s figures with their 95% intervals over runs (``interval_95``); last, issue 18's
targets checked on the sets of runs it names, and whether any preset is both cheaper and at most as lossy
on every ruler in any set (``tiered_agent/bench/_targets.py``).

Usage: ``python scripts/results_table.py bench-out/bench.json [--families]``
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import orjson

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # this tree's tiered_agent, not an installed one

from tiered_agent.bench._report_anatomy import ANATOMY_HEADERS
from tiered_agent.bench._report_spread import SPREAD_HEADERS, spread_rows
from tiered_agent.bench._targets import dominance_line, targets_dict, targets_lines

ORDER = ("tiered", "kb-labs-adr", "adk-compaction", "adk-code", "codex", "anthropic-clear", "masking", "full")
COLUMNS = ("policy", "tokens", "input cost (w/ retrieval)", "USD", "salient", "word", "line", "own")
HEADER = "\n".join(
    [
        "| " + " | ".join((*COLUMNS, "costlier than full", "of reach: USD (input cost)")) + " |",
        "| " + " | ".join(["---"] * (len(COLUMNS) + 2)) + " |",
    ]
)


def percent(value: Any, signed: bool = True) -> str:
    if not isinstance(value, int | float):
        return "n/a"
    text = f"{value * 100:+.1f}%" if signed else f"{value * 100:.1f}%"
    return text.replace("-", "−")


def row(name: str, totals: Mapping[str, Any], reach: Mapping[str, Any] | None = None) -> str:
    label = f"**`{name}`**" if name == "tiered" else f"`{name}`"
    costlier = totals.get("runs_costlier_than_full") or 0
    worst = f" (worst {percent(totals.get('worst_excess_vs_full'))})" if costlier else ""
    cells = [
        label,
        percent(totals.get("token_savings_vs_full")),
        f"{percent(totals.get('input_cost_savings_vs_full'))} "
        f"({percent(totals.get('input_cost_adjusted_savings_vs_full'))})",
        percent(totals.get("cost_usd_savings_vs_full")) if totals.get("priced_runs") else "n/a",
        percent(totals.get("miss_rate"), signed=False),
        percent(totals.get("word_miss_rate"), signed=False),
        percent(totals.get("line_miss_rate"), signed=False),
        percent(totals.get("own_miss_rate"), signed=False),
        f"{costlier} of {totals.get('runs', 0)}{worst}",
        f"{percent((reach or {}).get('usd'))} ({percent((reach or {}).get('input_cost'))})",
    ]
    return "| " + " | ".join(cells) + " |"


def table(policies: Mapping[str, Any], anatomy: Mapping[str, Any] | None = None) -> str:
    names = [n for n in ORDER if n in policies]
    reach = (anatomy or {}).get("saving_over_reach") or {}
    return "\n".join([HEADER, *(row(n, policies[n]["totals"], reach.get(n)) for n in names)])


ANATOMY_COLUMNS = ("family (runs)", *ANATOMY_HEADERS[1:])


def anatomy_row(label: str, anatomy: Mapping[str, Any] | None) -> str:
    if not anatomy:
        return f"| {label} | " + " | ".join(["n/a"] * (len(ANATOMY_COLUMNS) - 1)) + " |"
    usd, shares, units = (
        anatomy.get("usd") or {},
        anatomy.get("usd_shares") or {},
        anatomy["input_cost_shares"],
    )
    total = usd.get("total")
    cells = [
        label,
        f"${total:,.2f}" if isinstance(total, int | float) else "n/a",
        *(percent(shares.get(b), signed=False) for b in ("output", "fixed", "new", "history")),
        *(percent(units.get(b), signed=False) for b in ("fixed", "new", "history")),
        percent(anatomy.get("reach_tokens"), signed=False),
    ]
    return "| " + " | ".join(cells) + " |"


def anatomy_table(document: Mapping[str, Any], families: bool) -> str:
    rows = [anatomy_row(f"all ({document['inputs']['run_count']})", document.get("anatomy"))]
    if families:
        for family, data in sorted(document["families"].items()):
            rows.append(anatomy_row(f"{family} ({data['runs']})", data.get("anatomy")))
        for group, data in sorted((document.get("groups") or {}).items()):
            rows.append(anatomy_row(f"{group} (group, {data['runs']})", data.get("anatomy")))
    header = "| " + " | ".join(ANATOMY_COLUMNS) + " |"
    return "\n".join([header, "| " + " | ".join(["---"] * len(ANATOMY_COLUMNS)) + " |", *rows])


def spread_table(document: Mapping[str, Any]) -> str:
    headers = ("set", *SPREAD_HEADERS)
    lines = [headers, ["---"] * len(headers), *spread_rows(document)]
    return "\n".join("| " + " | ".join(cells) + " |" for cells in lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("bench_json", type=Path)
    parser.add_argument("--families", action="store_true", help="also one table per agent family")
    args = parser.parse_args()
    document = orjson.loads(args.bench_json.read_bytes())
    runs = document["policies"]["full"]["totals"]
    out = [
        f"All {runs['runs']} runs ({runs['steps']:,} model calls):\n",
        table(document["policies"], document.get("anatomy")),
    ]
    if args.families:
        for family, data in sorted(document["families"].items()):
            count = data["policies"]["full"]["totals"]["runs"]
            out += [f"\n{family} ({count} runs):\n", table(data["policies"], data.get("anatomy"))]
        for group, data in sorted((document.get("groups") or {}).items()):
            count = data["policies"]["full"]["totals"]["runs"]
            out += [f"\n{group} (group, {count} runs):\n", table(data["policies"], data.get("anatomy"))]
    out += [
        "\n`full`'s cost anatomy: shares of USD, of input cost, of prompt tokens:\n",
        anatomy_table(document, args.families),
    ]
    if args.families:
        out += [
            "\n`tiered`'s figures with their 95% intervals over runs (`interval_95`):\n",
            spread_table(document),
        ]
    targets = targets_lines(document.get("targets") or targets_dict(document))
    if targets:
        out += ["\nIssue 18's targets:\n", *targets, dominance_line(document)]
    sys.stdout.write("\n".join(out) + "\n")


if __name__ == "__main__":
    main()
