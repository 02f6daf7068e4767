"""Replay through the live ContextManager: same prompts as a direct build, dedup, misses, determinism."""

from __future__ import annotations

from pathlib import Path

import pytest
from samples import HAND_RUN

from tiered_agent._errors import ConfigurationError
from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent.bench._caching import CacheSimulator, IdCounter, PromptEncoder
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import (
    ABLATIONS,
    ReplaySettings,
    available_policies,
    policy_config,
    replay_run,
    replay_runs,
    resolve_policies,
)
from tiered_agent.bench._report import build_document, strip_timing
from tiered_agent.context._config import ContextConfig
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._policy import Policy
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.steps import Compact, Dedup, Elide, Summarize, Truncate

SHARED = Path(__file__).resolve().parents[2] / "shared" / "trajectories"
READ = "read_file"
SCHEMA = {"type": "function", "function": {"name": READ, "parameters": {"type": "object"}}}


def _call(call_id: str, name: str, args: str) -> tuple[ToolCall, ...]:
    return (ToolCall(call_id, name, args),)


def _synthetic_run(run_id: str, steps: int, *, output_chars: int = 1500) -> RecordedRun:
    """A run whose observations are long (truncation bites) and whose history grows past windows."""
    messages = [
        Message("system", "You are a coding agent."),
        Message("user", f"Task {run_id}: fix module_0.py"),
    ]
    usage = []
    for k in range(1, steps + 1):
        path = f"pkg/module_{k % 4}.py"  # paths repeat: dedup hits on read-only reads
        args = f'{{"path": "{path}"}}'
        messages.append(
            Message("assistant", f"Reading {path} for value_{k - 1}", _call(f"c{k}", READ, args), iteration=k)
        )
        body = "\n".join(f"line {i}: value_{k % 4}_{i} = {k * 1000 + i}" for i in range(output_chars // 30))
        messages.append(Message("tool", body, tool_call_id=f"c{k}", name=READ, iteration=k))
        usage.append(
            Usage(prompt_tokens=400 * k, completion_tokens=20, cached_tokens=380 * (k - 1), requests=1)
        )
    return RecordedRun(
        run_id=run_id,
        source=f"memory:{run_id}",
        format="tiered-agent",
        messages=tuple(messages),
        tools=(SCHEMA,),
        read_only_tools=frozenset({READ}),
        usage=tuple(usage),
        model="test/model",
    )


@pytest.fixture(scope="module")
def counter() -> IdCounter:
    return IdCounter("o200k_base")


# ----------------------------------------------------------------------------- policies
def test_policies_and_ablations() -> None:
    names = available_policies()
    assert set(PRESETS) <= set(names)
    assert {"tiered:truncation-only", "tiered:aging-only", "tiered:dedup-only"} <= set(names)
    kinds = {name: [s.kind for s in policy_config(f"tiered:{name}").steps] for name in ABLATIONS}
    assert kinds == {  # Elide stays in each: without a summary it changes nothing; Tidy is left out
        "truncation-only": ["truncate"],
        "aging-only": ["compact", "age"],
        "dedup-only": ["dedup"],
    }
    assert policy_config("tiered:truncation-only").name == "tiered:truncation-only"
    tiered = PRESETS["tiered"]
    for name in ABLATIONS:  # each keeps tiered's own steps and settings, nothing else
        ablation = policy_config(f"tiered:{name}")
        assert set(ablation.steps) <= set(tiered.steps)
        assert ablation.replace(name="tiered", steps=tiered.steps) == tiered


def test_resolve_policies_adds_the_baseline_and_rejects_unknown_names() -> None:
    assert list(resolve_policies(["tiered", "codex"])) == ["full", "tiered", "codex"]
    assert list(resolve_policies(None)) == list(available_policies())
    with pytest.raises(
        ConfigurationError, match=r"unknown policy 'nope'.*choose from full|unknown policy 'nope'.*tiered"
    ):
        resolve_policies(["tiered", "nope"])
    with pytest.raises(ConfigurationError, match="tiered:dedup-only"):
        policy_config("tiered:bogus")


# ----------------------------------------------------------------------------- same prompts as the manager
async def _direct(run: RecordedRun, config: Policy, counter: IdCounter) -> list[tuple[int, int]]:
    """Step through the recorded history with a fresh manager (no dedup): (prompt, cached) per step."""
    manager = ContextManager(
        config, counter=counter, context_window=128_000, background=False, enforce_hard_limit=False
    )
    cache = CacheSimulator(PromptEncoder(counter))  # ideal: what replay_run simulates by default
    out = []
    async with manager:
        schemas = [*run.tools, *(t.schema() for t in manager.tools(lambda: run.messages))]
        last = max(m.iteration for m in run.messages)
        for k in range(1, last + 1):
            history = [m for m in run.messages if m.iteration < k]
            prepared = await manager.prepare(history, schemas)
            out.append((prepared.prompt_tokens, cache.request(prepared.built.messages, prepared.tools).read))
    return out


@pytest.mark.anyio
@pytest.mark.parametrize(
    "name", ["full", "tiered", "masking", "codex", "adk-compaction", "tiered:aging-only"]
)
async def test_replay_matches_a_direct_build(name: str, counter: IdCounter) -> None:
    run = _synthetic_run("direct", 24)
    config = policy_config(name).without("dedup")  # the direct build has no tool runner
    replay = await replay_run(run, {name: config}, counter=counter)
    steps = replay.policies[name].steps
    assert [(s.prompt_tokens, s.cached_tokens) for s in steps] == await _direct(run, config, counter)
    assert [s.step for s in steps] == list(range(1, 25))
    assert [s.output_tokens for s in steps] == [20] * 24  # recorded completion tokens


@pytest.mark.anyio
async def test_full_replay_counts_the_whole_history(counter: IdCounter) -> None:
    run = _synthetic_run("whole", 6)
    steps = (await replay_run(run, {"full": PRESETS["full"]}, counter=counter)).policies["full"].steps
    for step in steps:
        history = [m for m in run.messages if m.iteration < step.step]
        assert step.prompt_tokens == counter.count_prompt(history, run.tools)
        assert step.missed == ()
    assert steps[0].cached_tokens == 0
    assert all(s.cached_tokens > 0 for s in steps[1:])


@pytest.mark.anyio
async def test_dedup_serves_repeated_reads(counter: IdCounter) -> None:
    run = _synthetic_run("dedup", 8)
    policies = {"full": PRESETS["full"], "tiered:dedup-only": policy_config("tiered:dedup-only")}
    replay = await replay_run(run, policies, counter=counter)
    dedup, full = replay.policies["tiered:dedup-only"], replay.policies["full"]
    assert dedup.dedup_hits == 4  # 8 reads of 4 distinct paths
    assert full.dedup_hits == 0
    # the 5th read repeats the 1st: from step 6 on, the history holds the cached result of iteration 1
    # (under a "[already called in iteration 1 ...]" header) instead of the recorded output
    assert [s.prompt_tokens for s in dedup.steps[:5]] == [s.prompt_tokens for s in full.steps[:5]]
    assert dedup.steps[5].prompt_tokens != full.steps[5].prompt_tokens


# ----------------------------------------------------------------------------- hidden information
@pytest.mark.anyio
async def test_miss_rate_on_the_hand_run(counter: IdCounter) -> None:
    window = ContextConfig(
        name="window-1",
        max_output_chars=None,
        dedup=False,
        window_iterations=1,
        summary_every=None,
        compact_at=None,
    )
    replay = await replay_run(HAND_RUN, {"full": PRESETS["full"], "window-1": window}, counter=counter)
    steps = replay.policies["window-1"].steps
    assert [s.salient for s in steps] == [0, 1, 3]
    assert [s.missed for s in steps] == [(), (), ("4096", "compute_total")]
    assert steps[2].retrieval_tokens > 0  # one context_retrieve round trip charged
    assert [s.retrieval_tokens for s in steps[:2]] == [0, 0]
    assert all(s.missed == () for s in replay.policies["full"].steps)
    assert all(s.retrieval_tokens == 0 for s in replay.policies["full"].steps)


# ----------------------------------------------------------------------------- determinism
def test_replay_is_deterministic_across_workers() -> None:
    runs = [_synthetic_run(f"run{i}", 6 + 3 * i, output_chars=800) for i in range(4)] + [HAND_RUN]
    policies = resolve_policies(["tiered", "masking", "tiered:dedup-only"])
    settings = ReplaySettings(context_window=2500)  # small window: compaction thresholds are crossed
    one = build_document(replay_runs(runs, policies, settings, workers=1), ["memory"])
    two = build_document(replay_runs(list(reversed(runs)), policies, settings, workers=2), ["memory"])
    assert strip_timing(one) == strip_timing(two)
    assert [r["run_id"] for r in one["runs"]] == sorted(r.run_id for r in runs)
    assert one["policies"]["tiered"]["totals"]["compactions"] > 0


def test_duplicate_run_ids_are_kept_apart() -> None:
    run = _synthetic_run("same", 3)
    result = replay_runs([run, run], resolve_policies(["full"]))
    assert [r.run_id for r in result.runs] == ["same", "same#2"]


# ----------------------------------------------------------------------------- real recorded runs
@pytest.mark.skipif(not SHARED.is_dir(), reason="shared trajectories not present")
def test_recorded_gemini_run_fidelity_and_savings() -> None:
    from tiered_agent.bench._importers import load_runs

    runs = load_runs([SHARED / "mini-swe-agent_gemini-3-pro" / "django__django-12708.traj.json"]).runs
    result = replay_runs(runs, resolve_policies(["tiered", "kb-labs-adr"]))
    document = build_document(result, ["django__django-12708"])
    totals = {n: p["totals"] for n, p in document["policies"].items()}
    assert totals["full"]["steps"] == 19
    assert totals["kb-labs-adr"]["input_tokens"] < totals["full"]["input_tokens"]
    # `tiered` on this 19-step run (Gemini's cache and prices decide when to age): it was served by
    # two endpoints, each with its own cache, so a rewrite is paid at both. Aging it used to rewrite
    # at the last step and cost 3% more than `full`; with the agent's own scripts keeping the lines
    # it used later, the rent never reaches the rewrite cost before the run ends: no rewrite, and
    # never dearer than `full`.
    assert totals["tiered"]["input_tokens"] <= totals["full"]["input_tokens"]
    assert totals["tiered"]["input_cost"] <= totals["full"]["input_cost"] * 1.0001
    assert document["inputs"]["runs"][0]["endpoints"] == 2
    assert totals["tiered"]["miss_rate_adjusted"] == 0.0
    assert 0.5 < document["fidelity"]["ratio"] < 2.0  # local o200k count vs Gemini's billed tokens
    validation = document["validation"]["caching"]
    assert validation["steps"] == 19
    assert 0 <= validation["mean_abs_error_cached_share"] < 0.5


def test_an_llm_summarizer_is_charged_its_own_tokens() -> None:
    from fakes import make_usage, scripted_provider, text_reply

    run = _synthetic_run("llm-summary", 24)
    # the previous default, summarizing every 5 iterations
    steps = (Dedup(), Summarize(every=5, keep=2), Compact(at=0.70, keep=5), Elide(), Truncate(max_chars=8000))
    sum5 = Policy("sum5", steps)
    policy = {"full": policy_config("full"), "sum5": sum5}
    reply = text_reply("Goal: fix module_0.py; nothing failed.", make_usage(prompt=300, completion=40))
    with scripted_provider(respond=lambda request: reply) as llm:
        result = replay_runs([run], policy, ReplaySettings(summary_model="fake/any"))
    summaries = len(llm.requests)
    assert summaries == 4  # queued at iterations 5, 10, 15 and 20; each lands before the next step
    totals = build_document(result, ["x"])["policies"]["sum5"]["totals"]
    assert (totals["summary_input_tokens"], totals["summary_output_tokens"]) == (
        300 * summaries,
        40 * summaries,
    )
    assert totals["input_tokens"] == totals["prompt_tokens"] + 300 * summaries
    assert build_document(result, ["x"])["settings"]["summarizer"] == "fake/any"
