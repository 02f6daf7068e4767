"""Where each policy's ``ContextManager`` time goes in a serial replay: CPU per policy-step of
``prepare`` (and its parts: the decision, the act, the build) and of the tool dispatch.

    python benchmarks/prepare_split.py [PATHS...] [--policies A,B]

Each method is wrapped with a process-time accumulator (the wrapping adds ~1 µs per call), so the
numbers are for comparing parts and trees, not absolute. Default PATHS: ``../shared/trajectories``.
"""

from __future__ import annotations

import argparse
import functools
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "trajectories"
_PARTS = ("prepare", "_decide", "_act", "_build", "_record", "dispatch")


def _wrap(cls: type, name: str, totals: dict[tuple[str, str], float], calls: dict[str, int]) -> None:
    original = getattr(cls, name)
    clock = time.process_time

    if name in {"prepare", "_act", "dispatch"}:

        @functools.wraps(original)
        async def timed_async(self: Any, *args: Any, **kwargs: Any) -> Any:
            start = clock()
            try:
                return await original(self, *args, **kwargs)
            finally:
                totals[self.policy.name, name] += clock() - start
                if name == "prepare":
                    calls[self.policy.name] += 1

        setattr(cls, name, timed_async)
        return

    @functools.wraps(original)
    def timed(self: Any, *args: Any, **kwargs: Any) -> Any:
        start = clock()
        try:
            return original(self, *args, **kwargs)
        finally:
            totals[self.policy.name, name] += clock() - start

    setattr(cls, name, timed)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--policies")
    args = parser.parse_args()
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs
    from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
    from tiered_agent.context._manager import ContextManager

    totals: dict[tuple[str, str], float] = defaultdict(float)
    calls: dict[str, int] = defaultdict(int)
    for part in _PARTS:
        _wrap(ContextManager, part, totals, calls)
    paths = [Path(p) for p in args.paths] or [SHARED]
    runs = load_runs(paths).runs
    chosen = resolve_policies(args.policies.split(",") if args.policies else None)
    cpu = time.process_time()
    replay_runs(runs, chosen, ReplaySettings(), workers=1)
    cpu = time.process_time() - cpu
    print(f"replay {cpu:.2f} s CPU; µs per policy-step:")
    print(f"{'policy':24}" + "".join(f"{p:>10}" for p in _PARTS))
    grand: dict[str, float] = defaultdict(float)
    for policy in chosen:
        n = max(calls[policy], 1)
        row: Callable[[str], float] = lambda part, policy=policy, n=n: totals[policy, part] / n * 1e6  # noqa: E731
        for part in _PARTS:
            grand[part] += totals[policy, part]
        print(f"{policy:24}" + "".join(f"{row(p):10.1f}" for p in _PARTS))
    print(f"{'all (s)':24}" + "".join(f"{grand[p]:10.2f}" for p in _PARTS))


if __name__ == "__main__":
    main()
