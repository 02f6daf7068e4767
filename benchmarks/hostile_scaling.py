"""Does a policy's work grow faster than its input? Pathological outputs at two sizes, every preset.

A live run through a scripted model (:class:`tiered_agent.testing.FunctionModel`, no network): 24
iterations, each a ``bash`` call whose output has one of the shapes below, at ``--size`` characters and
at four times that (the call's command too, at a quarter of it). Each (preset, shape) prints the CPU
seconds at both sizes and their ratio; a policy whose work is linear in its input shows a ratio near 4
or under (fixed costs), a quadratic one near 16. It found the path ends' quadratic growth (one line of
``ab/ab/...`` is one reference: 7x slower at 20,000 parts, main c24235e), capped in abcaf6d.

    python benchmarks/hostile_scaling.py                   # every preset
    python benchmarks/hostile_scaling.py --policies tiered --size 16000

Exit 1 when any ratio exceeds ``--limit`` (default 8), so a regression is one command away.
CPU time, not wall time: still, on a shared machine, repeat before believing one ratio.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import anyio

from tiered_agent import Agent, RunLimits
from tiered_agent._messages import Message, ToolCall
from tiered_agent.context._presets import PRESETS
from tiered_agent.testing import FunctionModel, scripted_tools

SHAPES: dict[str, Callable[[int, int], str]] = {
    "slashes": lambda n, k: "ab/" * (n // 3) + f"f{k}.py",
    "dots": lambda n, k: "a." * (n // 2) + f"z{k}",
    "dashes": lambda n, k: "x-" * (n // 2) + f"z{k}",
    "camel": lambda n, k: "aB" * (n // 2) + f"z{k}",
    "json": lambda n, k: json.dumps({f"key_{i}": f"/v/{i}/{k}" for i in range(n // 16)}),
    "nested": lambda n, k: "[" * (n // 4) + str(k) + "]" * (n // 4) + " x_1" * (n // 8),
    "lines": lambda n, k: "\n".join(f"line_{i} {k}" for i in range(n // 12)),
    "blank": lambda n, k: "\n" * n + f"end_{k}",
    "quotes": lambda n, k: "'\"`" * (n // 3) + f"q_{k}",
    "numbers": lambda n, k: " ".join(str(i) for i in range(n // 6)) + f" k{k}",
    "diff": lambda n, k: "\n".join(
        f"+++ b/src/f{i}.py\n@@ -{i},3 +{i},4 @@\n-a_{i}\n+b_{i}" for i in range(n // 40)
    ),
}
ITERATIONS = 24


def _script(shape: str, size: int) -> tuple[list[Message], dict[str, str]]:
    replies, outputs = [], {}
    for k in range(ITERATIONS):
        ref = f"r{k}"
        command = f"cat {SHAPES[shape](size // 4, k)}"  # what the agent writes is hostile too
        call = ToolCall(ref, "bash", json.dumps({"command": command, "ref": ref}))
        replies.append(Message("assistant", f"Step {k}.", (call,)))
        outputs[ref] = SHAPES[shape](size, k)
    replies.append(Message("assistant", "done"))
    return replies, outputs


async def _run(preset: str, shape: str, size: int, folder: Path) -> float:
    replies, outputs = _script(shape, size)
    model = FunctionModel.scripted(replies, window=4_000_000)
    agent = Agent(
        model,
        tools=scripted_tools(outputs)[:1],  # bash
        context=preset,
        limits=RunLimits(max_iterations=ITERATIONS + 2),
        trace_dir=folder / f"{preset}-{shape}-{size}",
    )
    started = time.process_time()
    result = await agent.run("Work on the files.")
    spent = time.process_time() - started
    if result.error:
        raise SystemExit(f"{preset} on {shape} at {size:,} characters: {result.error}")
    return spent


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--policies", default=",".join(PRESETS))
    parser.add_argument("--size", type=int, default=8_000, help="characters of each output (and 4x)")
    parser.add_argument("--limit", type=float, default=8.0)
    args = parser.parse_args(argv)
    from tiered_agent._logging import configure_logging

    configure_logging(level="warning")  # the agents' debug lines are not this script's output
    worst = 0.0
    with tempfile.TemporaryDirectory() as folder:
        for preset in args.policies.split(","):
            anyio.run(_run, preset, "lines", args.size, Path(folder), backend="asyncio")  # imports, memos
            for shape in SHAPES:
                small = anyio.run(_run, preset, shape, args.size, Path(folder), backend="asyncio")
                large = anyio.run(_run, preset, shape, 4 * args.size, Path(folder), backend="asyncio")
                ratio = large / max(small, 1e-3)
                worst = max(worst, ratio)
                print(f"{preset:15s} {shape:8s} {small:6.2f} s {large:6.2f} s  x{ratio:.1f}", flush=True)
    print(f"worst ratio x{worst:.1f} (limit x{args.limit:g})")
    return 1 if worst > args.limit else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
