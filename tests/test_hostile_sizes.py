"""Hostile sizes and shapes of valid logs: the importers' work grows with the log, not its square.

Work is counted, never timed: the Python lines the importer's own modules execute (``sys.settrace``,
deterministic), for a log at n and at 4n. Linear work grows about 4 times; the quadratic growth each
case had before its fix (docs/faults.md cases 67-70) grew 12 to 16 times at these sizes. The logs are
``benchmarks/bench_scaling.py``'s generators, which the benchmark runs at larger sizes.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import FrameType
from typing import Any

import pytest
from bench_scripts import load_script

from tiered_agent.bench import _import_claude, _import_codex
from tiered_agent.bench._import_common import CallIds
from tiered_agent.bench._recorded import RecordedRun

scaling = load_script("bench_scaling")
BENCH = Path(_import_claude.__file__).parent
OWN = {
    str(BENCH / f"{name}.py")
    for name in ("_import_claude", "_import_codex", "_import_common", "_import_steps")
}


def _lines(work: Callable[[], object]) -> int:
    """How many lines of the importers' modules ``work`` executes."""
    count = 0

    def local(frame: FrameType, event: str, arg: object) -> Any:
        nonlocal count
        count += event == "line"
        return local

    def calls(frame: FrameType, event: str, arg: object) -> Any:
        return local if frame.f_code.co_filename in OWN else None

    sys.settrace(calls)
    try:
        work()
    finally:
        sys.settrace(None)
    return count


def _growth(
    convert: Callable[[list[Any], Path], list[Any]], records: Callable[[int], Iterator[Any]], n: int
) -> float:
    small, large = list(records(n)), list(records(4 * n))
    return _lines(lambda: convert(large, Path("log.jsonl"))) / _lines(
        lambda: convert(small, Path("log.jsonl"))
    )


def _one_run(runs: list[Any]) -> RecordedRun:
    [run] = [r for r in runs if isinstance(r, RecordedRun)]
    return run


def test_entries_reusing_one_uuid_are_compared_in_linear_work() -> None:
    """Case 67: each entry was compared with every earlier one of its uuid (x16 at 4n)."""
    assert _growth(_import_claude.convert, scaling.cc_uuid_reuse, 150) < 6
    run = _one_run(_import_claude.convert(list(scaling.cc_uuid_reuse(150)), Path("log.jsonl")))
    assert sum(m.role == "user" and m.text.startswith("note ") for m in run.messages) == 150


def test_a_repeated_entry_is_still_read_once_by_value() -> None:
    """The frozen forms compare as ``==`` does: ``1`` is ``1.0``, key order does not count, a list
    is not an object; a repeat of an entry is read once, another message under its uuid is read."""
    first = {"role": "user", "content": [{"type": "text", "text": "hi", "n": 1, "m": [1, 2]}]}
    same = {"content": [{"m": [1.0, 2], "n": 1.0, "text": "hi", "type": "text"}], "role": "user"}
    other = {"role": "user", "content": [{"type": "text", "text": "hi", "n": 1, "m": {"0": 1, "1": 2}}]}
    records = [
        {"type": "user", "uuid": "u", "sessionId": "s", "message": message}
        for message in (first, same, other)
    ]
    assert [r["message"] for r in _import_claude._entries(records)] == [first, other]


def test_rollbacks_cost_what_they_drop_not_the_history() -> None:
    """Case 68: each rollback scanned the whole history and every turn (x10 at 4n)."""
    assert _growth(_import_codex.convert, scaling.cx_rollbacks, 150) < 6
    [run, skipped] = _import_codex.convert(list(scaling.cx_rollbacks(150)), Path("rollout.jsonl"))
    assert isinstance(run, RecordedRun) and run.steps == 150 - 75 + 1
    assert run.metadata["rolled_back_steps"] == 75 and "75 model calls" in skipped.reason


def test_calls_reusing_one_id_get_unique_ids_in_linear_work() -> None:
    """Case 69: the n-th call reusing an id searched the n - 1 suffixes given before it."""
    ids = CallIds()
    small = _lines(lambda: [ids.unique("same", 1, i) for i in range(200)])
    ids = CallIds()
    large = _lines(lambda: [ids.unique("same", 1, i) for i in range(800)])
    assert large / small < 6
    ids = CallIds()
    given = [ids.unique("same", 1, i) for i in range(4)] + [ids.unique("same_1_3", 2, 0)]
    given += [ids.unique("same", 1, 4)]
    # the same ids as before: a suffix another call took is skipped
    assert given == ["same", "same_1", "same_1_2", "same_1_3", "same_1_3_2", "same_1_4"]
    assert ids.renamed == 5


def test_compactions_keep_what_codex_keeps_in_linear_work() -> None:
    """Case 70: each compaction without a replacement history kept every message kept before it."""
    assert _growth(_import_codex.convert, scaling.cx_compactions, 300) < 6
    run = _one_run(_import_codex.convert(list(scaling.cx_compactions(300)), Path("rollout.jsonl")))
    last = run.messages[run.restarts[-1] :]
    kept = [m for m in last if m.role == "user"]
    # the latest 200 of the system and user messages, the summary after them, then the last step
    assert len(kept) == _import_codex.COMPACT_MESSAGES + 1 and kept[-1].text == "summary 299"
    assert kept[-2].text == "Turn 299: work on f299.py." and kept[-3].text == "summary 298"
    assert run.metadata["compactions"] == 300 and run.metadata["compaction_cuts"] > 0


def test_a_rebuilt_history_keeps_codex_s_20000_tokens_and_cuts_the_message_that_crosses_them() -> None:
    head = [
        _import_codex_record("session_meta", {"id": "s"}),
        _import_codex_record("turn_context", {"model": "m"}),
    ]
    long = "a" * 60_000 + "b" * 60_000  # 30,000 tokens
    records = [
        *head,
        _user("old " * 10),
        _user(long),
        _user("latest"),
        *scaling._cx_call("c1", "out"),
        _import_codex_record("compacted", {"message": "the summary"}),
        *scaling._cx_call("c2", "out"),
    ]
    run = _one_run(_import_codex.convert(records, Path("rollout.jsonl")))
    kept = [m.text for m in run.messages[run.restarts[-1] :] if m.role == "user"]
    assert kept[0].startswith("a" * 39_996) and kept[0].endswith("b" * 39_996)
    assert "tokens truncated" in kept[0] and len(kept[0]) < 80_100
    assert kept[1:] == ["latest", "the summary"]
    assert run.metadata["compaction_cuts"] == 2  # the old message left out, the long one cut


def _import_codex_record(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return scaling._cx(kind, payload)


def _user(text: str) -> dict[str, Any]:
    return scaling._cx_user(text)


@pytest.mark.slow
def test_the_scaling_benchmark_s_importer_cases_hold_their_limit() -> None:
    """The benchmark itself on the importer cases at a quarter of its sizes, each in a child process
    under its time and memory limits: every case reads its log (exit 0, no traceback, no kill) and
    no ratio passes 12 (the fixed costs of a child weigh more at these sizes)."""
    assert scaling.main(["--only", "load cc/uuid,load cx/", "--scale", "0.25", "--limit", "12"]) == 0
