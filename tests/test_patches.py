"""The one reading of a patch (``context/_patches.py``) and of a call's arguments
(``context/_calls.py``): the ``apply_patch`` envelope and the unified diff (files, verbs, moves, hunks
with their old and new lines and new-side ranges), what its two readers make of it (the files the
agent wrote, the working memory's touches), the call conventions, and arbitrary text."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiered_agent import ToolCall
from tiered_agent.context._calls import (
    argv_patch,
    call_arguments,
    patch_argument,
    path_argument,
    shell_command,
    string_argument,
)
from tiered_agent.context._patches import Hunk, PatchFile, parse_patch
from tiered_agent.context.aging._written import FileWrite, call_writes, patch_writes
from tiered_agent.context.summary.memory._calls import call_facts
from tiered_agent.context.summary.memory._code import Touch, patch_touches

ENVELOPE = """*** Begin Patch
*** Add File: docs/new.md
+# Title
+
+body
*** Update File: src/app.py
*** Move to: src/main.py
@@ def run():
     setup()
-    go(1)
+    go(2)
@@
-x = 1
+x = 2
+y = 3
*** Delete File: old.txt
*** End Patch
"""

DIFF = """diff --git a/pkg/x.py b/pkg/x.py
index 83db48f..bf269f4 100644
--- a/pkg/x.py
+++ b/pkg/x.py
@@ -10,3 +10,4 @@ class A:
 keep
-old
+new
+more
 tail
@@ -40 +41 @@
-a
+b
\\ No newline at end of file
--- /dev/null
+++ b/pkg/new.py
@@ -0,0 +1,2 @@
+def f():
+    pass
--- a/pkg/gone.py
+++ /dev/null
@@ -1,2 +0,0 @@
-x
-y
"""


# ----------------------------------------------------------------------------- the envelope
def test_the_envelope_gives_each_file_its_verb_move_and_hunks() -> None:
    added, updated, deleted = parse_patch(ENVELOPE)
    assert added == PatchFile("docs/new.md", "add", (Hunk(("+# Title", "+", "+body")),))
    assert updated == PatchFile(
        "src/app.py",
        "update",
        (Hunk(("     setup()", "-    go(1)", "+    go(2)")), Hunk(("-x = 1", "+x = 2", "+y = 3"))),
        moved_to="src/main.py",
    )
    assert deleted == PatchFile("old.txt", "delete")
    first, second = updated.hunks
    assert first.old == ("    setup()", "    go(1)")
    assert first.new == ("    setup()", "    go(2)")
    assert second.added == ("x = 2", "y = 3")
    assert first.new_range is None  # an envelope's @@ names a context, not line numbers


def test_end_patch_closes_the_file_and_text_outside_any_file_belongs_to_none() -> None:
    text = "preamble\n+not in a file\n*** Begin Patch\n*** Update File: a.py\n-a\n+b\n*** End Patch\n+after\n"
    assert parse_patch(text) == (PatchFile("a.py", "update", (Hunk(("-a", "+b")),)),)


def test_a_bare_plus_line_is_content_not_a_file_header() -> None:
    # an added line "++ b/x.py" is "+++ b/x.py" in a patch: without "--- " before it, no file starts
    text = "*** Update File: a.py\n@@\n-a\n+++ b/x.py\n+b\n"
    assert parse_patch(text) == (PatchFile("a.py", "update", (Hunk(("-a", "+b")),)),)


# ----------------------------------------------------------------------------- the unified diff
def test_the_unified_diff_gives_verbs_hunks_and_new_side_ranges() -> None:
    updated, added, deleted = parse_patch(DIFF)
    assert updated.path == "pkg/x.py" and updated.verb == "update"
    assert [h.new_range for h in updated.hunks] == [(10, 13), (41, 41)]
    assert updated.hunks[0].lines == (" keep", "-old", "+new", "+more", " tail")
    assert updated.hunks[1].lines == ("-a", "+b")  # "\ No newline" is not a hunk line
    assert added == PatchFile("pkg/new.py", "add", (Hunk(("+def f():", "+    pass"), (1, 2)),))
    assert deleted == PatchFile("pkg/gone.py", "delete", (Hunk(("-x", "-y"), (0, 0)),))


def test_a_hunk_header_without_lines_still_gives_its_range() -> None:
    (file,) = parse_patch("--- a/x\n+++ b/x\n@@ -1,0 +2,3 @@\n")
    assert file.hunks == (Hunk((), (2, 4)),)


# ----------------------------------------------------------------------------- its two readers
def test_the_files_the_agent_wrote_read_every_verb_of_both_grammars() -> None:
    assert tuple(patch_writes(ENVELOPE)) == (
        FileWrite("docs/new.md", "# Title\n\nbody\n", whole=True),
        FileWrite("src/app.py", "    setup()\n    go(2)", old="    setup()\n    go(1)"),
        FileWrite("src/app.py", "x = 2\ny = 3", old="x = 1"),
        FileWrite("old.txt", "", deleted=True),
    )
    assert tuple(patch_writes(DIFF)) == (
        FileWrite("pkg/x.py", "keep\nnew\nmore\ntail", old="keep\nold\ntail"),
        FileWrite("pkg/x.py", "b", old="a"),
        FileWrite("pkg/new.py", "def f():\n    pass\n", whole=True),  # a new file is known whole
        FileWrite("pkg/gone.py", "", deleted=True),
    )


def test_the_working_memory_reads_the_same_files() -> None:
    assert patch_touches(DIFF) == (
        Touch("pkg/x.py", "edited", ((10, 13), (41, 41)), "patch: old → new"),
        Touch("pkg/new.py", "written", note="patch, 2 lines", defs=(("f", 1),)),
        Touch("pkg/gone.py", "deleted"),
    )
    touches = call_facts(ToolCall("c1", "apply_patch", ENVELOPE)).touches
    assert [(t.path, t.kind, t.note) for t in touches] == [
        ("docs/new.md", "written", "patch, 3 lines"),
        ("src/app.py", "edited", "patch: go(1) → go(2)"),
        ("old.txt", "deleted", ""),
    ]


def test_a_patch_handed_to_apply_patch_as_an_argv_is_read_by_both_readers() -> None:
    """Codex's shell tool runs ``{"command": ["apply_patch", PATCH]}``: the patch, not a shell line."""
    arguments = json.dumps({"command": ["apply_patch", ENVELOPE], "workdir": "/repo"})
    for name in ("shell", "exec_command"):
        writes = call_writes(ToolCall("c1", name, arguments))
        assert writes == tuple(patch_writes(ENVELOPE))
        facts = call_facts(ToolCall("c1", name, arguments))
        assert (facts.kind, [t.path for t in facts.touches]) == (
            "file",
            ["docs/new.md", "src/app.py", "old.txt"],
        )
    assert argv_patch({"command": ["/usr/bin/apply_patch", "P"]}) == "P"
    assert argv_patch({"command": ["apply_patch", "P", "extra"]}) is None  # not the one-argument form
    assert argv_patch({"command": ["bash", "-lc", "apply_patch <<'EOF'\nP\nEOF"]}) is None
    assert argv_patch({"command": "apply_patch P"}) is None
    assert call_writes(ToolCall("c2", "shell", json.dumps({"command": ["cat", ENVELOPE]}))) == ()


# ----------------------------------------------------------------------------- the call conventions
def test_call_arguments_keep_a_raw_argument_readable() -> None:
    assert call_arguments('{"path": "a"}') == {"path": "a"}
    assert call_arguments("*** Begin Patch") == {"input": "*** Begin Patch"}
    assert call_arguments("[1, 2]") == {"input": [1, 2]}
    assert call_arguments("") == {}


def test_shell_command_reads_text_and_argv() -> None:
    assert shell_command({"command": "ls -la"}) == "ls -la"
    assert shell_command({"command": "  ", "cmd": "pwd"}) == "pwd"  # a blank command is none
    assert shell_command({"script": "make"}) == "make"
    assert shell_command({"command": ["bash", "-lc", "echo hi > a.txt"]}) == "echo hi > a.txt"
    assert shell_command({"command": ["/bin/dash", "-c", "true"]}) == "true"
    assert shell_command({"command": ["sh", "c", "true"]}) == "sh c true"  # not a -c flag
    assert shell_command({"command": ["echo", "a b", ">", "x.txt"]}) == "echo 'a b' '>' x.txt"
    assert shell_command({"command": [1, 2]}) is None
    assert shell_command(["ls"]) is None


def test_path_and_string_arguments_take_the_first_key_that_holds_one() -> None:
    assert path_argument({"file_path": "b.py", "path": "a.py"}) == "a.py"
    assert path_argument({"path": "   ", "target_file": " t.py "}) == "t.py"
    assert path_argument({"file": 3}) == ""
    assert string_argument({"a": 1, "b": "x", "c": "y"}, ("a", "b", "c")) == "x"
    assert string_argument({}, ("a",)) is None
    assert patch_argument({"input": "", "patch": "*** Begin Patch"}) == "*** Begin Patch"
    assert patch_argument({"input": ["*** Begin Patch"], "diff": 3}) == ""


def test_both_readers_take_the_same_patch_argument() -> None:
    arguments = json.dumps({"input": "", "diff": "--- a/x.py\n+++ b/x.py\n@@ -2 +2 @@\n-a\n+b\n"})
    call = ToolCall("c1", "apply_patch", arguments)
    assert call_writes(call) == (FileWrite("x.py", "b", old="a"),)
    assert call_facts(call).touches == (Touch("x.py", "edited", ((2, 2),), "patch: a → b"),)


def test_every_reader_finds_the_same_command() -> None:
    arguments = json.dumps({"command": ["bash", "-lc", "cat > notes.md <<'EOF'\nhi\nEOF"]})
    call = ToolCall("c1", "shell", arguments)
    assert call_writes(call) == (FileWrite("notes.md", "hi\n", whole=True),)
    assert call_facts(call).command == "cat > notes.md <<'EOF'\nhi\nEOF"


# ----------------------------------------------------------------------------- any text
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
_MARKED = st.tuples(
    st.sampled_from("+- "),
    st.text(st.characters(exclude_characters="\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"), max_size=20),
)
_LINE = st.one_of(
    st.sampled_from(
        [
            "*** Begin Patch",
            "*** End Patch",
            "@@",
            "@@ -1,2 +3,4 @@",
            "--- a/x",
            "+++ b/x",
            "--- /dev/null",
            "+++ /dev/null",
            "*** Add File: a",
            "*** Update File: u",
            "*** Delete File: d",
            "*** Move to: m",
            "",
        ]
    ),
    _MARKED.map("".join),
    st.text(max_size=40),
)


@FAST
@given(st.lists(_LINE, max_size=30).map("\n".join))
def test_any_text_parses_into_well_formed_files(text: str) -> None:
    for file in parse_patch(text):
        assert file.path and file.verb in ("add", "update", "delete")
        for hunk in file.hunks:
            assert all(line[:1] in ("+", "-", " ") for line in hunk.lines)
            assert not any(line.startswith(("+++", "---")) for line in hunk.lines)
            assert hunk.new_range is None or hunk.new_range[0] <= hunk.new_range[1]
    tuple(patch_writes(text))
    patch_touches(text)


_HUNK_LINE = _MARKED.filter(lambda m: not (m[0] + m[1]).startswith(("+++", "---"))).map("".join)
_PATH = st.from_regex(r"[a-z][a-z0-9_/]{0,12}\.py", fullmatch=True)


@FAST
@given(
    st.lists(
        st.tuples(
            st.sampled_from(["Add", "Update", "Delete"]),
            _PATH,
            st.lists(st.lists(_HUNK_LINE, min_size=1, max_size=5), max_size=3),
        ),
        max_size=4,
    )
)
def test_a_written_envelope_reads_back_as_written(files: list[tuple[str, str, list[list[str]]]]) -> None:
    lines = ["*** Begin Patch"]
    expected = []
    for verb, path, written in files:
        hunks = [] if verb == "Delete" else written
        lines.append(f"*** {verb} File: {path}")
        for hunk in hunks:
            lines += ["@@", *hunk]
        expected.append(PatchFile(path, verb.lower(), tuple(Hunk(tuple(h)) for h in hunks)))
    lines.append("*** End Patch")
    assert parse_patch("\n".join(lines)) == tuple(expected)
