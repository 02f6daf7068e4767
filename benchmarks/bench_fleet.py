"""The streamed bench at scale: the main process's memory against the number of runs, and 10,000 runs.

Synthetic runs are copies of ``../shared/trajectories`` (286 runs, 7,010 model calls) with perturbed
text: copy ``c`` of a file is the file with, in every string of 40+ characters, a fixed fifth of its
words of 6+ letters changed (one letter, chosen by a hash of the copy and the word, so a word
changes the same way everywhere in the copy and the runs stay consistent). Each copy is a folder
``copy-<c>``; its runs keep their ids, so the bench numbers them ``id#2``, ``id#3``, ... . The copies
are written once to ``--data`` and reused.

Each measurement runs ``tiered-agent bench`` (every preset and ablation, or ``--policies``;
``--workers``; the per-run detail to a JSON-lines file) in a child process and samples, every 0.2 s,
the resident memory of that process (the main process) and of its whole process tree (``/proc``); it
reports both peaks, the wall time, and the CPU time of the tree (``RUSAGE_CHILDREN``). Nothing is
timed in a test: these are the targets of issue 20.

    python benchmarks/bench_fleet.py memory [--copies 1,4] [--workers 2]   # main RSS at 1x and 4x
    python benchmarks/bench_fleet.py scale [--runs 10000] [--workers 2]    # 10,000 runs, all presets
    python benchmarks/bench_fleet.py scale --policies presets               # the eight presets, no ablations

``scale`` replays ``--runs`` runs (at most; the count it reports is the one replayed) of
``ceil(runs / 286)`` copies (the bench is given whole copy folders; the last one is cut to the count
with a file list, whole files only).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Any

import orjson

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "trajectories"
SUFFIXES = (".json", ".jsonl", ".traj")
_WORD = re.compile(r"[A-Za-z]{6,}")
_PAGE = os.sysconf("SC_PAGE_SIZE")


# ------------------------------------------------------------------ synthetic runs
def _perturb(text: str, copy: int, memo: dict[str, str]) -> str:
    def change(match: re.Match[str]) -> str:
        word = match.group(0)
        found = memo.get(word)
        if found is None:
            digest = zlib.crc32(f"{copy}:{word}".encode())
            if digest % 5:
                found = word
            else:
                letter = "abcdefghijklmnopqrstuvwxyz"[(digest >> 8) % 26]
                found = word[0] + (letter if letter != word[1].lower() else "q") + word[2:]
            memo[word] = found
        return found

    return _WORD.sub(change, text)


def _walk(value: Any, copy: int, memo: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _perturb(value, copy, memo) if len(value) >= 40 else value
    if isinstance(value, list):
        return [_walk(v, copy, memo) for v in value]
    if isinstance(value, dict):
        return {k: _walk(v, copy, memo) for k, v in value.items()}
    return value


def _copy_file(source: Path, target: Path, copy: int) -> None:
    data = source.read_bytes()
    memo: dict[str, str] = {}
    try:
        out = orjson.dumps(_walk(orjson.loads(data), copy, memo))
    except orjson.JSONDecodeError:  # JSON lines
        lines = [
            orjson.dumps(_walk(orjson.loads(line), copy, memo)) for line in data.splitlines() if line.strip()
        ]
        out = b"\n".join(lines) + b"\n"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(out)


def make_copies(data: Path, copies: int) -> list[Path]:
    """``data/copy-1`` ... ``data/copy-<copies>`` (written once)."""
    sources = [
        p
        for p in sorted(SHARED.rglob("*"))
        if p.is_file() and p.suffix in SUFFIXES and not p.name.startswith(("_", "stats", "SOURCES"))
    ]
    folders = []
    for copy in range(1, copies + 1):
        folder = data / f"copy-{copy}"
        done = folder / ".done"
        if not done.exists():
            for source in sources:
                _copy_file(source, folder / source.relative_to(SHARED), copy)
            done.write_text("ok", encoding="utf-8")
        folders.append(folder)
    return folders


# ------------------------------------------------------------------ measuring a bench
def _rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/statm") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0


def _children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                parent = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError, IndexError):
            continue
        if parent == pid:
            found.append(int(entry))
    return found


def _tree(pid: int) -> list[int]:
    out, queue = [], [pid]
    while queue:
        current = queue.pop()
        out.append(current)
        queue.extend(_children(current))
    return out


def run_bench(inputs: list[Path], out: Path, workers: int, policies: str | None = None) -> dict[str, Any]:
    """``tiered-agent bench INPUTS`` in a child process, its memory sampled; the measurements."""
    command = [sys.executable, "-m", "tiered_agent", "bench", *map(str, inputs), "--out", str(out)]
    command += ["--workers", str(workers)]
    if policies:
        command += ["--policies", policies]
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    child = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    peaks = {"main": 0, "total": 0}
    stop = threading.Event()

    def sample() -> None:
        while not stop.wait(0.2):
            peaks["main"] = max(peaks["main"], _rss(child.pid))
            peaks["total"] = max(peaks["total"], sum(_rss(p) for p in _tree(child.pid)))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    _, errors = child.communicate()
    stop.set()
    sampler.join()
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if child.returncode != 0:
        raise SystemExit(f"bench failed ({child.returncode}): {errors.decode(errors='replace')[-2000:]}")
    document = orjson.loads((out / "bench.json").read_bytes())
    return {
        "runs": document["inputs"]["run_count"],
        "steps": document["inputs"]["step_count"],
        "wall_s": round(wall, 1),
        "cpu_s": round((after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), 1),
        "main_peak_rss_mb": round(peaks["main"] / 2**20, 1),
        "total_peak_rss_mb": round(peaks["total"] / 2**20, 1),
        "main_maxrss_mb": round(after.ru_maxrss / 1024, 1),  # the largest child ever (main or a worker)
        "bench_json_mb": round((out / "bench.json").stat().st_size / 2**20, 2),
        "runs_jsonl_mb": round((out / "bench.runs.jsonl").stat().st_size / 2**20, 1),
    }


def _files_for(folders: list[Path], runs: int) -> list[Path]:
    """Whole copy folders, the last one cut (by file, in the bench's order) to reach ``runs`` runs."""
    from tiered_agent.bench._importers import load_runs

    per_copy = len(load_runs([folders[0]]).runs)
    whole, rest = divmod(runs, per_copy)
    inputs: list[Path] = list(folders[:whole])
    if rest:
        folder, taken = folders[whole], 0
        files = sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in SUFFIXES)
        for file in files:  # a file of many runs that would overshoot is left out; smaller ones after it fill
            count = len(load_runs([file]).runs)
            if taken + count > rest:
                continue
            inputs.append(file)
            taken += count
    return inputs


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("what", choices=["memory", "scale"])
    parser.add_argument("--copies", default="1,4", help="memory: the sizes compared, in copies (default 1,4)")
    parser.add_argument("--runs", type=int, default=10_000, help="scale: how many runs (default 10000)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument(
        "--policies",
        help="the bench's --policies (default: every preset and ablation); 'presets': only the presets",
    )
    parser.add_argument("--data", type=Path, default=Path(tempfile.gettempdir()) / "tiered-agent-fleet-data")
    args = parser.parse_args()
    if args.policies == "presets":
        from tiered_agent.context import PRESETS

        args.policies = ",".join(PRESETS)
    if not SHARED.is_dir():
        raise SystemExit(f"{SHARED} is not here: the synthetic runs are copies of it")
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    with tempfile.TemporaryDirectory() as scratch:
        if args.what == "memory":
            sizes = [int(n) for n in args.copies.split(",")]
            folders = make_copies(args.data, max(sizes))
            results = {}
            for size in sizes:
                out = Path(scratch) / f"x{size}"
                results[size] = run_bench(folders[:size], out, args.workers, args.policies)
                print(json.dumps({"copies": size, **results[size]}), flush=True)
            low, high = results[min(sizes)], results[max(sizes)]
            ratio = high["main_peak_rss_mb"] / low["main_peak_rss_mb"]
            print(f"main process peak RSS at {max(sizes)}x the runs / at {min(sizes)}x: {ratio:.3f}")
        else:
            folders = make_copies(args.data, -(-args.runs // 286))
            inputs = _files_for(folders, args.runs)
            result = run_bench(inputs, Path(scratch) / "scale", args.workers, args.policies)
            print(json.dumps(result), flush=True)
            per_step = result["cpu_s"] / result["steps"] * 1000
            print(
                f"{result['runs']} runs, {result['steps']} steps: {result['wall_s'] / 60:.1f} min wall, "
                f"{result['cpu_s'] / 60:.1f} min CPU ({per_step:.2f} ms per step), "
                f"peak RSS {result['total_peak_rss_mb']:.0f} MB in all, "
                f"{result['main_peak_rss_mb']:.0f} MB main"
            )


if __name__ == "__main__":
    main()
