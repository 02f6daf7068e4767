"""Where a policy's prompt tokens go, by tier, summed over every model call of every run (issue 18).

Each run is replayed as the bench replays it (:func:`~tiered_agent.bench._replay.replay_prompts`
with :func:`~tiered_agent.bench._replay.bench_plan`, calibrated on the file's runs), and each
message of each prompt is filed under one part:

* ``fixed``: a message of iteration 0 as recorded (the system prompt, the task);
* ``condensed``: a message of an iteration the aging step condensed (its notes);
* ``aged``: a message of an aged iteration (level 1), ``as recorded`` or ``shortened``;
* ``window``: a message of an iteration not aged yet, ``as recorded`` or ``shortened`` (a cut, a
  dedup pointer, ``Tidy``), split into the ``newest`` iteration (first sent at this call) and
  the ``older`` ones the break-even rule has not aged yet;
* ``other``: a message the history does not hold (a files note, a summary);
* ``overhead``: the rest of the prompt's count (per-message framing, tool schemas), so that the
  parts add up to the prompt tokens the bench counts.

Text tokens are the message's text and its calls' arguments under the bench's tokenizer. Shares are
of ``full``'s prompt tokens over the same calls (the counterfactual the bench counts).

    python benchmarks/prompt_tiers.py PATH ... [--policy tiered] [--json OUT]
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

import anyio
import orjson

from tiered_agent._errors import TraceFormatError
from tiered_agent._logging import configure_logging
from tiered_agent._messages import Message
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._calibration import fit
from tiered_agent.bench._importers import load_file
from tiered_agent.bench._pricing import RunPlan, family_of
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, bench_plan, policy_config, replay_prompts
from tiered_agent.context._manager import PreparedPrompt
from tiered_agent.context._policy import Policy

_Key = tuple[int, str, str | None]  # iteration, role, tool call id


def _recorded(run: RecordedRun) -> dict[_Key, set[str]]:
    """The texts the run recorded for each (iteration, role, call id)."""
    texts: dict[_Key, set[str]] = {}
    for message in run.messages:
        texts.setdefault((message.iteration, message.role, message.tool_call_id), set()).add(message.text)
    return texts


def part_of(
    message: Message, recorded: Mapping[_Key, set[str]], through: int, condensed: int, newest: int
) -> str:
    """The part of a prompt ``message`` belongs to (the module docstring); ``through`` and
    ``condensed``: the iterations aged and condensed; ``newest``: the prompt's newest iteration."""
    texts = recorded.get((message.iteration, message.role, message.tool_call_id), set())
    if message.iteration == 0:
        return "fixed" if message.text in texts else "other"
    if message.iteration <= condensed:  # a note stands for the chunk (at its first iteration)
        return "condensed"
    if not texts:
        return "other"
    form = "as recorded" if message.text in texts else "shortened"
    if message.iteration <= through:
        return f"aged, {form}"
    age = "newest" if message.iteration == newest else "older"
    return f"window {age}, {form}"


def prompt_parts(
    prepared: PreparedPrompt, recorded: Mapping[_Key, set[str]], counter: TokenCounter
) -> Counter[str]:
    """The tokens of one prompt by part, adding up to its ``prompt_tokens``."""
    messages = prepared.built.messages
    aging = prepared.record().aging
    through, condensed = (aging.through, aging.condensed) if aging is not None else (0, 0)
    newest = max((m.iteration for m in messages), default=0)
    parts: Counter[str] = Counter()
    for message in messages:
        tokens = counter.count_text(message.text) + sum(
            counter.count_text(c.arguments) for c in message.tool_calls
        )
        parts[part_of(message, recorded, through, condensed, newest)] += tokens
    parts["overhead"] = prepared.prompt_tokens - sum(parts.values())
    return parts


async def _run_parts(
    run: RecordedRun, policy: Policy, settings: ReplaySettings, plan: RunPlan, counter: TokenCounter
) -> tuple[Counter[str], int]:
    recorded = _recorded(run)
    parts: Counter[str] = Counter()
    full = 0
    async for prepared in replay_prompts(run, policy, settings, plan):
        parts.update(prompt_parts(prepared, recorded, counter))
        full += prepared.counterfactual_tokens
    return parts, full


def _files(paths: Iterable[Path]) -> list[Path]:
    found: list[Path] = []
    for path in paths:
        found.extend(sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path])
    return found


def tiers(paths: Iterable[Path], policy: Policy, settings: ReplaySettings) -> dict[str, dict[str, int]]:
    """Per family (and ``all``): each part's tokens and ``full``'s (key ``full``)."""
    counter = TokenCounter(settings.tokenizer)  # one for the calibration and every prompt's parts
    out: dict[str, Counter[str]] = {}
    for path in _files(paths):
        try:
            runs = load_file(path)
        except TraceFormatError:
            continue  # not a recorded run (a summary, a README): the bench skips it too
        calibration = fit(runs, counter)
        for run in runs:
            plan = bench_plan(run, settings, calibration)
            parts, full = anyio.run(_run_parts, run, policy, settings, plan, counter)
            parts["full"] = full
            for family in (family_of(run.format), "all"):
                out.setdefault(family, Counter()).update(parts)
    return {family: dict(parts) for family, parts in sorted(out.items())}


def _table(found: Mapping[str, Mapping[str, int]]) -> str:
    rows = []
    for family, parts in found.items():
        full = parts["full"] or 1
        prompt = sum(v for k, v in parts.items() if k != "full")
        rows.append(f"\n{family}: prompt {prompt:,} tokens = {prompt / full:.1%} of full's {parts['full']:,}")
        for part, tokens in sorted(parts.items(), key=lambda kv: -kv[1]):
            if part != "full":
                rows.append(f"  {part:28s} {tokens:>14,} {tokens / full:7.1%}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    configure_logging(level="warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--policy", default="tiered")
    parser.add_argument("--json", type=Path, help="write the parts per family as JSON")
    args = parser.parse_args(argv)
    found = tiers(args.paths, policy_config(args.policy), ReplaySettings())
    print(f"policy {args.policy}; shares of full's prompt tokens over the same calls" + _table(found))
    if args.json:
        args.json.write_bytes(orjson.dumps(found, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
