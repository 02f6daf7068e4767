"""The history a replayed policy hands to ``prepare``: one tuple per step for every policy whose
observations were all served as recorded, its own once a dedup hit changed one."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from replay_steps import shell_runs, step_metrics

from tiered_agent._messages import Message
from tiered_agent.bench import _replay
from tiered_agent.bench._replay import BenchResult, ReplaySettings, replay_runs, resolve_policies
from tiered_agent.context._manager import ContextManager

_POLICIES = ("full", "codex", "masking", "tiered", "kb-labs-adr")  # tiered and kb-labs-adr dedup


def _replayed(monkeypatch: pytest.MonkeyPatch) -> tuple[BenchResult, list[tuple[str, Sequence[Message]]]]:
    """The replay, and every (policy, history) handed to ``prepare``, in order."""
    seen: list[tuple[str, Sequence[Message]]] = []
    prepare = ContextManager.prepare

    async def spy(self: ContextManager, history: Sequence[Message], *args: Any, **kwargs: Any) -> Any:
        seen.append((self.policy.name, history))
        return await prepare(self, history, *args, **kwargs)

    with monkeypatch.context() as patch:
        patch.setattr(ContextManager, "prepare", spy)
        result = replay_runs(shell_runs(), resolve_policies(list(_POLICIES)), ReplaySettings())
    return result, seen


def test_shared_histories_are_the_ones_each_policy_builds(monkeypatch: pytest.MonkeyPatch) -> None:
    shared, with_sharing = _replayed(monkeypatch)
    monkeypatch.setattr(_replay, "MAX_SNAPSHOT_SLOTS", 0)  # every policy builds its own, as before
    alone, without = _replayed(monkeypatch)
    assert step_metrics(shared) == step_metrics(alone)
    assert len(with_sharing) == len(without)
    for (name, history), (other, own) in zip(with_sharing, without, strict=True):
        assert name == other
        assert tuple(history) == tuple(own)  # the same messages (a dedup hit's results included)
        assert getattr(history, "message_tokens", None) == getattr(own, "message_tokens", None)
    distinct = len({id(h) for _, h in with_sharing})
    assert distinct < len({id(h) for _, h in without})  # one tuple for many policies
    # a policy whose dedup served a result builds its own history from then on, unlike full's
    full = {len(h): h for name, h in with_sharing if name == "full"}
    served = [h for name, h in with_sharing if name == "tiered" and len(h) in full and h != full[len(h)]]
    assert served, "the runs should hold a dedup hit"
    assert all(h is not full[len(h)] for h in served)
