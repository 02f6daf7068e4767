"""A ruler of your own over ``tiered-agent bench prompts``: what did a policy hide from the next action?

    tiered-agent bench prompts RUNS... --policies tiered,full [--delta] -o prompts.jsonl
    python examples/own_ruler.py prompts.jsonl [--calls-only]

This one counts, at each model call, the words of 4+ characters in the recorded next action (its text
and its calls' arguments; ``--calls-only``: the arguments alone, what the agent ran) that the full
history's prompt holds at that call (what the action could have taken from the history), and misses
those the policy's prompt does not hold. Change ``needed`` to measure what matters to you; nothing
here comes from the policy's own code (the file is read with ``tiered_agent.bench.read_prompts``,
which takes the whole and the ``--delta`` form alike). Prints one line per policy: calls, needed,
missed, miss rate.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from tiered_agent.bench import read_prompts

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{3,}")


def _strings(value: Any) -> list[str]:
    """The strings of a JSON value (a call's decoded arguments), keys and values."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for k, v in value.items() for s in (str(k), *_strings(v))]
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return [str(value)]


def _arguments(call: Mapping[str, Any]) -> list[str]:
    raw = str(call.get("function", {}).get("arguments", ""))
    try:
        return _strings(orjson.loads(raw))
    except orjson.JSONDecodeError:
        return [raw]


def _texts(messages: Iterable[Mapping[str, Any]], calls_only: bool = False) -> str:
    """The text a message list holds: contents and calls' arguments (``calls_only``: the arguments)."""
    parts = []
    for message in messages:
        content = message.get("content")
        if not calls_only:
            parts.append(content if isinstance(content, str) else orjson.dumps(content).decode())
        for call in message.get("tool_calls") or ():
            parts += _arguments(call)
    return "\n".join(parts)


def needed(action: str, history: str) -> set[str]:
    """The action's words the history holds."""
    return {word for word in WORD.findall(action) if word in history}


def measure(lines: Iterable[Mapping[str, Any]], calls_only: bool = False) -> dict[str, tuple[int, int, int]]:
    """Per policy: (calls, needed, missed), against the ``full`` prompt of the same run and call."""
    prompts: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    actions: dict[tuple[str, int], str] = {}
    for line in lines:
        key = (line["run_id"], line["step"])
        prompts[key][line["policy"]] = _texts(line["messages"])
        actions[key] = _texts(line["next"], calls_only)
    totals: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
    for key, by_policy in prompts.items():
        if "full" not in by_policy:
            continue
        wanted = needed(actions[key], by_policy["full"])
        for policy, text in by_policy.items():
            total = totals[policy]
            total[0] += 1
            total[1] += len(wanted)
            total[2] += sum(word not in text for word in wanted)
    return {policy: (calls, need, miss) for policy, (calls, need, miss) in sorted(totals.items())}


def main(path: Path, calls_only: bool = False) -> None:
    for policy, (calls, need, miss) in measure(read_prompts(path), calls_only).items():
        rate = miss / need if need else 0.0
        print(f"{policy:<12} calls {calls:>6}  needed {need:>8}  missed {miss:>7}  miss rate {rate:.1%}")


if __name__ == "__main__":
    args = sys.argv[1:]
    only = "--calls-only" in args
    paths = [a for a in args if a != "--calls-only"]
    if len(paths) != 1:
        sys.exit("usage: python examples/own_ruler.py prompts.jsonl [--calls-only]")
    main(Path(paths[0]), only)
