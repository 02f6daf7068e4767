"""``examples/anchor_ruler.py`` on small hand-made exports: what counts as an anchor of each kind,
shown / missed / not counted, per family and policy, and the place a missed line had."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from bench_scripts import load_example

from tiered_agent.bench._prompt_file import delta_line

ruler = load_example("anchor_ruler")


def _call(name: str, arguments: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    function = {"name": name, "arguments": orjson.dumps(arguments).decode()}
    return {"id": call_id, "type": "function", "function": function}


def _assistant(iteration: int, *calls: dict[str, Any], content: str | None = None) -> dict[str, Any]:
    return {"role": "assistant", "content": content, "tool_calls": list(calls), "iteration": iteration}


def _tool(iteration: int, content: str, call_id: str = "c1") -> dict[str, Any]:
    return {"role": "tool", "content": content, "tool_call_id": call_id, "iteration": iteration}


def _line(run: str, policy: str, step: int, messages: list[Any], action: list[Any]) -> dict[str, Any]:
    return {"run_id": run, "policy": policy, "step": step, "messages": messages, "next": action}


TASK = {"role": "user", "content": "fix the bug", "iteration": 0}
FILE = "def parse_header(data):\n    cards = []\n    return cards_from(data)\n"


def _edit_run() -> list[dict[str, Any]]:
    """A Claude Code run: Read a file, then Edit two of its lines and one it never saw; the policy
    ``short`` dropped the Read's output to its first line."""
    read = _assistant(1, _call("Read", {"file_path": "/src/h.py"}))
    full = [TASK, read, _tool(1, FILE)]
    short = [TASK, read, _tool(1, "def parse_header(data):\n[... 2 lines ...]")]
    old = "def parse_header(data):\n    return cards_from(data)\n    assert invented_here(1)\n)"
    edit = [_assistant(2, _call("Edit", {"file_path": "/src/h.py", "old_string": old, "new_string": "x"}))]
    run = "claude-code_team/s1"
    return [_line(run, "full", 1, full, edit), _line(run, "short", 1, short, edit)]


def test_an_edit_s_old_string_is_shown_missed_or_not_counted() -> None:
    """Of the old_string's lines: the first is in both prompts (shown), the second only in the full
    history (missed by ``short``), the third nowhere (the agent's own: not counted), ``)`` too short."""
    result = ruler.measure(_edit_run())
    full, short = result.tallies[("claude-code", "full")], result.tallies[("claude-code", "short")]
    assert (full.calls, full.calls_with, full.anchors, full.missed, full.uncounted) == (1, 1, 2, 0, 1)
    assert (short.calls, short.calls_with, short.anchors, short.missed, short.calls_missed) == (1, 1, 2, 1, 1)
    [miss] = result.misses["short"]
    assert (miss.kind, miss.line, miss.message, miss.iteration, miss.role) == (
        "edit",
        "return cards_from(data)",
        2,
        1,
        "tool",
    )
    assert miss.shown_as.startswith("def parse_header(data):\n[... 2 lines ...]")
    rows = ruler.report(result)
    assert any(r.split()[:2] == ["claude-code", "short"] and "50.0%" in r and "edit 1/2" in r for r in rows)
    [example] = ruler.examples(result, "short", 5)
    assert "claude-code_team/s1 step 1 [edit] 'return cards_from(data)'" in example
    assert "message 2 of 3 (iteration 1, tool)" in example


def test_a_codex_patch_s_context_and_removed_lines_are_its_anchors() -> None:
    """``apply_patch`` in a shell call: its context and removed lines (and the code an ``@@`` names)
    count, its added lines do not; a Codex output wrapped in JSON is read decoded (the quotes)."""
    listing = (
        'class Loader:\n    def load(self):\n        print("loading all the things")\n        return 1\n'
    )
    history = [
        TASK,
        _assistant(1, _call("shell", {"command": ["bash", "-lc", "cat loader.py"]})),
        _tool(1, orjson.dumps({"output": listing, "metadata": {"exit_code": 0}}).decode()),
    ]
    patch = (
        "apply_patch <<'PATCH'\n*** Begin Patch\n*** Update File: loader.py\n@@ class Loader:\n"
        '     def load(self):\n-        print("loading all the things")\n'
        '+        print("brand new line here")\n'
        "*** End Patch\nPATCH"
    )
    action = [_assistant(2, _call("shell", {"command": ["bash", "-lc", patch]}))]
    assert ruler.anchors(action, history) == [
        ("patch", "class Loader:"),
        ("patch", "def load(self):"),
        ("patch", 'print("loading all the things")'),
    ]
    aged = [TASK, history[1], _tool(1, '{"output":"class Loader:\\n[... 3 lines ...]"}')]
    result = ruler.measure(
        [_line("codex/r", "full", 1, history, action), _line("codex/r", "aged", 1, aged, action)]
    )
    assert (result.tallies[("codex", "full")].anchors, result.tallies[("codex", "full")].missed) == (3, 0)
    assert result.tallies[("codex", "aged")].missed == 2
    assert result.tallies[("codex", "aged")].by_kind == {"patch": 2}


def test_a_unified_diff_s_hunks_are_read_too() -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1,3 +1,3 @@ def outer_function():\n context line one\n"
    diff += "-removed line two\n+added\n"
    assert ruler.patch_anchors(diff) == ["def outer_function():", "context line one", "removed line two"]
    assert ruler.patch_anchors(" not in a patch at all\n-nor this line here") == []


@pytest.mark.parametrize(
    ("command", "expected"),
    [
        ("sed -i 's/self\\.cards = \\[\\]/x/' h.py", ["self.cards = []"]),
        ("sed -i.bak -e '10,20s|old_value = 1|new|' h.py && ls", ["old_value = 1"]),
        ("sed -i 's/^    return None$/x/g; s/a/b/' h.py", ["return None"]),
        ("sed -i 's/first_line\\nsecond_line/x/' h.py", ["first_line", "second_line"]),
        ("sed 's/not_in_place_here/x/' h.py", []),  # prints, edits nothing
        ("sed -i '351i\\        inserted_line(data)' h.py", []),  # an insertion: no pattern
        ("sed -i 's/unbalanced_quote/x/ h.py", []),  # not a shell command: nothing, no error
        ("sed -i -f edits.sed s/not_a_script_here/x/", []),  # the script is in edits.sed
    ],
)
def test_a_sed_substitution_s_pattern_is_an_anchor(command: str, expected: list[str]) -> None:
    action = [_assistant(3, _call("bash", {"command": command}))]
    assert ruler.anchors(action, [TASK]) == [("sed-s", line) for line in expected]


def test_a_mini_swe_agent_s_code_block_is_its_command() -> None:
    action = [_assistant(3, content="THOUGHT: edit it\n\n```bash\nsed -i 's/cards_from(data)/x/' h.py\n```")]
    assert ruler.anchors(action, [TASK]) == [("sed-s", "cards_from(data)")]


def _listing(output: str, command: str) -> list[dict[str, Any]]:
    return [TASK, _assistant(1, _call("bash", {"command": command})), _tool(1, output)]


@pytest.mark.parametrize(
    ("history", "expected"),
    [
        (  # grep -n over files: the lines of h.py numbered 10 to 12
            _listing(
                "src/h.py:9:import os_module\nsrc/h.py:11:    def target_method(self):\n"
                "src/g.py:11:    other_file()",
                "grep -rn target src",
            ),
            ["src/h.py:11:    def target_method(self):"],
        ),
        (  # grep -n in one file names it in the command only
            _listing(
                "11:    def target_method(self):\n40:    def later_method(self):", "grep -n def src/h.py"
            ),
            ["11:    def target_method(self):"],
        ),
        (  # cat -n of another file: not a listing of h.py
            _listing("    11\t    def target_method(self):", "cat -n src/g.py"),
            [],
        ),
        (  # a listing older than the agent's last action is not "right before"
            [
                *_listing("11:    def target_method(self):", "grep -n def src/h.py"),
                _assistant(2, _call("bash", {"command": "ls"}, "c2")),
                _tool(2, "h.py", "c2"),
            ],
            [],
        ),
    ],
)
def test_a_sed_range_read_right_after_a_listing_has_the_listing_s_lines(
    history: list[dict[str, Any]], expected: list[str]
) -> None:
    action = [_assistant(3, _call("bash", {"command": "sed -n '10,12p' src/h.py"}))]
    assert ruler.anchors(action, history) == [("sed-n", line) for line in expected]


def test_the_delta_export_measures_as_the_whole_one(tmp_path: Path) -> None:
    """The ruler reads the file with ``tiered_agent.bench.read_prompts``: both forms, same tallies."""
    first = _edit_run()
    second = [
        {**line, "step": 2, "messages": [*line["messages"], *line["next"], _tool(2, "ok")]} for line in first
    ]
    lines = [first[0], second[0], first[1], second[1]]  # as the export orders them: policy by policy
    whole, delta = tmp_path / "whole.jsonl", tmp_path / "delta.jsonl"
    whole.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in lines))
    compact = [
        delta_line(lines[0], None),
        delta_line(lines[1], lines[0]["messages"]),
        delta_line(lines[2], None),
        delta_line(lines[3], lines[2]["messages"]),
    ]
    assert compact[1]["shared"] == 3 and len(compact[1]["messages"]) == 2
    delta.write_bytes(b"".join(orjson.dumps(line) + b"\n" for line in compact))
    measured = [ruler.measure(ruler.read_prompts(path)) for path in (whole, delta)]
    assert ruler.report(measured[0]) == ruler.report(measured[1])
    # step 2's history holds step 1's Edit: all three of its lines count there, and are shown
    short = measured[1].tallies[("claude-code", "short")]
    assert (short.calls, short.anchors, short.missed, short.uncounted) == (2, 5, 1, 1)


def test_a_mistake_is_one_sentence_and_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    without = tmp_path / "short.jsonl"
    without.write_bytes(orjson.dumps(_edit_run()[1]) + b"\n")
    assert ruler.main([str(without)]) == 2
    assert (
        "Error: the export holds no `full` prompt for a call: add full to --policies"
        in capsys.readouterr().err
    )
    assert ruler.main([str(without), "--examples", "many"]) == 2
    assert ruler.main([str(tmp_path / "absent.jsonl")]) == 2
    assert "Traceback" not in capsys.readouterr().err


def test_the_family_is_the_folder_s_first_part() -> None:
    assert ruler.family("mini-swe-agent_gemini-3-pro/django__django-1") == "mini-swe-agent"
    assert ruler.family("openhands/conv-1") == "openhands"
    assert ruler.family("codex/rollout-1") == "codex"
