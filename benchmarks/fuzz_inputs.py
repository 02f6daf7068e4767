"""Seeded fuzz of the bench's other inputs: shard documents (``bench merge``) and policy files
(``bench prompts --policy-json``), each case a whole command in a child process.

Round 22 fuzzed both by hand (docs/faults.md, cases 31 and 35); this keeps them as seeded classes.
It first benches PATHS in two shards (``--shard 1/2``, ``2/2``; ``full,tiered``), then writes
``--cases`` mutated copies of each input with ``benchmarks/fuzz_logs.py``'s structure-aware mutator
(a value replaced by a hostile one, a key dropped, a list item duplicated or dropped) plus, for the
policy, an unknown key or an unknown step, and runs the command on each:

- ``merge``: ``tiered-agent bench merge SHARD1 MUTATED2 --out DIR`` (the mutated shard keeps its
  per-run detail file beside it);
- ``policy-json``: ``tiered-agent bench prompts PATH --policy-json MUTATED -o FILE`` on the first
  run file of PATHS, the policy being ``tiered`` as ``Policy.to_dict()`` writes it.

Each case must end within ``--timeout`` seconds with exit 0 (merged, exported) or exit 2 with one
sentence as its last line (``Error: ...``), and print no traceback.

    python benchmarks/fuzz_inputs.py traces/tau-bench --seed 5 --out /tmp/fuzz-inputs5

Exit 0 when every promise held, 1 otherwise (the failures printed).
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import subprocess
import sys
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from fuzz_logs import mutate

from tiered_agent.context._presets import as_policy

CLI = [sys.executable, "-m", "tiered_agent"]


def _run(args: list[str], timeout: float) -> tuple[int | None, str]:
    """The command's exit code (None: it did not end in time) and its output, both streams."""
    try:
        done = subprocess.run([*CLI, *args], capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return None, ""
    return done.returncode, done.stdout + done.stderr


def _judge(name: str, code: int | None, output: str) -> str | None:
    """What the case broke, or None: exit 0, or exit 2 in one sentence; never a traceback or a hang."""
    if code is None:
        return f"{name}: did not end in time (a hang)"
    if "Traceback" in output:
        return f"{name}: printed a traceback: {output[-600:]}"
    if code == 2:
        last = [line for line in output.splitlines() if line.strip()][-1:]
        return (
            None if last and last[0].startswith("Error: ") else f"{name}: exit 2 without a sentence: {last}"
        )
    return None if code == 0 else f"{name}: exit {code}: {output[-600:]}"


def _mutated(rng: random.Random, document: Any, extra: Callable[[random.Random, Any], None] | None) -> Any:
    copy = json.loads(json.dumps(document))
    if extra is not None and rng.random() < 0.25:
        extra(rng, copy)
    else:
        mutate(rng, copy, 1)
    return copy


def _policy_extra(rng: random.Random, policy: dict[str, Any]) -> None:
    """An unknown key, an unknown step, or a step that is not an object."""
    steps = policy.get("steps")
    choice = rng.randrange(3)
    if choice == 0 or not isinstance(steps, list) or not steps:
        policy[rng.choice(["bogus", "", "steps2", "name "])] = rng.choice([1, "x", None, []])
    elif choice == 1:
        steps.insert(rng.randrange(len(steps) + 1), {"kind": "bogus", "name": "bogus"})
    else:
        steps[rng.randrange(len(steps))] = rng.choice([5, "tiered", [], None])


def shards(paths: list[Path], out: Path, timeout: float) -> tuple[Path, Path]:
    """Bench ``paths`` in two shards; their documents."""
    documents = []
    for shard in ("1/2", "2/2"):
        folder = out / f"shard{shard[0]}"
        args = [
            "bench",
            *map(str, paths),
            "--shard",
            shard,
            "--policies",
            "full,tiered",
            "--out",
            str(folder),
        ]
        code, output = _run(args, timeout * 10)
        if code != 0:
            raise SystemExit(f"benching shard {shard} failed (exit {code}): {output[-2000:]}")
        documents.append(folder / "bench.json")
    return documents[0], documents[1]


def fuzz_merge(
    rng: random.Random, first: Path, second: Path, out: Path, cases: int, timeout: float
) -> list[str]:
    document = json.loads(second.read_text())
    failures, codes = [], Counter[int | None]()
    for case in range(cases):
        folder = out / f"merge{case:03d}"
        shutil.copytree(second.parent, folder)
        (folder / "bench.json").write_text(json.dumps(_mutated(rng, document, None)))
        code, output = _run(
            ["bench", "merge", str(first), str(folder / "bench.json"), "--out", str(folder / "m")], timeout
        )
        codes[code] += 1
        failures.append(_judge(f"merge case {case} ({folder})", code, output))
    print(f"merge: {cases} cases, exits {dict(codes)}")
    return [f for f in failures if f]


def fuzz_policy(rng: random.Random, run_file: Path, out: Path, cases: int, timeout: float) -> list[str]:
    policy = as_policy("tiered").to_dict()
    failures, codes = [], Counter[int | None]()
    for case in range(cases):
        path = out / f"policy{case:03d}.json"
        path.write_text(json.dumps(_mutated(rng, policy, _policy_extra)))
        args = [
            "bench",
            "prompts",
            str(run_file),
            "--policy-json",
            str(path),
            "-o",
            str(out / f"prompts{case:03d}.jsonl"),
        ]
        code, output = _run(args, timeout)
        codes[code] += 1
        failures.append(_judge(f"policy case {case} ({path})", code, output))
    print(f"policy-json: {cases} cases, exits {dict(codes)}")
    return [f for f in failures if f]


def _first_run_file(paths: list[Path]) -> Path:
    files = sorted(
        p for root in paths for p in ([root] if root.is_file() else root.rglob("*.json*")) if p.is_file()
    )
    if not files:
        raise SystemExit(f"no run file (*.json, *.jsonl) under {', '.join(map(str, paths))}")
    return files[0]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="a new folder for the inputs and outputs")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--cases", type=int, default=24, help="mutated inputs of each class")
    parser.add_argument("--classes", default="merge,policy-json", help="merge, policy-json or both")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds a case may take")
    args = parser.parse_args()
    if args.out.exists():
        parser.error(f"{args.out} exists: name a new folder (nothing is overwritten)")
    args.out.mkdir(parents=True)
    rng = random.Random(args.seed)
    classes = set(args.classes.split(","))
    failures = []
    if "merge" in classes:
        first, second = shards(args.paths, args.out, args.timeout)
        failures += fuzz_merge(rng, first, second, args.out, args.cases, args.timeout)
    if "policy-json" in classes:
        failures += fuzz_policy(rng, _first_run_file(args.paths), args.out, args.cases, args.timeout)
    for failure in failures:
        print("FAILED:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
