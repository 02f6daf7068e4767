"""Tidy: padded line numbers unpadded, repeated tagged blocks pointed to (context/steps/_tidy.py).

What changes (only the padding before a listing's numbers; only a long block shown verbatim above),
what never changes (assistant messages, the task, outputs another step cut or hid), that hostile text
fails open in linear time, and that the step is in the default and round-trips.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._policy import Policy
from tiered_agent.context._presets import PRESETS
from tiered_agent.context._step import Run, Step
from tiered_agent.context.aging._breakeven import CacheTerms
from tiered_agent.context.pipeline._build import assemble, validate_pairs
from tiered_agent.context.pipeline._draft import BuildContext, Draft
from tiered_agent.context.pipeline._types import BuiltPrompt
from tiered_agent.context.steps import Mask, Tidy, Truncate, step_from_dict
from tiered_agent.context.steps._quotes import LineIndex, point_quotes, quote_lines
from tiered_agent.context.steps._tidy import blocks_of, unpad_numbers

COUNTER = TokenCounter("o200k_base")
NO_MINIMUM = CacheTerms()  # a cache without a minimum size: Tidy tidies from the first message
REMINDER = (
    "<system-reminder>\nWhenever you read a file, you should consider whether it would be considered "
    "malware. You CAN and SHOULD provide analysis of malware, what it is doing. But you MUST refuse to "
    "improve or augment the code.\n</system-reminder>"
)
LISTING = "     1\u2192package main\n     2\u2192\n    10\u2192func main() {}\n"


def _history(outputs: Sequence[str], user: str | None = None) -> list[Message]:
    history = [Message("system", "s"), Message("user", "task " + REMINDER)]
    for k, output in enumerate(outputs, start=1):
        call = ToolCall(f"c{k}", "Read", '{"file_path": "     1\\u2192x"}')
        history += [
            Message("assistant", f"read {k}\n     1\u2192mine", (call,), iteration=k),
            Message("tool", output, tool_call_id=f"c{k}", name="Read", iteration=k),
        ]
    if user is not None:
        history.append(Message("user", user, iteration=len(outputs)))
    return history


def _built(history: list[Message], steps: Sequence[Any]) -> BuiltPrompt:
    policy = Policy("p", tuple(steps))
    run = Run(COUNTER, retrieval=policy.retrieval_active, cache_terms=NO_MINIMUM)
    runtimes = [step.start(run) for step in policy.steps]
    built = assemble(BuildContext.of(history, None, COUNTER, retrieval=run.retrieval), runtimes)
    validate_pairs(built.messages)
    return built


def _texts(history: list[Message], steps: Sequence[Any]) -> list[str]:
    return [m.text for m in _built(history, steps).messages]


def test_padding_before_a_listings_numbers_goes_and_nothing_else_changes() -> None:
    text = LISTING + "  7 apples\n   3\ttab\n x   4\u2192kept\n\t5\u2192kept\n"
    assert unpad_numbers(text) == (
        "1\u2192package main\n2\u2192\n10\u2192func main() {}\n"
        "  7 apples\n3\ttab\n x   4\u2192kept\n\t5\u2192kept\n"
    )
    assert unpad_numbers(unpad_numbers(text)) == unpad_numbers(text)
    assert unpad_numbers("no listing here") == "no listing here"


def test_outputs_are_unpadded_and_the_agents_own_text_and_the_task_are_not() -> None:
    shown = _texts(_history([LISTING]), [Tidy()])
    assert shown[1] == "task " + REMINDER  # iteration 0: as given
    assert shown[2] == "read 1\n     1\u2192mine"  # the agent's own message: never
    assert shown[3] == "1\u2192package main\n2\u2192\n10\u2192func main() {}\n"


def test_a_repeated_block_points_to_where_the_prompt_shows_it_first() -> None:
    outputs = [LISTING + REMINDER, "b\n" + REMINDER, "short <x>1</x> <x>1</x>"]
    shown = _texts(_history(outputs, user="next " + REMINDER), [Tidy()])
    pointer = "[same <system-reminder> as iteration 0, shown above]"
    assert shown[3] == unpad_numbers(LISTING) + pointer  # the task (iteration 0) shows it first
    assert shown[5] == "b\n" + pointer
    assert shown[7] == "short <x>1</x> <x>1</x>"  # shorter than min_block_chars: kept
    assert shown[8] == "next " + pointer


def test_a_pointer_names_the_output_that_shows_the_block_and_follows_it_when_hidden() -> None:
    block = "<env>" + "x" * 300 + "</env>"
    history = [Message("system", "s"), Message("user", "task")]
    for k in (1, 2, 3):
        call = ToolCall(f"c{k}", "bash", "{}")
        history += [
            Message("assistant", f"run {k}", (call,), iteration=k),
            Message("tool", f"out {k}\n{block}", tool_call_id=f"c{k}", name="bash", iteration=k),
        ]
    shown = [m.text for m in _built(history, [Tidy()]).messages if m.role == "tool"]
    assert shown == [
        f"out 1\n{block}",
        "out 2\n[same <env> as iteration 1 (tool_call_id=c1), shown above]",
        "out 3\n[same <env> as iteration 1 (tool_call_id=c1), shown above]",
    ]
    # the first output hidden by another step: the next one shown whole stands for it
    masked = [m.text for m in _built(history, [Mask(keep=2), Tidy()]).messages if m.role == "tool"]
    assert masked[1:] == [
        f"out 2\n{block}",
        "out 3\n[same <env> as iteration 2 (tool_call_id=c2), shown above]",
    ]
    # a cut output keeps its cut (and its retrieval marker)
    cut = [m.text for m in _built(history, [Truncate(max_chars=100), Tidy()]).messages if m.role == "tool"]
    assert all("context_retrieve" in text for text in cut)


def test_the_record_says_what_it_spared() -> None:
    built = _built(_history([LISTING + REMINDER, REMINDER]), [Tidy()])
    effects = built.effects["tidy"]
    assert effects.pointers == 2
    assert effects.pointer_chars == sum(len(m.text) for m in _history([LISTING + REMINDER, REMINDER])) - sum(
        len(m.text) for m in built.messages
    )


def test_nested_and_unmatched_tags_pair_like_a_stack_in_linear_time() -> None:
    assert blocks_of("<a><b>x</b></a>") == ((0, 15, "a"), (3, 11, "b"))
    assert blocks_of("</a><a>x") == ()
    assert blocks_of("<a>1<a>2</a>") == ((4, 12, "a"),)
    hostile = "<a>" * 100_000 + "</b>" * 100_000 + "</a>"
    started = time.perf_counter()
    assert blocks_of(hostile) == ((299_997, 300_000 + 400_004, "a"),)
    assert time.perf_counter() - started < 2.0


@settings(max_examples=200, deadline=None)
@given(st.lists(st.text(alphabet="<>/ab \n\t1→x", max_size=400), min_size=1, max_size=5))
def test_any_text_tidies_to_the_same_lines_or_a_pointer_to_text_shown_above(outputs: list[str]) -> None:
    history = _history(outputs)
    built = _built(history, [Tidy(min_block_chars=5)])
    assert len(built.messages) == len(history)
    shown_above = ""
    for original, shown in zip(history, built.messages, strict=True):
        pointers = re.findall(r"\[same <([\w-]+)> as iteration \d+[^\]]*\], shown above\]", shown.text)
        if original.role != "tool":
            assert shown == original
        elif not pointers:  # only the padding before numbers went
            assert shown.text == unpad_numbers(original.text)
        for name in pointers:
            assert f"<{name}>" in shown_above
        shown_above += shown.text


def test_tidy_is_in_the_default_last_and_round_trips() -> None:
    assert isinstance(PRESETS["tiered"].steps[-1], Tidy)
    step = Tidy(numbers=False, min_block_chars=50)
    assert step_from_dict(step.to_dict()) == step
    with pytest.raises(Exception, match="min_block_chars"):
        Tidy(min_block_chars=0)


# ----------------------------------------------------------------------------- quoted lines
SOURCE = "".join(f"{n:6}\u2192    value_{n} = compute({n}, 'argument')\n" for n in range(1, 21))


def test_a_file_read_again_points_to_the_lines_shown_above_with_both_ranges() -> None:
    again = "".join(f"{n + 2:6}\u2192    value_{n} = compute({n}, 'argument')\n" for n in range(5, 15))
    shown = [m.text for m in _built(_history([SOURCE, "new first line\n" + again]), [Tidy()]).messages]
    assert shown[5] == (
        "new first line\n"
        "[lines 7-16: the same text as iteration 1 (tool_call_id=c1) shows above, its lines 5-14]\n"
    )
    # the same numbers: no second range; under min_quote_lines: shown whole
    same = "".join(f"{n:6}\u2192    value_{n} = compute({n}, 'argument')\n" for n in range(5, 15))
    shown = [m.text for m in _built(_history([SOURCE, same]), [Tidy()]).messages]
    assert shown[5] == "[lines 5-14: the same text as iteration 1 (tool_call_id=c1) shows above]\n"
    assert _texts(_history([SOURCE, same]), [Tidy(min_quote_lines=11)])[5] == unpad_numbers(same)


def test_lines_the_agent_wrote_in_a_call_are_pointed_to_and_indentation_counts() -> None:
    body = "".join(f"    value_{n} = compute({n}, 'argument')\n" for n in range(1, 11))
    history = [Message("system", "s"), Message("user", "task")]
    write = ToolCall("w1", "Write", '{"file_path": "a.py", "content": ' + json.dumps(body) + "}")
    history += [
        Message("assistant", "write it", (write,), iteration=1),
        Message("tool", "written", tool_call_id="w1", name="Write", iteration=1),
    ]
    listing = "".join(f"{n:6}\u2192{line}\n" for n, line in enumerate(body.splitlines(), start=1))
    dedented = "".join(f"{n:6}\u2192{line.strip()}\n" for n, line in enumerate(body.splitlines(), start=1))
    for k, output in ((2, listing), (3, dedented)):
        call = ToolCall(f"r{k}", "Read", '{"file_path": "a.py"}')
        history += [
            Message("assistant", f"read {k}", (call,), iteration=k),
            Message("tool", output, tool_call_id=f"r{k}", name="Read", iteration=k),
        ]
    shown = [m.text for m in _built(history, [Tidy()]).messages]
    assert shown[5] == "[lines 1-10: the same text as iteration 1 (your message) shows above]\n"
    assert shown[7] == unpad_numbers(dedented)  # other indentation: other lines


def test_unnumbered_lines_name_their_first_line() -> None:
    log = "".join(f"INFO step {n} finished with status ok and more\n" for n in range(12))
    shown = [m.text for m in _built(_history([log, "tail\n" + log]), [Tidy()]).messages]
    assert shown[5] == (
        'tail\n[12 lines: the same text as iteration 1 (tool_call_id=c1) shows above, from "INFO step 0 '
        'finished with status ok and more"]\n'
    )


def test_many_identical_lines_cost_linear_time() -> None:
    line = "x = compute_the_same_value_again()\n"
    started = time.perf_counter()
    shown = _texts(_history([line * 5000, line * 5000 + "end"]), [Tidy()])
    assert time.perf_counter() - started < 5.0
    assert shown[5].startswith("[5000 lines: the same text as iteration 1")


def test_the_runtime_going_on_from_the_previous_prompt_builds_what_a_fresh_one_builds() -> None:
    block = "<env>" + "y" * 250 + "</env>"
    outputs = [SOURCE + block, "a\n" + SOURCE, block, "b", SOURCE[:400] + block, "c"]
    history = _history(outputs)
    policy = Policy("p", (Mask(keep=3), Tidy()))
    run = Run(COUNTER, retrieval=policy.retrieval_active, cache_terms=NO_MINIMUM)
    runtimes = [step.start(run) for step in policy.steps]
    for end in range(3, len(history) + 1):
        if history[end - 1].role == "assistant":
            continue
        context = BuildContext.of(history[:end], None, COUNTER, retrieval=run.retrieval)
        going_on = assemble(context, runtimes).messages
        fresh = assemble(context, [step.start(run) for step in policy.steps]).messages
        assert going_on == fresh


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from(["  12\u2192a  ", "7\tb", " x ", "", "\t9", " 3\u2192", "ab\u2192c\t", " \r"]),
        max_size=12,
    )
)
def test_lines_compare_after_their_number_and_without_trailing_spaces(parts: list[str]) -> None:
    text = "\n".join(parts)
    lines = quote_lines(text)
    expected = [re.match(r"^ *(\d{1,9})(?:\u2192|\t)", raw) for raw in parts or [""]]
    assert lines.numbers == tuple(int(m.group(1)) if m else None for m in expected)
    assert lines.texts == tuple(
        (raw[m.end() :] if m else raw).rstrip() for raw, m in zip(parts or [""], expected, strict=True)
    )


def test_a_prompt_that_goes_on_tidies_only_its_new_messages(monkeypatch: pytest.MonkeyPatch) -> None:
    tidied: list[str] = []
    real = Tidy.tidy

    def spy(self: Tidy, text: str, *args: Any, **kwargs: Any) -> str:
        tidied.append(text)
        return real(self, text, *args, **kwargs)

    monkeypatch.setattr(Tidy, "tidy", spy)
    history = _history([LISTING, "a\n" + SOURCE, "b"])
    run = Run(COUNTER, retrieval=False, cache_terms=NO_MINIMUM)
    runtimes = [Tidy().start(run)]
    for end in (4, 6, 8):
        assemble(BuildContext.of(history[:end], None, COUNTER, retrieval=False), runtimes)
    assert tidied == [LISTING, "a\n" + SOURCE, "b"]  # each output once, as it arrives


# ----------------------------------------------------------------------------- repeated user messages
NUDGE = (
    "Please always provide EXACTLY ONE action in triple backticks.\n\n<response_example>\n"
    "Here are some thoughts about why you want to perform the action.\n\n```bash\n<action>\n```\n"
    "</response_example>\n\nIf you have completed your assignment, please consult the first message "
    "about how to submit your solution (you will not be able to continue working on this task after that)."
)


def _nudged(texts: Sequence[str]) -> list[Message]:
    """Iteration k: the agent's message without a call, then ``texts[k - 1]`` as a user message."""
    history = [Message("system", "s"), Message("user", "task")]
    for k, text in enumerate(texts, start=1):
        history += [Message("assistant", f"thinking {k}", iteration=k), Message("user", text, iteration=k)]
    return history


def test_a_later_user_message_shown_above_word_for_word_is_one_line_naming_where() -> None:
    """mini-swe-agent's format reminder sent again (a user message): one line naming the copy the
    prompt shows; one that differs in a line keeps that line and points to the rest; a short one
    (under min_quote_chars) and the agent's own text stay as they are."""
    other = NUDGE.replace("EXACTLY ONE action", "EXACTLY ONE action, found 2")
    history = _nudged([NUDGE, "ok", NUDGE, other, "ok", NUDGE])
    shown = [m.text for m in _built(history, [Tidy()]).messages]
    pointer = "[same message as iteration 1, shown above]"
    assert shown[3] == NUDGE and shown[5] == shown[11] == "ok"
    assert shown[7] == shown[13] == pointer
    assert shown[9] == (
        "Please always provide EXACTLY ONE action, found 2 in triple backticks.\n\n"
        '[9 lines: the same text as iteration 1 shows above, from "<response_example>"]'
    )
    assert _texts(history, [Tidy(min_quote_chars=len(NUDGE) + 10)])[7] == NUDGE
    assert _texts(history, [Tidy(quoted_lines=False)])[7] == NUDGE


@dataclass(frozen=True, slots=True)
class _HideFirstNudge(Step):
    """Hides the first later user message (as aging would), for the test below."""

    kind: ClassVar[str] = "hide-first-nudge"

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        at = next(i for i, m in enumerate(draft.messages) if m.role == "user" and m.iteration)
        placeholder = Message("user", "[hidden]", iteration=draft.messages[at].iteration)
        return draft.hide({at: (placeholder, len(NUDGE))}, self.kind)


def test_a_repeated_user_message_follows_its_source_when_hidden() -> None:
    """The copy a pointer names hidden by another step: the next copy shown whole stands for it."""
    history = _nudged([NUDGE, NUDGE, "ok", NUDGE])
    shown = [m.text for m in _built(history, [_HideFirstNudge(), Tidy()]).messages]
    assert shown[3::2] == ["[hidden]", NUDGE, "ok", "[same message as iteration 2, shown above]"]


def _size(messages: Sequence[Message]) -> int:
    return sum(map(COUNTER.count_message, messages))


def _prompts(history: list[Message], terms: CacheTerms, steps: Sequence[Any]) -> list[list[Message]]:
    """The prompt of every call of ``history`` (one per assistant message) by one run's runtimes."""
    policy = Policy("p", tuple(steps))
    run = Run(COUNTER, retrieval=policy.retrieval_active, cache_terms=terms)
    runtimes = [step.start(run) for step in policy.steps]
    calls = [i for i, m in enumerate(history) if m.role == "assistant"] + [len(history)]
    return [
        list(assemble(BuildContext.of(history[:end], None, COUNTER, retrieval=False), runtimes).messages)
        for end in calls
    ]


def test_no_message_is_tidied_while_the_prompt_through_it_is_under_the_caches_minimum() -> None:
    """A prompt ``full`` would have cached never falls under the cache's minimum because of Tidy:
    a message is tidied only when the prompt through it, tidied, reaches the minimum."""
    history = _history([LISTING + REMINDER] * 12)
    sizes = [_size(prompt) for prompt in _prompts(history, NO_MINIMUM, [])]
    minimum = sizes[6] + 5  # the untidied prompt of call 7 is just under it, call 8's over it
    terms = CacheTerms(min_tokens=minimum)
    tidied = _prompts(history, terms, [Tidy()])
    for full, prompt in zip(sizes, tidied, strict=True):
        size = _size(prompt)
        assert size <= full
        assert not (full >= minimum > size)  # never under the minimum where full was over it
    last = tidied[-1]
    changed = [i for i, (a, b) in enumerate(zip(history, last, strict=True)) if a.text != b.text]
    through = [_size(last[: i + 1]) for i in changed]
    assert changed and min(through) >= minimum  # each tidied message with the prompt through it over it
    assert changed[0] > 3  # the first outputs, under the minimum, stay as they came
    everything = _prompts(history, NO_MINIMUM, [Tidy()])[-1]
    assert [m.text for m in everything] != [m.text for m in last]  # without a minimum they are tidied
    assert _prompts(history, terms, [Tidy(cache_floor=False)])[-1] == everything


# ------------------------------------------------------------------ the quoted lines' index: no copies
def test_the_index_files_hashes_and_the_shown_text_and_compares_runs_as_text() -> None:
    source = "\n".join(f"{n}\tdef helper_{n}(value): return value * {n}" for n in range(1, 9))
    index = LineIndex()
    index.add("iteration 3 (tool_call_id=c3)", source)
    assert index.sources[0][1] is source  # the message's own string: no copy of its lines
    assert all(type(key) is int for key in index.places)
    again = "\n".join(f"{n}\tdef helper_{n}(value): return value * {n}" for n in range(3, 9))
    quoted = point_quotes(again, index, min_lines=4, min_chars=100)
    assert quoted == "[lines 3-8: the same text as iteration 3 (tool_call_id=c3) shows above]"
    # a line filed under another line's hash (a collision) starts no run: runs compare text
    other = "\n".join(f"{n}\tdef other_{n}(value): return value + {n}" for n in range(3, 9))
    first = quote_lines(other).texts[0]
    index.places[hash(first)] = index.places[hash(quote_lines(again).texts[0])]
    assert index.longest(quote_lines(other).texts, 0)[0] == 0
    assert point_quotes(other, index, min_lines=4, min_chars=100) == other
