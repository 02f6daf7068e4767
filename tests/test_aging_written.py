"""The files the agent wrote (``context/aging/_written.py``): writes recognized through every tool
family, each file's current text, the note that keeps it in view while the run works on it, the
aging rule that pays for the note, the knobs, and arbitrary text (never an exception)."""

from __future__ import annotations

import json
import re

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tiered_agent import Message, Policy, ToolCall
from tiered_agent._errors import ConfigurationError
from tiered_agent._tokens import TokenCounter
from tiered_agent.context.aging._breakeven import CacheTerms
from tiered_agent.context.aging._schedule import AgingSchedule, Epoch
from tiered_agent.context.aging._state import AgingState
from tiered_agent.context.aging._step import iteration_groups
from tiered_agent.context.aging._written import (
    FileWrite,
    WrittenFiles,
    _fold,
    call_writes,
    patch_writes,
    program_writes,
    python_written_paths,
    script_writes,
    shell_writes,
    write_failed,
    written_files,
    written_note,
)
from tiered_agent.context.pipeline._build import build_prompt, validate_pairs
from tiered_agent.context.steps import Age

COUNTER = TokenCounter("o200k_base")
SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix the rounding bug.")
SCRIPT = (
    "import decimal\n\ndef check_rounding():\n    value = decimal.Decimal('2.675')\n"
    "    print(round(value, 2))\n"
)


def call(name: str, arguments: object, call_id: str = "c1") -> ToolCall:
    text = arguments if isinstance(arguments, str) else json.dumps(arguments)
    return ToolCall(call_id, name, text)


# ----------------------------------------------------------------------------- recognizing writes
@pytest.mark.parametrize(
    "command",
    [
        f"cat > /testbed/reproduce.py <<'EOF'\n{SCRIPT}EOF\npython reproduce.py",
        f'cat <<"EOF" > /testbed/reproduce.py\n{SCRIPT}EOF',
        f"tee /testbed/reproduce.py <<EOF >/dev/null\n{SCRIPT}EOF",
        f"cd /testbed && cat > /testbed/reproduce.py << 'PY'\n{SCRIPT}PY\n",
        f"cat >| /testbed/reproduce.py <<'EOF'\n{SCRIPT}EOF",
    ],
)
def test_a_heredoc_into_a_file_writes_the_whole_file(command: str) -> None:
    assert call_writes(call("bash", {"command": command})) == (
        FileWrite("/testbed/reproduce.py", SCRIPT, whole=True),
    )


def test_appends_printf_and_echo_through_the_shell() -> None:
    writes = call_writes(call("Bash", {"command": "cat <<EOF >> notes.txt\nmore\nEOF"}))
    assert writes == (FileWrite("notes.txt", "more\n", append=True),)
    writes = call_writes(
        call("execute_bash", {"command": "printf 'a = 1\\nb = 2\\n' > cfg.ini && echo done >> log.txt"})
    )
    assert writes == (
        FileWrite("cfg.ini", "a = 1\nb = 2\n", whole=True),
        FileWrite("log.txt", "done\n", append=True),
    )
    assert call_writes(call("bash", {"command": "tee -a log.txt <<EOF\nx\nEOF"})) == (
        FileWrite("log.txt", "x\n", append=True),
    )


def test_commands_that_write_no_text_of_their_own_write_nothing() -> None:
    for command in (
        "python - <<'EOF'\nopen('a.py', 'w').write('x')\nEOF",  # out of scope
        "cat a.py",
        "grep -rn round src > /dev/null",
        "echo $HOME > $OUT",
        "sed -i 's/a/b/' a.py",
    ):
        assert call_writes(call("bash", {"command": command})) == (), command


PATCH = """*** Begin Patch
*** Update File: src/round.py
@@ def check():
 def check():
-    return round(x, 2)
+    return quantize(x)
*** Add File: src/new.py
+VALUE = 1
*** Delete File: src/old.py
*** End Patch"""


def test_codex_apply_patch_as_its_own_tool_and_inside_the_shell() -> None:
    expected = (
        FileWrite(
            "src/round.py", "def check():\n    return quantize(x)", old="def check():\n    return round(x, 2)"
        ),
        FileWrite("src/new.py", "VALUE = 1\n", whole=True),
        FileWrite("src/old.py", "", deleted=True),
    )
    assert call_writes(call("apply_patch", PATCH)) == expected  # a custom tool: the raw patch
    assert call_writes(call("apply_patch", {"input": PATCH})) == expected
    script = f"apply_patch <<'PATCH'\n{PATCH}\nPATCH"
    assert call_writes(call("shell", {"command": ["bash", "-lc", script], "workdir": "."})) == expected
    assert call_writes(call("exec_command", {"cmd": script})) == expected


def test_a_unified_diff_is_read_hunk_by_hunk() -> None:
    diff = "--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n keep\n-old\n+new\n"
    assert tuple(patch_writes(diff)) == (FileWrite("x.py", "keep\nnew", old="keep\nold"),)
    assert tuple(shell_writes(f"git apply <<'EOF'\n{diff}EOF")) == (
        FileWrite("x.py", "keep\nnew", old="keep\nold"),
    )


def test_claude_code_editors_and_our_workspace_tools() -> None:
    assert call_writes(call("Write", {"file_path": "/p/a.go", "content": "package a\n"})) == (
        FileWrite("/p/a.go", "package a\n", whole=True),
    )
    assert call_writes(call("Edit", {"file_path": "/p/a.go", "old_string": "a", "new_string": "b"})) == (
        FileWrite("/p/a.go", "b", old="a"),
    )
    multi = {
        "file_path": "f.py",
        "edits": [{"old_string": "x", "new_string": "y"}, {"old_string": "1", "new_string": "2"}],
    }
    assert call_writes(call("MultiEdit", multi)) == (
        FileWrite("f.py", "y", old="x"),
        FileWrite("f.py", "2", old="1"),
    )
    assert call_writes(call("write_file", {"path": "w.txt", "content": "hi"})) == (
        FileWrite("w.txt", "hi", whole=True),
    )
    assert call_writes(call("edit_file", {"path": "w.txt", "old": "hi", "new": "ho"})) == (
        FileWrite("w.txt", "ho", old="hi"),
    )


def test_str_replace_editor_commands() -> None:
    def editor(**args: object) -> tuple[FileWrite, ...]:
        return call_writes(call("str_replace_editor", args))

    assert editor(command="create", path="/w/r.py", file_text=SCRIPT) == (
        FileWrite("/w/r.py", SCRIPT, whole=True),
    )
    assert editor(command="str_replace", path="/w/r.py", old_str="2.675", new_str="2.665") == (
        FileWrite("/w/r.py", "2.665", old="2.675"),
    )
    assert editor(command="insert", path="/w/r.py", insert_line=1, new_str="import math") == (
        FileWrite("/w/r.py", "import math", line=1),
    )
    assert editor(command="view", path="/w/r.py") == ()


# ----------------------------------------------------------------------------- current text
def test_the_current_text_is_the_newest_whole_write_with_later_edits_applied() -> None:
    calls = [
        (1, call("bash", {"command": f"cat > r.py <<'EOF'\n{SCRIPT}EOF"})),
        (
            3,
            call(
                "str_replace_editor",
                {"command": "str_replace", "path": "r.py", "old_str": "'2.675'", "new_str": "'1.005'"},
            ),
        ),
        (
            4,
            call(
                "str_replace_editor",
                {"command": "insert", "path": "r.py", "insert_line": 1, "new_str": "import math"},
            ),
        ),
        (5, call("bash", {"command": "echo 'check_rounding()' >> r.py"})),
    ]
    file = written_files(calls)["r.py"]
    assert file.text == (
        "import decimal\nimport math\n\ndef check_rounding():\n    value = decimal.Decimal('1.005')\n"
        "    print(round(value, 2))\ncheck_rounding()\n"
    )
    assert (file.last, file.whole_at, len(file.hunks)) == (5, 1, 3)


def test_an_edit_that_does_not_apply_leaves_only_the_hunks_and_a_delete_drops_the_file() -> None:
    calls = [
        (1, call("Write", {"file_path": "a.py", "content": "x = 1\n"})),
        (2, call("Edit", {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 3"})),
        (3, call("Write", {"file_path": "b.py", "content": "b\n"})),
        (4, call("apply_patch", "*** Begin Patch\n*** Delete File: b.py\n*** End Patch")),
    ]
    files = written_files(calls)
    assert files["a.py"].text is None and files["a.py"].hunks == ("y = 3",)
    assert "b.py" not in files


@pytest.mark.parametrize(
    "command",
    ["sed -i 's/2.675/1.005/' r.py", "python gen.py > r.py", "cp other.py r.py", "rm r.py && touch r.py"],
)
def test_a_change_the_note_cannot_read_is_named_and_the_text_not_passed_off_as_current(command: str) -> None:
    """After ``sed -i`` (or a program's output, a copy, a removal) the text the agent's writes left
    is shown as that, with the iteration of the change and its retrieval, never as the current text."""
    calls = [
        (1, call("bash", {"command": f"cat > r.py <<'EOF'\n{SCRIPT}EOF"})),
        (2, call("bash", {"command": command})),
        (3, call("bash", {"command": "ls"})),
    ]
    file = written_files(calls)["r.py"]
    assert (file.text, file.changed, file.last) == (SCRIPT, 2, 1)
    groups = {k: (Message("assistant", "", (c,), iteration=k),) for k, c in calls}
    note = written_note(groups, through=3, at=3, max_chars=8000, recent=10, retrieval=True)
    assert note is not None and "current text" not in note.text
    assert (
        "=== r.py: text as your writes left it, before iteration 2 changed it by a command"
        ' this note does not follow (context_retrieve(iteration="2")) (written in iteration 1;'
    ) in note.text
    rewritten = written_files([*calls, (4, call("bash", {"command": "cat > r.py <<'EOF'\nx = 1\nEOF"}))])
    assert (rewritten["r.py"].text, rewritten["r.py"].changed) == ("x = 1\n", 0)
    untouched = [calls[0], (2, call("bash", {"command": "python r.py > out.txt"}))]
    assert written_files(untouched)["r.py"].changed == 0  # reading it and writing elsewhere changes nothing


_PY_EDIT = "text = path.read_text()\npath.write_text(text.replace('2.675', '1.005'))\n"


@pytest.mark.parametrize(
    "command",
    [
        f"python - <<'PY'\nfrom pathlib import Path\npath = Path('r.py')\n{_PY_EDIT}PY",
        f'cd /x && python3 - <<EOF\nimport pathlib\npath = pathlib.Path("r.py")\n{_PY_EDIT}EOF\necho ok',
        "python3 -c \"open('r.py', 'w').write('x = 1')\"",
        'python -c \'import pathlib; pathlib.Path("r.py").write_text("x")\'',
        "python - <<'PY'\nwith open('r.py', mode='a', encoding='utf-8') as f:\n    f.write('# end')\nPY",
        "ed r.py <<EOF\n2a\nprint(1)\n.\nw\nq\nEOF",
    ],
)
def test_a_program_writing_a_known_file_is_a_change_the_note_cannot_follow(command: str) -> None:
    """A Python program (heredoc or ``-c``) or ``ed`` script that writes a file the agent wrote:
    its text is computed, so the note keeps the text the writes left, marked as changed."""
    calls = [
        (1, call("bash", {"command": f"cat > r.py <<'EOF'\n{SCRIPT}EOF"})),
        (2, call("bash", {"command": command})),
    ]
    assert program_writes(calls[1][1]) == ("r.py",)
    file = written_files(calls)["r.py"]
    assert (file.text, file.changed, file.last) == (SCRIPT, 2, 1)


@pytest.mark.parametrize(
    "command",
    [
        "python3 -c \"print(open('r.py').read())\"",  # reads
        "python - <<'PY'\nprint(open('r.py', 'rb').read())\nPY",  # reads
        "python - <<'PY'\npath = Path('r.py')\npath = Path('s.py')\npath.write_text('x')\nPY",  # bound twice
        "python - <<'PY'\nfor name in ['r.py']:\n    open(name, 'w').write('x')\nPY",  # a computed path
        "python - <<'PY'\npath = Path('r.py')\ndef save(path):\n    path.write_text('x')\nPY",  # a parameter
        "python r.py",  # r.py itself writes no file
        "ssh host 'python -c \"open(1)\"'",
    ],
)
def test_a_program_that_does_not_certainly_write_a_known_file_changes_nothing(command: str) -> None:
    calls = [
        (1, call("bash", {"command": f"cat > r.py <<'EOF'\n{SCRIPT}EOF"})),
        (2, call("bash", {"command": command})),
    ]
    assert "r.py" not in program_writes(calls[1][1])
    assert written_files(calls)["r.py"].changed == 0


_FIXER = (
    "from pathlib import Path\npath = Path('r.py')\npath.write_text(path.read_text().replace('1', '2'))\n"
)


@pytest.mark.parametrize(
    "command", ["python fix.py", "cd /x && python3 -u ./fix.py --all", "python -W ignore fix.py > log.txt"]
)
def test_a_known_script_writing_a_known_file_is_a_change_the_note_cannot_follow(command: str) -> None:
    """``python fix.py`` where the agent wrote ``fix.py``: its text is known, so its literal writes are
    too; ``r.py`` keeps the text the writes left, marked as changed by the run of the script."""
    calls = [
        (1, call("bash", {"command": f"cat > r.py <<'EOF'\n{SCRIPT}EOF"})),
        (2, call("bash", {"command": f"cat > fix.py <<'EOF'\n{_FIXER}EOF"})),
        (3, call("bash", {"command": command})),
    ]
    assert script_writes(calls[2][1], written_files(calls[:2])) == ["r.py"]
    file = written_files(calls)["r.py"]
    assert (file.text, file.changed, file.last) == (SCRIPT, 3, 1)


@pytest.mark.parametrize(
    ("script", "command"),
    [
        ("print(open('r.py').read())\n", "python fix.py"),  # the script only reads
        (_FIXER, "python other.py"),  # a script the agent did not write
        (_FIXER, "python -m fix"),  # a module, not the file
        (_FIXER, "python -c 'import fix'"),
        (_FIXER, "cat fix.py"),
    ],
)
def test_a_script_that_does_not_certainly_write_a_known_file_changes_nothing(
    script: str, command: str
) -> None:
    calls = [
        (1, call("bash", {"command": f"cat > r.py <<'EOF'\n{SCRIPT}EOF"})),
        (2, call("bash", {"command": f"cat > fix.py <<'EOF'\n{script}EOF"})),
        (3, call("bash", {"command": command})),
    ]
    assert "r.py" not in script_writes(calls[2][1], written_files(calls[:2]))
    assert written_files(calls)["r.py"].changed == 0


def test_python_written_paths_by_literal_only() -> None:
    source = (
        "import json\nout = 'out/report.json'\nwith open(out, 'w') as f:\n    json.dump({}, f)\n"
        "open(\"log.txt\", \"a+\").write('x')\nPath('cfg.ini').write_bytes(b'')\n"
        "Path('r.md').open('w')\nopen(f'{name}.txt', 'w')\nopen('read.txt', 'r')\n"
    )
    assert list(python_written_paths(source)) == ["out/report.json", "log.txt", "cfg.ini", "r.md"]


# ----------------------------------------------------------------------------- the note
def _iteration(k: int, command: str, output: list[str]) -> list[Message]:
    """Iteration ``k``: the agent runs ``command`` in bash and gets ``output`` back."""
    return [
        Message("assistant", f"Step {k}.", (call("bash", {"command": command}, f"call_{k}"),), iteration=k),
        Message("tool", "\n".join(output), tool_call_id=f"call_{k}", name="bash", iteration=k),
    ]


def _run(last: int, *, named_from: int = 2) -> list[Message]:
    """The agent writes r.py in iteration 1, then runs it (``python r.py``) from ``named_from`` on;
    other iterations list files."""
    history = [SYSTEM, TASK]
    for k in range(1, last + 1):
        if k == 1:
            command = f"cat > r.py <<'EOF'\n{SCRIPT}EOF"
        else:
            command = "python r.py" if k >= named_from else f"ls dir{k}"
        history += _iteration(k, command, [f"out {k} line {n}" for n in range(40)])
    return history


def test_the_note_shows_a_hidden_file_still_in_play_and_names_its_retrieval() -> None:
    groups = iteration_groups(_run(12))
    note = written_note(groups, through=9, at=12, max_chars=8000, recent=10, retrieval=True)
    assert note is not None and note.iteration == 0 and note.role == "user"
    assert note.text == (
        "[Files you wrote and are still working on, as your writes up to iteration 9 left them:]\n"
        '=== r.py: current text (written in iteration 1; context_retrieve(iteration="1"))\n'
        f"{SCRIPT}=== end of r.py"
    )


def test_no_note_for_a_file_out_of_play_too_long_or_still_verbatim() -> None:
    groups = iteration_groups(_run(30, named_from=40))  # written in 1, never named again
    assert written_note(groups, through=27, at=30, max_chars=8000, recent=10, retrieval=True) is None
    groups = iteration_groups(_run(12))
    assert (
        written_note(groups, through=9, at=12, max_chars=len(SCRIPT) - 1, recent=10, retrieval=True) is None
    )
    assert (
        written_note(groups, through=0, at=2, max_chars=8000, recent=10, retrieval=True) is None
    )  # nothing hidden
    assert written_note(groups, through=9, at=12, max_chars=0, recent=10, retrieval=True) is None  # off


def test_the_age_step_puts_the_note_after_the_aged_iterations() -> None:
    history = _run(12)
    age = Age(window=2, min_chars=100, condense_after=6, chunk=2, written_chars=8000)
    schedule = AgingSchedule((Epoch(at=12, through=10, condensed=6),))
    built = build_prompt(history, Policy("p", (age,)), summary=None, counter=COUNTER, schedule=schedule)
    validate_pairs(built.messages)
    texts = [m.text for m in built.messages]
    at = next(i for i, t in enumerate(texts) if t.startswith("[Files you wrote"))
    assert [m.iteration for m in built.messages[at - 2 : at]] == [10, 10]  # after the aged iterations
    assert built.messages[at + 1 :] == tuple(history[-4:])  # then the window, verbatim
    assert SCRIPT in texts[at]
    without = build_prompt(
        history,
        Policy("p", (Age(window=2, min_chars=100, condense_after=6, chunk=2, written_chars=0),)),
        summary=None,
        counter=COUNTER,
        schedule=schedule,
    )
    assert len(without.messages) == len(built.messages) - 1 and not any(
        "Files you wrote" in m.text for m in without.messages
    )


_BIG = "\n".join(f"def helper_{n}(value):\n    return value * {n}" for n in range(120)) + "\n"


def _script_run(iterations: int, outputs: list[str]) -> list[Message]:
    """Iteration 1 writes a big script with a heredoc; every later one runs it, printing ``outputs``
    (``{k}`` in a line: the iteration)."""
    history = [SYSTEM, TASK]
    for k in range(1, iterations + 1):
        command = f"cat > big.py <<'EOF'\n{_BIG}EOF" if k == 1 else "python big.py"
        history += _iteration(k, command, [line.format(k=k) for line in outputs])
    return history


def _epochs(age: Age, history: list[Message], iterations: int, first: bool = False) -> list[Epoch]:
    """The epochs an :class:`AgingState` decides over ``history``, prompt by prompt (``first``: stop
    at the first one)."""
    state = AgingState(age, counter=COUNTER, terms=CacheTerms(read=0.1), retrieval=True)
    epochs = []
    for last in range(1, iterations + 1):
        state.update([m for m in history if m.iteration <= last], last)
        if state.new_epoch is not None:
            epochs.append(state.new_epoch)
            if first:
                break
    return epochs


def test_the_aging_rule_waits_while_the_note_would_eat_the_saving() -> None:
    """Iterations whose outputs are short save almost nothing when they age; a big script the agent
    keeps running would join the note: that epoch does not pay, so it waits."""
    history = _script_run(30, [f"result {{k}}.{n}" for n in range(30)])
    plain = _epochs(Age(condense_after=None, written_chars=0), history, 30, first=True)
    with_note = _epochs(Age(condense_after=None, written_chars=8000), history, 30, first=True)
    assert plain and (not with_note or with_note[0].at > plain[0].at)


def test_a_condensing_epoch_waits_while_the_note_would_eat_its_saving() -> None:
    """Aging keeps the big script the agent wrote whole (long arguments are not cut) and every other
    iteration is too short to age, so only condensing saves: it drops the script to one line. But
    the agent keeps running the script, so the note would show it again, and the condensing epoch
    re-renders that note: counted, most of the saving is gone, so the epoch comes later or never."""
    history = _script_run(60, [f"check {n} passed" for n in range(15)])
    plain = _epochs(Age(max_arg_chars=100_000, written_chars=0), history, 60, first=True)
    assert plain == [Epoch(at=43, through=41, condensed=38)]  # condensing, the write among what it hides
    with_note = _epochs(Age(max_arg_chars=100_000, written_chars=8000), history, 60, first=True)
    assert not with_note or with_note[0].at > plain[0].at


def test_condensing_counts_the_note_it_re_renders_when_the_write_first_leaves_and_after() -> None:
    """Default aging cuts the script's heredoc and the outputs age. The epoch that first hides the
    write grows the note by the whole script: condensing with it would save less than that, so
    that epoch only ages (condensed 0; condensing through 24 with it when the growth is not
    counted). Every later condensing epoch re-sends the note with the tail, so it waits for the
    rent to cover those tokens too (iteration 50; 41 when they are not counted). The first epoch
    waits one call more for the preamble it adds to every later prompt (28 when that was not
    counted)."""
    history = _script_run(80, [f"check {n} passed" for n in range(30)])
    epochs = _epochs(Age(written_chars=8000), history, 80)
    assert epochs == [Epoch(29, 27, 0), Epoch(50, 48, 46), Epoch(71, 69, 66)]


def _first_epoch(history: list[Message], iterations: int, retrieve_tokens: int) -> Epoch | None:
    """The first epoch an :class:`AgingState` decides when ageing would start sending
    ``context_retrieve``'s schema, which adds ``retrieve_tokens`` to every later prompt (the tools
    grow from 100 to 400 tokens either way, so re-sending the prompt costs the same)."""
    state = AgingState(Age(written_chars=0), counter=COUNTER, terms=CacheTerms(read=0.1), retrieval=True)
    for last in range(1, iterations + 1):
        messages = [m for m in history if m.iteration <= last]
        state.update(messages, last, tool_tokens=100, schema_tokens=400, retrieve_tokens=retrieve_tokens)
        if state.new_epoch is not None:
            return state.new_epoch
    return None


def test_the_first_epoch_pays_for_what_it_adds_to_every_prompt() -> None:
    """The first epoch adds the aged part's preamble and ``context_retrieve``'s schema to every
    later prompt: the rent it accrues is the saving net of them, so the more the schema adds, the
    later the first epoch, and one that adds more than aging can save never comes."""
    history = _script_run(40, [f"check {n} passed at step {{k}}" for n in range(6)])
    nothing = _first_epoch(history, 40, retrieve_tokens=0)
    some = _first_epoch(history, 40, retrieve_tokens=300)
    assert nothing is not None and some is not None and some.at > nothing.at
    assert _first_epoch(history, 40, retrieve_tokens=20_000) is None


# ----------------------------------------------------------------------------- knobs
def test_the_knobs_are_validated_and_round_trip_through_json() -> None:
    policy = Policy("p", (Age(written_chars=4000, written_recent=5),))
    data = orjson.loads(orjson.dumps(policy.to_dict()))
    assert data["steps"][0]["written_chars"] == 4000 and data["steps"][0]["written_recent"] == 5
    assert Policy.from_dict(data) == policy
    with pytest.raises(ConfigurationError, match="written_chars"):
        Age(written_chars=-1)
    with pytest.raises(ConfigurationError, match="written_recent"):
        Age(written_recent=0)


# ----------------------------------------------------------------------------- hostile text
_NAMES = st.sampled_from(
    ["bash", "Bash", "shell", "exec_command", "local_shell", "apply_patch", "Write", "Edit", "MultiEdit",
     "str_replace_editor", "write_file", "edit_file", "other"]
)  # fmt: skip
_SHELLISH = st.text(alphabet=st.sampled_from(list("ab \n<>'\"|&;$-EOF*+@:/.\\tecpx")), max_size=120)
_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20) | _SHELLISH,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.sampled_from(
        ["command", "cmd", "input", "path", "file_path", "content", "old_string", "new_string", "edits",
         "old_str", "new_str", "insert_line", "file_text", "action", "text"]), inner, max_size=5),
    max_leaves=12,
)  # fmt: skip


@given(_NAMES, st.one_of(_SHELLISH, st.text(max_size=200), _JSON.map(json.dumps)))
def test_arbitrary_calls_never_raise(name: str, arguments: str) -> None:
    writes = call_writes(ToolCall("c", name, arguments))
    assert all(isinstance(w, FileWrite) and isinstance(w.text, str) for w in writes)
    files = written_files([(1, ToolCall("c", name, arguments)), (2, ToolCall("d", name, arguments))])
    assert all(f.last in (1, 2) for f in files.values())


@given(st.text(max_size=300))
def test_arbitrary_shell_and_patch_text_never_raises(text: str) -> None:
    list(shell_writes(text))
    list(patch_writes(text))
    assert all(isinstance(path, str) and path for path in python_written_paths(text))
    for command in (
        text,
        f"python - <<'PY'\n{text}\nPY",
        f"python3 -c {json.dumps(text)}",
        f"ed f <<E\n{text}",
    ):
        assert all(isinstance(path, str) for path in program_writes(call("bash", {"command": command})))
    files = written_files([(1, call("bash", {"command": f"cat > f.py <<'EOF'\n{text}\nEOF"}))])
    run = call("bash", {"command": f"python f.py {text}"})
    assert all(isinstance(path, str) for path in script_writes(run, files))


# ----------------------------------------------------------------------------- patched files
def _patch(path: str, old: str, new: str) -> str:
    return f"*** Begin Patch\n*** Update File: {path}\n@@\n-{old}\n+{new}\n*** End Patch"


def _patches(path: str, count: int, first: int = 1) -> dict[int, tuple[Message, ...]]:
    """Iterations ``first..first+count-1`` each patch ``path`` (Codex's shell ``apply_patch``) with a
    hunk naming its iteration."""
    groups: dict[int, tuple[Message, ...]] = {}
    for k in range(first, first + count):
        body = _patch(path, f"old_{k} = {'x' * 200}", f"new_value_{k} = {'y' * 200}")
        patch = call("shell", {"command": ["apply_patch", body]}, f"call_{k}")
        groups[k] = (Message("assistant", f"Patch {k}.", (patch,), iteration=k),)
    return groups


def test_a_file_whose_hunks_outgrow_the_room_shows_its_newest_hunks() -> None:
    groups = _patches("src/main.rs", 40)  # 40 hunks of ~215 chars: over 8,000 together
    note = written_note(groups, through=38, at=40, max_chars=8000, recent=10, retrieval=False)
    assert note is not None
    shown = re.findall(r"new_value_\d+", note.text)
    assert shown == [f"new_value_{k}" for k in range(5, 41)]  # the newest 36 that fit, in order


def test_a_file_is_in_the_note_while_a_hidden_write_of_it_still_counts() -> None:
    """The newest patch is still shown verbatim, but the earlier ones are hidden: the note shows them."""
    groups = _patches("src/main.rs", 3)
    note = written_note(groups, through=2, at=3, max_chars=8000, recent=10, retrieval=False)
    assert note is not None and "new_value_1 = " in note.text and "new_value_2 = " in note.text


def test_files_whole_first_then_the_newest_hunks_of_the_rest() -> None:
    """A short script the agent wrote stays in the note even when a file patched more recently has
    more hunks than the room holds."""
    groups: dict[int, tuple[Message, ...]] = {
        1: (
            Message(
                "assistant", "", (call("bash", {"command": f"cat > r.py <<'EOF'\n{SCRIPT}EOF"}),), iteration=1
            ),
        )
    }
    groups |= _patches("src/main.rs", 40, first=2)
    note = written_note(groups, through=39, at=41, max_chars=8000, recent=45, retrieval=False)
    assert note is not None and SCRIPT in note.text and "new_value_41 = " in note.text
    assert note.text.index("=== src/main.rs") < note.text.index("=== r.py")  # most recently used first


# ----------------------------------------------------------------------------- the run's files, incrementally
_WRITES = [
    call("bash", {"command": "cat > a.py <<'EOF'\nx = 1\nEOF"}),
    call("bash", {"command": "cat >> a.py <<'EOF'\ny = 2\nEOF"}),
    call(
        "str_replace_editor",
        {"command": "str_replace", "path": "a.py", "old_str": "x = 1", "new_str": "x = 3"},
    ),
    call("bash", {"command": "sed -i 's/3/4/' a.py"}),
    call("bash", {"command": "printf 'b\\n' > b.txt"}),
    call("bash", {"command": "rm b.txt"}),
    call("Write", {"file_path": "c.py", "content": "print(1)\n"}),
    call("bash", {"command": "python gen.py > c.py"}),
    call("bash", {"command": "ls"}),
    call("Edit", {"file_path": "a.py", "old_string": "y = 2", "new_string": "y = 5"}),
    call("apply_patch", "*** Begin Patch\n*** Add File: d.py\n+d = 1\n*** End Patch"),
]
_OUTPUTS = {  # the last two calls failed: they wrote nothing
    len(_WRITES) - 2: "<tool_use_error>String to replace not found in file.</tool_use_error>",
    len(_WRITES) - 1: "failed in sandbox MacosSeatbelt with execution error: sandbox denied exec error",
}


def _acts(picks: list[tuple[int, int]]) -> list[tuple[int, ToolCall, str | None]]:
    return [(k, _WRITES[w], _OUTPUTS.get(w)) for k, w in picks]


@given(st.lists(st.tuples(st.integers(0, 8), st.integers(0, len(_WRITES) - 1)), max_size=12), st.data())
def test_the_runs_files_read_incrementally_equal_the_fold_from_nothing(
    picks: list[tuple[int, int]], data: st.DataObject
) -> None:
    """``WrittenFiles.of`` over call lists that grow, shrink, branch off and come back (as the aging
    state and the step ask) equals ``written_files`` of each list read from nothing."""
    calls = [(k + 1, w) for k, w in sorted(picks)]
    files_of = WrittenFiles(kept=2)
    for _ in range(6):
        cut = data.draw(st.integers(0, len(calls)))
        asked = calls[:cut]
        if data.draw(st.booleans()) and asked:  # another history: a different call at the end
            asked = [*asked[:-1], (asked[-1][0], data.draw(st.integers(0, len(_WRITES) - 1)))]
        acts = _acts(asked)
        assert files_of.of(iter(acts)) == _fold(acts)


def test_the_runs_files_continue_from_the_calls_read_before() -> None:
    """A longer list of the same calls reads only its new calls: the files of the shorter list are
    not read again (a changed earlier call would not be noticed, by design: the same objects)."""
    first = _acts([(1, 0)])
    files_of = WrittenFiles()
    assert files_of.of(first)["a.py"].text == "x = 1\n"
    grown = [*first, *_acts([(2, 1)])]
    assert files_of.of(grown)["a.py"].text == "x = 1\ny = 2\n"
    assert files_of.of(first)["a.py"].text == "x = 1\n"  # a kept result is never changed
    assert files_of.of(_acts([(1, 6)])) == written_files([(1, _WRITES[6])])  # another call: from nothing


# ----------------------------------------------------------------------------- read once per run
def test_the_files_note_reads_each_iteration_once_while_its_messages_stay(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Through a run's :class:`WrittenFiles`, a note asked again with one more iteration reads only
    that iteration's calls and text (an iteration whose messages are a new tuple is read again), and
    asks whether a text names a file once per name and text; the notes are those read from nothing."""
    from tiered_agent.context.aging import _written

    read: list[tuple[int, ...]] = []
    calls, texts = _written._calls, _written._agent_texts
    monkeypatch.setattr(
        _written, "_calls", lambda groups, upto: read.append(tuple(groups)) or calls(groups, upto)
    )
    monkeypatch.setattr(
        _written,
        "_agent_texts",
        lambda groups, first, last: read.append(tuple(groups)) or texts(groups, first, last),
    )
    searched: list[str] = []
    holds = _written._holds
    monkeypatch.setattr(_written, "_holds", lambda name, text: searched.append(name) or holds(name, text))
    history = _run(14)
    files_of = WrittenFiles()
    groups = iteration_groups([m for m in history if m.iteration <= 12])
    note = written_note(
        groups, through=9, at=12, max_chars=8000, recent=10, retrieval=True, files_of=files_of
    )
    assert len(read) == 12 + 10 and len(searched) == 1  # iterations 1-12's calls, 3-12's texts; r.py in 12
    read.clear()
    searched.clear()
    grown = {**groups, **iteration_groups([m for m in history if m.iteration == 13])}
    again = written_note(
        grown, through=10, at=13, max_chars=8000, recent=10, retrieval=True, files_of=files_of
    )
    assert read == [(13,), (13,)] and searched == ["r.py"]  # only iteration 13, whose text names r.py
    read.clear()
    changed = {**grown, 12: (*grown[12], Message("user", "and again", iteration=12))}  # 12 gains a message
    written_note(changed, through=10, at=13, max_chars=8000, recent=10, retrieval=True, files_of=files_of)
    assert read == [(12,), (12,)]
    monkeypatch.undo()
    assert note == written_note(groups, through=9, at=12, max_chars=8000, recent=10, retrieval=True)
    assert again == written_note(grown, through=10, at=13, max_chars=8000, recent=10, retrieval=True)


def test_the_aging_state_keeps_each_iterations_tuple_until_it_gains_a_message() -> None:
    """The aging state hands its renderers the same tuple of an iteration's messages from one prompt
    to the next (the run's memos compare it by identity first), and a new one once it changed."""
    history = _run(8)
    state = AgingState(Age(), counter=COUNTER, terms=CacheTerms(read=0.1), retrieval=True)
    state.update([m for m in history if m.iteration <= 6], 6)
    before = dict(state._tuples)
    state.update([m for m in history if m.iteration <= 7], 7)
    assert all(state._tuples[k] is before[k] for k in before)
    assert state._tuples[7] == tuple(m for m in history if m.iteration == 7)
    extra = Message("user", "one more", iteration=7)
    state.update([*(m for m in history if m.iteration <= 7), extra], 7)
    assert state._tuples[7][-1] is extra and state._tuples[6] is before[6]


# ----------------------------------------------------------------------------- writes that failed
_PATCH = "*** Begin Patch\n*** Update File: r.py\n@@\n-x = 1\n+x = 2\n*** End Patch"
_CODEX_FAILED = '{"output":"error: Failed to find expected lines [\\"x = 1\\"]","metadata":{"exit_code":1}}'


@pytest.mark.parametrize(
    ("name", "arguments", "output"),
    [
        ("shell", {"command": ["apply_patch", _PATCH]}, _CODEX_FAILED),
        (
            "shell",
            {"command": ["apply_patch", _PATCH]},
            "failed in sandbox MacosSeatbelt with execution error",
        ),
        ("apply_patch", {"input": _PATCH}, "error: invalid hunk at line 4"),
        (
            "Edit",
            {"file_path": "r.py", "old_string": "x = 1", "new_string": "x = 2"},
            "<tool_use_error>No</tool_use_error>",
        ),
        (
            "str_replace_editor",
            {"command": "str_replace", "path": "r.py", "old_str": "x = 1", "new_str": "x = 2"},
            "No replacement was performed, old_str `x = 1` did not appear verbatim in r.py.",
        ),
    ],
)
def test_a_write_whose_output_says_it_failed_changes_nothing(
    name: str, arguments: dict[str, object], output: str
) -> None:
    """A patch the harness never ran or the tool refused is not shown as the file's text: the note
    would tell the model its change is in the file."""
    write = (1, call("bash", {"command": "cat > r.py <<'EOF'\nx = 1\nEOF"}, "c0"))
    failed = call(name, arguments)
    assert write_failed(failed, output)
    files = written_files([write, (2, failed)], {failed.id: output})
    assert (files["r.py"].text, files["r.py"].hunks, files["r.py"].last) == ("x = 1\n", (), 1)
    assert written_files([write, (2, failed)])["r.py"].text == "x = 2\n"  # without its output: applied


@pytest.mark.parametrize(
    ("command", "output"),
    [
        ("cat > r.py <<'EOF'\nx = 2\nEOF\npython r.py", '{"output":"Traceback","metadata":{"exit_code":1}}'),
        (
            "cat > r.py <<'EOF'\nx = 2\nEOF\npython r.py",
            "<returncode>1</returncode>\n<output>\nerror: no\n</output>",
        ),
        ("cat > r.py <<'EOF'\nx = 2\nEOF", '{"output":"","metadata":{"exit_code":0}}'),
    ],
)
def test_a_shell_commands_exit_code_says_nothing_of_its_write(command: str, output: str) -> None:
    """A shell command that writes a file and then fails (its last program's exit code) did write it."""
    run = call("bash", {"command": command})
    assert not write_failed(run, output)
    assert written_files([(1, run)], {run.id: output})["r.py"].text == "x = 2\n"
