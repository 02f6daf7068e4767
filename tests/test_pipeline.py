"""build_prompt end to end, validate_pairs, and a property test over random histories and presets."""

from __future__ import annotations

import dataclasses
import random

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._config import ContextConfig
from tiered_agent.context._names import RETRIEVE_TOOL_NAME
from tiered_agent.context._policy import Policy
from tiered_agent.context._presets import PRESETS, as_policy
from tiered_agent.context.aging._schedule import AgingSchedule, Epoch
from tiered_agent.context.pipeline._build import build_prompt, validate_pairs
from tiered_agent.context.pipeline._types import BuiltPrompt, Summary
from tiered_agent.context.steps import (
    Age,
    Clear,
    Compact,
    Dedup,
    Elide,
    Mask,
    Step,
    Summarize,
    Truncate,
    Window,
)

SYSTEM = Message(role="system", content="You are an agent.")
TASK = Message(role="user", content="Fix the bug.")
COUNTER = TokenCounter("o200k_base")
HIDING = ("[output omitted", "[older output", "[superseded", "[context_retrieve result")

# The pre-tuning `tiered` (ContextConfig defaults): 500-char outputs, window 5, summary every 10.
CLASSIC = ContextConfig(name="classic")


def call(call_id: str, name: str = "read") -> ToolCall:
    return ToolCall(call_id, name, "{}")


def assistant(*calls: ToolCall, iteration: int = 1, content: str | None = None) -> Message:
    return Message(role="assistant", content=content, tool_calls=calls, iteration=iteration)


def result(call_id: str, content: str = "ok", iteration: int = 1, name: str = "read") -> Message:
    return Message(role="tool", content=content, tool_call_id=call_id, name=name, iteration=iteration)


def user(content: str = "more", iteration: int = 1) -> Message:
    return Message(role="user", content=content, iteration=iteration)


def long_history(last: int, size: int = 3_000) -> list[Message]:
    out = [SYSTEM, TASK]
    for k in range(1, last + 1):
        calls = tuple(call(f"call_{k}_{j}") for j in range(1 + k % 3))
        out.append(assistant(*calls, iteration=k, content=f"thinking {k}"))
        out += [result(c.id, f"{c.id}: " + "data line\n" * (size // 10), iteration=k) for c in calls]
    return out


# ---------------------------------------------------------------- validate_pairs


def test_validate_accepts_valid_sequences() -> None:
    validate_pairs([SYSTEM, TASK])
    validate_pairs([TASK])
    validate_pairs(
        [
            SYSTEM,
            TASK,
            assistant(call("a"), call("b")),
            result("b"),
            result("a"),
            user(),
            user(),
            assistant(content="done", iteration=2),
            user(iteration=2),
            assistant(call("c"), iteration=3),
            result("c", iteration=3),
        ]
    )


@pytest.mark.parametrize(
    ("messages", "error"),
    [
        ([], "empty prompt"),
        ([TASK, SYSTEM], "system message not first"),
        ([SYSTEM, SYSTEM, TASK], "system message not first"),
        ([SYSTEM, assistant(content="hi")], "not user"),
        ([SYSTEM, TASK, assistant(call("a"))], "without results"),
        ([SYSTEM, TASK, assistant(call("a"), call("b")), result("a")], "without results"),
        ([SYSTEM, TASK, assistant(call("a")), user(), result("a")], "before tool results"),
        ([SYSTEM, TASK, assistant(call("a")), result("a"), result("a")], "orphan"),
        ([SYSTEM, TASK, result("a")], "orphan"),
        ([SYSTEM, TASK, assistant(call("a")), result("x")], "orphan"),
        ([SYSTEM, TASK, assistant(call("a")), result("a"), assistant(call("a")), result("a")], "duplicate"),
        ([SYSTEM, TASK, assistant(call("a"), call("a")), result("a"), result("a")], "duplicate"),
        ([SYSTEM, TASK, assistant(call("")), result("")], "without id"),
        ([SYSTEM, TASK, assistant(content="a"), assistant(content="b")], "consecutive assistant"),
        (
            [SYSTEM, TASK, assistant(call("a")), result("a"), user(), result("a")],
            "orphan",
        ),
    ],
)
def test_validate_rejects(messages: list[Message], error: str) -> None:
    with pytest.raises(ValueError, match=error):
        validate_pairs(messages)


# ---------------------------------------------------------------- build_prompt


def test_full_preset_returns_the_history_unchanged() -> None:
    h = long_history(12)
    built = build_prompt(h, PRESETS["full"], summary=None, counter=COUNTER)
    assert built.messages == tuple(h)
    assert all(a is b for a, b in zip(built.messages, h, strict=True))
    assert built.stats.shown_iterations == tuple(range(1, 13))
    assert built.stats.truncated_chars == 0 and built.stats.masked_outputs == 0


def test_tiered_preset_summary_window_and_truncation() -> None:
    h = long_history(23)
    snapshot = list(h)
    built = build_prompt(h, CLASSIC, summary=Summary(1, 15, "summary text"), counter=COUNTER)
    validate_pairs(built.messages)
    assert h == snapshot
    assert built.messages[:2] == (SYSTEM, TASK)
    assert built.messages[2].content == "[Summary of iterations 1-15]\nsummary text"
    stats = built.stats
    assert stats.summary_range == (1, 15)
    assert stats.windowed_out == tuple(range(1, 16))
    assert stats.shown_iterations == tuple(range(16, 24))
    outputs = [m for m in h if m.role == "tool" and m.iteration >= 16]
    assert [t.tool_call_id for t in stats.truncations] == [m.tool_call_id for m in outputs]
    for t, original in zip(stats.truncations, outputs, strict=True):
        assert (t.original_chars, t.kept_chars) == (len(original.text), 500)
    assert stats.truncated_chars == sum(len(m.text) - 500 for m in outputs)
    assert len(built.effects["truncate"].cuts) == len(outputs)  # all the Truncate step's


def test_retrieval_results_are_never_truncated() -> None:
    big = "x" * 5_000
    h = [
        SYSTEM,
        TASK,
        assistant(call("r", RETRIEVE_TOOL_NAME), call("n")),
        result("r", big, name=RETRIEVE_TOOL_NAME),
        result("n", big),
    ]
    for name in ("tiered", "codex", "kb-labs-adr"):
        policy = PRESETS[name]
        steps = [Truncate(100, s.max_lines, s.mode) if isinstance(s, Truncate) else s for s in policy.steps]
        built = build_prompt(h, policy.replace(steps=steps), summary=None, counter=COUNTER)
        assert built.messages[3].content == big
        assert [t.tool_call_id for t in built.stats.truncations] == ["n"]


def test_150_iteration_prompt() -> None:
    h = long_history(150)
    summary = Summary(1, 140, "rolling summary")
    for name, config in PRESETS.items():
        built = build_prompt(h, config, summary=summary if config.summarizes else None, counter=COUNTER)
        validate_pairs(built.messages)
        assert built.messages[:2] == (SYSTEM, TASK), name
        if config.summarizes:
            assert built.stats.shown_iterations == tuple(range(141, 151)), name
            assert built.stats.windowed_out == tuple(range(1, 141)), name
        else:
            assert built.stats.shown_iterations == tuple(range(1, 151)), name
    tiered = build_prompt(h, CLASSIC, summary=summary, counter=COUNTER)
    assert len(tiered.messages) == 3 + sum(1 for m in h if m.iteration > 140)
    assert all(len(m.text) < 600 for m in tiered.messages if m.role == "tool")


# ---------------------------------------------------------------- property test

TOOL_NAMES = ("read", "grep", "shell", RETRIEVE_TOOL_NAME)


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Random histories: 0-4 parallel calls per iteration (results in any order), output sizes
    from empty to ~10 KB, user messages after the results (always one after a call-less reply).
    The shape is drawn from a seeded Random: one draw keeps generation fast and reproducible."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    out = [SYSTEM, TASK] if draw(st.integers(0, 9)) else [TASK]
    next_id = 0
    for k in range(1, draw(st.integers(0, 30)) + 1):
        calls = []
        for _ in range(rng.randint(0, 4)):
            next_id += 1
            calls.append(ToolCall(f"call_{next_id}", rng.choice(TOOL_NAMES), f'{{"i": {next_id}}}'))
        content = rng.choice([None, f"step {k}"])
        out.append(Message(role="assistant", content=content, tool_calls=tuple(calls), iteration=k))
        rng.shuffle(calls)
        for c in calls:
            lines, width = rng.choice([0, 1, 5, 50, 300]), rng.randint(0, 30)
            text = "".join(f"{c.id} {n} " + "w" * width + "\n" for n in range(lines))
            out.append(Message(role="tool", content=text, tool_call_id=c.id, name=c.name, iteration=k))
        for j in range(rng.randint(0 if calls else 1, 2)):
            out.append(Message(role="user", content=f"user {k}.{j}", iteration=k))
    return out


@st.composite
def configs(draw: st.DrawFn) -> Policy:
    """A preset as is, or a flat configuration with random knobs (built into steps by ContextConfig)."""
    if draw(st.booleans()):
        return draw(st.sampled_from(list(PRESETS.values())))
    summarizes = draw(st.booleans())
    return ContextConfig(
        name="random",
        max_output_chars=draw(st.one_of(st.none(), st.integers(1, 3_000))),
        max_output_lines=draw(st.one_of(st.none(), st.integers(1, 300))),
        truncation_mode=draw(st.sampled_from(["head", "head_tail"])),
        dedup=draw(st.booleans()),
        window_iterations=draw(st.one_of(st.none(), st.integers(1, 8))),
        window_keep_actions=draw(st.booleans()),
        elide_min_chars=draw(st.sampled_from([0, 20, 400])),
        mask_keep_outputs=draw(st.one_of(st.none(), st.integers(1, 6))),
        clear_trigger_tokens=draw(st.one_of(st.none(), st.integers(1, 20_000))),
        clear_keep_outputs=draw(st.integers(0, 4)),
        summary_every=draw(st.sampled_from([5, 10, 25])) if summarizes else None,
        compact_at=draw(st.sampled_from([None, 0.7])) if summarizes else None,
        retrieval=draw(st.booleans()),
    )


STEP_MAKERS = (
    lambda d: Dedup(),
    lambda d: Summarize(every=d(st.integers(1, 10)), keep=d(st.integers(0, 5))),
    lambda d: Compact(at=0.7, keep=d(st.integers(0, 5))),
    lambda d: Elide(min_chars=d(st.sampled_from([0, 50, 400]))),
    lambda d: Window(iterations=d(st.integers(1, 6))),
    lambda d: Mask(keep=d(st.integers(1, 6))),
    lambda d: Truncate(d(st.integers(1, 2_000)), d(st.one_of(st.none(), st.integers(1, 40)))),
    lambda d: Clear(trigger_tokens=d(st.integers(1, 5_000)), keep=d(st.integers(0, 3))),
    lambda d: Age(
        window=d(st.integers(1, 3)),
        max_lines=d(st.integers(1, 40)),
        min_chars=d(st.sampled_from([0, 50, 300])),
        reasoning=d(st.sampled_from(["first", "novel", "keep"])),
        max_arg_chars=d(st.sampled_from([5, 200])),
        keep_referred=d(st.integers(0, 3)),
        keep_novel=d(st.integers(0, 3)),
    ),
)


@st.composite
def composed(draw: st.DrawFn) -> Policy:
    """Any subset of the steps, in any order (Window only without a summarizing step)."""
    chosen = draw(st.lists(st.sampled_from(range(len(STEP_MAKERS))), unique=True, max_size=len(STEP_MAKERS)))
    steps: list[Step] = [STEP_MAKERS[i](draw) for i in chosen]
    if any(isinstance(s, Summarize | Compact) for s in steps):
        steps = [s for s in steps if not isinstance(s, Window)]
    return Policy("composed", steps, retrieval=draw(st.booleans()))


@st.composite
def schedules(draw: st.DrawFn) -> AgingSchedule | None:
    """None, or 1-4 epochs that never go back (iterations past a history's end are ignored)."""
    if draw(st.booleans()):
        return None
    epochs, at, through, condensed = [], 0, 0, 0
    for _ in range(draw(st.integers(1, 4))):
        at += draw(st.integers(1, 12))
        through = draw(st.integers(through, at))
        condensed = draw(st.integers(condensed, through))
        epochs.append(Epoch(at, through, condensed))
    return AgingSchedule(tuple(epochs))


@st.composite
def summaries(draw: st.DrawFn) -> Summary | None:
    if draw(st.booleans()):
        return None
    first = 1 if draw(st.integers(0, 4)) else draw(st.integers(1, 20))
    return Summary(first=first, last=first + draw(st.integers(0, 30)), text="summary")


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(h=histories(), config=st.one_of(configs(), composed()), summary=summaries(), schedule=schedules())
def test_any_history_any_policy_gives_a_valid_prompt(
    h: list[Message], config: Policy, summary: Summary | None, schedule: AgingSchedule | None
) -> None:
    validate_pairs(h)
    snapshot = [dataclasses.replace(m) for m in h]
    built = build_prompt(h, config, summary=summary, counter=COUNTER, schedule=schedule)
    assert isinstance(built, BuiltPrompt)
    validate_pairs(built.messages)
    assert h == snapshot
    head = 2 if h[0].role == "system" else 1
    assert built.messages[:head] == tuple(h[:head])
    _check_coverage(h, as_policy(config), summary, built, schedule)
    _check_outputs(h, built)


def _check_coverage(
    h: list[Message],
    policy: Policy,
    summary: Summary | None,
    built: BuiltPrompt,
    schedule: AgingSchedule | None,
) -> None:
    iterations = sorted({m.iteration for m in h if m.iteration > 0})
    stats = built.stats
    assert sorted(stats.shown_iterations + stats.windowed_out) == iterations
    for k in stats.shown_iterations:  # shown iterations are whole (contents may be shortened)
        original = [(m.role, m.tool_call_id) for m in h if m.iteration == k]
        assert [(m.role, m.tool_call_id) for m in built.messages if m.iteration == k] == original
    window = policy.find(Window)
    condensed = schedule.condensed if schedule is not None and policy.find(Age) is not None else 0
    if window is None:  # nothing may be dropped: only what a summary covers is out, or Age condensed
        covered = range(summary.first, summary.last + 1) if summary else range(0)
        assert all(k in covered or k <= condensed for k in stats.windowed_out)
    elif iterations:
        last = [k for k in iterations if k > iterations[-1] - window.iterations]
        uncovered = [k for k in last if summary is None or not summary.first <= k <= summary.last]
        # Age composed with a narrower window of its own may condense some of them (found by hypothesis:
        # Window(2) then Age(window=1)); aged ones are still shown, in their aged form
        assert {k for k in uncovered if k > condensed} <= set(stats.shown_iterations)


def _check_outputs(h: list[Message], built: BuiltPrompt) -> None:
    originals = {m.tool_call_id: m for m in h if m.role == "tool"}
    placeholders = 0
    truncated = {t.tool_call_id for t in built.stats.truncations}
    for message in built.messages:
        if message.role != "tool":
            continue
        original = originals[message.tool_call_id]
        assert len(message.text) <= len(original.text)
        if message.text.startswith(HIDING):  # a placeholder, or an aged form (Age)
            placeholders += message.text != original.text
        elif original.name == RETRIEVE_TOOL_NAME or message.tool_call_id not in truncated:
            assert message.text == original.text
    assert placeholders == built.stats.masked_outputs
    assert len(truncated) == len(built.stats.truncations)
    for t in built.stats.truncations:
        assert 0 <= t.kept_chars < t.original_chars == len(originals[t.tool_call_id].text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    h=histories(), age=st.sampled_from([Age(), Age(window=1, max_lines=2, min_chars=0)]), schedule=schedules()
)
def test_aged_prompts_keep_pairs_and_show_each_iteration_once(
    h: list[Message], age: Age, schedule: AgingSchedule | None
) -> None:
    built = build_prompt(h, Policy("aged", (age,)), summary=None, counter=COUNTER, schedule=schedule)
    validate_pairs(built.messages)
    present = {m.iteration for m in h if m.iteration > 0}
    # the step never condenses (nor ages) into its own window, whatever the schedule says
    limit = max(present, default=0) - age.window
    condensed = {k for k in present if schedule is not None and k <= min(schedule.condensed, limit)}
    calls = [c.id for m in built.messages for c in m.tool_calls]
    assert len(calls) == len(set(calls))  # no call shown twice
    assert {m.iteration for m in built.messages if m.role in ("assistant", "tool")} == {
        m.iteration for m in h if m.role in ("assistant", "tool") and m.iteration not in condensed
    }
    notes = [m for m in built.messages if m.text.startswith("[Iterations ")]
    assert sum(m.text.count("\n") >= 1 for m in notes) == len(notes) and bool(notes) == bool(condensed)
