"""``tiered-agent bench prompts``: the prompts a policy builds, as the bench builds them, with the
recorded action each call answered; a new file only; one run's failure leaves that run out."""

from __future__ import annotations

from collections import Counter
from collections.abc import AsyncGenerator
from pathlib import Path
from typing import Any

import orjson
import pytest
from bench_cli import invoke
from bench_scripts import load_example
from structlog.testing import capture_logs

from tiered_agent.bench import _prompts, prompts_from_lines, read_prompts
from tiered_agent.bench._importers import load_runs
from tiered_agent.context._presets import PRESETS

ROOT = Path(__file__).resolve().parents[1]
MINI = ROOT / "traces" / "mini-swe-agent" / "psf__requests-2317.jsonl"
TAU = ROOT / "traces" / "tau-bench" / "task2_trial1.jsonl"
LONG = ROOT / "traces" / "mini-swe-agent" / "django__django-16560.jsonl"  # 145 calls: its iterations age


def _lines(path: Path) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in path.read_bytes().splitlines()]


def test_the_prompts_are_the_benchs_and_each_names_the_recorded_action(tmp_path: Path) -> None:
    out = tmp_path / "prompts.jsonl"
    result = invoke("bench", "prompts", MINI, "--policies", "tiered,full", "-o", out)
    assert result.exit_code == 0, result.output
    [run] = load_runs([MINI]).runs
    lines = _lines(out)
    assert len(lines) == 2 * run.steps and "wrote 66 prompts of 1 runs" in result.output
    bench = invoke("bench", MINI, "--policies", "tiered", "--workers", "1", "--out", tmp_path / "b")
    assert bench.exit_code == 0, bench.output
    detail = orjson.loads((tmp_path / "b" / "bench.runs.jsonl").read_bytes().splitlines()[0])
    for policy in ("tiered", "full"):
        mine = [line for line in lines if line["policy"] == policy]
        assert [line["step"] for line in mine] == list(range(1, run.steps + 1))
        per_step = detail["policies"][policy]["per_step"]["prompt_tokens"]
        assert [line["prompt_tokens"] + line["unrecorded_prefix_tokens"] for line in mine] == per_step
    tiered = [line for line in lines if line["policy"] == "tiered"]
    assert tiered[-1]["prompt_tokens"] < tiered[-1]["full_tokens"]  # the premise: tiered shortened it
    answers = [m for m in run.messages if m.role == "assistant"]
    for line, answer in zip(tiered, answers, strict=True):
        assert line["next"] == [answer.to_dict()] and line["iteration"] == answer.iteration
        assert max(m["iteration"] for m in line["messages"]) < answer.iteration


def test_an_existing_file_is_never_overwritten(tmp_path: Path) -> None:
    out = tmp_path / "prompts.jsonl"
    out.write_text("mine\n")
    result = invoke("bench", "prompts", MINI, "-o", out)
    assert result.exit_code == 2 and "exists; name a new file" in result.output
    assert out.read_text() == "mine\n"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (("--policies", "nope"), "unknown policy 'nope'"),
        (("--run", "no-such-run"), "no recorded run named no-such-run found"),
    ],
)
def test_a_mistake_is_one_sentence(tmp_path: Path, extra: tuple[str, ...], message: str) -> None:
    out = tmp_path / "prompts.jsonl"
    result = invoke("bench", "prompts", MINI, "-o", out, *extra)
    assert result.exit_code == 2 and message in result.output and "Traceback" not in result.output


def test_a_run_is_chosen_by_its_id_or_its_last_part_and_calibrated_with_all(tmp_path: Path) -> None:
    """``--run`` picks what is written, not what the calibration reads: the chosen run's lines are
    those of the export of every run (the Claude Code sessions' unrecorded prefix is estimated from
    the usage of all of them)."""
    sessions = sorted((ROOT.parent / "shared" / "sessions" / "claude-code_m-claude").glob("*.jsonl"))[:3]
    if len(sessions) < 3:
        pytest.skip("../shared/sessions is not here")
    every, one = tmp_path / "every.jsonl", tmp_path / "one.jsonl"
    assert invoke("bench", "prompts", *sessions, "-o", every).exit_code == 0
    [chosen] = load_runs([sessions[1]]).runs
    result = invoke("bench", "prompts", *sessions, "--run", chosen.run_id.rsplit("/", 1)[-1], "-o", one)
    assert result.exit_code == 0, result.output
    mine = _lines(one)
    assert {line["run_id"] for line in mine} == {chosen.run_id}
    assert mine == [line for line in _lines(every) if line["run_id"] == chosen.run_id]
    alone = tmp_path / "alone.jsonl"
    assert invoke("bench", "prompts", sessions[1], "-o", alone).exit_code == 0
    assert _lines(alone)[0]["unrecorded_prefix_tokens"] != mine[0]["unrecorded_prefix_tokens"]


def test_a_run_whose_replay_fails_is_left_out(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    replay_prompts = _prompts.replay_prompts

    def breaking(run: Any, *args: Any) -> AsyncGenerator[Any, None]:
        if run.run_id.startswith("tau-bench/"):
            raise OverflowError("a bug")
        return replay_prompts(run, *args)

    monkeypatch.setattr(_prompts, "replay_prompts", breaking)
    out = tmp_path / "prompts.jsonl"
    result = invoke("bench", "prompts", MINI, TAU, "-o", out)
    assert result.exit_code == 0, result.output
    assert "the replay of 1 run(s) failed" in result.output and "tau-bench/task2_trial1" in result.output
    assert {line["run_id"] for line in _lines(out)} == {"mini-swe-agent/psf__requests-2317"}


def test_the_example_ruler_reads_the_export(tmp_path: Path) -> None:
    """``examples/own_ruler.py`` over the export of the bundled mini-swe-agent runs: ``full`` hides
    nothing of what it counts, ``tiered`` some of it (the numbers of this replay)."""
    out = tmp_path / "prompts.jsonl"
    result = invoke(
        "bench", "prompts", ROOT / "traces" / "mini-swe-agent", "--policies", "tiered,full", "-o", out
    )
    assert result.exit_code == 0, result.output
    ruler = load_example("own_ruler")
    lines = _lines(out)
    assert ruler.measure(lines) == {"full": (456, 12079, 0), "tiered": (456, 12079, 308)}
    assert ruler.measure(lines, calls_only=True) == {"full": (456, 3980, 0), "tiered": (456, 3980, 42)}


def test_a_run_recorded_twice_is_numbered_as_the_bench_numbers_it(tmp_path: Path) -> None:
    copy = tmp_path / "copy.jsonl"
    copy.write_bytes(MINI.read_bytes())
    out = tmp_path / "prompts.jsonl"
    result = invoke("bench", "prompts", MINI, copy, "-o", out)
    assert result.exit_code == 0, result.output
    ids = {line["run_id"] for line in _lines(out)}
    assert ids == {"mini-swe-agent/psf__requests-2317", "mini-swe-agent/psf__requests-2317#2"}
    second = tmp_path / "second.jsonl"
    result = invoke("bench", "prompts", MINI, copy, "--run", "psf__requests-2317#2", "-o", second)
    assert result.exit_code == 0, result.output
    assert {line["run_id"] for line in _lines(second)} == {"mini-swe-agent/psf__requests-2317#2"}


def test_a_chosen_run_is_written_as_in_the_export_of_every_run(tmp_path: Path) -> None:
    every, one = tmp_path / "every.jsonl", tmp_path / "one.jsonl"
    assert invoke("bench", "prompts", MINI, TAU, "-o", every).exit_code == 0
    result = invoke("bench", "prompts", MINI, TAU, "--run", "psf__requests-2317", "-o", one)
    assert result.exit_code == 0, result.output
    mine = _lines(one)
    assert {line["run_id"] for line in mine} == {"mini-swe-agent/psf__requests-2317"}
    assert mine == [line for line in _lines(every) if line["run_id"] == "mini-swe-agent/psf__requests-2317"]


def test_a_policy_of_your_own_is_exported_under_its_name(tmp_path: Path) -> None:
    """``--policy-json`` takes what ``Policy.to_dict()`` wrote: the default without its aging step is
    written under its own name, keeps more than the default, and alone unless --policies asks for
    presets too; a file that is not a policy is one sentence."""
    mine = tmp_path / "mine.json"
    mine.write_bytes(orjson.dumps(PRESETS["tiered"].without("age").replace(name="no-aging").to_dict()))
    out = tmp_path / "prompts.jsonl"
    result = invoke("bench", "prompts", LONG, "--policy-json", mine, "--policies", "tiered", "-o", out)
    assert result.exit_code == 0, result.output
    lines = _lines(out)
    assert {line["policy"] for line in lines} == {"tiered", "no-aging"}
    tokens = Counter()
    for line in lines:
        tokens[line["policy"]] += line["prompt_tokens"]
    assert tokens["no-aging"] > tokens["tiered"]
    alone = tmp_path / "alone.jsonl"
    assert invoke("bench", "prompts", LONG, "--policy-json", mine, "-o", alone).exit_code == 0
    assert {line["policy"] for line in _lines(alone)} == {"no-aging"}
    broken = tmp_path / "broken.json"
    broken.write_text("[1, 2]")
    result = invoke("bench", "prompts", MINI, "--policy-json", broken, "-o", tmp_path / "x.jsonl")
    assert result.exit_code == 2 and "does not hold a policy" in result.output
    assert not (tmp_path / "x.jsonl").exists()


def test_the_delta_export_reads_back_as_the_whole_export(tmp_path: Path) -> None:
    """``--delta``: a run's first line per policy whole, the others only ``shared`` and the messages
    after them; :func:`tiered_agent.bench.read_prompts` gives back the whole export line for line
    (also on a run long enough that aging rewrites earlier messages), and reads a whole one as is."""
    whole, delta = tmp_path / "whole.jsonl", tmp_path / "delta.jsonl"
    paths = (MINI, LONG, TAU)
    assert invoke("bench", "prompts", *paths, "--policies", "tiered,full", "-o", whole).exit_code == 0
    result = invoke("bench", "prompts", *paths, "--policies", "tiered,full", "--delta", "-o", delta)
    assert result.exit_code == 0, result.output
    raw = _lines(delta)
    firsts = [line for line in raw if line["step"] == 1]
    assert len(firsts) == 6 and all("shared" not in line for line in firsts)
    later = [line for line in raw if line["step"] > 1]
    assert all(line["shared"] >= 1 for line in later)
    # aging rewrote an earlier message of tiered's prompt somewhere: not every line only appends
    tiered = [line for line in later if line["policy"] == "tiered" and line["run_id"].endswith("16560")]
    previous_lengths = {
        line["step"]: len(line["messages"]) for line in _lines(whole) if line["policy"] == "tiered"
    }
    assert any(line["shared"] < previous_lengths[line["step"] - 1] for line in tiered)
    assert delta.stat().st_size * 5 < whole.stat().st_size
    assert list(read_prompts(delta)) == _lines(whole)
    assert list(read_prompts(whole)) == _lines(whole)
    own = load_example("own_ruler")  # reads the file with read_prompts: either form, one measure
    measured = own.measure(read_prompts(delta))
    assert measured == own.measure(_lines(whole)) and measured["tiered"][2] > 0 == measured["full"][2]


def test_a_delta_line_without_its_prompt_is_skipped_and_logged() -> None:
    """Hostile or cut files: a line that is not JSON, a delta whose previous prompt is missing or too
    short, and every delta after it until a whole line, are skipped with their reason; none is
    rebuilt on a wrong prompt."""
    a, b, c = {"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user"}

    def line(step: int, messages: list[Any], shared: int | None = None, run: str = "r") -> bytes:
        data: dict[str, Any] = {"run_id": run, "policy": "p", "step": step, "messages": messages}
        if shared is not None:
            data["shared"] = shared
        return orjson.dumps(data)

    lines = [
        line(1, [a]),
        line(2, [b], shared=1),
        b"{not json",
        line(3, [c], shared=2),  # its base was before the broken line: skipped
        line(4, [a, c]),  # whole again
        line(5, [b], shared=5),  # more than the previous prompt holds
        line(1, [b], shared=0, run="other"),  # no previous prompt at all
        b"",
        line(6, [a, c, b]),
        line(7, [a], shared=2),
    ]
    with capture_logs() as logs:
        read = list(prompts_from_lines(lines))
    assert [(line["step"], line["messages"]) for line in read] == [
        (1, [a]),
        (2, [a, b]),
        (4, [a, c]),
        (6, [a, c, b]),
        (7, [a, c, a]),
    ]
    assert all("shared" not in line for line in read)
    skipped = [(e["line"], e["reason"]) for e in logs if e["event"] == "bench.prompts_line_skipped"]
    assert [number for number, _ in skipped] == [3, 4, 6, 7]
    assert "without a previous prompt" in skipped[1][1] and "shared=5" in skipped[2][1]


def test_lines_of_the_wrong_types_are_skipped_with_their_reason_never_raised() -> None:
    """A ``run_id`` or ``policy`` that is a list or an object raised ``TypeError: unhashable type``
    out of the reader (round 22); a raw control character in a string lost its line; a line nested
    past 255 levels was yielded to the ruler (which cannot even compare it)."""
    a = {"role": "user", "content": "a"}

    def line(messages: Any, shared: Any = None, run: Any = "r", policy: Any = "p") -> bytes:
        data: dict[str, Any] = {"run_id": run, "policy": policy, "messages": messages}
        if shared is not None:
            data["shared"] = shared
        return orjson.dumps(data)

    lines = [
        line([a], run=["r"]),
        line([a], policy={"p": 1}),
        line([a, "text"]),
        line([a]),
        line([a], shared=-1),
        line([a]),
        line([a], shared=True),
        line([a]),
        line([a], shared=1.0),
        line([a]),
        line([a], shared=10**18),
        orjson.dumps({"run_id": "r", "policy": "p", "messages": [a]}).replace(b'"a"}', b'"a\x01b"}'),
        b'{"run_id": "r", "policy": "p", "messages": [' + b"[" * 300 + b"]" * 300 + b"]}",
    ]
    with capture_logs() as logs:
        read = list(prompts_from_lines(lines))
    assert [line["messages"] for line in read] == [[a]] * 4 + [[{"role": "user", "content": "a\x01b"}]]
    skipped = [(e["line"], e["reason"]) for e in logs if e["event"] == "bench.prompts_line_skipped"]
    assert [number for number, _ in skipped] == [1, 2, 3, 5, 7, 9, 11, 13]
    assert "run_id ['r'] and policy 'p' must be strings" in skipped[0][1]
    assert "a message that is not a JSON object" in skipped[2][1]
    assert all("is not a count" in reason for _, reason in skipped[3:7])
    assert "nested deeper than 255 levels" in skipped[7][1]


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"steps": [0]}, '"steps" must be a list of JSON objects'),
        ({"steps": "dedup"}, '"steps" must be a list of JSON objects'),
        ({"steps": [{"step": "bogus"}]}, "unknown context step 'bogus'"),
        ({"hard_limit": "high"}, "mine.json: "),
        ({"hard_limit": 7}, "Policy.hard_limit must be in (0, 1]"),
        ({"bogus_key": 1}, "invalid policy fields"),
    ],
)
def test_a_policy_file_of_the_wrong_shape_is_one_sentence(
    tmp_path: Path, change: dict[str, Any], message: str
) -> None:
    """A step that was a number gave a traceback (``TypeError: 'int' object is not iterable``,
    round 22); each mistake is one sentence naming the file, exit 2, nothing written."""
    mine = tmp_path / "mine.json"
    mine.write_bytes(orjson.dumps({**PRESETS["tiered"].replace(name="mine").to_dict(), **change}))
    result = invoke("bench", "prompts", MINI, "--policy-json", mine, "-o", tmp_path / "x.jsonl")
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert result.exit_code == 2 and len(lines) == 1 and "Traceback" not in result.output, result.output
    assert lines[0].startswith(f"Error: {mine}: ") and message in lines[0]
    assert not (tmp_path / "x.jsonl").exists()


def test_reading_an_export_that_is_a_fifo_raises_instead_of_blocking(tmp_path: Path) -> None:
    import os

    from tiered_agent._files import NotRegularFile

    fifo = tmp_path / "prompts.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(NotRegularFile, match="is a FIFO"):
        next(read_prompts(fifo))


def test_a_private_key_a_recorded_output_printed_is_exported_redacted(tmp_path: Path) -> None:
    """The export writes what the replay shows, with secrets redacted as the runtime's trace is: a
    session whose agent printed a key (``cat ~/.ssh/id_rsa``) does not carry it into the file."""
    body = "MIIEowIBAAKCAQEAsecretkeymaterial0123456789"
    lines = MINI.read_bytes().splitlines()
    first_output = next(i for i, line in enumerate(lines) if b'"role":"tool"' in line)
    event = orjson.loads(lines[first_output])
    event["message"]["content"] += f"\n-----BEGIN RSA PRIVATE KEY-----\n{body}\n-----END RSA PRIVATE KEY-----"
    lines[first_output] = orjson.dumps(event)
    run = tmp_path / "run.jsonl"
    run.write_bytes(b"\n".join(lines) + b"\n")
    out = tmp_path / "prompts.jsonl"
    result = invoke("bench", "prompts", run, "--policies", "tiered,full", "-o", out)
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert body not in text
    assert text.count("-----BEGIN RSA PRIVATE KEY-----[redacted]-----END RSA PRIVATE KEY-----") >= 2
