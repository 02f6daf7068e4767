"""report.md's "What a policy can reach": ``full``'s cost per bucket and each policy's saving over the
reach, for all runs and per family (``anatomy`` of the document; ``_anatomy.py`` defines them)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from ._report_faithful import _pct, _table

__all__ = ["ANATOMY_HEADERS", "md_anatomy"]

ANATOMY_HEADERS = (  # the anatomy table's columns after its label (report.md, scripts/results_table.py)
    "runs",
    "`full` USD",
    "output",
    "fixed",
    "new",
    "history (reach)",
    "input cost: fixed",
    "new",
    "history (reach)",
    "tokens: history",
)


def _share(value: Any) -> str:
    return _pct(value, signed=False) if isinstance(value, int | float) else "n/a"


def _usd(value: Any) -> str:
    return f"${value:,.2f}" if isinstance(value, int | float) else "n/a"


def _groups(document: Mapping[str, Any]) -> list[tuple[str, int, Mapping[str, Any]]]:
    """(label, runs, anatomy) of all runs, then of each family, then of each group (those with an anatomy)."""
    out = []
    if document.get("anatomy"):
        out.append(("all runs", document["inputs"]["run_count"], document["anatomy"]))
    for kind, suffix in (("families", ""), ("groups", " (group)")):
        for name, entry in (document.get(kind) or {}).items():
            if entry.get("anatomy"):
                out.append((name + suffix, entry["runs"], entry["anatomy"]))
    return out


def _bucket_row(label: str, runs: int, a: Mapping[str, Any]) -> list[str]:
    usd, shares, units = a.get("usd") or {}, a.get("usd_shares") or {}, a["input_cost_shares"]
    return [
        label,
        str(runs),
        _usd(usd.get("total")),
        *(_share(shares.get(b)) for b in ("output", "fixed", "new", "history")),
        *(_share(units.get(b)) for b in ("fixed", "new", "history")),
        _share(a.get("reach_tokens")),
    ]


def _saving_cell(saving: Mapping[str, Any] | None) -> str:
    if not saving:
        return "n/a"
    return f"{_share(saving.get('usd'))} ({_share(saving.get('input_cost'))})"


def md_anatomy(document: Mapping[str, Any], policies: Sequence[str]) -> list[str]:
    """The section (empty: the document has no anatomy). ``policies``: in the order to list them."""
    groups = _groups(document)
    if not groups:
        return []
    rows = [_bucket_row(label, runs, a) for label, runs, a in groups]
    savings = [
        [f"`{name}`", *(_saving_cell(a["saving_over_reach"].get(name)) for _, _, a in groups)]
        for name in policies
    ]
    return [
        "## What a policy can reach",
        "",
        "`full`'s cost split by where its tokens sit in each request: output; the fixed start "
        "(unrecorded prefix, tool schemas, the opening system and task messages); new messages (first "
        "sent at that call); history (earlier messages sent again). Shares of `full`'s USD (priced runs), "
        "then of its input cost, then of its prompt tokens. The history share is the *reach*: the most a "
        "policy saves without hiding the system prompt, the tools or a new message.",
        "",
        *_table(["", *ANATOMY_HEADERS], rows),
        "",
        "Each policy's saving over the reach: USD (input cost).",
        "",
        *_table(["policy", *(label for label, _, _ in groups)], savings),
        "",
    ]
