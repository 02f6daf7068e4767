"""How much of the tool outputs repeat the previous output of the same call: a lead for dedup (issue 18).

For each recorded run, every tool output is compared with the previous output of the same tool
called with the same arguments (a test run again, a ``git status`` again). Over outputs of more than
``--min-chars`` characters:

* ``identical``: the output is byte for byte the previous one (what ``Dedup`` already links for
  read-only calls);
* ``near``: at least ``--min-equal`` of its lines are lines of the previous one, in order
  (:class:`difflib.SequenceMatcher` over lines); ``diff saving`` is what showing only its other
  lines (plus a ~30-token pointer to the previous output) would spare of it.

Shares are of the tokens of every tool output, counted once (as first sent), per family.

    python benchmarks/repeat_outputs.py PATH ... [--min-chars 400] [--min-equal 0.5]
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from tiered_agent._errors import TraceFormatError
from tiered_agent._logging import configure_logging
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._importers import load_file
from tiered_agent.bench._pricing import family_of
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings

POINTER_TOKENS = 30  # "[output of call X at iteration N, but for these lines:]"


def changed_lines(previous: str, text: str) -> tuple[int, str]:
    """(how many lines of ``text`` are lines of ``previous``, in order; the other lines, joined)."""
    old, new = previous.splitlines(), text.splitlines()
    matcher = difflib.SequenceMatcher(None, old, new, autojunk=False)
    equal = 0
    other: list[str] = []
    for tag, _, _, start, end in matcher.get_opcodes():
        if tag == "equal":
            equal += end - start
        else:
            other.extend(new[start:end])
    return equal, "\n".join(other)


def run_repeats(run: RecordedRun, counter: TokenCounter, min_chars: int, min_equal: float) -> Counter[str]:
    """One run's tool-output tokens: ``all``, ``identical``, ``near`` and ``diff saving``."""
    calls = {call.id: (call.name, call.arguments) for m in run.messages for call in m.tool_calls}
    last: dict[tuple[str, str], str] = {}
    found: Counter[str] = Counter()
    for message in run.messages:
        if message.role != "tool" or not message.text:
            continue
        tokens = counter.count_text(message.text)
        found["all"] += tokens
        key = calls.get(message.tool_call_id or "")
        previous = last.get(key) if key is not None else None
        if key is not None:
            last[key] = message.text
        if previous is None or len(message.text) <= min_chars:
            continue
        if previous == message.text:
            found["identical"] += tokens
            continue
        equal, other = changed_lines(previous, message.text)
        if equal >= min_equal * len(message.text.splitlines()):
            found["near"] += tokens
            found["diff saving"] += max(tokens - counter.count_text(other) - POINTER_TOKENS, 0)
    return found


def repeats(paths: Iterable[Path], min_chars: int = 400, min_equal: float = 0.5) -> dict[str, Counter[str]]:
    """Per family: :func:`run_repeats` summed over the runs of ``paths`` (files or folders)."""
    counter = TokenCounter(ReplaySettings().tokenizer)
    out: dict[str, Counter[str]] = {}
    for path in paths:
        for file in sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]:
            try:
                runs = load_file(file)
            except TraceFormatError:
                continue  # not a recorded run: the bench skips it too
            for run in runs:
                out.setdefault(family_of(run.format), Counter()).update(
                    run_repeats(run, counter, min_chars, min_equal)
                )
    return dict(sorted(out.items()))


def main(argv: list[str] | None = None) -> int:
    configure_logging(level="warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--min-chars", type=int, default=400)
    parser.add_argument("--min-equal", type=float, default=0.5)
    args = parser.parse_args(argv)
    print("family        tool tokens   identical   near   diff saving (shares of tool tokens)")
    for family, found in repeats(args.paths, args.min_chars, args.min_equal).items():
        total = found["all"] or 1
        print(
            f"{family:12s} {found['all']:>12,} {found['identical'] / total:10.1%} "
            f"{found['near'] / total:6.1%} {found['diff saving'] / total:8.1%}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
