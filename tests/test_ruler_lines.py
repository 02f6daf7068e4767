"""The line ruler and the own-writing ruler (bench/_terms.py, bench/_evidence.py) on hand-built runs."""

from __future__ import annotations

import orjson
import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._evidence import EvidenceIndex, Needed, PromptView, TextMemo
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import replay_run, resolve_policies
from tiered_agent.bench._terms import (
    action_text,
    is_specific,
    normalize,
    occurrences,
    occurrences_backward,
    specific_terms,
)

COUNTER = IdCounter("o200k_base")


# --------------------------------------------------------------------------- terms
@pytest.mark.parametrize(
    ("term", "specific"),
    [
        ("405", True),
        ("HAT017", True),
        ("utils.py", True),
        ("TIME_ZONE", True),
        ("DataDocumenter", True),
        ("HTTPServer", True),
        ("2024-05-20", True),
        ("foo-bar2", True),
        ("localtime", False),  # a plain lowercase identifier reads like a word: the word ruler's
        ("Error", False),
        ("ERROR", False),
        ("read-only", False),
        ("v2", False),  # under 3 characters
        ("e.g", False),  # initials
        ("i.e", False),
        ("été", False),
        ("Ünïcode", False),
        ("naïveDatetime", True),
    ],
)
def test_specific_terms_are_names_and_values(term: str, specific: bool) -> None:
    assert is_specific(term) is specific


def test_terms_join_dots_slashes_and_dashes_only_between_word_characters() -> None:
    text = "see django/db/utils.py:405, --verbose and self.settings_dict.get('TIME_ZONE') ..."
    assert specific_terms(text) == {"django/db/utils.py", "405", "self.settings_dict.get", "TIME_ZONE"}


def test_a_term_occurs_only_between_non_word_characters() -> None:
    text = "django/db/utils.py base.py:405 14059 x405y 405"
    assert list(occurrences(text, "utils.py")) == [10]
    assert list(occurrences(text, "405")) == [27, len(text) - 3]
    assert list(occurrences_backward(text, "405")) == [len(text) - 3, 27]
    assert list(occurrences("aaaa", "aa")) == [] == list(occurrences_backward("aaaa", "aa"))


def test_normalize_unifies_line_breaks_and_whitespace() -> None:
    assert normalize("  a\t\tb  \r\n   c\rd\u2028e  ") == "a b\nc\nd\ne"
    assert normalize('print("\\nAll done\\t!")') == 'print(" All done !")'  # escapes written in code


def test_escapes_written_in_code_separate_terms() -> None:
    assert specific_terms('print("\\nTest_2 passed")\nx = "a\\tb_c"') == {"Test_2", "b_c"}


def test_an_action_s_text_decodes_its_arguments() -> None:
    command = "cat <<'EOF' > check_tz.py\ndef check_tz(dt):\n    return dt\nEOF"
    message = Message(
        "assistant",
        "Write it.",
        (
            ToolCall("c1", "bash", orjson.dumps({"command": command, "timeout": 30}).decode()),
            ToolCall("c2", "raw", "not json {"),
        ),
    )
    assert action_text(message) == f"Write it.\nbash\n{command}\n30\nraw\nnot json {{"


# --------------------------------------------------------------------------- hand-built runs
GREP = 'grep -n -A3 "class Data" autodoc/__init__.py'
SED = "sed -n '1909,1912p' autodoc/__init__.py"
OUTPUT = "\n".join(
    [
        "1909:class DataDocumenter(ModuleLevelDocumenter):",
        '1910:    """Specialized Documenter subclass for data items."""',
        "1911:    objtype = 'data'",
        "1912:    member_order = 40",
    ]
)


def _call(call_id: str, command: str) -> tuple[ToolCall, ...]:
    return (ToolCall(call_id, "bash", orjson.dumps({"command": command}).decode()),)


def _run() -> RecordedRun:
    """Iteration 1 finds DataDocumenter at line 1909; iteration 2 writes a script; iteration 3 needs both."""
    script = "cat <<'EOF' > probe_docs.py\nfrom autodoc import DataDocumenter\nprobe_marker = 7731\nEOF"
    messages = [
        Message("system", "You are a shell agent."),
        Message("user", "Fix the autodoc bug."),
        Message("assistant", "THOUGHT: look.", _call("c1", GREP), iteration=1),
        Message("tool", OUTPUT, tool_call_id="c1", name="bash", iteration=1),
        Message("assistant", "THOUGHT: probe.", _call("c2", script), iteration=2),
        Message("tool", "", tool_call_id="c2", name="bash", iteration=2),
        Message(
            "assistant",
            "THOUGHT: DataDocumenter is around line 1909; rerun probe_docs.py with probe_marker.",
            _call("c3", f"{SED} && python probe_docs.py"),
            iteration=3,
        ),
        Message("tool", "ok", tool_call_id="c3", name="bash", iteration=3),
    ]
    return RecordedRun("hand", "test", "tiered-agent", tuple(messages))


RUN = _run()
INDEX = EvidenceIndex(RUN)


def test_needed_strings_split_by_who_wrote_them_first() -> None:
    assert INDEX.needed(3) == Needed(
        observed=("1909", "DataDocumenter"),  # "1912p" (sed's range end) is a term never observed
        own=("autodoc/__init__.py", "probe_docs.py", "probe_marker"),  # the path: the agent typed it first
    )
    assert INDEX.needed(1) == Needed()  # nothing observed before the first action
    assert INDEX.needed(2) == Needed(observed=("DataDocumenter",))  # the rest is new in this action
    assert INDEX.needed(9) == Needed()  # no such action


def _shown(prompt: list[Message], term: str, *, observed: bool = True) -> bool:
    return INDEX.shown(term, PromptView(prompt, TextMemo()), INDEX.cutoff(3), observed=observed)


def test_the_line_that_held_a_string_shows_it() -> None:
    full = list(RUN.messages[:6])
    assert _shown(full, "1909") and _shown(full, "DataDocumenter")
    # re-indented and re-spaced, the same line (a condensed note keeps it so)
    note = Message(
        "user",
        "1. look → bash: ... → exit 0, 4 lines\n    1909:class   DataDocumenter(ModuleLevelDocumenter):",
    )
    assert _shown([*RUN.messages[:2], note], "1909")
    # a long line cut after the string, the cut marked: the string with its context before it
    cut = Message("tool", "1909:class DataDocumenter(ModuleLev...", tool_call_id="c1")
    assert _shown([*RUN.messages[:2], cut], "DataDocumenter")


def test_a_mention_in_a_command_a_summary_line_or_the_agent_s_text_is_not_the_line() -> None:
    aged_output = Message("tool", "[older output: 0 of 4 lines shown]", tool_call_id="c1")
    summary = Message("user", f"1. look → bash: {SED} → exit 0, 4 lines")
    agent = Message(
        "assistant", "The class DataDocumenter is at 1909:class DataDocumenter(Module", iteration=2
    )
    prompt = [*RUN.messages[:2], RUN.messages[2], aged_output, summary, agent]
    assert not _shown(prompt, "1909")
    assert not _shown(prompt, "DataDocumenter")
    # the own-writing ruler reads every message, so the agent's quote of the line shows it there
    assert _shown(prompt, "DataDocumenter", observed=False)


def test_evidence_must_come_before_the_step() -> None:
    later = Message("tool", OUTPUT, tool_call_id="c9", iteration=3)
    run = RecordedRun("r", "t", "tiered-agent", (*RUN.messages[:2], RUN.messages[2], later))
    index = EvidenceIndex(run)
    prompt = PromptView([*run.messages], TextMemo())
    assert index.shown("1909", prompt, index.cutoff(3), observed=True) is False
    assert index.shown("1909", prompt, index.cutoff(4), observed=True) is True


def test_the_agent_s_own_writing_is_shown_with_its_line_only() -> None:
    full = list(RUN.messages[:6])
    assert _shown(full, "probe_marker", observed=False)
    cut_args = Message(
        "assistant",
        "THOUGHT: probe.",
        (ToolCall("c2", "bash", '{"command": "cat <<\'EOF\' > probe_docs.py\\nfrom autodoc [... cut]"}'),),
        iteration=2,
    )
    prompt = [*RUN.messages[:4], cut_args, RUN.messages[5]]
    assert _shown(prompt, "probe_docs.py", observed=False)  # its line survived the cut
    assert not _shown(prompt, "probe_marker", observed=False)  # its line did not
    # a one-line rendering of the command (a condensed note) still holds the heredoc's first line
    note = Message(
        "user", "2. probe. → bash: cat <<'EOF' > probe_docs.py from autodoc import Dat... → exit 0"
    )
    assert _shown([*RUN.messages[:4], note], "probe_docs.py", observed=False)


@pytest.mark.parametrize(
    ("output", "shown_in", "not_shown_in"),
    [
        ("4417", "rows:\n4417\n", "1. wc -l data.csv → 4417 rows"),  # the line is the string alone
        (
            "total: 4417",
            "[older output]\ntotal: 4417",
            "1. wc -l data.csv → total: 4417 rows",
        ),  # short context
    ],
)
def test_a_short_line_is_shown_only_as_a_line(output: str, shown_in: str, not_shown_in: str) -> None:
    messages = (
        Message("system", "s"),
        Message("user", "task"),
        Message("assistant", None, _call("c1", "wc -l data.csv"), iteration=1),
        Message("tool", output, tool_call_id="c1", iteration=1),
        Message("assistant", "There are 4417 rows.", _call("c2", "echo 4417"), iteration=2),
    )
    index = EvidenceIndex(RecordedRun("r", "t", "tiered-agent", messages))
    assert index.needed(2) == Needed(observed=("4417",))
    cutoff = index.cutoff(2)
    assert index.shown("4417", PromptView([Message("user", shown_in)], TextMemo()), cutoff, observed=True)
    assert not index.shown(
        "4417", PromptView([Message("user", not_shown_in)], TextMemo()), cutoff, observed=True
    )


def test_a_json_field_is_shown_by_its_key_and_value() -> None:
    reservation = {"reservation_id": "ZFA04Y", "flights": [{"flight_number": "HAT017", "origin": "JFK"}]}
    body = orjson.dumps(reservation).decode() + " " * 10
    messages = (
        Message("system", "s"),
        Message("user", "Change my flight."),
        Message("assistant", None, (ToolCall("c1", "get_reservation", '{"id": "ZFA04Y"}'),), iteration=1),
        Message("tool", body, tool_call_id="c1", iteration=1),
        Message("assistant", None, (ToolCall("c2", "cancel", '{"flight": "HAT017"}'),), iteration=2),
    )
    index = EvidenceIndex(RecordedRun("r", "t", "tiered-agent", messages))
    assert index.needed(2) == Needed(observed=("HAT017",))
    cutoff = index.cutoff(2)

    def shown(text: str) -> bool:
        return index.shown("HAT017", PromptView([Message("tool", text)], TextMemo()), cutoff, observed=True)

    assert shown("[older output]\nflights[0].flight_number: HAT017\nflights[0].origin: JFK")
    assert shown('{"flight_number": "HAT017"}')
    assert not shown("flights[0].origin: HAT017")  # another key
    assert not shown("booked HAT017 earlier")


def test_the_lines_of_a_json_wrapped_output_are_its_lines() -> None:
    """Codex CLI (2025) wrapped shell output in JSON: ``{"output": "...\\n...", "metadata": ...}``."""
    wrapped = orjson.dumps(
        {"output": "a.py\n1909: class DataDocumenter(Base):\nok", "metadata": {"exit_code": 0}}
    )
    messages = (
        Message("system", "s"),
        Message("user", "task"),
        Message("assistant", None, _call("c1", "grep -n class a.py"), iteration=1),
        Message("tool", wrapped.decode(), tool_call_id="c1", iteration=1),
        Message("assistant", "DataDocumenter it is.", _call("c2", "true"), iteration=2),
    )
    index = EvidenceIndex(RecordedRun("r", "t", "codex", messages))
    assert index.needed(2) == Needed(observed=("DataDocumenter",))
    decoded = [Message("tool", "[older output]\noutput: a.py\n1909: class DataDocumenter(Base):\n[...]")]
    assert index.shown("DataDocumenter", PromptView(decoded, TextMemo()), index.cutoff(2), observed=True)


@pytest.mark.anyio
async def test_the_replay_reports_the_line_and_own_rulers() -> None:
    policies = resolve_policies(["full", "masking"])
    replay = await replay_run(RUN, policies, counter=COUNTER)
    full, masked = replay.policies["full"].steps[2], replay.policies["masking"].steps[2]
    assert (full.line_needed, full.line_missed, full.own_needed, full.own_missed) == (2, (), 3, ())
    assert (masked.line_needed, masked.own_needed) == (2, 3)
    assert masked.line_missed == () and masked.own_missed == ()  # masking keeps the last 10 outputs


@pytest.mark.anyio
async def test_placeholders_hide_the_line_but_not_the_agent_s_mentions() -> None:
    filler = [
        m
        for k in range(4, 16)
        for m in (
            Message("assistant", None, _call(f"f{k}", f"echo {k}"), iteration=k),
            Message("tool", f"step {k}", tool_call_id=f"f{k}", iteration=k),
        )
    ]
    needs = Message("assistant", "Back to DataDocumenter at 1909.", _call("c16", SED), iteration=16)
    run = RecordedRun("long", "test", "tiered-agent", (*RUN.messages[:6], *filler, needs))
    replay = await replay_run(run, resolve_policies(["full", "masking"]), counter=COUNTER)
    masked = replay.policies["masking"].steps[-1]
    assert masked.line_needed == 2
    assert masked.line_missed == ("1909", "DataDocumenter")  # the output is a placeholder by now
    assert masked.missed == ("1909",)  # the salient ruler finds DataDocumenter in the agent's script
    assert masked.own_needed == 1 and masked.own_missed == ()
    assert replay.policies["full"].steps[-1].line_missed == ()


def test_recorded_messages_are_found_by_identity_and_never_searched() -> None:
    """A prompt's recorded messages (the run's own objects) show a term when they are one of its
    sources, so only the messages a policy wrote are searched: the same answers as a search of all."""
    memo = TextMemo(frozenset(map(id, RUN.messages)))
    aged = Message("tool", "[older output: 0 of 4 lines shown]", tool_call_id="c1")
    note = Message("user", "1. look → bash\n    1909:class   DataDocumenter(ModuleLevelDocumenter):")
    copy = Message("tool", OUTPUT, tool_call_id="c1")  # equal to the recorded output, another object
    prompts = [
        list(RUN.messages[:6]),
        [*RUN.messages[:3], aged, *RUN.messages[4:6]],
        [*RUN.messages[:3], aged, note],
        [*RUN.messages[:3], copy],
        [*RUN.messages[:2], note, RUN.messages[4]],
    ]
    answers = []
    for prompt in prompts:
        for term in ("1909", "DataDocumenter", "probe_docs.py", "probe_marker"):
            for observed in (True, False):
                fast = INDEX.shown(term, PromptView(prompt, memo), INDEX.cutoff(3), observed=observed)
                slow = INDEX.shown(term, PromptView(prompt, TextMemo()), INDEX.cutoff(3), observed=observed)
                assert fast == slow, (prompt, term, observed)
                answers.append(fast)
    assert True in answers and False in answers
    view = PromptView([*RUN.messages[:3], aged, note], memo)
    assert view.everything() == [f"\n{normalize(note.text)}\n", f"\n{normalize(aged.text)}\n"]
