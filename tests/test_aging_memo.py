"""The aging memo's shortcuts give what computing from scratch gives: the lazy greedy line cover
against counting every line again, condensed notes read through a run's memo as their chunk and
the iterations after it grow against notes written from nothing by the rule read directly, and
aged forms rendered through a run's memo against forms rendered without one."""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context.aging._breakeven import CacheTerms
from tiered_agent.context.aging._condense import (
    SHORT_LINES,
    _cover,
    _output_lines,
    condensed_line,
    condensed_note,
    format_label,
)
from tiered_agent.context.aging._forms import AgedStyle, FormsMemo, age_batch, condensed
from tiered_agent.context.aging._refs import refs as ref_names
from tiered_agent.context.aging._refs import refs_of_all
from tiered_agent.context.aging._reports import Reports
from tiered_agent.context.aging._state import AgingState
from tiered_agent.context.steps import Age

NAMES = ["alpha_1", "beta_2", "gamma_3", "delta_4", "eps_5", "zeta_6", "eta_7", "src/a.py", "b.txt"]
WORDS = ["plain", "words", "THOUGHT:", "Run", "it."]


def refs(text: str) -> frozenset[str]:
    """The references of ``text`` as a set (the rules below read them as sets)."""
    return frozenset(ref_names(text))


def _brute_cover(candidates: list[tuple[int, str, frozenset[str]]], limit: int) -> list[tuple[int, str]]:
    """The greedy cover as first written: every line counted again at each pick."""
    left = list(candidates)
    covered: set[str] = set()
    chosen: list[tuple[int, str]] = []
    while left and len(chosen) < limit:
        best = max(left, key=lambda c: (len(c[2] - covered), -c[0]))
        if not best[2] - covered:
            break
        chosen.append(best[:2])
        covered |= best[2]
        left.remove(best)
    return chosen


@given(
    st.lists(st.frozensets(st.sampled_from(NAMES), max_size=4), max_size=30),
    st.integers(0, 10),
    st.frozensets(st.sampled_from(NAMES), max_size=5),
)
def test_the_lazy_cover_picks_what_counting_every_line_again_picks(
    sets: list[frozenset[str]], limit: int, seen: frozenset[str]
) -> None:
    """Also when what ``seen`` holds counts for nothing: the lines ranked by all they name at first."""
    candidates = [(index, f"line {index}", found) for index, found in enumerate(sets) if found]
    assert _cover(candidates, limit) == _brute_cover(candidates, limit)
    unseen = [(index, line, found - seen) for index, line, found in candidates if found - seen]
    assert _cover(candidates, limit, seen) == _brute_cover(unseen, limit)


_TOKEN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_./\-]*[A-Za-z0-9_]")
_CODE_LIKE = re.compile(r"[/_.0-9]|[a-z][A-Z]")


@settings(max_examples=400)
@given(
    st.text(alphabet=st.sampled_from("aZbY09_./- \n\u00e9\u0130\u212a(:"), max_size=60) | st.text(max_size=40)
)
def test_references_are_the_code_like_tokens_as_first_defined(text: str) -> None:
    """:func:`refs` tells code-like tokens by string methods: the same tokens as the definition's
    regexes (4+ characters holding one of ``/_.`` or a digit, or a lowercase letter then an
    uppercase one), hyphens, non-ASCII letters and all."""
    expected = frozenset(t for t in _TOKEN.findall(text) if len(t) >= 4 and _CODE_LIKE.search(t))
    found = ref_names.__wrapped__(text)
    assert frozenset(found) == expected
    assert len(found) == len(expected)  # each once


def _reference_note(
    chunk: Sequence[tuple[int, tuple[Message, ...]]],
    later: Sequence[Message],
    referred: int,
    novel: int,
) -> str:
    """The note's rule read directly (no memo, every set in full, every line counted again)."""

    def actions(messages: Sequence[Message]) -> set[str]:
        return refs_of_all(t for m in messages if m.role == "assistant" for t in _texts(m))

    def _texts(m: Message) -> list[str]:
        return [m.text, *(c.arguments for c in m.tool_calls)]

    first, last = chunk[0][0], chunk[-1][0]
    span = f"{first}-{last}" if first != last else str(first)
    wanted = actions(later)
    seen = refs_of_all(t for m in later for t in _texts(m)) if novel else set()
    shown: set[str] = set()
    label = format_label([*(m for _, ms in chunk for m in ms), *later])
    lines: list[str] = []
    for k, messages in reversed(chunk):
        line = condensed_line(k, messages, label)
        shown |= refs(line)
        outputs = _output_lines(messages)
        kept: list[tuple[int, str]] = []
        if referred:
            targets = wanted - shown
            kept = _brute_cover(
                [(i, x, f) for i, x in enumerate(outputs) if (f := refs(x) & targets)], referred
            )
            shown |= refs_of_all(x for _, x in kept)
        new: list[tuple[int, str]] = []
        if novel:
            before, known = seen | shown, set(seen | shown)
            candidates = []
            for i, x in enumerate(outputs):
                found = refs(x)
                if found - known:
                    known |= found
                    if found - before:
                        candidates.append((i, x, frozenset(found - before)))
            new = _brute_cover(candidates, novel)
            seen |= shown | refs_of_all(x for _, x in new)
            shown |= refs_of_all(x for _, x in new)
        chosen = sorted([*kept, *new])
        if len(outputs) <= SHORT_LINES and any(m.role == "tool" for m in messages):
            chosen = [(i, x) for i, x in enumerate(outputs) if x]
            shown |= refs_of_all(outputs)
            seen |= refs_of_all(outputs) if novel else set()
        lines.append("\n".join([line, *(f"    {x}" for _, x in chosen)]))
        wanted |= actions(messages)
    return "\n".join([f"[Iterations {span}, one line each]", *reversed(lines)])


def _iteration(k: int, thought: Sequence[str], output: Sequence[Sequence[str]]) -> tuple[Message, ...]:
    call = ToolCall(f"c{k}", "bash", f'{{"command": "cat {k}"}}')
    return (
        Message("assistant", " ".join(thought), (call,), iteration=k),
        Message("tool", "\n".join(" ".join(line) for line in output), tool_call_id=f"c{k}", iteration=k),
    )


_words = st.lists(st.sampled_from(NAMES + WORDS), max_size=4)
_iterations = st.lists(st.tuples(_words, st.lists(_words, max_size=9)), min_size=3, max_size=12)


@settings(max_examples=60, deadline=None)
@given(_iterations, st.integers(0, 3), st.integers(0, 3))
def test_notes_read_through_a_runs_memo_as_they_grow_are_the_rule_read_directly(
    drawn: list[tuple[list[str], list[list[str]]]], referred: int, novel: int
) -> None:
    groups = [(k, _iteration(k, thought, output)) for k, (thought, output) in enumerate(drawn, 1)]
    readings = FormsMemo().readings
    for due in range(1, len(groups)):  # the chunk grows, and the iterations after it with it
        for at in range(due + 1, len(groups) + 1):
            chunk, later = groups[:due], tuple(m for _, ms in groups[due:at] for m in ms)
            note = condensed_note(
                chunk, retrieval=False, later=later, referred=referred, novel=novel, readings=readings
            )
            assert note.text == _reference_note(chunk, later, referred, novel)


@settings(max_examples=60, deadline=None)
@given(_iterations, st.integers(0, 3), st.integers(0, 3))
def test_notes_a_runs_memo_tells_apart_by_what_the_later_messages_change_are_the_rule_read_directly(
    drawn: list[tuple[list[str], list[list[str]]]], referred: int, novel: int
) -> None:
    """A chunk's note is reused while the messages after it change nothing it reads (its label, what
    they name among the references its outputs name): every note is still the rule's, as the chunk
    stays and the iterations after it grow, then as the chunk grows and they move into it."""
    groups = [(k, _iteration(k, thought, output)) for k, (thought, output) in enumerate(drawn, 1)]
    memo = FormsMemo()
    for due in range(1, len(groups)):
        for at in (*range(due + 1, len(groups) + 1), due + 1):  # and back: an older note again
            chunk, later = groups[:due], tuple(m for _, ms in groups[due:at] for m in ms)
            note = condensed(chunk, retrieval=False, later=later, referred=referred, novel=novel, memo=memo)
            assert note.text == _reference_note(chunk, later, referred, novel)


_COUNTER = TokenCounter()
_LINE_ENDS = st.sampled_from(
    ["", ".", "...", ":", " ", "\t", "/", "//", "'", "\\", ")", "é", "12", "\n", "\r\n"]
)


_LINE_STARTS = st.sampled_from(
    ["", "/", "//", "/usr/", "  ", "\t", " /", "\u00a0", "\x1f", "'", "12", "é", "-"]
)


def _reported(k: int, messages: tuple[Message, ...], report: list[str]) -> tuple[Message, ...]:
    """The iteration with a sub-agent's report (a ``Task`` call's output, kept whole in a note)."""
    call = ToolCall(f"t{k}", "Task", '{"prompt": "look"}')
    assistant = messages[0]
    return (
        Message("assistant", assistant.text, (*assistant.tool_calls, call), iteration=k),
        *messages[1:],
        Message("tool", "\n".join(report), tool_call_id=f"t{k}", iteration=k),
    )


@settings(max_examples=60, deadline=None)
@given(
    _iterations,
    st.integers(0, 3),
    st.integers(0, 3),
    st.lists(_LINE_ENDS, min_size=12, max_size=12),
    st.lists(_LINE_STARTS, min_size=12, max_size=12),
    st.sets(st.integers(1, 12), max_size=3),
)
def test_a_notes_tokens_counted_from_its_parts_are_its_tokens(
    drawn: list[tuple[list[str], list[list[str]]]],
    referred: int,
    novel: int,
    ends: list[str],
    starts: list[str],
    reporting: set[int],
) -> None:
    """The aging state counts a note from its parts (the head, one per iteration; each part from its
    line and the output lines under it, looked up once counted): the same count as the whole
    note's, whatever ends an iteration's line (punctuation, digits, spaces, line feeds, slashes:
    what a pre-token could join across a line feed), whatever starts an output line (a slash, an
    indentation, a Unicode space) and with sub-agents' reports kept whole, as the chunk and what
    follows grow and the same parts come back."""
    groups = []
    for k, ((thought, output), end, start) in enumerate(zip(drawn, ends, starts, strict=False), 1):
        lines = [[f"{start}{words[0]}", *words[1:]] if words else [start] for words in output]
        messages = _iteration(k, [*thought[:-1], *(f"{w}{end}" for w in thought[-1:])], [*lines, [end]])
        if k in reporting:
            messages = _reported(
                k, messages, [f"{start}{line}" for line in ("src/a.py: done", "", "  b_2 ok")]
            )
        groups.append((k, messages))
    reports = Reports(frozenset({"Task"}), 1_000)
    memo = FormsMemo()
    for due in range(1, len(groups)):
        for at in range(due + 1, len(groups) + 1):
            chunk, later = groups[:due], tuple(m for _, ms in groups[due:at] for m in ms)
            for retrieval in (False, True):
                note = condensed(
                    chunk,
                    retrieval=retrieval,
                    later=later,
                    referred=referred,
                    novel=novel,
                    reports=reports,
                    memo=memo,
                )
                counted = memo.note_tokens(note, _COUNTER)
                assert counted == TokenCounter().count_message(note)
                assert memo.note_tokens(note, _COUNTER) == counted  # and again, from its memo


@settings(max_examples=30, deadline=None)
@given(_iterations)
def test_aged_forms_rendered_through_a_runs_memo_are_those_rendered_without(
    drawn: list[tuple[list[str], list[list[str]]]],
) -> None:
    groups = [(k, _iteration(k, thought, output)) for k, (thought, output) in enumerate(drawn, 1)]
    style = AgedStyle(min_chars=20, max_lines=3, head_lines=1)
    head = (Message("user", "Fix alpha_1 in src/a.py."),)
    memo = FormsMemo()
    for first in range(1, len(groups)):
        for at in range(first + 1, len(groups) + 1):
            batch = groups[first - 1 : at]
            last = max(first, at - 2)
            memoized = age_batch(style, head, batch, first, last, memo=memo)
            assert memoized == age_batch(style, head, batch, first, last)


@settings(max_examples=25, deadline=None)
@given(
    st.lists(st.tuples(_words, st.lists(_words, max_size=9)), min_size=8, max_size=24),
    st.sampled_from([0.1, 0.5, 1.0]),
    st.sampled_from([0.25, 1.0, 3.0]),
)
def test_the_aging_states_running_sums_are_the_sums_over_what_it_holds(
    drawn: list[tuple[list[str], list[list[str]]]], read: float, patience: float
) -> None:
    """The break-even rule's sums (what aging the waiting iterations saves, their estimated aged
    size, the aged iterations as shown in all and after a chunk) are kept as the run goes, each
    iteration added once: at every prompt they are the sums over what the state holds then."""
    age = Age(window=2, min_chars=20, max_lines=3, head_lines=1, condense_after=4, chunk=2, patience=patience)
    state = AgingState(age, counter=_COUNTER, terms=CacheTerms(read=read), retrieval=True)
    history = [Message("user", "Fix alpha_1 in src/a.py.")]
    for k, (thought, output) in enumerate(drawn, 1):
        history.extend(_iteration(k, thought, output))
        state.update(history, k)
        through, limit = state.schedule.through, k - age.window
        if limit < 1:
            continue
        pending = [i for i in range(through + 1, limit + 1) if i in state._groups]
        assert state._pending(through, limit) == (
            sum(max(state._tokens(i) - state._estimate[i], 0) for i in pending),
            sum(state._estimate[i] for i in pending),
        )
        assert state._shown_after(None) == sum(state._shown.values())
        for due in (state.schedule.condensed, through, k):
            assert state._shown_after(due) == sum(t for i, t in state._shown.items() if i > due)


def test_references_are_a_tuple_of_distinct_names_in_order() -> None:
    """A text's references are a tuple (56 + 8n bytes; a frozenset of up to four is 216), each name
    once in the order the text first names it, the empty tuple for a text naming nothing."""
    assert ref_names.__wrapped__("plain words here") == ref_names.__wrapped__("Run it. THOUGHT: more") == ()
    found = ref_names.__wrapped__("see src/a.py, then b_cd and src/a.py again")
    assert found == ("src/a.py", "b_cd")
    assert sys.getsizeof(found) < sys.getsizeof(frozenset(found))
