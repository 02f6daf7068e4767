"""The replay's rulers, shared by policies that send the very same prompt (the same message objects),
including prompts that hold messages of a policy's own."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator

import pytest
from replay_steps import shell_runs, step_metrics

from tiered_agent._messages import Message
from tiered_agent.bench import _replay
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._evidence import PromptView
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
from tiered_agent.bench._rulers import RawView
from tiered_agent.bench._series import SparseSeries

# codex and adk-code build the same prompts on most steps, tiered and its aging ablation too.
_POLICIES = ("codex", "adk-code", "tiered", "tiered:aging-only", "masking")


@pytest.fixture
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[int]]:
    """How many times the rulers measured a prompt."""
    calls: list[int] = []
    measure = _replay._misses

    def counting(*args: object) -> object:
        calls.append(1)
        return measure(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(_replay, "_misses", counting)
    yield calls


def test_policies_sending_the_same_prompt_share_its_misses(
    counted: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    runs = shell_runs()
    policies = resolve_policies(list(_POLICIES))
    shared = replay_runs(runs, policies, ReplaySettings())
    measured_shared = len(counted)
    counted.clear()

    def unshared(
        self: _replay._RunState, iteration: int, prompt: tuple[Message, ...], raw: RawView, view: PromptView
    ) -> object:
        return _replay._misses(self, iteration, raw, view)

    monkeypatch.setattr(_replay._RunState, "_own_misses", unshared)
    alone = replay_runs(runs, policies, ReplaySettings())
    assert step_metrics(shared) == step_metrics(alone)
    assert sum(s.line_needed + s.own_needed for _, _, steps in step_metrics(shared) for s in steps) > 0  # type: ignore[attr-defined]
    assert measured_shared < len(counted)  # some prompts with a policy's own messages were measured once


def _views(state: _replay._RunState, prompt: tuple[Message, ...]) -> tuple[RawView, PromptView]:
    raw = RawView(prompt, state.recorded, SparseSeries(state.raw.foreign, state.recorded.ids))
    return raw, PromptView(prompt, state.memo, SparseSeries(state.memo.entry, state.recorded.ids))


def test_prompts_alike_but_for_an_older_message_are_measured_apart() -> None:
    """Two prompts of the same length ending with the same message, one with an observation cleared:
    each gets its own misses (the shared entry is found by the whole prompt, not its newest message)."""
    run = shell_runs()[0]
    state = _replay._RunState.of(run, IdCounter())
    evidence = state.evidence
    assert evidence is not None
    checked = 0
    for iteration in sorted({m.iteration for m in run.messages if m.role == "assistant"}):
        cutoff = evidence.cutoff(iteration)
        needed = evidence.needed(iteration)
        if not needed.observed or cutoff < 3:
            continue
        history = tuple(m for m in run.messages if m.iteration < iteration)
        term = needed.observed[0]
        if term in history[-1].text:
            continue
        cleared = Message("tool", "[output cleared]", iteration=1)
        other = tuple(
            dataclasses.replace(cleared, iteration=m.iteration)
            if m.role != "assistant" and term in m.text
            else m
            for m in history
        )
        assert len(other) == len(history) and other[-1] is history[-1]
        first = state.misses(iteration, None, history, *_views(state, history))
        second = state.misses(iteration, None, other, *_views(state, other))
        assert second == _replay._misses(state, iteration, *_views(state, other))
        assert term in second.line_missed and term not in first.line_missed
        assert state.misses(iteration, None, history, *_views(state, history)) is first  # shared
        checked += 1
    assert checked > 0
