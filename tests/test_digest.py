"""The deterministic digest: content, bounds, determinism, and nothing after ``last``."""

from __future__ import annotations

import json

import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent.context._digest import (
    MAX_DIGEST_CHARS,
    digest,
    error_line,
    looks_like_error,
    parse_exit_code,
    shell_files,
)
from tiered_agent.context._names import RETRIEVE_TOOL_NAME
from tiered_agent.context._types import Summary


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
    messages = [
        Message("system", "You are an agent.", iteration=0),
        Message("user", "Fix the failing test in calc.py and keep the API stable.", iteration=0),
    ]
    messages += turn(
        1,
        "Plan:\n- [ ] read calc.py\n- [ ] fix add()\n- [x] look around",
        (call("c1", "read_file", path="src/calc.py"), "def add(a, b):\n    return a - b\n"),
    )
    messages += turn(
        2,
        "Run the tests.",
        (
            call("c2", "run_shell", command="cd src && python -m pytest tests/test_calc.py -q"),
            "F\nTraceback (most recent call last):\n  File 'x'\nAssertionError: assert -1 == 3\nexit code: 1",
        ),
    )
    messages += turn(
        3,
        "The sign is wrong; fix it.",
        (call("c3", "edit_file", path="src/calc.py", old="a - b", new="a + b"), "edited"),
        (call("c4", "write_file", path="notes/CHANGES.md", content="fixed add"), "written"),
    )
    messages += turn(
        4,
        "Re-run.\n- [x] read calc.py\n- [ ] run full suite",
        (call("c5", "run_shell", command="pytest -q"), "<returncode>0</returncode>\n3 passed"),
        (call("c6", "bash", command="grep -n add src/util.py | head -3 > /tmp/out.txt"), "ok"),
    )
    return messages


def test_digest_lists_goal_files_commands_errors_todo_and_tools() -> None:
    summary = digest(None, history(), 1, 4)
    text = summary.text
    assert (summary.first, summary.last, summary.model) == (1, 4, None)
    assert "Goal: Fix the failing test in calc.py and keep the API stable." in text
    assert "Files read: src/calc.py, tests/test_calc.py, src/util.py" in text
    assert "Files written: notes/CHANGES.md, /tmp/out.txt" in text
    assert "Files edited: src/calc.py" in text
    assert "[it 2] $ cd src && python -m pytest tests/test_calc.py -q -> exit 1" in text
    assert "[it 4] $ pytest -q -> exit 0" in text
    assert "[it 4] $ grep -n add src/util.py | head -3 > /tmp/out.txt -> ok" in text
    assert "[it 2 run_shell] AssertionError: assert -1 == 3" in text
    # the latest todo list wins: one open, one done
    assert "Open tasks (1 open, 1 done):\n- [ ] run full suite" in text
    assert "fix add()" not in text.split("Open tasks")[1]
    assert "Tools used: run_shell x2, bash x1, edit_file x1, read_file x1, write_file x1" in text
    # the last two thoughts only
    assert "[it 3] The sign is wrong; fix it." in text
    assert "[it 4] Re-run." in text
    assert "[it 2] Run the tests." not in text


def test_digest_is_deterministic() -> None:
    assert digest(None, history(), 1, 4) == digest(None, list(history()), 1, 4)


def test_digest_never_reads_after_last() -> None:
    messages = history() + turn(
        5,
        "SECRET_THOUGHT_5",
        (call("c9", "run_shell", command="cat LATE.txt"), "ValueError: SECRET_OUTPUT_5"),
    )
    text = digest(None, messages, 1, 3).text
    for later in ("SECRET", "LATE.txt", "pytest -q ->", "src/util.py", "run full suite", "Re-run"):
        assert later not in text
    assert digest(None, messages, 1, 3).last == 3
    assert "Digest of iterations 1-3." in text


def test_digest_rolls_over_previous_range() -> None:
    previous = digest(None, history(), 1, 2)
    rolled = digest(previous, history(), 3, 4)
    assert (rolled.first, rolled.last) == (1, 4)
    assert "tests/test_calc.py" in rolled.text  # iteration 2, recomputed from the history
    assert "Earlier" not in rolled.text


def test_digest_carries_previous_text_when_history_lacks_it() -> None:
    previous = Summary(1, 2, "Digest of iterations 1-2.\nGoal: the old goal\nFiles read: OLD_FILE.py")
    recent = [m for m in history() if m.iteration >= 3]
    rolled = digest(previous, recent, 3, 4)
    assert (rolled.first, rolled.last) == (1, 4)
    assert "Goal: the old goal" in rolled.text
    assert "Earlier (iterations 1-2):" in rolled.text and "OLD_FILE.py" in rolled.text


def test_digest_is_bounded_and_keeps_the_most_recent_items() -> None:
    messages: list[Message] = [Message("user", "task " * 200, iteration=0)]
    for i in range(1, 121):
        messages += turn(
            i,
            f"thought {i}",
            (call(f"c{i}", "run_shell", command=f"cat dir/file_{i:03d}.py"), f"Error: failure number {i}"),
        )
    text = digest(None, messages, 1, 120).text
    assert len(text) <= MAX_DIGEST_CHARS
    assert "dir/file_120.py" in text and "failure number 120" in text and "[it 120] $ cat" in text
    assert "dir/file_001.py" not in text and "failure number 1\n" not in text
    assert "run_shell x120" in text
    assert len(digest(None, messages, 1, 120, max_chars=600).text) <= 600


def test_digest_ignores_retrieved_old_content() -> None:
    messages = history() + turn(
        5, None, (call("r1", RETRIEVE_TOOL_NAME, iteration="2"), "ValueError: OLD\n- [ ] stale todo")
    )
    text = digest(None, messages, 5, 5).text
    assert "OLD" not in text and "stale todo" not in text and "Open tasks" not in text
    assert f"Tools used: {RETRIEVE_TOOL_NAME} x1" in text


def test_digest_of_an_empty_range_and_invalid_range() -> None:
    text = digest(None, [Message("user", "do it", iteration=0)], 1, 3).text
    assert text == "Digest of iterations 1-3.\nGoal: do it\nNo activity recorded in this range."
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
    assert shell_files("grep -rn foo.bar src/ | wc -l") == [("read", "src/")]
    assert shell_files("cat > new.py <<'EOF'\nimport os.path\nEOF\npython new.py") == [
        ("written", "new.py"),
        ("read", "new.py"),
    ]
    assert shell_files("ls -la && echo hi > /dev/null") == []
