"""Fit the time-aware cache models on real agent sessions: replay `full`, compare with the recorded usage.

    python benchmarks/session_fit.py [PATH ...]   (default: ../shared/sessions)
    python benchmarks/session_fit.py --grid        (also search the fitted parameters)

Per agent family (Claude Code, Codex, ...) it prints what `validation` reports in the bench JSON:
the per-step mean absolute error of the cached share, the total cached share simulated vs
recorded, `full`'s dollars vs the recorded usage's dollars, and the calibrated prompt-size error;
then the recorded facts the fitted constants in `tiered_agent/_providers.py` come from (first
requests that read a shared prefix, the read share after idle gaps). `full`'s prompts are built
once per run; each candidate cache model only re-runs the cache simulation over them.
"""

from __future__ import annotations

import dataclasses
import statistics
import sys
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from tiered_agent._messages import Message, Usage
from tiered_agent._providers import CacheModel, model_prices, switched_min_tokens
from tiered_agent.bench._caching import CacheSimulator, IdCounter, PromptEncoder
from tiered_agent.bench._calibration import Calibration, fit
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._pricing import RunCosting, family_of, long_ttl_steps, plan_run
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import policy_config, replay_prompts

SHARED = Path(__file__).resolve().parents[2] / "shared"


@dataclass
class Prompts:
    """One run's `full` prompts (messages and tool schemas per step) and its plan."""

    run: RecordedRun
    steps: list[tuple[list[Message], list[dict[str, object]]]]
    prefix: int
    scale: float
    cache: CacheModel
    price_model: str | None


def build(runs: Sequence[RecordedRun], calibration: Calibration) -> list[Prompts]:
    async def one(run: RecordedRun) -> Prompts:
        steps = []
        async for prepared in replay_prompts(run, policy_config("full")):
            steps.append((list(prepared.built.messages), [dict(t) for t in prepared.tools]))
        prefix = calibration.prefix(run.run_id)
        plan = plan_run(run.model, "auto", None, calibration.providers, prefix=prefix)
        return Prompts(run, steps, prefix.tokens, plan.token_scale, plan.cache_model, plan.price_model)

    async def main() -> list[Prompts]:
        return [await one(run) for run in runs]

    return anyio.run(main)


@dataclass
class Fit:
    steps: int = 0
    error: float = 0.0
    sim_cached: float = 0.0
    sim_prompt: float = 0.0
    rec_cached: float = 0.0
    rec_prompt: float = 0.0
    sim_usd: float = 0.0
    rec_usd: float = 0.0
    size_error: float = 0.0

    def line(self, label: str) -> str:
        gap = (self.sim_cached / self.sim_prompt - self.rec_cached / self.rec_prompt) * 100
        usd = f"USD {self.sim_usd / self.rec_usd:.3f}x" if self.rec_usd else "USD n/a"
        return (
            f"{label:<14} {self.steps:5d} steps  MAE {self.error / self.steps:.4f}  cached "
            f"{self.sim_cached / self.sim_prompt:.4f} vs {self.rec_cached / self.rec_prompt:.4f} "
            f"({gap:+.2f} pt)  {usd}  size error {self.size_error / self.steps:.4f}"
        )


def simulate(
    prompts: Prompts, counter: IdCounter, cache: CacheModel, calibration: Calibration, fits: dict[str, Fit]
) -> None:
    run = prompts.run
    rules = (
        dataclasses.replace(cache, min_tokens=prompts.cache.min_tokens)
        if cache.name == prompts.cache.name
        else prompts.cache
    )
    simulator = CacheSimulator(PromptEncoder(counter), rules, prompts.scale, prompts.prefix)
    long = long_ttl_steps(run.usage, run.cache_writes_1h)
    turns = run.turns_after_reasoning()
    costing = RunCosting.of(
        prompts.price_model,
        scale=prompts.scale,
        recorded_model=run.model,
        usage=run.usage,
        calibration=calibration.providers,
        writes_1h=run.cache_writes_1h,
        step_models=run.step_models,
        step_billing=run.step_billing,
    )
    priced = prompts.price_model is not None and model_prices(run.model or "") is not None
    family = fits[family_of(run.format)]
    for index, (messages, tools) in enumerate(prompts.steps):
        step = index + 1
        use = simulator.request(
            messages,
            tools,
            run.route(step),
            at=run.time(step),
            long_ttl=step in long,
            new_turn_after_reasoning=step in turns,
            partition=run.cache_partition(step),
            min_tokens=switched_min_tokens(run.model_at(step), rules),
        )
        usage = run.usage[index] if index < len(run.usage) else None
        if usage is None or usage.prompt_tokens <= 0:
            continue
        prompt = counter.count_prompt(messages, tools) + prompts.prefix
        cached = min(use.read, prompt)
        written = min(use.written, prompt - cached)
        family.steps += 1
        family.error += abs(cached / prompt - usage.cached_tokens / usage.prompt_tokens)
        family.sim_cached, family.sim_prompt = family.sim_cached + cached, family.sim_prompt + prompt
        family.rec_cached += usage.cached_tokens
        family.rec_prompt += usage.prompt_tokens
        family.size_error += abs(prompts.scale * prompt - usage.prompt_tokens) / usage.prompt_tokens
        if priced:
            writes = run.writes_1h(step)
            recorded = usage.cost if usage.cost is not None else costing.recorded_usd(usage, writes, step)
            family.rec_usd += recorded or 0.0
            output = usage.completion_tokens
            family.sim_usd += costing.step_usd(step, prompt, cached, written, output)


def evaluate(
    all_prompts: Sequence[Prompts], counter: IdCounter, calibration: Calibration, cache: CacheModel
) -> dict[str, Fit]:
    fits: dict[str, Fit] = defaultdict(Fit)
    for prompts in all_prompts:
        candidate = cache if cache.name == prompts.cache.name else prompts.cache
        simulate(prompts, counter, candidate, calibration, fits)
    return dict(sorted(fits.items()))


def recorded_facts(runs: Sequence[RecordedRun], calibration: Calibration) -> None:
    """The recorded numbers the fitted constants in tiered_agent/_providers.py come from."""
    claude = [r for r in runs if r.format == "claude-code" and r.usage and r.usage[0] is not None]
    if claude:
        shared_prefix_facts(claude, calibration)
        rewrite_facts(claude)
        gap_facts(claude)
    for run in (r for r in runs if r.format == "codex"):
        codex_facts(run)


def _timed_steps(run: RecordedRun) -> Iterator[tuple[Usage, float]]:
    """Each request after the first with recorded usage and time: its usage and the gap before it."""
    for k in range(1, run.steps):
        use, now, before = run.usage[k], run.time(k + 1), run.time(k)
        if use is not None and use.prompt_tokens and now is not None and before is not None:
            yield use, now - before


def shared_prefix_facts(claude: Sequence[RecordedRun], calibration: Calibration) -> None:
    """Claude Code's first requests: how often and how much of the calibrated prefix they read."""
    scale = calibration.providers["anthropic"].scale if "anthropic" in calibration.providers else 1.0
    shares = []
    for run in claude:
        first, prefix = run.usage[0], calibration.prefix(run.run_id).tokens
        if first is not None and first.cached_tokens and prefix:
            shares.append(first.cached_tokens / (prefix * scale))
    print(
        f"Claude Code first requests: {len(claude)}; shared_warm = {len(shares)}/{len(claude)} = "
        f"{len(shares) / len(claude):.3f} read a shared prefix; shared_share = median read / calibrated "
        f"prefix = {statistics.median(shares or [0.0]):.3f}"
    )


def rewrite_facts(claude: Sequence[RecordedRun]) -> None:
    """How often a request within 5 minutes of the previous one read at most half its prompt."""
    live = broken = 0
    for run in claude:
        for use, gap in _timed_steps(run):
            if gap <= 300:
                live += 1
                broken += use.cached_tokens * 2 <= use.prompt_tokens
    rate = broken / max(live, 1)
    print(f"  rewrite_rate = {broken}/{live} = {rate:.4f} (read <= half the prompt, gap <= 5 min)")


def gap_facts(claude: Sequence[RecordedRun]) -> None:
    """The share of the prompt read from the cache by idle gap and by the lifetime the run writes."""
    gaps: dict[tuple[str, str], list[float]] = defaultdict(list)
    for run in claude:
        long = "1h" if any(run.cache_writes_1h) else "5m"
        for use, gap in _timed_steps(run):
            bucket = "<5m" if gap <= 300 else "5-60m" if gap <= 3600 else ">1h"
            gaps[(long, bucket)].append(use.cached_tokens / use.prompt_tokens)
    for (ttl, bucket), shares in sorted(gaps.items()):
        mean = statistics.mean(shares)
        print(f"  {ttl} writes, gap {bucket:>5}: {len(shares):4d} steps, read share {mean:.3f}")


def codex_facts(run: RecordedRun) -> None:
    """OpenAI: the share of the cacheable previous prompt served, by idle gap (routing, idle survival)."""
    served: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for k in range(1, run.steps):
        use, last, now, before = run.usage[k], run.usage[k - 1], run.time(k + 1), run.time(k)
        if use is None or last is None or now is None or before is None:
            continue
        gap = now - before
        bucket = "<5m" if gap <= 300 else "5-30m" if gap <= 1800 else "30-60m" if gap <= 3600 else ">1h"
        cacheable = min(use.prompt_tokens, last.prompt_tokens) // 128 * 128
        entry = served[bucket]
        entry[0], entry[1], entry[2] = entry[0] + use.cached_tokens, entry[1] + cacheable, entry[2] + 1
    for bucket, (cached, cacheable, steps) in sorted(served.items()):
        share = cached / max(cacheable, 1)
        name = run.run_id[-12:]
        print(f"Codex {name} gap {bucket:>6}: {steps:3d} steps, served {share:.3f} of the cacheable prefix")


def main(argv: Sequence[str]) -> None:
    grid = "--grid" in argv
    paths = [Path(a) for a in argv if a != "--grid"] or [SHARED / "sessions", SHARED / "trajectories"]
    runs = [r for r in load_runs(paths).runs if any(u is not None and u.prompt_tokens for u in r.usage)]
    counter = IdCounter("o200k_base")
    calibration = fit(runs, counter)
    for provider, c in calibration.providers.items():
        what = f"{c.fit}, {c.runs} runs, {c.steps} steps, {c.prefix_runs} prefixes"
        print(f"{provider}: scale {c.scale:.4f} ({what})")
    recorded_facts(runs, calibration)
    prompts = build(runs, calibration)
    print("fitted models:")
    for family, result in evaluate(prompts, counter, calibration, CacheModel("none", None)).items():
        print("  " + result.line(family))
    if grid:
        search(prompts, counter, calibration)


def search(prompts: Sequence[Prompts], counter: IdCounter, calibration: Calibration) -> None:
    """One-at-a-time sweeps around the fitted constants (how sensitive the fit is to each)."""
    from tiered_agent._providers import CACHE_MODELS

    anthropic = CACHE_MODELS["anthropic"]
    claude = [p for p in prompts if p.run.format == "claude-code"]
    sweeps: dict[str, tuple[Any, ...]] = {
        "shared_share": (0.5, 0.6, 0.7, 0.8),
        "shared_warm": (0.4, 0.5, 0.59, 0.7),
        "ttl_s": (300.0, 330.0, 360.0),
        "rewrite_rate": (0.0, 0.01, 0.013, 0.02),
    }
    for field_name, values in sweeps.items():
        for value in values:
            rules = dataclasses.replace(anthropic, **{field_name: value})
            result = evaluate(claude, counter, calibration, rules).get("claude-code")
            if result is not None:
                print(f"  anthropic {field_name}={value}: " + result.line("claude-code"))
    openai = CACHE_MODELS["openai"]
    codex = [p for p in prompts if p.run.format == "codex"]
    for loss in (0.0, 0.01, 0.02, 0.034):
        rules = dataclasses.replace(openai, routing_loss=loss)
        result = evaluate(codex, counter, calibration, rules).get("codex")
        if result is not None:
            print(f"  openai routing_loss={loss}: " + result.line("codex"))


if __name__ == "__main__":
    main(sys.argv[1:])
