"""CPU of aging's decision alone (``AgeRuntime.decide``) in a serial replay, for comparing trees.

    PYTHONPATH=TREE python benchmarks/aging_decide.py [--policies tiered] PATHS...

Replays PATHS serially with the policies (default ``tiered``) and prints one JSON line: the thread
CPU time spent in ``AgeRuntime.decide`` (the break-even decision: estimates, the waiting chunk's
note, its tokens), the whole replay's, the steps, and a sha256 of every policy's aging records (the
decisions: equal hashes, the same schedules). Run it once per tree at the same time so that the
machine's load hits both alike; only the ratio means anything.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import time
from pathlib import Path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--policies", default="tiered")
    args = parser.parse_args()

    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs
    from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
    from tiered_agent.context.aging._step import AgeRuntime

    spent = [0.0]
    digest = hashlib.sha256()
    decide = AgeRuntime.decide

    def timed(self: AgeRuntime, turn: object) -> None:
        start = time.thread_time()
        decide(self, turn)  # type: ignore[arg-type]
        spent[0] += time.thread_time() - start
        record = self.record()
        digest.update(repr((record.through, record.condensed, record.epoch)).encode())

    AgeRuntime.decide = timed  # type: ignore[method-assign]
    runs = load_runs([Path(p) for p in args.paths]).runs
    chosen = resolve_policies(args.policies.split(","))
    cpu = time.process_time()
    result = replay_runs(runs, chosen, ReplaySettings(), workers=1)
    cpu = time.process_time() - cpu
    steps = sum(r.steps for r in result.runs)
    line = {"decide_s": round(spent[0], 3), "replay_s": round(cpu, 3), "steps": steps}
    print(json.dumps({**line, "sha256": digest.hexdigest()}))


if __name__ == "__main__":
    main()
