"""Issue 18 candidates (off by default): a condensed note leaves out the kept lines that say nothing
beyond markup or the exit code its line states (``Age(bare_lines=True)``) and the lines kept
verbatim under a newer iteration of the same note (``Age(unique_lines=True)``): which lines go,
which stay, the memoized path equal to the plain one, the knobs' validation and JSON."""

from __future__ import annotations

import orjson
import pytest
from condensed_notes import kept_lines

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent.context.aging._condense import Terse, condensed_note, is_bare
from tiered_agent.context.aging._forms import FormsMemo, condensed
from tiered_agent.context.aging._step import Age


def _run(k: int, command: str, output: str, text: str = "Run it.") -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": command}).decode())
    return k, (
        Message("assistant", text, (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def _wrapped(code: int, *lines: str) -> str:
    """An output as mini-swe-agent wraps it."""
    return "\n".join([f"<returncode>{code}</returncode>", "<output>", *lines, "</output>"])


@pytest.mark.parametrize(
    "line",
    [
        "<returncode>0</returncode>",
        "<output>",
        "</output>",
        "  ]);",
        "}",
        "----",
        "Exit code: 1",
        "exit status 0.",
    ],
)
def test_lines_of_nothing_but_markup_or_an_exit_code_are_bare(line: str) -> None:
    assert is_bare(line)


@pytest.mark.parametrize(
    "line",
    [
        "Updated 1 path from the index",
        "0",
        "42",
        "x",
        "<b>hi</b>",
        "[1]+ Done",
        "<returncode>1</returncode> boom",
    ],
)
def test_lines_saying_anything_else_are_not(line: str) -> None:
    assert not is_bare(line)


def test_bare_lines_leave_the_wrappers_of_short_outputs_out() -> None:
    chunk = [
        _run(1, "git checkout a.py", _wrapped(0, "Updated 1 path from the index")),
        _run(2, "sed -i 's/a/b/' a.py", _wrapped(0)),
    ]
    plain = condensed_note(chunk, retrieval=False, novel=5)
    assert kept_lines(plain, 1) == [
        "<returncode>0</returncode>",
        "<output>",
        "Updated 1 path from the index",
        "</output>",
    ]
    assert kept_lines(plain, 2) == ["<returncode>0</returncode>", "<output>", "</output>"]
    bare = condensed_note(chunk, retrieval=False, novel=5, terse=Terse(bare=True))
    assert kept_lines(bare, 1) == ["Updated 1 path from the index"]
    assert kept_lines(bare, 2) == []
    # the iteration's line still says what came back
    assert "1. Run it. → bash: git checkout a.py → exit 0, 4 lines" in bare.text.splitlines()
    wrappers = len("\n    <returncode>0</returncode>\n    <output>\n    </output>")
    assert len(bare.text) == len(plain.text) - 2 * wrappers


def test_unique_lines_keep_a_repeated_line_under_the_newest_iteration_only() -> None:
    chunk = [
        _run(1, "git checkout a.py", "Updated 1 path from the index"),
        _run(2, "python x.py", "ok"),
        _run(3, "git checkout a.py", "Updated 1 path from the index"),
    ]
    plain = condensed_note(chunk, retrieval=False, novel=5)
    updated = ["Updated 1 path from the index"]
    assert [kept_lines(plain, k) for k in (1, 2, 3)] == [updated, ["ok"], updated]
    unique = condensed_note(chunk, retrieval=False, novel=5, terse=Terse(repeats=True))
    assert [kept_lines(unique, k) for k in (1, 2, 3)] == [[], ["ok"], updated]


def test_the_memoized_note_is_the_plain_one() -> None:
    chunk = [
        _run(1, "git checkout a.py", _wrapped(0, "Updated 1 path from the index")),
        _run(2, "git checkout a.py", _wrapped(0, "Updated 1 path from the index")),
    ]
    terse = Terse(bare=True, repeats=True)
    memoized = condensed(chunk, retrieval=False, referred=8, novel=5, memo=FormsMemo(), terse=terse)
    plain = condensed(chunk, retrieval=False, referred=8, novel=5, terse=terse)
    assert memoized.text == plain.text
    assert [kept_lines(plain, k) for k in (1, 2)] == [[], ["Updated 1 path from the index"]]


def test_the_knobs_are_validated_and_round_trip() -> None:
    with pytest.raises(ConfigurationError, match="bare_lines"):
        Age(bare_lines=1)  # type: ignore[arg-type]
    with pytest.raises(ConfigurationError, match="unique_lines"):
        Age(unique_lines="yes")  # type: ignore[arg-type]
    step = Age(bare_lines=True, unique_lines=True)
    assert step.terse() == Terse(True, True, across=True, spare=True) == Age().terse()  # the default
    assert Age(bare_lines=False, unique_lines=False, across_notes=False).terse() == Terse()
    policy = Policy("p", [step])
    assert Policy.from_dict(policy.to_dict()).steps == (step,)
