"""Cache simulations shared by policies that sent the same requests (``_cache_chain.py``): every
policy's bills equal its own simulator's, request by request, whatever the other policies sent."""

from __future__ import annotations

import random

import pytest

from tiered_agent._messages import Message
from tiered_agent._providers import CACHE_MODELS, cache_model_for
from tiered_agent.bench._cache_chain import CacheChains, CacheTrack
from tiered_agent.bench._caching import CacheSimulator, CacheUse, IdCounter, PromptEncoder

TOOLS = [{"type": "function", "function": {"name": "bash", "parameters": {"type": "object"}}}]
OTHER_TOOLS = [*TOOLS, {"type": "function", "function": {"name": "context_retrieve"}}]


@pytest.fixture(scope="module")
def counter() -> IdCounter:
    return IdCounter("o200k_base")


def _recorded(rng: random.Random) -> list[Message]:
    """A run's messages: long enough that the explicit cache's minimum is reached mid-run."""
    words = ["alpha", "beta", "gamma", "delta", "lorem", "ipsum", "dolor", "sit", "amet"]
    out = [Message("system", "You are terse. " * 200), Message("user", "Fix the bug. " * 50)]
    for index in range(1, 40):
        role = "assistant" if index % 2 else "tool"
        text = " ".join(rng.choice(words) for _ in range(rng.randint(20, 400)))
        out.append(Message(role, text, iteration=index))
    return out


def _prompts(rng: random.Random, recorded: list[Message], policy: int) -> list[tuple[list[Message], bool]]:
    """One policy's prompts: the recorded history, until (for some policies) it rewrites a message
    (the rest of its prompts hold that message of its own)."""
    rewrite_at = None if policy == 0 else rng.choice([None, *range(3, 30)])
    own: Message | None = None
    out = []
    for step in range(2, 36):
        prompt = list(recorded[: step + 1])
        if rewrite_at is not None and step >= rewrite_at:
            if own is None:
                own = Message("tool", recorded[3].text[:40], iteration=recorded[3].iteration)
            prompt[3] = own
        out.append((prompt, own is not None))
    return out


@pytest.mark.parametrize(
    "model", [CACHE_MODELS["ideal"], CACHE_MODELS["openai"], cache_model_for("claude-sonnet-4-5")]
)
def test_shared_bills_equal_each_policy_s_own_simulation(counter: IdCounter, model: object) -> None:
    rng = random.Random(7)
    recorded = _recorded(rng)
    encoder = PromptEncoder(counter)
    chains = CacheChains()
    routes = [rng.choice(["a", "b", None]) for _ in range(40)]
    times = [1000.0 + 90.0 * i + (600 if i == 20 else 0) for i in range(40)]
    for policy in range(8):
        prompts = _prompts(rng, recorded, policy)
        tools = OTHER_TOOLS if policy == 5 else TOOLS
        track = CacheTrack(CacheSimulator(encoder, model, 1.2, 3000), chains)  # type: ignore[arg-type]
        alone = CacheSimulator(PromptEncoder(counter), model, 1.2, 3000)  # type: ignore[arg-type]
        for step, (prompt, own) in enumerate(prompts):
            key = None if own else len(prompt)  # the recorded prompt of a step: its length tells it
            options = {
                "at": times[step],
                "long_ttl": step % 7 == 0,
                "new_turn_after_reasoning": step % 5 == 0,
            }
            shared = track.request(key, prompt, tools, routes[step], **options)  # type: ignore[arg-type]
            expected = alone.request(prompt, tools, routes[step], **options)  # type: ignore[arg-type]
            assert (shared, track.rewrote) == (expected, alone.rewrote), (policy, step)


def test_followers_read_the_chain_and_a_new_request_continues_from_its_state(counter: IdCounter) -> None:
    encoder = PromptEncoder(counter)
    chains = CacheChains()
    system, task = Message("system", "You are terse."), Message("user", "Fix bug.")
    action = Message("assistant", "ls", iteration=1)
    first, second = CacheTrack(CacheSimulator(encoder), chains), CacheTrack(CacheSimulator(encoder), chains)
    assert first.request(1, [system, task]) == CacheUse(0)
    assert first.request(2, [system, task, action]) == CacheUse(13)
    rewritten = Message("user", "Fix it.")
    alone = CacheSimulator(PromptEncoder(counter))
    expected = [
        alone.request(p) for p in ([system, task], [system, task, action], [system, rewritten, action])
    ]
    expected.append(alone.request([system, task, action]))
    calls = []
    original = CacheSimulator.request

    def counted(self: CacheSimulator, *args: object, **kwargs: object) -> CacheUse:
        calls.append(args)
        return original(self, *args, **kwargs)  # type: ignore[arg-type]

    CacheSimulator.request = counted  # type: ignore[method-assign]
    try:
        assert second.request(1, [system, task]) == CacheUse(0)
        assert second.request(2, [system, task, action]) == CacheUse(13)
        assert calls == []  # both bills read from the chain
        assert second.request(None, [system, rewritten, action]) == expected[2]  # from the chain's state
        assert expected[2].read == 11  # the system message, the framing and "Fix"
        assert len(calls) == 1
        assert second.request(3, [system, task, action]) == expected[3]
        assert len(calls) == 2  # it left the chains: no chain read, even for a key
    finally:
        CacheSimulator.request = original  # type: ignore[method-assign]


def test_the_bound_stops_sharing_not_billing(counter: IdCounter) -> None:
    encoder = PromptEncoder(counter)
    chains = CacheChains(max_slots=3)
    messages = [Message("user", f"message {i}", iteration=i) for i in range(6)]
    tracks = [CacheTrack(CacheSimulator(encoder), chains) for _ in range(2)]
    alone = CacheSimulator(PromptEncoder(counter))
    bills = [alone.request(messages[: n + 1]) for n in range(6)]
    for track in tracks:
        assert [track.request(n, messages[: n + 1]) for n in range(6)] == bills
