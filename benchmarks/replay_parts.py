"""Where the serial replay's CPU goes, per policy and per part of a step: each part's own process
time (what it calls that is itself a part is counted there, not twice), summed over every step.

    python benchmarks/replay_parts.py [PATHS...] [--policies tiered,kb-labs-adr,...]

The parts: the manager's ``decide`` (aging's decision), ``act`` (a summary landing), ``build`` (the
steps' ``apply``/``finish``, the prompt's count), the rest of ``prepare``; the replay's
``observations`` (a dispatch of the recorded results), the cache simulation, the rulers
(``misses``: salient, word, line and own-writing; ``line_rulers``, ``retrieval``: with
retrieval), ``regions`` (the baseline's anatomy) and the rest of ``_step``; per run (policy ``-``):
its indexes (``runstate.of``) and the calibration's count. cProfile's own cost per call distorts a
replay made of many small calls (it counted 246 s of CPU for a 47 s replay); these wrappers cost
two ``process_time`` calls per part entered. PATHS default to ``../shared/trajectories``.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "trajectories"
PRESETS = "tiered,kb-labs-adr,adk-compaction,adk-code,codex,anthropic-clear,masking,full"


class Parts:
    """Exclusive process time per (policy, part): a part's time less that of the parts it entered."""

    def __init__(self) -> None:
        self.seconds: Counter[tuple[str, str]] = Counter()
        self.policy = "-"
        self._inner: list[float] = []

    def _done(self, part: str, started: float) -> None:
        spent = time.process_time() - started
        inner = self._inner.pop()
        self.seconds[self.policy, part] += spent - inner
        if self._inner:
            self._inner[-1] += spent

    def wrap(
        self, part: str, function: Callable[..., Any], policy: Callable[[tuple[Any, ...]], str] | None = None
    ) -> Callable[..., Any]:
        if inspect.iscoroutinefunction(function):

            @functools.wraps(function)
            async def timed_async(*args: Any, **kwargs: Any) -> Any:
                self.policy = policy(args) if policy is not None else self.policy
                started = time.process_time()
                self._inner.append(0.0)
                try:
                    return await function(*args, **kwargs)
                finally:
                    self._done(part, started)

            return timed_async

        @functools.wraps(function)
        def timed(*args: Any, **kwargs: Any) -> Any:
            self.policy = policy(args) if policy is not None else self.policy
            started = time.process_time()
            self._inner.append(0.0)
            try:
                return function(*args, **kwargs)
            finally:
                self._done(part, started)

        return timed


def _instrument(parts: Parts) -> None:
    from tiered_agent.bench import _cache_chain, _replay
    from tiered_agent.context._manager import ContextManager

    state = _replay._RunState
    _replay._step = parts.wrap("step", _replay._step, lambda a: a[1].policy.name)  # type: ignore[assignment]
    _replay._observations = parts.wrap(  # type: ignore[assignment]
        "observations", _replay._observations, lambda a: a[0].policy.name
    )
    for name in ("_decide", "_act", "_build", "prepare"):
        setattr(ContextManager, name, parts.wrap(name.strip("_"), getattr(ContextManager, name)))
    state.misses = parts.wrap("misses", state.misses)  # type: ignore[method-assign]
    state.retrieval_charge = parts.wrap("retrieval", state.retrieval_charge)  # type: ignore[method-assign]
    _replay._line_rulers = parts.wrap("line_rulers", _replay._line_rulers)  # type: ignore[assignment]
    _replay._regions = parts.wrap("regions", _replay._regions)  # type: ignore[assignment]
    track = _cache_chain.CacheTrack
    track.request = parts.wrap("cache", track.request)  # type: ignore[method-assign]
    state.of = classmethod(parts.wrap("runstate.of", state.of.__func__, lambda a: "-"))  # type: ignore[method-assign]
    _replay.full_tokens_unit = parts.wrap(  # type: ignore[assignment]
        "calibration", _replay.full_tokens_unit, lambda a: "-"
    )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", help="recorded runs (default: ../shared/trajectories)")
    parser.add_argument("--policies", default=PRESETS, help="comma-separated (default: the eight presets)")
    args = parser.parse_args()
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._importers import load_runs
    from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
    from tiered_agent.bench._report import build_document

    paths = [str(Path(p).resolve()) for p in args.paths] or [str(SHARED)]
    parts = Parts()
    _instrument(parts)
    runs = load_runs([Path(p) for p in paths]).runs
    chosen = resolve_policies(args.policies.split(","))
    started = time.process_time()
    result = replay_runs(runs, chosen, ReplaySettings(), workers=1)
    replayed = time.process_time()
    build_document(result, paths)
    ended = time.process_time()
    steps = sum(r.steps for r in result.runs)
    seconds = parts.seconds
    outside = replayed - started - sum(seconds.values())
    print(
        f"CPU {ended - started:.2f} s over {steps} steps: replay {replayed - started:.2f} s "
        f"(outside the parts {outside:.2f} s), document {ended - replayed:.2f} s"
    )
    policies = sorted({p for p, _ in seconds}, key=lambda p: (p != "-", p))
    names = sorted({n for _, n in seconds})
    print("policy".ljust(16) + "".join(n[:11].rjust(12) for n in names) + "     all")
    for policy in [*policies, "ALL"]:
        row = [sum(seconds[p, n] for p in policies) if policy == "ALL" else seconds[policy, n] for n in names]
        print(policy.ljust(16) + "".join(f"{v:12.2f}" for v in row) + f"{sum(row):8.2f}")


if __name__ == "__main__":
    main()
