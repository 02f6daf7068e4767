"""A path named relative is the file named absolute (issue 18): the aging's references match a path
that ends, at a ``/``, with a path the agent named later (and the reverse), so a condensed note keeps
the output line that showed ``/work/repo/specs/001/tasks.md`` when the agent later writes
``specs/001/tasks.md``; the memoized note equals the plain one; a bare file name is not a path."""

from __future__ import annotations

import orjson
from condensed_notes import kept_lines

from tiered_agent import Message, ToolCall
from tiered_agent.context.aging._condense import condensed_note, faded_note
from tiered_agent.context.aging._forms import AgedStyle, FormsMemo, age_batch, condensed
from tiered_agent.context.aging._refs import NamedPaths, path_tails, tail_index

ABSOLUTE = "/work/repo/specs/001/tasks.md"
RELATIVE = "specs/001/tasks.md"


def _shell(k: int, command: str, output: str) -> tuple[int, tuple[Message, ...]]:
    call = ToolCall(f"call_{k}", "bash", orjson.dumps({"command": command}).decode())
    return k, (
        Message("assistant", f"Step {k}.", (call,), iteration=k),
        Message("tool", output, tool_call_id=f"call_{k}", name="bash", iteration=k),
    )


def _output(path_line: str) -> str:
    """20 lines, each naming something of its own, the 13th the path line."""
    lines = [f"value_{i} = {i}" for i in range(20)]
    lines[12] = path_line
    return "\n".join(lines)


def _later(path: str) -> tuple[Message, ...]:
    return _shell(9, f"cat {path}", "done")[1]


def test_the_tails_of_a_path_are_its_ends_at_a_slash_of_two_parts_or_more() -> None:
    assert path_tails("work/repo/specs/001/tasks.md") == (
        "repo/specs/001/tasks.md",
        "specs/001/tasks.md",
        "001/tasks.md",
    )
    assert path_tails("src/app.py") == () and path_tails("tasks.md") == ()


def test_named_paths_find_the_same_file_named_otherwise() -> None:
    names = {"work/repo/specs/001/tasks.md", "specs/001/plan.md", "other/tasks.md", "tasks.md"}
    index = tail_index(names)
    assert NamedPaths(["specs/001/tasks.md"]).among(names, index) == {"work/repo/specs/001/tasks.md"}
    assert NamedPaths(["home/me/specs/001/plan.md"]).among(names, index) == {"specs/001/plan.md"}
    assert NamedPaths(["tasks.md", "parse_args"]).among(names, index) == set()  # a bare name is no path
    assert NamedPaths().among(names, index) == set()


def test_a_note_keeps_the_line_holding_the_absolute_path_named_relative_later() -> None:
    chunk = [_shell(1, "check-prerequisites.sh --json", _output(f'{{"TASKS": "{ABSOLUTE}"}}'))]
    note = condensed_note(chunk, retrieval=False, later=_later(RELATIVE), referred=8)
    assert kept_lines(note, 1) == [f'{{"TASKS": "{ABSOLUTE}"}}']
    unrelated = condensed_note(chunk, retrieval=False, later=_later("specs/002/tasks.md"), referred=8)
    assert kept_lines(unrelated, 1) == []
    memo = FormsMemo()
    memoized = condensed(chunk, retrieval=False, later=_later(RELATIVE), referred=8, memo=memo)
    assert memoized.text == note.text


def test_a_note_keeps_the_line_holding_the_relative_path_named_absolute_later() -> None:
    chunk = [_shell(1, "git status --short", _output(f" M {RELATIVE}"))]
    note = condensed_note(chunk, retrieval=False, later=_later(ABSOLUTE), referred=8)
    assert kept_lines(note, 1) == [f"M {RELATIVE}"]
    memo = FormsMemo()
    assert condensed(chunk, retrieval=False, later=_later(ABSOLUTE), referred=8, memo=memo).text == note.text


def test_within_the_chunk_a_newer_iteration_naming_the_file_relative_counts() -> None:
    chunk = [
        _shell(1, "check-prerequisites.sh --json", _output(ABSOLUTE)),
        _shell(2, f"sed -n '1,5p' {RELATIVE}", "ok"),
    ]
    note = condensed_note(chunk, retrieval=False, referred=8)
    assert kept_lines(note, 1) == [ABSOLUTE]
    memo = FormsMemo()
    assert condensed(chunk, retrieval=False, referred=8, memo=memo).text == note.text


def test_a_faded_note_keeps_a_line_whose_path_was_named_since_relative() -> None:
    note = Message("user", f"[Iterations 1-1, one line each]\n1. bash: x\n    {ABSOLUTE}\n    value_3 = 3")
    faded = faded_note(note, frozenset({RELATIVE}), keep=4)
    assert faded.message.text.splitlines()[2:] == [f"    {ABSOLUTE}"]


def test_an_aged_script_keeps_its_line_naming_a_file_the_agent_named_later_otherwise() -> None:
    """Past its head, text the agent wrote keeps the lines naming what its later messages name: a
    file named relative there is the one the script named absolute."""
    script = "import os\n" + "x = 1\n" * 40 + f"TASKS = '{ABSOLUTE}'\n" + "y = 2\n" * 40
    write = ToolCall(
        "call_1", "bash", orjson.dumps({"command": f"cat <<'EOF' > run.py\n{script}EOF"}).decode()
    )
    batch = [
        (
            1,
            (
                Message("assistant", "Write it.", (write,), iteration=1),
                Message("tool", "", tool_call_id="call_1"),
            ),
        ),
        (2, _shell(2, f"cat {RELATIVE}", "ok")[1]),
    ]
    system, task = Message("system", "You fix bugs."), Message("user", "Fix it.")
    forms = age_batch(AgedStyle(), (system, task), batch, 1, 1)
    shown = orjson.loads(forms[1][0].tool_calls[0].arguments)["command"]
    assert f"TASKS = '{ABSOLUTE}'\n" in shown and "chars cut]" in shown


def test_a_reference_of_thousands_of_parts_has_at_most_sixteen_part_ends() -> None:
    """Hostile text: one long line of ``ab/ab/...`` is one reference; its ends are the last 15
    (2 to 16 parts), not one per part, so they hold ~16 times its last parts, not its length squared."""
    tails = path_tails("ab/" * 300_000 + "c")
    assert len(tails) == 15
    assert tails[0] == "ab/" * 15 + "c" and tails[-1] == "ab/c"
    assert sum(map(len, tails)) == sum(3 * n + 1 for n in range(1, 16))
    parts = "/".join(f"d{i}" for i in range(20))
    assert path_tails(parts)[0] == "/".join(f"d{i}" for i in range(4, 20))  # 16 parts
