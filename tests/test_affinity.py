"""Cache affinity in live runs (tiered_agent/_affinity.py), checked on the HTTP bodies litellm sends."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from fake_openai_server import FakeOpenAIServer, RawReply
from fakes import fake_anthropic, text_reply, tool_reply

from tiered_agent import Agent, LiteLLMModel
from tiered_agent._affinity import LONG_GAP_S, CacheAffinity, affinity_fields, cache_affinity
from tiered_agent._model import CACHE_BREAKPOINTS

ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}


def _routed(reply: Any, endpoint: str) -> RawReply:
    return RawReply(
        json.dumps({**reply.to_openai("google/gemini-3-pro-preview"), "provider": endpoint}).encode()
    )


def _run_id(trace: Path) -> str:
    return trace.stem.rsplit("-", 1)[-1]


@pytest.mark.anyio
async def test_an_openai_run_sends_one_prompt_cache_key_per_run(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(tool_reply([("c1", "nope", {})]), text_reply("done"), text_reply("again"))
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test")
        first = await Agent(model, trace_dir=tmp_path).run("x")
        second = await Agent(model, trace_dir=tmp_path).run("x")
    keys = [r.body.get("prompt_cache_key") for r in server.chat_requests]
    assert keys == [f"tiered-agent-{_run_id(first.trace_path)}"] * 2 + [
        f"tiered-agent-{_run_id(second.trace_path)}"
    ]
    assert keys[0] != keys[2]  # the same task, another run: its own key
    assert all("provider" not in r.body for r in server.chat_requests)


@pytest.mark.anyio
async def test_outside_a_run_the_key_follows_the_conversation() -> None:
    with FakeOpenAIServer() as server:
        server.script(text_reply("a"), text_reply("b"), text_reply("c"), text_reply("d"))
        model = LiteLLMModel("openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test")
        task = [{"role": "system", "content": "s"}, {"role": "user", "content": "task one"}]
        await model.complete(task, [])
        await model.complete(
            [*task, {"role": "assistant", "content": "a"}, {"role": "user", "content": "go"}], []
        )
        await model.complete([task[0], {"role": "user", "content": "task two"}], [])
        off = LiteLLMModel(
            "openai/gpt-4o-mini", api_base=server.base_url, api_key="sk-test", cache_affinity=False
        )
        await off.complete(task, [])
    keys = [r.body.get("prompt_cache_key") for r in server.chat_requests]
    assert keys[0] == keys[1] != keys[2]
    assert keys[0] is not None and keys[0].startswith("tiered-agent-")
    assert keys[3] is None


@pytest.mark.anyio
async def test_openrouter_pins_the_endpoint_that_served_the_first_call(tmp_path: Path) -> None:
    with FakeOpenAIServer() as server:
        server.script(
            _routed(tool_reply([("c1", "nope", {})]), "Google AI Studio"),
            _routed(tool_reply([("c2", "nope", {})]), "Google"),  # a fallback served this one
            _routed(text_reply("done"), "Google AI Studio"),
        )
        model = LiteLLMModel(
            "openrouter/google/gemini-3-pro-preview",
            api_base=server.base_url,
            api_key="sk-test",
            extra_kwargs={"extra_body": {"transforms": ["middle-out"]}},
        )
        result = await Agent(model, trace_dir=tmp_path).run("x")
    assert result.output == "done"
    bodies = [r.body for r in server.chat_requests]
    assert "provider" not in bodies[0]
    pinned = {"order": ["Google AI Studio"], "allow_fallbacks": True}
    assert (
        bodies[1]["provider"] == bodies[2]["provider"] == pinned
    )  # still the first endpoint after a fallback
    assert all(b["transforms"] == ["middle-out"] for b in bodies)  # the caller's extra_body is kept
    assert all("prompt_cache_key" not in b for b in bodies)


@pytest.mark.anyio
async def test_claude_breakpoints_take_the_one_hour_ttl_once_calls_are_far_apart() -> None:
    now = [0.0]
    usage = {"input_tokens": 10, "output_tokens": 2}
    with fake_anthropic("ok", usage) as (api_base, bodies):
        model = LiteLLMModel(
            "anthropic/claude-sonnet-4-5", api_base=api_base, api_key="sk-ant-test", clock=lambda: now[0]
        )
        messages = [{"role": "system", "content": "You are careful."}, {"role": "user", "content": "go"}]
        with cache_affinity("r1") as affinity:
            for at in (0.0, 60.0, 60.0 + LONG_GAP_S, 60.0 + LONG_GAP_S + 5):
                now[0] = at
                await model.complete(messages, [])
        assert affinity.long_gaps
    systems = [b["system"][-1].get("cache_control") for b in bodies]
    newest = [b["messages"][-1]["content"][-1].get("cache_control") for b in bodies]
    plain = {"type": "ephemeral"}
    assert systems == newest == [plain, plain, ONE_HOUR, ONE_HOUR]


@pytest.mark.anyio
async def test_without_a_run_scope_claude_keeps_the_default_ttl() -> None:
    now = [0.0]
    with fake_anthropic("ok", {"input_tokens": 10, "output_tokens": 2}) as (api_base, bodies):
        model = LiteLLMModel(
            "anthropic/claude-sonnet-4-5", api_base=api_base, api_key="k", clock=lambda: now[0]
        )
        for at in (0.0, 10 * LONG_GAP_S):
            now[0] = at
            await model.complete([{"role": "system", "content": "s"}, {"role": "user", "content": "go"}], [])
    assert [b["system"][-1]["cache_control"] for b in bodies] == [{"type": "ephemeral"}] * 2


def test_only_direct_anthropic_models_get_the_one_hour_ttl() -> None:
    far = CacheAffinity("k", long_gaps=True)
    points = [dict(p) for p in CACHE_BREAKPOINTS]
    messages = [{"role": "user", "content": "go"}]
    fields = affinity_fields("anthropic/claude-opus-4-5", messages, far, points)
    assert fields["cache_control_injection_points"] == [{**p, "control": ONE_HOUR} for p in points]
    for model in ("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0", "vertex_ai/claude-sonnet-4-5"):
        assert affinity_fields(model, messages, far, points) == {}
    assert affinity_fields("anthropic/claude-opus-4-5", messages, CacheAffinity("k"), points) == {}
    assert affinity_fields("gpt-4o", messages, far)["prompt_cache_key"] == "k"
    assert affinity_fields("hosted_vllm/llama", messages, far) == {}


def test_a_gap_counts_from_the_previous_call() -> None:
    affinity = CacheAffinity("k")
    for at in (0.0, LONG_GAP_S - 1, 2 * LONG_GAP_S - 2):
        affinity.requested(at)
    assert not affinity.long_gaps
    affinity.requested(3 * LONG_GAP_S)
    assert affinity.long_gaps
    affinity.answered(None)
    affinity.answered("A")
    affinity.answered("B")
    assert affinity.route == "A"
