"""The per-run shortcuts of the prompt build give what computing from scratch gives.

Truncate's runtime (positions and cuts kept from the previous prompt) against the step applied
to each draft afresh, over growing histories, a summary that moves, hidden outputs and the
deferred budget; the digest page's fitting (each section rendered again only when it lost an
item) against re-rendering the whole page after every drop; an output's outcome line against
the rule written out plainly.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._step import Run
from tiered_agent.context.pipeline._draft import BuildContext, Draft, start
from tiered_agent.context.pipeline._types import Summary
from tiered_agent.context.steps import Mask, Truncate
from tiered_agent.context.steps._truncate import TruncateRuntime
from tiered_agent.context.summary.memory import _code, _outputs, _render

COUNTER = TokenCounter("o200k_base")


def _history(rng: random.Random, iterations: int) -> list[Message]:
    history = [Message("user", "the task", iteration=0)]
    for k in range(1, iterations + 1):
        call = ToolCall(f"call_{k}", "bash", '{"command": "ls"}')
        history.append(Message("assistant", f"step {k}", (call,), iteration=k))
        size = rng.choice([10, 300, 600, 3_000, 12_000, 60_000])
        lines = "\n".join(f"{k}:{i} " + "x" * rng.randint(0, 60) for i in range(size // 30 + 1))
        history.append(Message("tool", lines[:size], tool_call_id=f"call_{k}", name="bash", iteration=k))
    return history


def _cuts(draft: Draft) -> list[tuple[int, object, Message]]:
    return [(i, draft.cuts[i], draft.messages[i]) for i in sorted(draft.cuts)]


@pytest.mark.parametrize(
    "step",
    [
        Truncate(max_chars=500, mode="head"),
        Truncate(max_chars=10 * 1024, max_lines=256),
        Truncate(max_chars=10_000, defer_max_chars=50_000),
    ],
)
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_truncate_runtime_cuts_what_the_step_cuts_afresh(step: Truncate, seed: int) -> None:
    rng = random.Random(seed)
    history = _history(rng, 40)
    runtime = step.start(Run(COUNTER))
    assert isinstance(runtime, TruncateRuntime)
    summary: Summary | None = None
    compared = cut_prompts = 0
    for end in range(2, len(history) + 1):
        prefix = history[:end]
        last = prefix[-1].iteration
        if last % 9 == 0 and last > 3:  # a summary lands and moves: the prompt's start changes
            summary = Summary(1, last - 3, f"summary through {last - 3}")
        schema_sent = rng.random() < 0.5
        context = BuildContext.of(prefix, summary, COUNTER, retrieval=True, schema_sent=schema_sent)
        draft = start(context)
        if rng.random() < 0.3:  # an earlier step hid some outputs: they are never cut
            draft = Mask(keep=3).apply(draft, context)
        fresh = step.apply(draft, context)
        kept = runtime.apply(draft, context)
        assert kept.messages == fresh.messages
        assert _cuts(kept) == _cuts(fresh)
        assert kept.owners == fresh.owners
        compared += 1
        cut_prompts += bool(fresh.cuts)
    assert compared == len(history) - 1
    assert cut_prompts > 10  # the comparison saw cuts, not only uncut prompts


def test_truncate_runtime_starts_over_when_retrieval_changes() -> None:
    history = _history(random.Random(5), 6)
    step = Truncate(max_chars=500)
    runtime = step.start(Run(COUNTER))
    for retrieval in (True, False, True):
        context = BuildContext.of(history, None, COUNTER, retrieval=retrieval)
        draft = start(context)
        assert runtime.apply(draft, context).messages == step.apply(draft, context).messages
    context = BuildContext.of(history, None, COUNTER, retrieval=False)
    texts = [m.text for m in runtime.apply(start(context), context).messages]
    assert any("omitted]" in text for text in texts)
    assert not any("context_retrieve" in text for text in texts)


# --------------------------------------------------------------------------- the digest page
def _fit_from_scratch(head: list[str], sections: list[_render._Section], limit: int) -> str:
    """The page fitting as first written: the whole page rendered again after every drop."""

    def join() -> str:
        return "\n".join([*head, *(text for text in (s.render() for s in sections) if text)])

    text = join()
    while len(text) > limit:
        above = [s for s in sections if len(s.items) > s.minimum]
        if above:
            victim = max(above, key=lambda s: (len(s.render()) / s.weight, s.title))
        else:
            left = [s for s in sections if s.items]
            if not left:
                return text[: limit - 1] + "…"
            victim = min(left, key=lambda s: (s.weight, -len(s.render()), s.title))
        victim.drop()
        text = join()
    return text


_ITEM = st.text(alphabet="abc xyz-01", min_size=0, max_size=40)
_SECTION = st.tuples(
    st.sampled_from(["Files", "Commands", "Errors", "Facts", "Tests"]),
    st.lists(_ITEM, max_size=8),
    st.sampled_from([1.0, 1.5, 2.5, 3.0]),
    st.integers(0, 3),
    st.booleans(),
)


def _sections(specs: list[tuple[str, list[str], float, int, bool]]) -> list[_render._Section]:
    return [
        _render._Section(title, list(items), weight, minimum, inline)
        for title, items, weight, minimum, inline in specs
    ]


@settings(max_examples=300, deadline=None)
@given(
    head=st.lists(st.text(alphabet="Tsk: 12", max_size=30), min_size=1, max_size=3),
    specs=st.lists(_SECTION, max_size=6),
    limit=st.integers(1, 400),
)
def test_page_fitting_matches_rendering_the_whole_page_after_every_drop(
    head: list[str], specs: list[tuple[str, list[str], float, int, bool]], limit: int
) -> None:
    assert _render._fit(head, _sections(specs), limit) == _fit_from_scratch(head, _sections(specs), limit)


# --------------------------------------------------------------------------- an output's outcome
def _outcome_plainly(text: str) -> str:
    for line in reversed(text.rstrip().rsplit("\n", _outputs._OUTCOME_LINES)):
        if len(_outputs._WORDS.findall(line)) >= 1 and sum(c.isalnum() for c in line) >= 3:
            return _outputs.shorten(line, _outputs._OUTCOME_CHARS)
    return ""


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab1_ }{\n.é²ÿ٣"), max_size=120))
def test_outcome_line_is_the_rule_written_plainly(text: str) -> None:
    assert _outputs._outcome(text) == _outcome_plainly(text)


def test_outcome_reads_the_text_above_the_last_lines_when_they_say_nothing() -> None:
    text = "Traceback: it failed here\n" + "}\n" * 10
    assert _outputs._outcome(text) == _outcome_plainly(text) != ""
    assert _outputs._outcome("}\n)\n" * 3) == ""


# --------------------------------------------------------------------------- line ranges
@settings(max_examples=400, deadline=None)
@given(st.lists(st.integers(-3, 40), max_size=30), st.booleans())
def test_line_ranges_are_the_merged_ranges_of_each_line(numbers: list[int], ordered: bool) -> None:
    lines = [(n, "text") for n in (sorted(numbers) if ordered else numbers)]
    assert _code.line_ranges(lines) == _code.merge_ranges((n, n) for n, _ in lines)


def test_line_ranges_of_a_view_with_gaps_and_repeats() -> None:
    lines = [(n, "") for n in (5, 6, 7, 7, 9, 12, 11, 1)]
    assert _code.line_ranges(lines) == ((1, 1), (5, 7), (9, 9), (11, 12))
    assert _code.line_ranges([]) == ()
