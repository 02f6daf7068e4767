"""Instructions of the serial replay of a sample of runs, this tree against another, under cachegrind.

CPU time on a shared machine moves by several percent from one attempt to the next; the number of
instructions a replay executes does not depend on the machine's load. Each tree's process loads
PATHS, keeps every ``--every``-th run (sorted by run id), replays them serially with the policies
(``replay_runs`` + ``build_document``, the same API in both trees) and prints the sha256 of the
document without its timings; a second process of each tree loads the same runs and replays only the
first of the sample, so that loading and the process's start (tiktoken's ranks) can be subtracted::

    python benchmarks/count_instructions.py --baseline /work/speed-base15 PATHS [--every 20]

Needs ``valgrind`` (``--tool=cachegrind --cache-sim=no``: instruction counts only, ~50x slower). Each
process compiles what it imports from source (``PYTHONPYCACHEPREFIX`` an empty directory, nothing written):
a tree with ``__pycache__`` files against one without would otherwise differ by their compilation (~780 M on
the trajectories' sample), which ``--no-first`` does not subtract.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRESETS = "tiered,kb-labs-adr,adk-compaction,adk-code,codex,anthropic-clear,masking,full"
_TOTAL = re.compile(r"I\s+refs:\s+([\d,]+)")


def _child(paths: list[str], policies: str, every: int, first_only: bool) -> None:
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs
    from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
    from tiered_agent.bench._report import build_document, dumps, strip_timing

    runs = sorted(load_runs([Path(p) for p in paths]).runs, key=lambda r: r.run_id)[::every]
    chosen = resolve_policies(policies.split(","))
    result = replay_runs(runs[:1] if first_only else runs, chosen, ReplaySettings(), workers=1)
    document = build_document(result, paths)
    steps = sum(r.steps for r in result.runs)
    digest = hashlib.sha256(dumps(strip_timing(document))).hexdigest()
    print(json.dumps({"runs": len(result.runs), "steps": steps, "sha256": digest}))


def _count(tree: Path, paths: list[str], policies: str, every: int, first_only: bool) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "cachegrind.out"
        command = [
            "valgrind",
            "--tool=cachegrind",
            "--cache-sim=no",
            f"--cachegrind-out-file={out}",
            sys.executable,
            str(Path(__file__).resolve()),
            "--child",
            "--policies",
            policies,
            "--every",
            str(every),
            *(["--first-only"] if first_only else []),
            *paths,
        ]
        # Every process compiles the modules it imports from their sources: a tree whose ``__pycache__``
        # holds them (the test suite writes some) would count ~780 M fewer, none of it the replay's.
        bytecode = Path(scratch) / "pycache"  # empty, never written to
        env = dict(
            os.environ,
            PYTHONPATH=str(tree),
            PYTHONHASHSEED="0",
            PYTHONDONTWRITEBYTECODE="1",
            PYTHONPYCACHEPREFIX=str(bytecode),
        )
        done = subprocess.run(command, env=env, cwd=tree, capture_output=True, text=True, check=True)
    found = _TOTAL.search(done.stderr)
    if found is None:
        raise RuntimeError(done.stderr[-2000:])
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["instructions"] = int(found.group(1).replace(",", ""))
    return result


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", help="recorded runs")
    parser.add_argument("--baseline", type=Path, help="the other checkout (omit: only this tree)")
    parser.add_argument("--policies", default=PRESETS, help="comma-separated (default: the eight presets)")
    parser.add_argument("--every", type=int, default=20, help="replay every N-th run (sorted by id)")
    parser.add_argument("--no-first", action="store_true", help="skip the load-and-first-run processes")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--first-only", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    paths = [str(Path(p).resolve()) for p in args.paths]
    if args.child:
        _child(paths, args.policies, args.every, args.first_only)
        return
    trees = {"this": ROOT, **({"baseline": args.baseline.resolve()} if args.baseline else {})}
    whole = {name: _count(tree, paths, args.policies, args.every, False) for name, tree in trees.items()}
    for name, result in whole.items():
        print(json.dumps({"tree": name, **result}), flush=True)
    first = None
    if not args.no_first:
        first = _count(ROOT, paths, args.policies, args.every, True)
        print(json.dumps({"tree": "this", "first_only": True, **first}), flush=True)
    if "baseline" in whole:
        base, this = int(whole["baseline"]["instructions"]), int(whole["this"]["instructions"])  # type: ignore[call-overload]
        added = base - int(first["instructions"]) if first else base  # type: ignore[call-overload]
        same = whole["baseline"]["sha256"] == whole["this"]["sha256"]
        print(
            f"baseline {base:,} this {this:,}: {base - this:,} fewer, {(base - this) / added:.2%} of the "
            f"baseline's replay past the first run ({added:,}); same JSON: {same}"
        )


if __name__ == "__main__":
    main()
