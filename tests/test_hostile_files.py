"""Whole-file hostile input for the importers (``benchmarks/fuzz_logs.py --hostile`` found these):
a byte-order mark, symbolic links that lead nowhere, Claude Code entries reusing a ``uuid``, and
a property test of every importer's entry point on arbitrary bytes and JSON values."""

from __future__ import annotations

import codecs
import contextlib
import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_importers import mini_doc, tau_doc
from test_importers_recorded_variants import (
    mini_v2_toolcall_doc,
    openhands_condensed_events,
    openhands_v0_instance,
)
from test_importers_sessions import openhands_events

from tiered_agent._errors import ConfigurationError
from tiered_agent._trace import parse_json, scan_trace
from tiered_agent.bench import _importers as importers
from tiered_agent.bench._import_common import ShapeError
from tiered_agent.bench._importers import _DOC_DETECTORS, _LINE_DETECTORS, load_runs
from tiered_agent.inspect._load import load_trace

HOME = Path(__file__).parent / "fixtures" / "home"
CLAUDE = HOME / ".claude" / "projects" / "-home-user-demo" / "5f0c1d2e-0000-4000-8000-000000000001.jsonl"
CODEX = next((HOME / ".codex" / "sessions" / "2025" / "10" / "29").glob("rollout-*.jsonl"))


def _steps(path: Path) -> list[int]:
    return [run.steps for run in load_runs([path]).runs]


@pytest.mark.parametrize("source", [CLAUDE, CODEX], ids=["claude-code", "codex"])
def test_a_log_with_a_byte_order_mark_reads_as_without_one(tmp_path: Path, source: Path) -> None:
    """A BOM cost the first line (a Codex rollout's ``session_meta``: the whole file unrecognized)."""
    marked = tmp_path / f"bom-{source.name}"
    marked.write_bytes(codecs.BOM_UTF8 + source.read_bytes())
    loaded = load_runs([marked])
    assert loaded.skipped == () and loaded.skipped_lines == ()
    assert [r.steps for r in loaded.runs] == _steps(source) and _steps(source)[0] > 0


def test_a_json_document_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    plain, marked = tmp_path / "a.traj.json", tmp_path / "b.traj.json"
    plain.write_text(json.dumps(mini_doc()))
    marked.write_bytes(codecs.BOM_UTF8 + plain.read_bytes())
    assert _steps(marked) == _steps(plain) and _steps(plain)[0] > 0


def test_a_trace_with_a_byte_order_mark_reads_as_without_one(tmp_path: Path) -> None:
    """Every trace reader: the mark made the ``run_start`` line unreadable, so ``trace show|html``
    refused the file and the bench skipped it."""
    source = Path(__file__).resolve().parents[1] / "traces" / "tau-bench" / "task2_trial1.jsonl"
    marked = tmp_path / "marked.jsonl"
    marked.write_bytes(codecs.BOM_UTF8 + source.read_bytes())
    assert scan_trace(marked).events == scan_trace(source).events and scan_trace(marked).skipped == ()
    loaded = load_trace(marked)
    assert loaded.is_trace and loaded.warning is None and loaded.events == load_trace(source).events
    assert _steps(marked) == _steps(source) and _steps(source)[0] > 0


def test_symlinks_to_nothing_in_a_folder_are_skipped_with_their_reason(tmp_path: Path) -> None:
    """Loops and links to a missing target were passed over without a word (``is_file`` is False), and
    a loop made the de-duplication raise ``RuntimeError`` once listed."""
    (tmp_path / "a.jsonl").symlink_to("b.jsonl")
    (tmp_path / "b.jsonl").symlink_to("a.jsonl")
    (tmp_path / "self.jsonl").symlink_to("self.jsonl")
    (tmp_path / "gone.jsonl").symlink_to("missing.jsonl")
    (tmp_path / "up").symlink_to("..", target_is_directory=True)
    (tmp_path / "run.jsonl").write_bytes(CLAUDE.read_bytes())
    loaded = load_runs([tmp_path])
    assert [r.steps for r in loaded.runs] == _steps(CLAUDE)
    reasons = {Path(s.path).name: s.reason for s in loaded.skipped}
    assert reasons == {
        "a.jsonl": "cannot read (Too many levels of symbolic links)",
        "b.jsonl": "cannot read (Too many levels of symbolic links)",
        "self.jsonl": "cannot read (Too many levels of symbolic links)",
        "gone.jsonl": "cannot read (No such file or directory)",
    }


def test_a_dangling_symlink_given_by_name_is_one_sentence(tmp_path: Path) -> None:
    (tmp_path / "loop.jsonl").symlink_to("loop.jsonl")
    with pytest.raises(ConfigurationError, match=r"loop\.jsonl: a symbolic link to nothing readable"):
        load_runs([tmp_path / "loop.jsonl"])


def test_an_unreadable_file_is_skipped_with_its_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``chmod 000`` (faked: the suite may run as root, who reads it anyway)."""
    locked = tmp_path / "locked.jsonl"
    locked.write_bytes(CLAUDE.read_bytes())

    def denied(self: Path) -> bytes:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "read_bytes", denied)
    loaded = load_runs([tmp_path])
    assert [(Path(s.path).name, s.reason) for s in loaded.skipped] == [
        ("locked.jsonl", "cannot read (Permission denied)")
    ]


def _claude_lines() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CLAUDE.read_text().splitlines() if line.strip()]


def _write_lines(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_an_entry_reusing_a_uuid_with_another_message_is_read(tmp_path: Path) -> None:
    """Two different entries under one ``uuid``: the second was dropped without a word (a lost step)."""
    records = _claude_lines()
    assistants = [r for r in records if r.get("type") == "assistant" and not r.get("isSidechain")]
    first, last = assistants[0], assistants[-1]
    assert first["message"] != last["message"] and first["message"]["id"] != last["message"]["id"]
    last["uuid"] = first["uuid"]
    assert _steps(_write_lines(tmp_path / "reused.jsonl", records)) == _steps(CLAUDE)


def test_an_entry_repeated_whole_is_read_once(tmp_path: Path) -> None:
    records = _claude_lines()
    index = next(i for i, r in enumerate(records) if r.get("type") == "assistant")
    records.insert(index + 1, json.loads(json.dumps(records[index])))
    assert _steps(_write_lines(tmp_path / "repeat.jsonl", records)) == _steps(CLAUDE)


@pytest.mark.parametrize("kind", ["cycle", "self"])
def test_a_parent_chain_with_a_cycle_ends(tmp_path: Path, kind: str) -> None:
    """Subagent threads follow ``parentUuid``: a cycle or a self-parent must not be walked forever."""
    records = _claude_lines()
    entries = [r for r in records if isinstance(r.get("uuid"), str)]
    a, b = entries[1], entries[-1]
    a["parentUuid"], b["parentUuid"] = (b["uuid"], a["uuid"]) if kind == "cycle" else (a["uuid"], b["uuid"])
    a["isSidechain"] = b["isSidechain"] = True
    loaded = load_runs([_write_lines(tmp_path / "cycle.jsonl", records)])
    assert loaded.runs and all(r.steps > 0 for r in loaded.runs)


def test_a_usage_count_past_what_json_holds_reads_as_missing(tmp_path: Path) -> None:
    """``1e300`` is a whole float: read as a count of 10^300 tokens, the bench could not write its JSON
    (``TypeError: Integer exceeds 64-bit range``) after replaying everything."""
    records = _claude_lines()
    for record in records:
        usage = record.get("message", {}).get("usage") if isinstance(record.get("message"), dict) else None
        if isinstance(usage, dict):
            usage.update(input_tokens=1e300, output_tokens=10**30, cache_read_input_tokens=10**16)
    [main, *_] = load_runs([_write_lines(tmp_path / "huge.jsonl", records)]).runs
    usages = [u for u in main.usage if u is not None]
    assert usages and all(u.completion_tokens == u.cached_tokens == 0 for u in usages)
    assert all(u.prompt_tokens == u.cache_write_tokens < 10**15 for u in usages)  # the writes alone


def test_mini_swe_agent_usage_is_read_as_every_other_count(tmp_path: Path) -> None:
    """Text, negative, fractional and huge counts read as missing, as in the other formats (a text count
    skipped the whole file; ``1e300`` became a count of 10^300)."""
    doc = mini_doc()
    odd = iter(["abc", 1e300])
    for message in doc["messages"]:
        usage = message.get("extra", {}).get("response", {}).get("usage")
        if isinstance(usage, dict):
            usage["prompt_tokens"] = next(odd)
    path = tmp_path / "odd.traj.json"
    path.write_text(json.dumps(doc))
    [run] = load_runs([path]).runs
    assert [u.prompt_tokens if u else None for u in run.usage] == [0, None, 0]


def _deep(levels: int) -> str:
    return "[" * levels + "]" * levels


def test_a_line_nested_past_what_json_writers_take_is_a_damaged_line(tmp_path: Path) -> None:
    """Nesting under orjson's 1,024 but past Python's recursion limit (``where`` showed the uuid:
    ``RecursionError``) lost the whole session to the loader's net; the line alone is skipped now."""
    lines = CLAUDE.read_text().splitlines()
    number = max(n for n, line in enumerate(lines, 1) if '"uuid":"a8"' in line)
    lines[number - 1] = lines[number - 1].replace('"uuid":"a8"', f'"uuid":{_deep(1000)}')
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    loaded = load_runs([path])
    assert loaded.skipped == () and [d.lines for d in loaded.skipped_lines] == [(number,)]
    assert [r.steps for r in loaded.runs] == [_steps(CLAUDE)[0] - 1, *_steps(CLAUDE)[1:]]


@pytest.mark.parametrize("levels", [300, 1000])
def test_a_document_nested_past_what_json_writers_take_is_skipped_with_that_reason(
    tmp_path: Path, levels: int
) -> None:
    doc = mini_doc()
    doc["messages"][1]["role"] = "@deep@"
    path = tmp_path / "deep.traj.json"
    path.write_text(json.dumps(doc).replace('"@deep@"', _deep(levels)))
    assert [s.reason for s in load_runs([path]).skipped] == [
        "not JSON (line 1 col 644: nested deeper than 255 levels)"
    ]


def test_a_trace_line_nested_past_what_json_writers_take_is_skipped_by_every_reader(tmp_path: Path) -> None:
    """``scan_trace`` (and so ``trace show|stats|html``) raised ``RecursionError`` showing the bad field
    of a message whose content was a list 1,000 deep."""
    source = Path(__file__).resolve().parents[1] / "traces" / "tau-bench" / "task2_trial1.jsonl"
    lines = source.read_text().splitlines()
    message = json.loads(lines[2])
    message["message"]["content"] = "@deep@"
    lines[2] = json.dumps(message).replace('"@deep@"', _deep(1000))
    path = tmp_path / "deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    scan = scan_trace(path)
    assert [(k.line, k.reason.split(":")[0]) for k in scan.skipped] == [
        (3, "not JSON (nested deeper than 255 levels")
    ]
    assert len(scan.events) == len(lines) - 1
    loaded = load_trace(path)
    assert (
        loaded.warning is not None
        and "(line 3: not JSON (nested deeper than 255 levels" in loaded.warning
        and len(loaded.events) == len(lines) - 1
    )
    [skipped] = load_runs([path]).skipped
    assert skipped.reason.startswith("line 3: not JSON (nested deeper than 255 levels")


# ---------------------------------------------------------------- property: every entry point
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=6) | st.dictionaries(st.text(max_size=12), inner, max_size=6),
    max_leaves=60,
)  # bounded: every case is small, so every case's run time is bounded
KEYS = st.sampled_from(
    ["type", "role", "content", "message", "uuid", "parentUuid", "isSidechain", "payload", "timestamp",
     "usage", "tool_use_id", "call_id", "id", "name", "input", "output", "history", "traj", "trajectory",
     "messages", "action", "observation", "source", "kind", "session_meta", "response_item"]
)  # fmt: skip
RECORD = st.dictionaries(KEYS, JSON, max_size=8)
SEEDS: list[Any] = [
    mini_doc(), tau_doc(), openhands_events(), _claude_lines(), mini_v2_toolcall_doc(),
    openhands_condensed_events(), [openhands_v0_instance("a"), openhands_v0_instance("b")],
]  # fmt: skip


def _imports_or_skips(path: Path) -> None:
    """``load_runs`` reads the file or skips it with a reason; the net for unforeseen errors never
    catches (it would name a Python exception in the reason)."""
    loaded = load_runs([path])
    for skipped in loaded.skipped:
        assert "cannot convert (" not in skipped.reason, skipped.reason


SETTINGS = settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@SETTINGS
@given(data=st.binary(max_size=2000))
def test_arbitrary_bytes_are_read_or_skipped_with_a_reason(tmp_path: Path, data: bytes) -> None:
    for suffix in (".jsonl", ".json", ".traj"):
        path = tmp_path / f"any{suffix}"
        path.write_bytes(data)
        _imports_or_skips(path)


@SETTINGS
@given(value=JSON)
def test_arbitrary_json_documents_are_read_or_skipped_with_a_reason(tmp_path: Path, value: Any) -> None:
    path = tmp_path / "doc.json"
    path.write_text(json.dumps(value))
    _imports_or_skips(path)


@SETTINGS
@given(records=st.lists(RECORD, max_size=12), seed=st.sampled_from(range(len(SEEDS))))
def test_arbitrary_records_among_real_ones_are_read_or_skipped(
    tmp_path: Path, records: list[Any], seed: int
) -> None:
    """Random records mixed into a real document of each format (so the detectors accept it and the
    converters see hostile values), as JSON lines and as one JSON document."""
    base = SEEDS[seed]
    mixed = (
        [*base, *records] if isinstance(base, list) else {**base, "messages": [*base["messages"], *records]}
    )
    lines = mixed if isinstance(mixed, list) else [mixed]
    (tmp_path / "a.jsonl").write_text("".join(json.dumps(r) + "\n" for r in lines))
    (tmp_path / "b.json").write_text(json.dumps(mixed))
    _imports_or_skips(tmp_path / "a.jsonl")
    _imports_or_skips(tmp_path / "b.json")


@SETTINGS
@given(value=JSON)
def test_every_detector_and_converter_answers_or_raises_a_shape_error(tmp_path: Path, value: Any) -> None:
    """Each format's entry points called directly (not through the loader's net): a detector says yes
    or no; a converter returns runs or raises :class:`ShapeError`, the documented skip."""
    path = tmp_path / "x.json"
    records = value if isinstance(value, list) and all(isinstance(r, dict) for r in value) else [value]
    for _, matches, convert in _DOC_DETECTORS:
        if matches(value):
            with contextlib.suppress(ShapeError):
                convert(value, path)
    for _, matches_lines, convert_lines in _LINE_DETECTORS:
        if matches_lines(records):
            with contextlib.suppress(ShapeError):
                convert_lines(records, path, ())


def test_the_loader_net_is_named_in_the_reason(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """What :func:`_imports_or_skips` looks for is what the net writes (so the properties can fail)."""
    path = tmp_path / "a.traj.json"
    path.write_text(json.dumps(mini_doc()))

    def broken(doc: Any, where: Path) -> Any:
        raise TypeError("unforeseen")

    name, matches, _ = _DOC_DETECTORS[0]
    monkeypatch.setattr(importers, "_DOC_DETECTORS", ((name, matches, broken), *_DOC_DETECTORS[1:]))
    [skipped] = load_runs([path]).skipped
    assert "cannot convert (TypeError: unforeseen)" in skipped.reason
    with pytest.raises(AssertionError):
        _imports_or_skips(path)


@pytest.mark.parametrize(
    ("damage", "kept"),
    [
        (b"\\ud83d", "\\ud83d"),  # an escaped half of an emoji (a JavaScript string cut mid-pair)
        (b"\xff\xfe", "\ufffd\ufffd"),  # bytes that are not UTF-8
    ],
    ids=["lone-surrogate", "not-utf8"],
)
def test_a_line_orjson_refuses_only_for_its_characters_is_read_mended(
    tmp_path: Path, damage: bytes, kept: str
) -> None:
    """Such a line was skipped (the step it held lost); it is read, the damage shown as the trace
    writer shows it (an escape) or as U+FFFD."""
    data = CLAUDE.read_bytes()
    marker = b'"uuid":"a8"'
    index = data.rindex(marker)
    start = data.rindex(b'"text":"', 0, index) + len(b'"text":"')
    path = tmp_path / "mended.jsonl"
    path.write_bytes(data[:start] + damage + data[start:])
    loaded = load_runs([path])
    assert loaded.skipped == () and loaded.skipped_lines == ()
    assert _steps(path) == _steps(CLAUDE)
    texts = [m.text for run in loaded.runs for m in run.messages]
    assert any(t.startswith(kept) for t in texts)


def test_what_no_mending_reads_is_still_a_damaged_line() -> None:
    for bad in (b'{"a": NaN}', b'{"a": "\\ud83d', b'{"a": "\\x"}', b'{"a": "\xff"', b"[" * 2000 + b"\\ud83d"):
        with pytest.raises(orjson.JSONDecodeError):
            parse_json(bad)
    assert parse_json(b'{"a": "\\ud83d\\ude00"}') == {"a": "\U0001f600"}  # a whole pair is one character


# ------------------------------------------------- round 22: control characters, a deep run_start
def test_a_raw_control_character_in_a_string_is_read(tmp_path: Path) -> None:
    """A raw NUL or U+0001..U+001F inside a string (JSON forbids them; a careless writer leaves
    them) made orjson refuse the line, and the step it held was lost; it is read as the character."""
    data = CLAUDE.read_bytes()
    index = data.rindex(b'"uuid":"a8"')
    start = data.rindex(b'"text":"', 0, index) + len(b'"text":"')
    path = tmp_path / "controls.jsonl"
    path.write_bytes(data[:start] + b"a\x00b\x01c\x1f\td" + data[start:])
    loaded = load_runs([path])
    assert loaded.skipped == () and loaded.skipped_lines == ()
    assert _steps(path) == _steps(CLAUDE)
    assert any(m.text.startswith("a\x00b\x01c\x1f\td") for run in loaded.runs for m in run.messages if m.text)


def test_a_trace_line_with_a_raw_control_character_is_read_by_every_reader(tmp_path: Path) -> None:
    source = Path(__file__).resolve().parents[1] / "traces" / "tau-bench" / "task2_trial1.jsonl"
    lines = source.read_bytes().split(b"\n")
    assert lines[2].count(b'"content":"') == 1
    lines[2] = lines[2].replace(b'"content":"', b'"content":"\x07\x00', 1)
    path = tmp_path / "controls.jsonl"
    path.write_bytes(b"\n".join(lines))
    scan = scan_trace(path)
    assert scan.skipped == () and len(scan.events) == len(scan_trace(source).events)
    assert load_trace(path).warning is None
    assert [r.steps for r in load_runs([path]).runs] == [r.steps for r in load_runs([source]).runs]


def test_mending_control_characters_keeps_refusing_what_json_is_not() -> None:
    assert parse_json(b'{"a": "x\x00y\x1f"}') == {"a": "x\x00y\x1f"}
    for bad in (
        b'{"a": "\x01", "b": NaN}',  # NaN stays refused
        b'{"a": "\x01", "b": Infinity}',
        b'{\x01"a": 1}',  # outside a string a control character is no JSON at all
        b"[" * 2000 + b'"\x01"' + b"]" * 2000,  # past orjson's depth
        b"[" * 300 + b'"\x01"' + b"]" * 300,  # past the writers' 255
    ):
        with pytest.raises(orjson.JSONDecodeError):
            parse_json(bad)


def _deep_run_start(tmp_path: Path) -> tuple[Path, int]:
    source = Path(__file__).resolve().parents[1] / "traces" / "tau-bench" / "task2_trial1.jsonl"
    lines = source.read_text().splitlines()
    header = json.loads(lines[0])
    assert header["type"] == "run_start"
    header["config"]["extra"] = "@deep@"
    lines[0] = json.dumps(header).replace('"@deep@"', _deep(300))
    path = tmp_path / "deep_start.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path, len(lines)


def test_a_trace_whose_run_start_nests_too_deep_says_so_and_shows_the_rest(tmp_path: Path) -> None:
    """It was "not a tiered_agent trace" to ``trace show|html``, skipped without a word by ``trace
    stats`` and "unrecognized format" to the bench."""
    from tiered_agent.inspect._stats import collect_stats

    path, count = _deep_run_start(tmp_path)
    loaded = load_trace(path)
    assert loaded.is_trace and len(loaded.events) == count - 1
    assert loaded.warning is not None and "(line 1: not JSON (nested deeper than 255 levels" in loaded.warning
    stats = collect_stats([path])
    assert len(stats.runs) == 1 and stats.warnings == (loaded.warning,)
    [skipped] = load_runs([path]).skipped
    assert skipped.reason.startswith("line 1: not JSON (nested deeper than 255 levels")


def test_a_file_that_is_no_trace_is_still_no_trace(tmp_path: Path) -> None:
    loaded = load_trace(CLAUDE)
    assert not loaded.is_trace
    path = tmp_path / "junk.jsonl"
    path.write_text('{"type": "message", "text": "no version"}\nnot json\n')
    assert not load_trace(path).is_trace


def test_a_log_whose_first_record_nests_too_deep_names_that_line(tmp_path: Path) -> None:
    """An older flat Codex rollout whose first record (its session) nested past 255 levels was an
    "unrecognized format", and nothing more (``fuzz_logs.py`` class ``deep-first-record``, seed 131)."""
    flat = next((HOME / ".codex" / "sessions" / "2025" / "06" / "01").glob("rollout-*.jsonl"))
    lines = flat.read_text().splitlines()
    first = json.loads(lines[0])
    first["extra"] = "@deep@"
    lines[0] = json.dumps(first).replace('"@deep@"', _deep(300))
    path = tmp_path / "rollout-deep.jsonl"
    path.write_text("\n".join(lines) + "\n")
    [skipped] = load_runs([path]).skipped
    assert skipped.reason.startswith("unrecognized format (expected ")
    assert skipped.reason.endswith(
        "; its line 1 is unreadable: not JSON (nested deeper than 255 levels: line 1 column 427 (char 426))"
    )
