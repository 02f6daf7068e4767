"""Read-only shell commands served by dedup: the classifier (a shell lexer, fail closed) and the
property that a stale read is never served, on a simulated file system."""

from __future__ import annotations

import json
import shlex
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tiered_agent import Agent, Policy, RunLimits
from tiered_agent._agent import _Run
from tiered_agent._errors import ConfigurationError
from tiered_agent._messages import Message, ToolCall
from tiered_agent._shell import shell_tool
from tiered_agent._tools import ToolOutcome
from tiered_agent.context._dispatch import Batch, ToolKind, dispatch
from tiered_agent.context._shell import OPERATOR_CHARS, words
from tiered_agent.context.dedup._shell import is_read_command, shell_read_key
from tiered_agent.context.dedup._step import Dedup, DedupRuntime
from tiered_agent.context.steps import step_from_dict
from tiered_agent.testing import FunctionModel, text

READS = [
    "cat a.py",
    "cat a.py\n",
    "ls -la && echo --- && sed -n '1,200p' notes.txt || true",
    "nl -ba src/x.py | sed -n '40,60p'",
    "grep -rn 'def foo$' src 2>/dev/null | head -20",
    "git --no-pager diff",
    "git -C repo log --oneline -5",
    "git status",
    "git show HEAD:src/x.py",
    "sed -n 1,5p f",
    "sed -ne '1,5p' -e '$p' f",
    "find . -name '*.py' -not -path './.git/*' | head",
    "wc -l a b",
    'rg -n "x|y" src',
    "tail -n 50 build.log",
    "grep -c foo a 2>&1",
    "sort a | uniq -c",
    "cat < a.py",
]
NOT_READS = [
    "cat a > b",
    "cat a >> b",
    "cat a > /dev/null2",
    "sed -i 1p f",
    "sed -n -i '1p' f",
    "sed -ni 1p f",
    "sed -n '1p;w b' f",
    "sed -n '/x/p' f",  # only line-range scripts are known to print and nothing else
    "cat a; rm b",
    "cat a && touch b",
    "cat a || rm b",
    "cat a\nrm b",
    "echo $(rm a)",
    'echo "$(rm a)"',
    "cat `rm a`",
    "cat $HOME/a",
    "find . -delete",
    "find . -name x -exec rm {} +",
    "cat a | tee b",
    "tail -f log",
    "tail -nf 5 log",
    "git commit -m x",
    "git -c alias.st=!rm status",
    "git diff --output=x",
    "sort -o x a",
    "uniq a b",
    "cd src && ls",
    "ls &",
    "(ls)",
    "cat <(rm x)",
    "X=1 cat a",
    "/bin/cat a",
    "cat <<EOF\nx\nEOF",
    "ls;",
    "ls |",
    "",
    "   ",
    "python x.py",
    'cat "a',
    "rg --pre rm x",
    "ls | xargs rm",
    "awk '{print > \"b\"}' a",
    "cat a " + "b " * 3000,
]


@pytest.mark.parametrize("command", READS)
def test_reading_commands_are_reads(command: str) -> None:
    assert is_read_command(command)


@pytest.mark.parametrize("command", NOT_READS)
def test_writing_or_unknown_commands_are_not_reads(command: str) -> None:
    assert not is_read_command(command)


def test_every_shell_tool_shape_is_recognized_and_other_arguments_fail_closed() -> None:
    bash = shell_read_key("bash", json.dumps({"command": "cat a"}))
    assert bash == "bash\x00shell\x00\x00cat a"
    # Claude Code's description and timeout do not change what the command reads
    described = shell_read_key(
        "Bash", json.dumps({"command": "cat a", "description": "read a", "timeout": 5})
    )
    assert described == shell_read_key("Bash", json.dumps({"command": "cat a", "description": "again"}))
    assert described is not None
    # Codex: argv through bash -lc, its working directory part of the key
    codex = shell_read_key("shell", json.dumps({"command": ["bash", "-lc", "cat a"], "workdir": "w"}))
    assert codex == "shell\x00shell\x00w\x00cat a"
    assert codex != shell_read_key("shell", json.dumps({"command": ["bash", "-lc", "cat a"], "workdir": "v"}))
    assert (
        shell_read_key("shell", json.dumps({"command": ["cat", "a b"]})) == "shell\x00shell\x00\x00cat 'a b'"
    )
    assert shell_read_key("exec_command", json.dumps({"cmd": "git status"})) is not None
    assert shell_read_key("run_shell", json.dumps({"command": "ls"})) is not None
    ours = shell_read_key("run_shell", json.dumps({"command": "ls", "timeout_s": 30}))  # our own shell tool
    assert ours == shell_read_key("run_shell", json.dumps({"command": "ls"}))
    action = {"type": "exec", "command": ["ls"], "env": {}, "user": None, "working_directory": "/w"}
    assert shell_read_key("local_shell", json.dumps(action)) == "local_shell\x00shell\x00/w\x00ls"
    # fail closed: unknown arguments, another tool, not JSON, a command that is not text
    assert shell_read_key("Bash", json.dumps({"command": "cat a", "run_in_background": True})) is None
    assert shell_read_key("exec_command", json.dumps({"cmd": "cat a", "yield_time_ms": 10})) is None
    assert shell_read_key("local_shell", json.dumps({**action, "env": {"X": "1"}})) is None
    assert shell_read_key("python", json.dumps({"command": "cat a"})) is None
    assert shell_read_key("bash", "cat a") is None
    assert shell_read_key("bash", json.dumps({"command": 3})) is None
    assert shell_read_key("bash", json.dumps({"command": "cat a", "cmd": "cat b"})) is None
    assert shell_read_key("bash", json.dumps({"command": "rm a"})) is None


@given(st.text(max_size=300))
@settings(max_examples=300, deadline=None)
def test_any_text_classifies_without_raising(command: str) -> None:
    is_read_command(command)
    shell_read_key("bash", json.dumps({"command": command}))


# ----------------------------------------------------------------------------- simulated file system
FILES = ("a", "b", "c")


@dataclass(frozen=True)
class Command:
    """A generated command: its text, and what it does to the simulated file system."""

    text: str
    writes: Callable[[dict[str, str], int], None] | None = None


def _reads() -> st.SearchStrategy[Command]:
    file = st.sampled_from(FILES)
    atoms = st.one_of(
        file.map(lambda f: f"cat {f}"),
        st.tuples(st.integers(1, 9), file).map(lambda t: f"head -n {t[0]} {t[1]}"),
        st.tuples(st.integers(1, 3), st.integers(3, 9), file).map(
            lambda t: f"sed -n '{t[0]},{t[1]}p' {t[2]}"
        ),
        file.map(lambda f: f"grep -n x {f}"),
        file.map(lambda f: f"wc -l {f} 2>/dev/null"),
        st.just("ls -la"),
        st.just("git status"),
        st.just("find . -name '*.py'"),
    )
    joined = st.lists(atoms, min_size=1, max_size=3).flatmap(
        lambda parts: st.lists(
            st.sampled_from([" | ", " && ", " || ", "; ", "\n"]),
            min_size=len(parts) - 1,
            max_size=len(parts) - 1,
        ).map(lambda seps: _join(parts, seps))
    )
    return joined.map(Command)


def _join(parts: Sequence[str], separators: Sequence[str]) -> str:
    out = parts[0]
    for sep, part in zip(separators, parts[1:], strict=True):
        out += sep + part
    return out


def _write(path: str) -> Callable[[dict[str, str], int], None]:
    def apply(fs: dict[str, str], stamp: int) -> None:
        fs[path] = f"{fs.get(path, '')}x{stamp}\n"

    return apply


def _writes() -> st.SearchStrategy[Command]:
    """Commands that change a file, many of them dressed as reads."""
    shapes = [
        "echo x > {f}",
        "echo x >> {f}",
        "sed -i 's/x/y/' {f}",
        "rm -f {f}",
        "touch {f}",
        "cat a > {f}",
        "cat a | tee {f}",
        "cat a; echo x > {f}",
        "cat a && echo x >> {f}",
        "cat a\necho x > {f}",
        "ls $(echo x > {f})",
        "cat `touch {f}`",
        "sed -n '1p;w {f}' a",
        "sed -n -i 1p {f}",
        "find . -name {f} -delete",
        "find . -name {f} -exec touch {{}} +",
        "sort -o {f} a",
        "uniq a {f}",
        "git diff --output={f}",
        "cat a >| {f}",
        "cat a &> {f}",
        "cat <<EOF > {f}\nx\nEOF",
        'python -c \'open("{f}", "w").write("x")\'',
        "cd . && echo x > {f}",
    ]
    return st.tuples(st.sampled_from(shapes), st.sampled_from(FILES)).map(
        lambda t: Command(t[0].format(f=t[1]), _write(t[1]))
    )


def _call(tool: str, command: str, n: int) -> ToolCall:
    arguments = {"cmd": command} if tool == "exec_command" else {"command": command}
    if tool == "shell":
        arguments = {"command": ["bash", "-lc", command]}
    return ToolCall(f"call_{n}", tool, json.dumps(arguments))


def _observe(fs: dict[str, str], command: str) -> str:
    """What a read shows: it may depend on any file (the whole state), never stale."""
    return f"{command}\n" + "".join(f"{k}={v}" for k, v in sorted(fs.items()))


@given(
    batches=st.lists(
        st.lists(
            st.tuples(
                st.one_of(_reads(), _reads(), _writes()),
                st.sampled_from(["bash", "Bash", "shell", "exec_command"]),
            ),
            min_size=1,
            max_size=3,
        ),
        min_size=1,
        max_size=12,
    )
)
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_a_stale_read_is_never_served(batches: list[list[tuple[Command, str]]]) -> None:
    """Every call is either served from the cache or executed, in call order, on the simulated file
    system; a served result must be exactly what executing it at its place would show."""
    runtime = DedupRuntime(Dedup())
    fs: dict[str, str] = {f: f"{f}\n" for f in FILES}
    counter = 0
    for iteration, commands in enumerate(batches, start=1):
        calls = tuple(_call(tool, command.text, counter + i) for i, (command, tool) in enumerate(commands))
        counter += len(calls)
        batch = Batch(iteration, calls, tuple(ToolKind() for _ in calls))
        before = dict(fs)
        results, failures = anyio.run(dispatch, [runtime], batch, _simulate(fs, commands, iteration))
        assert failures == ()
        for index, result in enumerate(results):
            if result.dedup_of is None:
                continue
            command = commands[index][0]
            assert command.writes is None, f"a write was served from the cache: {command.text!r}"
            state = dict(before)
            for j in range(index):  # the writes that executed before it in call order
                write = commands[j][0].writes
                if results[j].dedup_of is None and write is not None:
                    write(state, iteration * 10 + j)
            assert result.repeats == _observe(state, command.text), f"stale read served: {command.text!r}"


def _simulate(
    fs: dict[str, str], commands: Sequence[tuple[Command, str]], iteration: int
) -> Callable[[Sequence[int]], Awaitable[list[ToolOutcome]]]:
    """The batch's executed calls, run in call order on ``fs``."""

    async def execute(indexes: Sequence[int]) -> list[ToolOutcome]:
        outcomes = []
        for index in indexes:
            command = commands[index][0]
            if command.writes is not None:
                command.writes(fs, iteration * 10 + index)
            outcomes.append(ToolOutcome(content=_observe(fs, command.text), is_error=False))
        return outcomes

    return execute


def test_the_property_serves_repeated_reads_and_invalidates_on_writes() -> None:
    """The property above can fail: repeated reads are served, and a write in between stops it."""
    runtime = DedupRuntime(Dedup())

    def run(iteration: int, tool: str, command: str) -> bool:
        call = _call(tool, command, iteration)
        batch = Batch(iteration, (call,), (ToolKind(),))

        async def execute(indexes: Sequence[int]) -> list[ToolOutcome]:
            return [ToolOutcome(content=f"out {iteration}", is_error=False) for _ in indexes]

        results, _ = anyio.run(dispatch, [runtime], batch, execute)
        return results[0].dedup_of is not None

    assert not run(1, "bash", "cat a")
    assert run(2, "bash", "cat a")  # served
    assert not run(3, "bash", "echo x > a")  # a write: invalidates
    assert not run(4, "bash", "cat a")  # read fresh
    assert run(5, "bash", "cat a")
    assert not run(6, "bash", "make")  # unknown: invalidates
    assert not run(7, "bash", "cat a")
    assert not run(8, "shell", "cat a")  # another tool is another cache key
    assert not run(9, "bash", "cat a; rm a")  # a read followed by a write is a write
    assert not run(10, "bash", "cat a")


def test_shell_reads_can_be_turned_off() -> None:
    runtime = DedupRuntime(Dedup(shell_reads=False))
    call = _call("bash", "cat a", 1)
    assert runtime.reads(Batch(1, (call,), (ToolKind(),))) == [None]
    assert step_from_dict(Dedup(shell_reads=False).to_dict()) == Dedup(shell_reads=False)
    with pytest.raises(ConfigurationError, match="shell_reads must be true or false"):
        Dedup(shell_reads="yes")  # type: ignore[arg-type]


@pytest.mark.anyio
async def test_the_live_agent_serves_a_repeated_read_of_its_shell_and_reads_again_after_a_write(
    tmp_path: Path,
) -> None:
    """Our own ``run_shell`` through the agent loop: the second ``cat`` is served from the cache, the
    ``cat`` after an append runs again and shows the new line."""
    (tmp_path / "notes.txt").write_text("first\n")

    def call(k: int, command: str) -> Message:
        return Message("assistant", "", (ToolCall(f"c{k}", "run_shell", json.dumps({"command": command})),))

    script = [call(1, "cat notes.txt"), call(2, "cat notes.txt"), call(3, "echo second >> notes.txt")]
    script += [call(4, "cat notes.txt"), text("done")]
    agent = Agent(
        FunctionModel.scripted(script),
        tools=[shell_tool(tmp_path)],
        context=Policy("d", (Dedup(),)),
        limits=RunLimits(max_iterations=len(script)),
        trace_dir=tmp_path / "traces",
    )
    live = _Run(agent, "Read the notes.")
    result = await live.execute()
    assert result.output == "done"
    outputs = [m.text for m in live.history if m.role == "tool"]
    assert outputs[1].startswith("[already called in iteration 1 (tool_call_id=c1)")
    assert "first" in outputs[1] and "second" not in outputs[1]
    assert "first\nsecond" in outputs[3] and not outputs[3].startswith("[already called")
    assert sum(i.dedup_hits for i in result.iterations) == 1


def _lexed(command: str) -> list[str] | None:
    """The shell lexer's tokens, as the dedup rules read commands (quotes, escapes, operators)."""
    lexer = shlex.shlex(command, posix=True, punctuation_chars=OPERATOR_CHARS)
    lexer.whitespace_split = True
    lexer.whitespace = " \t"
    lexer.commenters = ""
    try:
        return list(lexer)
    except ValueError:
        return None


@settings(max_examples=2000, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab -.=~/*?$!{}[]#();<>|&\n\t\r\x0b2é'\"\\"), max_size=24))
def test_commands_are_tokenized_as_the_shell_lexer_does(command: str) -> None:
    lexed = words(command)
    assert (list(lexed.tokens) if lexed is not None else None) == _lexed(command)


def _tokens(command: str) -> list[str] | None:
    lexed = words(command)
    return None if lexed is None else list(lexed.tokens)


def test_plain_commands_take_the_regex_and_quoted_ones_the_lexer() -> None:
    assert _tokens("grep -n foo a.py|head -5 2>/dev/null;ls") == [
        "grep", "-n", "foo", "a.py", "|", "head", "-5", "2", ">", "/dev/null", ";", "ls",
    ]  # fmt: skip
    assert _tokens('echo \'a | b\' "c\\"d"') == ["echo", "a | b", 'c"d']
    assert _tokens("echo 'open") is None
