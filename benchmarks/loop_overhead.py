"""Per-iteration overhead of the agent loop itself, excluding the model, per 100-iteration bucket.

The model answers at once with one read-only tool call per iteration (the tool
reads a real file from a temporary workspace, 40 files in turn, so the dedup
cache serves most reads after iteration 40). Like a real network call it
suspends (three ``anyio.sleep(0)``), so background work (the summarizer) gets
the event loop there, as it would during a real model call. It keeps nothing
(``FunctionModel`` keeps every prompt, which would charge the garbage
collector of a long run to the loop), and its context window is 1M tokens so
that ``full`` runs every iteration too (128k stops it at ~67 with its hard
limit).

Overhead of iteration k = time from the model's reply at k-1 to the model
being called at k: tool dispatch and execution, dedup, history and trace
appends, the trace flush, building and counting the next prompt, and turning
it into the request's message dicts.

For each policy it prints the median, p99 and max per bucket of 100 iterations
(2-101, 102-201, 202-301, ...), the overall max, and where each background
summary landed: in the overhead of iteration k (the time is charged to it), or
during a model call (then it costs the loop nothing; the next iteration pays
for the prompt's rewrite).

Each policy runs ``--repeat`` times (default 3) and each iteration keeps its fastest run: the
noise of a shared machine goes, what the loop does at that iteration stays (every run repeats
it). ``max cpu ms`` is the process's CPU time in the slowest iteration of the bucket.

``--lines`` sets the size of each file read (120 lines, 3.3 kB; 20000 lines is 0.6 MB, for the cost
of large outputs: redaction, the trace, truncation). ``--heap litellm`` imports litellm first, as
a live run does (its ~300k objects make every full garbage collection a stall of ~200 ms, at an
iteration that differs from run to run: see the slowest single iteration); ``--heap cli`` imports
it as the CLI does (``settle_heap_on_import``: frozen out of the collector's way).

    python benchmarks/loop_overhead.py [--iterations 301] [--policy tiered,kb-labs-adr,full] [--repeat 3]
                                       [--lines 120] [--heap bare|litellm|cli]
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tiered_agent import Agent, RunLimits, Workspace, workspace_tools
from tiered_agent._logging import configure_logging
from tiered_agent._messages import Message, Usage
from tiered_agent._model import ModelReply
from tiered_agent._trace import Event, SummaryEvent
from tiered_agent.testing import calls, text

BUCKET = 100
WINDOW = 1_000_000
SUSPENSIONS = 3  # a network call suspends many times; the summarizer needs a few to land


@dataclass(frozen=True)
class Landing:
    """Where a summary landed: in the overhead of ``iteration`` (True) or during its model call."""

    covers: tuple[int, int]
    iteration: int
    in_overhead: bool


@dataclass(frozen=True)
class Measured:
    policy: str
    iterations: int
    overhead_ms: dict[int, float]  # iteration -> overhead before its model request (wall clock)
    cpu_ms: dict[int, float]  # iteration -> the process's CPU time in that overhead
    landings: tuple[Landing, ...]
    total_s: float
    savings: float


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def _workspace(root: Path, lines: int) -> None:
    root.mkdir()
    for i in range(40):
        (root / f"f{i}.py").write_text("".join(f"x_{i}_{n} = {n}  # some code\n" for n in range(lines)))


def _landing(summary: SummaryEvent, at: float, stamps: list[tuple[str, int, float]]) -> Landing:
    """The interval of the loop a summary event fell in."""
    before = [(kind, it) for kind, it, t in stamps if t <= at]
    kind, it = before[-1] if before else ("reply", 0)
    # After a reply (k-1), before the next call: the overhead of k. After a call: its model time.
    if kind == "reply":
        return Landing((summary.first_iteration, summary.last_iteration), it + 1, True)
    return Landing((summary.first_iteration, summary.last_iteration), it, False)


@dataclass
class InstantModel:
    """A model that answers at once (after one suspension) and keeps nothing; stamps each call."""

    reply: Callable[[int], Message]
    stamps: list[tuple[str, int, float, float]]
    name: str = "bench/gpt-4o"
    calls: int = 0

    def context_window(self) -> int | None:
        return WINDOW

    async def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> ModelReply:
        self.calls += 1
        self.stamps.append(("call", self.calls, time.perf_counter(), time.process_time()))
        for _ in range(SUSPENSIONS):  # a real model call suspends: background work runs here
            await anyio.sleep(0)
        message = self.reply(self.calls)
        self.stamps.append(("reply", self.calls, time.perf_counter(), time.process_time()))
        return ModelReply(message, Usage(completion_tokens=1, requests=1), "stop", self.name)


async def measure(iterations: int, policy: str, lines: int = 120) -> Measured:
    stamps: list[tuple[str, int, float, float]] = []
    summaries: list[tuple[SummaryEvent, float]] = []

    def on_event(event: Event) -> None:
        if isinstance(event, SummaryEvent):
            summaries.append((event, time.perf_counter()))

    def reply(number: int) -> Message:
        if number >= iterations:
            return text("done")
        return calls((f"c{number}", "read_file", {"path": f"f{number % 40}.py"}))

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        _workspace(root, lines)
        agent = Agent(
            InstantModel(reply, stamps),
            tools=workspace_tools(Workspace(root)),
            context=policy,
            limits=RunLimits(max_iterations=iterations),
            trace_dir=Path(tmp) / "traces",
            on_event=on_event,
        )
        started = time.perf_counter()
        result = await agent.run("benchmark")
        total = time.perf_counter() - started
    replies = {it: (t, cpu) for kind, it, t, cpu in stamps if kind == "reply"}
    calls_at = [(it, t, cpu) for kind, it, t, cpu in stamps if kind == "call" and it - 1 in replies]
    overhead = {it: (t - replies[it - 1][0]) * 1000 for it, t, _ in calls_at}
    cpu_ms = {it: (cpu - replies[it - 1][1]) * 1000 for it, _, cpu in calls_at}
    walls = [(kind, it, t) for kind, it, t, _ in stamps]
    landings = tuple(_landing(event, at, walls) for event, at in summaries)
    return Measured(policy, len(result.iterations), overhead, cpu_ms, landings, total, result.savings)


def fastest(runs: list[Measured]) -> Measured:
    """Per iteration, the fastest of several runs: the machine's noise (other processes) goes, what the
    loop does at that iteration (a summary landing, a rewrite) stays, since every run repeats it."""
    first = runs[0]
    overhead = {it: min(r.overhead_ms.get(it, float("inf")) for r in runs) for it in first.overhead_ms}
    cpu = {it: min(r.cpu_ms.get(it, float("inf")) for r in runs) for it in first.cpu_ms}
    return Measured(
        first.policy, first.iterations, overhead, cpu, first.landings, first.total_s, first.savings
    )


def buckets(overhead: dict[int, float]) -> list[tuple[str, list[float]]]:
    """Iterations 2-101, 102-201, ...: the overhead values of each bucket."""
    out: list[tuple[str, list[float]]] = []
    last = max(overhead, default=1)
    start = 2
    while start <= last:
        stop = min(start + BUCKET - 1, last)
        out.append((f"{start}-{stop}", [overhead[k] for k in range(start, stop + 1) if k in overhead]))
        start += BUCKET
    return out


def report(measured: Measured) -> str:
    lines = [
        f"policy={measured.policy} iterations={measured.iterations} whole run {measured.total_s:.2f} s, "
        f"prompt savings vs full history {measured.savings:.1%}",
        f"  {'iterations':>10} {'median ms':>10} {'p99 ms':>8} {'max ms':>8} {'max cpu ms':>11}",
    ]
    for (name, values), (_, cpu) in zip(buckets(measured.overhead_ms), buckets(measured.cpu_ms), strict=True):
        if values:
            lines.append(
                f"  {name:>10} {statistics.median(values):10.2f} {percentile(values, 0.99):8.2f} "
                f"{max(values):8.2f} {max(cpu):11.2f}"
            )
    values = list(measured.overhead_ms.values())
    worst = max(measured.overhead_ms, key=lambda k: measured.overhead_ms[k])
    lines.append(
        f"  {'all':>10} {statistics.median(values):10.2f} {percentile(values, 0.99):8.2f} "
        f"{max(values):8.2f}  (max at iteration {worst})"
    )
    if measured.landings:
        lines.append("  summaries landed (ms = overhead of the iteration that paid for it):")
        lines.extend(f"    {_where(landing, measured.overhead_ms)}" for landing in measured.landings)
    return "\n".join(lines)


def _where(landing: Landing, overhead: dict[int, float]) -> str:
    first, last = landing.covers
    it = landing.iteration
    if it not in overhead and it > 1:
        return f"{first}-{last}: after the last model call (the run's end waits for it)"
    if landing.in_overhead:
        return f"{first}-{last}: in the overhead of iteration {it}, {overhead.get(it, 0.0):.2f} ms"
    after = overhead.get(it + 1)
    paid = "" if after is None else f"; iteration {it + 1} rebuilds the prompt, {after:.2f} ms"
    return f"{first}-{last}: during the model call of iteration {it}{paid}"


class FullCollections:
    """The garbage collector's full (generation 2) collections while recording, with their pauses."""

    def __init__(self) -> None:
        self.pauses_ms: list[float] = []
        self._started = 0.0
        gc.callbacks.append(self._observe)

    def _observe(self, phase: str, info: dict[str, Any]) -> None:
        if info["generation"] != 2:
            return
        if phase == "start":
            self._started = time.perf_counter()
        else:
            self.pauses_ms.append((time.perf_counter() - self._started) * 1000)

    def take(self) -> list[float]:
        pauses, self.pauses_ms = self.pauses_ms, []
        return pauses


def main() -> None:
    configure_logging(level="warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=301)
    parser.add_argument("--policy", default="tiered,kb-labs-adr,full", help="comma-separated presets")
    parser.add_argument("--repeat", type=int, default=3, help="runs per policy; per iteration the fastest")
    parser.add_argument("--lines", type=int, default=120, help="lines per file read (about 27 chars each)")
    parser.add_argument(
        "--heap",
        choices=("bare", "litellm", "cli"),
        default="bare",
        help="bare: no litellm; litellm: imported first, as in a live run; cli: imported as the CLI does",
    )
    args = parser.parse_args()
    if args.heap != "bare":
        from tiered_agent._litellm import import_litellm, settle_heap_on_import

        if args.heap == "cli":
            settle_heap_on_import()
        import_litellm()
    collections = FullCollections()
    for policy in args.policy.split(","):
        collections.take()
        runs = [
            anyio.run(measure, args.iterations, policy.strip(), args.lines, backend="asyncio")
            for _ in range(args.repeat)
        ]
        print(report(fastest(runs)))
        pauses = collections.take()
        longest = f", the longest {max(pauses):.1f} ms" if pauses else ""
        print(f"  full garbage collections during the {len(runs)} runs: {len(pauses)}{longest}")
        slowest = max(((r.overhead_ms[k], k) for r in runs for k in r.overhead_ms), default=(0.0, 0))
        print(f"  slowest single iteration of the {len(runs)} runs: {slowest[0]:.2f} ms (at {slowest[1]})")


if __name__ == "__main__":
    main()
