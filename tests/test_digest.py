"""The deterministic digest: content, bounds, determinism, and nothing after ``last``."""

from __future__ import annotations

import json

import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent.context._heuristics import error_line, looks_like_error, parse_exit_code
from tiered_agent.context._names import RETRIEVE_TOOL_NAME
from tiered_agent.context.pipeline._types import Summary
from tiered_agent.context.summary._digest import MAX_DIGEST_CHARS, digest
from tiered_agent.context.summary.memory._shell import shell_files


def call(call_id: str, name: str, **arguments: object) -> ToolCall:
    return ToolCall(call_id, name, json.dumps(arguments))


def turn(iteration: int, text: str | None, *calls_and_outputs: tuple[ToolCall, str]) -> list[Message]:
    """One iteration: the assistant message and the tool result of each call."""
    calls = tuple(c for c, _ in calls_and_outputs)
    messages = [Message("assistant", text, tool_calls=calls, iteration=iteration)]
    for c, output in calls_and_outputs:
        messages.append(Message("tool", output, tool_call_id=c.id, name=c.name, iteration=iteration))
    return messages


def history() -> list[Message]:
    """A run with our own workspace tools (read_file, run_shell, edit_file, write_file, bash)."""
    messages = [
        Message("system", "You are an agent.", iteration=0),
        Message("user", "Fix the failing test in calc.py and keep the API stable.", iteration=0),
    ]
    messages += turn(
        1,
        "Plan:\n- [ ] read calc.py\n- [ ] fix add()\n- [x] look around",
        (
            call("c1", "read_file", path="src/calc.py"),
            "src/calc.py (lines 1-4 of 4)\n1\tclass Calc:\n2\t    def add(self, a, b):\n"
            "3\t        return a - b\n4\t",
        ),
    )
    messages += turn(
        2,
        "Run the tests.",
        (
            call("c2", "run_shell", command="cd src && python -m pytest tests/test_calc.py -q"),
            "F\nFAILED tests/test_calc.py::test_add - AssertionError: assert -1 == 3\n"
            "1 failed in 0.02s\nexit code: 1",
        ),
    )
    messages += turn(
        3,
        "The issue is that `add` subtracts. I'll change `a - b` to `a + b` in src/calc.py.",
        (
            call("c3", "edit_file", path="src/calc.py", old="a - b", new="a + b"),
            "Replaced 1 occurrence(s) in src/calc.py (first at line 3)",
        ),
        (
            call("c4", "write_file", path="notes/CHANGES.md", content="fixed add"),
            "Created notes/CHANGES.md: 9 bytes, 1 lines",
        ),
    )
    messages += turn(
        4,
        "Re-run.\n- [x] read calc.py\n- [ ] run full suite",
        (call("c5", "run_shell", command="pytest -q"), "<returncode>0</returncode>\n3 passed in 0.05s"),
        (call("c6", "bash", command="grep -n add src/util.py | head -3 > /tmp/out.txt"), "ok"),
    )
    return messages


TEST_RUN = "cd src && python -m pytest tests/test_calc.py -q"
EXPECTED = f"""\
Working memory of iterations 1-4
Task: Fix the failing test in calc.py and keep the API stable.
Files:
- src/calc.py: edited it 3 (a - b → a + b); changed lines 3; read 1-4; defs Calc 1, Calc.add 2
- /tmp/out.txt: created it 4
- notes/CHANGES.md: created it 3 (written, 1 line)
- src/util.py: read
Tests:
- it 2 $ {TEST_RUN} -> exit 1: 1 failed; failing: tests/test_calc.py::test_add
- it 4 $ pytest -q -> exit 0: 3 passed
Decisions:
- it 3: The issue is that `add` subtracts. I'll change `a - b` to `a + b` in src/calc.py.
Todo (1 open, 1 done):
- [ ] run full suite"""


def test_digest_is_the_working_memory_of_the_range() -> None:
    summary = digest(None, history(), 1, 4)
    assert (summary.first, summary.last, summary.model) == (1, 4, None)
    assert summary.text == EXPECTED


def test_digest_is_deterministic() -> None:
    assert digest(None, history(), 1, 4).text == digest(None, list(history()), 1, 4).text


def test_digest_never_reads_after_last() -> None:
    messages = history() + turn(
        5,
        "SECRET_THOUGHT_5: I'll fix LATE.txt",
        (call("c9", "run_shell", command="cat LATE.txt"), "ValueError: SECRET_OUTPUT_5"),
    )
    for summary in (digest(None, messages, 1, 3), digest(digest(None, messages, 1, 2), messages, 3, 3)):
        for later in ("SECRET", "LATE.txt", "pytest -q ->", "src/util.py", "run full suite", "Re-run"):
            assert later not in summary.text
        assert summary.last == 3 and summary.text.startswith("Working memory of iterations 1-3\n")


def test_digest_rolls_over_previous_range() -> None:
    previous = digest(None, history(), 1, 2)
    rolled = digest(previous, history(), 3, 4)
    assert (rolled.first, rolled.last) == (1, 4)
    assert rolled.text == EXPECTED  # folding on from 1-2 is the same as reading 1-4 at once
    assert "Earlier" not in rolled.text


def test_digest_carries_previous_text_when_history_lacks_it() -> None:
    previous = Summary(
        1, 2, "Working memory of iterations 1-2\nTask: the old goal\nFiles:\n- OLD_FILE.py: read"
    )
    recent = [m for m in history() if m.iteration >= 3]
    rolled = digest(previous, recent, 3, 4)
    assert (rolled.first, rolled.last) == (1, 4)
    assert "Task: the old goal" in rolled.text
    assert "Earlier (iterations 1-2):" in rolled.text and "OLD_FILE.py" in rolled.text


def test_digest_is_bounded_and_keeps_the_most_recent_items() -> None:
    messages: list[Message] = [Message("user", "task " * 200, iteration=0)]
    for i in range(1, 121):
        messages += turn(
            i,
            f"thought {i}",
            (call(f"c{i}", "run_shell", command=f"python dir/job_{i:03d}.py"), f"Error: failure number {i}"),
        )
    text = digest(None, messages, 1, 120).text
    assert len(text) <= MAX_DIGEST_CHARS
    assert "python dir/job_120.py -> error: Error: failure number 120" in text
    assert "job_001.py" not in text and "failure number 1\n" not in text
    assert text.splitlines()[1].startswith("Task: task task")
    assert len(digest(None, messages, 1, 120, max_chars=600).text) <= 600


def test_digest_ignores_retrieved_old_content() -> None:
    messages = history() + turn(
        5, None, (call("r1", RETRIEVE_TOOL_NAME, iteration="2"), "ValueError: OLD\n- [ ] stale todo")
    )
    text = digest(None, messages, 5, 5).text
    assert "OLD" not in text and "stale todo" not in text and "Todo" not in text
    assert text.endswith("No activity recorded in this range.")


def test_digest_of_an_empty_range_and_invalid_range() -> None:
    text = digest(None, [Message("user", "do it", iteration=0)], 1, 3).text
    assert text == "Working memory of iterations 1-3\nTask: do it\nNo activity recorded in this range."
    with pytest.raises(ValueError):
        digest(None, [], 5, 4)


@pytest.mark.parametrize(
    ("output", "code"),
    [
        ("<returncode>2</returncode>", 2),
        ("stuff\nexit code: 1", 1),
        ("Exit code 0", 0),
        ("process exited with code 137", 137),
        ("returncode=3", 3),
        ("all good", None),
    ],
)
def test_parse_exit_code(output: str, code: int | None) -> None:
    assert parse_exit_code(output) == code


def test_error_detection_and_last_line() -> None:
    tb = "Traceback (most recent call last):\n  File 'a.py', line 1\nKeyError: 'x'\n"
    assert looks_like_error(tb) and error_line(tb) == "KeyError: 'x'"
    assert looks_like_error("Error: file not found")
    assert looks_like_error("all fine", exit_code=2)
    assert not looks_like_error("all fine", exit_code=0)
    assert not looks_like_error("3 passed, 0 errors")
    assert error_line("line one\nline two\n") == "line two"
    assert error_line("make: nothing\nno rule to make target\nexit code: 2") == "no rule to make target"
    assert error_line("exit code: 2") == "exit code: 2"


def test_shell_files_categories() -> None:
    assert shell_files("cat a.py && sed -i 's/x/y/' b.py; cp c.txt d/e.txt") == [
        ("read", "a.py"),
        ("edited", "b.py"),
        ("read", "c.txt"),
        ("written", "d/e.txt"),
    ]
    assert shell_files("grep -rn foo.bar src/ | wc -l") == []  # a recursive search: its hits name the files
    assert shell_files("grep -n foo.bar src/a.py 2>&1 | head") == [("read", "src/a.py")]
    # running a script is not reading it
    assert shell_files("cat > new.py <<'EOF'\nimport os.path\nEOF\npython new.py") == [("written", "new.py")]
    assert shell_files("ls -la && echo hi > /dev/null") == []
