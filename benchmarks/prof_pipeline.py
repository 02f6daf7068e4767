"""cProfile of the serial replay (and the document) of PATHS with the given policies.

python benchmarks/prof_pipeline.py POLICIES|all OUT.prof PATHS...
"""

from __future__ import annotations

import cProfile
import sys
import time
from pathlib import Path


def main() -> None:
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs
    from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
    from tiered_agent.bench._report import build_document

    names, out, *paths = sys.argv[1:]
    runs = load_runs([Path(p) for p in paths]).runs
    chosen = resolve_policies(None if names == "all" else names.split(","))
    profile = cProfile.Profile()
    profile.enable()
    cpu = time.process_time()
    result = replay_runs(runs, chosen, ReplaySettings(), workers=1)
    build_document(result, paths)
    profile.disable()
    steps = sum(r.steps for r in result.runs)
    sys.stdout.write(f"cpu {time.process_time() - cpu:.2f} s, {steps} steps\n")
    profile.dump_stats(out)


if __name__ == "__main__":
    main()
