"""Fit the Gemini cache model on recorded runs: replay `full`, compare with the recorded cached tokens.

    python benchmarks/cache_fit.py [PATH ...]   (default: ../shared/trajectories/mini-swe-agent_gemini-3-pro*)

For every candidate (block size, miss rate) and for the named cache models, prints the
per-step mean absolute error of the cached share and the total cached share against the
recorded one, overall and per folder. Block sizes are in Gemini tokens: replayed tokens are
converted with the pooled calibration (recorded / replayed prompt tokens), as the bench does.
Each step is simulated at the endpoint that served it (the recorded route); the rows marked
"one endpoint" ignore the routes, for comparison.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Sequence
from pathlib import Path

import anyio

from tiered_agent._providers import CACHE_MODELS, CacheModel
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._calibration import calibrate, token_scale
from tiered_agent.bench._importers import load_file
from tiered_agent.bench._metrics import PolicyRunMetrics, validate_caching
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import policy_config, replay_run

SHARED = Path(__file__).resolve().parents[2] / "shared" / "trajectories"
GRID = [(block, miss) for block in (2048,) for miss in (0.0, 0.02, 0.025, 0.03, 0.035, 0.04, 0.045)]


def replay_full(
    runs: Sequence[RecordedRun], model: CacheModel, scale: float, counter: IdCounter
) -> list[PolicyRunMetrics]:
    async def main() -> list[PolicyRunMetrics]:
        full = {"full": policy_config("full")}
        out = []
        for run in runs:
            replay = await replay_run(run, full, counter=counter, cache_model=model, token_scale=scale)
            out.append(replay.policies["full"])
        return out

    return anyio.run(main)


def report(label: str, runs: Sequence[RecordedRun], replays: Sequence[PolicyRunMetrics]) -> str:
    usage = {r.run_id: r.usage for r in runs}
    v = validate_caching(replays, usage)
    if v is None:
        return f"{label}: no recorded usage"
    gap = (v.simulated_share - v.recorded_share) * 100
    shares = f"cached share {v.simulated_share:.4f} vs {v.recorded_share:.4f} ({gap:+.2f} pt)"
    return f"{label}: MAE {v.mean_abs_error:.4f}, {shares}"


def main(argv: Sequence[str]) -> None:
    paths = [Path(p) for p in argv] or sorted(SHARED.glob("mini-swe-agent_gemini-3-pro*"))
    folders = {p.name: [r for f in sorted(p.glob("*.traj.json")) for r in load_file(f)] for p in paths}
    runs = [r for rs in folders.values() for r in rs]
    counter = IdCounter("o200k_base")
    scale = token_scale(calibrate(runs, counter), "gemini")
    print(f"{len(runs)} runs, gemini calibration {scale:.4f} provider tokens per replayed token")
    candidates = {name: CACHE_MODELS[name] for name in ("ideal", "gemini", "openai")}
    for block, miss in GRID:
        rules = dataclasses.replace(CACHE_MODELS["gemini"], min_tokens=block, increment=block, miss_rate=miss)
        candidates[f"blocks {block}, miss {miss}"] = rules
    unrouted = [dataclasses.replace(r, routes=()) for r in runs]
    for miss in (0.035, 0.045):
        rules = dataclasses.replace(CACHE_MODELS["gemini"], miss_rate=miss)
        print_fit(f"gemini, miss {miss}, one endpoint", unrouted, folders, rules, scale, counter)
    for label, rules in candidates.items():
        print_fit(label, runs, folders, rules, scale, counter)


def print_fit(
    label: str,
    runs: Sequence[RecordedRun],
    folders: dict[str, list[RecordedRun]],
    rules: CacheModel,
    scale: float,
    counter: IdCounter,
) -> None:
    """The fit of ``rules`` over all ``runs`` and per folder."""
    replays = replay_full(runs, rules, scale, counter)
    by_id = {r.run_id: r for r in replays}
    print(report(label, runs, replays))
    for folder, members in folders.items():
        print("   " + report(folder, members, [by_id[r.run_id] for r in members]))


if __name__ == "__main__":
    main(sys.argv[1:])
