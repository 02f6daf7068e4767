"""The cache breakpoint on the prompt's stable prefix (issue 18): reported by the policy
(``BuiltPrompt.stable``), marked by the live requests (checked on the HTTP body litellm sends) and
by the bench's cache simulation from the same definition (``_model.stable_breakpoints``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from fakes import fake_anthropic
from scripted_runs import ScriptedRun

from tiered_agent import Agent, LiteLLMModel, Policy, RunLimits, ToolCall, _model
from tiered_agent._messages import Message
from tiered_agent._model import CACHE_BREAKPOINTS, stable_breakpoints, stable_prefix
from tiered_agent._providers import CACHE_MODELS
from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._caching import CacheSimulator, IdCounter, PromptEncoder
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._replay import ReplaySettings, replay_prompts
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.aging._breakeven import CacheTerms
from tiered_agent.context.steps import Age
from tiered_agent.testing import AgentRequest, FunctionModel, text


def _messages(count: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [{"role": "system", "content": "You are careful."}]
    for i in range(1, count):
        out.append({"role": "user" if i % 2 else "assistant", "content": f"message {i}"})
    return out


def test_stable_breakpoints_take_the_preferred_prefixes_that_fit() -> None:
    assert stable_breakpoints((7, 4), 10, 2) == (7, 4)
    assert stable_breakpoints((7, 4), 10, 1) == (7,)
    assert stable_breakpoints((7, 4), 10, 0) == ()
    # the newest message has its own breakpoint; nothing outside the prompt, nothing twice
    assert stable_breakpoints((10, 0, 12, 4, 4, 3), 10, 3) == (4, 3)


def test_claude_requests_mark_the_stable_prefix_inside_its_scope_only() -> None:
    model = LiteLLMModel("anthropic/claude-sonnet-4-5")
    with stable_prefix((5, 3)):
        marked = model._request(_messages(8), [])["cache_control_injection_points"]
        gpt = LiteLLMModel("openai/gpt-4o")._request(_messages(8), [])
    assert marked == [
        *CACHE_BREAKPOINTS,
        {"location": "message", "index": 4},
        {"location": "message", "index": 2},
    ]
    assert "cache_control_injection_points" not in gpt  # implicit caches: nothing changes
    assert model._request(_messages(8), [])["cache_control_injection_points"] == list(CACHE_BREAKPOINTS)


@pytest.mark.anyio
async def test_the_http_body_carries_the_stable_prefix_breakpoint() -> None:
    usage = {"input_tokens": 10, "output_tokens": 2}
    with fake_anthropic("ok", usage) as (api_base, bodies):
        model = LiteLLMModel("anthropic/claude-sonnet-4-5", api_base=api_base, api_key="sk-ant-test")
        with stable_prefix((4,)):
            await model.complete(_messages(7), [])
        await model.complete(_messages(7), [])
    marked = [
        [i for i, m in enumerate(body["messages"]) if any("cache_control" in c for c in m["content"])]
        for body in bodies
    ]
    # messages after the system prompt: index 2 is the prompt's message 3, the stable prefix's last
    assert marked == [[2, 5], [5]]
    assert all(body["system"][-1]["cache_control"] == {"type": "ephemeral"} for body in bodies)


def _sim(model: str = "anthropic") -> CacheSimulator:
    return CacheSimulator(PromptEncoder(IdCounter()), CACHE_MODELS[model], 1.0, prefix_tokens=0)


def _history(aged: int, tail: int, marker: str = "") -> list[Message]:
    """[system, task][aged: long messages, 2 blocks each][tail]: the aged part changes at its end."""
    text = " ".join(f"w{i}" for i in range(400))
    head = [Message("system", "system " + text), Message("user", "task " + text)]
    body = [Message("user" if i % 2 else "assistant", f"aged {i} {text}") for i in range(aged)]
    return [
        *head,
        *body,
        *(Message("user" if i % 2 else "assistant", f"{marker}tail {i} {text}") for i in range(tail)),
    ]


def test_the_simulation_reads_up_to_the_stable_prefix_after_a_change_after_it() -> None:
    stable = 2 + 30  # head and the aged part: 30 messages, more than 20 blocks back from the change
    read = {}
    for marks in ((), (stable,)):
        sim = _sim()
        sim.request(_history(30, 3), stable=marks)
        sim.request(_history(30, 4), stable=marks)
        changed = sim.request(_history(30, 4, marker="new "), stable=marks)  # changed after the aged part
        read[marks] = changed.read
    sim = _sim()
    sim.request(_history(30, 0), stable=())
    prefix = sim._sums[-1]
    rate = CACHE_MODELS["anthropic"].rewrite_rate  # a share of reads lost to the provider's own rewrites
    assert read[(stable,)] == round(prefix * (1 - rate))
    assert read[()] < prefix / 10  # without the breakpoint: the system prompt alone


def test_implicit_caches_ignore_the_stable_prefix() -> None:
    uses = []
    for marks in ((), (32,)):
        sim = _sim("openai")
        uses.append([sim.request(_history(30, n), stable=marks) for n in (3, 4, 5)])
    assert uses[0] == uses[1]


def test_the_break_even_rule_loses_only_what_follows_the_stable_prefix() -> None:
    terms = CacheTerms(read=0.1, write=1.25, explicit=True)
    assert terms.lost(prefix=5000, tail=800, fixed=1000) == 4800
    assert terms.lost(prefix=5000, tail=800, fixed=1000, stable=5000) == 800
    assert terms.lost(prefix=5000, tail=800, fixed=1000, stable=3000) == 2800
    implicit = CacheTerms(read=0.1, block=128)
    assert implicit.lost(5000, 800, 1000, stable=5000) == implicit.lost(5000, 800, 1000)


# ----------------------------------------------------------------------------- the policy's field
COUNTER = TokenCounter("o200k_base")
TRACES = Path(__file__).resolve().parents[1] / "traces"


def _story(last: int) -> list[Message]:
    out = [Message("system", "You are an agent."), Message("user", "Fix parse_args in cli/main.py.")]
    for k in range(1, last + 1):
        call = ToolCall(f"call_{k}", "bash", f'{{"command": "nl -ba cli/main.py # {k}"}}')
        listing = "\n".join(f"{n:4d}\tdef helper_{n}_{k}(value): pass" for n in range(1, 30))
        out += [
            Message("assistant", f"I will read part {k}. It has helpers.", (call,), iteration=k),
            Message("tool", listing, tool_call_id=f"call_{k}", name="bash", iteration=k),
        ]
    return out


def _prefix(a: Sequence[Message], b: Sequence[Message], count: int) -> bool:
    return count <= min(len(a), len(b)) and list(a[:count]) == list(b[:count])


@pytest.mark.anyio
async def test_aging_reports_its_stable_prefixes_and_the_one_an_epoch_keeps() -> None:
    history = _story(40)
    policy = Policy("p", (Age(window=2, min_chars=100, condense_after=8, chunk=3),))
    terms = CacheTerms(read=0.5)  # expensive reads: ages often
    epochs = swaps = 0
    async with ContextManager(policy, counter=COUNTER, background=False, cache_terms=terms) as manager:
        previous: tuple[Message, ...] = ()
        before: tuple[int, ...] = ()
        for last in range(1, 41):
            built = (await manager.prepare([m for m in history if m.iteration < last])).built
            aging = manager.schedule
            if aging is None or not aging.epochs:
                assert built.stable == ()
                continue
            head_and_notes = built.stable[-1] if len(built.stable) == 2 else None
            if before and not set(before) <= set(built.stable):  # an epoch moved them
                epochs += 1
                kept = built.stable[0]
                assert kept in before and _prefix(previous, built.messages, kept)
                assert kept not in built.stable[1:]
            elif before:
                swaps += before == built.stable[::-1] != built.stable
                assert all(_prefix(previous, built.messages, k) for k in before)
            assert all(0 < k < len(built.messages) for k in built.stable)
            assert head_and_notes is None or head_and_notes >= 3  # system, task, preamble at least
            previous, before = built.messages, built.stable
    assert epochs >= 3 and swaps >= 5  # kept entries at epochs; the two preferred in turn between


@pytest.mark.anyio
async def test_the_live_loop_marks_what_the_replay_simulates(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = load_runs([TRACES / "mini-swe-agent" / "matplotlib__matplotlib-26466.jsonl"]).runs[0]
    scripted = ScriptedRun.of(run, PRESETS["tiered"], monkeypatch)
    actions = list(scripted.actions)
    seen: list[tuple[int, ...]] = []

    def reply(request: AgentRequest) -> Message:
        seen.append(_model._STABLE.get())
        return [*actions, text("done")][request.index]

    agent = Agent(
        FunctionModel(reply),
        tools=list(scripted.tools),
        context="tiered",
        limits=RunLimits(max_iterations=len(actions) + 1),
        trace_dir=tmp_path,
    )
    result = await agent.run(run.task)
    traced = load_runs([result.trace_path], strict=True).runs[0]
    settings = ReplaySettings(cache_model="openai", price_model="gpt-4o")  # the live agent's terms
    replayed = [p.built.stable async for p in replay_prompts(traced, PRESETS["tiered"], settings)]
    assert seen == replayed and sum(1 for s in seen if s) > len(seen) // 2
    assert _model._STABLE.get() == ()
