"""Prompt-building time per iteration on a 150-iteration history, for every context preset.

The history is a real recorded run (the bundled 145-step django__django-16560
mini-swe-agent run) continued to 150 iterations by repeating its last steps
with fresh call ids. For each iteration k = 1..150 we time

* ``build``: the prompt built by the run's step runtimes (``assemble``, what
  ``prepare`` spends in the steps) with the summary and the aging schedule the
  run's manager had at that step, right after that step's ``prepare``, and
* ``prepare``: the whole per-iteration context step of the live loop
  (``ContextManager.prepare``: summary trigger, aging decision, build, counting
  the prompt and the full-history counterfactual, safety-net check), with the
  run's model (``google/gemini-3-pro-preview``: its cache and prices decide
  when iterations age),

after one warm-up pass (the live loop sees each message once, so a cold
pass would charge tokenization of every message to every iteration). Each
pass runs ``--repeat`` times (default 5) and every iteration keeps its fastest
time: the noise of a shared machine goes, the cost of an iteration (a summary
landing in ``prepare``) stays.

    python benchmarks/prompt_build.py [--iterations 150] [--repeat 5]
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from pathlib import Path

import anyio

from tiered_agent._logging import configure_logging
from tiered_agent._messages import Message
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._importers import load_runs
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._presets import PRESETS
from tiered_agent.context._step import participants
from tiered_agent.context.pipeline._build import assemble
from tiered_agent.context.pipeline._draft import BuildContext

RUN = Path(__file__).resolve().parents[1] / "traces" / "mini-swe-agent" / "django__django-16560.jsonl"


def history_of(iterations: int) -> list[Message]:
    run = load_runs([RUN], strict=True).runs[0]
    messages = list(run.messages)
    last = max(m.iteration for m in messages)
    donors = [m for m in messages if m.iteration > last - 10]
    while last < iterations:
        shift = last + 1 - min(m.iteration for m in donors)
        for m in donors:
            it = m.iteration + shift
            if it > iterations:
                break
            calls = tuple(dataclasses.replace(c, id=f"{c.id}_r{it}") for c in m.tool_calls)
            tid = f"{m.tool_call_id}_r{it}" if m.tool_call_id else None
            messages.append(dataclasses.replace(m, iteration=it, tool_calls=calls, tool_call_id=tid))
        last = max(m.iteration for m in messages)
    return messages


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]


def fastest(passes: list[list[float]]) -> list[float]:
    """Per iteration, the fastest of several passes."""
    return [min(times) for times in zip(*passes, strict=True)]


def prefixes(history: list[Message], iterations: int) -> list[list[Message]]:
    return [[m for m in history if m.iteration < k] for k in range(1, iterations + 1)]


MODEL = "google/gemini-3-pro-preview"  # the recorded run's model


async def time_prepare(
    name: str, steps: list[list[Message]], counter: TokenCounter
) -> tuple[list[float], list[float]]:
    """Per step: the time of ``prepare``, and of the run's runtimes building that prompt again."""
    config = PRESETS[name]
    prepare: list[float] = []
    build: list[float] = []
    async with ContextManager(
        config,
        counter=counter,
        context_window=128_000,
        background=False,
        enforce_hard_limit=False,
        model=MODEL,
    ) as manager:
        retrieval = manager.policy.retrieval_active
        runtimes = manager.runtimes
        plan = (participants(runtimes, "apply"), participants(runtimes, "finish"))  # as the manager has it
        for history in steps:
            schema_sent = manager.schema_sent  # as prepare's build reads it
            started = time.perf_counter()
            await manager.prepare(history)
            prepare.append((time.perf_counter() - started) * 1000)
            started = time.perf_counter()
            context = BuildContext.of(  # the context prepare built with (Tidy and Truncate carry state
                history,  # from the previous build: another context would make them start over)
                manager.summary,
                counter,
                retrieval=retrieval,
                schedule=manager.schedule,
                schema_sent=schema_sent,
            )
            assemble(context, runtimes, plan=plan)
            build.append((time.perf_counter() - started) * 1000)
    return prepare, build


def main() -> None:
    configure_logging(level="warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--iterations", type=int, default=150)
    parser.add_argument("--repeat", type=int, default=5, help="passes; per iteration the fastest")
    args = parser.parse_args()
    history = history_of(args.iterations)
    steps = prefixes(history, args.iterations)
    counter = TokenCounter("o200k_base")
    print(
        f"history: {args.iterations} iterations, {len(history)} messages, "
        f"{sum(len(m.text) for m in history):,} chars"
    )
    print(f"{'policy':16} {'build median':>13} {'build p99':>10} {'prepare median':>15} {'prepare p99':>12}")
    for name in PRESETS:
        anyio.run(time_prepare, name, steps, counter, backend="asyncio")  # warm-up: tokenization
        runs = range(args.repeat)
        passes = [anyio.run(time_prepare, name, steps, counter, backend="asyncio") for _ in runs]
        prepare = fastest([times for times, _ in passes])
        build = fastest([times for _, times in passes])
        print(
            f"{name:16} {statistics.median(build):10.3f} ms {percentile(build, 0.99):7.3f} ms "
            f"{statistics.median(prepare):12.3f} ms {percentile(prepare, 0.99):9.3f} ms"
        )


if __name__ == "__main__":
    main()
