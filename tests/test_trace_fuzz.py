"""A seeded mutation fuzzer over this runtime's own trace format (issue 16).

Each case mutates a trace holding every event type (bytes: flips, cuts, insertions, NULs,
duplicated, swapped and moved lines, a torn end; JSON: a field set to a hostile value, a key
dropped, another type or version) and hands it to every reader: the strict reader, the lenient
scan, the resume loader (and for some cases a whole resume), ``trace show|stats|html``'s loader and
views, and the bench's importer. Each must read the trace or refuse it with its own error (one
sentence naming the line), never another exception, and never hang (a per-case SIGALRM guard).
The seeds are fixed: the same cases on every run; a failure names its seed.
"""

from __future__ import annotations

import contextlib
import random
from pathlib import Path
from typing import Any

import anyio
import orjson
import pytest
from hostile_traces import hang_guard, provider_problems, write_sample_trace

from tiered_agent import Agent, Workspace, workspace_tools
from tiered_agent._errors import ConfigurationError, TraceFormatError
from tiered_agent._messages import Message, to_openai
from tiered_agent._resume import ResumeState
from tiered_agent._trace import read_trace, scan_trace
from tiered_agent.bench._import_trace import load_trace_run
from tiered_agent.bench._importers import load_runs
from tiered_agent.inspect import build_run, collect_stats, load_trace, render_page
from tiered_agent.inspect._stats import iteration_dict, run_summary
from tiered_agent.inspect._tables import iteration_table, run_header, totals_table
from tiered_agent.testing import AgentRequest, FunctionModel

SEED = 20251125
CASES = 240
FULL_RESUME_EVERY = 8  # every 8th case also resumes the mutated trace through Agent.resume
CASE_SECONDS = 20  # the hang guard of one case (a case takes milliseconds)

HOSTILE: list[Any] = [
    None,
    True,
    0,
    -1,
    -(10**12),
    10**12,
    2**63 - 1,
    1.5,
    1e308,
    "",
    "x",
    "\u202e\x1b[2J\x1b]0;title\x07",
    "a\x00b",
    [],
    {},
    [None],
    [{"a": 1}],
    {"a": {"b": []}},
    "A" * 5000,
    {"role": "tool", "content": 5, "tool_call_id": [], "iteration": -3},
    {"at": 10**9, "through": -1},
]
INSERTS = [b"\x00", b"\n", b"{", b"}", b'"', b"\\u", b"\xff\xfe", b'"\\ud800"', b"\r\n", b"[]", b"\n\n\n"]


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every path to a value inside a JSON document."""
    found = [prefix] if prefix else []
    if isinstance(node, dict):
        for key, value in node.items():
            found += _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            found += _paths(value, (*prefix, index))
    return found


def _set(document: Any, path: tuple[Any, ...], value: Any) -> None:
    for key in path[:-1]:
        document = document[key]
    document[path[-1]] = value


def _json_mutation(rng: random.Random, line: bytes) -> bytes:
    try:
        document = orjson.loads(line)
    except orjson.JSONDecodeError:
        return line
    if not isinstance(document, dict):
        return line
    action = rng.randrange(4)
    paths = _paths(document)
    if action == 0 and paths:
        _set(document, rng.choice(paths), rng.choice(HOSTILE))
    elif action == 1 and paths:
        path = rng.choice(paths)
        parent = document
        for key in path[:-1]:
            parent = parent[key]
        if isinstance(parent, dict):
            del parent[path[-1]]
    elif action == 2:
        document["type"] = rng.choice(
            ["message", "run_start", "model_response", "summary", "run_end", "mystery", 5]
        )
    else:
        document["v"] = rng.choice([0, 2, "1", None, 1.0])
    return orjson.dumps(document)


def _line_mutation(rng: random.Random, lines: list[bytes]) -> None:
    action = rng.randrange(5)
    index = rng.randrange(len(lines))
    if action == 0:
        lines[index] = _json_mutation(rng, lines[index])
    elif action == 1:
        lines.insert(rng.randrange(len(lines) + 1), lines[index])  # a duplicated line
    elif action == 2:
        other = rng.randrange(len(lines))
        lines[index], lines[other] = lines[other], lines[index]  # two lines swapped
    elif action == 3:
        lines.insert(rng.randrange(len(lines) + 1), lines.pop(index))  # a line moved
    else:
        del lines[index]


def _byte_mutation(rng: random.Random, data: bytes) -> bytes:
    action = rng.randrange(4)
    at = rng.randrange(len(data) + 1)
    if action == 0 and data:
        at = min(at, len(data) - 1)
        return data[:at] + bytes([data[at] ^ rng.randrange(1, 256)]) + data[at + 1 :]
    if action == 1:
        return data[:at] + data[at + rng.randrange(1, 60) :]
    if action == 2:
        return data[:at] + rng.choice(INSERTS) + data[at:]
    return data[:at]  # torn: cut anywhere


def mutate(seed: int, original: bytes) -> bytes:
    """The trace ``original`` with 1-4 random mutations, the same ones for the same ``seed``."""
    rng = random.Random(seed)
    data = original
    for _ in range(rng.randint(1, 4)):
        if rng.random() < 0.7:
            lines = data.split(b"\n")
            _line_mutation(rng, lines)
            data = b"\n".join(lines)
        else:
            data = _byte_mutation(rng, data)
    return data


def _readers(path: Path) -> ResumeState | None:
    """Every reader of a trace on ``path``: each reads it or refuses it with its own one error."""
    scan_trace(path)  # a regular file: the lenient scan always reads (and skips what it cannot)
    try:
        read_trace(path)
    except TraceFormatError as exc:
        assert str(exc).startswith(f"{path}:") and "\n" not in str(exc)
    loaded = load_trace(path)
    run = build_run(loaded)
    run_header(run), iteration_table(run, width=160), totals_table(run.totals)
    run_summary(run), iteration_dict(run), render_page(run, embed_chars=1000)
    collect_stats([path])
    with contextlib.suppress(TraceFormatError):  # the strict importer refuses, naming the line
        load_trace_run(path)
    load_runs([path])  # never raises for a file it cannot use: it skips it with a reason
    try:
        state = ResumeState.load(path, "go on")
    except ConfigurationError:  # nothing to continue (no task, no run_start): one sentence
        return None
    assert provider_problems(to_openai(state.history)) == []
    return state


def _full_resume(path: Path, workspace: Path) -> None:
    requests: list[AgentRequest] = []

    def answer(request: AgentRequest) -> Message:
        requests.append(request)
        return Message("assistant", "resumed")

    agent = Agent(FunctionModel(answer), tools=workspace_tools(Workspace(workspace)), trace_dir=path.parent)

    async def main() -> None:
        try:
            result = await agent.resume(path, follow_up="go on")
        except ConfigurationError:
            return
        assert result.output == "resumed" and provider_problems(requests[0].messages) == []

    anyio.run(main, backend="asyncio")


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> tuple[bytes, Path]:
    root = tmp_path_factory.mktemp("fuzz")
    (root / "ws").mkdir()
    (root / "ws" / "notes.txt").write_text("notes\n")
    return write_sample_trace(root / "sample.jsonl", root / "ws").read_bytes(), root / "ws"


@pytest.mark.parametrize("chunk", range(4))
def test_any_mutated_trace_is_read_or_refused_in_one_sentence_never_a_traceback_or_a_hang(
    chunk: int, original: tuple[bytes, Path], tmp_path: Path
) -> None:
    data, workspace = original
    per_chunk = CASES // 4
    for case in range(chunk * per_chunk, (chunk + 1) * per_chunk):
        seed = SEED + case
        path = tmp_path / f"case-{case}.jsonl"
        path.write_bytes(mutate(seed, data))
        with hang_guard(CASE_SECONDS, f"fuzz case {case} (seed {seed})"):
            try:
                state = _readers(path)
                if state is not None and case % FULL_RESUME_EVERY == 0:
                    _full_resume(path, workspace)
            except Exception as exc:
                raise AssertionError(
                    f"fuzz case {case} (seed {seed}) raised {type(exc).__name__}: {exc}"
                ) from exc


def test_the_mutator_covers_the_kinds_of_damage(original: tuple[bytes, Path], tmp_path: Path) -> None:
    data, _ = original
    reasons: set[str] = set()
    for case in range(CASES):
        path = tmp_path / "case.jsonl"
        path.write_bytes(mutate(SEED + case, data))
        for skipped in scan_trace(path).skipped:
            reasons.add(skipped.reason.split(":")[0].split(" (")[0])
    for expected in (
        "not JSON",
        "schema version 2, expected 1",
        "unknown event type 'mystery'",
        "message.message",
    ):
        assert any(reason.startswith(expected) for reason in reasons), (expected, sorted(reasons)[:40])
