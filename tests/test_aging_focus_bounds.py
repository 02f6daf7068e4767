"""``Age(focus_newest=True)`` and ``Age(focus_chars=N)``: the bounds of ``focus_reads`` (round 25).

``focus_reads=K`` keeps whole every read of a file the agent's last K iterations name. With
``focus_newest`` a read whose lines a newer read of the same file shows whole again (in the
verbatim window, or kept whole itself) ages as without the rule; with ``focus_chars`` the reads
one epoch keeps whole add up to at most N characters, the newest first. Both off by default."""

from __future__ import annotations

import dataclasses

import orjson
import pytest

from tiered_agent import Message, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.aging._forms import AgedStyle, age_batch
from tiered_agent.context.aging._reads import Focus, file_read, read_lines
from tiered_agent.context.steps import Age, step_from_dict

SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix the loader.")
PATH = "src/pkg/loader.py"


def _source(first: int, last: int) -> str:
    """A numbered read of lines first..last naming nothing new after the first few: aged, it keeps a few."""
    return "\n".join(f"   {n}\t    value = compute(value)  # step" for n in range(first, last + 1))


def _read(first: int, last: int) -> tuple[str, str]:
    return f"nl -ba {PATH} | sed -n '{first},{last}p'", _source(first, last)


def _iteration(k: int, reasoning: str, command: str, output: str) -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": command}).decode())
    return k, (
        Message("assistant", reasoning, (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def _forms(reads: list[tuple[str, str]], last: int, **style: object) -> list[str]:
    """The outputs of iterations 1..``last`` aged at an epoch whose batch holds ``reads`` (one an
    iteration, from 1) and then an iteration that edits the file (the agent still works on it)."""
    batch = [_iteration(k, "Read it.", cmd, out) for k, (cmd, out) in enumerate(reads, start=1)]
    batch.append(_iteration(len(reads) + 1, "Edit loader.py.", f"sed -i '430s/step/done/' {PATH}", "ok"))
    aged = AgedStyle(max_lines=10, head_lines=2, min_chars=100, shown_by="outputs", focus=3, **style)  # type: ignore[arg-type]
    forms = age_batch(aged, (SYSTEM, TASK), batch, 1, last)
    return [forms[k][1].text for k in range(1, last + 1)]


def test_a_read_a_newer_read_of_the_file_shows_again_ages_with_focus_newest() -> None:
    older, newer = _read(400, 459), _read(390, 470)  # the newer one holds every line of the older
    assert _forms([older, newer], 1) == [older[1]]  # focus_reads alone: both whole
    (aged,) = _forms([older, newer], 1, focus_newest=True)
    assert aged.startswith("[older output: ")
    assert "   430\t" not in aged
    # both aged at one epoch: the newer is kept whole, so the older one is not
    assert _forms([older, newer], 2, focus_newest=True)[1] == newer[1]
    assert _forms([older, newer], 2, focus_newest=True)[0].startswith("[older output: ")


def test_a_newer_read_of_other_lines_or_another_file_leaves_the_read_whole() -> None:
    older = _read(400, 459)
    assert _forms([older, _read(430, 470)], 1, focus_newest=True) == [older[1]]  # lines 400-429 only here
    other = ("nl -ba src/pkg/other.py | sed -n '390,470p'", _source(390, 470))
    assert _forms([older, other], 1, focus_newest=True) == [older[1]]
    grep = (f"grep -n compute {PATH}", _source(390, 470))  # a grep places no lines: never covers
    assert _forms([older, grep], 1, focus_newest=True) == [older[1]]


def test_focus_chars_keeps_the_newest_reads_that_fit() -> None:
    reads = [_read(100, 159), _read(400, 459)]
    size = len(reads[1][1])
    assert _forms(reads, 2) == [reads[0][1], reads[1][1]]
    older, newer = _forms(reads, 2, focus_chars=size + 10)  # room for one: the newest
    assert newer == reads[1][1]
    assert older.startswith("[older output: ")
    assert _forms(reads, 2, focus_chars=2 * size + 10) == [reads[0][1], reads[1][1]]
    assert all(f.startswith("[older output: ") for f in _forms(reads, 2, focus_chars=size - 1))


def test_read_lines_places_a_read_by_its_start_and_length() -> None:
    read = file_read(ToolCall("c", "bash", orjson.dumps({"command": _read(400, 459)[0]}).decode()))
    assert read is not None
    assert read_lines(read, _source(400, 459)) == (400, 459)
    assert read_lines(read, _source(400, 459) + "\n") == (400, 459)
    grep = file_read(ToolCall("c", "bash", orjson.dumps({"command": f"grep -n x {PATH}"}).decode()))
    assert grep is not None and read_lines(grep, "12: x") is None
    assert not Focus(newest=True, chars=10).keeps(None, "text")  # no call, no names: never kept


def test_off_by_default_validated_and_round_trips() -> None:
    assert (Age().focus_newest, Age().focus_chars, Age().focus_near) == (False, 0, 0)
    age = next(s for s in PRESETS["tiered"].steps if isinstance(s, Age))
    style = age.style(True)
    assert (style.focus, style.focus_newest, style.focus_chars) == (age.focus_reads, False, 0)
    bounded = Age(focus_reads=3, focus_newest=True, focus_chars=8000)
    assert (bounded.style(True).focus_newest, bounded.style(True).focus_chars) == (True, 8000)
    assert step_from_dict(bounded.to_dict()) == bounded
    with pytest.raises(ConfigurationError, match=r"Age\.focus_chars must be >= 0"):
        Age(focus_chars=-1)
    with pytest.raises(ConfigurationError, match=r"Age\.focus_newest must be true or false"):
        Age(focus_newest="yes")  # type: ignore[arg-type]


def _kept(form: str) -> list[str]:
    """The lines an aged form shows (no header, no gaps)."""
    return [line for line in form.splitlines()[1:] if not line.startswith("[...")]


def test_focus_near_adds_the_lines_near_what_the_agent_named_since_to_the_aged_form() -> None:
    lines = [f"   {n}\t    total_{n} = compute(total_{n - 1})" for n in range(400, 460)]
    read = (f"nl -ba {PATH} | sed -n '400,459p'", "\n".join(lines))
    batch = [_iteration(1, "Read it.", *read), _iteration(2, "Fix total_430 in loader.py.", "ls", "ok")]
    style = AgedStyle(max_lines=10, head_lines=2, min_chars=100, shown_by="outputs", focus=3, focus_near=3)
    near = age_batch(style, (SYSTEM, TASK), batch, 1, 1)[1][1].text
    aged = age_batch(dataclasses.replace(style, focus=0), (SYSTEM, TASK), batch, 1, 1)[1][1].text
    assert near.startswith("[older output: ") and aged.startswith("[older output: ")
    assert set(_kept(aged)) < set(_kept(near))  # the aged form's lines, and more
    # lines 427-434 (430 and 431 name total_430), each whole, which the aged form left out
    assert set(lines[27:35]) <= set(_kept(near))
    assert not set(lines[27:35]) <= set(_kept(aged))
    assert set(_kept(near)) - set(_kept(aged)) <= set(lines[27:35])
    whole = dataclasses.replace(style, focus_near=0)
    assert age_batch(whole, (SYSTEM, TASK), batch, 1, 1)[1][1].text == read[1]
    assert Age(focus_near=5).style(True).focus_near == 5
    with pytest.raises(ConfigurationError, match=r"Age\.focus_near must be >= 0"):
        Age(focus_near=-1)


def test_focus_near_and_newest_read_a_json_wrapped_output_by_its_lines() -> None:
    """Codex wraps a read's output in JSON (one long line): its text's lines count, not the one line."""
    lines = [f"    total_{n} = compute(total_{n - 1})" for n in range(1, 61)]
    wrapped = orjson.dumps({"output": "\n".join(lines), "metadata": {"exit_code": 0}}).decode()
    read = (f"sed -n '1,60p' {PATH}", wrapped)
    batch = [_iteration(1, "Read it.", *read), _iteration(2, "Fix total_30 in loader.py.", "ls", "ok")]
    style = AgedStyle(max_lines=10, head_lines=2, min_chars=100, shown_by="outputs", focus=3, focus_near=2)
    near = age_batch(style, (SYSTEM, TASK), batch, 1, 1)[1][1].text
    aged = age_batch(dataclasses.replace(style, focus=0), (SYSTEM, TASK), batch, 1, 1)[1][1].text
    assert set(lines[27:33]) <= set(_kept(near))  # total_30's lines and 2 on each side
    assert set(_kept(near)) - set(_kept(aged)) <= set(lines[27:33])
    assert not set(lines[27:33]) <= set(_kept(aged))
    found = file_read(ToolCall("c", "bash", orjson.dumps({"command": read[0]}).decode()))
    assert found is not None and read_lines(found, wrapped) == (1, 61)  # 60 lines and exit_code's
