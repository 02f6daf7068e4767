"""Memory a context manager keeps for one agent: tracemalloc over a recorded run's first iterations.

    PYTHONPATH=TREE python benchmarks/aging_memory.py [--policy tiered] [--iterations 10] [--runs 5] PATHS...

Takes the first ``--runs`` recorded runs of PATHS with at least ``--iterations`` iterations, and
for each builds the prompts of its first iterations through ``ContextManager(policy)`` (a fresh
manager and counter, as a live agent has: ``prepare`` before each recorded action, the history
growing by the recorded messages). Prints one JSON line per run and one summary: the bytes still
allocated after the run while the manager and its counter are alive (what a concurrent agent holds
besides its history, which is excluded: it is loaded before tracing starts), the peak during the
run, and the retained bytes by source file of the package (the top ten). Compare trees by running it
once per tree; tracemalloc counts Python allocations only, deterministically. A first, untraced
pass loads what the process keeps for every run (the tokenizer's tables, modules imported lazily).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import tracemalloc
from collections import Counter
from pathlib import Path
from typing import Any


def _one(run: Any, policy: str, iterations: int) -> dict[str, Any]:
    from tiered_agent._messages import group_by_iteration
    from tiered_agent._tokens import TokenCounter
    from tiered_agent.context import ContextManager

    groups = group_by_iteration(run.messages)
    steps = [groups[i] for i in sorted(i for i in groups if i > 0)][:iterations]
    head = list(groups.get(0, ()))

    async def replay(manager: Any) -> None:
        history = list(head)
        async with manager:
            for group in steps:
                if any(m.role == "assistant" for m in group):
                    await manager.prepare(history, run.tools)
                history.extend(group)

    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    before = tracemalloc.take_snapshot()
    counter = TokenCounter()
    manager = ContextManager(policy, counter=counter, background=False, enforce_hard_limit=False)
    asyncio.run(replay(manager))
    gc.collect()
    after = tracemalloc.take_snapshot()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    diff = after.compare_to(before, "filename")
    by_file: Counter[str] = Counter()
    for stat in diff:
        name = stat.traceback[0].filename
        if "tiered_agent" in name:
            name = name[name.index("tiered_agent") :]
        by_file[name] += stat.size_diff
    retained = sum(stat.size_diff for stat in diff)
    del manager, counter
    return {"retained_kb": round(retained / 1024, 1), "peak_kb": round(peak / 1024, 1), "by_file": by_file}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--policy", default="tiered")
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()

    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs

    runs = [r for r in load_runs([Path(p) for p in args.paths]).runs if r.steps >= args.iterations]
    if runs:  # warm up: the tokenizer's tables and lazily imported modules are the process's, not a run's
        _one(runs[0], args.policy, args.iterations)
    total: Counter[str] = Counter()
    retained = []
    for run in runs[: args.runs]:
        result = _one(run, args.policy, args.iterations)
        total.update(result.pop("by_file"))
        retained.append(result["retained_kb"])
        print(json.dumps({"run": run.run_id, **result}))
    top = {name: round(size / 1024 / max(len(retained), 1), 1) for name, size in total.most_common(10)}
    summary = {"runs": len(retained), "mean_retained_kb": round(sum(retained) / max(len(retained), 1), 1)}
    print(json.dumps({**summary, "mean_retained_kb_by_file": top}))


if __name__ == "__main__":
    main()
