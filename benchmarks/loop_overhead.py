"""Per-iteration overhead of the agent loop itself, excluding the model.

The model is a FunctionModel that answers instantly with one read-only tool
call per iteration (the tool reads a real file from a temporary workspace).
Overhead of iteration k = time from the model's reply at k-1 to the model
request at k: tool dispatch and execution, dedup, history and trace appends,
the trace flush, and building + counting the next prompt.

    python benchmarks/loop_overhead.py [--iterations 150] [--policy tiered]
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import anyio

from tiered_agent import Agent, RunLimits, Workspace, workspace_tools
from tiered_agent._logging import configure_logging
from tiered_agent._trace import Event, ModelRequest, ModelResponse
from tiered_agent.testing import AgentRequest, FunctionModel, calls, text


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


async def measure(iterations: int, policy: str) -> dict[str, float]:
    stamps: list[tuple[str, int, float]] = []

    def on_event(event: Event) -> None:
        if isinstance(event, ModelRequest | ModelResponse):
            stamps.append((event.type, event.iteration, time.perf_counter()))

    def reply(request: AgentRequest) -> object:
        if request.index + 1 >= iterations:
            return text("done")
        return calls((f"c{request.index}", "read_file", {"path": f"f{request.index % 40}.py"}))

    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "ws"
        root.mkdir()
        for i in range(40):
            (root / f"f{i}.py").write_text("".join(f"x_{i}_{n} = {n}  # some code\n" for n in range(120)))
        agent = Agent(
            FunctionModel(reply),
            tools=workspace_tools(Workspace(root)),
            context=policy,
            limits=RunLimits(max_iterations=iterations),
            trace_dir=Path(tmp) / "traces",
            on_event=on_event,
        )
        started = time.perf_counter()
        result = await agent.run("benchmark")
        total = time.perf_counter() - started
    responses = {it: t for kind, it, t in stamps if kind == "model_response"}
    overheads = [
        t - responses[it - 1] for kind, it, t in stamps if kind == "model_request" and it - 1 in responses
    ]
    ms = [o * 1000 for o in overheads]
    return {
        "iterations": len(result.iterations),
        "median_ms": statistics.median(ms),
        "p99_ms": percentile(ms, 0.99),
        "max_ms": max(ms),
        "total_s": total,
        "savings": result.savings,
    }


def main() -> None:
    configure_logging(level="warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--policy", default="tiered")
    args = parser.parse_args()
    stats = anyio.run(measure, args.iterations, args.policy, backend="asyncio")
    print(
        f"policy={args.policy} iterations={stats['iterations']} loop overhead per iteration: "
        f"median {stats['median_ms']:.2f} ms, p99 {stats['p99_ms']:.2f} ms, max {stats['max_ms']:.2f} ms; "
        f"whole run {stats['total_s']:.2f} s; prompt savings vs full history {stats['savings']:.1%}"
    )


if __name__ == "__main__":
    main()
