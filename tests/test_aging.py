"""Aging: each form alone (exact text), the Age step over a schedule, the schedule's append-only
property, the break-even rule on hand-computed numbers, and live loop vs replay."""

from __future__ import annotations

import dataclasses
import itertools
from pathlib import Path

import orjson
import pytest
from recorded_tools import recorded_tools

from tiered_agent import Agent, Message, Policy, RunLimits, ToolCall
from tiered_agent._agent import _Run
from tiered_agent._errors import ConfigurationError
from tiered_agent._providers import CACHE_MODELS, ModelPrices
from tiered_agent._resume import ResumeState
from tiered_agent._tokens import TokenCounter
from tiered_agent._trace import AgingCarry, AgingRecord, ContextRecord, ModelRequest, StepRecord, read_trace
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._replay import ReplaySettings, replay_prompts
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.aging._breakeven import PAYBACK_SHARE, CacheTerms
from tiered_agent.context.aging._condense import condensed_line, condensed_note, format_label
from tiered_agent.context.aging._forms import AgedStyle, FormsMemo, age_batch, preamble
from tiered_agent.context.aging._jsonform import json_fields
from tiered_agent.context.aging._novel import novel_lines
from tiered_agent.context.aging._reasoning import cut_arguments, shorten_reasoning, split_sentences
from tiered_agent.context.aging._refs import refs
from tiered_agent.context.aging._schedule import AgingSchedule, Epoch
from tiered_agent.context.aging._state import AgingState, schedule_from_records
from tiered_agent.context.aging._step import AgeRuntime
from tiered_agent.context.pipeline._build import build_prompt, validate_pairs
from tiered_agent.context.pipeline._types import Summary
from tiered_agent.context.steps import Age, Compact, Dedup, Truncate
from tiered_agent.testing import FunctionModel, text

pytestmark = pytest.mark.anyio

COUNTER = TokenCounter("o200k_base")
SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix parse_args in cli/main.py.")


def step(k: int, thought: str, command: str, output: str) -> list[Message]:
    """One iteration: a thought with one shell call, and its output."""
    call = ToolCall(f"call_{k}", "bash", f'{{"command": "{command}"}}')
    return [
        Message("assistant", thought, (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    ]


LISTING = "\n".join(
    f"{n:4d}\tdef helper_{n}(value):" if n % 5 == 0 else f"{n:4d}\t    pass" for n in range(1, 41)
)


def story(last: int) -> list[Message]:
    """A run: the agent lists a file, greps, edits, re-runs the same test (superseding), ..."""
    out = [SYSTEM, TASK]
    for k in range(1, last + 1):
        if k % 4 == 1:
            out += step(
                k, f"I will read cli/main.py part {k}. It has helpers.", "nl -ba cli/main.py", LISTING
            )
        elif k % 4 == 2:
            out += step(
                k, "Search the callers.", "grep -rn parse_args", f"cli/main.py:{k}0: parse_args(argv)"
            )
        elif k % 4 == 3:
            out += step(
                k, "Run the test.", "pytest tests/test_cli.py", f"FAILED tests/test_cli.py::test_{k}\n" * 30
            )
        else:
            out += step(k, "Edit it.", f"sed -i 's/x/y/' cli/main.py # {k}", "")
    return out


# ----------------------------------------------------------------------------- the forms alone
def test_references_are_code_like_tokens() -> None:
    text = "see cli/main.py and parse_args, not words; HAT017 at 2024-05-25, getValue, 12, parse_args again"
    # each once, in the order first named
    assert refs(text) == ("cli/main.py", "parse_args", "HAT017", "2024-05-25", "getValue")


def test_novel_lines_keep_the_head_and_what_is_new() -> None:
    lines = ["total 3", "a.py parse_args", "nothing here", "b.py parse_args", "c.py helper_x", "tail"]
    seen = {"b.py"}
    elided = novel_lines(lines, seen, head=1, max_lines=10, line_chars=80)
    assert elided.body == "total 3\na.py parse_args\n[... 2 lines ...]\nc.py helper_x\n[...]"
    assert (elided.shown, elided.total) == (3, 6)
    assert seen == {"b.py", "a.py", "parse_args", "c.py", "helper_x"}
    capped = novel_lines(lines, set(), head=0, max_lines=1, line_chars=4)
    assert capped.body == "[...]\na.py [...]\n[... 4 lines ...]"  # a long line is cut, the rest a gap


def test_json_outputs_become_one_field_per_line() -> None:
    text = '{"reservation_id": "OI5L9G", "flights": [{"flight_number": "HAT017", "price": 523}], "x": null}'
    assert json_fields(text) is None  # short lines: left to line elision
    long = text.replace('"x": null', '"note": "' + "n" * 200 + '"')
    fields = json_fields(long)
    assert fields is not None
    assert fields.lines[:3] == (
        "reservation_id: OI5L9G",
        "flights[0].flight_number: HAT017",
        "flights[0].price: 523",
    )
    assert fields.values[:3] == ("OI5L9G", "HAT017", "523")
    assert json_fields("[1, 2" + " " * 300) is None  # not JSON


def test_reasoning_keeps_its_first_sentence_or_what_is_new() -> None:
    thought = "THOUGHT:\nI will check parse_args. It lives in cli/main.py.\n\nThen run the tests again."
    assert split_sentences(thought)[0] == "THOUGHT: I will check parse_args."
    seen: set[str] = set()
    assert shorten_reasoning(thought, "first", seen) == "THOUGHT: I will check parse_args. [...]"
    assert seen == {"parse_args"}
    novel = shorten_reasoning(thought, "novel", set())
    assert novel == "THOUGHT: I will check parse_args. It lives in cli/main.py. [...]"
    assert shorten_reasoning("Short.", "first", set()) == "Short."


def test_long_arguments_are_cut_and_stay_json() -> None:
    args = '{"command": "cat <<EOF > a.py\\n' + "x = 1\\n" * 100 + 'EOF"}'
    cut = cut_arguments(args, 40)
    assert cut == '{"command":"cat <<EOF > a.py\\nx =[... 600 chars cut]"}'
    assert cut_arguments('{"path": "a.py"}', 40) == '{"path": "a.py"}'


def test_a_condensed_note_is_one_line_per_iteration_plus_referred_lines() -> None:
    chunk = [(k, tuple(m for m in story(3) if m.iteration == k)) for k in (1, 2, 3)]
    assert (
        condensed_line(*chunk[0])
        == "1. I will read cli/main.py part 1. → bash: nl -ba cli/main.py → 40 lines"
    )
    assert condensed_line(*chunk[2]) == "3. Run the test. → bash: pytest tests/test_cli.py → 30 lines"
    later = (Message("assistant", "helper_35 is the one.", iteration=4),)
    note = condensed_note(chunk, retrieval=True, later=later, referred=2)
    assert note.role == "user" and note.iteration == 1
    assert note.text.splitlines() == [
        '[Iterations 1-3, one line each; full text: context_retrieve(iteration="1-3")]',
        "1. I will read cli/main.py part 1. → bash: nl -ba cli/main.py → 40 lines",
        "    35 def helper_35(value):",
        "2. Search the callers. → bash: grep -rn parse_args → 1 line",
        "    cli/main.py:20: parse_args(argv)",  # a short output: kept whole
        "3. Run the test. → bash: pytest tests/test_cli.py → 30 lines",
    ]


def _one_output(k: int, output: str) -> tuple[int, tuple[Message, ...]]:
    return k, tuple(step(k, "Look.", "cat notes", output))


def test_condensed_lines_keep_the_output_lines_naming_the_most_things_shown_nowhere_later() -> None:
    output = "\n".join(
        ["alpha_1 beta_2", "gamma_3", "alpha_1 again", "delta_4 eps_5 zeta_6", "plain words", "zeta_6 eta_7"]
    )
    later = (Message("tool", "gamma_3 is fine", tool_call_id="x", iteration=2),)
    note = condensed_note([_one_output(1, output)], retrieval=False, later=later, novel=2)
    assert note.text.splitlines() == [
        "[Iterations 1, one line each]",
        "1. Look. → bash: cat notes → 6 lines",
        "    alpha_1 beta_2",  # in output order; delta_4 eps_5 zeta_6 (three new names) was chosen first
        "    delta_4 eps_5 zeta_6",
    ]
    assert condensed_note([_one_output(1, output)], retrieval=False, later=later).text.count("\n") == 1


def test_referred_lines_are_the_lines_naming_the_most_referred_things() -> None:
    output = "\n".join(["aa_1 only", "aa_1 bb_2 cc_3 together", "bb_2 alone", *(["plain words"] * 3)])
    later = (Message("assistant", "Use aa_1, bb_2 and cc_3.", iteration=2),)
    note = condensed_note([_one_output(1, output)], retrieval=False, later=later, referred=1)
    assert note.text.splitlines()[2:] == ["    aa_1 bb_2 cc_3 together"]  # not the first line naming one


def test_a_label_the_format_repeats_on_every_message_is_left_out_of_condensed_lines() -> None:
    labeled = [(k, tuple(step(k, f"THOUGHT: I look at part {k}.", f"cat p{k}", "x"))) for k in (1, 2, 3)]
    assert format_label([m for _, ms in labeled for m in ms]) == "THOUGHT:"
    lines = condensed_note(labeled, retrieval=False).text.splitlines()
    assert lines[1::2] == [f"{k}. I look at part {k}. → bash: cat p{k} → 1 line" for k in (1, 2, 3)]
    assert lines[2::2] == ["    x"] * 3  # short outputs: kept whole
    once = [labeled[0], *((k, tuple(step(k, f"Part {k}.", f"cat p{k}", "x"))) for k in (2, 3))]
    assert format_label([m for _, ms in once for m in ms]) is None  # a label of one message is its words
    assert condensed_note(once, retrieval=False).text.splitlines()[1].startswith("1. THOUGHT: I look")


def test_referred_and_novel_lines_are_shown_together_in_output_order() -> None:
    output = "\n".join(
        [
            "first new_name_1",
            "plain",
            "the used_name_2 line",
            "plain too",
            "last new_name_3 new_name_4",
            "end",
        ]
    )
    later = (Message("assistant", "Now edit used_name_2.", iteration=2),)
    note = condensed_note([_one_output(1, output)], retrieval=False, later=later, referred=1, novel=2)
    assert note.text.splitlines()[2:] == [  # chosen: used_name_2 (referred), then the two novel lines
        "    first new_name_1",
        "    the used_name_2 line",
        "    last new_name_3 new_name_4",
    ]


def test_an_older_line_stays_when_only_the_cut_reasoning_of_a_newer_message_names_it() -> None:
    listing = "\n".join([*(f"plain line {n}" for n in range(20)), "the answer is special_value_9"])
    thought = "I see the listing. The key is special_value_9, which I will use."
    groups = [
        (1, tuple(step(1, "List it.", "cat notes", listing))),
        (2, tuple(step(2, thought, "echo done", "done"))),
    ]
    style = AgedStyle(max_lines=4, head_lines=0, min_chars=10)
    shown = age_batch(style, (SYSTEM, TASK), groups, 1, 1)[1][1].text
    assert "the answer is special_value_9" in shown  # iteration 2 will age to "I see the listing. [...]"


def test_condensing_goes_along_with_a_level_one_epoch_instead_of_rewriting_again() -> None:
    age = Age(window=2, min_chars=0, max_lines=2, head_lines=1, condense_after=4, chunk=2)
    state = AgingState(age, counter=COUNTER, terms=CacheTerms(read=0.1), retrieval=True)
    history = _listing_history(80)
    epochs = []
    for last in range(1, 81):
        state.update([m for m in history if m.iteration <= last], last)
        if state.new_epoch is not None:
            epochs.append(state.new_epoch)
    assert epochs[-1].condensed >= 60  # condensed as it went
    assert all(b.at - a.at >= 3 for a, b in itertools.pairwise(epochs))  # no rewrite right after another


def test_an_aged_batch_elides_outputs_supersedes_reruns_and_shortens_reasoning() -> None:
    history = story(8)
    groups = [(k, tuple(m for m in history if m.iteration == k)) for k in range(1, 9)]
    style = AgedStyle(max_lines=6, head_lines=1, min_chars=100)
    forms = age_batch(style, (SYSTEM, TASK), groups, 1, 6)
    assert sorted(forms) == [1, 2, 3, 4, 5, 6]
    assert forms[3][1].text == (
        "[superseded: the same call ran again in iteration 7; "
        'full output: context_retrieve(tool_call_id="call_3")]'
    )
    listing = forms[5][1].text.splitlines()
    assert listing[0] == (
        '[older output: 6 of 40 lines shown; full output: context_retrieve(tool_call_id="call_5")]'
    )
    assert listing[1:4] == ["   1\t    pass", "[... 3 lines ...]", "   5\tdef helper_5(value):"]
    assert forms[1][1].text.count("def helper_") == 0  # iteration 5 shows them later
    assert forms[5][0].text == "I will read cli/main.py part 5. [...]"  # not "It has helpers."
    assert forms[2] == tuple(groups[1][1])  # short: unchanged, the same objects
    memo = FormsMemo()
    memoized = age_batch(style, (SYSTEM, TASK), groups, 1, 6, memo=memo)
    assert memoized == forms and age_batch(style, (SYSTEM, TASK), groups, 1, 6, memo=memo) is memoized
    assert age_batch(style, (SYSTEM, TASK), groups, 1, 6) is not memoized  # no memo: rendered again


# ----------------------------------------------------------------------------- the Age step
def test_the_age_step_shows_what_the_schedule_says() -> None:
    history = story(12)
    age = Age(window=2, max_lines=6, min_chars=100, condense_after=8, chunk=3)
    policy = Policy("p", (age,))
    schedule = AgingSchedule((Epoch(at=8, through=6), Epoch(at=12, through=10, condensed=3)))
    built = build_prompt(history, policy, summary=None, counter=COUNTER, schedule=schedule)
    validate_pairs(built.messages)
    messages = built.messages
    assert messages[:3] == (SYSTEM, TASK, preamble(age.style(True)))
    assert messages[3].text.startswith(
        '[Iterations 1-3, one line each; full text: context_retrieve(iteration="1-3")]'
    )
    assert [m.iteration for m in messages[4:]] == [4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12]
    assert messages[-4:] == tuple(history[-4:])  # the window (11, 12) verbatim
    assert messages[11].text.startswith("[superseded")  # iteration 7's test run, re-run in 11 (batch 2)
    assert built.stats.windowed_out == (1, 2, 3)  # condensed: behind the note
    assert built.stats.shown_iterations == tuple(range(4, 13))
    # an empty schedule changes nothing
    assert build_prompt(history, policy, summary=None, counter=COUNTER).messages == tuple(history)


def test_the_summary_follows_the_aged_iterations_and_stands_for_the_rest() -> None:
    history = story(10)
    policy = Policy("p", (Age(window=2, min_chars=100, condense_after=None),))
    schedule = AgingSchedule((Epoch(at=8, through=6),))
    summary = Summary(1, 8, "Working memory: cli/main.py edited.")
    built = build_prompt(history, policy, summary=summary, counter=COUNTER, schedule=schedule)
    validate_pairs(built.messages)
    iterations = [m.iteration for m in built.messages]
    summary_at = next(
        i for i, m in enumerate(built.messages) if m.text.startswith("[Summary of iterations 1-8]")
    )
    assert iterations[summary_at - 1] == 6 and iterations[summary_at + 1] == 9  # after the aged ones
    assert not any(m.iteration in (7, 8) and m.role != "user" for m in built.messages)  # behind the summary
    assert built.messages[summary_at].iteration == 0  # not part of any iteration shown
    assert built.stats.summary_range == (1, 8)
    assert built.stats.windowed_out == (7, 8)


# ----------------------------------------------------------------------------- the schedule
async def test_the_prompt_is_append_only_between_epochs() -> None:
    history = story(40)
    policy = Policy("p", (Dedup(), Age(window=2, min_chars=100, condense_after=8, chunk=3), Truncate(8000)))
    terms = CacheTerms(read=0.5)  # expensive reads: ages often, the property is exercised
    async with ContextManager(policy, counter=COUNTER, background=False, cache_terms=terms) as manager:
        previous: tuple[Message, ...] | None = None
        epochs = 0
        for last in range(1, 41):
            prepared = await manager.prepare([m for m in history if m.iteration < last])
            messages = prepared.built.messages
            validate_pairs(messages)
            aging = prepared.record().aging
            assert aging is not None
            if aging.epoch is not None:
                epochs += 1
            elif previous is not None:
                assert messages[: len(previous)] == previous, (
                    f"rewritten at iteration {last} without an epoch"
                )
            previous = messages
    schedule = manager.schedule
    assert schedule is not None and epochs == len(schedule.epochs) >= 3 and schedule.condensed >= 6


def test_epochs_round_trip_through_trace_records() -> None:
    # records of both formats: flat (before records were kept per step) and per step
    epoch = {"at": 8, "through": 6, "condensed": 0}
    flat = [{"aging": {"through": 0}}, {"aging": {"through": 6, "epoch": epoch}}, {"x": 1}]
    typed = AgingRecord(10, 3, (12, 10, 3))
    per_step = ContextRecord({"age": StepRecord(state=typed)}).to_dict()
    assert per_step["steps"] == {
        "age": {"state": {"through": 10, "condensed": 3, "epoch": {"at": 12, "through": 10, "condensed": 3}}}
    }
    hostile = [
        {"steps": {"age": {"state": {"epoch": {"at": 14, "through": 9}}}}},
        {"steps": "x"},
        {"aging": []},
    ]
    records = [ContextRecord.from_dict(r) for r in [*flat, per_step, *hostile]]
    # the going-back epoch of the hostile record is left out, so is anything that is not one
    assert schedule_from_records(records) == AgingSchedule((Epoch(8, 6), Epoch(12, 10, 3)))
    with pytest.raises(ValueError, match="must not go back"):
        AgingSchedule((Epoch(12, 10), Epoch(13, 9)))


def test_what_the_rule_accrued_round_trips_and_hostile_values_are_dropped() -> None:
    carry = AgingCarry(rent=812.5, rent_condense=40.25, calls=31, last=1795753840.5, gaps=30, lost=1.0)
    record = AgingRecord(10, 3, None, carry)
    assert AgingRecord.from_dict(orjson.loads(orjson.dumps(record.to_dict()))) == record
    assert AgingRecord.from_dict({"through": 4}) == AgingRecord(4)  # a record written before carries
    for bad in ({"rent": -1}, {"calls": "3"}, {"lost": None}, {"last": True}, {"rent": 1e400}, [1]):
        data = {**carry.to_dict(), **bad} if isinstance(bad, dict) else bad
        assert AgingCarry.from_dict(data) is None
    assert AgingCarry.from_dict({**carry.to_dict(), "last": None}) == dataclasses.replace(carry, last=None)


# ----------------------------------------------------------------------------- the break-even rule
GEMINI_PRICES = ModelPrices("vertex_ai/gemini-3-pro-preview", 2e-6, 12e-6, 2e-7, 2e-6)
CLAUDE_PRICES = ModelPrices("claude-sonnet-4-5", 3e-6, 15e-6, 3e-7, 3.75e-6)


def test_cache_terms_from_two_cache_models() -> None:
    gemini = CacheTerms.of(CACHE_MODELS["gemini"], GEMINI_PRICES, scale=1.1396)
    assert (gemini.read, gemini.write, gemini.miss_rate) == (pytest.approx(0.1), 1.0, 0.035)
    assert (gemini.min_tokens, gemini.block, gemini.explicit) == (1797, 1797, False)  # 2,048 / 1.1396
    assert gemini.carry == pytest.approx(0.1 * 0.965 + 0.035)  # 0.1315
    assert gemini.extra == pytest.approx(1 - 0.1315)
    # a change after 5,000 tokens keeps 2 whole blocks (3,594): 1,406 + the 3,000 after are lost
    assert gemini.lost(prefix=5_000, tail=3_000, fixed=2_000) == 4_406
    assert gemini.rewrite_cost(5_000, 3_000, 2_000) == pytest.approx(0.8685 * 4_406)
    assert gemini.lost(prefix=1_000, tail=3_000, fixed=900) == 4_000  # under the minimum: nothing kept
    claude = CacheTerms.of(CACHE_MODELS["anthropic"], CLAUDE_PRICES)
    assert (claude.read, claude.write, claude.explicit) == (pytest.approx(0.1), pytest.approx(1.25), True)
    assert claude.extra == pytest.approx(1.15)
    # explicit breakpoints: everything after the tools and system prompt is written again
    assert claude.lost(prefix=5_000, tail=3_000, fixed=2_000) == 6_000
    assert CacheTerms.for_model("gpt-4o").read == pytest.approx(0.5)  # OpenAI's 4o reads at half price


def _listing_history(last: int) -> list[Message]:
    """Every iteration: a 60-line output without references (ages to its head and a gap)."""
    history = [SYSTEM, TASK]
    for k in range(1, last + 1):
        body = "\n".join(f"line {n} of output number {k} is plain text" for n in range(60))
        history += step(k, f"Read part {k}.", f"cat part{k}.txt", body)
    return history


def _first_epoch(
    terms: CacheTerms, history: list[Message], window: int = 2, patience: float = 1.0
) -> tuple[int | None, int | None]:
    """When the state ages first, and when the formula says it should (recomputed here by hand)."""
    age = Age(window=window, min_chars=0, max_lines=2, head_lines=1, condense_after=None, patience=patience)
    state = AgingState(age, counter=COUNTER, terms=terms, retrieval=True)
    fixed = 3 + COUNTER.count_message(SYSTEM) + COUNTER.count_message(TASK)
    note = COUNTER.count_message(preamble(age.style(True)))
    rent, expected, actual = 0.0, None, None
    last_iteration = max(m.iteration for m in history)
    for last in range(1, last_iteration + 1):
        state.update([m for m in history if m.iteration <= last], last)
        limit = last - window
        if limit >= 1 and expected is None:
            verbatim = {k: state._tokens(k) for k in range(1, last + 1)}
            aged = {k: state._estimate[k] for k in range(1, limit + 1)}
            dead = sum(verbatim[k] - aged[k] for k in aged)
            tail = sum(aged.values()) + sum(verbatim[k] for k in range(limit + 1, last)) + note
            rent += terms.carry * dead
            kept = 0 if fixed < max(terms.min_tokens, 1) else fixed // terms.block * terms.block
            lost = (tail + fixed - kept) if not terms.explicit else tail
            cost = patience * terms.extra * lost
            # the rent paid covers the rewrite, which pays back within a third of the calls so far
            if rent >= cost and terms.carry * dead * last * PAYBACK_SHARE >= cost:
                expected = last
        if state.new_epoch is not None and actual is None:
            actual = last
    return actual, expected


@pytest.mark.parametrize(
    "terms",
    [
        CacheTerms.of(CACHE_MODELS["gemini"], GEMINI_PRICES, scale=1.1396),
        CacheTerms.of(CACHE_MODELS["anthropic"], CLAUDE_PRICES),
        CacheTerms(read=0.5),
    ],
    ids=["gemini", "anthropic", "read-0.5"],
)
def test_the_rule_rents_until_the_rent_reaches_the_rewrite_cost(terms: CacheTerms) -> None:
    actual, expected = _first_epoch(terms, _listing_history(30))
    assert actual == expected is not None
    assert actual > 3  # not at once: the rewrite had to be paid for first


@pytest.mark.parametrize("patience", [0.3, 0.5, 2.0])
def test_patience_scales_the_rewrite_cost_the_rent_must_reach(patience: float) -> None:
    terms = CacheTerms.of(CACHE_MODELS["gemini"], GEMINI_PRICES, scale=1.1396)
    history = _listing_history(40)
    actual, expected = _first_epoch(terms, history, patience=patience)
    assert actual == expected is not None
    default = _first_epoch(terms, history)[0]
    assert default is not None
    assert (actual < default) if patience < 1 else (actual > default)


def test_patience_must_be_positive() -> None:
    for bad in (0, -1.0, True, "1"):
        with pytest.raises(ConfigurationError, match="patience"):
            Age(patience=bad)  # type: ignore[arg-type]


def test_dearer_reads_age_sooner_and_explicit_caches_later() -> None:
    history = _listing_history(40)
    dear, cheap = (
        _first_epoch(CacheTerms(read=0.5), history)[0],
        _first_epoch(CacheTerms(read=0.05), history)[0],
    )
    implicit = _first_epoch(CacheTerms(read=0.1), history)[0]
    explicit = _first_epoch(CacheTerms(read=0.1, write=1.25, explicit=True), history)[0]
    assert None not in (dear, cheap, implicit, explicit)
    assert dear < implicit < cheap  # type: ignore[operator]
    assert implicit <= explicit  # type: ignore[operator]


# ----------------------------------------------------------------------------- compaction with aging
async def test_compaction_still_works_with_aging() -> None:
    history = story(30)
    policy = Policy("p", (Compact(at=0.5, keep=2), Age(window=2, min_chars=100)))
    async with ContextManager(policy, counter=COUNTER, context_window=4_000, background=False) as manager:
        prepared = await manager.prepare(history)
    assert prepared.compacted and manager.summary is not None
    validate_pairs(prepared.built.messages)
    assert prepared.prompt_tokens < 0.95 * 4_000
    assert dataclasses.replace(prepared.built.stats).summary_range == (1, 28)


# ----------------------------------------------------------------------------- live loop vs replay
TRACES = Path(__file__).resolve().parents[1] / "traces"


async def test_the_live_loop_and_the_replay_build_the_same_prompts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = load_runs([TRACES / "mini-swe-agent" / "matplotlib__matplotlib-26466.jsonl"]).runs[0]
    actions = [
        dataclasses.replace(m, iteration=0) for m in run.messages if m.role == "assistant" and m.tool_calls
    ]
    model = FunctionModel.scripted(
        [*actions, text("done")]
    )  # "function-model/gpt-4o": OpenAI rules, 4o prices
    agent = Agent(
        model,
        tools=recorded_tools(run, monkeypatch),
        context="tiered",
        limits=RunLimits(max_iterations=len(actions) + 1),
        trace_dir=tmp_path,
    )
    result = await agent.run(run.task)
    assert result.output == "done"
    traced = load_runs([result.trace_path], strict=True).runs[0]
    settings = ReplaySettings(cache_model="openai", price_model="gpt-4o")  # the live agent's terms
    replayed = [p async for p in replay_prompts(traced, PRESETS["tiered"], settings)]
    assert len(replayed) == len(model.requests) == len(actions) + 1
    for request, prepared in zip(model.requests, replayed, strict=True):
        assert request.messages == prepared.messages, f"call {request.index + 1} differs"
        assert request.tools == [dict(t) for t in prepared.tools]
    shown = ["\n".join(m["content"] or "" for m in r.messages) for r in model.requests]
    assert any("[older output:" in s for s in shown) and "[Iterations 1-" in shown[-1]  # aged, condensed


async def test_resume_rebuilds_the_schedule_from_the_trace(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run = load_runs([TRACES / "mini-swe-agent" / "matplotlib__matplotlib-26466.jsonl"]).runs[0]
    actions = [
        dataclasses.replace(m, iteration=0) for m in run.messages if m.role == "assistant" and m.tool_calls
    ]
    agent = Agent(
        FunctionModel.scripted(actions),
        tools=recorded_tools(run, monkeypatch),
        context="tiered",
        limits=RunLimits(max_iterations=40),  # stops before the script ends: a run to resume
        trace_dir=tmp_path,
    )
    result = await agent.run(run.task)
    live = _Run(agent, run.task, ResumeState.load(result.trace_path, None))
    live.restore(live.resumed)  # type: ignore[arg-type]
    schedule = next(r for r in live.manager.runtimes if isinstance(r, AgeRuntime)).state.schedule
    assert len(schedule.epochs) >= 2
    requests = [e for e in read_trace(result.trace_path) if isinstance(e, ModelRequest)]
    records = [ContextRecord.from_dict(r.context).aging for r in requests]
    decided = [Epoch(*a.epoch) for a in records if a is not None and a.epoch is not None]
    assert schedule.epochs == tuple(decided)
    assert records[-1] is not None and schedule.through == records[-1].through
    assert requests[-1].context["steps"]["age"]["state"]["through"] == schedule.through  # as written


def test_a_schedule_reaching_into_the_window_leaves_the_window_verbatim() -> None:
    # A schedule restored or written by hand may claim newer iterations than the run's aging state
    # would ever age (hypothesis found one): the last ``window`` iterations stay verbatim anyway.
    history = _listing_history(6)
    schedule = AgingSchedule((Epoch(at=6, through=6, condensed=6),))
    policy = Policy("p", (Age(window=2, condense_after=3),))
    built = build_prompt(history, policy, summary=None, counter=TokenCounter(), schedule=schedule)
    validate_pairs(built.messages)
    newest = [m for m in history if m.iteration >= 5]
    assert [m for m in built.messages if m.iteration >= 5] == newest
    assert set(built.stats.shown_iterations) >= {5, 6}
    assert AgingSchedule((Epoch(6, 6, 6),)).upto(4) == AgingSchedule((Epoch(6, 4, 4),))
    assert schedule.upto(6) is schedule


async def test_the_memoized_aged_part_equals_a_render_from_scratch() -> None:
    # Between epochs the run's Age runtime reuses the aged part, and at an epoch renders only what
    # it added (aging/_step.py, so a prompt does not cost more as the history grows): the same
    # prompts as the step alone rendering every aged iteration again (build_prompt starts fresh
    # runtimes: nothing is shared with the manager's).
    run = load_runs([TRACES / "mini-swe-agent" / "matplotlib__matplotlib-26466.jsonl"]).runs[0]
    counter = TokenCounter()
    policy = PRESETS["tiered"]
    manager = ContextManager(policy, counter=counter, background=False, model="gpt-4o")
    history: list[Message] = [m for m in run.messages if m.iteration == 0]
    compared = 0
    async with manager:
        for k in sorted({m.iteration for m in run.messages if m.iteration > 0}):
            prepared = await manager.prepare(history)
            schedule = manager.schedule
            if schedule is not None and schedule.epochs:
                fresh = build_prompt(history, policy, summary=None, counter=counter, schedule=schedule)
                assert prepared.built.messages == fresh.messages, f"iteration {k}"
                compared += 1
            history += [m for m in run.messages if m.iteration == k]
    assert compared >= 3 and len(manager.schedule.epochs) >= 3  # type: ignore[union-attr]


def test_condensed_lines_keep_the_agents_own_lines_naming_what_it_used_afterwards() -> None:
    thought = "THOUGHT: Look at the config.\nIt reads self.connection.settings_dict.get here.\nNothing else."
    filler = "\\n".join(["# a comment line to fill the command past what its line shows"] * 3)
    script = f"cat <<'EOF' > probe.py\\nimport os\\n{filler}\\nprobe_marker = os.environ.get(1)\\nEOF"
    first = (1, tuple(step(1, thought, script, "<returncode>0</returncode>")))
    later = (Message("assistant", "Call self.connection.settings_dict.get again.", iteration=2),)
    lines = condensed_note([first], retrieval=False, later=later, own=2).text.splitlines()
    assert lines[2:] == [
        "    <returncode>0</returncode>",  # a short output: kept whole
        "    It reads self.connection.settings_dict.get here.",  # named afterwards: first
        "    probe_marker = os.environ.get(1)",  # named nowhere after it
    ]
    assert condensed_note([first], retrieval=False, later=later).text.count("\n") == 2  # own=0: none
    one = condensed_note([first], retrieval=False, later=later, own=1).text.splitlines()
    assert one[3:] == ["    It reads self.connection.settings_dict.get here."]


def test_the_agents_own_lines_leave_the_choice_of_output_lines_alone() -> None:
    """An own line of a newer iteration naming what an older output line names does not displace
    that output line (only an output shows the line an output held)."""
    older = _one_output(1, "\n".join(["value_x = 7", *(["plain words"] * 6)]))
    newer = (2, tuple(step(2, "Check.\nSo value_x is wrong.", "ls", "\n".join(["plain"] * 7))))
    later = (Message("assistant", "Fix value_x.", iteration=3),)
    with_own = condensed_note([older, newer], retrieval=False, later=later, referred=2, own=2).text
    without = condensed_note([older, newer], retrieval=False, later=later, referred=2).text
    assert "    value_x = 7" in with_own and "    value_x = 7" in without
    assert "    So value_x is wrong." in with_own


def test_age_keep_own_puts_the_agents_own_lines_in_its_condensed_notes() -> None:
    thought = "Look at the config.\nIt reads self.connection.settings_dict.get here."
    groups = {
        0: (SYSTEM, TASK),
        1: tuple(step(1, thought, "ls", "a.py")),
        2: tuple(step(2, "Done.", "ls", "b")),
    }
    quoted = "    It reads self.connection.settings_dict.get here."
    with_own = Age(keep_own=2).note(groups, (1, 1, 2), retrieval=False)
    assert with_own is not None and quoted in with_own.text.splitlines()
    plain = Age(keep_own=0).note(groups, (1, 1, 2), retrieval=False)
    assert plain is not None and quoted not in plain.text.splitlines()
    with pytest.raises(ConfigurationError):
        Age(keep_own=-1)
