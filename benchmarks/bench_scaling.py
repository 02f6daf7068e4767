"""Does the replay bench's or the inspector's work grow faster than a valid but hostile input?

Each case is one path a recorded log or a trace takes (the importers alone, ``bench`` with every
preset, ``bench prompts``, ``bench merge``, ``trace show|stats|html``, ``resume``) and one
pathological shape of an otherwise valid input, written at size N and 4N (16N with ``--big``
where it is cheap). Each size runs in a child process under a hard ``timeout`` (SIGKILL) and an
address-space limit (``resource.setrlimit(RLIMIT_AS)`` in the child, inherited by the bench's
workers); the child reports its CPU seconds (its own and its children's) and peak RSS. Printed
per (path, shape): CPU at N and 4N, the ratio, peak RSS at both, and what went wrong (a non-zero
exit, a traceback on stderr, the timeout, the memory limit). Linear work shows a ratio near 4 or
under (fixed costs: the interpreter, imports, the worker pool); quadratic work near 16. It found
four quadratic importers (docs/faults.md cases 67-70, fixed) and the rulers' per-term search of the
whole run (case 71: ``bench cc/json`` at 128,000 characters an output is killed at 400 s).

    python benchmarks/bench_scaling.py                        # every case
    python benchmarks/bench_scaling.py --only cc/ --scale 0.5 # Claude Code cases, half the sizes
    python benchmarks/bench_scaling.py --list

Exit 1 when any ratio exceeds ``--limit`` (default 8), a child failed, printed a traceback, hit
the timeout or the memory limit. CPU time, not wall time: on a shared machine, repeat before
believing one ratio. The logs are synthetic (nothing from ``../shared``) and written to a
temporary folder (``--keep DIR`` to keep them).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MODEL = "claude-sonnet-4-5-20250929"
TIME = "2026-01-01T00:00:00.000Z"

# --- Claude Code logs ---------------------------------------------------------------------------


def _cc(kind: str, message: dict[str, Any], uuid: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    entry = {"type": kind, "message": message, "uuid": uuid, "parentUuid": parent, "sessionId": "s"}
    return {**entry, "timestamp": TIME, **extra}


def _usage(tokens: int = 100) -> dict[str, int]:
    return {"input_tokens": 3, "cache_read_input_tokens": tokens, "output_tokens": 10}


def _reply(mid: str, blocks: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": mid, "role": "assistant", "model": MODEL, "content": blocks, "usage": _usage()}


def _use(cid: str, command: str) -> dict[str, Any]:
    return {"type": "tool_use", "id": cid, "name": "Bash", "input": {"command": command}}


def _result(cid: str, text: str) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": cid, "content": text}


def cc_steps(outputs: list[str], commands: list[str] | None = None, **extra: Any) -> Iterator[dict[str, Any]]:
    """A session of one call per step, one output each, chained by ``parentUuid``."""
    yield _cc("user", {"role": "user", "content": "Work on the files."}, "u0", None, **extra)
    parent = "u0"
    for k, output in enumerate(outputs):
        command = commands[k] if commands else f"cat f{k}.py"
        yield _cc("assistant", _reply(f"m{k}", [_use(f"c{k}", command)]), f"a{k}", parent, **extra)
        yield _cc("user", {"role": "user", "content": [_result(f"c{k}", output)]}, f"r{k}", f"a{k}", **extra)
        parent = f"r{k}"


def cc_parallel(calls: int, *, one_entry: bool) -> Iterator[dict[str, Any]]:
    """One response of ``calls`` tool calls (one entry, or one entry per call sharing the
    response's id as Claude Code writes them), then each result in its own entry."""
    yield _cc("user", {"role": "user", "content": "Read them all."}, "u0", None)
    uses = [_use(f"c{i}", f"cat f{i}.py") for i in range(calls)]
    parent = "u0"
    groups = [uses] if one_entry else [[u] for u in uses]
    for i, group in enumerate(groups):
        yield _cc("assistant", _reply("m0", group), f"a{i}", parent)
        parent = f"a{i}"
    for i in range(calls):
        yield _cc(
            "user", {"role": "user", "content": [_result(f"c{i}", f"text of f{i}.py")]}, f"r{i}", parent
        )
        parent = f"r{i}"
    yield _cc("assistant", _reply("m1", [{"type": "text", "text": "done"}]), "end", parent)


def cc_same_ids(calls: int) -> Iterator[dict[str, Any]]:
    """One response of ``calls`` tool calls that all reuse one call id (a damaged log)."""
    for entry in cc_parallel(calls, one_entry=True):
        for block in entry["message"]["content"]:
            if isinstance(block, dict) and block.get("type") in ("tool_use", "tool_result"):
                block["id" if block["type"] == "tool_use" else "tool_use_id"] = "same"
        yield entry


def cc_text_blocks(blocks: int) -> Iterator[dict[str, Any]]:
    """One response written as ``blocks`` entries of one text block each (streamed)."""
    yield _cc("user", {"role": "user", "content": "Explain."}, "u0", None)
    parent = "u0"
    for i in range(blocks):
        yield _cc(
            "assistant", _reply("m0", [{"type": "text", "text": f"part {i} " + "w" * 200}]), f"a{i}", parent
        )
        parent = f"a{i}"


def _deep(depth: int, leaf: Any) -> Any:
    for _ in range(depth):
        leaf = {"k": [leaf]}
    return leaf


def cc_deep(calls: int) -> Iterator[dict[str, Any]]:
    """Calls whose arguments and outputs nest 120 levels deep (two per level: under the readers' 255)."""
    outputs = [json.dumps(_deep(120, i)) for i in range(calls)]
    for entry in cc_steps(outputs):
        if entry["type"] == "assistant":
            entry["message"]["content"][0]["input"] = _deep(120, entry["uuid"])
        yield entry


def cc_wide_tree(prompts: int) -> Iterator[dict[str, Any]]:
    """Every prompt links to the first entry (a rewind each time): a tree ``prompts`` wide."""
    yield from cc_steps(["first output"])
    for k in range(prompts):
        yield _cc("user", {"role": "user", "content": f"Try again {k}."}, f"p{k}", "u0")
        yield _cc("assistant", _reply(f"n{k}", [{"type": "text", "text": f"ok {k}"}]), f"q{k}", f"p{k}")


def cc_sidechains(count: int) -> Iterator[dict[str, Any]]:
    """``count`` subagents (sidechains) of two steps each in one file."""
    yield from cc_steps(["main output"])
    for s in range(count):
        for step in cc_steps([f"x{s}", f"y{s}"], isSidechain=True, agentId=f"g{s}"):
            entry = {**step, "uuid": f"s{s}-{step['uuid']}", "message": {**step["message"]}}
            if entry["parentUuid"] is not None:
                entry["parentUuid"] = f"s{s}-{entry['parentUuid']}"
            if "id" in entry["message"]:
                entry["message"]["id"] = f"s{s}-{entry['message']['id']}"
            yield entry


def cc_sidechain_chain(steps: int) -> Iterator[dict[str, Any]]:
    """One subagent log of ``steps`` steps: a ``parentUuid`` chain of 2 x ``steps`` links."""
    yield from cc_steps([f"out {k}" for k in range(steps)], isSidechain=True, agentId="deep")


def cc_uuid_reuse(entries: int) -> Iterator[dict[str, Any]]:
    """``entries`` prompts that all reuse one ``uuid`` (a damaged or hand-edited log), each another text."""
    yield from cc_steps(["first output"])
    for k in range(entries):
        yield _cc("user", {"role": "user", "content": f"note {k}"}, "same", None)
    yield _cc("assistant", _reply("last", [{"type": "text", "text": "done"}]), "z", "same")


# --- Codex rollouts -----------------------------------------------------------------------------


def _cx(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
    return {"timestamp": TIME, "type": kind, "payload": payload}


def _cx_user(text: str) -> dict[str, Any]:
    return _cx(
        "response_item",
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]},
    )


def _cx_count() -> dict[str, Any]:
    usage = {"input_tokens": 100, "cached_input_tokens": 50, "output_tokens": 10, "total_tokens": 110}
    return _cx(
        "event_msg", {"type": "token_count", "info": {"last_token_usage": usage, "total_token_usage": usage}}
    )


def _cx_call(cid: str, output: str) -> list[dict[str, Any]]:
    arguments = json.dumps({"command": ["bash", "-lc", f"cat {cid}.py"]})
    return [
        _cx(
            "response_item",
            {"type": "function_call", "name": "shell", "arguments": arguments, "call_id": cid},
        ),
        _cx("response_item", {"type": "function_call_output", "call_id": cid, "output": output}),
    ]


def _cx_head() -> list[dict[str, Any]]:
    return [
        _cx("session_meta", {"id": "s", "cli_version": "0.60.0"}),
        _cx("turn_context", {"model": "gpt-5-codex"}),
    ]


def cx_steps(outputs: list[str]) -> Iterator[dict[str, Any]]:
    yield from _cx_head()
    yield _cx_user("Work on the files.")
    for k, output in enumerate(outputs):
        yield from _cx_call(f"c{k}", output)
        yield _cx_count()


def cx_parallel(calls: int) -> Iterator[dict[str, Any]]:
    """One response of ``calls`` function calls, then all their outputs."""
    yield from _cx_head()
    yield _cx_user("Read them all.")
    pairs = [_cx_call(f"c{i}", f"text {i}") for i in range(calls)]
    yield from (call for call, _ in pairs)
    yield from (output for _, output in pairs)
    yield _cx_count()


def cx_compactions(turns: int) -> Iterator[dict[str, Any]]:
    """``turns`` user turns of one step, each followed by a compaction that keeps no replacement
    history (older CLIs: the agent keeps the user messages so far)."""
    yield from _cx_head()
    for k in range(turns):
        yield _cx_user(f"Turn {k}: work on f{k}.py.")
        yield from _cx_call(f"c{k}", f"output {k}")
        yield _cx_count()
        yield _cx("compacted", {"message": f"summary {k}"})


def cx_rollbacks(turns: int) -> Iterator[dict[str, Any]]:
    """``turns`` turns, then half of them rolled back one at a time."""
    yield from _cx_head()
    for k in range(turns):
        yield _cx_user(f"Turn {k}.")
        yield from _cx_call(f"c{k}", f"output {k}")
        yield _cx_count()
    for _ in range(turns // 2):
        yield _cx("event_msg", {"type": "thread_rolled_back", "num_turns": 1})
    yield _cx_user("Go on.")
    yield from _cx_call("last", "last output")


# --- output shapes (benchmarks/hostile_scaling.py's, and many distinct salient strings) ------------

SHAPES: dict[str, Callable[[int, int], str]] = {
    "slashes": lambda n, k: "ab/" * (n // 3) + f"f{k}.py",
    "camel": lambda n, k: "aB" * (n // 2) + f"z{k}",
    "json": lambda n, k: json.dumps({f"key_{i}": f"/v/{i}/{k}" for i in range(n // 16)}),
    "lines": lambda n, k: "\n".join(f"line_{i} {k}" for i in range(n // 12)),
    "quotes": lambda n, k: "'\"`" * (n // 3) + f"q_{k}",
    "numbers": lambda n, k: " ".join(str(i) for i in range(n // 6)) + f" k{k}",
    "diff": lambda n, k: "\n".join(
        f"+++ b/src/f{i}.py\n@@ -{i},3 +{i},4 @@\n-a_{i}\n+b_{i}" for i in range(n // 40)
    ),
    "salient": lambda n, k: " ".join(f"src/m{k}_{i}/Name{i}x{k}.py:{i}" for i in range(n // 28)),
}
SHAPE_STEPS = 24


def cc_shape(shape: str, size: int) -> Iterator[dict[str, Any]]:
    outputs = [SHAPES[shape](size, k) for k in range(SHAPE_STEPS)]
    commands = [f"cat {SHAPES[shape](size // 4, k)}" for k in range(SHAPE_STEPS)]
    return cc_steps(outputs, commands)


# --- files --------------------------------------------------------------------------------------


def write_lines(path: Path, records: Iterator[dict[str, Any]], *, newline_at_end: bool = True) -> Path:
    with path.open("w") as out:
        first = True
        for record in records:
            out.write(("" if first else "\n") + json.dumps(record, separators=(",", ":")))
            first = False
        if newline_at_end:
            out.write("\n")
    return path


def write_trace(path: Path, iterations: int, output_chars: int) -> Path:
    """A trace of ``iterations`` iterations of one ``output_chars`` tool output each, every event of
    a constant size (``tests/long_trace.py``'s requests list the iterations a summary stands for,
    so its file grows with the square of its iterations)."""
    import orjson

    from tiered_agent import Message, ToolCall, Usage
    from tiered_agent._trace import (
        MessageEvent,
        ModelRequest,
        ModelResponse,
        RunEnded,
        RunStarted,
        ToolResult,
        event_to_dict,
    )

    def events() -> Iterator[Any]:
        yield RunStarted(run_id="long", model="openai/gpt-4o-mini", task="A long run", started_at=0.0)
        yield MessageEvent(Message("user", "A long run"))
        for it in range(1, iterations + 1):
            yield ModelRequest(it, 2 * it, 3000, 3000, 3000)
            call = ToolCall(f"call_{it}", "read_file", f'{{"path": "file_{it}.log"}}')
            yield MessageEvent(Message("assistant", f"Step {it}.", tool_calls=(call,), iteration=it))
            yield ModelResponse(iteration=it, usage=Usage(3000, 50, 2048, 1, 0.0006), model="gpt-4o-mini")
            output = (f"iteration {it}: " + "x" * 60 + "\n") * (output_chars // 75 + 1)
            yield MessageEvent(
                Message("tool", output[:output_chars], tool_call_id=call.id, name="read_file", iteration=it)
            )
            yield ToolResult(iteration=it, tool_call_id=call.id, name="read_file", output_chars=output_chars)
        yield RunEnded(
            "max_iterations", None, iterations, Usage(3000 * iterations, 50 * iterations, 0, iterations)
        )

    with path.open("wb") as out:
        for event in events():
            out.write(orjson.dumps(event_to_dict(event)) + b"\n")
    return path


@dataclass(frozen=True)
class Case:
    """One (path, shape): ``make(n, folder)`` writes the input and returns the child's command."""

    name: str
    size: int  # N; the case runs at N and 4N
    make: Callable[[int, Path], list[str]]
    big: bool = False  # 16N is cheap enough for --big
    exits: tuple[int, ...] = (0,)  # the exit codes that are no problem


def _load(write: Callable[[int, Path], Path]) -> Callable[[int, Path], list[str]]:
    return lambda n, folder: ["load", str(write(n, folder))]


def _bench(write: Callable[[int, Path], Path], policies: str = "") -> Callable[[int, Path], list[str]]:
    def make(n: int, folder: Path) -> list[str]:
        extra = ["--policies", policies] if policies else []
        return ["cli", "bench", str(write(n, folder)), "--out", str(folder / "out"), *extra]

    return make


def _cli(write: Callable[[int, Path], Path], *args: str) -> Callable[[int, Path], list[str]]:
    def make(n: int, folder: Path) -> list[str]:
        return [
            "cli",
            *[str(write(n, folder)) if a == "{}" else a.replace("{dir}", str(folder)) for a in args],
        ]

    return make


def _cc_file(records: Callable[[int], Iterator[dict[str, Any]]], **kw: Any) -> Callable[[int, Path], Path]:
    return lambda n, folder: write_lines(folder / "session.jsonl", records(n), **kw)


def _cx_file(records: Callable[[int], Iterator[dict[str, Any]]]) -> Callable[[int, Path], Path]:
    return lambda n, folder: write_lines(folder / "rollout-2026-01-01T00-00-00-s.jsonl", records(n))


def _trace_file(iterations: Callable[[int], int], chars: Callable[[int], int]) -> Callable[[int, Path], Path]:
    return lambda n, folder: write_trace(folder / "run.jsonl", iterations(n), chars(n))


def _shards(n: int, folder: Path) -> list[str]:
    """``n`` shards of a bench of ``n`` two-step sessions, then ``bench merge`` of them all."""
    runs = folder / "runs"
    runs.mkdir()
    for i in range(n):
        write_lines(runs / f"s{i}.jsonl", cc_steps([f"output {i}", f"more {i}"]))
    shards = []
    for k in range(1, n + 1):
        shard = folder / f"shard-{k}" / "bench.json"
        command = [sys.executable, "-m", "tiered_agent", "bench", str(runs), "--shard", f"{k}/{n}"]
        subprocess.run(
            [*command, "--json", str(shard), "--out", str(shard.parent), "--policies", "full,tiered"],
            check=True,
            capture_output=True,
        )
        shards.append(str(shard))
    return [
        "cli",
        "bench",
        "merge",
        *shards,
        "--json",
        str(folder / "m" / "bench.json"),
        "--out",
        str(folder / "m"),
    ]


def _resume(n: int, folder: Path) -> list[str]:
    trace = write_trace(folder / "run.jsonl", n, 200)
    endpoint = ["--api-base", "http://127.0.0.1:9/v1", "--max-retries", "0"]
    model = ["--model", "openai/gpt-4o-mini", "--policy", "full"]
    return ["cli", "resume", str(trace), "--follow-up", "go on", *model, *endpoint]


MB = 1_000_000
CASES: list[Case] = [
    # the importers alone
    Case("load cc/one-output", 12 * MB, _load(_cc_file(lambda n: cc_steps(["x" * n]))), big=True),
    Case("load cc/long-line", 25 * MB, _load(_cc_file(lambda n: cc_steps(["y" * n]), newline_at_end=False))),
    Case("load cx/one-output", 12 * MB, _load(_cx_file(lambda n: cx_steps(["x" * n]))), big=True),
    Case(
        "load cc/tiny-steps", 6_000, _load(_cc_file(lambda n: cc_steps([str(k) for k in range(n)]))), big=True
    ),
    Case(
        "load cx/tiny-steps", 6_000, _load(_cx_file(lambda n: cx_steps([str(k) for k in range(n)]))), big=True
    ),
    Case("load cc/calls-one-entry", 2_500, _load(_cc_file(lambda n: cc_parallel(n, one_entry=True)))),
    Case("load cc/calls-entries", 2_500, _load(_cc_file(lambda n: cc_parallel(n, one_entry=False)))),
    Case("load cc/same-call-ids", 2_500, _load(_cc_file(cc_same_ids))),
    Case("load cx/parallel-calls", 2_500, _load(_cx_file(cx_parallel))),
    Case("load cc/text-blocks", 2_500, _load(_cc_file(cc_text_blocks))),
    Case("load cc/deep-json", 500, _load(_cc_file(cc_deep))),
    Case("load cc/wide-tree", 6_000, _load(_cc_file(cc_wide_tree))),
    Case("load cc/sidechain-chain", 6_000, _load(_cc_file(cc_sidechain_chain))),
    Case("load cc/sidechains", 500, _load(_cc_file(cc_sidechains))),
    Case("load cc/uuid-reuse", 2_500, _load(_cc_file(cc_uuid_reuse))),
    Case("load cx/compactions", 1_000, _load(_cx_file(cx_compactions))),
    Case("load cx/rollbacks", 2_500, _load(_cx_file(cx_rollbacks))),
    # the replay through every preset (rulers, cache simulation, anatomy, report)
    *[
        Case(f"bench cc/{shape}", 32_000, _bench(_cc_file(lambda n, s=shape: cc_shape(s, n))))
        for shape in SHAPES
    ],
    Case("bench cc/tiny-steps", 250, _bench(_cc_file(lambda n: cc_steps([f"out {k}" for k in range(n)])))),
    Case("bench cc/calls-one-entry", 2_500, _bench(_cc_file(lambda n: cc_parallel(n, one_entry=True)))),
    Case("bench cc/one-output", 3 * MB, _bench(_cc_file(lambda n: cc_steps(["x" * n, "small"])))),
    Case("bench cx/compactions", 100, _bench(_cx_file(cx_compactions))),
    Case("bench cc/sidechains", 100, _bench(_cc_file(cc_sidechains))),
    Case(
        "prompts cc/salient",
        32_000,
        _cli(
            _cc_file(lambda n: cc_shape("salient", n)),
            "bench",
            "prompts",
            "{}",
            "-o",
            "{dir}/prompts.jsonl",
            "--policies",
            "tiered,full",
        ),
    ),
    Case("merge shards", 4, _shards),
    # the inspector and resume
    Case("trace-show events", 4_000, _cli(_trace_file(lambda n: n, lambda n: 100), "trace", "show", "{}")),
    Case("trace-stats events", 4_000, _cli(_trace_file(lambda n: n, lambda n: 100), "trace", "stats", "{}")),
    Case(
        "trace-html events",
        4_000,
        _cli(_trace_file(lambda n: n, lambda n: 100), "trace", "html", "{}", "-o", "{dir}/page.html"),
    ),
    Case(
        "trace-show one-event",
        6 * MB,
        _cli(_trace_file(lambda n: 1, lambda n: n), "trace", "show", "{}"),
        big=True,
    ),
    Case(
        "trace-html one-event",
        6 * MB,
        _cli(_trace_file(lambda n: 1, lambda n: n), "trace", "html", "{}", "-o", "{dir}/page.html"),
        big=True,
    ),
    Case("resume events", 2_000, _resume, exits=(1,)),  # the model cannot be reached: one sentence
]


# --- the child ----------------------------------------------------------------------------------


def child(argv: list[str]) -> int:
    """``--child REPORT MEMORY_MB MODE ARGS``: run one case under the address-space limit and write
    its rusage to REPORT (the exit code and stderr are the parent's to read)."""
    report, memory, mode, *args = argv
    limit = int(memory) * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    code = 0
    try:
        if mode == "load":
            from tiered_agent.bench._importers import load_runs

            loaded = load_runs([args[0]])
            steps = sum(r.steps for r in loaded.runs)
            print(f"{len(loaded.runs)} runs, {steps} steps, {len(loaded.skipped)} skipped", file=sys.stderr)
        else:
            from tiered_agent.cli import cli

            sys.argv = ["tiered-agent", *args]
            cli(args, prog_name="tiered-agent")
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
    finally:
        own, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime
        Path(report).write_text(json.dumps({"cpu": cpu, "rss_mb": max(own.ru_maxrss, kids.ru_maxrss) / 1024}))
    return code


@dataclass(frozen=True)
class Measure:
    cpu: float
    rss_mb: float
    problem: str  # empty when the child exited 0 with no traceback within its limits


def measure(case: Case, n: int, folder: Path, timeout: float, memory_mb: int) -> Measure:
    folder.mkdir(parents=True)
    command = case.make(n, folder)
    report = folder / "rusage.json"
    argv = [sys.executable, __file__, "--child", str(report), str(memory_mb), *command]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        ["timeout", "-s", "KILL", str(timeout), *argv],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        check=False,
    )
    got = json.loads(report.read_text()) if report.exists() else {"cpu": float("nan"), "rss_mb": float("nan")}
    problem = _problem(done.returncode, done.stderr, timeout, case.exits)
    return Measure(got["cpu"], got["rss_mb"], problem)


def _problem(code: int, stderr: str, timeout: float, exits: tuple[int, ...]) -> str:
    if code == -9 or code == 137:
        return f"killed at the {timeout:g} s timeout"
    if "MemoryError" in stderr:
        return "memory limit"
    if "Traceback" in stderr:
        return "traceback: " + stderr.strip().splitlines()[-1][:160]
    if code not in exits:
        return f"exit {code}: " + (stderr.strip().splitlines() or [""])[-1][:160]
    return ""


def main(argv: list[str]) -> int:
    if argv[:1] == ["--child"]:
        return child(argv[1:])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help="cases whose name contains this (comma-separated)")
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every N")
    parser.add_argument("--big", action="store_true", help="also 16N for the cases where it is cheap")
    parser.add_argument("--limit", type=float, default=8.0)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds per child")
    parser.add_argument("--memory-mb", type=int, default=6000, help="address-space limit per child")
    parser.add_argument("--keep", type=Path)
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args(argv)
    wanted = [c for c in CASES if not args.only or any(o in c.name for o in args.only.split(","))]
    if args.list:
        print("\n".join(f"{c.name:28s} N={c.size:,}" for c in wanted))
        return 0
    failed = 0
    worst = 0.0
    with tempfile.TemporaryDirectory() as tmp:
        base = args.keep or Path(tmp)
        for case in wanted:
            n = max(1, round(case.size * args.scale))
            sizes = [n, 4 * n, 16 * n] if args.big and case.big else [n, 4 * n]
            slug = case.name.replace(" ", "_").replace("/", "-")
            got = [measure(case, s, base / slug / str(s), args.timeout, args.memory_mb) for s in sizes]
            ratio = got[1].cpu / max(got[0].cpu, 1e-3)
            worst = max(worst, ratio) if ratio == ratio else worst
            cpus = " ".join(f"{m.cpu:7.2f}" for m in got)
            rss = " ".join(f"{m.rss_mb:6.0f}" for m in got)
            problems = "; ".join(f"{s:,}: {m.problem}" for s, m in zip(sizes, got, strict=True) if m.problem)
            failed += bool(problems)
            print(
                f"{case.name:28s} N={n:>11,} cpu s {cpus}  x{ratio:5.1f}  rss MB {rss}  {problems}",
                flush=True,
            )
    print(f"worst ratio x{worst:.1f} (limit x{args.limit:g}); {failed} case(s) failed")
    return 1 if worst > args.limit or failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
