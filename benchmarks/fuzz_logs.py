"""Structure-aware fuzz of recorded logs: mutated copies of real runs and sessions through every preset.

``tests/test_import_fuzz.py`` mutates the test fixtures byte by byte; this script mutates real logs
by their structure, the confusions a type check alone does not catch: a ``role`` or ``type`` swapped
for another known one, call ids duplicated or emptied, timestamps out of range, token counts negative
or huge, list items duplicated or dropped, keys removed, strings blown up or cut. It takes the
smallest files of each folder of PATHS (``--per-folder``), writes ``--variants`` mutated copies of
each (JSON lines: one record mutated per mutation; JSON documents: the document), seeded, to
``--out``, then runs ``tiered-agent bench`` on them with every policy and checks what the team
promises of hostile input: exit 0, no traceback, every skipped file named with its reason, no step
error in any policy, and no run whose replay failed (the bench goes on without such a run and lists
it under ``inputs.failed``: a bug to fix, not an input to skip).

    python benchmarks/fuzz_logs.py ../shared/trajectories ../shared/sessions --seed 7 --out /tmp/fuzz7

Exit 0 when every promise held, 1 otherwise (the failures printed).
"""

from __future__ import annotations

import argparse
import copy
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ODD: list[Any] = [None, True, -1, 0, 10**18, -(10**18), 1.5, "", "x" * 5000, [], {}, [None], {"": None},
                  "2099-99-99T99:99:99Z", "1970-01-01T00:00:00Z", "-1", "NaN", "\u0000"]  # fmt: skip
ROLES = ["user", "assistant", "system", "tool", "developer", "function", "human", "ai", "", "USER"]
TYPES = ["tool_use", "tool_result", "text", "thinking", "image", "function_call", "function_call_output",
         "message", "reasoning", "response_item", "event_msg", "summary", "compacted", "unknown"]  # fmt: skip
IDS = ("id", "tool_use_id", "call_id", "uuid", "parentUuid")
TIMES = ("timestamp", "created_at", "time")
SUFFIXES = (".jsonl", ".json", ".traj")


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from _paths(value, (*prefix, key))


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def _new_value(rng: random.Random, key: Any, current: Any) -> Any:
    """What a mutation puts at ``key`` in place of ``current``: a new object, never one of
    :data:`ODD`'s own containers (shared, a later mutation would change them everywhere they were
    placed, or place one inside itself: a document with a cycle, which no JSON file can hold)."""
    return copy.deepcopy(_odd_or_changed(rng, key, current))


def _odd_or_changed(rng: random.Random, key: Any, current: Any) -> Any:
    if key == "role":
        return rng.choice(ROLES)
    if key == "type":
        return rng.choice(TYPES)
    if key in IDS:
        return rng.choice(["dup", "", None, 5])
    if key in TIMES:
        return rng.choice(ODD)
    if isinstance(current, int | float) and not isinstance(current, bool):
        return rng.choice([-current, current * 10**9, 0, -1, "12", None, 1.5])
    if isinstance(current, str) and rng.random() < 0.5:
        return rng.choice(
            [current * 50, current[: len(current) // 2], current[::-1], "\n" * 2000, current + "\x1b[31m"]
        )
    return rng.choice(ODD)


def mutate(rng: random.Random, document: Any, times: int) -> Any:
    """``document`` with ``times`` structure-aware mutations (in place; returned)."""
    for _ in range(times):
        paths = [p for p in _paths(document) if p]
        if not paths:
            return document
        path = rng.choice(paths)
        parent, key = _get(document, path[:-1]), path[-1]
        current = parent[key]
        if isinstance(current, list) and current and rng.random() < 0.5:
            index = rng.randrange(len(current))
            if rng.random() < 0.5:
                current.insert(index, copy.deepcopy(current[index]))
            else:
                del current[index]
        elif isinstance(current, dict) and current and rng.random() < 0.3:
            del current[rng.choice(list(current))]
        else:
            parent[key] = _new_value(rng, key, current)
    return document


def _mutated_text(rng: random.Random, source: Path, times: int) -> str:
    text = source.read_text(encoding="utf-8", errors="replace")
    if source.suffix != ".jsonl":
        return json.dumps(mutate(rng, json.loads(text), times))
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    for _ in range(times if records else 0):
        index = rng.randrange(len(records))
        records[index] = mutate(rng, records[index], 1)
    return "".join(json.dumps(r) + "\n" for r in records)


def _sources(roots: list[Path], per_folder: int) -> list[Path]:
    folders = sorted({p.parent for root in roots for p in root.rglob("*") if p.suffix in SUFFIXES})
    chosen: list[Path] = []
    for folder in folders:
        files = sorted(
            (p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES),
            key=lambda p: p.stat().st_size,
        )
        chosen += [p for p in files if not p.name.startswith("_")][:per_folder]
    return chosen


def write_corpus(roots: list[Path], out: Path, seed: int, per_folder: int, variants: int) -> int:
    rng = random.Random(seed)
    written = 0
    for source in _sources(roots, per_folder):
        for k in range(variants):
            try:
                text = _mutated_text(rng, source, rng.choice([1, 3, 10, 40]))
            except ValueError:  # not JSON at all: nothing structural to mutate
                continue
            target = out / source.parent.name / f"m{k}-{source.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written += 1
    return written


def check(out: Path) -> list[str]:
    """Run the bench on the corpus; the promises it broke."""
    report = out.with_name(out.name + "-bench")
    done = subprocess.run(
        [sys.executable, "-m", "tiered_agent", "bench", str(out), "--out", str(report)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    failures = [f"exit {done.returncode}"] if done.returncode else []
    if "Traceback" in done.stdout + done.stderr:
        failures.append("a traceback was printed")
    written = report / "bench.json"
    if not written.is_file():
        return [*failures, f"no bench.json written; the bench's stderr ends: {done.stderr[-2000:]}"]
    document = json.loads(written.read_text())
    errors = set(re.findall(r'"step_errors": (\d+)', written.read_text())) - {"0"}
    if errors:
        failures.append(f"step errors: {sorted(errors)}")
    failures += [f"replay failed: {f['run_id']!r}: {f['reason']}" for f in document["inputs"]["failed"]]
    skipped = done.stderr.count("importers.skipped")
    print(f"{out}: bench exit {done.returncode}, {skipped} files skipped with a reason, report in {report}")
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="a new folder for the mutated copies")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--per-folder", type=int, default=3, help="the smallest N files of each folder")
    parser.add_argument("--variants", type=int, default=6, help="mutated copies of each file")
    args = parser.parse_args()
    if args.out.exists():
        parser.error(f"{args.out} exists: name a new folder (nothing is overwritten)")
    written = write_corpus(args.paths, args.out, args.seed, args.per_folder, args.variants)
    print(f"{written} mutated files in {args.out}")
    failures = check(args.out)
    for failure in failures:
        print("FAILED:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
