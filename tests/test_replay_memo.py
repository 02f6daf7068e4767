"""The replay's per-run memo of ruler misses: keyed by a prompt made of recorded messages only."""

from __future__ import annotations

from tiered_agent import Message
from tiered_agent.bench._series import Stretches


def _recorded_key(positions: dict[int, int], prompt: list[Message]) -> tuple[int, ...] | None:
    """The key a policy's first prompt gets (a policy's track keys each of its prompts)."""
    return Stretches(positions)(prompt)


def test_recorded_prompts_are_keyed_by_their_stretches_and_foreign_ones_not_at_all() -> None:
    run = [Message("user", f"m{i}") for i in range(8)]
    positions = {id(m): i for i, m in enumerate(run)}
    assert _recorded_key(positions, run) == (0, 7)
    assert _recorded_key(positions, []) == ()
    assert _recorded_key(positions, [run[0], *run[3:6], run[7]]) == (0, 3, 7, 0, 5, 7)
    assert _recorded_key(positions, [run[1], run[0]]) == (1, 0, 1, 0)  # order matters
    assert _recorded_key(positions, [run[0], run[0]]) == (0, 0, 0, 0)
    keys = {
        _recorded_key(positions, prompt)
        for prompt in ([run[0], run[1]], [run[0], run[2]], [run[0]], [run[1]], [run[0], run[1], run[2]])
    }
    assert len(keys) == 5
    copy = Message("user", "m3")  # the same text, another object: a policy's own message
    assert _recorded_key(positions, [*run[:3], copy]) is None
