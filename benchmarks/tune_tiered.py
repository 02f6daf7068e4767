"""Tune the `tiered` preset on recorded runs: replay candidate configurations, print cost and miss rate.

Uses the same replay as `tiered-agent bench` (the live ContextManager); candidates are
flat `ContextConfig`s (the convenience that builds a policy's steps) around `tiered`.
The goal set by the replay-benchmark issue:
the lowest cached cost at a miss rate no worse than `masking`.

    python benchmarks/tune_tiered.py [PATH ...]      (default: ../shared/trajectories)
"""

from __future__ import annotations

import sys
from pathlib import Path

from tiered_agent._logging import configure_logging
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
from tiered_agent.bench._report import build_document
from tiered_agent.context._config import ContextConfig
from tiered_agent.context._policy import Policy

# `tiered` as a flat configuration: 8,000-char cuts, window 1 with elision, summary every 25.
KEEP = ContextConfig(
    name="tiered", max_output_chars=8000, window_iterations=1, window_keep_actions=True, summary_every=25
)
CANDIDATES: dict[str, Policy] = {
    f"keep-w{w}-s{e}-t{t or 0}-m{m}": KEEP.replace(
        name=f"keep-w{w}-s{e}-t{t or 0}-m{m}",
        window_iterations=w,
        summary_every=e,
        max_output_chars=t,
        elide_min_chars=m,
    ).to_policy()
    for w, e, t, m in [
        (2, 20, None, 0),
        (2, 20, 8000, 0),
        (2, 25, None, 0),
        (1, 20, None, 0),
        (2, 20, 10000, 0),
        (3, 25, 8000, 0),
        (2, 30, None, 0),
        (1, 25, 8000, 0),
        (2, 25, 8000, 0),
    ]
}


def main() -> None:
    configure_logging(level="warning")
    paths = [Path(p) for p in sys.argv[1:]] or [
        Path(__file__).resolve().parents[2] / "shared" / "trajectories"
    ]
    runs = load_runs(paths).runs  # unreadable inputs: skipped with a warning
    policies = resolve_policies(["full", "tiered", "masking", "adk-compaction"]) | CANDIDATES
    result = replay_runs(runs, policies, ReplaySettings(), workers=2)
    doc = build_document(result, [str(p) for p in paths])
    rows = sorted(doc["policies"].items(), key=lambda item: item[1]["totals"]["effective_cost"])
    print(f"{'policy':22} {'tokens saved':>12} {'cost saved':>10} {'cached':>7} {'miss':>6} {'rewrites':>8}")
    for name, entry in rows:
        t = entry["totals"]
        print(
            f"{name:22} {t.get('token_savings_vs_full') or 0:12.1%} "
            f"{t.get('cost_savings_vs_full') or 0:10.1%} {t['cached_share']:7.1%} "
            f"{t['miss_rate']:6.1%} {t['prefix_rewrites']:8d}"
        )


if __name__ == "__main__":
    main()
