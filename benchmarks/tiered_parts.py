"""What each part of ``tiered`` costs the replay: ``tiered`` alone against ``tiered`` without one part,
side by side (the two replays at the same time, one process each: on 2 cores only the pair's
difference counts, the machine's load moves both).

    python benchmarks/tiered_parts.py [PATHS...] [--parts notidy,keep_own=0,written_chars=0]

A part is ``notidy`` (the preset without its ``Tidy`` step) or ``DIAL=VALUE``, a value of one of
``Age``'s dials (``keep_own=0``, ``written_chars=0``, ``novel_per_lines=0``, ...). Each pair prints
the CPU seconds of the replay (``replay_runs``, serial) of both, and the part's cost per replayed
step. PATHS default to ``../shared/trajectories``; the synthetic copies of ``bench_fleet.py``
(``/tmp/tiered-agent-fleet-data/copy-N``) defeat nothing shared across runs.
"""

from __future__ import annotations

import argparse
import ast
import dataclasses
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "trajectories"
PARTS = "notidy,keep_own=0,written_chars=0,novel_per_lines=0"


def _child(part: str, paths: list[str]) -> None:
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs
    from tiered_agent.bench._replay import ReplaySettings, replay_runs
    from tiered_agent.context import PRESETS
    from tiered_agent.context.steps import Age, Tidy

    policy = PRESETS["tiered"]
    steps = list(policy.steps)
    if part == "notidy":
        steps = [s for s in steps if not isinstance(s, Tidy)]
    elif part != "tiered":
        dial, value = part.split("=", 1)
        steps = [
            dataclasses.replace(s, **{dial: ast.literal_eval(value)}) if isinstance(s, Age) else s
            for s in steps
        ]
    policy = dataclasses.replace(policy, steps=tuple(steps))
    runs = load_runs([Path(p) for p in paths]).runs
    cpu = time.process_time()
    result = replay_runs(runs, {"tiered": policy}, ReplaySettings(), workers=1)
    cpu = time.process_time() - cpu
    print(json.dumps({"part": part, "cpu_s": cpu, "steps": sum(r.steps for r in result.runs)}))


def _start(part: str, paths: list[str]) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    command = [sys.executable, str(Path(__file__).resolve()), "--child", part, *paths]
    return subprocess.Popen(command, env=env, stdout=subprocess.PIPE, text=True)


def _result(child: subprocess.Popen[str]) -> dict[str, float]:
    out, _ = child.communicate()
    if child.returncode != 0:
        raise SystemExit(f"a replay failed ({child.returncode})")
    found: dict[str, float] = json.loads(out.strip().splitlines()[-1])
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", help="recorded runs (default: ../shared/trajectories)")
    parser.add_argument("--parts", default=PARTS, help=f"comma-separated (default: {PARTS})")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    paths = args.paths or [str(SHARED)]
    if args.child:
        _child(args.child, paths)
        return
    for part in args.parts.split(","):
        whole, without = _start("tiered", paths), _start(part, paths)
        a, b = _result(whole), _result(without)
        cost = (a["cpu_s"] - b["cpu_s"]) / a["steps"] * 1000
        print(
            f"{part:24s} tiered {a['cpu_s']:7.2f} s, without {b['cpu_s']:7.2f} s: "
            f"{cost:+.2f} ms per step ({a['steps']:.0f} steps)",
            flush=True,
        )


if __name__ == "__main__":
    main()
