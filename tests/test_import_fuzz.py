"""Hostile input for every third-party importer: a seeded mutation fuzzer.

Minimal logs of each format (mini-swe-agent 1.x and 2.x, SWE-agent text, function calling and
RetryAgent attempts, tau-bench and tau2-bench, OpenHands SDK (with a condensation) and V0, Claude
Code, Codex current and flat) are mutated byte by byte (truncation, flipped,
inserted and deleted bytes, NUL and astral characters, duplicated or dropped lines) and as JSON
(every field, one at a time or several at once, replaced by a value of another type, a missing
key, ``{"type": []}``, huge numbers, deep nesting, NUL and astral text). Every mutated file must be
imported or skipped with a reason, never a traceback, and within a per-case time limit; the runs it
yields must replay under ``full``. The importers' last-resort net (an unforeseen exception becomes a
skip naming it) must never be what catches a case.
"""

from __future__ import annotations

import copy
import json
import random
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import anyio
import pytest
from test_importers import mini_doc, swe_fc_doc, swe_text_doc, tau_doc
from test_importers_recorded_variants import (
    mini_v2_toolcall_doc,
    openhands_condensed_events,
    openhands_v0_instance,
    tau2_results,
)
from test_importers_sessions import openhands_events

from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import policy_config, replay_run

HOME = Path(__file__).parent / "fixtures" / "home"
CLAUDE = HOME / ".claude" / "projects" / "-home-user-demo" / "5f0c1d2e-0000-4000-8000-000000000001.jsonl"
CODEX = next((HOME / ".codex" / "sessions" / "2025" / "10" / "29").glob("rollout-*.jsonl"))
CODEX_FLAT = next((HOME / ".codex" / "sessions" / "2025" / "06" / "01").glob("rollout-*.jsonl"))
CASES_PER_FORMAT = 70
TIME_LIMIT_S = 10
SEED = "fuzz"
COUNTER = IdCounter("o200k_base")


def _deep(levels: int) -> Any:
    """An object nested ``levels`` deep: deeper than JSON writers allow (orjson stops at 255)."""
    value: Any = {}
    for _ in range(levels):
        value = {"a": value}
    return value


HOSTILE_VALUES: tuple[Any, ...] = (
    [],
    {},
    {"type": []},
    "x",
    "",
    0,
    -1,
    10**18,
    -(10**18),
    1e308,
    -1e308,
    0.5,
    True,
    None,
    "\x00\x00",
    "\U0001f600" * 50,
    "\ud800",
    [[[[[[[[[[[]]]]]]]]]]],
    ["a", 1, None, {}],
    "a" * 5000,
    _deep(300),
)


def _hostile(rng: random.Random) -> Any:
    return copy.deepcopy(rng.choice(HOSTILE_VALUES))  # never the same object twice in a document


def _documents() -> dict[str, tuple[str, Any]]:
    """Format -> (file name, JSON document, or list of JSON lines for the line formats)."""

    def lines(path: Path) -> list[Any]:
        return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]

    return {
        "mini-swe-agent": ("demo.traj.json", mini_doc()),
        "swe-agent-text": ("demo.traj", swe_text_doc()),
        "swe-agent-fc": ("fc.traj", swe_fc_doc()),
        "tau-bench": ("tau.json", tau_doc()),
        "openhands": ("oh.json", openhands_events()),
        "mini-swe-agent-v2": ("v2.traj.json", mini_v2_toolcall_doc()),
        "swe-agent-attempts": ("retry.traj", {"attempts": [swe_fc_doc(), swe_text_doc()], **swe_fc_doc()}),
        "tau2-bench": ("tau2.json", tau2_results()),
        "openhands-condensed": ("ohc.json", openhands_condensed_events()),
        "openhands-v0": ("output.jsonl", [openhands_v0_instance("a"), openhands_v0_instance("b")]),
        "claude-code": ("session.jsonl", lines(CLAUDE)),
        "codex": ("rollout-a.jsonl", lines(CODEX)),
        "codex-flat": ("rollout-b.jsonl", lines(CODEX_FLAT)),
    }


def _serialize(document: Any, name: str) -> bytes:
    if name.endswith(".jsonl"):
        return ("\n".join(json.dumps(r) for r in document) + "\n").encode("utf-8", "surrogatepass")
    return json.dumps(document).encode("utf-8", "surrogatepass")


# ---------------------------------------------------------------- JSON-structure mutations
def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    """Every position in a JSON document (object keys and list indexes), depth first."""
    yield prefix
    if isinstance(node, dict):
        for key, value in node.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from _paths(value, (*prefix, index))


def _at(document: Any, path: tuple[Any, ...]) -> tuple[Any, Any]:
    parent = document
    for step in path[:-1]:
        parent = parent[step]
    return parent, path[-1]


def _mutate_json(document: Any, rng: random.Random) -> Any:
    document = json.loads(json.dumps(document))
    for _ in range(rng.choice((1, 1, 2, 4))):
        paths = [p for p in _paths(document) if p]
        if not paths:
            return _hostile(rng)
        parent, key = _at(document, rng.choice(paths))
        action = rng.random()
        if action < 0.2 and isinstance(parent, dict):
            del parent[key]  # a missing key
        elif action < 0.3 and isinstance(parent, list):
            parent.insert(key, _hostile(rng))  # an extra element
        else:
            parent[key] = _hostile(rng)  # a value of another type
    return document


# ---------------------------------------------------------------- byte mutations
def _mutate_bytes(data: bytes, rng: random.Random) -> bytes:
    kind = rng.randrange(7)
    at = rng.randrange(max(len(data), 1))
    if kind == 0:
        return data[:at]  # truncated
    if kind == 1:
        return data[:at] + bytes([rng.randrange(256)]) + data[at + 1 :]  # a flipped byte
    if kind == 2:
        return (
            data[:at]
            + rng.choice((b"\x00", b"\xff\xfe", "\U0001f600".encode(), b'"', b"{", b"\n"))
            + data[at:]
        )
    if kind == 3:
        return data[:at] + data[at + rng.randrange(1, 200) :]  # a deleted range
    lines = data.split(b"\n")
    index = rng.randrange(len(lines))
    if kind == 4:
        lines.insert(index, lines[index])  # a duplicated line
    elif kind == 5:
        del lines[index]  # a dropped line
    else:
        lines[index] = lines[index][: len(lines[index]) // 2]  # a line cut short
    return b"\n".join(lines)


@contextmanager
def _time_limit(seconds: int) -> Iterator[None]:
    def expire(signum: int, frame: FrameType | None) -> None:
        raise TimeoutError(f"a case ran over {seconds} s")

    previous = signal.signal(signal.SIGALRM, expire)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def _replays(runs: tuple[RecordedRun, ...]) -> None:
    async def main() -> None:
        for run in runs:
            await replay_run(run, {"full": policy_config("full")}, counter=COUNTER)

    anyio.run(main)


def _cases(fmt: str, name: str, document: Any) -> Iterator[tuple[str, bytes]]:
    rng = random.Random(f"{fmt}-{SEED}")  # seeded: the same cases on every run
    original = _serialize(document, name)
    for index in range(CASES_PER_FORMAT):
        if index % 2:
            mutated: Any = _mutate_json(document, rng)
            if name.endswith(".jsonl") and not isinstance(mutated, list):
                mutated = [mutated]
            yield f"{fmt}#{index} json", _serialize(mutated, name)
        else:
            yield f"{fmt}#{index} bytes", _mutate_bytes(original, rng)


FORMATS = _documents()


@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_mutated_logs_are_imported_or_skipped_with_a_reason(fmt: str, tmp_path: Path) -> None:
    name, document = FORMATS[fmt]
    outcomes = {"imported": 0, "skipped": 0, "damaged": 0}
    for case, data in _cases(fmt, name, document):
        path = tmp_path / case.replace("#", "_").replace(" ", "_") / name
        path.parent.mkdir()
        path.write_bytes(data)
        with _time_limit(TIME_LIMIT_S):
            loaded = load_runs([path])
            _replays(loaded.runs)
        for skip in loaded.skipped:
            assert skip.reason.strip(), case
            assert "cannot convert (" not in skip.reason, (
                f"{case}: the last-resort net caught it: {skip.reason}"
            )
        outcomes["imported" if loaded.runs else "skipped"] += 1
        outcomes["damaged"] += bool(loaded.skipped_lines) or bool(loaded.runs and loaded.skipped)
    # the mutations are not all fatal, nor all harmless
    assert outcomes["imported"] > 5 and outcomes["skipped"] + outcomes["damaged"] > 5, outcomes


def test_the_last_resort_net_names_an_unforeseen_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tiered_agent.bench import _import_codex

    def broken(*_: Any, **__: Any) -> Any:
        raise AttributeError("'list' object has no attribute 'get'")

    monkeypatch.setattr(_import_codex, "convert", broken)
    monkeypatch.setattr(
        "tiered_agent.bench._importers._LINE_DETECTORS",
        ((_import_codex.FORMAT, _import_codex.matches, broken),),
    )
    path = tmp_path / "rollout.jsonl"
    path.write_bytes(CODEX.read_bytes())
    [skip] = load_runs([path]).skipped
    assert skip.reason == "codex: cannot convert (AttributeError: 'list' object has no attribute 'get')"


def test_a_malformed_file_beside_a_valid_run_is_skipped_not_fatal(tmp_path: Path) -> None:
    """Issue 16, case 7: a ``"type"`` holding a list made the Claude Code detector raise (an unhashable
    list looked up in a set) and the whole bench stopped."""
    (tmp_path / "x.jsonl").write_text('{"type": []}\n{"type": "x"}\n', encoding="utf-8")
    (tmp_path / "y.jsonl").write_text('{"type": ["a"]}\n{"type": "summary"}\n', encoding="utf-8")
    good = tmp_path / "rollout.jsonl"
    good.write_bytes(CODEX.read_bytes())
    loaded = load_runs([tmp_path])
    assert [r.format for r in loaded.runs] == ["codex"]
    assert [(Path(s.path).name, s.reason.split(" (")[0]) for s in loaded.skipped] == [
        ("x.jsonl", "unrecognized format"),
        ("y.jsonl", "unrecognized format"),
    ]
