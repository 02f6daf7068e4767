"""One conversation in two files: every model call is counted once over the whole bench.

Older Claude Code versions copy the whole history into a new file on ``--resume``; a fork copies
it up to a point and diverges; a backup holds the session as it was mid-way; a Codex fork or
resume starts a new rollout with the old turns. The run read later replays the calls it shares
with a run read before (its policy state is built as in a live resume) but counts none of them
(``counted_from``); a run all of whose calls were read before is skipped with its reason.

Hand-written logs only. The totals are checked against benches of the runs alone: the calls a
later run shares are the earlier run's calls, so for every additive figure (tokens, ruler checks,
steps, the recorded bill) ``bench(A, B) == bench(A) + bench(B) - bench(what B shares with A)``.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from bench_cli import invoke, load_json
from structlog.testing import capture_logs

from tiered_agent.bench._document import strip_timing
from tiered_agent.bench._importers import SkippedInput, load_runs, write_run_trace
from tiered_agent.bench._recorded import RecordedRun

POLICIES = "full,tiered,masking"
# Additive totals: sums over the counted steps. A copy's uncounted requests reach the cache as they
# reached the provider, so its counted calls read what they read in the copy benched alone.
ADDITIVE = (
    "steps", "prompt_tokens", "cached_tokens", "cache_write_tokens", "output_tokens", "salient", "missed",
    "word_salient", "word_missed", "line_needed", "line_missed", "own_needed", "own_missed",
    "retrieval_tokens", "dedup_hits",
)  # fmt: skip
RECORDED = ("steps", "prompt_tokens", "cached_tokens", "cache_write_tokens", "output_tokens")


def _write(path: Path, records: Sequence[dict[str, Any]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


# ---------------------------------------------------------------- Claude Code
def _claude(
    session: str, turn: int, *, usage: bool, parent: str | None, hour: int = 10
) -> list[dict[str, Any]]:
    """One turn of a Claude Code session: a prompt, two calls, their results, an answer (ids by turn)."""

    def entry(kind: str, uuid: str, up: str | None, message: dict[str, Any], second: int) -> dict[str, Any]:
        return {
            "parentUuid": up, "isSidechain": False, "sessionId": session, "version": "1.0.30", "type": kind,
            "message": message, "uuid": uuid, "timestamp": f"2026-02-01T{hour}:{turn:02d}:{second:02d}.000Z",
        }  # fmt: skip

    def reply(msg: str, content: list[dict[str, Any]], prompt: int) -> dict[str, Any]:
        message: dict[str, Any] = {"id": msg, "model": "claude-sonnet-4-5-20250929", "role": "assistant",
                                   "content": content}  # fmt: skip
        if usage:
            message["usage"] = {"input_tokens": 3 + turn, "cache_read_input_tokens": prompt,
                                "cache_creation_input_tokens": 40 * turn,
                                "output_tokens": 20 + turn}  # fmt: skip
        return message

    call, again = f"toolu_01T{turn:03d}", f"toolu_01C{turn:03d}"
    path = f"src/module_{turn}/handler_{turn}.py"
    config = "src/settings/config_main.py"  # read again each turn: the dedup policies serve it as a pointer
    return [
        entry("user", f"u{turn}", parent, {"role": "user", "content": f"Turn {turn}: fix it."}, 0),
        entry("assistant", f"a{turn}", f"u{turn}", reply(f"msg_01A{turn:03d}", [
            {"type": "tool_use", "id": call, "name": "Read", "input": {"file_path": path}},
            {"type": "tool_use", "id": again, "name": "Read", "input": {"file_path": config}},
        ], 900 * turn), 1),
        entry("user", f"r{turn}", f"a{turn}", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": call,
             "content": f"{path}\nvalue_{turn} = compute_{turn}(arg_{turn})\n" + "x = 1\n" * 150},
            {"type": "tool_result", "tool_use_id": again,
             "content": "MAX_RETRIES = 7\nTIMEOUT_SECONDS = 30\n" + "# setting\n" * 60}]}, 2),
        entry("assistant", f"b{turn}", f"r{turn}", reply(f"msg_01B{turn:03d}", [
            {"type": "text", "text": f"Fixed compute_{turn}(arg_{turn}) in {path}."}], 950 * turn), 3),
    ]  # fmt: skip


def _claude_turns(
    session: str, turns: range, *, usage: bool, first_parent: str | None = None, hour: int = 10
) -> list[Any]:
    out: list[dict[str, Any]] = []
    parent = first_parent
    for turn in turns:
        out.extend(_claude(session, turn, usage=usage, parent=parent, hour=hour))
        parent = f"b{turn}"
    return out


def _resumed(records: list[dict[str, Any]], session: str) -> list[dict[str, Any]]:
    """What an older Claude Code writes on ``--resume``: the history copied under the new session id."""
    return [{**r, "sessionId": session} for r in records]


# ---------------------------------------------------------------- Codex
def _codex(turn: int, *, calls: int = 1) -> list[dict[str, Any]]:
    """One Codex turn: the user's message, ``calls`` responses with reasoning and a call each, then
    an answer without reasoning (a step with no provider id of its own), each with its token count."""

    def line(kind: str, second: int, **payload: Any) -> dict[str, Any]:
        return {"timestamp": f"2025-10-05T03:{turn:02d}:{second:02d}.000Z", "type": kind, "payload": payload}

    def count(prompt: int, second: int) -> dict[str, Any]:
        usage = {"input_tokens": prompt, "cached_input_tokens": prompt // 2, "output_tokens": 30}
        return line("event_msg", second, type="token_count", info={"last_token_usage": usage})

    out = [line("response_item", 0, type="message", role="user",
                content=[{"type": "input_text", "text": f"Turn {turn}: config_{turn}.toml"}])]  # fmt: skip
    for n in range(calls):
        call = f"call_T{turn}N{n}xYz"
        out += [
            line("response_item", 2 * n + 1, type="reasoning", summary=[],
                 encrypted_content=f"gAAAA{turn}x{n}"),
            line("response_item", 2 * n + 1, type="function_call", name="shell", call_id=call,
                 arguments=json.dumps({"command": ["cat", f"config_{turn}_{n}.toml"]})),
            count(1500 * turn + 100 * n, 2 * n + 1),
            line("response_item", 2 * n + 2, type="function_call_output", call_id=call,
                 output=json.dumps({"output": f"key_{turn}_{n} = value_{turn}{n}7\n" * 5})),
        ]  # fmt: skip
    out += [
        line("response_item", 40, type="message", role="assistant",
             content=[{"type": "output_text", "text": f"config_{turn}.toml sets key_{turn}_0."}]),
        count(1600 * turn, 40),
    ]  # fmt: skip
    return out


def _rollout(session: str, turns: Sequence[list[dict[str, Any]]]) -> list[dict[str, Any]]:
    meta = {"timestamp": "2025-10-05T03:00:00.000Z", "type": "session_meta",
            "payload": {"id": session, "cli_version": "0.80.0", "instructions": None}}  # fmt: skip
    context = {
        "timestamp": "2025-10-05T03:00:00.000Z",
        "type": "turn_context",
        "payload": {"model": "gpt-5-codex"},
    }
    return [meta, context, *(line for turn in turns for line in turn)]


# ---------------------------------------------------------------- the bench
def _bench(tmp_path: Path, name: str, *inputs: Path, extra: Sequence[str] = ()) -> dict[str, Any]:
    out = tmp_path / f"out-{name}"
    result = invoke("bench", *inputs, "--policies", POLICIES, "--workers", "1", "--out", out,
                    "--run-detail", "inline", *extra)  # fmt: skip
    assert result.exit_code == 0, result.output
    return load_json(out / "bench.json")


def _totals(doc: dict[str, Any]) -> dict[str, dict[str, float]]:
    return {p: {k: doc["policies"][p]["totals"][k] or 0 for k in ADDITIVE} for p in doc["policies"]}


def _recorded(doc: dict[str, Any]) -> dict[str, float]:
    return {k: doc["recorded"][k] for k in RECORDED}


def _combined(plus: Sequence[dict[str, float]], minus: Sequence[dict[str, float]] = ()) -> dict[str, float]:
    keys = plus[0].keys()
    return {k: sum(d[k] for d in plus) - sum(d[k] for d in minus) for k in keys}


def _per_policy(plus: Sequence[dict[str, Any]], minus: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    names = _totals(plus[0]).keys()
    return {p: _combined([_totals(d)[p] for d in plus], [_totals(d)[p] for d in minus]) for p in names}


def _counted(doc: dict[str, Any]) -> dict[str, int]:
    return {r["run_id"]: r["uncounted_steps"] for r in doc["inputs"]["runs"]}


def _only(runs: Sequence[RecordedRun]) -> dict[str, tuple[int, int]]:
    return {r.run_id: (r.steps, r.counted_from) for r in runs}


# ---------------------------------------------------------------- the tests
ORIGINAL, RESUMED = "0a0a0a0a-0000-4000-8000-000000000001", "0b0b0b0b-0000-4000-8000-000000000002"


def test_a_resumed_copy_counts_only_its_new_turns(tmp_path: Path) -> None:
    """An older CLI's ``--resume``: the new file holds the three old turns and two new ones. Its six
    copied calls are replayed, not counted: the bench of both is the bench of the resumed file alone
    (every call once), and ``full`` prompts, rulers and steps add up."""
    old = _claude_turns(ORIGINAL, range(1, 4), usage=False)
    new = _resumed(old, RESUMED) + _claude_turns(RESUMED, range(4, 6), usage=False, first_parent="b3")
    original = _write(tmp_path / "p" / f"{ORIGINAL}.jsonl", old)
    resumed = _write(tmp_path / "p" / f"{RESUMED}.jsonl", new)
    loaded = load_runs([tmp_path / "p"], strict=True)
    assert _only(loaded.runs) == {f"claude-code/{ORIGINAL}": (6, 0), f"claude-code/{RESUMED}": (10, 6)}
    both = _bench(tmp_path, "both", tmp_path / "p")
    alone = _bench(tmp_path, "alone", resumed)
    assert _totals(both) == _totals(alone)
    assert both["policies"]["full"]["totals"]["steps"] == 10  # 6 + 4, not 6 + 10
    assert _counted(both) == {f"claude-code/{ORIGINAL}": 0, f"claude-code/{RESUMED}": 6}
    assert both["inputs"]["uncounted_steps"] == 6 and both["inputs"]["step_count"] == 16
    report = (tmp_path / "out-both" / "report.md").read_text(encoding="utf-8")
    assert "16 model calls (6 of them copied from runs read before: replayed, not counted)" in report
    assert "of them copied" not in (tmp_path / "out-alone" / "report.md").read_text(encoding="utf-8")
    detail = {r["run_id"]: r for r in both["runs"]}[f"claude-code/{RESUMED}"]
    assert detail["steps"] == 10 and detail["uncounted_steps"] == 6
    alone_detail = alone["runs"][0]["policies"]
    for name, entry in detail["policies"].items():  # its counted calls measure what they do alone
        for series, values in entry["per_step"].items():
            assert values == alone_detail[name]["per_step"][series][6:], (name, series)
    # resumed a minute later: its first new call reads the history its copied calls cached
    assert detail["policies"]["full"]["per_step"]["cached_tokens"][0] > 0
    assert original.exists()


def test_a_copy_resumed_hours_later_meets_a_cold_cache(tmp_path: Path) -> None:
    """The copied calls reach the cache at their recorded times: a resume three hours later finds
    nothing cached (the time-aware cache), one a minute later reads the whole history."""
    old = _claude_turns(ORIGINAL, range(1, 4), usage=False)
    later = _resumed(old, RESUMED) + _claude_turns(
        RESUMED, range(4, 6), usage=False, first_parent="b3", hour=13
    )
    _write(tmp_path / "p" / f"{ORIGINAL}.jsonl", old)
    _write(tmp_path / "p" / f"{RESUMED}.jsonl", later)
    both = _bench(tmp_path, "both", tmp_path / "p")
    detail = {r["run_id"]: r for r in both["runs"]}[f"claude-code/{RESUMED}"]["policies"]["full"]["per_step"]
    assert detail["cached_tokens"][0] == 0 and detail["cache_write_tokens"][0] > 0
    assert detail["cached_tokens"][1] > 0  # the next call, a minute after, reads what the first wrote


def test_a_resumed_copy_bills_each_recorded_call_once(tmp_path: Path) -> None:
    """With usage: the recorded bill (tokens and dollars), the cache check and the fidelity check
    count each recorded call once."""
    old = _claude_turns(ORIGINAL, range(1, 4), usage=True)
    new = _resumed(old, RESUMED) + _claude_turns(RESUMED, range(4, 6), usage=True, first_parent="b3")
    _write(tmp_path / "p" / f"{ORIGINAL}.jsonl", old)
    resumed = _write(tmp_path / "p" / f"{RESUMED}.jsonl", new)
    both = _bench(tmp_path, "both", tmp_path / "p")
    alone = _bench(tmp_path, "alone", resumed)
    assert _recorded(both) == _recorded(alone)
    assert both["recorded"]["steps"] == 10
    assert both["recorded"]["cost_usd"] == pytest.approx(alone["recorded"]["cost_usd"], abs=1e-9)
    expected = sum(3 + t for t in range(1, 6)) * 2 + sum(900 * t + 950 * t + 80 * t for t in range(1, 6))
    assert both["recorded"]["prompt_tokens"] == expected
    checked = {e["run_id"]: e["steps"] for e in both["validation"]["caching"]["per_run"]}
    assert checked == {f"claude-code/{ORIGINAL}": 6, f"claude-code/{RESUMED}": 4}
    assert both["validation"]["cost_usd"]["steps"] == 10
    assert both["calibration"]["anthropic"]["steps"] == 10  # each recorded call one point of the fit


def _fork_files(tmp_path: Path, *, usage: bool) -> tuple[Path, Path, Path]:
    """A session of three turns, a fork that copied its first two turns (four calls) and went on
    with a turn of its own, and those two turns alone (what the fork shares)."""
    old = _claude_turns(ORIGINAL, range(1, 4), usage=usage)
    shared = [r for r in old if int(r["uuid"][1:]) <= 2]
    fork = _resumed(shared, RESUMED) + _claude_turns(RESUMED, range(7, 8), usage=usage, first_parent="b2")
    folder = tmp_path / ("usage" if usage else "plain")
    return (
        _write(folder / "p" / f"{ORIGINAL}.jsonl", old),
        _write(folder / "p" / f"{RESUMED}.jsonl", fork),
        _write(folder / "prefix" / f"{ORIGINAL}.jsonl", shared),
    )


def test_a_fork_counts_the_calls_after_it_diverged(tmp_path: Path) -> None:
    """A fork copies the first two turns (four calls) and goes on with a turn of its own."""
    original, forked, prefix = _fork_files(tmp_path, usage=True)
    loaded = load_runs([original.parent], strict=True)
    assert _only(loaded.runs) == {f"claude-code/{ORIGINAL}": (6, 0), f"claude-code/{RESUMED}": (6, 4)}
    both = _bench(tmp_path, "both", original.parent)
    parts = [_bench(tmp_path, "a", original), _bench(tmp_path, "f", forked)]
    minus = [_bench(tmp_path, "shared", prefix)]
    assert _recorded(both) == _combined([_recorded(d) for d in parts], [_recorded(d) for d in minus])
    assert both["recorded"]["steps"] == 6 + 2
    # the policies' tokens depend on each run's fitted prefix: without usage they add up exactly
    original, forked, prefix = _fork_files(tmp_path, usage=False)
    both = _bench(tmp_path, "both-plain", original.parent)
    parts = [_bench(tmp_path, "a-plain", original), _bench(tmp_path, "f-plain", forked)]
    minus = [_bench(tmp_path, "shared-plain", prefix)]
    assert _totals(both) == _per_policy(parts, minus)
    assert both["policies"]["full"]["totals"]["steps"] == 8


def _strip_usage(record: dict[str, Any]) -> dict[str, Any]:
    message = record.get("message")
    if isinstance(message, dict) and "usage" in message:
        return {**record, "message": {k: v for k, v in message.items() if k != "usage"}}
    return record


def test_a_backup_taken_mid_session_is_counted_once_in_either_order(tmp_path: Path) -> None:
    """A backup holding the first two turns: read after the session, it is skipped naming it; read
    before (its name sorts first), the session counts only what the backup does not hold."""
    old = _claude_turns(ORIGINAL, range(1, 4), usage=True)
    backup = [r for r in old if int(r["uuid"][1:]) <= 2]
    session = _write(tmp_path / "a-logs" / f"{ORIGINAL}.jsonl", old)
    _write(tmp_path / "b-backup" / "backup.jsonl", backup)
    loaded = load_runs([tmp_path / "a-logs", tmp_path / "b-backup"])
    assert _only(loaded.runs) == {f"claude-code/{ORIGINAL}": (6, 0)}
    assert loaded.skipped == (
        SkippedInput(
            str(tmp_path / "b-backup" / "backup.jsonl"),
            f"all its 4 model calls are counted in claude-code/{ORIGINAL} (a copy of that history, "
            "taken before it went on)",
        ),
    )
    later = _bench(tmp_path, "later", tmp_path / "a-logs", tmp_path / "b-backup")
    first = _bench(tmp_path, "first", tmp_path / "b-backup", tmp_path / "a-logs")
    alone = _bench(tmp_path, "alone", session)
    assert _recorded(later) == _recorded(first) == _recorded(alone)
    assert _counted(first) == {"claude-code/backup": 0, f"claude-code/{ORIGINAL}": 4}
    assert later["inputs"]["skipped"][0]["reason"].startswith("all its 4 model calls")


def test_a_codex_fork_counts_its_own_turn_once(tmp_path: Path) -> None:
    """A Codex fork starts a new rollout with the first two turns of the old one: its calls (by
    call id and reasoning), and the answers between them (no id: the same call after the same
    call and messages), are replayed, not counted."""
    turns = [_codex(1, calls=2), _codex(2), _codex(3)]
    original = _write(tmp_path / "r" / "rollout-2025-10-05T03-00-00-a.jsonl", _rollout("a", turns))
    fork = _write(
        tmp_path / "r" / "rollout-2025-10-05T04-00-00-b.jsonl", _rollout("b", [*turns[:2], _codex(4)])
    )
    prefix = _write(tmp_path / "prefix" / "rollout-2025-10-05T03-00-00-a.jsonl", _rollout("a", turns[:2]))
    loaded = load_runs([tmp_path / "r"], strict=True)
    assert _only(loaded.runs) == {
        "codex/rollout-2025-10-05T03-00-00-a": (7, 0),
        "codex/rollout-2025-10-05T04-00-00-b": (7, 5),
    }
    both = _bench(tmp_path, "both", tmp_path / "r")
    parts = [_bench(tmp_path, "a", original), _bench(tmp_path, "f", fork)]
    minus = [_bench(tmp_path, "shared", prefix)]
    assert _recorded(both) == _combined([_recorded(d) for d in parts], [_recorded(d) for d in minus])
    assert both["recorded"]["steps"] == 7 + 2 and both["inputs"]["uncounted_steps"] == 5
    # Codex logs hold no system prompt here and usage for every call: the prefix fit decides the
    # tokens, so the policies' figures are checked on the steps: each call once
    assert {p: t["steps"] for p, t in _totals(both).items()} == {p: 9 for p in _totals(both)}


def test_calls_shared_after_a_call_of_its_own_are_counted_with_a_warning(tmp_path: Path) -> None:
    """A run that shares calls only after one of its own (not a leading stretch) is counted whole,
    with one warning naming the run it shares them with."""
    old = _claude_turns(ORIGINAL, range(1, 3), usage=False)
    own = _claude(RESUMED, 9, usage=False, parent=None)
    rest = [{**r, "sessionId": RESUMED, "parentUuid": r["parentUuid"] or "b9"} for r in old]
    _write(tmp_path / "p" / f"{ORIGINAL}.jsonl", old)
    _write(tmp_path / "p" / f"{RESUMED}.jsonl", own + rest)
    with capture_logs() as logs:
        loaded = load_runs([tmp_path / "p"], strict=True)
    assert _only(loaded.runs) == {f"claude-code/{ORIGINAL}": (4, 0), f"claude-code/{RESUMED}": (6, 0)}
    warnings = [e for e in logs if e["event"] == "importers.shared_calls"]
    assert [(e["run"], e["calls"], e["also_in"]) for e in warnings] == [
        (f"claude-code/{RESUMED}", 4, f"claude-code/{ORIGINAL}")
    ]


def test_sharded_benches_merge_into_the_unsharded_one(tmp_path: Path) -> None:
    """Every shard reads all inputs, so a copy's uncounted calls are the same in every shard."""
    old = _claude_turns(ORIGINAL, range(1, 3), usage=True)
    new = _resumed(old, RESUMED) + _claude_turns(RESUMED, range(3, 4), usage=True, first_parent="b2")
    _write(tmp_path / "in" / f"{ORIGINAL}.jsonl", old)
    _write(tmp_path / "in" / f"{RESUMED}.jsonl", new)
    turns = [_codex(1), _codex(2)]
    _write(tmp_path / "in" / "rollout-a.jsonl", _rollout("a", turns))
    _write(tmp_path / "in" / "rollout-b.jsonl", _rollout("b", [turns[0], _codex(5)]))
    whole = tmp_path / "whole"
    shards = []
    for shard in ("1/2", "2/2"):
        out = tmp_path / f"shard{shard[0]}"
        result = invoke("bench", tmp_path / "in", "--policies", POLICIES, "--workers", "1", "--out", out,
                        "--shard", shard)  # fmt: skip
        assert result.exit_code == 0, result.output
        shards.append(out / "bench.json")
    result = invoke("bench", tmp_path / "in", "--policies", POLICIES, "--workers", "1", "--out", whole)
    assert result.exit_code == 0, result.output
    result = invoke("bench", "merge", *shards, "--out", tmp_path / "merged")
    assert result.exit_code == 0, result.output
    merged, unsharded = load_json(tmp_path / "merged" / "bench.json"), load_json(whole / "bench.json")
    assert strip_timing(merged) == strip_timing(unsharded)
    assert unsharded["inputs"]["uncounted_steps"] == 4 + 2
    assert _counted(unsharded)[f"claude-code/{RESUMED}"] == 4
    assert _counted(unsharded)["codex/rollout-b"] == 2


def test_the_uncounted_calls_survive_the_trace_round_trip(tmp_path: Path) -> None:
    old = _claude_turns(ORIGINAL, range(1, 3), usage=True)
    new = _resumed(old, RESUMED) + _claude_turns(RESUMED, range(3, 4), usage=True, first_parent="b2")
    _write(tmp_path / "p" / f"{ORIGINAL}.jsonl", old)
    _write(tmp_path / "p" / f"{RESUMED}.jsonl", new)
    first, copy = load_runs([tmp_path / "p"], strict=True).runs
    assert copy.counted_from == 4
    assert copy.step_ids == (
        "msg_01A001",
        "msg_01B001",
        "msg_01A002",
        "msg_01B002",
        "msg_01A003",
        "msg_01B003",
    )
    write_run_trace(copy, tmp_path / "t" / "copy.jsonl")
    [back] = load_runs([tmp_path / "t"], strict=True).runs
    assert (back.counted_from, back.step_ids) == (4, copy.step_ids)
    # benched again with the original's trace, the copy is recognized by its ids all the same
    write_run_trace(first, tmp_path / "t" / "a-first.jsonl")
    again = load_runs([tmp_path / "t"], strict=True).runs
    assert [(r.run_id, r.counted_from) for r in again] == [(first.run_id, 0), (copy.run_id, 4)]
    # a hand-edited recording that would leave no counted call, or is not a count, is ignored
    plain = dataclasses.replace(copy, counted_from=0)
    assert plain.with_recording({"counted_from": 6}).counted_from == 0
    assert plain.with_recording({"counted_from": True}).counted_from == 0
    assert plain.with_recording({"counted_from": 5}).counted_from == 5
    assert copy.counted_usage()[:4] == (None,) * 4 and copy.counted_usage()[4:] == copy.usage[4:]


def test_a_run_of_its_own_has_nothing_uncounted(tmp_path: Path) -> None:
    """Two sessions that share no call (the same task typed twice) are both counted whole."""
    _write(tmp_path / "p" / f"{ORIGINAL}.jsonl", _claude_turns(ORIGINAL, range(1, 3), usage=True))
    other = [_strip_usage(r) for r in _claude_turns(RESUMED, range(1, 3), usage=False)]
    for record in other:  # the same conversation, other calls (their own ids)
        message = record["message"]
        if record["type"] == "assistant":
            message["id"] = message["id"].replace("msg_01", "msg_02")
            for block in message["content"]:
                if block.get("type") == "tool_use":
                    block["id"] = block["id"].replace("toolu_01", "toolu_02")
        elif isinstance(message["content"], list):
            for block in message["content"]:
                block["tool_use_id"] = block["tool_use_id"].replace("toolu_01", "toolu_02")
    _write(tmp_path / "p" / f"{RESUMED}.jsonl", other)
    loaded = load_runs([tmp_path / "p"], strict=True)
    assert _only(loaded.runs) == {f"claude-code/{ORIGINAL}": (4, 0), f"claude-code/{RESUMED}": (4, 0)}


def test_a_bundled_run_and_its_backup_measure_every_ruler_once(tmp_path: Path) -> None:
    """A longer run with misses under ``masking``: a bundled trace recast as a Claude Code session
    (one provider id per call) and its backup taken at call 20, read first. The session replays its
    first 20 calls uncounted: every figure of the two equals the session's alone, the rulers' misses
    included."""
    trace = Path(__file__).resolve().parents[1] / "traces" / "mini-swe-agent" / "psf__requests-2317.jsonl"
    [run] = load_runs([trace], strict=True).runs
    session = dataclasses.replace(
        run,
        run_id="claude-code/session",
        format="claude-code",
        step_ids=tuple(f"msg_{k}" for k in range(run.steps)),
    )
    cut = 20
    backup = dataclasses.replace(
        session,
        run_id="claude-code/backup",
        messages=tuple(m for m in session.messages if m.iteration <= cut),
        usage=session.usage[:cut],
        routes=session.routes[:cut],
        step_ids=session.step_ids[:cut],
    )
    write_run_trace(backup, tmp_path / "a-backup" / "backup.jsonl")
    write_run_trace(session, tmp_path / "b-logs" / "session.jsonl")
    loaded = load_runs([tmp_path / "a-backup", tmp_path / "b-logs"], strict=True)
    assert _only(loaded.runs) == {"claude-code/backup": (cut, 0), "claude-code/session": (run.steps, cut)}
    both = _bench(tmp_path, "both", tmp_path / "a-backup", tmp_path / "b-logs")
    alone = _bench(tmp_path, "alone", tmp_path / "b-logs")
    assert _totals(both) == _totals(alone)
    assert _recorded(both) == _recorded(alone) and both["recorded"]["steps"] == run.steps
    assert _totals(both)["masking"]["missed"] > 0 and _totals(both)["masking"]["line_missed"] > 0
