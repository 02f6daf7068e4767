"""`tiered-agent trace show / stats / html` on a real recorded run, on damaged, older and newer traces,
and on a synthetic 150-iteration run of 1 MB outputs (page size and structure)."""

from __future__ import annotations

import gc
import itertools
import re
import shutil
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner
from inspect_runs import INJECTION, record_run
from long_trace import write_long_trace

from tiered_agent._trace import (
    AgingRecord,
    ContextRecord,
    ModelRequest,
    ModelResponse,
    RunEnded,
    SummaryEvent,
    read_trace,
)
from tiered_agent.cli import cli
from tiered_agent.inspect import build_run, collect_stats, load_trace, render_page
from tiered_agent.inspect._chart import NARROW, ChartPoint, svg_chart, tick_label, y_axis
from tiered_agent.inspect._marks import MarkIndex, recovered_items
from tiered_agent.inspect._page import json_for_script
from tiered_agent.inspect._payload import build_payload, clip
from tiered_agent.inspect._record import counter_label, parse_record, record_labels
from tiered_agent.inspect._values import compact, ranges


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return record_run(tmp_path_factory.mktemp("recorded"))


def invoke(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), env={"COLUMNS": "200"})
    return result.exit_code, result.stdout, result.stderr


def messages_by_id(run_path: Path) -> dict[str, dict[str, object]]:
    payload = build_payload(build_run(load_trace(run_path)))
    return {m["id"]: m for ms in payload["messages"].values() for m in ms if m.get("role") == "tool"}


# --------------------------------------------------------------------------- numbers
def test_run_totals_match_the_strict_reader_and_run_end(recorded: Path) -> None:
    events = read_trace(recorded)  # the runtime's own reader: an independent sum
    responses = [e for e in events if isinstance(e, ModelResponse)]
    requests = {e.iteration: e for e in events if isinstance(e, ModelRequest)}
    end = next(e for e in events if isinstance(e, RunEnded))
    run = build_run(load_trace(recorded))
    totals = run.totals

    assert run.stop_reason == "answered" and run.segments == 1 and run.warning is None
    assert totals.iterations == len(requests) == end.iterations == 7
    assert (
        totals.sent_tokens == end.prompt_tokens_local == sum(r.prompt_tokens_local for r in requests.values())
    )
    assert totals.full_tokens == end.counterfactual_tokens
    assert totals.prompt_tokens == end.usage.prompt_tokens == 7 * 1200
    assert totals.cached_tokens == 7 * 256 and totals.completion_tokens == 7 * 40
    assert totals.cost == pytest.approx(sum(r.usage.cost or 0 for r in responses)) and totals.cost > 0
    assert totals.tool_calls == 7 and totals.tool_errors == 1 and totals.dedup_hits == 1
    assert totals.retrievals == 1
    assert totals.summaries == sum(isinstance(e, SummaryEvent) for e in events) >= 1
    assert [v.tool_calls for v in run.iterations][:3] == [
        ("read_file",),
        ("context_retrieve",),
        ("read_file", "read_file"),
    ]
    # call_read is cut in every later prompt until the window drops it; each prompt counts it once
    assert totals.outputs_truncated == 3  # call_read, call_read2 (the dedup copy) and call_log
    assert totals.truncated_outputs == sum(
        ContextRecord.from_dict(r.context).truncated_outputs for r in requests.values()
    )
    assert totals.savings == pytest.approx(1 - end.prompt_tokens_local / end.counterfactual_tokens)


def test_show_prints_one_row_per_iteration_and_the_totals(recorded: Path) -> None:
    code, out, _ = invoke("trace", "show", str(recorded))
    assert code == 0
    header = next(line for line in out.splitlines() if line.strip().startswith("#"))
    for column in (
        "tools",
        "prompt",
        "sent",
        "full",
        "saved",
        "trunc.",
        "hidden",
        "dedup",
        "summary",
        "retr.",
        "cost",
    ):
        assert column in header
    rows = [line.split() for line in out.splitlines() if re.match(r"^\s*\d+\s{2,}\S", line)]
    assert [row[0] for row in rows] == [str(i) for i in range(1, 8)]
    assert rows[1][1] == "context_retrieve" and rows[2][1:3] == ["read_file", "×2"]
    assert "1 tool error(s)" in out
    run = build_run(load_trace(recorded))
    assert f"{run.totals.sent_tokens:,}" in out and f"{run.totals.full_tokens:,}" in out
    assert f"({run.totals.savings:.1%})" in out


def test_show_json_has_exact_per_iteration_numbers(recorded: Path) -> None:
    code, out, _ = invoke("trace", "show", "--json", str(recorded))
    assert code == 0
    data = orjson.loads(out)
    requests = [e for e in read_trace(recorded) if isinstance(e, ModelRequest)]
    assert [i["sent_tokens"] for i in data["iterations"]] == [r.prompt_tokens_local for r in requests]
    assert [i["full_tokens"] for i in data["iterations"]] == [r.counterfactual_tokens for r in requests]
    second = data["iterations"][1]
    assert second["tools"] == ["context_retrieve"] and second["retrievals"] == 1
    assert second["hidden_items"] == [
        {
            "kind": "truncated",
            "tool_call_id": "call_read",
            "iteration": 1,
            "original_chars": 11589,
            "kept_chars": 400,
        }
    ]
    assert data["totals"]["iterations"] == 7 and data["stop_reason"] == "answered"


def test_stats_sums_runs_in_folders_and_skips_other_files(recorded: Path, tmp_path: Path) -> None:
    folder = tmp_path / "many"
    (folder / "nested").mkdir(parents=True)
    shutil.copy(recorded, folder / "a.jsonl")
    shutil.copy(recorded, folder / "nested" / "b.jsonl")
    (folder / "notes.jsonl").write_text('{"hello": "world"}\n')
    one = build_run(load_trace(recorded)).totals

    stats = collect_stats([folder])
    assert stats.totals.runs == 2 and stats.skipped == (str(folder / "notes.jsonl"),)
    assert stats.totals.sent_tokens == 2 * one.sent_tokens and stats.totals.cost == pytest.approx(
        2 * one.cost
    )
    assert stats.stop_reasons == {"answered": 2}

    code, out, err = invoke("trace", "stats", "--json", str(folder), str(recorded))
    data = orjson.loads(out)
    assert code == 0 and data["totals"]["runs"] == 3 and data["totals"]["tool_errors"] == 3
    assert data["totals"]["iterations"] == 21 and "not traces" in err
    code, out, _ = invoke("trace", "stats", "--runs", str(folder))
    assert code == 0 and "totals over 2 run(s)" in out and "stop reasons: answered 2" in out
    assert "a.jsonl" in out


# --------------------------------------------------------------------------- damaged, older, newer traces
def test_torn_last_line_gives_one_warning_and_the_rest(recorded: Path, tmp_path: Path) -> None:
    torn = tmp_path / "torn.jsonl"
    data = recorded.read_bytes()
    torn.write_bytes(data[: len(data) - 50])  # run_end cut mid-line
    code, out, err = invoke("trace", "show", str(torn))
    assert code == 0
    assert err.count("warning") == 1 and "last line" in err and "torn" in err
    assert "incomplete" in out  # no run_end: the run did not finish
    assert build_run(load_trace(torn)).totals.iterations == 7


def test_older_trace_with_missing_keys_and_other_version_still_shows(tmp_path: Path) -> None:
    lines = [
        {"v": 0, "type": "run_start", "run_id": "old", "model": "m"},
        {"v": 0, "type": "model_request", "iteration": 1, "prompt_tokens_local": 100},
        {"v": 0, "type": "model_response", "iteration": 1, "usage": {"prompt_tokens": "n/a"}},
        {"v": 0, "type": "message", "message": {"role": "alien", "content": "?"}},
        "not an object",
        {"v": 0, "type": "tool_result", "iteration": 1, "is_error": True},
        {"v": 0, "type": "from_the_future", "iteration": 1},
    ]
    path = tmp_path / "old.jsonl"
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\nnot json\n{}\n")
    loaded = load_trace(path)
    assert loaded.warning is not None
    assert "1 unreadable line(s)" not in loaded.warning  # two bad lines: the string and "not json"
    listed = "2 unreadable line(s) were skipped (line 5: not a JSON object; line 8: not JSON ("
    assert listed in loaded.warning
    assert "schema version 0" in loaded.warning
    run = build_run(loaded)
    assert run.totals.sent_tokens == 100 and run.totals.full_tokens == 100  # no counterfactual: as sent
    assert run.totals.prompt_tokens == 0 and run.totals.tool_errors == 1 and run.totals.cost is None
    assert run.unknown_events == {"from_the_future": 1, "?": 1}
    for command in ("show", "html"):
        code, _, err = invoke("trace", command, str(path))
        assert code == 0 and err.count("warning") == 1


def test_unknown_keys_of_a_flat_record_are_shown_generically() -> None:
    # a record of the flat format (traces written before records were kept per step)
    record = parse_record(
        {
            "truncated_outputs": 1,
            "truncations": [{"tool_call_id": "c1", "iteration": 1, "original_chars": 900, "kept_chars": 100}],
            "elided_outputs": 3,
            "elided_chars": 12_000,
            "superseded_outputs": [{"tool_call_id": "c7", "iteration": 2}],
            "superseded_iterations": [2, 3, 4],
            "cache_breaks": 2,
            "compacted": True,
            "notes": "text is ignored",
        }
    )
    assert record.counters == {"elided_outputs": 3.0, "elided_chars": 12_000.0, "cache_breaks": 2.0}
    assert counter_label(record.counters) == ["cache breaks 2", "elided 3 (12,000 chars)"]
    assert record_labels(record) == ["cache breaks 2", "elided 3 (12,000 chars)", "superseded iterations 2-4"]
    assert [(i.kind, i.tool_call_id) for i in record.items] == [("truncated", "c1"), ("superseded", "c7")]
    assert record.iteration_lists == {"superseded_iterations": (2, 3, 4)}
    assert record.compacted and record.truncated_outputs == 1


def test_a_nested_record_of_numbers_is_shown_one_level_down() -> None:
    record = parse_record({"cache": {"breaks": 2, "note": "x"}})
    assert record.counters == {"cache_breaks": 2.0} and record_labels(record) == ["cache breaks 2"]


def test_aging_and_pointer_records_are_labelled_in_words() -> None:
    # what the aging step and the dedup pointers record: positions and per-prompt counts
    record = parse_record(
        {
            "aging": {"through": 40, "condensed": 30, "epoch": {"at": 42, "through": 40, "condensed": 30}},
            "dedup_pointers": 2,
            "dedup_pointer_chars": 357,
        }
    )
    assert (record.aged_through, record.condensed_through, record.new_epoch) == (40, 30, True)
    assert (record.pointer_outputs, record.pointer_chars) == (2, 357) and record.counters == {}
    labels = record_labels(record)
    assert labels == ["aged 1-40", "condensed 1-30", "aged further here", "2 repeats as pointers (357 chars)"]
    assert not any("_" in label for label in labels)  # no record key reaches a user
    quiet = parse_record({"aging": {"through": 1, "condensed": 0}, "dedup_pointers": 1})
    assert record_labels(quiet) == ["aged 1", "1 repeat as pointers"]


def _aging_trace(path: Path, run_id: str) -> Path:
    """A run of four prompts under aging: positions grow (3, 3, 6, 6), two prompts start an epoch."""
    lines: list[dict[str, object]] = [{"v": 1, "type": "run_start", "run_id": run_id, "model": "m"}]
    for iteration, (through, epoch) in enumerate([(3, True), (3, False), (6, True), (6, False)], 1):
        aging: dict[str, object] = {"through": through, "condensed": through - 2}
        if epoch:
            aging["epoch"] = {"at": iteration + 2, "through": through, "condensed": through - 2}
        context = {"aging": aging, "dedup_pointers": 1, "dedup_pointer_chars": 100, "cache_breaks": 5}
        lines.append(
            {
                "v": 1,
                "type": "model_request",
                "iteration": iteration,
                "prompt_tokens_local": 100,
                "counterfactual_tokens": 200,
                "context": context,
            }
        )
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    return path


def test_stats_totals_sum_only_what_adds_up(tmp_path: Path) -> None:
    first = _aging_trace(tmp_path / "a.jsonl", "a")
    _aging_trace(tmp_path / "b.jsonl", "b")
    stats = collect_stats([tmp_path])
    totals = stats.totals.to_dict()
    assert totals["runs"] == 2 and totals["iterations"] == 8 and totals["sent_tokens"] == 800
    assert totals["dedup_pointers"] == 8 and totals["dedup_pointer_chars"] == 800  # per-prompt counts
    assert totals["aging_epochs"] == 4  # two per run
    assert not any("aging_through" in key or "cache_breaks" in key for key in totals)  # positions, unknowns
    assert "counters" not in totals
    code, out, _ = invoke("trace", "stats", str(tmp_path))
    assert code == 0 and "repeats shown as pointers in prompts (chars)" in out and "aging epochs" in out
    assert "aging_through" not in out and "through 36" not in out and "cache breaks 40" not in out
    code, out, _ = invoke("trace", "show", "--json", str(first))
    rows = orjson.loads(out)["iterations"]
    assert [r["aging"]["aged_through"] for r in rows] == [3, 3, 6, 6]
    assert [r["aging"]["new_epoch"] for r in rows] == [True, False, True, False]
    assert rows[0]["other_counters"] == {"cache_breaks": 5.0}
    chips = [it["other"] for it in build_payload(build_run(load_trace(first)))["iterations"]]
    assert chips[2] == [
        "aged 1-6",
        "condensed 1-4",
        "aged further here",
        "1 repeat as pointers (100 chars)",
        "cache breaks 5",
    ]


def test_the_flat_aging_record_is_the_age_steps_typed_record() -> None:
    record = parse_record({"aging": {"through": 40, "condensed": 30, "epoch": {"at": 42, "through": 40}}})
    assert record.steps["age"].state == AgingRecord(40, 30, (42, 40, 0))
    assert record.counters == {}
    assert record_labels(record) == ["aged 1-40", "condensed 1-30", "aged further here"]


def test_a_per_step_record_is_read_typed_and_labelled_per_step() -> None:
    context = {
        "steps": {
            "dedup": {"pointers": 2, "pointer_chars": 800},
            "window": {"dropped": [1, 2, 3, 5]},
            "age": {"hidden": 3, "hidden_chars": 900, "state": {"through": 9, "condensed": 4}},
            "truncate": {
                "cuts": [
                    {
                        "tool_call_id": "c1",
                        "iteration": 7,
                        "tool": "bash",
                        "original_chars": 900,
                        "kept_chars": 100,
                    }
                ],
                "cut_tokens": 180,
            },
            "mine": {"hidden": 1, "hidden_chars": 50, "state": {"rewrites": 2, "label": "x"}},
            "junk": "not a record",
        },
        "windowed_out": [1, 2, 3, 5],
        "summary_range": None,
        "compacted": False,
        "dedup_hits": 4,
        "elided_outputs": 7,  # not a key of this format: ignored, not guessed at
    }
    record = parse_record(context)
    assert (record.masked_outputs, record.masked_chars) == (4, 950)
    assert (record.truncated_outputs, record.truncated_chars) == (1, 800)
    assert [(i.kind, i.tool_call_id, i.tool) for i in record.items] == [("truncated", "c1", "bash")]
    assert record.windowed_out == (1, 2, 3, 5) and not record.iteration_lists
    assert record_labels(record) == [
        "aged 1-9",
        "condensed 1-4",
        "2 repeats as pointers (800 chars)",
        "age hid 3 outputs (900 chars)",
        "mine hid 1 output (50 chars)",
        "mine rewrites 2",
    ]
    assert record.counters == {}  # the typed format has no unknown keys to count
    assert (record.pointer_outputs, record.aged_through, record.condensed_through) == (2, 9, 4)


def test_not_a_trace_and_missing_paths_are_one_sentence_exit_2(tmp_path: Path) -> None:
    other = tmp_path / "x.jsonl"
    other.write_text('{"a": 1}\n')
    code, _, err = invoke("trace", "show", str(other))
    assert code == 2 and "is not a tiered_agent trace" in err and "Traceback" not in err
    code, _, err = invoke("trace", "stats", str(tmp_path / "missing"))
    assert code == 2 and "does not exist" in err
    code, _, err = invoke("trace", "stats", str(other))
    assert code == 2 and "no trace found" in err
    empty = tmp_path / "empty"
    empty.mkdir()
    code, _, err = invoke("trace", "html", str(empty))
    assert code == 2 and "holds no trace" in err


def test_a_folder_means_its_newest_trace(recorded: Path, tmp_path: Path) -> None:
    code, out, _ = invoke("trace", "show", "--json", str(recorded.parent))
    assert code == 0 and orjson.loads(out)["path"] == str(recorded)


# --------------------------------------------------------------------------- marks
def test_marks_say_what_was_hidden_and_where_the_full_output_is(recorded: Path) -> None:
    tools = messages_by_id(recorded)
    kinds = {cid: [m["k"] for m in tools[cid].get("marks", [])] for cid in tools}
    read = {m["k"]: m for m in tools["call_read"]["marks"]}
    assert "the model saw 400 of 11,589 chars (11,189 hidden, 96%)" in read["truncated"]["t"]
    assert read["truncated"]["how"] == 'context_retrieve(tool_call_id="call_read")'
    assert re.search(r"full text: line \d+ of " + re.escape(recorded.name), read["truncated"]["t"])
    assert read["recovered-by"]["refs"] == [{"it": 2, "id": "call_get", "label": ""}]
    assert read["windowed"]["how"] == 'context_retrieve(iteration="1")'
    retrieval = {m["k"]: m for m in tools["call_get"]["marks"]}["retrieval"]
    assert retrieval["refs"] == [{"it": 1, "id": "call_read", "label": "iteration 1 | read_file | call_read"}]
    dedup = {m["k"]: m for m in tools["call_read2"]["marks"]}["dedup"]
    assert (
        dedup["refs"] == [{"it": 1, "id": "call_read", "label": ""}]
        and "call_read (iteration 1)" in dedup["t"]
    )
    assert "error" in kinds["call_missing"]
    spilled = {m["k"]: m for m in tools["call_log"]["marks"]}["spilled"]
    spill_file = recorded.with_suffix(".outputs") / "call_log.out"
    assert spill_file.stat().st_size == 1_200_000 and str(spill_file) in spilled["t"]
    assert "not found" not in spilled["t"]
    assert kinds["call_ls"] == []  # the last output was never hidden


def test_recovered_items_parse_retrieval_headers() -> None:
    text = (
        "2 item(s) matched iteration='3-4' (original, untruncated content).\n\n"
        "--- iteration 3 | read_file | call_9 | part 1/2 ---\nabc\n\n--- iteration 4 | assistant ---\nx\n"
        "--- not a header\n[page 1 of 2; call again with page=2]"
    )
    refs = recovered_items(text)
    assert [(r.iteration, r.call_id) for r in refs] == [(3, "call_9"), (4, None)]


def test_mark_index_handles_a_run_without_retrieval(tmp_path: Path) -> None:
    path = tmp_path / "t.jsonl"
    lines = [
        {"v": 1, "type": "run_start", "run_id": "r", "model": "m", "task": "t", "tools": []},
        {
            "v": 1,
            "type": "message",
            "message": {
                "role": "tool",
                "content": "x" * 50,
                "tool_call_id": "c1",
                "name": "f",
                "iteration": 1,
            },
        },
        {
            "v": 1,
            "type": "model_request",
            "iteration": 2,
            "prompt_tokens_local": 5,
            "context": {
                "truncations": [
                    {"tool_call_id": "c1", "iteration": 1, "original_chars": 50, "kept_chars": 10}
                ]
            },
        },
    ]
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines))
    run = build_run(load_trace(path))
    (mark,) = MarkIndex(run).marks(run.messages[0])
    assert mark.kind == "truncated" and mark.how is None  # no context_retrieve in that run: no call to offer
    assert "the model saw 10 of 50 chars" in mark.text and "full text: line 2 of t.jsonl" in mark.text


# --------------------------------------------------------------------------- page
def test_json_for_script_cannot_close_the_script_element() -> None:
    value = {"t": "</script><script>alert(1)</script><!-- & \u2028\u2029"}
    text = json_for_script(value)
    assert "<" not in text and ">" not in text and "&" not in text and "\u2028" not in text
    assert orjson.loads(text) == value


def test_clip_keeps_head_and_tail() -> None:
    assert clip("abc", 10) == {"h": "abc", "t": "", "n": 3}
    cut = clip("a" * 60 + "b" * 40, 20)
    assert cut == {"h": "a" * 15, "t": "b" * 5, "n": 100}


def test_page_is_self_contained_and_escapes_tool_output(recorded: Path) -> None:
    page = render_page(build_run(load_trace(recorded)))
    assert page.count("<script") == 2 and page.count("</script>") == 2  # the data block and the renderer
    assert INJECTION not in page and "window.__pwned" in page  # present, but only JSON-escaped
    assert re.search(r"(src|href)=\"?(https?:)?//", page) is None
    assert "http://" not in page and "https://" not in page and "@import" not in page
    csp = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert csp and "default-src 'none'" in csp.group(1) and "'unsafe-inline'" not in csp.group(1)
    data = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.S)
    assert data is not None
    payload = orjson.loads(data.group(1))
    assert payload["totals"]["iterations"] == 7 and payload["meta"]["stop"] == "answered"
    # full history above 8x what was sent: the log scale is shown first, the linear one a click away
    for layout in ("wide", "narrow"):  # the desktop and the phone layout of each scale
        assert f'<svg hidden="" class="chart chart-linear chart-{layout}"' in page
        assert f'<svg class="chart chart-log chart-{layout}"' in page
    assert page.count('class="hit" data-it=') == 4 * 7  # one hit area per iteration in each chart


def test_html_command_writes_the_page(recorded: Path, tmp_path: Path) -> None:
    target = tmp_path / "out" / "run.html"
    target.parent.mkdir()
    code, out, _ = invoke("trace", "html", str(recorded), "-o", str(target), "--embed-chars", "500")
    assert code == 0 and f"wrote {target}" in out
    payload = orjson.loads(re.search(r'id="trace-data">(.*?)</script>', target.read_text(), re.S).group(1))
    log = next(m for ms in payload["messages"].values() for m in ms if m.get("id") == "call_log")
    assert len(log["text"]["h"]) + len(log["text"]["t"]) == 500 and log["text"]["n"] > 1_000_000
    code, _, err = invoke("trace", "html", str(recorded), "--embed-chars", "5")
    assert code == 2 and "--embed-chars" in err


def test_long_run_page_stays_small(tmp_path: Path) -> None:
    """150 iterations of 1 MB outputs: a ~150 MB trace gives a page of about 2 MB."""
    trace = write_long_trace(tmp_path / "long.jsonl")
    assert trace.stat().st_size > 150_000_000
    run = build_run(load_trace(trace))
    assert run.totals.iterations == 150 and run.totals.summaries == 6 and run.totals.retrievals == 3
    page = render_page(run)
    size = len(page.encode())
    assert 1_000_000 < size < 3_000_000, size
    assert page.count('class="hit" data-it=') == 4 * 150  # two scales, two layouts


def test_small_helpers() -> None:
    assert ranges([5, 1, 2, 3, 7, 8, 3]) == "1-3, 5, 7-8" and ranges([]) == ""
    assert [compact(n) for n in (950, 18_240, 1_050_000, 11_026_000_000)] == [
        "950",
        "18.2k",
        "1.05M",
        "11.0G",
    ]


def test_readme_demo_records_a_trace_the_commands_read(tmp_path: Path) -> None:
    """README "Inspecting runs": the offline demo run, then show, stats and html on its folder."""
    script = Path(__file__).resolve().parents[1] / "scripts" / "demo_trace.py"
    done = subprocess.run(
        [sys.executable, str(script), "--trace-dir", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    trace = Path(done.stdout.strip())
    assert trace.parent == tmp_path / "runs" and trace.exists()
    totals = build_run(load_trace(trace)).totals
    assert totals.iterations == 8 and totals.outputs_truncated >= 1 and totals.dedup_hits == 1
    assert totals.retrievals == 1 and totals.tool_errors == 1 and totals.summaries >= 1
    assert totals.masked_outputs >= 1  # the tiered preset elides covered outputs
    folder = str(tmp_path / "runs")
    assert invoke("trace", "show", folder)[0] == 0 and invoke("trace", "stats", folder)[0] == 0
    code, _, _ = invoke("trace", "html", folder, "-o", str(tmp_path / "run.html"))
    assert code == 0 and (tmp_path / "run.html").stat().st_size > 10_000


def write_lines(path: Path, lines: list[dict[str, object]]) -> Path:
    path.write_bytes(b"\n".join(orjson.dumps(line) for line in lines) + b"\n")
    return path


def test_resumed_run_and_a_retried_request(tmp_path: Path) -> None:
    """Two segments in one file (Agent.resume) are one run; a compaction retry keeps the last request."""

    def request(it: int, sent: int, **context: object) -> dict[str, object]:
        return {
            "v": 1,
            "type": "model_request",
            "iteration": it,
            "prompt_tokens_local": sent,
            "counterfactual_tokens": 1000,
            "context": context,
        }

    def response(it: int) -> dict[str, object]:
        return {
            "v": 1,
            "type": "model_response",
            "iteration": it,
            "usage": {"prompt_tokens": 10, "cost": 0.5},
        }

    path = write_lines(
        tmp_path / "resumed.jsonl",
        [
            {"v": 1, "type": "run_start", "run_id": "first", "model": "m", "task": "t"},
            request(1, 900),
            response(1),
            {"v": 1, "type": "run_end", "stop_reason": "max_iterations", "iterations": 1},
            {
                "v": 1,
                "type": "run_start",
                "run_id": "second",
                "model": "m",
                "task": "t",
                "source": "resume of x",
            },
            request(2, 5000),
            {
                "v": 1,
                "type": "error",
                "iteration": 2,
                "kind": "ContextWindowExceeded",
                "message": "compacting",
            },
            request(2, 400, compacted=True),
            response(2),
            {"v": 1, "type": "run_end", "stop_reason": "answered", "iterations": 1},
        ],
    )
    run = build_run(load_trace(path))
    assert run.run_id == "first" and run.segments == 2 and run.stop_label == "answered"
    second = run.iterations[1]
    assert second.requests == 2 and second.record.compacted and second.totals.sent_tokens == 400
    assert second.errors == (("ContextWindowExceeded", "compacting"),)
    assert run.totals.sent_tokens == 1300 and run.totals.cost == 1.0 and run.totals.errors == 1
    code, out, _ = invoke("trace", "show", str(path))
    assert code == 0 and "2 segments (resumed)" in out and "compacted" in out and "2 requests" in out


def test_page_redacts_secrets_an_older_trace_may_hold(tmp_path: Path) -> None:
    secret = "sk-live0123456789abcdefXYZ"
    path = write_lines(
        tmp_path / "leaky.jsonl",
        [
            {"v": 1, "type": "run_start", "run_id": "r", "model": "m", "task": f"use key {secret}"},
            {
                "v": 1,
                "type": "message",
                "message": {
                    "role": "tool",
                    "content": f"Authorization: Bearer {secret}",
                    "tool_call_id": "c1",
                    "name": "env",
                    "iteration": 1,
                },
            },
            {"v": 1, "type": "model_request", "iteration": 1, "prompt_tokens_local": 5},
        ],
    )
    page = render_page(build_run(load_trace(path)))
    assert secret not in page and "[redacted]" in page


def test_imported_recording_without_pipeline_records(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "imported.jsonl",
        [
            {
                "v": 1,
                "type": "run_start",
                "run_id": "r",
                "model": "m",
                "task": "t",
                "source": "someone/repo@abc",
            },
            {"v": 1, "type": "model_response", "iteration": 1, "usage": {"prompt_tokens": 1500}},
            {"v": 1, "type": "model_response", "iteration": 2, "usage": {"prompt_tokens": 2500}},
        ],
    )
    run = build_run(load_trace(path))
    assert run.stop_label == "imported" and not run.measured and run.totals.iterations == 2
    page = render_page(run)
    assert "No context-pipeline record" in page and page.count('class="hit" data-it=') == 2 * 4


# --------------------------------------------------------------------------- the chart's axes
def _points(*pairs: tuple[int, int]) -> list[ChartPoint]:
    return [ChartPoint(i, sent, full) for i, (sent, full) in enumerate(pairs, 1)]


def test_linear_axis_ends_at_a_nice_bound_just_above_the_maximum() -> None:
    assert y_axis(_points((2_300, 59_000), (5_000, 40_000)), log=False) == [0, 20_000, 40_000, 60_000]
    assert y_axis(_points((5_121, 420_303)), log=False)[-1] == 500_000
    for top in [*range(1, 3_000, 7), *range(3_000, 3_000_000, 9_973)]:
        ticks = y_axis(_points((1, top)), log=False)
        assert ticks[0] == 0 and top <= ticks[-1] and len(ticks) - 1 <= 5
        assert ticks[-1] <= max(top * 4 / 3, top + 1), top  # never 100k for 59k
        steps = {b - a for a, b in itertools.pairwise(ticks)}
        assert len(steps) == 1 and steps.pop() >= 1  # evenly spaced, whole tokens


def test_log_axis_spans_the_decades_of_the_data_not_from_one() -> None:
    assert y_axis(_points((2_300, 59_000), (5_000, 40_000)), log=True) == [
        1_000,
        2_000,
        5_000,
        10_000,
        20_000,
        50_000,
        100_000,
    ]
    assert y_axis(_points((5_121, 420_303)), log=True) == [1_000, 10_000, 100_000, 1_000_000]
    assert y_axis(_points((0, 0)), log=True)[0] == 1  # nothing positive: the axis still has a decade
    svg = svg_chart(_points((2_300, 59_000)), log=True)
    labels = re.findall(r'class="ylabel"[^>]*>([^<]*)<', svg)
    assert labels == ["1k", "2k", "5k", "10k", "20k", "50k", "100k"]


def test_tick_labels_and_the_phone_layout() -> None:
    assert [tick_label(v) for v in (0, 950, 2_500, 20_000, 62_500, 1_500_000)] == [
        "0",
        "950",
        "2.5k",
        "20k",
        "62.5k",
        "1.5M",
    ]
    points = [ChartPoint(i, 1_000, 1_000 * i) for i in range(1, 151)]
    narrow = svg_chart(points, layout=NARROW)
    assert 'class="chart chart-linear chart-narrow" viewBox="0 0 360 250"' in narrow
    xlabels = re.findall(r'class="xlabel"[^>]*>(\d+)<', narrow)
    assert len(xlabels) <= NARROW.max_x_labels + 1 and xlabels[0] == "1" and xlabels[-1] == "150"
    assert narrow.count('class="hit"') == 150


def test_building_a_view_leaves_no_reference_cycle(recorded: Path) -> None:
    """A view is freed as soon as it is dropped (a batch reads back every task's trace): building
    one leaves nothing for the cycle collector."""
    loaded = load_trace(recorded)
    gc.collect()
    gc.disable()
    try:
        view = build_run(loaded)
        assert view.iterations
        del view
        assert gc.collect() == 0
    finally:
        gc.enable()


HOSTILE_TEXTS = (
    "</script><script>alert(1)</script>",
    "<img src=x onerror=alert(2)>",
    '<a href="javascript:alert(3)">x</a>',
    "javascript:alert(4)",
    "line\u2028separator\u2029paragraph",
    "<!-- <script> -->",
)


def test_nothing_a_trace_holds_executes_or_breaks_the_page(tmp_path: Path) -> None:
    """Round 23: the task, a call's arguments and name, a tool's output and error, the answer and an
    error event each hold markup, a ``javascript:`` URL and U+2028/U+2029: the page has exactly its two
    script elements, no element or attribute from the trace, and the data block gives each back."""
    import anyio

    from tiered_agent import Agent, tool
    from tiered_agent.testing import FunctionModel, calls, text

    hostile = " ".join(HOSTILE_TEXTS)

    @tool(read_only=True)
    def show(what: str) -> str:
        """Show a text.

        Args:
            what: The text.
        """
        if what == "fail":
            raise ValueError(hostile)
        return hostile

    model = FunctionModel.scripted(
        [
            calls(
                ("c1", "show", {"what": hostile}),
                ("c2", "show", {"what": "fail"}),
                ("c3", "no <b>tool</b>", {}),
            ),
            text(hostile),
        ]
    )
    result = anyio.run(Agent(model, tools=[show], trace_dir=tmp_path).run, hostile)
    page = render_page(build_run(load_trace(result.trace_path)))

    assert page.count("<script") == 2 and page.count("</script>") == 2
    assert "<img" not in page and "<a " not in page and "<b>tool" not in page and "<!-- <script>" not in page
    markup = page.split('id="trace-data">')[0]
    assert re.search(r"<[a-z][^>]*\son\w+=", markup) is None  # no element carries a handler
    assert "&lt;img src=x onerror=alert(2)&gt;" in markup  # the task, shown as text
    assert re.search(r"<[a-z][^>]*\s(href|src)=", markup) is None  # no link, no image, no frame
    data = re.search(r'<script type="application/json" id="trace-data">(.*?)</script>', page, re.S)
    assert data is not None and "\u2028" not in data.group(1) and "<" not in data.group(1)
    payload = data.group(1)
    for piece in HOSTILE_TEXTS:  # every text is in the data, escaped, and reads back as it was
        assert (
            orjson.dumps(piece)
            .decode()
            .replace("<", "\\u003c")
            .replace(">", "\\u003e")
            .replace("&", "\\u0026")
            .replace("\u2028", "\\u2028")
            .replace("\u2029", "\\u2029")[1:-1]
            in payload
        )
