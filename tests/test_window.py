"""What the prompt shows of each iteration: the summary in place of its range, Window's dropped-range
notes, Elide's layout, and no coverage gap."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._config import ContextConfig
from tiered_agent.context._policy import Policy
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.pipeline._build import build_prompt
from tiered_agent.context.pipeline._draft import summary_message
from tiered_agent.context.pipeline._types import Summary
from tiered_agent.context.steps import Window
from tiered_agent.context.steps._window import omitted_note

SYSTEM = Message(role="system", content="You are an agent.")
TASK = Message(role="user", content="Fix the bug.")
NO_SUMMARIZER = Policy("no-summarizer", (Window(iterations=5),))
COUNTER = TokenCounter("o200k_base")


@dataclass(frozen=True)
class Layout:
    messages: tuple[Message, ...]
    shown_iterations: tuple[int, ...]
    windowed_out: tuple[int, ...]
    summary_range: tuple[int, int] | None
    elided_outputs: int


def select_window(h: Sequence[Message], policy: Policy, *, summary: Summary | None) -> Layout:
    """The prompt a policy builds, seen as which iterations it shows (these tests keep outputs short)."""
    built = build_prompt(h, policy, summary=summary, counter=COUNTER)
    stats = built.stats
    return Layout(
        built.messages, stats.shown_iterations, stats.windowed_out, stats.summary_range, stats.masked_outputs
    )


# The pre-tuning `tiered` (ContextConfig defaults): 500-char outputs, window 5, summary every 10.
CLASSIC = ContextConfig(name="classic")


def iteration(k: int, calls: int = 1, user: bool = False) -> list[Message]:
    tool_calls = tuple(ToolCall(f"call_{k}_{j}", "read", f'{{"n": {j}}}') for j in range(calls))
    out = [Message(role="assistant", content=f"step {k}", tool_calls=tool_calls, iteration=k)]
    out += [
        Message(role="tool", content=f"out {k}.{j}", tool_call_id=c.id, name="read", iteration=k)
        for j, c in enumerate(tool_calls)
    ]
    if user or not calls:
        out.append(Message(role="user", content=f"user {k}", iteration=k))
    return out


def history(last: int, calls: int = 1) -> list[Message]:
    out = [SYSTEM, TASK]
    for k in range(1, last + 1):
        out += iteration(k, calls)
    return out


def iterations_of(messages: tuple[Message, ...] | list[Message]) -> list[int]:
    seen: list[int] = []
    for m in messages:
        if m.role == "assistant" and m.iteration not in seen:
            seen.append(m.iteration)
    return seen


def test_everything_shown_before_the_first_summary_lands() -> None:
    h = history(17)
    window = select_window(h, CLASSIC, summary=None)
    assert window.messages == tuple(h)
    assert all(a is b for a, b in zip(window.messages, h, strict=True))
    assert window.shown_iterations == tuple(range(1, 18))
    assert window.windowed_out == ()
    assert window.summary_range is None


def test_summary_replaces_covered_iterations_right_after_the_task() -> None:
    h = history(15, calls=2)
    summary = Summary(first=1, last=10, text="did things")
    window = select_window(h, CLASSIC, summary=summary)
    assert window.messages[:3] == (
        SYSTEM,
        TASK,
        Message(role="user", content="[Summary of iterations 1-10]\ndid things", iteration=1),
    )
    assert window.messages[3:] == tuple(m for m in h if m.iteration >= 11)
    assert window.shown_iterations == (11, 12, 13, 14, 15)
    assert window.windowed_out == tuple(range(1, 11))
    assert window.summary_range == (1, 10)


def test_unsummarized_iterations_older_than_the_window_stay_shown() -> None:
    # Window 5 at L=23 but the summary only covers 1-10: 11..18 stay until the next one lands.
    h = history(23)
    window = select_window(h, CLASSIC, summary=Summary(1, 10, "s"))
    assert window.shown_iterations == tuple(range(11, 24))
    assert iterations_of(window.messages) == list(range(11, 24))


def test_summary_covering_everything() -> None:
    h = history(8)
    window = select_window(h, PRESETS["codex"], summary=Summary(1, 8, "all"))
    assert window.messages == (SYSTEM, TASK, summary_message(Summary(1, 8, "all")))
    assert window.shown_iterations == ()
    assert window.windowed_out == tuple(range(1, 9))


def test_summary_not_starting_at_one_leaves_no_gap() -> None:
    h = history(12)
    window = select_window(h, CLASSIC, summary=Summary(4, 9, "middle"))
    assert window.shown_iterations == (1, 2, 3, 10, 11, 12)
    assert window.windowed_out == tuple(range(4, 10))
    contents = [m.content for m in window.messages]
    assert contents.index("[Summary of iterations 4-9]\nmiddle") == 2 + 3 * 2  # after iterations 1-3


@pytest.mark.parametrize(("first", "last"), [(0, 3), (5, 4), (-1, 2)])
def test_invalid_summary_range_is_refused(first: int, last: int) -> None:
    with pytest.raises(ValueError, match="invalid summary range"):
        select_window(history(5), CLASSIC, summary=Summary(first, last, "x"))


def test_no_summarizer_drops_old_iterations_with_a_note() -> None:
    h = history(17)
    window = select_window(h, NO_SUMMARIZER, summary=None)
    note = Message(
        role="user", content='[iterations 1-12 omitted; context_retrieve(iteration="1-12")]', iteration=1
    )
    assert window.messages[:3] == (SYSTEM, TASK, note)
    assert window.messages[3:] == tuple(m for m in h if m.iteration >= 13)
    assert window.shown_iterations == (13, 14, 15, 16, 17)
    assert window.windowed_out == tuple(range(1, 13))
    assert window.summary_range is None


def test_no_summarizer_note_without_retrieval_and_for_one_iteration() -> None:
    config = NO_SUMMARIZER.replace(retrieval=False)
    window = select_window(history(6), config, summary=None)
    assert window.messages[2] == Message(role="user", content="[iteration 1 omitted]", iteration=1)
    assert (
        omitted_note(3, 3, retrieval=True).content == '[iteration 3 omitted; context_retrieve(iteration="3")]'
    )


def test_no_summarizer_within_the_window_shows_everything() -> None:
    h = history(5)
    window = select_window(h, NO_SUMMARIZER, summary=None)
    assert window.messages == tuple(h)


def test_summary_plus_dropped_range_without_summarizer() -> None:
    h = history(17)
    window = select_window(h, NO_SUMMARIZER, summary=Summary(1, 5, "early"))
    assert [m.content for m in window.messages[2:4]] == [
        "[Summary of iterations 1-5]\nearly",
        '[iterations 6-12 omitted; context_retrieve(iteration="6-12")]',
    ]
    assert window.shown_iterations == (13, 14, 15, 16, 17)
    assert window.summary_range == (1, 5)


def test_iterations_are_never_split() -> None:
    h = [SYSTEM, TASK]
    for k in range(1, 21):
        h += iteration(k, calls=k % 4, user=k % 3 == 0)
    for summary in (None, Summary(1, 7, "s")):
        for config in (CLASSIC, NO_SUMMARIZER):
            window = select_window(h, config, summary=summary)
            for k in window.shown_iterations:
                assert [m for m in window.messages if m.iteration == k] == [m for m in h if m.iteration == k]


def test_task_without_system_prompt() -> None:
    h = [TASK, *iteration(1), *iteration(2)]
    window = select_window(h, CLASSIC, summary=Summary(1, 1, "one"))
    assert window.messages[0] is TASK
    assert window.messages[1].content == "[Summary of iterations 1-1]\none"
    assert window.messages[2].iteration == 2


def test_empty_history_and_task_only() -> None:
    assert select_window([], CLASSIC, summary=None).messages == ()
    window = select_window([SYSTEM, TASK], NO_SUMMARIZER, summary=Summary(1, 3, "x"))
    assert window.messages == (SYSTEM, TASK)
    assert window.summary_range is None


def _summary_at(current: int, every: int, window: int, lag: int) -> Summary | None:
    """The newest summary landed by iteration ``current``: triggered at multiples of ``every``,
    covering 1..trigger-window, landing ``lag`` iterations after its trigger."""
    best: Summary | None = None
    for trigger in range(every, current + 1, every):
        if trigger + lag <= current and trigger - window >= 1:
            best = Summary(first=1, last=trigger - window, text=f"up to {trigger - window}")
    return best


@pytest.mark.parametrize("lag", [0, 1, 3, 9])
def test_no_coverage_gap(lag: int) -> None:
    config = ContextConfig(window_iterations=5, summary_every=10)
    h = [SYSTEM, TASK]
    for last in range(1, 61):
        h += iteration(last, calls=1 + last % 3)
        summary = _summary_at(last, 10, 5, lag)
        window = select_window(h, config, summary=summary)
        covered = summary.last if summary else 0
        for k in range(1, last + 1):
            assert k <= covered or k in window.shown_iterations, (last, k)
        assert window.shown_iterations == tuple(range(covered + 1, last + 1))
        assert set(window.shown_iterations).isdisjoint(window.windowed_out)
        assert iterations_of(window.messages) == list(window.shown_iterations)
        # The window itself (the last 5 completed iterations) is always verbatim.
        assert set(range(max(1, last - 4), last + 1)) <= set(window.shown_iterations)


KEEP = ContextConfig(name="keep", window_iterations=1, window_keep_actions=True, elide_min_chars=20)


def test_keep_actions_elides_only_outputs_and_puts_the_summary_after_them() -> None:
    h = history(6)
    window = select_window(h, KEEP, summary=Summary(1, 4, "what happened"))
    roles = [(m.role, m.iteration) for m in window.messages]
    assert roles[:2] == [("system", 0), ("user", 0)]
    covered = [m for m in window.messages if 1 <= m.iteration <= 4 and m.role != "user"]
    assert [m.role for m in covered] == ["assistant", "tool"] * 4  # every call keeps its result
    assert all(
        m.text == f'[output omitted; context_retrieve(tool_call_id="{m.tool_call_id}")]'
        for m in covered
        if m.role == "tool" and len(m.text) > 20
    )
    summary_at = next(
        i for i, m in enumerate(window.messages) if m.text.startswith("[Summary of iterations 1-4]")
    )
    assert window.messages[summary_at - 1].iteration == 4 and window.messages[summary_at + 1].iteration == 5
    assert window.summary_range == (1, 4) and window.windowed_out == (1, 2, 3, 4)
    assert window.elided_outputs == sum(
        1 for m in h if m.role == "tool" and 1 <= m.iteration <= 4 and len(m.text) >= 20
    )


def test_keep_actions_keeps_the_prefix_before_the_previous_summary() -> None:
    h = history(12)
    before = select_window(h[: len(h) - 4], KEEP, summary=Summary(1, 4, "first"))
    after = select_window(h, KEEP, summary=Summary(1, 8, "second"))
    cut = next(i for i, m in enumerate(before.messages) if m.text.startswith("[Summary"))
    assert after.messages[:cut] == before.messages[:cut]  # cacheable prefix survives the new summary
