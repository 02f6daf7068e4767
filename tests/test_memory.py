"""The working memory on hand-built histories of each agent family the bench replays, and its
rolling, bounds, determinism and causality on long runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent.context.summary._digest import MAX_DIGEST_CHARS, digest

TRACES = Path(__file__).resolve().parents[1] / "traces"


def call(call_id: str, name: str, arguments: object) -> ToolCall:
    return ToolCall(call_id, name, arguments if isinstance(arguments, str) else json.dumps(arguments))


def step(iteration: int, text: str | None, *calls: tuple[ToolCall, str]) -> list[Message]:
    """One iteration: the assistant message and the result of each call."""
    messages = [Message("assistant", text, tool_calls=tuple(c for c, _ in calls), iteration=iteration)]
    for c, output in calls:
        messages.append(Message("tool", output, tool_call_id=c.id, name=c.name, iteration=iteration))
    return messages


def start(*user: str) -> list[Message]:
    return [Message("system", "You are an agent."), *(Message("user", text) for text in user)]


def bash(i: int, command: str) -> ToolCall:
    return call(f"c{i}", "bash", {"command": command})


def mini(code: int, output: str) -> str:
    """A mini-swe-agent observation."""
    return f"<returncode>{code}</returncode>\n<output>\n{output}\n</output>"


# --------------------------------------------------------------------------- mini-swe-agent
def mini_swe_agent() -> list[Message]:
    lines = [
        "class Session(SessionRedirectMixin):",
        "",
        "    def request(self, method, url,",
        "        params=None):",
        "",
        "        method = builtin_str(method)",
    ]
    listing = "\n".join(f"{423 + i:6}\t{line}" for i, line in enumerate(lines))
    history = start(
        "<pr_description>\nConsider the following PR description:\nmethod = builtin_str(method) problem\n"
        "</pr_description>\n<instructions>\n- DO NOT MODIFY: Tests, configuration files\n</instructions>"
    )
    history += step(
        1,
        "THOUGHT: Find the line.",
        (
            bash(1, 'grep -n "builtin_str(method)" requests/sessions.py'),
            mini(0, "428:        method = builtin_str(method)"),
        ),
    )
    history += step(
        2,
        "THOUGHT: Read around it.",
        (bash(2, "nl -ba requests/sessions.py | sed -n '423,428p'"), mini(0, listing)),
    )
    history += step(
        3,
        "THOUGHT: The issue is that builtin_str turns b'GET' into \"b'GET'\". "
        "I will replace it with `to_native_string`.",
        (
            bash(3, "sed -i '428s/builtin_str(method)/to_native_string(method)/' requests/sessions.py"),
            mini(0, ""),
        ),
    )
    history += step(
        4,
        "THOUGHT: Check it.",
        (
            bash(
                4, "cat <<'EOF' > check.py\nimport requests\ndef main():\n    print(x)\nEOF\npython check.py"
            ),
            mini(
                1,
                'Traceback (most recent call last):\n  File "check.py", line 3\n'
                "NameError: name 'x' is not defined",
            ),
        ),
    )
    history += step(
        5,
        "THOUGHT: Run the tests.",
        (bash(5, "python -m pytest test_requests.py -q"), mini(0, "........\n8 passed in 0.31s")),
    )
    return history


def test_mini_swe_agent() -> None:
    assert digest(None, mini_swe_agent(), 1, 5).text == (
        "Working memory of iterations 1-5\n"
        "Task: method = builtin_str(method) problem - DO NOT MODIFY: Tests, configuration files\n"
        "Constraints: DO NOT MODIFY: Tests, configuration files\n"
        "Files:\n"
        "- requests/sessions.py: edited it 3 (sed 428s/builtin_str(method)/to_native_string(method)/); "
        "changed lines 428; read 423-428; defs Session 423, Session.request 425\n"
        "- check.py: created it 4 (heredoc, 3 lines)\n"
        "Tests:\n"
        "- it 5 $ python -m pytest test_requests.py -q -> exit 0: 8 passed\n"
        "Errors:\n"
        "- it 4 $ cat <<'EOF' > check.py … -> exit 1: NameError: name 'x' is not defined\n"
        "Decisions:\n"
        "- it 3: The issue is that builtin_str turns b'GET' into \"b'GET'\". I will replace it with "
        "`to_native_string`."
    )


# --------------------------------------------------------------------------- SWE-agent
def window(first: int, lines: list[str], total: int = 1997) -> str:
    body = "\n".join(f"{first + i}:{line}" for i, line in enumerate(lines))
    return (
        f"[File: /repo/src/fields.py ({total} lines total)]\n({first - 1} more lines above)\n{body}\n"
        f"({total - first - len(lines) + 1} more lines below)\n(Open file: /repo/src/fields.py)\n"
        "(Current directory: /repo)\nbash-$"
    )


def test_swe_agent_windowed_editor() -> None:
    code = [
        "    def _serialize(self, value, attr, obj, **kwargs):",
        "        if value is None:",
        "            return None",
        "        return int(value.total_seconds() / base_unit.total_seconds())",
    ]
    fixed = "        return int(round(value.total_seconds() / base_unit.total_seconds()))"
    edit = f"edit 1474:1474\n{fixed}\nend_of_edit"
    preamble = "We're currently solving the following issue within our repository. Here's the issue text:"
    history = start(f"{preamble}\nISSUE:\nTimeDelta serialization precision")
    history += step(
        1, "Open it.", (call("c1", "open", {"command": "open src/fields.py 1474"}), window(1471, code))
    )
    history += step(
        2, "Round it.", (call("c2", "edit", {"command": edit}), window(1474, [code[3]]) + "\nFile updated.")
    )
    history += step(
        3,
        "Check.",
        (call("c3", "bash", {"command": "python reproduce.py"}), "345\n(Open file: /repo/src/fields.py)"),
    )
    text = digest(None, history, 1, 3).text
    assert text.splitlines()[1] == "Task: TimeDelta serialization precision"
    assert "- src/fields.py: edited it 2 (return int(round(value.total_seconds()…); changed lines 1474; " \
           "read 1471-1474; defs _serialize 1471" in text  # fmt: skip
    assert "- it 3 $ python reproduce.py -> ok: 345" in text


# --------------------------------------------------------------------------- OpenHands
def test_openhands_bash_editor_and_browser() -> None:
    view = "Here's the result of running `cat -n` on /workspace/app.py:\n"
    view += "    10\tdef main():\n    11\t    serve(port=80)"
    history = [
        *step(
            1,
            None,
            (
                call("c1", "execute_bash", {"command": "pip install flask"}),
                "\x1b[?2004lInstalled flask\n[The command completed with exit code 0.]",
            ),
            (
                call(
                    "c2",
                    "str_replace_editor",
                    {"command": "view", "path": "/workspace/app.py", "view_range": [10, 11]},
                ),
                view,
            ),
        ),
        *step(
            2,
            None,
            (
                call(
                    "c3",
                    "str_replace_editor",
                    {
                        "command": "str_replace",
                        "path": "/workspace/app.py",
                        "old_str": "port=80",
                        "new_str": "port=8080",
                    },
                ),
                "The file /workspace/app.py has been edited.",
            ),
            (call("c4", "browser", {"code": "goto('http://localhost:8080')"}), "Page loaded: Flask app"),
        ),
        *step(
            3,
            None,
            (
                call("c5", "execute_bash", {"command": "python app.py"}),
                "OSError: port in use\n[The command completed with exit code 1.]",
            ),
        ),
    ]
    text = digest(None, history, 1, 3).text
    assert "- /workspace/app.py: edited it 2 (port=80 → port=8080); read 10-11; defs main 10" in text
    assert "- it 1 $ pip install flask -> exit 0: Installed flask" in text
    assert "- it 2 browser(code goto('http://localhost:8080')) -> Page loaded: Flask app" in text
    assert "- it 3 $ python app.py -> exit 1: OSError: port in use" in text


# --------------------------------------------------------------------------- tau-bench
def tau_bench() -> list[Message]:
    user = {
        "name": {"first_name": "Ivan", "last_name": "Muller"},
        "payment_methods": {"gift_card_851": {"source": "gift_card", "amount": 128, "id": "gift_card_851"}},
        "reservations": ["G72NSF"],
    }
    booked = {"reservation_id": "HATHAT", "status": "booked"}
    history = start("Hi, I'd like to book the same flights as my reservation for my friend Ivan.")
    history += [
        Message("assistant", "Could you give me your user id?", iteration=1),
        Message("user", "Sure, it is ivan_muller_7015.", iteration=1),
    ]
    history += step(
        2, None, (call("c2", "get_user_details", {"user_id": "ivan_muller_7015"}), json.dumps(user))
    )
    history += [
        Message("assistant", "I'll book it with your gift card for $128. Shall I proceed?", iteration=3),
        Message("user", "Yes, please. ###STOP###", iteration=3),
    ]
    payment = [{"payment_id": "gift_card_851", "amount": 128}]
    args = {"user_id": "ivan_muller_7015", "flights": ["HAT097"], "payment_methods": payment}
    history += step(4, None, (call("c4", "book_reservation", args), json.dumps(booked)))
    return history


def test_tau_bench_conversation() -> None:
    assert digest(None, tau_bench(), 1, 4).text == (
        "Working memory of iterations 1-4\n"
        "Task: Hi, I'd like to book the same flights as my reservation for my friend Ivan.\n"
        "User requests:\n"
        "- it 1: Sure, it is ivan_muller_7015.\n"
        "- it 3: Yes, please.\n"
        "Actions:\n"
        "- it 4 book_reservation(user_id ivan_muller_7015; flights HAT097; payment_methods gift_card_851 "
        "amount 128) -> reservation_id HATHAT; status booked\n"
        "Facts:\n"
        "- it 2 get_user_details(user_id=ivan_muller_7015): name Ivan Muller; payment_methods gift_card_851 "
        "gift_card amount 128; reservations G72NSF\n"
        "Decisions:\n"
        "- it 3: I'll book it with your gift card for $128."
    )


# --------------------------------------------------------------------------- Claude Code, Codex
def test_claude_code_read_edit_bash_grep_todo() -> None:
    todos = [
        {"content": "Fix parse", "status": "completed"},
        {"content": "Add a docstring", "status": "pending"},
    ]
    history = [
        Message("user", "Fix the failing test in parser.py"),
        *step(
            1,
            "Let me look.",
            (
                call("t1", "Read", {"file_path": "/home/u/demo/parser.py"}),
                "     1\u2192def parse(text):\n     2\u2192    return text.split(',')",
            ),
            (
                call("t2", "Grep", {"pattern": "parse(", "path": "/home/u/demo", "-n": True}),
                "tests/test_parser.py:3:    assert parse('a, b')",
            ),
        ),
        *step(
            2,
            None,
            (
                call(
                    "t3",
                    "Edit",
                    {
                        "file_path": "/home/u/demo/parser.py",
                        "old_string": "text.split(',')",
                        "new_string": "[p.strip() for p in text.split(',')]",
                    },
                ),
                "The file has been updated.",
            ),
            (call("t4", "TodoWrite", {"todos": todos}), "Todos have been modified successfully."),
        ),
        *step(
            3,
            None,
            (
                call("t5", "Bash", {"command": "pytest -q", "description": "Run the tests"}),
                "1 passed in 0.01s",
            ),
        ),
        Message("user", "Thanks! Now add a docstring.", iteration=3),
    ]
    text = digest(None, history, 1, 3).text
    assert (
        "- /home/u/demo/parser.py: edited it 2 (text.split(',') → [p.strip() for p in text.split(',')]); "
        "read 1-2; defs parse 1" in text
    )
    assert "- tests/test_parser.py: hits 3" in text
    assert "- it 3 $ pytest -q -> ok: 1 passed" in text
    assert "User requests:\n- it 3: Thanks! Now add a docstring." in text
    assert "Todo (1 open, 1 done):\n- [ ] Add a docstring" in text


def test_codex_shell_apply_patch_and_plan() -> None:
    patch = "*** Begin Patch\n*** Update File: parser.py\n@@\n-    return text.split(',')\n"
    patch += "+    return [p.strip() for p in text.split(',')]\n*** End Patch"
    plan = [{"step": "Read the parser", "status": "completed"}, {"step": "Run pytest", "status": "pending"}]
    history = [
        Message("user", "<environment_context>\n  <cwd>/home/u/demo</cwd>\n</environment_context>"),
        Message("user", "Why does test_parse fail?"),
        *step(
            1,
            None,
            (
                call("a", "shell", {"command": ["bash", "-lc", "cat parser.py"]}),
                "def parse(text):\n    return text.split(',')",
            ),
        ),
        *step(
            2,
            "The split keeps the spaces; patching.",
            (call("b", "apply_patch", patch), "Success. Updated the following files:\nM parser.py"),
        ),
        *step(3, None, (call("c", "update_plan", {"plan": plan}), "Plan updated")),
    ]
    text = digest(None, history, 1, 3).text
    assert text.splitlines()[1] == "Task: Why does test_parse fail?"  # not the environment block
    assert (
        "- parser.py: edited it 2 (patch: return text.split(',') → "
        "return [p.strip() for p in text.split('…); read 1-2; defs parse 1" in text
    )
    assert "Todo (1 open, 1 done):\n- [ ] Run pytest" in text


# --------------------------------------------------------------------------- long runs
def long_run(iterations: int) -> list[Message]:
    history = start("Make every job pass. Never edit tests/.")
    for i in range(1, iterations + 1):
        read = f"nl -ba src/mod_{i % 40}.py | sed -n '{i},{i + 3}p'"
        listing = "\n".join(f"{i + k:6}\tdef f_{i + k}():" for k in range(4))
        history += step(
            i,
            f"THOUGHT: The issue is in f_{i}. I will fix `f_{i}` in src/mod_{i % 40}.py.",
            (bash(2 * i, read), mini(0, listing)),
            (
                bash(2 * i + 1, f"sed -i '{i}s/a/b/' src/mod_{i % 40}.py && python job_{i}.py"),
                mini(i % 3, f"job {i} {'failed' if i % 3 else 'ok'}"),
            ),
        )
    return history


def test_rolling_over_many_ranges_keeps_the_task_stays_bounded_and_equals_one_pass() -> None:
    history = long_run(300)
    summary = None
    for last in range(7, 301, 7):
        summary = digest(summary, history, summary.last + 1 if summary else 1, last)
        assert summary.first == 1 and summary.last == last
        assert summary.text.splitlines()[:2] == [
            f"Working memory of iterations 1-{last}",
            "Task: Make every job pass. Never edit tests/.",
        ]
        assert len(summary.text) <= MAX_DIGEST_CHARS
    assert summary is not None and summary.text == digest(None, history, 1, summary.last).text
    assert "src/mod_" in summary.text and f"job_{summary.last}.py" in summary.text  # the newest survive
    assert "job_1.py" not in summary.text  # the oldest went first


def test_determinism_and_nothing_after_last() -> None:
    history = long_run(60)
    later = [m for m in history if m.iteration > 30]
    first = digest(None, history[: len(history) - len(later)], 1, 30)
    assert digest(None, history, 1, 30).text == first.text  # later messages change nothing
    assert digest(None, list(reversed(later)) + history, 1, 30).text == first.text
    assert digest(digest(None, history, 1, 12), history, 13, 30).text == first.text
    for i in range(31, 61):
        assert f"job_{i}.py" not in first.text and f"f_{i}`" not in first.text


def test_a_small_bound_keeps_the_task_and_the_edited_files_first() -> None:
    text = digest(None, mini_swe_agent(), 1, 5, max_chars=330).text
    assert len(text) <= 330
    assert "Task: method = builtin_str(method) problem" in text
    assert "requests/sessions.py: edited it 3" in text and "check.py" not in text


@pytest.mark.parametrize("family", ["mini-swe-agent", "swe-agent", "openhands", "tau-bench"])
def test_bundled_runs_digest_within_bounds(family: str) -> None:
    from tiered_agent.bench._importers import load_runs

    for run in load_runs([TRACES / family]).runs:
        last = max(m.iteration for m in run.messages)
        summary = digest(None, run.messages, 1, max(1, last - 1))
        assert len(summary.text) <= MAX_DIGEST_CHARS and summary.text.startswith(
            "Working memory of iterations 1-"
        )


def test_an_overlapping_range_folds_on_and_equals_one_pass() -> None:
    history = long_run(40)
    summary = digest(None, history, 1, 10)
    for last in (15, 20, 25):  # adk-compaction: every 5, re-covering the last 2
        summary = digest(summary, history, summary.last - 1, last)
    assert summary.text == digest(None, history, 1, 25).text


# --------------------------------------------------------------------------- empty quoted strings
# Regression: an empty quoted word ('' or "") made the shell tokenizer raise TypeError, which aborted
# the bench and ended live runs of every summarizing preset.
@pytest.mark.parametrize(
    ("command", "touches"),
    [
        ("echo ''", ()),
        ('echo "" > notes.txt', (("notes.txt", "written"),)),
        ("sed -i '' 's/old/new/' src/app.py", (("src/app.py", "edited"),)),
        ("sed -i \"\" '12s/a/b/' src/app.py", (("src/app.py", "edited"),)),
        ('grep -n "" src/app.py', (("src/app.py", "read"),)),
        ("printf '%s' '' | tee out.log", (("out.log", "written"),)),
        ("echo x >| notes.txt", (("notes.txt", "written"),)),  # the noclobber override, not a pipe
    ],
)
def test_empty_quoted_words_parse(command: str, touches: tuple[tuple[str, str], ...]) -> None:
    from tiered_agent.context.summary.memory._shell import shell_facts

    assert tuple((t.path, t.kind) for t in shell_facts(command).touches) == touches


def test_empty_quotes_in_commands_and_patches_reach_the_working_memory() -> None:
    patch = '*** Begin Patch\n*** Update File: doc.py\n@@\n-x = ""\n+x = """text"""\n*** End Patch'
    history = [
        *start("Tidy the module."),
        *step(1, None, (bash(1, "echo ''"), mini(0, ""))),
        *step(2, None, (bash(2, "sed -i '' 's/a/b/' src/app.py"), mini(0, ""))),
        *step(3, None, (bash(3, 'grep -n "" src/app.py'), mini(0, "1:import os\n2:x = ''"))),
        *step(4, None, (call("p", "shell", {"command": ["apply_patch", patch]}), "Done!")),
        *step(5, None, (call("q", "apply_patch", patch), "Done!")),
    ]
    text = digest(None, history, 1, 5).text
    assert "- src/app.py: edited it 2 (sed s/a/b/); read 1-2" in text
    assert "- doc.py: edited" in text
