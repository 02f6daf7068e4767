"""The anatomy of ``full``'s cost (``_anatomy.py``): buckets that add up to full's totals exactly, the
reach, each policy's saving over it; hostile runs (unpriced, no calls, compactions) do not break it."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from samples import read_messages

from tiered_agent._messages import Message, Usage
from tiered_agent._tokens import PROMPT_OVERHEAD
from tiered_agent.bench._anatomy import (
    AnatomySum,
    anatomy_dict,
    anatomy_of,
    step_split,
)
from tiered_agent.bench._caching import IdCounter, Pricing
from tiered_agent.bench._metrics import PolicyRunMetrics, StepMetrics, totals
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
from tiered_agent.bench._report import build_document, render_markdown
from tiered_agent.bench._sums import StateError

ROOT = Path(__file__).resolve().parents[1]
COUNTER = IdCounter("o200k_base")
TOOLS = ({"type": "function", "function": {"name": "read_file"}},)


def _run(
    run_id: str, steps: int, *, model: str | None = "gpt-4o", restarts: tuple[int, ...] = ()
) -> RecordedRun:
    return RecordedRun(
        run_id,
        f"memory:{run_id}",
        "tiered-agent",
        read_messages(run_id, steps),
        tools=TOOLS,
        read_only_tools=frozenset({"read_file"}),
        model=model,
        usage=tuple(Usage(1000 + 100 * k, 30, 0, 1) for k in range(steps)) if model else (),
        restarts=restarts,
    )


def _document(runs: list[RecordedRun], policies: list[str], **settings: Any) -> dict[str, Any]:
    return build_document(replay_runs(runs, resolve_policies(policies), ReplaySettings(**settings)), ["m"])


def _step(prompt: int, cached: int, written: int, fixed: int, new: int, output: int = 0) -> StepMetrics:
    return StepMetrics(
        step=1,
        prompt_tokens=prompt,
        cached_tokens=cached,
        output_tokens=output,
        salient=0,
        missed=(),
        retrieval_tokens=0,
        rewrote_prefix=False,
        compacted=False,
        over_hard_limit=False,
        truncated_chars=0,
        build_seconds=0.0,
        cache_write_tokens=written,
        fixed_tokens=fixed,
        new_tokens=new,
    )


def test_a_step_splits_by_place_and_by_what_the_cache_billed() -> None:
    # read [0, 30), written [30, 80), uncached [80, 100); fixed [0, 17) and the primer [97, 100),
    # history [17, 72), new [72, 97)
    split = step_split(_step(100, 30, 50, fixed=20, new=25))
    assert split == ((17, 0, 3), (13, 42, 0), (0, 8, 17))
    # hostile counts are clamped into the prompt: the buckets still hold every token once
    assert step_split(_step(10, 50, 50, fixed=-3, new=99)) == ((0, 0, 0), (0, 0, 0), (10, 0, 0))
    assert step_split(_step(0, 0, 0, fixed=5, new=5)) == ((0, 0, 0), (0, 0, 0), (0, 0, 0))


def _overlap(start: int, end: int, low: int, high: int) -> int:
    return max(0, min(end, high) - max(start, low))


def _split_by_overlaps(step: StepMetrics) -> tuple[tuple[int, ...], ...]:
    """The split as first written: each cell the overlap of a bucket's spans with a kind's span."""
    prompt = step.prompt_tokens
    fixed = min(max(step.fixed_tokens, 0), prompt)
    new = min(max(step.new_tokens, 0), prompt - fixed)
    read = min(max(step.cached_tokens, 0), prompt)
    written = min(max(step.cache_write_tokens, 0), prompt - read)
    primer = min(PROMPT_OVERHEAD, fixed)
    start, end = fixed - primer, prompt - primer
    spans = (((0, start), (end, prompt)), ((start, end - new),), ((end - new, end),))
    kinds = ((0, read), (read, read + written), (read + written, prompt))
    return tuple(tuple(sum(_overlap(*span, *kind) for span in place) for kind in kinds) for place in spans)


_tokens = st.one_of(st.integers(-5, 12), st.integers(0, 5000))


@settings(max_examples=400)
@given(_tokens, _tokens, _tokens, _tokens, _tokens)
def test_a_steps_split_is_the_overlap_of_places_and_kinds(
    prompt: int, cached: int, written: int, fixed: int, new: int
) -> None:
    step = _step(max(prompt, 0), cached, written, fixed, new)
    split = step_split(step)
    assert split == _split_by_overlaps(step)
    assert sum(map(sum, split)) == step.prompt_tokens


def _sums_to_full(anatomy: dict[str, Any], full: dict[str, Any]) -> None:
    tokens = anatomy["tokens"]
    assert sum(tokens[b]["read"] for b in tokens) == full["cached_tokens"]
    assert sum(tokens[b]["written"] for b in tokens) == full["cache_write_tokens"]
    assert sum(sum(kinds.values()) for kinds in tokens.values()) == full["prompt_tokens"]
    cost = anatomy["input_cost"]
    assert cost["total"] == pytest.approx(full["input_cost"], rel=1e-9)
    by_kind = anatomy["input_cost_by_kind"]
    assert sum(sum(k.values()) for k in by_kind.values()) == pytest.approx(full["input_cost"], abs=1e-4)
    assert cost["fixed"] + cost["history"] + cost["new"] == pytest.approx(full["input_cost"], rel=1e-6)
    if full["cost_usd"] is None:
        assert anatomy["usd"] is None and anatomy["reach_usd"] is None
        return
    usd = anatomy["usd"]
    assert usd["total"] == pytest.approx(full["cost_usd"], rel=1e-9)
    parts = usd["output"] + usd["fixed"] + usd["history"] + usd["new"]
    assert parts == pytest.approx(full["cost_usd"], abs=5e-6)
    by_kind = sum(sum(k.values()) for k in anatomy["usd_by_kind"].values())
    assert by_kind + usd["output"] == pytest.approx(full["cost_usd"], abs=1e-5)
    assert sum(anatomy["usd_shares"].values()) == pytest.approx(1.0, abs=1e-5)


@pytest.mark.parametrize(
    "settings",
    [{"cache_model": "ideal"}, {"price_model": "claude-sonnet-4-5"}, {"cache_model": "openai"}],
)
def test_buckets_add_up_to_full_per_run_family_and_all_runs(settings: dict[str, Any]) -> None:
    runs = [_run("a", 8), _run("b", 5), _run("n", 4, model=None)]
    document = _document(runs, ["tiered", "masking"], **settings)
    _sums_to_full(document["anatomy"], document["policies"]["full"]["totals"])
    family = document["families"]["tiered-agent"]
    _sums_to_full(family["anatomy"], family["policies"]["full"]["totals"])
    for run in document["runs"]:
        _sums_to_full(run["anatomy"], run["policies"]["full"])


def test_fixed_and_new_are_where_the_request_holds_them() -> None:
    run = _run("a", 6)
    replay = replay_runs([run], resolve_policies(["masking"]), ReplaySettings(cache_model="ideal")).replays[0]
    steps = replay.policies["full"].steps
    count = COUNTER.count_message
    opening = sum(count(m) for m in run.messages[:2])
    fixed = opening + 3 + COUNTER.count_tools(TOOLS)  # system and task, reply primer, tool schemas
    assert [s.fixed_tokens for s in steps] == [fixed] * 6
    # the first request sends only its opening; each later one the previous iteration's call and result
    new = [0, *(count(run.messages[2 * k]) + count(run.messages[2 * k + 1]) for k in range(1, 6))]
    assert [s.new_tokens for s in steps] == new
    # the ideal cache reads the previous request but its primer: the fixed start and the history are
    # read, new messages and the primer are uncached
    split = [step_split(s) for s in steps]
    assert split[0] == ((0, 0, fixed), (0, 0, 0), (0, 0, 0))
    assert split[1] == ((fixed - 3, 0, 3), (0, 0, 0), (0, 0, new[1]))
    for k in range(2, 6):
        assert split[k] == ((fixed - 3, 0, 3), (sum(new[:k]), 0, 0), (0, 0, new[k]))


def test_reach_and_savings_over_it() -> None:
    document = _document([_run("a", 12), _run("b", 9)], ["masking"], cache_model="ideal")
    anatomy = document["anatomy"]
    cost = anatomy["input_cost"]
    assert anatomy["reach_input_cost"] == pytest.approx(cost["history"] / cost["total"], abs=1e-6)
    assert anatomy["reach_usd"] == pytest.approx(
        anatomy["usd"]["history"] / anatomy["usd"]["total"], rel=1e-3
    )
    assert 0 < anatomy["reach_usd"] < 1 and 0 < anatomy["reach_input_cost"] < 1
    history = sum(anatomy["tokens"]["history"].values())
    prompt = document["policies"]["full"]["totals"]["prompt_tokens"]
    assert anatomy["reach_tokens"] == pytest.approx(history / prompt, abs=1e-6)
    savings = anatomy["saving_over_reach"]
    assert savings["full"] == {"tokens": 0.0, "input_cost": 0.0, "usd": 0.0}
    expected = (prompt - document["policies"]["masking"]["totals"]["input_tokens"]) / history
    assert savings["masking"]["tokens"] == pytest.approx(expected, abs=1e-6)
    masking = document["policies"]["masking"]["totals"]
    expected = masking["input_cost_savings_vs_full"] / anatomy["reach_input_cost"]
    assert savings["masking"]["input_cost"] == pytest.approx(expected, rel=1e-4)
    full_usd = document["policies"]["full"]["totals"]["cost_usd"]
    expected = (full_usd - masking["cost_usd"]) / anatomy["usd"]["history"]
    assert savings["masking"]["usd"] == pytest.approx(expected, rel=1e-4)
    assert "## What a policy can reach" in render_markdown(document)


def test_unpriced_runs_and_runs_without_calls() -> None:
    document = _document([_run("n", 4, model=None)], ["masking"])
    anatomy = document["anatomy"]
    assert anatomy["usd"] is None and anatomy["reach_usd"] is None
    assert anatomy["saving_over_reach"]["masking"]["usd"] is None
    assert anatomy["reach_input_cost"] is not None
    assert "## What a policy can reach" in render_markdown(document)
    empty = PolicyRunMetrics("full", "e", ())
    nothing = anatomy_of(empty, Pricing(), None)
    out = anatomy_dict(nothing, {"full": totals([empty], Pricing())}, "full")
    assert out is not None and out["reach_input_cost"] is None and out["input_cost"]["total"] == 0
    assert out["saving_over_reach"]["full"] == {"tokens": None, "input_cost": None, "usd": None}
    assert anatomy_dict(None, {}, "full") is None


def test_a_compacted_session_adds_up() -> None:
    run = _run("c", 8, restarts=(10,))  # the history restarts at the 5th iteration's call
    run = dataclasses.replace(
        run,
        messages=(*run.messages[:10], Message("user", "Summary of it all.", iteration=5), *run.messages[10:]),
    )
    document = _document([run], ["tiered"], price_model="claude-sonnet-4-5")
    _sums_to_full(document["anatomy"], document["policies"]["full"]["totals"])
    [detail] = document["runs"]
    assert detail["anatomy"]["tokens"]["new"]["uncached"] + detail["anatomy"]["tokens"]["new"]["written"] > 0


def test_sums_merge_and_read_back_their_state() -> None:
    document_runs = replay_runs(
        [_run("a", 6), _run("b", 4)], resolve_policies(["masking"]), ReplaySettings(price_model="gpt-4o")
    ).replays
    parts = [anatomy_of(r.policies["full"], Pricing(), None) for r in document_runs]
    whole, left, right = AnatomySum(), AnatomySum(), AnatomySum()
    for part in parts:
        whole.add(part)
    left.add(parts[0])
    right.add(parts[1])
    left.merge(AnatomySum.from_state(orjson.loads(orjson.dumps(right.state())), "s"))
    assert left.result() == whole.result() and whole.runs == 2
    with pytest.raises(StateError):
        AnatomySum.from_state({"runs": 1}, "s")
    with pytest.raises(StateError):
        AnatomySum.from_state(whole.state() | {"tokens": [[1, 2, 3]]}, "s")


def test_results_table_prints_the_reach(tmp_path: Path) -> None:
    document = _document([_run("a", 8)], ["tiered"], cache_model="ideal")
    path = tmp_path / "bench.json"
    path.write_bytes(orjson.dumps(document))
    out = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "results_table.py"), str(path), "--families"],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    assert "of reach: USD (input cost)" in out and "history (reach)" in out
    reach = document["anatomy"]["reach_usd"] * 100
    assert f"| all (1) | ${document['anatomy']['usd']['total']:,.2f} |" in out
    assert f"{reach:.1f}%" in out
