"""Real-session replays: request times, 1-hour cache writes, the agent's own compaction, Codex usage in
either order, damaged logs, the unrecorded prefix (affine calibration), recorded dollars, per-family
validation. Hand-written minimal logs; the shared sessions are checked when ``../shared`` is present."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import anyio
import pytest

from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._calibration import fit, full_prompt_tokens
from tiered_agent.bench._importers import SkippedInput, SkippedLines, load_runs
from tiered_agent.bench._pricing import RunCosting, RunPlan, long_ttl_steps, plan_prices, plan_run
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import (
    ReplaySettings,
    bench_plan,
    policy_config,
    replay_prompts,
    replay_run,
    replay_runs,
    resolve_policies,
)
from tiered_agent.bench._report import build_document, render_markdown
from tiered_agent.context._presets import PRESETS

SHARED = Path(__file__).resolve().parents[2] / "shared" / "sessions"
COUNTER = IdCounter("o200k_base")
SESSION = "0d0d0d0d-0000-4000-8000-00000000000a"


# ---------------------------------------------------------------- Claude Code logs, written by hand
def _entry(kind: str, uuid: str, time: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "parentUuid": None, "isSidechain": False, "sessionId": SESSION, "version": "2.1.20", "type": kind,
        "message": message, "uuid": uuid, "timestamp": f"2026-01-15T12:{time}.000Z", **extra,
    }  # fmt: skip


def _usage(fresh: int, read: int, write: int, hour: int = 0) -> dict[str, Any]:
    split = {"ephemeral_5m_input_tokens": write - hour, "ephemeral_1h_input_tokens": hour}
    return {
        "input_tokens": fresh, "cache_read_input_tokens": read, "cache_creation_input_tokens": write,
        "cache_creation": split, "output_tokens": 20,
    }  # fmt: skip


def _assistant(
    uuid: str, time: str, msg: str, blocks: list[dict[str, Any]], usage: dict[str, Any]
) -> dict[str, Any]:
    message = {"id": msg, "model": "claude-opus-4-6", "role": "assistant", "content": blocks, "usage": usage}
    return _entry("assistant", uuid, time, message)


def _call(call_id: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": "Bash", "input": {"command": command}}


def _result(uuid: str, time: str, call_id: str, text: str) -> dict[str, Any]:
    content = [{"type": "tool_result", "tool_use_id": call_id, "content": text}]
    return _entry("user", uuid, time, {"role": "user", "content": content})


def _prompt(uuid: str, time: str, text: str, **extra: Any) -> dict[str, Any]:
    return _entry("user", uuid, time, {"role": "user", "content": text}, **extra)


def claude_session() -> list[dict[str, Any]]:
    """Three calls, 1-hour writes, an idle gap, then Claude Code compacts and continues from its summary."""
    boundary = {
        "type": "system", "subtype": "compact_boundary", "uuid": "c1", "sessionId": SESSION,
        "timestamp": "2026-01-15T12:08:00.000Z", "compactMetadata": {"trigger": "auto", "preTokens": 5400},
    }  # fmt: skip
    summary = "This session is being continued: the build needed foo.h."
    return [
        {"type": "summary", "summary": "Build", "leafUuid": "u9"},
        _prompt("u1", "00:00", "Run the build and fix it."),
        _assistant(
            "a1", "00:04", "msg_1", [{"type": "thinking", "thinking": "plan"}], _usage(3, 0, 5000, 5000)
        ),
        _assistant("a2", "00:05", "msg_1", [_call("t1", "make")], _usage(3, 0, 5000, 5000)),
        _result("u2", "00:09", "t1", "error: missing header foo.h"),
        _assistant("a3", "07:00", "msg_2", [_call("t2", "touch foo.h")], _usage(2, 5000, 300, 0)),
        _result("u3", "07:01", "t2", ""),
        boundary,
        _prompt("u4", "08:00", summary, isCompactSummary=True),
        _assistant(
            "a4", "08:02", "msg_3", [{"type": "text", "text": "Build fixed."}], _usage(900, 4000, 100, 100)
        ),
    ]


def _write_lines(path: Path, records: list[Any], *, raw: dict[int, str] | None = None) -> Path:
    """A JSON-lines file; ``raw`` replaces the given (1-based) lines with text as is (damage)."""
    lines = [json.dumps(r) for r in records]
    for number, text in (raw or {}).items():
        lines[number - 1] = text
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def test_claude_code_times_hour_writes_and_compaction(tmp_path: Path) -> None:
    [run] = load_runs([_write_lines(tmp_path / f"{SESSION}.jsonl", claude_session())], strict=True).runs
    assert run.steps == 3 and not run.prompt_complete
    start = run.timestamps[0]
    # each request at the latest entry before its response: the prompt, the results, the summary
    assert [t - start for t in run.timestamps if t is not None] == [0.0, 9.0, 480.0]
    assert run.cache_writes_1h == (5000, 0, 100)
    assert run.usage[0] == Usage(5003, 20, 0, 1, None, 5000)
    # the compaction: from the summary on, the agent's history restarts
    assert run.metadata["compactions"] == 1 and run.restarts == (5,)
    first, second = run.segments()
    assert [m.role for m in first.messages] == ["user", "assistant", "tool", "assistant", "tool"]
    assert second.offset == 2 and [(m.role, m.iteration) for m in second.messages] == [
        ("user", 0),
        ("assistant", 1),
    ]
    assert second.run_iteration(1) == 3
    # the replayed `full` prompt after the compaction holds the summary only (the task is gone)
    tokens = full_prompt_tokens(run, COUNTER)
    assert tokens[2] < tokens[1]
    assert (
        tokens[2]
        == full_prompt_tokens(dataclasses.replace(run, messages=second.messages, restarts=()), COUNTER)[0]
    )


def test_the_agents_compaction_is_replayed_for_every_policy(tmp_path: Path) -> None:
    [run] = load_runs([_write_lines(tmp_path / f"{SESSION}.jsonl", claude_session())], strict=True).runs

    async def main() -> dict[str, list[int]]:
        policies = {n: policy_config(n) for n in ("full", "tiered")}
        replay = await replay_run(run, policies, counter=COUNTER, prefix_tokens=1000)
        return {n: [s.prompt_tokens for s in m.steps] for n, m in replay.policies.items()}

    prompts = anyio.run(main)
    expected = [t + 1000 for t in full_prompt_tokens(run, COUNTER)]  # the unrecorded prefix before each
    assert prompts["full"] == expected
    assert prompts["tiered"][2] == expected[2]  # after the compaction: the summary alone, for every policy


def test_one_hour_lifetime_steps_and_prices() -> None:
    writes = [Usage(100, 1, 0, 1, None, w) if w is not None else None for w in (50, 40, None, 60)]
    # step 1 wrote 1-hour, steps 2 and 4 mostly 5-minute; step 3 wrote nothing: the run's majority
    # (60 of 150 written tokens were 1-hour writes: 5-minute)
    assert long_ttl_steps(writes, [50, 10, 0, 0]) == frozenset({1})
    # most of the run's writes were 1-hour writes: so are those of the step that recorded none
    assert long_ttl_steps([*writes[:2], Usage(100, 1, 0, 1)], [50, 40, 0]) == frozenset({1, 2, 3})
    usage = writes[:2]
    plan = plan_run("claude-opus-4-6", "auto", None, {}, long_ttl=True)
    assert plan.cache_model.write_premium == 2.0 and plan.long_ttl
    prices = plan_prices(plan)
    assert prices is not None and prices.cache_write == prices.write_1h == 1e-5
    costing = RunCosting.of("claude-opus-4-6", scale=1.0, recorded_model="claude-opus-4-6", usage=usage[:2],
                            calibration={}, writes_1h=[50, 10])  # fmt: skip
    # recorded: 100 - 1 read - 50 written uncached... as listed: 49 uncached, 1 read, 50 1-hour writes, 20 out
    assert costing.recorded_usd(Usage(100, 20, 1, 1, None, 50), 50) == pytest.approx(
        49 * 5e-6 + 1 * 5e-7 + 50 * 1e-5 + 20 * 2.5e-5
    )
    assert costing.step_usd(1, 100, 1, 50, 20) == pytest.approx(49 * 5e-6 + 5e-7 + 50 * 1e-5 + 20 * 2.5e-5)
    assert costing.step_usd(2, 100, 1, 50, 20) == pytest.approx(49 * 5e-6 + 5e-7 + 50 * 6.25e-6 + 20 * 2.5e-5)


# ---------------------------------------------------------------- Codex: token counts in either order
def _codex(*, before: bool) -> list[dict[str, Any]]:
    """Two responses; CLI 0.44 writes each count before the response's items (and repeats it after)."""

    def line(second: int, kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": f"2025-10-05T03:32:{second:02d}.000Z", "type": kind, "payload": payload}

    def count(prompt: int, cached: int, total: int) -> dict[str, Any]:
        last = {"input_tokens": prompt, "cached_input_tokens": cached, "output_tokens": 10}
        return line(0, "event_msg", {"type": "token_count", "info": {
            "last_token_usage": last, "total_token_usage": {"input_tokens": total}}})  # fmt: skip

    def item(second: int, **payload: Any) -> dict[str, Any]:
        return line(second, "response_item", payload)

    first = [item(2, type="function_call", name="shell", arguments='{"command":["ls"]}', call_id="c1")]
    second = [item(6, type="message", role="assistant", content=[{"type": "output_text", "text": "Done."}])]
    one, two = count(7000, 0, 7000), count(7300, 7168, 14300)
    head = [
        line(0, "session_meta", {"id": "s", "cli_version": "0.44.0" if before else "0.80.0"}),
        line(0, "turn_context", {"model": "gpt-5-codex"}),
        item(1, type="message", role="user", content=[{"type": "input_text", "text": "List files."}]),
        line(1, "event_msg", {"type": "token_count", "info": None}),
    ]
    output = item(3, type="function_call_output", call_id="c1", output="a.py")
    if before:
        return [*head, one, *first, output, one, two, *second, two]
    return [*head, *first, one, output, *second, two]


@pytest.mark.parametrize("before", [True, False])
def test_codex_token_counts_measure_the_right_response_in_either_order(tmp_path: Path, before: bool) -> None:
    [run] = load_runs([_write_lines(tmp_path / "rollout.jsonl", _codex(before=before))], strict=True).runs
    assert run.usage == (Usage(7000, 10, 0, 1), Usage(7300, 10, 7168, 1))
    assert run.metadata["usage_order"] == ("before" if before else "after")
    assert "unmatched_usage" not in run.metadata
    assert [t - run.timestamps[0] for t in run.timestamps if t is not None] == [0.0, 2.0]


@pytest.mark.skipif(not (SHARED / "codex_coda").is_dir(), reason="../shared/sessions is not present")
def test_the_coda_rollout_gets_each_count_on_its_own_response() -> None:
    [run] = load_runs([SHARED / "codex_coda"], strict=True).runs
    assert run.metadata["cli_version"] == "0.44.0" and run.metadata["usage_order"] == "before"
    assert run.steps == 161 and all(u is not None for u in run.usage)
    assert "unmatched_usage" not in run.metadata
    # the first response read nothing from the cache; the second read whole 128-token blocks of the first
    first, second = run.usage[0], run.usage[1]
    assert first is not None and second is not None
    assert (first.prompt_tokens, first.cached_tokens, first.completion_tokens) == (7220, 0, 168)
    assert (second.prompt_tokens, second.cached_tokens) == (7483, 7296)


# ---------------------------------------------------------------- damaged logs
def test_a_lost_tool_result_gets_a_placeholder_and_the_rest_replays(tmp_path: Path) -> None:
    records = claude_session()
    path = _write_lines(
        tmp_path / "d.jsonl", records, raw={5: '{"parentUuid":"x","type":"user","message":{"ro'}
    )
    loaded = load_runs([path])
    [run] = loaded.runs
    assert loaded.skipped_lines == (SkippedLines(str(path), (5,)),)
    placeholder = next(m for m in run.messages if m.role == "tool" and m.tool_call_id == "t1")
    assert placeholder.text == "[result not recorded: the log's malformed line 5 could not be read]"
    assert run.metadata["missing_results"] == 1 and run.steps == 3


def test_a_lost_tool_call_whose_result_survives_skips_that_run_only(tmp_path: Path) -> None:
    records = claude_session()
    sidechain = [
        dict(_prompt("s1", "01:00", "Find foo.h"), isSidechain=True, agentId="sub1"),
        dict(
            _assistant("s2", "01:01", "msg_9", [{"type": "text", "text": "Not found."}], _usage(5, 0, 10)),
            isSidechain=True,
            agentId="sub1",
            parentUuid="s1",
        ),
    ]
    path = _write_lines(tmp_path / "d.jsonl", [*records, *sidechain], raw={4: '{"type":"assistant","mess'})
    loaded = load_runs([path])
    assert [r.run_id for r in loaded.runs] == [f"claude-code/{SESSION}/agent-sub1"]
    assert loaded.skipped == (
        SkippedInput(
            str(path),
            "claude-code: inconsistent after skipping malformed line 4: a tool result answers call 't1', "
            "which no readable line holds",
        ),
    )


def test_lines_that_are_json_but_not_objects_are_skipped_too(tmp_path: Path) -> None:
    path = _write_lines(tmp_path / "d.jsonl", [[], *claude_session(), "text", 5])
    loaded = load_runs([path])
    assert loaded.runs[0].steps == 3
    assert loaded.skipped_lines == (SkippedLines(str(path), (1, 12, 13)),)


# The 7 files of ../shared/sessions/claude-code_skip-cases, each reduced to what makes it a case.
THINKING_CUT = '{"message":{"id":"msg_1","content":[{"type":"thinking","thinking":"To: [REDACTED'
RESULT_CUT = '{"type":"user","message":{"content":[{"tool_use_id":"t2","content":"M\\[REDACTED]"}]}}'


def _other_calls(records: list[Any]) -> list[Any]:
    """The session with other provider ids: another session's calls (the same ids in two files are one
    session's calls, counted once: tests/test_copied_sessions.py)."""
    out = []
    for record in records:
        message = record.get("message")
        renamed = isinstance(message, dict) and isinstance(message.get("id"), str)
        out.append({**record, "message": {**message, "id": f"{message['id']}_other"}} if renamed else record)
    return out


def _skip_cases(root: Path) -> dict[str, Path]:
    """The 7 files of ../shared/sessions/claude-code_skip-cases, each reduced to what makes it a case."""
    text = [{"type": "text", "text": "Invalid API key"}]
    synthetic = _entry("assistant", "a1", "00:01", {"id": "m", "model": "<synthetic>", "content": text})
    warmup = dict(_prompt("w1", "00:00", "Warmup"), isSidechain=True, agentId="a54e5f8")
    cases: dict[str, tuple[list[Any], dict[int, str]]] = {
        "local-command-only": ([_prompt("u1", "00:00", "<command-name>/clear</command-name>")], {}),
        "synthetic-only": ([_prompt("u0", "00:00", "login"), synthetic], {}),
        "redacted-thinking": (claude_session(), {3: THINKING_CUT}),  # a block of a known response lost
        "agent-a54e5f8": ([warmup], {}),
        "redacted-result": (_other_calls(claude_session()), {7: RESULT_CUT}),  # a tool result lost
        "empty": ([], {}),
        "summary-only": ([{"type": "summary", "summary": "x", "leafUuid": "u"}], {}),
    }
    return {
        name: _write_lines(root / f"{name}.jsonl", records, raw=raw) for name, (records, raw) in cases.items()
    }


def test_the_seven_skip_cases_each_get_their_outcome(tmp_path: Path) -> None:
    files = _skip_cases(tmp_path / "cases")
    files["empty"].write_text("", encoding="utf-8")
    loaded = load_runs([tmp_path / "cases"])
    no_steps = "no model calls (0 steps)"
    assert {(Path(s.path.split("#")[0]).name, s.reason.split(" (expected")[0]) for s in loaded.skipped} == {
        ("agent-a54e5f8.jsonl", no_steps),
        ("empty.jsonl", "empty file"),
        ("local-command-only.jsonl", no_steps),
        ("summary-only.jsonl", no_steps),
        ("synthetic-only.jsonl", no_steps),
    }
    # the two redacted logs replay, their broken line counted
    assert sorted((Path(r.source).name, r.steps) for r in loaded.runs) == [
        ("redacted-result.jsonl", 3),
        ("redacted-thinking.jsonl", 3),
    ]
    assert [(Path(s.path).name, s.lines) for s in loaded.skipped_lines] == [
        ("redacted-result.jsonl", (7,)),
        ("redacted-thinking.jsonl", (3,)),
    ]
    assert files  # every case was written


@pytest.mark.skipif(
    not (SHARED / "claude-code_skip-cases").is_dir(), reason="../shared/sessions is not present"
)
def test_the_shared_skip_cases() -> None:
    loaded = load_runs([SHARED / "claude-code_skip-cases"])
    reasons = {Path(s.path.split("#")[0]).stem[:8]: s.reason.split(" (expected")[0] for s in loaded.skipped}
    assert reasons == {
        "10864eef": "no model calls (0 steps)",  # a local /clear command only
        "1f83b279": "no model calls (0 steps)",  # an API-key error notice (a synthetic message)
        "agent-a5": "no model calls (0 steps)",  # a subagent's warm-up prompt
        "cc9f9e19": "empty file",
        "e6804af6": "no model calls (0 steps)",  # a summary line only
    }
    assert {Path(r.source).stem[:8] for r in loaded.runs} == {"3bd9cf18", "c76e5be5"}
    assert {Path(s.path).stem[:8]: len(s.lines) for s in loaded.skipped_lines} == {
        "3bd9cf18": 39,
        "c76e5be5": 1,
    }


# ---------------------------------------------------------------- the unrecorded prefix
def _affine_run(run_id: str, steps: int, prefix: int, scale: float, *, complete: bool = False) -> RecordedRun:
    messages = [Message("user", f"Task {run_id}")]
    for k in range(1, steps + 1):
        call = ToolCall(f"c{k}", "Bash", json.dumps({"command": f"step {k}"}))
        messages.append(Message("assistant", f"Step {k}.", (call,), iteration=k))
        messages.append(
            Message("tool", f"out {k} " * (40 * k), tool_call_id=f"c{k}", name="Bash", iteration=k)
        )
    run = RecordedRun(run_id, run_id, "claude-code", tuple(messages), model="claude-sonnet-4-5",
                      prompt_complete=complete)  # fmt: skip
    usage = tuple(Usage(round(scale * (x + prefix)), 10, 0, 1) for x in full_prompt_tokens(run, COUNTER))
    return dataclasses.replace(run, usage=usage)


def test_the_affine_fit_recovers_the_scale_and_each_runs_prefix() -> None:
    runs = [_affine_run("a", 12, 20_000, 1.25), _affine_run("b", 9, 8_000, 1.25)]
    no_usage = dataclasses.replace(_affine_run("c", 5, 0, 1.0), usage=())
    fitted = fit([*runs, no_usage], COUNTER)
    anthropic = fitted.providers["anthropic"]
    assert anthropic.fit == "affine" and anthropic.scale == pytest.approx(1.25, abs=0.001)
    assert fitted.prefix("a").tokens == pytest.approx(20_000, abs=40)
    assert fitted.prefix("b").tokens == pytest.approx(8_000, abs=40)
    assert (fitted.prefix("a").source, fitted.prefix("a").steps) == ("estimated", 12)
    # no usage: the median of its format's estimates
    assert fitted.prefix("c").source == "format median"
    assert fitted.prefix("c").tokens == round((fitted.prefix("a").tokens + fitted.prefix("b").tokens) / 2)
    # logs that hold the whole prompt keep the ratio and no prefix
    complete = fit([_affine_run("d", 8, 0, 1.4, complete=True)], COUNTER)
    assert complete.providers["anthropic"].fit == "ratio" and complete.prefix("d").tokens == 0
    assert complete.providers["anthropic"].scale == pytest.approx(1.4, abs=1e-3)


def test_the_bench_sends_the_prefix_and_checks_itself_against_the_recorded_usage() -> None:
    runs = [_affine_run("a", 12, 20_000, 1.25), _affine_run("b", 9, 8_000, 1.25)]
    result = replay_runs(runs, resolve_policies(["tiered"]), ReplaySettings())
    document = build_document(result, ["m"])
    entries = {r["run_id"]: r for r in document["inputs"]["runs"]}
    assert entries["a"]["unrecorded_prefix_source"] == "estimated"
    assert entries["a"]["unrecorded_prefix_tokens"] == pytest.approx(20_000, abs=40)
    full = {r["run_id"]: r["policies"]["full"]["per_step"]["prompt_tokens"] for r in document["runs"]}
    prefix = entries["a"]["unrecorded_prefix_tokens"]
    assert full["a"] == [x + prefix for x in full_prompt_tokens(runs[0], COUNTER)]
    fidelity = document["fidelity"]
    assert fidelity["calibrated_mean_abs_rel_error"] < 0.005
    assert fidelity["per_family"]["claude-code"]["steps"] == 21
    # the recorded usage cost, and what each policy would have cost on the same runs
    recorded = document["recorded"]
    assert recorded["runs"] == recorded["priced_runs"] == 2 and recorded["cost_usd"] > 0
    assert set(recorded["policies_cost_usd"]) == {"full", "tiered"}
    assert recorded["full_cost_usd"] == recorded["policies_cost_usd"]["full"]
    caching = document["validation"]["caching"]["per_family"]["claude-code"]
    assert caching["steps"] == 21 and caching["recorded_cached_share"] == 0.0
    text = render_markdown(document)
    assert "## As recorded" in text and "| `tiered` |" in text
    assert "| claude-code | 21 |" in text  # the per-family validation table


# ------------------------------------------------------------ a prompt at one step, as the bench builds it
def _one_hour_run(steps: int) -> RecordedRun:
    """A Claude Code run with a 20,000-token unrecorded prefix, every cache write with the 1-hour lifetime."""
    run = _affine_run("hour", steps, 20_000, 1.25)
    usage = tuple(dataclasses.replace(u, cache_write_tokens=500) for u in run.usage if u is not None)
    return dataclasses.replace(run, usage=usage, cache_writes_1h=(500,) * steps)


def test_a_prompt_replayed_alone_is_the_one_the_bench_built() -> None:
    """``replay_prompts`` under :func:`bench_plan` (what ``show_prompt.py`` and ``classify_misses.py``
    use) decides as the bench: the run's unrecorded prefix, token scale and 1-hour write price."""
    run = _one_hour_run(40)
    document = build_document(replay_runs([run], resolve_policies(["tiered"]), ReplaySettings()), ["m"])
    benched = document["runs"][0]["policies"]["tiered"]["per_step"]["prompt_tokens"]
    plan = bench_plan(run)
    assert plan.long_ttl and plan.prefix.tokens == pytest.approx(20_000, abs=40)

    async def prompts(plan: RunPlan | None) -> list[int]:
        return [p.prompt_tokens + plan.prefix.tokens if plan else p.prompt_tokens
                async for p in replay_prompts(run, PRESETS["tiered"], ReplaySettings(), plan)]  # fmt: skip

    alone = anyio.run(prompts, plan)
    assert alone == benched
    live = anyio.run(prompts, None)  # a live agent's terms: no prefix, the 5-minute write price
    assert [x + plan.prefix.tokens for x in live] != benched  # it ages sooner: another prompt
