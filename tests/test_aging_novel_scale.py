"""Novel lines that grow with an output's length (``Age(novel_per_lines=K)``, :class:`NovelScale`):
the budget on exact numbers, a condensed note keeping more of a long read than of a short one,
the fixed budget unchanged when the knob is off, the memoized path equal to the plain one, the
knob's validation and JSON round trip, and arbitrary text (never an exception)."""

from __future__ import annotations

import orjson
import pytest
from condensed_notes import kept_lines, read_iteration
from hypothesis import given
from hypothesis import strategies as st

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent.bench._caching import IdCounter
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._step import RunMemos
from tiered_agent.context.aging._condense import NO_SCALE, NovelScale, condensed_note
from tiered_agent.context.aging._forms import FormsMemo, condensed
from tiered_agent.context.aging._step import Age, AgeRuntime, iteration_groups


def _read(k: int, lines: int, command: str = "sed -n '1600,2200p' big.py") -> tuple[int, tuple[Message, ...]]:
    """One iteration reading ``lines`` lines, each defining a name nothing else names."""
    return read_iteration(k, lines, command, first=1600)


# ----------------------------------------------------------------------------- the budget
@pytest.mark.parametrize(
    ("scale", "novel", "lines", "budget"),
    [
        (NO_SCALE, 5, 1000, 5),  # off: the fixed budget whatever the length
        (NovelScale(10, 40), 5, 12, 5),  # short: the fixed budget
        (NovelScale(10, 40), 5, 50, 5),
        (NovelScale(10, 40), 5, 51, 6),  # one per 10 lines, rounded up
        (NovelScale(10, 40), 5, 195, 20),
        (NovelScale(10, 40), 5, 5000, 40),  # capped
        (NovelScale(10, 3), 5, 5000, 5),  # a cap below the fixed budget never lowers it
        (NovelScale(20, 40), 0, 30, 2),  # grows from none
        (NovelScale(20, 40), 0, 0, 0),
    ],
)
def test_the_budget_grows_with_the_length_between_the_fixed_budget_and_the_cap(
    scale: NovelScale, novel: int, lines: int, budget: int
) -> None:
    assert scale.budget(novel, lines) == budget


def test_the_step_scales_up_to_its_max_lines() -> None:
    # the default: one novel line per 8 lines of output, twice as many for a file named again
    assert Age().novel_scale() == NovelScale(8, 60, 2)
    assert Age(novel_per_lines=0).novel_scale() == NO_SCALE
    assert Age(novel_per_lines=8, max_lines=30).novel_scale() == NovelScale(8, 30, 2)


# ----------------------------------------------------------------------------- the note
def test_a_long_read_keeps_more_novel_lines_than_a_short_one() -> None:
    chunk = [_read(1, 195), _read(2, 30)]
    fixed = condensed_note(chunk, retrieval=False, novel=5)
    scaled = condensed_note(chunk, retrieval=False, novel=5, scale=NovelScale(10, 40))
    assert len(kept_lines(fixed, 1)) == 5 and len(kept_lines(fixed, 2)) == 5
    assert len(kept_lines(scaled, 1)) == 20  # ceil(195 / 10)
    assert kept_lines(scaled, 2) == kept_lines(fixed, 2)  # a 30-line read costs what it cost
    numbers = [int(line.split(":")[0]) for line in kept_lines(scaled, 1)]
    assert numbers == sorted(numbers) and 1600 not in numbers  # in output order; the command names 1600
    assert set(kept_lines(fixed, 1)) <= set(kept_lines(scaled, 1))


def test_scaled_lines_still_leave_out_what_the_prompt_shows_later() -> None:
    """Even with no fixed budget, the scaled lines are novel lines: what the messages after the chunk
    name is not kept again."""
    chunk = [_read(1, 40)]
    later = tuple(
        Message("tool", f"handler_1_{i} is shown here", tool_call_id="x", iteration=2)
        for i in range(0, 40, 2)
    )
    note = condensed_note(chunk, retrieval=False, later=later, novel=0, scale=NovelScale(2, 40))
    kept = kept_lines(note, 1)
    assert len(kept) == 20  # ceil(40 / 2), all of them the lines nothing later names
    assert all(int(line.split("_")[2].split("(")[0]) % 2 == 1 for line in kept)
    assert kept_lines(condensed_note(chunk, retrieval=False, later=later, novel=0), 1) == []  # off: none


def test_the_runs_memo_renders_what_a_note_from_scratch_renders() -> None:
    chunk = [_read(1, 195), _read(2, 30), _read(3, 80)]
    later = (Message("assistant", "handler_1_7 and handler_3_2 matter.", iteration=4),)
    scale = NovelScale(10, 40)
    memo = FormsMemo()
    for novel in (0, 5):
        plain = condensed(chunk, retrieval=True, later=later, referred=8, novel=novel, scale=scale)
        memoized = condensed(
            chunk, retrieval=True, later=later, referred=8, novel=novel, scale=scale, memo=memo
        )
        assert memoized.text == plain.text
    other = condensed(chunk, retrieval=True, later=later, referred=8, novel=5, memo=memo)  # same memo, off
    assert len(kept_lines(other, 1)) < len(kept_lines(plain, 1))


def _history(steps: int) -> list[Message]:
    history = [Message("system", "You are an agent."), Message("user", "Fix the handler in big.py.")]
    for k in range(1, steps + 1):
        history.extend(_read(k, 150 if k % 2 else 12, f"sed -n '{k}00,{k}99p' big.py")[1])
    return history


def test_the_age_step_keeps_more_of_long_reads_and_ages_alike_only_with_the_same_scale() -> None:
    counter = IdCounter("o200k_base")
    memos = RunMemos()
    history = _history(12)
    groups = iteration_groups(history)
    fixed = Age(novel_per_lines=0).note(groups, (1, 4, 12), retrieval=True)
    scaled = Age(novel_per_lines=10, named_again=1).note(groups, (1, 4, 12), retrieval=True)
    assert fixed is not None and scaled is not None
    assert [len(kept_lines(fixed, k)) for k in (1, 2, 3, 4)] == [5, 5, 5, 5]
    assert [len(kept_lines(scaled, k)) for k in (1, 2, 3, 4)] == [15, 5, 15, 5]  # ceil(150 / 10); 12 lines: 5

    def memo(policy: Policy) -> FormsMemo:
        manager = ContextManager(policy, counter=counter, memos=memos)
        return next(r.memo for r in manager.runtimes if isinstance(r, AgeRuntime))

    assert memo(Policy("a", (Age(),))) is memo(Policy("b", (Age(novel_per_lines=8),)))  # the default
    assert memo(Policy("c", (Age(novel_per_lines=10),))) is not memo(Policy("a", (Age(),)))
    assert memo(Policy("d", (Age(novel_per_lines=0),))) is not memo(Policy("a", (Age(),)))


# ----------------------------------------------------------------------------- the knob
def test_the_knob_is_validated_and_round_trips_through_json() -> None:
    policy = Policy("p", (Age(novel_per_lines=12),))
    data = orjson.loads(orjson.dumps(policy.to_dict()))
    assert data["steps"][0]["novel_per_lines"] == 12
    assert Policy.from_dict(data) == policy
    assert Policy.from_dict(orjson.loads(orjson.dumps(Policy("q", (Age(),)).to_dict()))).steps[0] == Age()
    for bad in (-1, 1.5, "10", None):
        with pytest.raises(ConfigurationError, match="novel_per_lines"):
            Age(novel_per_lines=bad)  # type: ignore[arg-type]


# ----------------------------------------------------------------------------- hostile text
@given(
    outputs=st.lists(st.text(max_size=400), min_size=1, max_size=4),
    novel=st.integers(0, 6),
    per_lines=st.integers(0, 7),
    cap=st.integers(0, 12),
)
def test_arbitrary_outputs_never_raise_and_never_keep_more_than_the_budget(
    outputs: list[str], novel: int, per_lines: int, cap: int
) -> None:
    chunk = []
    for k, output in enumerate(outputs, 1):
        call = ToolCall(f"c{k}", "bash", '{"command": "cat f"}')
        chunk.append(
            (
                k,
                (
                    Message("assistant", "Look.", (call,), iteration=k),
                    Message("tool", output, tool_call_id=f"c{k}", name="bash", iteration=k),
                ),
            )
        )
    note = condensed_note(chunk, retrieval=False, novel=novel, scale=NovelScale(per_lines, cap))
    assert note.text.startswith("[Iterations 1")
    bound = max(novel, cap) if per_lines else novel
    for k in range(1, len(outputs) + 1):
        assert len(kept_lines(note, k)) <= max(bound, 5, len(outputs[k - 1].splitlines()))
