"""How aging's decision grows with a run: its CPU per step by the step's place in its run, and the
waiting chunk's note by the chunk's size.

    python benchmarks/aging_growth.py [PATHS...] [--policy tiered] [--bucket 20]

Replays PATHS serially with one policy (default ``tiered``) and prints, from thread CPU around
``AgeRuntime.decide`` and ``AgingState._condense_saving`` (the waiting chunk's note and its tokens):

- the decision's ms per step by the step's place in its run (``--bucket`` steps per row): a cost that
  grows with the history would show here as rows growing with the place;
- the note's ms per call by the waiting chunk's size (iterations from the last condensed one to the
  one condensing would reach now), with the mean number of iterations after it;
- how many steps decided an epoch, and the decision's CPU at those steps.

Runs are replayed one at a time (a step's place is its place in its run), so the calibration sees one run
at a time: a few decisions differ from a replay of the whole set (138 epochs against 136 on
``../shared/trajectories``). PATHS default to ``../shared/trajectories``. Only the shape means anything
on a shared machine.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "trajectories"


class Growth:
    """What the wrappers saw: the decision per place in the run, the note per chunk size."""

    def __init__(self, bucket: int) -> None:
        self.bucket = bucket
        self.place = 0  # the step's place in its run (reset per run)
        self.by_place: dict[int, float] = {}
        self.steps_at: Counter[int] = Counter()
        self.by_size: dict[int, float] = {}
        self.calls_at: Counter[int] = Counter()
        self.later_at: Counter[int] = Counter()
        self.epochs = 0
        self.epoch_seconds = 0.0

    def decided(self, seconds: float, epoch: bool) -> None:
        row = self.place // self.bucket
        self.by_place[row] = self.by_place.get(row, 0.0) + seconds
        self.steps_at[row] += 1
        self.place += 1
        if epoch:
            self.epochs += 1
            self.epoch_seconds += seconds

    def noted(self, seconds: float, size: int, later: int) -> None:
        row = size // 4
        self.by_size[row] = self.by_size.get(row, 0.0) + seconds
        self.calls_at[row] += 1
        self.later_at[row] += later


def _instrument(growth: Growth) -> None:
    from tiered_agent.context.aging._state import AgingState
    from tiered_agent.context.aging._step import AgeRuntime

    decide: Callable[..., None] = AgeRuntime.decide
    saving: Callable[..., tuple[int, int]] = AgingState._condense_saving

    def timed_decide(self: AgeRuntime, turn: Any) -> None:
        started = time.thread_time()
        decide(self, turn)
        growth.decided(time.thread_time() - started, self.state.new_epoch is not None)

    def timed_saving(self: AgingState, due: int, last: int) -> tuple[int, int]:
        started = time.thread_time()
        found = saving(self, due, last)
        growth.noted(time.thread_time() - started, due - self.schedule.condensed, last - due)
        return found

    AgeRuntime.decide = timed_decide  # type: ignore[method-assign]
    AgingState._condense_saving = timed_saving  # type: ignore[method-assign]


def _report(growth: Growth) -> None:
    total = sum(growth.by_place.values())
    steps = sum(growth.steps_at.values())
    print(
        f"decision {total:.2f} s over {steps} steps; {growth.epochs} steps decided an epoch "
        f"({growth.epoch_seconds:.2f} s of the decision)"
    )
    print("place in run   steps   ms per step")
    for row in sorted(growth.by_place):
        first = row * growth.bucket
        count = growth.steps_at[row]
        per_step = 1000 * growth.by_place[row] / count
        print(f"{first:5d}-{first + growth.bucket - 1:<5d} {count:8d} {per_step:12.3f}")
    print("chunk size   calls   ms per call   mean later iterations   s in all")
    for row in sorted(growth.by_size):
        calls = growth.calls_at[row]
        seconds = growth.by_size[row]
        print(
            f"{4 * row:4d}-{4 * row + 3:<4d} {calls:8d} {1000 * seconds / calls:12.3f} "
            f"{growth.later_at[row] / calls:22.1f} {seconds:10.2f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", help="recorded runs (default: ../shared/trajectories)")
    parser.add_argument("--policy", default="tiered", help="one policy with an Age step (default: tiered)")
    parser.add_argument("--bucket", type=int, default=20, help="steps per row of the first table")
    args = parser.parse_args()
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs
    from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies

    growth = Growth(max(args.bucket, 1))
    _instrument(growth)
    runs = load_runs([Path(p) for p in args.paths or [str(SHARED)]]).runs
    chosen = resolve_policies([args.policy])
    for run in runs:  # one run at a time: a step's place is its place in its run
        growth.place = 0
        replay_runs([run], chosen, ReplaySettings(), workers=1)
    _report(growth)


if __name__ == "__main__":
    main()
