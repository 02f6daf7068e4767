"""Work the prompt build skips (speed round 4, docs/bench-speed.md) without changing what it builds:
prefix sums that keep their state in place (no copy of the sums or of a tuple per prompt), Truncate's
runtime keeping its cuts as the mappings a draft takes (and reading afresh after a cut that raised), and
a prompt's record made only when it is read (the replay never reads it), equal to the record made at
once."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent._tools import ToolOutcome
from tiered_agent._trace import ContextRecord, Cut
from tiered_agent.context._dispatch import ToolKind
from tiered_agent.context._manager import ContextManager, PreparedPrompt
from tiered_agent.context._step import Run
from tiered_agent.context.pipeline._draft import BuildContext, start
from tiered_agent.context.pipeline._tally import PrefixSums
from tiered_agent.context.pipeline._types import ContextStats
from tiered_agent.context.steps import Truncate, _truncate


class _Boom(Exception):
    pass


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(st.integers(0, 8), st.lists(st.integers(0, 50), max_size=6), st.booleans(), st.booleans()),
        max_size=25,
    )
)
def test_prefix_sums_equal_the_plain_sum_as_tuples_and_after_a_failure(
    steps: list[tuple[int, list[int], bool, bool]],
) -> None:
    """Tuples are kept as they are, lists copied; a value that raises midway leaves sums that are
    still right for the next sequence."""

    def value(item: tuple[int]) -> int:
        if item[0] >= 1000:
            raise _Boom
        return item[0] * 3 + 1

    sums: PrefixSums[tuple[int]] = PrefixSums(value)
    previous: list[tuple[int]] = []
    for keep, new, as_tuple, fail in steps:
        items = [*previous[:keep], *((n,) for n in new)]
        if fail:  # another sequence, whose last value raises after the others were summed
            failing = [*((500 + n,) for n in range(len(previous) + 2)), (1000,)]
            with pytest.raises(_Boom):
                sums.total(tuple(failing) if as_tuple else failing)
        sequence = tuple(items) if as_tuple else items
        assert sums.total(sequence) == sum(i[0] * 3 + 1 for i in items)
        previous = items


def _counting() -> tuple[PrefixSums[tuple[int]], list[int], tuple[tuple[int], ...]]:
    """Prefix sums whose values are the items' numbers, the list of items counted, and a first
    prompt of ten items already summed (the list cleared)."""
    calls: list[int] = []

    def value(item: tuple[int]) -> int:
        calls.append(item[0])
        return item[0]

    sums: PrefixSums[tuple[int]] = PrefixSums(value)
    first = tuple((n,) for n in range(10))
    assert sums.total(first) == 45 and len(calls) == 10
    calls.clear()
    return sums, calls, first


def test_prefix_sums_count_only_past_the_shared_prefix_of_a_kept_tuple() -> None:
    sums, calls, first = _counting()
    assert sums.total((*first[:6], (100,))) == 115 and calls == [100]
    calls.clear()
    assert sums.total((*first[:6], (100,), (7,))) == 122 and calls == [7]


def test_prefix_sums_recount_only_the_replaced_and_the_appended_items() -> None:
    """A prompt that hides or cuts an output in the middle (the same length, one item replaced) costs
    one ``value`` call for it and one per item appended, not one per item past it."""
    sums, calls, first = _counting()
    second = (*first[:3], (100,), *first[4:8], (200,), first[9], (11,))
    assert sums.total(second) == 45 - 3 + 100 - 8 + 200 + 11
    assert calls == [100, 200, 11]
    calls.clear()
    assert sums.total(list(second[:5])) == 0 + 1 + 2 + 100 + 4 and calls == []  # shorter: no call


def test_truncate_runtime_reads_afresh_after_a_cut_that_raised(monkeypatch: pytest.MonkeyPatch) -> None:
    """A cut that raises (the step is skipped for that prompt, fail open) leaves nothing half-kept:
    the next prompt's cuts are the step's own afresh."""
    counter = TokenCounter("o200k_base")
    step = Truncate(max_chars=500, mode="head")
    runtime = step.start(Run(counter))
    history = [Message("user", "the task", iteration=0)]
    for k in range(1, 13):
        call = ToolCall(f"call_{k}", "bash", '{"command": "ls"}')
        history.append(Message("assistant", f"step {k}", (call,), iteration=k))
        body = "\n".join(f"{k}:{i} output line" for i in range(60 + k))
        history.append(Message("tool", body, tool_call_id=call.id, name="bash", iteration=k))
    plain = _truncate.truncate_output

    def failing(text: str, *args: object, **kwargs: object) -> object:
        if text.startswith("9:"):
            raise _Boom
        return plain(text, *args, **kwargs)  # type: ignore[arg-type]

    for end in (9, 17):  # prompts read before the failure
        context = BuildContext.of(history[:end], None, counter, retrieval=True)
        runtime.apply(start(context), context)
    monkeypatch.setattr(_truncate, "truncate_output", failing)
    context = BuildContext.of(history[:19], None, counter, retrieval=True)
    with pytest.raises(_Boom):
        runtime.apply(start(context), context)
    monkeypatch.setattr(_truncate, "truncate_output", plain)
    for end in (11, 21, 25):  # shorter than what was read, then longer again
        context = BuildContext.of(history[:end], None, counter, retrieval=True)
        draft = start(context)
        kept, fresh = runtime.apply(draft, context), step.apply(draft, context)
        assert kept.messages == fresh.messages and kept.cuts == fresh.cuts and kept.owners == fresh.owners
        assert len(kept.cuts) == (end - 1) // 2


def _read_only(call: ToolCall) -> ToolKind:
    return ToolKind(read_only=True)


async def _records(policy: str, read_at_once: bool) -> list[ContextRecord]:
    """The records of a run's prompts (with dedup hits, cuts, summaries and aging), read as each
    prompt is built or all at the end."""
    counter = TokenCounter("o200k_base")
    history: list[Message] = [Message("system", "sys"), Message("user", "fix the bug in src/app.py")]
    kept: list[PreparedPrompt] = []
    records: list[ContextRecord] = []
    # no clock: the two runs compared are made at different times, and the records carry request times
    manager = ContextManager(policy, counter=counter, context_window=30_000, background=False, clock=None)
    async with manager:
        for k in range(1, 31):
            prepared = await manager.prepare(history, [])
            if read_at_once:
                records.append(prepared.context)
            kept.append(prepared)
            file = k % 4  # the same reads come back: dedup serves them
            call = ToolCall(f"c{k}", "read", f'{{"path": "src/mod_{file}.py"}}')
            history.append(Message("assistant", f"reading mod_{file} at step {k}", (call,), iteration=k))
            body = "\n".join(
                f"def handler_{file}_{j}(value): return value + {j}" for j in range(30 + 8 * file)
            )

            async def execute(indexes: object, body: str = body) -> list[ToolOutcome]:
                return [ToolOutcome(body)]

            (result,) = await manager.dispatch([call], _read_only, execute, iteration=k)
            content = result.outcome.content
            history.append(Message("tool", content, tool_call_id=call.id, name="read", iteration=k))
    return records if read_at_once else [prepared.context for prepared in kept]


@pytest.mark.anyio
@pytest.mark.parametrize("policy", ["kb-labs-adr", "tiered", "masking", "full"])
async def test_a_record_read_later_is_the_record_read_when_the_prompt_was_built(policy: str) -> None:
    now, later = await _records(policy, True), await _records(policy, False)
    assert now == later
    assert len(now) == 30
    if policy in ("kb-labs-adr", "tiered"):
        assert {r.dedup_hits for r in now} != {0}  # the count moved
    if policy != "full":
        assert any(r.steps for r in now)


@settings(deadline=None)
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 10_000)), max_size=30))
def test_truncated_chars_sum_what_each_cut_left_out(sizes: list[tuple[int, int]]) -> None:
    cuts = tuple(Cut(f"c{i}", i, "bash", a + b, b) for i, (a, b) in enumerate(sizes))
    assert ContextStats(truncations=cuts).truncated_chars == sum(a for a, _ in sizes)
    assert ContextStats(truncations=cuts).truncated_chars == sum(c.omitted_chars for c in cuts)
