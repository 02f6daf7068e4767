"""Work ``ContextManager.prepare`` skips (speed round 3) without changing what it builds: the tool
schemas counted once per list of schema objects, a digest primed only when it runs in the background,
and the working memory's fold reusing the file notes it did not touch."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent._trace import Cut
from tiered_agent.context._manager import ContextManager
from tiered_agent.context.pipeline._draft import BuildContext, Draft
from tiered_agent.context.summary._state import Summaries, SummarySettings
from tiered_agent.context.summary._summarizer import DigestSummarizer
from tiered_agent.context.summary.memory._fold import Memory, _Builder, _File, fold


class _CountingCounter(TokenCounter):
    """A token counter that records every tool list it serializes."""

    def __init__(self) -> None:
        super().__init__("o200k_base")
        self.tool_lists: list[int] = []

    def count_tools(self, tools: Sequence[Mapping[str, Any]]) -> int:
        self.tool_lists.append(len(tools))
        return super().count_tools(tools)


def _schema(name: str, description: str) -> dict[str, Any]:
    return {
        "type": "function",
        "function": {"name": name, "description": description, "parameters": {"type": "object"}},
    }


def _iteration(k: int) -> list[Message]:
    call = ToolCall(f"c{k}", "bash", f'{{"command": "cat f{k}.py"}}')
    return [
        Message("assistant", f"step {k}", tool_calls=(call,), iteration=k),
        Message("tool", f"line {k}\n" * 5, tool_call_id=f"c{k}", name="bash", iteration=k),
    ]


@pytest.mark.anyio
async def test_tool_schemas_are_counted_again_only_when_they_change() -> None:
    counter = _CountingCounter()
    plain = TokenCounter("o200k_base")
    first = [_schema("bash", "run a command"), _schema("read", "read a file")]
    changed = [first[0], _schema("read", "read a file, with many more words in its description")]
    history: list[Message] = [Message("system", "sys"), Message("user", "task")]
    async with ContextManager("full", counter=counter, context_window=100_000, background=False) as manager:
        for k in range(1, 13):
            # the same objects for 4 prompts (in a new list each time), then another schema, then back
            schemas = list(first) if k <= 4 or k > 8 else list(changed)
            prepared = await manager.prepare(history, schemas)
            assert prepared.prompt_tokens == plain.count_prompt(history, schemas)
            assert prepared.counterfactual_tokens == plain.count_prompt(history, schemas)
            history += _iteration(k)
    # counted at the first prompt and at the change; the two lists before it are still known after it
    assert counter.tool_lists == [2, 2]


@pytest.mark.anyio
async def test_an_inline_digest_does_not_prime_and_a_background_one_does() -> None:
    settings = SummarySettings(worker=True)
    primed: list[int] = []

    class Recording(DigestSummarizer):
        def prime(self, messages: Sequence[Message]) -> None:
            primed.append(len(messages))
            super().prime(messages)

    async with Summaries(settings, summarizer=Recording(), background=False) as inline:
        assert not inline.primes
        inline.prime(_iteration(1))
    assert primed == []
    async with Summaries(settings, summarizer=Recording(), background=True) as background:
        assert background.primes
        background.prime(_iteration(1))
    assert primed == [2]
    async with Summaries(SummarySettings(worker=False), summarizer=Recording()) as idle:
        assert not idle.primes  # no step summarizes: no worker, nothing to prime


# --------------------------------------------------------------------------- the fold's file notes
TRACES = Path(__file__).resolve().parents[1] / "traces"
SHARED = Path(__file__).resolve().parents[2] / "shared"


def _thawing_fold(memory: Memory | None, messages: Sequence[Message], first: int, last: int) -> Memory:
    """:func:`fold` as it was: every file note of ``memory`` thawed and frozen again."""
    base = memory if memory is not None else Memory(first, last)
    builder = _Builder(base)
    builder.files = {
        path: note if isinstance(note, _File) else _File.thaw(note) for path, note in builder.files.items()
    }
    for message in messages:
        it = message.iteration
        if first <= it <= last or (it == 0 and not builder.task and message.role == "user"):
            builder.add(message)
    return builder.freeze(min(base.first, first), last)


def _rolling_folds_agree(messages: Sequence[Message], every: int) -> int:
    """Fold ``messages`` in ranges of ``every`` iterations both ways; the number of file notes
    the new fold carried over without thawing them."""
    last = max((m.iteration for m in messages), default=0)
    memory: Memory | None = None
    reference: Memory | None = None
    reused = 0
    for through in range(every, last + 1, every):
        first = memory.last + 1 if memory is not None else 1
        previous = memory
        memory = fold(memory, messages, first, through)
        reference = _thawing_fold(reference, messages, first, through)
        assert memory == reference
        if previous is not None:
            before = {id(note) for note in previous.files}
            reused += sum(id(note) in before for note in memory.files)
    return reused


def test_the_fold_reuses_the_file_notes_it_does_not_touch() -> None:
    from tiered_agent.bench._importers import load_runs

    reused = 0
    for family in ("mini-swe-agent", "swe-agent", "openhands", "tau-bench"):
        for run in load_runs([TRACES / family]).runs:
            for every in (1, 3, 10):
                reused += _rolling_folds_agree(run.messages, every)
    assert reused > 0  # some notes were carried over as they were


@pytest.mark.slow
@pytest.mark.skipif(not (SHARED / "trajectories").is_dir(), reason="the shared runs are absent")
def test_the_fold_reuses_file_notes_on_the_shared_runs() -> None:
    from tiered_agent.bench._importers import load_runs

    runs = load_runs([SHARED / "trajectories" / "mini-swe-agent_gemini-3-pro"]).runs[:8]
    assert runs
    assert sum(_rolling_folds_agree(run.messages, 5) for run in runs) > 0


# --------------------------------------------------------------------------- a draft's effects
@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.sampled_from(["", "truncate", "clear", "mask"]), min_size=1, max_size=14),
    st.booleans(),
)
def test_effects_that_reuse_the_built_cuts_equal_the_effects_found_afresh(
    owners: list[str], drop: bool
) -> None:
    """Cuts made by one step or by several, with placeholders over some of them: the record's
    effects (which reuse the prompt's cuts when one step made them all) are the plain grouping's."""
    history = [Message("user", "task")]
    for k, _ in enumerate(owners, start=1):
        history += _iteration(k)
    context = BuildContext.of(history, None, TokenCounter("o200k_base"), retrieval=True)
    draft = Draft(tuple(history), tuple(history))
    for position, owner in enumerate(owners):
        index = 2 + 2 * position  # the k-th output
        original = history[index]
        shown = Message(
            "tool", "cut", tool_call_id=original.tool_call_id, name="bash", iteration=position + 1
        )
        if owner == "mask":
            draft = draft.hide({index: (shown, 7)}, "mask")
        elif owner:
            cut = Cut(original.tool_call_id or "", position + 1, "bash", len(original.text), 3)
            draft = draft.cut({index: shown}, {index: cut}, owner)
    if drop:
        draft = draft.drop([1], "window")
    built = draft.built(context)
    assert dict(built.effects) == draft.effects()
    assert built.cut == tuple((history[i], draft.messages[i]) for i in sorted(draft.cuts))
