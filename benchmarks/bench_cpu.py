"""Bench CPU per replayed step: this tree against another checkout, side by side, on the same inputs.

Each attempt is a fresh process with one tree first on ``PYTHONPATH``: it loads PATHS (default
``../shared/trajectories``), replays every run serially with every policy (or ``--policies``) and
builds the bench document (``replay_runs`` + ``build_document``, the same API in both trees), and
reports the process CPU time of the replay and the document over the replayed steps, with the
sha256 of the document without its timings (equal hashes: the same JSON). The trees alternate
attempt by attempt, ``--repeat`` times, and each keeps its least-CPU attempt (a shared machine's
noise only adds). CPU time, not wall time: other jobs on the machine slow both alike.

    python benchmarks/bench_cpu.py --baseline /tmp/fleet2-base [PATHS...] [--repeat 2] [--policies A,B]

With ``--together`` the two trees' attempts run at the same time (one process each), so that a
shared machine's load falls on both alike; each attempt's ratio is printed too.

(a baseline checkout: ``git worktree add`` or ``git archive <commit> | tar -x -C DIR``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "trajectories"


def _child(paths: list[str], policies: str | None) -> None:
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs
    from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
    from tiered_agent.bench._report import build_document, dumps, strip_timing

    runs = load_runs([Path(p) for p in paths]).runs
    chosen = resolve_policies(policies.split(",") if policies else None)
    cpu, wall = time.process_time(), time.perf_counter()
    result = replay_runs(runs, chosen, ReplaySettings(), workers=1)
    document = build_document(result, paths)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    steps = sum(r.steps for r in result.runs)
    digest = hashlib.sha256(dumps(strip_timing(document))).hexdigest()
    print(json.dumps({"cpu_s": cpu, "wall_s": wall, "steps": steps, "sha256": digest}))


def _start(tree: Path, paths: list[str], policies: str | None) -> subprocess.Popen[str]:
    env = dict(os.environ, PYTHONPATH=str(tree))
    command = [sys.executable, str(Path(__file__).resolve()), "--child", *paths]
    if policies:
        command += ["--policies", policies]
    return subprocess.Popen(command, env=env, cwd=tree, stdout=subprocess.PIPE, text=True)


def _result(child: subprocess.Popen[str]) -> dict[str, float | str]:
    out, _ = child.communicate()
    if child.returncode:
        raise subprocess.CalledProcessError(child.returncode, child.args, out)
    result: dict[str, float | str] = json.loads(out.strip().splitlines()[-1])
    return result


def _attempts(
    trees: dict[str, Path], paths: list[str], policies: str | None, *, together: bool, attempt: int
) -> dict[str, dict[str, float | str]]:
    """One attempt of each tree: one after the other, or (``together``) both at the same time, the
    first started alternating from one attempt to the next."""
    if not together:
        return {name: _result(_start(tree, paths, policies)) for name, tree in trees.items()}
    order = list(trees.items()) if attempt % 2 == 0 else list(reversed(trees.items()))
    children = {name: _start(tree, paths, policies) for name, tree in order}
    return {name: _result(child) for name, child in children.items()}


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", help="recorded runs (default: ../shared/trajectories)")
    parser.add_argument("--baseline", type=Path, help="the other checkout (omit: only this tree)")
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument("--policies", help="comma-separated (default: every policy)")
    parser.add_argument(
        "--together",
        action="store_true",
        help="run both trees' attempts at the same time (on a shared machine, both see the same load)",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    paths = [str(Path(p).resolve()) for p in args.paths] or [str(SHARED)]
    if args.child:
        _child(paths, args.policies)
        return
    trees = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    best: dict[str, dict[str, float | str]] = {}
    for attempt in range(args.repeat):
        results = _attempts(trees, paths, args.policies, together=args.together, attempt=attempt)
        for name, result in results.items():
            print(json.dumps({"tree": name, "attempt": attempt + 1, **result}), flush=True)
            if name not in best or float(result["cpu_s"]) < float(best[name]["cpu_s"]):
                best[name] = result
        if len(results) == 2:
            ratio = float(results["baseline"]["cpu_s"]) / float(results["this"]["cpu_s"])
            print(f"attempt {attempt + 1}: baseline / this {ratio:.3f}", flush=True)
    for name, result in best.items():
        per_step = float(result["cpu_s"]) / float(result["steps"]) * 1000
        digest = str(result["sha256"])[:16]
        print(f"{name}: {per_step:.3f} ms CPU per step ({result['steps']} steps), sha256 {digest}")
    if "baseline" in best:
        ratio = float(best["baseline"]["cpu_s"]) / float(best["this"]["cpu_s"])
        same = best["baseline"]["sha256"] == best["this"]["sha256"]
        print(f"baseline / this: {ratio:.2f}x less CPU per step; same JSON: {same}")


if __name__ == "__main__":
    main()
