"""Wall time of ``tiered-agent bench``: this tree against another checkout, on the same inputs.

Each attempt runs the CLI, ``python -m tiered_agent bench PATHS --out DIR``, in a fresh process
with one tree first on ``PYTHONPATH`` (default worker count: the bench's own choice), and reports
its wall time, the CPU time of the whole process tree (the main process and its workers) and
their ratio (how many cores the bench kept busy on average), with the sha256 of ``bench.json``
without its timings (equal hashes: the same JSON). The trees alternate attempt by attempt,
``--repeat`` times, and each keeps its fastest attempt. Wall time, unlike ``bench_cpu.py``'s CPU
time, depends on what else the machine runs: compare the two trees' numbers from one invocation.

    python benchmarks/bench_wall.py --baseline /tmp/base [PATHS...] [--repeat 2] [--workers N]
        [--policies A,B]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"


def _digest(path: Path) -> str:
    sys.path.insert(0, str(ROOT))
    from tiered_agent.bench._report import dumps, strip_timing

    return hashlib.sha256(dumps(strip_timing(json.loads(path.read_bytes())))).hexdigest()


def _attempt(tree: Path, paths: list[str], workers: int | None, policies: str | None) -> dict[str, Any]:
    env = dict(os.environ, PYTHONPATH=str(tree), LITELLM_LOCAL_MODEL_COST_MAP="True")
    with tempfile.TemporaryDirectory(prefix="bench-wall-") as out:
        command = [sys.executable, "-m", "tiered_agent", "bench", *paths, "--out", out]
        if workers is not None:
            command += ["--workers", str(workers)]
        if policies:
            command += ["--policies", policies]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        subprocess.run(command, env=env, cwd=tree, capture_output=True, check=True)
        wall = time.perf_counter() - started
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "sha256": _digest(Path(out) / "bench.json")}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", help="recorded runs (default: all of ../shared)")
    parser.add_argument("--baseline", type=Path, help="the other checkout (omit: only this tree)")
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--workers", type=int, help="passed to the bench (default: its own choice)")
    parser.add_argument("--policies", help="passed to the bench, comma-separated (default: every policy)")
    args = parser.parse_args()
    paths = [str(Path(p).resolve()) for p in args.paths] or [
        str(SHARED / "trajectories"),
        str(SHARED / "sessions"),
    ]
    trees = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    best: dict[str, dict[str, Any]] = {}
    for attempt in range(args.repeat):
        for name, tree in trees.items():
            result = _attempt(tree, paths, args.workers, args.policies)
            print(json.dumps({"tree": name, "attempt": attempt + 1, **result}), flush=True)
            if name not in best or result["wall_s"] < best[name]["wall_s"]:
                best[name] = result
    for name, result in best.items():
        cores = result["cpu_s"] / result["wall_s"]
        print(
            f"{name}: {result['wall_s']:.1f} s wall, {result['cpu_s']:.1f} s CPU "
            f"({cores:.2f} cores busy), sha256 {result['sha256'][:16]}"
        )
    if "baseline" in best:
        ratio = best["baseline"]["wall_s"] / best["this"]["wall_s"]
        same = best["baseline"]["sha256"] == best["this"]["sha256"]
        print(f"baseline / this: {ratio:.2f}x less wall time; same JSON: {same}")


if __name__ == "__main__":
    main()
