"""Print the prompt a context policy builds at a given step of a recorded run, readably.

The run is replayed exactly as ``tiered-agent bench FILE`` replays it (the live
``ContextManager``, the same dispatch, the run's cache and price model for the
aging decisions, calibrated on the file's runs: their unrecorded prefix, token
scale and cache lifetime), up to model call ``--step``; the prompt that call would have
been sent is printed message by message, with its size against the full history.

    python benchmarks/show_prompt.py RUNFILE --policy tiered --step 60
    python benchmarks/show_prompt.py tau-bench.json --run tau-bench/task3_trial0 --step 12
    python benchmarks/show_prompt.py RUNFILE --policy-json policy.json --step 40 --max-chars 2000

``--policy`` takes a preset or a ``tiered:<tier>-only`` ablation; ``--policy-json`` a
policy written by ``Policy.to_dict()``. ``--max-chars`` shortens each message shown
(head and tail; 0: no limit), never the prompt itself.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import anyio
import orjson

from tiered_agent._errors import ConfigurationError
from tiered_agent._logging import configure_logging
from tiered_agent._messages import Message
from tiered_agent._tokens import TokenCounter
from tiered_agent._trace import redact
from tiered_agent.bench._calibration import fit
from tiered_agent.bench._importers import load_file
from tiered_agent.bench._prompts import select
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, bench_plan, policy_config, prompt_at
from tiered_agent.context._policy import Policy


def _pick(runs: list[RecordedRun], wanted: str | None) -> RecordedRun:
    if wanted is None:
        return runs[0]
    found = select(runs, [wanted])
    if not found:
        raise ConfigurationError(
            f"no run {wanted!r} in the file; it holds {', '.join(r.run_id for r in runs[:8])}..."
        )
    return found[0]


def _clip(text: str, limit: int) -> str:
    if limit <= 0 or len(text) <= limit:
        return text
    half = limit // 2
    return (
        f"{text[:half]}\n   «… {len(text) - 2 * half:,} chars of this message not printed …»\n{text[-half:]}"
    )


def render(message: Message, limit: int) -> str:
    """One message as printed (secrets redacted, as the runtime's console shows them): a header
    line, its content, its calls."""
    message = redact(message)
    extra = f" {message.tool_call_id}" if message.role == "tool" else ""
    lines = [f"── {message.role} · iteration {message.iteration}{extra} " + "─" * 20]
    if message.text:
        lines.append(_clip(message.text, limit))
    for call in message.tool_calls:
        lines.append(f"→ call {call.name} ({call.id}): {_clip(call.arguments, limit)}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    configure_logging(level="warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runfile", type=Path)
    parser.add_argument("--policy", default="tiered")
    parser.add_argument("--policy-json", type=Path, help="a policy as Policy.to_dict() wrote it")
    parser.add_argument("--step", type=int, default=10, help="model call (1-based; past the end: the last)")
    parser.add_argument("--run", help="the run id, for files that hold several runs (tau-bench)")
    parser.add_argument("--cache-model", default="auto")
    parser.add_argument("--price-model")
    parser.add_argument("--max-chars", type=int, default=0, help="shorten each printed message (0: never)")
    args = parser.parse_args(argv)
    try:
        policy = (
            Policy.from_dict(orjson.loads(args.policy_json.read_bytes()))
            if args.policy_json
            else policy_config(args.policy)
        )
        runs = load_file(args.runfile)
        run = _pick(runs, args.run)
        settings = ReplaySettings(cache_model=args.cache_model, price_model=args.price_model)
        plan = bench_plan(run, settings, fit(runs, TokenCounter(settings.tokenizer)))
        prepared = anyio.run(prompt_at, run, policy, args.step, settings, plan)
    except ConfigurationError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    messages, full = prepared.built.messages, prepared.counterfactual_tokens
    steps = min(args.step, run.steps)
    print(
        f"{run.run_id} · policy {policy.name} · model call {steps} of {run.steps} · "
        f"{len(messages)} messages, {prepared.prompt_tokens:,} tokens (full history: {full:,}, "
        f"{1 - prepared.prompt_tokens / full:.0%} saved) · tools: "
        + ", ".join(str(t.get("function", {}).get("name")) for t in prepared.tools)
    )
    if plan.prefix.tokens or plan.long_ttl:
        ttl = "; writes priced at the 1-hour cache's price" if plan.long_ttl else ""
        print(f"sent after an unrecorded prefix of {plan.prefix.tokens:,} tokens (calibrated){ttl}")
    aging = prepared.record().aging
    if aging is not None:
        print(f"aged through iteration {aging.through}, condensed through {aging.condensed}")
    for message in messages:
        print(render(message, args.max_chars))
    return 0


if __name__ == "__main__":
    sys.exit(main())
