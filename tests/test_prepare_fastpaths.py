"""The shortcuts of ``ContextManager.prepare`` and ``dispatch`` (speed round 2) give what the general
path gives: the record's spared tokens, an untouched draft's prompt, a dispatch no step takes part in."""

from __future__ import annotations

import itertools
import re
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent._tools import ToolOutcome
from tiered_agent.context._dispatch import Dispatched, ToolKind
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._shell import LINE_SEPARATORS, line_words
from tiered_agent.context.pipeline._build import build_prompt
from tiered_agent.context.pipeline._draft import BuildContext, Draft
from tiered_agent.context.pipeline._tally import PrefixSums
from tiered_agent.context.pipeline._types import ContextStats, Summary
from tiered_agent.context.steps._mask import OlderOutputs

COUNTER = TokenCounter("o200k_base")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 8), st.lists(st.integers(0, 50), max_size=6)), max_size=20))
def test_prefix_sums_equal_the_plain_sum(steps: list[tuple[int, list[int]]]) -> None:
    calls: list[int] = []

    def value(item: tuple[int]) -> int:
        calls.append(item[0])
        return item[0] * 3 + 1

    sums: PrefixSums[tuple[int]] = PrefixSums(value)
    previous: list[tuple[int]] = []
    for keep, new in steps:
        items = [*previous[:keep], *((n,) for n in new)]  # new tuples: equal values, other objects
        calls.clear()
        assert sums.total(items) == sum(i[0] * 3 + 1 for i in items)
        assert len(calls) <= len(items)
        previous = items


@pytest.mark.anyio
async def test_recorded_spared_tokens_equal_a_recount_while_cuts_come_and_go() -> None:
    """kb-labs-adr cuts every output to 500 chars; its summaries take the older cuts away."""
    count = COUNTER.count_text
    history: list[Message] = [Message("system", "sys"), Message("user", "task")]
    seen_totals: list[int] = []
    async with ContextManager(
        "kb-labs-adr", counter=COUNTER, context_window=100_000, background=False
    ) as manager:
        for k in range(1, 36):
            prepared = await manager.prepare(history, [])
            cut = prepared.built.effects["truncate"].cut if "truncate" in prepared.built.effects else ()
            expected = sum(count(original.text) - count(shown.text) for original, shown in cut)
            record = prepared.context.steps.get("truncate")
            assert (record.cut_tokens if record is not None else 0) == expected
            seen_totals.append(expected)
            call = ToolCall(f"c{k}", "read", f'{{"p": {k}}}')
            history.append(Message("assistant", f"step {k}", (call,), iteration=k))
            history.append(
                Message(
                    "tool",
                    f"line {k} of the output\n" * (40 + k),
                    tool_call_id=call.id,
                    name="read",
                    iteration=k,
                )
            )
        assert manager.summary is not None
    # outputs were cut, and the totals went down when a summary took cut outputs away
    assert max(seen_totals) > 0
    assert any(later < earlier for earlier, later in itertools.pairwise(seen_totals))


def test_an_untouched_draft_builds_what_the_general_rule_builds() -> None:
    history = [
        Message("user", "task"),
        Message("assistant", "a", iteration=1),
        Message("user", "b", iteration=2),
    ]
    summary = Summary(1, 1, "s")
    context = BuildContext.of(history, summary, COUNTER, retrieval=False)
    draft = Draft(tuple(history), tuple(history), shows_summary=True, names_retrieval=True)
    built = draft.built(context)
    assert built.stats == ContextStats(summary_range=(1, 1), shown_iterations=(1, 2))
    assert built.names_retrieval and built.messages == tuple(history) and not built.effects
    # the same draft with one decision goes the general way: the untouched one equals it minus that
    general = Draft(tuple(history), tuple(history), shows_summary=True, dropped_by={}, owners={0: "x"}).built(
        context
    )
    assert general.stats == built.stats
    plain = build_prompt(history, "full", summary=None, counter=COUNTER)
    assert plain.stats == ContextStats(shown_iterations=(1, 2)) and plain.messages == tuple(history)


@pytest.mark.anyio
@pytest.mark.parametrize("policy", ["full", "kb-labs-adr"])
async def test_a_dispatch_runs_every_call_once_in_order(policy: str) -> None:
    calls = [ToolCall("c1", "read", '{"p": 1}'), ToolCall("c2", "write", '{"p": 2}')]
    asked: list[list[int]] = []

    async def execute(indexes: Sequence[int]) -> list[ToolOutcome]:
        asked.append(list(indexes))
        return [ToolOutcome(content=f"out {i}") for i in indexes]

    def kind(call: ToolCall) -> ToolKind:
        return ToolKind(read_only=call.name == "read")

    async with ContextManager(policy, counter=COUNTER, context_window=100_000, background=False) as manager:
        results = await manager.dispatch(calls, kind, execute, iteration=1)
    assert asked == [[0, 1]]
    assert results == (
        Dispatched(calls[0], ToolOutcome(content="out 0")),
        Dispatched(calls[1], ToolOutcome(content="out 1")),
    )


def _output(k: int, size: int) -> Message:
    return Message("tool", "o" * size, tool_call_id=f"c{k}", name="read", iteration=k)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 30),  # messages of the previous draft kept (the same objects)
            st.lists(st.sampled_from(["user", "assistant", "short", "long"]), max_size=6),
            st.sets(st.integers(0, 40), max_size=4),  # positions an earlier step hid
        ),
        max_size=15,
    ),
    st.integers(0, 4),
    st.booleans(),
)
def test_older_outputs_kept_over_drafts_equal_reading_each_afresh(
    drafts: list[tuple[int, list[str], set[int]]], keep: int, retrieval: bool
) -> None:
    kept = OlderOutputs()
    previous: list[Message] = []
    for number, (keep_count, added, hidden) in enumerate(drafts):
        new = [
            _output(number * 10 + i, 80 if kind == "long" else 3)
            if kind in ("short", "long")
            else Message(kind, f"m{number}.{i}", iteration=number)
            for i, kind in enumerate(added)
        ]
        messages = (*previous[:keep_count], *new)
        draft = Draft(messages, messages, hidden={i: 1 for i in hidden if i < len(messages)})
        assert kept.placeholders(draft, keep, retrieval) == OlderOutputs().placeholders(
            draft, keep, retrieval
        )
        previous = list(messages)


@pytest.mark.anyio
@pytest.mark.parametrize("policy", ["masking", "anthropic-clear"])
async def test_masking_runtimes_build_what_fresh_steps_build(policy: str) -> None:
    from tiered_agent.context._presets import PRESETS
    from tiered_agent.context.steps import Clear

    steps = (Clear(trigger_tokens=200, keep=2),) if policy == "anthropic-clear" else PRESETS[policy].steps
    chosen = PRESETS[policy].replace(steps=steps)
    history: list[Message] = [Message("system", "sys"), Message("user", "task")]
    async with ContextManager(chosen, counter=COUNTER, context_window=100_000, background=False) as manager:
        for k in range(1, 30):
            prepared = await manager.prepare(history, [])
            fresh = build_prompt(history, chosen, summary=None, counter=COUNTER)
            assert prepared.built.messages == fresh.messages and prepared.built.stats == fresh.stats
            call = ToolCall(f"c{k}", "read", f'{{"p": {k}}}')
            history.append(Message("assistant", f"step {k}", (call,), iteration=k))
            history.append(_output(k, 20 + 10 * k) if k % 3 else _output(k, 2))
            history[-1] = Message("tool", history[-1].text, tool_call_id=call.id, name="read", iteration=k)
    assert sum(1 for m in prepared.built.messages if m.text.startswith("[output omitted")) > 5


# The working memory's shell words as first written: every character of a word matched one by one.
_WORD_PER_CHAR = re.compile(
    r"""\d*>&\d*-?|\d*>[>|]?|<|(?:[^\s'"\\;&|()<>]|\\.|'[^']*'|"(?:\\.|[^"\\])*")+|&&|\|\||;;|\|&|[;&|()]|['"]"""
)
_QUOTED_PER_CHAR = re.compile(r"""'([^']*)'|"((?:\\.|[^"\\])*)"|\\(.)|([^'"\\]+)""")


def _words_per_char(line: str) -> list[str]:
    def unquoted(word: str) -> str:
        if not any(c in word for c in "'\"\\"):
            return word
        return "".join(m[m.lastindex or 0] for m in _QUOTED_PER_CHAR.finditer(word))

    return [unquoted(w) if w not in LINE_SEPARATORS else w for w in _WORD_PER_CHAR.findall(line)]


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab -.=~/*?$!{}[]#();<>|&\n\t2é'\"\\"), max_size=30))
def test_memory_shell_words_match_the_per_character_rule(line: str) -> None:
    assert line_words(line) == _words_per_char(line)
