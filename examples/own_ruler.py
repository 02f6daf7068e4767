"""A ruler of your own over ``tiered-agent bench prompts``: what did a policy hide from the next action?

    tiered-agent bench prompts RUNS... --policies tiered,full -o prompts.jsonl
    python examples/own_ruler.py prompts.jsonl

This one counts, at each model call, the words of 4+ characters in the recorded next action (its text
and its calls' arguments) that the full history's prompt holds at that call (what the action could
have taken from the history), and misses those the policy's prompt does not hold. Change ``needed``
to measure what matters to you; nothing here comes from the policy's own code. Prints one line per
policy: calls, needed, missed, miss rate.
"""

from __future__ import annotations

import re
import sys
from collections import defaultdict
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_.]{3,}")


def _texts(messages: Iterable[Mapping[str, Any]]) -> str:
    parts = []
    for message in messages:
        content = message.get("content")
        parts.append(content if isinstance(content, str) else orjson.dumps(content).decode())
        parts += [
            str(call.get("function", {}).get("arguments", "")) for call in message.get("tool_calls") or ()
        ]
    return "\n".join(parts)


def needed(action: str, history: str) -> set[str]:
    """The action's words the history holds."""
    return {word for word in WORD.findall(action) if word in history}


def measure(lines: Iterable[Mapping[str, Any]]) -> dict[str, tuple[int, int, int]]:
    """Per policy: (calls, needed, missed), against the ``full`` prompt of the same run and call."""
    prompts: dict[tuple[str, int], dict[str, str]] = defaultdict(dict)
    actions: dict[tuple[str, int], str] = {}
    for line in lines:
        key = (line["run_id"], line["step"])
        prompts[key][line["policy"]] = _texts(line["messages"])
        actions[key] = _texts(line["next"])
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


def main(path: Path) -> None:
    lines = (orjson.loads(raw) for raw in path.read_bytes().splitlines() if raw.strip())
    for policy, (calls, need, miss) in measure(lines).items():
        rate = miss / need if need else 0.0
        print(f"{policy:<12} calls {calls:>6}  needed {need:>8}  missed {miss:>7}  miss rate {rate:.1%}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python examples/own_ruler.py prompts.jsonl")
    main(Path(sys.argv[1]))
