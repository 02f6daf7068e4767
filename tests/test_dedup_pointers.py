"""Dedup pointers: a repeated output is shown as a pointer while an identical one is shown verbatim above.

Which outputs repeat which (context/_duplicates.py, fed by the dispatch), where the Dedup step points
(context/steps/_dedup.py, after every other step), that a pointer only ever changes when what it
points to was hidden, and that the live loop and the replay build identical prompts on recorded runs
with duplicates.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest

from tiered_agent import Agent, RunLimits
from tiered_agent._messages import Message, ToolCall, group_by_iteration
from tiered_agent._tokens import TokenCounter
from tiered_agent._tools import Tool, ToolOutcome, ToolSet
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import _observations, _tool_kinds, policy_config
from tiered_agent.context._dispatch import Batch, ToolKind, dispatch
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._policy import Policy
from tiered_agent.context._step import Run
from tiered_agent.context.dedup._step import DedupRuntime
from tiered_agent.context.pipeline._build import assemble, validate_pairs
from tiered_agent.context.pipeline._draft import BuildContext
from tiered_agent.context.pipeline._types import BuiltPrompt, Summary
from tiered_agent.context.steps import Compact, Dedup, Elide, Mask, Summarize, Truncate
from tiered_agent.testing import AgentRequest, FunctionModel, text

TRACES = Path(__file__).resolve().parents[1] / "traces"
COUNTER = TokenCounter("o200k_base")
READ, WRITE = ToolKind(read_only=True), ToolKind()


def pointer(iteration: int, call_id: str) -> str:
    return f"[same output as iteration {iteration} (tool_call_id={call_id}), shown above]"


# ----------------------------------------------------------------------------- which outputs repeat
async def _serve(dedup: DedupRuntime, iteration: int, calls: Sequence[tuple[str, str, str, str]]) -> None:
    """One batch of ``(id, tool, path, output)``; every call that executes returns its ``output``."""
    batch = [ToolCall(i, tool, json.dumps({"path": path})) for i, tool, path, _ in calls]
    outputs = [o for *_, o in calls]

    async def execute(indexes: Sequence[int]) -> list[ToolOutcome]:
        return [ToolOutcome(outputs[i], is_error=outputs[i] == "ERROR") for i in indexes]

    kinds = {"read": READ, "write": WRITE}
    await dispatch([dedup], Batch(iteration, tuple(batch), tuple(kinds[c.name] for c in batch)), execute)


@pytest.mark.anyio
async def test_identical_outputs_of_identical_read_only_calls_are_linked_to_the_first() -> None:
    dedup = Dedup().start(Run(COUNTER))
    await _serve(dedup, 1, [("c1", "read", "a", "A"), ("c2", "read", "a", "A")])  # one batch
    await _serve(dedup, 2, [("c3", "read", "a", "ignored: served")])  # a cache hit
    await _serve(dedup, 3, [("c4", "write", "b", "A")])  # not read-only, invalidates
    await _serve(dedup, 4, [("c5", "read", "a", "A")])  # ran again, same output
    await _serve(dedup, 5, [("c6", "write", "a", "w"), ("c7", "read", "a", "A2")])
    await _serve(dedup, 6, [("c8", "read", "a", "A2"), ("c9", "read", "z", "A")])  # another call
    await _serve(dedup, 7, [("c10", "read", "q", "ERROR"), ("c11", "read", "q", "ERROR")])
    assert dict(dedup.duplicates.links) == {
        (1, "c2"): (1, "c1"),
        (2, "c3"): (1, "c1"),
        (4, "c5"): (1, "c1"),
        (6, "c8"): (5, "c7"),
    }


# ----------------------------------------------------------------------------- where the step points
def _history(outputs: Sequence[str]) -> list[Message]:
    """Iteration k reads ``f`` and gets ``outputs[k-1]``."""
    history = [Message("system", "s"), Message("user", "task")]
    for k, output in enumerate(outputs, start=1):
        call = ToolCall(f"c{k}", "read", '{"path": "f"}')
        history += [
            Message("assistant", f"read {k}", (call,), iteration=k),
            Message("tool", output, tool_call_id=f"c{k}", name="read", iteration=k),
        ]
    return history


def _built(
    history: list[Message],
    steps: Sequence[Any],
    links: dict[tuple[int, str], tuple[int, str]],
    summary: Summary | None = None,
) -> BuiltPrompt:
    """The prompt the steps' runtimes build, the Dedup runtime knowing ``links`` (what its dispatch
    would have found)."""
    policy = Policy("p", tuple(steps))
    run = Run(COUNTER, retrieval=policy.retrieval_active)
    runtimes = [step.start(run) for step in policy.steps]
    for runtime in runtimes:
        if isinstance(runtime, DedupRuntime):
            runtime.duplicates._links.update(links)
    return assemble(BuildContext.of(history, summary, COUNTER, retrieval=run.retrieval), runtimes)


def _build(
    history: list[Message], steps: Sequence[Any], links: dict[tuple[int, str], tuple[int, str]], **kw: Any
) -> list[str]:
    built = _built(history, steps, links, **kw)
    validate_pairs(built.messages)
    return [m.text for m in built.messages if m.role == "tool"]


BODY = "def f():\n    return 1\n" * 10


def test_a_duplicate_points_to_the_output_shown_verbatim_above() -> None:
    history = _history([BODY, BODY, "other", BODY])
    links = {(2, "c2"): (1, "c1"), (4, "c4"): (1, "c1")}
    assert _build(history, [Dedup()], links, summary=None) == [
        BODY,
        pointer(1, "c1"),
        "other",
        pointer(1, "c1"),
    ]
    # without the links (a caller that keeps none), nothing changes
    assert _build(history, [Dedup()], {}, summary=None) == [BODY, BODY, "other", BODY]
    # the step's place in the policy does not matter: it points once every step has applied
    late = _build(history, [Truncate(max_chars=10_000), Dedup()], links, summary=None)
    assert late == _build(history, [Dedup(), Truncate(max_chars=10_000)], links, summary=None)


def test_a_cut_original_is_not_pointed_to_and_its_duplicate_is_cut_alike() -> None:
    history = _history([BODY, BODY])
    shown = _build(history, [Dedup(), Truncate(max_chars=100)], {(2, "c2"): (1, "c1")}, summary=None)
    assert shown[0] == shown[1].replace("c2", "c1") and "omitted" in shown[0]


def test_a_hidden_original_gives_way_to_the_first_duplicate_still_shown_whole() -> None:
    history = _history([BODY, "x", BODY, BODY])
    links = {(3, "c3"): (1, "c1"), (4, "c4"): (1, "c1")}
    summary = Summary(1, 2, "the summary")
    steps = [Dedup(), Summarize(every=2, keep=1), Elide()]
    shown = _build(history, steps, links, summary=summary)
    assert shown == ['[output omitted; context_retrieve(tool_call_id="c1")]', "x", BODY, pointer(3, "c3")]


def test_a_duplicate_behind_a_placeholder_stays_a_placeholder() -> None:
    history = _history([BODY, BODY, "y", "z"])
    shown = _build(history, [Dedup(), Mask(keep=2)], {(2, "c2"): (1, "c1")}, summary=None)
    assert shown[:2] == ['[output omitted; context_retrieve(tool_call_id="c1")]'] * 1 + [
        '[output omitted; context_retrieve(tool_call_id="c2")]'
    ]


def test_a_pointer_never_lengthens_an_output_and_the_record_says_what_it_spared() -> None:
    history = _history(["short", "short", BODY, BODY])
    links = {(2, "c2"): (1, "c1"), (4, "c4"): (3, "c3")}
    built = _built(history, [Dedup()], links)
    assert [m.text for m in built.messages if m.role == "tool"] == ["short", "short", BODY, pointer(3, "c3")]
    assert (built.stats.pointed_outputs, built.stats.pointed_chars) == (1, len(BODY) - len(pointer(3, "c3")))
    effects = built.effects["dedup"]  # recorded as the Dedup step's, in the trace's record
    assert (effects.pointers, effects.pointer_chars) == (1, len(BODY) - len(pointer(3, "c3")))
    plain = _built(history, [Dedup()], {})
    assert plain.stats.pointed_outputs == 0 and "dedup" not in plain.effects


# ----------------------------------------------------------------------------- live == replay
def _world_run() -> RecordedRun:
    """Reads and writes of a small world: cache hits, a read run again after a write with the same
    output, one with a new output, twin reads in one reply, a long output that is cut, and 30
    iterations, so that `tiered` summarizes (its elision hides originals their duplicates pointed to)."""
    files = {"a": "alpha\n" * 30, "b": "beta\n" * 30, "c": "gamma\n" * 30, "big": "0123456789abcdef\n" * 600}
    files |= {f"f{i}": f"file {i}\n" * 40 for i in range(3)}
    plan: list[list[tuple[str, str]]] = [
        [("read", "a")],
        [("read", "b")],
        [("read", "a")],
        [("read", "big")],
        [("read", "big")],
        [("write", "b")],  # writes what b already holds
        [("read", "a")],
        [("write", "a")],  # a changes
        [("read", "a")],
        [("read", "c"), ("read", "c")],  # twins of one reply: both run
        *[[("read", f"f{k % 3}")] for k in range(17)],
        [("read", "a")],
        [("read", "a")],
        [("read", "b")],
    ]
    messages = [Message("system", "You are an agent."), Message("user", "Look around.")]
    for k, step in enumerate(plan, start=1):
        calls = tuple(ToolCall(f"c{k}_{j}", t, json.dumps({"path": p})) for j, (t, p) in enumerate(step))
        messages.append(Message("assistant", f"step {k}", calls, iteration=k))
        for call, (tool, path) in zip(calls, step, strict=True):
            if tool == "write":
                files[path] = files[path] if path == "b" else "alpha two\n" * 30
                out = "written"
            else:
                out = files[path]
            messages.append(Message("tool", out, tool_call_id=call.id, name=tool, iteration=k))
    return RecordedRun("world", "test", "tiered-agent", tuple(messages), read_only_tools=frozenset({"read"}))


def _bundled_read_only(name: str) -> RecordedRun:
    """A recorded run whose tools all count as read-only: its repeated commands become duplicates."""
    run = load_runs([TRACES / f"{name}.jsonl"]).runs[0]
    if run.messages[-1].role == "assistant":  # the final submit, never answered
        run = dataclasses.replace(run, messages=run.messages[:-1])
    names = frozenset(c.name for m in run.messages for c in m.tool_calls)
    return dataclasses.replace(run, read_only_tools=names)


async def _live_prompts(
    run: RecordedRun, policy: Policy, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> list[list[dict[str, Any]]]:
    observations = {m.tool_call_id: m.text for m in run.messages if m.role == "tool"}

    async def play(self: ToolSet, call: ToolCall, *, spill_dir: Path | None = None) -> ToolOutcome:
        await anyio.sleep(0)
        return ToolOutcome(observations[call.id])

    monkeypatch.setattr(ToolSet, "execute", play)
    tools = _recorded_tools(run)
    actions = [dataclasses.replace(m, iteration=0) for m in run.messages if m.role == "assistant"]
    script = [*actions, text("done")]

    async def reply(request: AgentRequest) -> Message:
        for _ in range(5):  # a real model call suspends: a background summary lands meanwhile
            await anyio.sleep(0)
        return script[request.index]

    model = FunctionModel(reply)
    system = next(m.text for m in run.messages if m.role == "system")
    agent = Agent(
        model,
        tools=tools,
        context=policy,
        system_prompt=system,
        limits=RunLimits(max_iterations=len(script)),
        trace_dir=tmp_path,
    )
    result = await agent.run(run.task)
    assert result.output == "done"
    return [r.messages for r in model.requests[: len(actions)]]


def _recorded_tools(run: RecordedRun) -> list[Tool]:
    """The run's tools as the live agent gets them (their schemas count in the aging decisions)."""
    names = dict.fromkeys(c.name for m in run.messages for c in m.tool_calls)
    return [Tool(n, "recorded", {"type": "object"}, print, read_only=n in run.read_only_tools) for n in names]


async def _replay_prompts(run: RecordedRun, policy: Policy) -> list[list[dict[str, Any]]]:
    manager = ContextManager(
        policy,
        counter=IdCounter("o200k_base"),
        context_window=128_000,
        background=False,
        enforce_hard_limit=False,
        model=MODEL,
    )
    kind = _tool_kinds(run)
    groups = group_by_iteration(run.messages)
    history: list[Message] = list(groups[0])
    prompts: list[list[dict[str, Any]]] = []
    async with manager:
        tools = [*_recorded_tools(run), *manager.tools(lambda: history)]
        schemas = [t.schema() for t in tools]
        for iteration in sorted(i for i in groups if i > 0):
            prepared = await manager.prepare(history, schemas)
            prompts.append(prepared.messages)
            history.extend(await _observations(manager, groups[iteration], kind, iteration))
    return prompts


# The layout these tests were written for (the default before aging): outputs of summarized
# iterations elided, the rolling summary after them; pinned so the tests do not follow the preset.
ELIDE_SUMMARY = Policy(
    "elide-summary",
    (Dedup(), Summarize(every=25, keep=1), Compact(at=0.70, keep=5), Elide(), Truncate(max_chars=8000)),
)
MODEL = FunctionModel.name  # the live agent's model: the replay decides aging by the same cache terms


def _pointed(prompts: list[list[dict[str, Any]]]) -> int:
    return sum(1 for m in prompts[-1] if str(m.get("content", "")).startswith("[same output as iteration"))


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("source", "policy"),
    [
        ("world", "tiered"),
        ("world", "elide-summary"),
        ("world", "kb-labs-adr"),
        ("world", "tiered:dedup-only"),
        ("mini-swe-agent/django__django-12708", "elide-summary"),
        ("swe-agent/marshmallow-1867__function_calling_replace", "tiered:dedup-only"),
    ],
)
async def test_the_live_loop_and_the_replay_build_identical_prompts(
    source: str, policy: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = _world_run() if source == "world" else _bundled_read_only(source)
    config = ELIDE_SUMMARY if policy == ELIDE_SUMMARY.name else policy_config(policy)
    live = await _live_prompts(run, config, tmp_path, monkeypatch)
    replay = await _replay_prompts(run, config)
    assert len(live) == len(replay)
    for step, (a, b) in enumerate(zip(live, replay, strict=True), start=1):
        assert a == b, f"step {step} differs"
    assert any(_pointed(replay[: k + 1]) for k in range(len(replay)))  # pointers were exercised


@pytest.mark.anyio
async def test_the_world_run_points_where_it_should_and_a_pointer_changes_only_with_what_it_shows() -> None:
    run = _world_run()
    prompts = await _replay_prompts(run, ELIDE_SUMMARY)
    step11 = {m["tool_call_id"]: m["content"] for m in prompts[10] if m["role"] == "tool"}
    assert step11["c3_0"] == pointer(1, "c1_0")  # a cache hit
    assert step11["c5_0"].startswith("[already called in iteration 4")  # big is cut: served again...
    assert "omitted" in step11["c5_0"]  # ...and cut like the original
    assert step11["c7_0"] == pointer(1, "c1_0")  # ran again after a write, same output
    assert step11["c9_0"] == "alpha two\n" * 30  # a changed output is no duplicate
    assert step11["c10_0"] == "gamma\n" * 30 and step11["c10_1"] == pointer(10, "c10_0")
    last = {m["tool_call_id"]: m["content"] for m in prompts[-1] if m["role"] == "tool"}
    # after the summary (iterations 1-24) every covered output is elided: the duplicates after it
    # are served whole again, the first of them standing for the later ones
    assert last["c9_0"].startswith("[output omitted")
    assert last["c28_0"].startswith("[already called in iteration 9")
    assert last["c29_0"] == pointer(28, "c28_0")
    # Prompt-cache stability: each prompt extends the previous one, except where a summary landed
    # (its elision rewrites the range it covers, and what pointed into that range changes with it).
    for k in range(1, len(prompts)):
        before, after = prompts[k - 1], prompts[k]
        landed = any(str(m.get("content", "")).startswith("[Summary of") for m in after) and not any(
            str(m.get("content", "")).startswith("[Summary of") for m in before
        )
        assert landed or after[: len(before)] == before, f"step {k + 1} rewrote its prefix"
