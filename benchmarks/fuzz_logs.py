"""Structure-aware fuzz of recorded logs: mutated copies of real runs and sessions through every preset.

``tests/test_import_fuzz.py`` mutates the test fixtures byte by byte; this script mutates real logs
by their structure, the confusions a type check alone does not catch: a ``role`` or ``type`` swapped
for another known one, call ids duplicated or emptied, timestamps out of range, token counts negative
or huge, list items duplicated or dropped, keys removed, strings blown up or cut. It takes the
smallest files of each folder of PATHS (``--per-folder``), writes ``--variants`` mutated copies of
each (JSON lines: one record mutated per mutation; JSON documents: the document), seeded, to
``--out``, then runs ``tiered-agent bench`` on them with every policy and checks what the team
promises of hostile input: exit 0, no traceback, every skipped file named with its reason, no step
error in any policy, and no run whose replay failed (the bench goes on without such a run and lists
it under ``inputs.failed``: a bug to fix, not an input to skip). With ``--hostile`` (the default) it
also writes whole-file faults under ``hostile/``: bytes, sizes, the structure of a conversation and the
file system (see "hostile classes" below and docs/faults.md). With ``--drift`` (the default) it also
writes, under ``drift/<case>/``, what another CLI version could write of each Claude Code and Codex
log (:data:`DRIFT`: fields renamed or added, lines reordered, unknown entry and block types, usage
missing or only as running totals, rewinds and rollbacks, streamed repeats) and prints, per case, how
many files were replayed and how many had a run skipped with its reason.

    python benchmarks/fuzz_logs.py ../shared/trajectories ../shared/sessions --seed 7 --out /tmp/fuzz7

Exit 0 when every promise held, 1 otherwise (the failures printed).
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import random
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tiered_agent.bench import _import_miniswe, _import_openhands, _import_sweagent, _import_taubench

ODD: list[Any] = [None, True, -1, 0, 10**18, -(10**18), 1.5, "", "x" * 5000, [], {}, [None], {"": None},
                  "2099-99-99T99:99:99Z", "1970-01-01T00:00:00Z", "-1", "NaN", "\u0000"]  # fmt: skip
ROLES = ["user", "assistant", "system", "tool", "developer", "function", "human", "ai", "", "USER"]
TYPES = ["tool_use", "tool_result", "text", "thinking", "image", "function_call", "function_call_output",
         "message", "reasoning", "response_item", "event_msg", "summary", "compacted", "unknown"]  # fmt: skip
IDS = ("id", "tool_use_id", "call_id", "uuid", "parentUuid")
TIMES = ("timestamp", "created_at", "time")
SUFFIXES = (".jsonl", ".json", ".traj")


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield prefix
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, value in items:
        yield from _paths(value, (*prefix, key))


def _get(node: Any, path: tuple[Any, ...]) -> Any:
    for key in path:
        node = node[key]
    return node


def _new_value(rng: random.Random, key: Any, current: Any) -> Any:
    """What a mutation puts at ``key`` in place of ``current``: a new object, never one of
    :data:`ODD`'s own containers (shared, a later mutation would change them everywhere they were
    placed, or place one inside itself: a document with a cycle, which no JSON file can hold)."""
    return copy.deepcopy(_odd_or_changed(rng, key, current))


def _odd_or_changed(rng: random.Random, key: Any, current: Any) -> Any:
    if key == "role":
        return rng.choice(ROLES)
    if key == "type":
        return rng.choice(TYPES)
    if key in IDS:
        return rng.choice(["dup", "", None, 5])
    if key in TIMES:
        return rng.choice(ODD)
    if isinstance(current, int | float) and not isinstance(current, bool):
        return rng.choice([-current, current * 10**9, 0, -1, "12", None, 1.5])
    if isinstance(current, str) and rng.random() < 0.5:
        return rng.choice(
            [current * 50, current[: len(current) // 2], current[::-1], "\n" * 2000, current + "\x1b[31m"]
        )
    return rng.choice(ODD)


def mutate(rng: random.Random, document: Any, times: int) -> Any:
    """``document`` with ``times`` structure-aware mutations (in place; returned)."""
    for _ in range(times):
        paths = [p for p in _paths(document) if p]
        if not paths:
            return document
        path = rng.choice(paths)
        parent, key = _get(document, path[:-1]), path[-1]
        current = parent[key]
        if isinstance(current, list) and current and rng.random() < 0.5:
            index = rng.randrange(len(current))
            if rng.random() < 0.5:
                current.insert(index, copy.deepcopy(current[index]))
            else:
                del current[index]
        elif isinstance(current, dict) and current and rng.random() < 0.3:
            del current[rng.choice(list(current))]
        else:
            parent[key] = _new_value(rng, key, current)
    return document


def _mutated_text(rng: random.Random, source: Path, times: int) -> str:
    text = source.read_text(encoding="utf-8", errors="replace")
    if source.suffix != ".jsonl":
        return json.dumps(mutate(rng, json.loads(text), times))
    records = []
    for line in text.splitlines():
        try:
            records.append(json.loads(line))
        except ValueError:
            continue
    for _ in range(times if records else 0):
        index = rng.randrange(len(records))
        records[index] = mutate(rng, records[index], 1)
    return "".join(json.dumps(r) + "\n" for r in records)


def _sources(roots: list[Path], per_folder: int) -> list[Path]:
    folders = sorted({p.parent for root in roots for p in root.rglob("*") if p.suffix in SUFFIXES})
    chosen: list[Path] = []
    for folder in folders:
        files = sorted(
            (p for p in folder.iterdir() if p.is_file() and p.suffix in SUFFIXES),
            key=lambda p: p.stat().st_size,
        )
        chosen += [p for p in files if not p.name.startswith("_")][:per_folder]
    return chosen


def write_corpus(roots: list[Path], out: Path, seed: int, per_folder: int, variants: int) -> int:
    rng = random.Random(seed)
    written = 0
    for source in _sources(roots, per_folder):
        for k in range(variants):
            try:
                text = _mutated_text(rng, source, rng.choice([1, 3, 10, 40]))
            except ValueError:  # not JSON at all: nothing structural to mutate
                continue
            target = out / source.parent.name / f"m{k}-{source.name}"
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            written += 1
    return written


# ---------------------------------------------------------------- hostile classes (--hostile)
# Whole-file faults that no structure-preserving mutation makes: bytes (encodings, line ends, NUL,
# torn, empty, binary), sizes (a string of tens of MB, a line of 100k records, nesting deeper than
# orjson's 1024, numbers past a double), the structure of a conversation (parent cycles, repeated
# uuids, unknown, missing and repeated tool answers, Codex compactions and metadata out of place,
# time and usage of any form) and the file system (symlink loops, unreadable files, folders named
# like logs), and nesting orjson reads but nothing after it can follow. Each class is written for
# one seeded source of each kind, under ``hostile/``.
HUGE_STRING = 24 << 20
WIDE_RECORDS = 100_000
DEEP = 5000  # past orjson's 1,024 levels
DEEP_READABLE = 1000  # under them, past Python's recursion limit and the 255 levels JSON writers take
DEEP_WRITABLE = 300  # just past the 255 levels JSON writers take: the depth of a damaged first record
CONTROLS = bytes([1, 7, 8, 11, 12, 27, 31]) + b"\t\r"  # raw in a string: JSON forbids them, readers mend them
ODD_TIMES: list[Any] = [1e12, -5, 1.5e9, 0, "yesterday", "2025-13-45T99:00:00Z", "", "17000",
                        "2025-10-01 10:00", "2025-10-01T10:00+99:00", "9" * 400, [1], {"t": 1}]  # fmt: skip
ODD_COUNTS: list[Any] = ["12", 12.5, "1e3", 1e300, True, "-4", "", [3], {"n": 1}]
_STRING_START = re.compile(rb'":\s*"')
_NUMBER_FIELD = re.compile(rb'("[a-z_]*tokens[a-z_]*"\s*:\s*)\d+')
_TIME_FIELD = re.compile(rb'("timestamp"\s*:\s*)"[^"]*"')


def _into_strings(rng: random.Random, data: bytes, insert: bytes, times: int = 5) -> bytes:
    """``data`` with ``insert`` at the start of ``times`` string values (seeded)."""
    starts = [m.end() for m in _STRING_START.finditer(data)]
    for at in sorted(rng.sample(starts, min(times, len(starts))), reverse=True):
        data = data[:at] + insert + data[at:]
    return data


def byte_cases(rng: random.Random, data: bytes) -> dict[str, bytes]:
    """The byte-level faults of one file's bytes, by name."""
    body = data.rstrip(b"\n")
    last = len(body) - body.rfind(b"\n") - 1
    return {
        "invalid-utf8": _into_strings(rng, data, b"\xff\xc3\x28\xed\xa0\x80"),
        "bom": b"\xef\xbb\xbf" + data,
        "crlf": data.replace(b"\n", b"\r\n"),
        "nul-raw": _into_strings(rng, data, b"\x00"),
        "nul-escaped": _into_strings(rng, data, b"\\u0000"),
        "controls-raw": _into_strings(rng, data, CONTROLS),
        "truncated": body[: len(body) - rng.randrange(1, max(2, last))],
        "empty": b"",
        "whitespace": b" \n\t\r\n  \n",
        "binary": rng.randbytes(8192),
    }


def size_cases(rng: random.Random, data: bytes) -> dict[str, bytes]:
    """The size faults of one file's bytes, by name: JSON lines get an extra line, documents a value."""
    lines = data.rstrip(b"\n").split(b"\n")
    at = rng.randrange(len(lines) + 1)
    wide = b"[" + b",".join([b'{"a":1}'] * WIDE_RECORDS) + b"]"
    deep = b"[" * DEEP + b"]" * DEEP
    readable = b"[" * DEEP_READABLE + b"]" * DEEP_READABLE
    huge = _into_strings(rng, data, b"x" * HUGE_STRING, times=1)
    cases = {
        "huge-string": huge,
        "inf-tokens": _NUMBER_FIELD.sub(rb"\g<1>1e400", data),
        "inf-time": _TIME_FIELD.sub(rb"\g<1>1e400", data),
    }
    if len(lines) > 1:  # JSON lines
        cases["wide-line"] = b"\n".join([*lines[:at], wide, *lines[at:]]) + b"\n"
        cases["deep-line"] = b"\n".join([*lines[:at], deep, *lines[at:]]) + b"\n"
        cases["deep-readable"] = _into_strings(rng, data, b'", "d": ' + readable + b', "s": "', times=1)
        cases["deep-first-record"] = _deep_first(rng, lines)
        cases["many-records"] = data + b'{"type":"x"}\n' * WIDE_RECORDS
    else:
        cases["wide-value"] = _into_strings(rng, data, b'", "w": ' + wide + b', "s": "', times=1)
        cases["deep-value"] = _into_strings(rng, data, b'", "d": ' + deep + b', "s": "', times=1)
        cases["deep-readable"] = _into_strings(rng, data, b'", "d": ' + readable + b', "s": "', times=1)
    return cases


def _deep_first(rng: random.Random, lines: list[bytes]) -> bytes:
    """The log with a value nested just past 255 levels in its first record (a trace's ``run_start``, a
    Codex rollout's ``session_meta``): what the file is must still be said, with the line and why."""
    deep = b"[" * DEEP_WRITABLE + b"]" * DEEP_WRITABLE
    first = _into_strings(rng, lines[0], b'", "d": ' + deep + b', "s": "', times=1)
    return b"\n".join([first, *lines[1:]]) + b"\n"


ANSWER_IDS = ("tool_use_id", "call_id", "tool_call_id")


def _is_answer(record: dict[str, Any]) -> bool:
    text = json.dumps(record)
    return any(f'"{mark}"' in text for mark in ("tool_result", "function_call_output", "tool_call_id"))


def _with_uuid(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if isinstance(r.get("uuid"), str)]


def _link_cycle(rng: random.Random, records: list[dict[str, Any]]) -> None:
    entries = _with_uuid(records)
    for a, b in [rng.sample(entries, 2)] if len(entries) > 1 else []:
        a["parentUuid"], b["parentUuid"] = b["uuid"], a["uuid"]
        a["isSidechain"] = b["isSidechain"] = True


def _self_parent(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for entry in rng.sample(_with_uuid(records), min(3, len(_with_uuid(records)))):
        entry["parentUuid"] = entry["uuid"]
        entry["isSidechain"] = rng.random() < 0.5


def _repeat_uuid(rng: random.Random, records: list[dict[str, Any]]) -> None:
    entries = _with_uuid(records)
    for a, b in [rng.sample(entries, 2)] if len(entries) > 1 else []:
        b["uuid"] = a["uuid"]


def _unknown_answers(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for n, record in enumerate(r for r in records if _is_answer(r)):
        for path in [p for p in _paths(record) if p and p[-1] in ANSWER_IDS]:
            _get(record, path[:-1])[path[-1]] = f"call_unknown_{n}"


def _unanswered(rng: random.Random, records: list[dict[str, Any]]) -> None:
    records[:] = [r for r in records if not (_is_answer(r) and rng.random() < 0.7)]


def _answered_twice(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for index in reversed([i for i, r in enumerate(records) if _is_answer(r)]):
        copy_ = copy.deepcopy(records[index])
        if isinstance(copy_.get("uuid"), str):
            copy_["uuid"] += "-again"
        records.insert(index + rng.randrange(1, 3), copy_)


def _compacted(rng: random.Random, records: list[dict[str, Any]]) -> None:
    item = {"timestamp": "2025-10-29T10:00:00.000Z", "type": "compacted",
            "payload": {"message": "summary of what came before", "replacement_history": []}}  # fmt: skip
    records.insert(0, item)
    for _ in range(3):
        records.insert(rng.randrange(len(records) + 1), copy.deepcopy(item))


def _meta_late(rng: random.Random, records: list[dict[str, Any]]) -> None:
    metas = [r for r in records if r.get("type") == "session_meta" or "instructions" in r]
    records[:] = [r for r in records if r not in metas] + metas + copy.deepcopy(metas)


def _times_backwards(rng: random.Random, records: list[dict[str, Any]]) -> None:
    times = [r["timestamp"] for r in records if "timestamp" in r]
    for record, time in zip((r for r in records if "timestamp" in r), reversed(times), strict=True):
        record["timestamp"] = time


def _times_odd(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for record in records:
        for path in [p for p in _paths(record) if p and p[-1] in TIMES]:
            _get(record, path[:-1])[path[-1]] = copy.deepcopy(rng.choice(ODD_TIMES))


def _usage_odd(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for record in records:
        for path in [p for p in _paths(record) if p and isinstance(p[-1], str) and "tokens" in p[-1]]:
            value = _get(record, path)
            if isinstance(value, int) and not isinstance(value, bool):
                _get(record, path[:-1])[path[-1]] = copy.deepcopy(rng.choice([*ODD_COUNTS, value + 0.5]))


STRUCTURE = {
    "parent-cycle": _link_cycle,
    "self-parent": _self_parent,
    "uuid-repeated": _repeat_uuid,
    "unknown-call-ids": _unknown_answers,
    "unanswered-calls": _unanswered,
    "answered-twice": _answered_twice,
    "compacted-first-and-repeated": _compacted,
    "session-meta-late": _meta_late,
    "times-backwards": _times_backwards,
    "times-odd": _times_odd,
    "usage-odd": _usage_odd,
}


# ---------------------------------------------------------------- version drift
# What another CLI version writes: fields renamed or added, lines reordered, entry and block types this
# reader does not know, usage missing or only as a running total, rewinds and rollbacks, streamed repeats.
RENAMES = {
    "parentUuid": "parent_uuid", "usage": "usageStats", "last_token_usage": "last_usage",
    "cache_read_input_tokens": "cache_read_tokens", "tool_use_id": "toolUseId", "call_id": "callId",
    "content": "contents", "isSidechain": "is_sidechain", "cached_input_tokens": "cached_tokens",
}  # fmt: skip


def _rename_keys(node: Any, renames: dict[str, str]) -> Any:
    if isinstance(node, dict):
        return {renames.get(k, k): _rename_keys(v, renames) for k, v in node.items()}
    if isinstance(node, list):
        return [_rename_keys(v, renames) for v in node]
    return node


def _renamed(rng: random.Random, records: list[dict[str, Any]]) -> None:
    renames = dict(rng.sample(sorted(RENAMES.items()), 3))
    records[:] = [_rename_keys(r, renames) for r in records]


def _added(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for record in records:
        record[f"newField{rng.randrange(99)}"] = {"nested": [1, "two"], "flag": True}
        for node in (record.get("message"), record.get("payload")):
            if isinstance(node, dict):
                node["future_field"] = "x"
                content = node.get("content")
                if isinstance(content, list):
                    content.insert(rng.randrange(len(content) + 1), {"type": "future_block", "data": "?"})


def _reordered(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for index in range(len(records) - 1):
        if rng.random() < 0.15:
            records[index], records[index + 1] = records[index + 1], records[index]


def _unknown_types(rng: random.Random, records: list[dict[str, Any]]) -> None:
    extras = [
        {"type": "future-entry", "uuid": "f-1", "parentUuid": None, "data": {"x": 1}},
        {"type": "last-prompt", "leafUuid": "nowhere"},
        {"type": "event_msg", "payload": {"type": "future_event", "x": 1}},
        {"type": "response_item", "payload": {"type": "future_item", "id": "fi_1"}},
        {"type": "future_kind", "payload": {"x": 1}},
    ]
    for extra in extras:
        records.insert(rng.randrange(1, len(records) + 1), copy.deepcopy(extra))


def _usage_missing(rng: random.Random, records: list[dict[str, Any]]) -> None:
    records[:] = [
        r
        for r in records
        if not (isinstance(r.get("payload"), dict) and r["payload"].get("type") == "token_count")
    ]
    for record in records:
        message = record.get("message")
        if isinstance(message, dict):
            message.pop("usage", None)


def _totals_only(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for record in records:
        info = record.get("payload", {}).get("info") if isinstance(record.get("payload"), dict) else None
        if isinstance(info, dict):
            info.pop("last_token_usage", None)


def _is_prompt(record: dict[str, Any]) -> bool:
    message = record.get("message")
    return (
        record.get("type") == "user"
        and isinstance(message, dict)
        and isinstance(message.get("content"), str)
        and isinstance(record.get("uuid"), str)
    )


def _rewound(rng: random.Random, records: list[dict[str, Any]]) -> None:
    prompts = [r for r in records if _is_prompt(r)]
    earlier = [
        r["uuid"] for r in records[: len(records) // 2] if r.get("type") == "assistant" and "uuid" in r
    ]
    for prompt in rng.sample(prompts[1:], min(2, len(prompts) - 1)) if earlier and len(prompts) > 1 else []:
        prompt["parentUuid"] = rng.choice(earlier)
    for _ in range(2 if any(r.get("type") == "session_meta" for r in records) else 0):
        event = {
            "type": "event_msg",
            "payload": {"type": "thread_rolled_back", "num_turns": rng.randrange(0, 4)},
        }
        records.insert(rng.randrange(1, len(records) + 1), event)


def _streamed_twice(rng: random.Random, records: list[dict[str, Any]]) -> None:
    for index in reversed(range(len(records))):
        record = records[index]
        counted = isinstance(record.get("payload"), dict) and record["payload"].get("type") == "token_count"
        if (record.get("type") == "assistant" or counted) and rng.random() < 0.3:
            again = copy.deepcopy(record)
            if isinstance(again.get("uuid"), str):
                again["parentUuid"], again["uuid"] = again["uuid"], again["uuid"] + "-stream"
            records.insert(index + 1, again)


DRIFT = {
    "renamed-fields": _renamed,
    "added-fields": _added,
    "reordered-lines": _reordered,
    "unknown-types": _unknown_types,
    "usage-missing": _usage_missing,
    "usage-totals-only": _totals_only,
    "rewound-or-rolled-back": _rewound,
    "streamed-twice": _streamed_twice,
}


# ---------------------------------------------------------------- version drift: recorded-run agents
# What other versions of mini-swe-agent, SWE-agent, OpenHands and tau-bench write of the same run (each
# case returns the drifted document, or None where it does not apply): the replay must keep its steps.
def _mini_v2(doc: Any, text_actions: bool) -> Any:
    """A mini-swe-agent v1 trajectory as v2 writes it: native tool calls answered by role "tool"
    messages (or, ``text_actions``, v2's ```mswea_bash_command fences with ``extra.actions``), and the
    final ``exit`` message instead of the patch echo."""
    if not _import_miniswe.matches(doc) or doc.get("trajectory_format") != "mini-swe-agent-1":
        return None
    doc = copy.deepcopy(doc)
    doc["trajectory_format"], out, pending = "mini-swe-agent-1.1", [], None
    for n, recorded in enumerate(doc["messages"]):
        message = recorded
        if recorded.get("role") == "assistant":
            message, pending = _mini_v2_response(recorded, f"toolu_{n}", text_actions)
        elif recorded.get("role") == "user" and pending is not None:
            message = {"role": "tool", "tool_call_id": pending, "content": recorded.get("content")}
            pending = None
        out.append(message)
    submission = doc.get("info", {}).get("submission")
    if out and out[-1].get("content") == submission and out[-1].get("role") in ("user", "tool"):
        out[-1] = {"role": "exit", "content": submission, "extra": {"exit_status": "Submitted"}}
    doc["messages"] = out
    return doc


def _mini_v2_response(message: dict[str, Any], call_id: str, text_actions: bool) -> tuple[Any, str | None]:
    """One v1 response as v2 records it, and the id of the call its observation answers (if any)."""
    content = message.get("content")
    actions = _import_miniswe.ACTION_RE.findall(content) if isinstance(content, str) else []
    if len(actions) != 1:
        return message, None
    if text_actions:
        extra = {**(message.get("extra") or {}), "actions": [{"command": actions[0]}]}
        return {
            **message,
            "content": content.replace("```bash", "```mswea_bash_command", 1),
            "extra": extra,
        }, None
    thought = _import_miniswe.ACTION_RE.sub("", content, count=1).strip() or None
    arguments = json.dumps({"command": actions[0]})
    call = {"id": call_id, "type": "function", "function": {"name": "bash", "arguments": arguments}}
    return {**message, "content": thought, "tool_calls": [call]}, call_id


def _swe(doc: Any, change: str) -> Any:
    """A SWE-agent trajectory as 1.x writes it: ``replay_config`` as JSON text, content as parts with
    ``cache_control``, or a RetryAgent's ``attempts`` (the chosen one copied at the top level)."""
    if not _import_sweagent.matches(doc) or "attempts" in doc:
        return None
    doc = copy.deepcopy(doc)
    if change == "replay-config-text":
        doc["replay_config"] = json.dumps(doc.get("replay_config") or {"agent": {}})
    elif change == "content-parts":
        for message in doc["history"][-3:]:
            if isinstance(message.get("content"), str):
                parts = [{"type": "text", "text": message["content"], "cache_control": {"type": "ephemeral"}}]
                message["content"] = parts
    else:
        doc = {"attempts": [doc, copy.deepcopy(doc)], **copy.deepcopy(doc)}
    return doc


def _openhands(doc: Any, condensed: bool) -> Any:
    """An OpenHands SDK event list with a condensation (the middle third forgotten, a summary after
    the first two events) or with event kinds of a later SDK."""
    if not _import_openhands.matches(doc):
        return None
    doc = copy.deepcopy(doc)
    if not condensed:
        for n in range(3):
            doc.insert(
                len(doc) * (n + 1) // 4, {"kind": f"FutureEvent{n}", "id": f"future-{n}", "source": "x"}
            )
        return doc
    third = len(doc) // 3
    forgotten = [e.get("id") for e in doc[third : 2 * third] if isinstance(e.get("id"), str)]
    condensation = {"kind": "Condensation", "id": "drift-condensation", "source": "environment",
                    "forgotten_event_ids": forgotten, "summary": "Summary of the forgotten events.",
                    "summary_offset": 2, "llm_response_id": "drift"}  # fmt: skip
    doc.insert(2 * third, condensation)
    return doc


def _tau2(doc: Any) -> Any:
    """tau-bench conversations as tau2-bench results: calls ``{id, name, arguments}``, tool messages
    naming their call by ``id``, the policy in ``info.environment_info``."""
    if not _import_taubench.matches(doc):
        return None
    simulations, policy = [], ""
    for conversation in doc:
        traj = [m for m in conversation.get("traj") or [] if isinstance(m, dict)]
        policy = next((m.get("content") for m in traj if m.get("role") == "system"), None) or policy
        simulation = {
            "id": f"sim-{len(simulations)}", "task_id": str(conversation.get("task_id")),
            "trial": conversation.get("trial", 0), "reward_info": {"reward": 0.0},
            "termination_reason": "user_stop",
            "messages": [_tau2_message(m) for m in traj if m.get("role") != "system"],
        }  # fmt: skip
        simulations.append(simulation)
    return {
        "info": {"environment_info": {"domain_name": "drift", "policy": policy}},
        "simulations": simulations,
    }


def _tau2_message(message: dict[str, Any]) -> dict[str, Any]:
    if message.get("role") == "tool":
        return {"role": "tool", "id": message.get("tool_call_id"), "content": message.get("content"),
                "requestor": "assistant", "error": False}  # fmt: skip
    calls = [
        {"id": c.get("id"), "name": c["function"]["name"], "requestor": "assistant",
         "arguments": json.loads(c["function"].get("arguments") or "{}")}
        for c in message.get("tool_calls") or []
    ]  # fmt: skip
    return {"role": message.get("role"), "content": message.get("content"), "tool_calls": calls or None}


def _with_future_fields(node: Any) -> Any:
    """Every message, event and history entry with a field a later version added."""
    if isinstance(node, dict):
        added = {k: _with_future_fields(v) for k, v in node.items()}
        return {**added, "future_field": {"x": [1]}} if ("role" in node or "kind" in node) else added
    if isinstance(node, list):
        return [_with_future_fields(v) for v in node]
    return node


RECORDED_DRIFT = {
    "mini-v2-tool-calls": lambda doc: _mini_v2(doc, text_actions=False),
    "mini-v2-text-actions": lambda doc: _mini_v2(doc, text_actions=True),
    "swe-replay-config-text": lambda doc: _swe(doc, "replay-config-text"),
    "swe-content-parts": lambda doc: _swe(doc, "content-parts"),
    "swe-retry-attempts": lambda doc: _swe(doc, "attempts"),
    "openhands-condensed": lambda doc: _openhands(doc, condensed=True),
    "openhands-future-events": lambda doc: _openhands(doc, condensed=False),
    "tau2-results": _tau2,
    "recorded-future-fields": lambda doc: _with_future_fields(doc) if _recorded(doc) else None,
}


def _recorded(doc: Any) -> bool:
    return any(
        m.matches(doc) for m in (_import_miniswe, _import_sweagent, _import_openhands, _import_taubench)
    )


def recorded_drift_cases(data: bytes) -> dict[str, bytes]:
    """The :data:`RECORDED_DRIFT` cases that apply to one recorded-run document, by name."""
    try:
        doc = json.loads(data)
    except ValueError:
        return {}
    cases = {}
    for name, change in RECORDED_DRIFT.items():
        drifted = change(doc)
        if drifted is not None:
            cases[name] = json.dumps(drifted).encode("utf-8", "surrogatepass")
    return cases


def _object(line: bytes) -> dict[str, Any] | None:
    try:
        record = json.loads(line)
    except ValueError:
        return None
    return record if isinstance(record, dict) else None


def structure_cases(
    rng: random.Random, data: bytes, changes: dict[str, Any] | None = None
) -> dict[str, bytes]:
    """The conversation-structure faults (or ``changes``: :data:`DRIFT`) of a JSON-lines log, by name
    (each on a fresh copy)."""
    records = [r for r in map(_object, data.splitlines()) if r is not None]  # damaged lines left out
    cases = {}
    for name, change in (STRUCTURE if changes is None else changes).items():
        mutated = copy.deepcopy(records)
        change(rng, mutated)
        cases[name] = "".join(json.dumps(r) + "\n" for r in mutated).encode("utf-8", "surrogatepass")
    return cases


def file_system_cases(folder: Path, source: Path) -> None:
    """A symlink loop (files and a folder), an unreadable copy of ``source``, a folder named like a log."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "loop-a.jsonl").symlink_to("loop-b.jsonl")
    (folder / "loop-b.jsonl").symlink_to("loop-a.jsonl")
    (folder / "self.jsonl").symlink_to("self.jsonl")
    (folder / "up").symlink_to("..", target_is_directory=True)
    unreadable = folder / f"unreadable-{source.name}"
    unreadable.write_bytes(source.read_bytes())
    unreadable.chmod(0)  # root reads it anyway: the bench must then read it like any other
    (folder / "dir.jsonl").mkdir()
    (folder / "dir.traj").mkdir()
    (folder / "dir.jsonl" / "inner.json").write_bytes(b"{}")


def _kind(data: bytes) -> str:
    head = data[:20000]
    if b'"parentUuid"' in head:
        return "claude"
    if b'"session_meta"' in head or b'"record_type"' in head:
        return "codex"
    try:
        json.loads(data)
    except ValueError:
        return "lines"
    return "document"


def _write(target: Path, content: bytes) -> int:
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(content)
    return 1


def write_hostile(roots: list[Path], out: Path, seed: int) -> int:
    """One seeded source of each kind (Claude Code, Codex, other JSON lines, JSON documents) with every
    hostile class, under ``out/hostile``; the number of files written."""
    rng = random.Random(seed)
    by_kind: dict[str, list[Path]] = {}
    for source in _sources(roots, 1):
        by_kind.setdefault(_kind(source.read_bytes()), []).append(source)
    folder, written = out / "hostile", 0
    for kind, sources in sorted(by_kind.items()):
        source = rng.choice(sources)
        for name, content in {
            **byte_cases(rng, source.read_bytes()),
            **size_cases(rng, source.read_bytes()),
        }.items():
            written += _write(folder / kind / f"{name}-{source.name}", content)
        for source in sources if kind != "document" else []:  # each folder's smallest
            for name, content in structure_cases(rng, source.read_bytes()).items():
                written += _write(folder / kind / source.parent.name / f"{name}-{source.name}", content)
    file_system_cases(folder / "files", rng.choice(_sources(roots, 1)))
    return written


def write_drift(roots: list[Path], out: Path, seed: int, per_folder: int) -> int:
    """Every :data:`DRIFT` case of the smallest ``per_folder`` Claude Code and Codex logs of each folder,
    and every :data:`RECORDED_DRIFT` case of its recorded-run documents (mini-swe-agent, SWE-agent,
    OpenHands, tau-bench), under ``out/drift/<case>/``; the number of files written."""
    rng, written = random.Random(seed), 0
    for source in _sources(roots, per_folder):
        data = source.read_bytes()
        kind = _kind(data)
        if kind in ("claude", "codex"):
            cases = {
                name: fresh_ids(content, name) for name, content in structure_cases(rng, data, DRIFT).items()
            }
        else:
            cases = recorded_drift_cases(data) if kind == "document" else {}
        for name, content in cases.items():
            written += _write(out / "drift" / name / f"{source.parent.name}-{source.name}", content)
    return written


# The provider's ids of Claude Code and Codex logs (``msg_01...``, ``req_...``, ``toolu_...``, ``call_...``,
# ``rs_...``, ``fc_...``): the importers count a call whose id another file holds once (``_Copies``).
_PROVIDER_ID = re.compile(rb"\b((?:msg|req|toolu|srvtoolu|call|rs|fc|resp)_[A-Za-z0-9]{8,})")
_ENCRYPTED = re.compile(rb'("encrypted_content": ")')


def fresh_ids(content: bytes, case: str) -> bytes:
    """``content`` with every provider id, and the digest source of a reasoning item without one (its
    ``encrypted_content``), made the drift case's own: a drift copy is then a session of its own that
    the bench replays, not a copy of its original counted once (the same replacement everywhere, so
    calls and results stay paired)."""
    tag = b"d" + hashlib.sha256(case.encode()).hexdigest()[:6].encode()
    return _ENCRYPTED.sub(rb"\1" + tag + b"-", _PROVIDER_ID.sub(rb"\1" + tag, content))


# How the importers name a run skipped as a copy of another file's (``_importers._Copies``).
_COPY_REASONS = ("the same conversation", "all its ")


def drift_summary(out: Path, document: dict[str, Any]) -> dict[str, tuple[int, int, int, int]]:
    """Per drift case: files written, files with a replayed run, files with a run skipped as the same
    run as another file's (the drift changed nothing the replay reads, or every call it holds is one
    another file's copy holds: the bench counts each call once), files with a run skipped for another
    reason. A drift copy that keeps some new calls is replayed, its leading shared calls uncounted."""
    inputs = document["inputs"]
    summary = {}
    for case in sorted(p.name for p in (out / "drift").glob("*")):
        files = {str(f) for f in (out / "drift" / case).glob("*")}
        replayed = {r["source"].split("#")[0] for r in inputs["runs"]} & files
        skipped = [(s["path"].split("#")[0], s["reason"]) for s in inputs["skipped"]]
        same = {path for path, reason in skipped if reason.startswith(_COPY_REASONS)} & files
        other = {path for path, reason in skipped if not reason.startswith(_COPY_REASONS)} & files
        summary[case] = (len(files), len(replayed), len(same), len(other))
    return summary


def check(out: Path) -> list[str]:
    """Run the bench on the corpus; the promises it broke."""
    report = out.with_name(out.name + "-bench")
    done = subprocess.run(
        [sys.executable, "-m", "tiered_agent", "bench", str(out), "--out", str(report)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    failures = [f"exit {done.returncode}"] if done.returncode else []
    if "Traceback" in done.stdout + done.stderr:
        failures.append("a traceback was printed")
    written = report / "bench.json"
    if not written.is_file():
        return [*failures, f"no bench.json written; the bench's stderr ends: {done.stderr[-2000:]}"]
    document = json.loads(written.read_text())
    errors = set(re.findall(r'"step_errors": (\d+)', written.read_text())) - {"0"}
    if errors:
        failures.append(f"step errors: {sorted(errors)}")
    failures += [f"replay failed: {f['run_id']!r}: {f['reason']}" for f in document["inputs"]["failed"]]
    skipped = done.stderr.count("importers.skipped")
    print(f"{out}: bench exit {done.returncode}, {skipped} files skipped with a reason, report in {report}")
    for case, (files, replayed, same, other) in drift_summary(out, document).items():
        print(
            f"  drift {case}: {files} files, {replayed} replayed, {same} the same run as another "
            f"file's, {other} with a run skipped for another reason (listed)"
        )
    return failures


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="a new folder for the mutated copies")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--per-folder", type=int, default=3, help="the smallest N files of each folder")
    parser.add_argument("--variants", type=int, default=6, help="mutated copies of each file")
    parser.add_argument(
        "--hostile", action=argparse.BooleanOptionalAction, default=True,
        help="also the whole-file hostile classes (bytes, sizes, structure, file system) under hostile/",
    )  # fmt: skip
    parser.add_argument(
        "--drift", action=argparse.BooleanOptionalAction, default=True,
        help="also the version-drift cases of the Claude Code and Codex logs (renamed, added and unknown "
        "fields and types, reordered lines, missing usage, rewinds, streamed repeats) under drift/",
    )  # fmt: skip
    args = parser.parse_args()
    if args.out.exists():
        parser.error(f"{args.out} exists: name a new folder (nothing is overwritten)")
    written = write_corpus(args.paths, args.out, args.seed, args.per_folder, args.variants)
    written += write_hostile(args.paths, args.out, args.seed) if args.hostile else 0
    written += write_drift(args.paths, args.out, args.seed, args.per_folder) if args.drift else 0
    print(f"{written} mutated files in {args.out}")
    failures = check(args.out)
    for failure in failures:
        print("FAILED:", failure)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
