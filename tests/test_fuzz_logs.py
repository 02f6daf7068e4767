"""``benchmarks/fuzz_logs.py``'s mutator: every mutated document is still one a JSON file can hold."""

from __future__ import annotations

import json
import random
from pathlib import Path

import claude_log
import pytest
from bench_scripts import load_script

from tiered_agent.bench._importers import load_runs

fuzz = load_script("fuzz_logs")


def _record() -> dict[str, object]:
    return {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}, {"": None}]},
        "usage": {"input_tokens": 12, "output_tokens": 3},
        "items": [[None], {}, []],
    }


def test_mutations_never_share_or_nest_a_value_in_itself() -> None:
    """Many mutations of many documents (seeded): no document holds a cycle (``json.dumps`` raises
    on one), and the mutator's own odd values stay as they were (a placed value is a copy)."""
    odd_before = json.dumps(fuzz.ODD)
    for seed in range(40):
        rng = random.Random(seed)
        documents = [_record() for _ in range(3)]
        for _ in range(60):
            document = rng.choice(documents)
            fuzz.mutate(rng, document, 1)
            json.dumps(document)
    assert json.dumps(fuzz.ODD) == odd_before


def test_a_mutation_changes_the_document() -> None:
    rng = random.Random(3)
    document = _record()
    before = json.dumps(document, sort_keys=True)
    fuzz.mutate(rng, document, 5)
    assert json.dumps(document, sort_keys=True) != before


FIXTURES = Path(__file__).parent / "fixtures"
CLASSES = {*fuzz.STRUCTURE, "invalid-utf8", "bom", "crlf", "nul-raw", "nul-escaped", "truncated", "empty",
           "whitespace", "binary", "huge-string", "inf-tokens", "inf-time", "wide-line", "deep-line",
           "deep-readable", "many-records", "controls-raw", "deep-first-record"}  # fmt: skip


def _corpus(out: Path) -> dict[str, bytes]:
    return {str(p.relative_to(out)): p.read_bytes() for p in sorted(out.rglob("*")) if p.is_file()}


def test_the_hostile_classes_are_seeded_complete_and_read_or_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each class is written for the Claude Code and Codex fixtures (smaller sizes than a real run's),
    the same seed writes the same bytes, and the importers read or skip every file with a reason."""
    monkeypatch.setattr(fuzz, "HUGE_STRING", 5000)
    monkeypatch.setattr(fuzz, "WIDE_RECORDS", 50)
    written = fuzz.write_hostile([FIXTURES], tmp_path / "a", 3)
    fuzz.write_hostile([FIXTURES], tmp_path / "b", 3)
    first = _corpus(tmp_path / "a")
    assert len(first) == written + 2 and first == _corpus(tmp_path / "b")  # + two file-system cases
    for kind in ("claude", "codex"):
        names = {Path(name).name for name in first if name.startswith(f"hostile/{kind}/")}
        assert {n for n in CLASSES if any(name.startswith(f"{n}-") for name in names)} == CLASSES, kind
    loaded = load_runs([tmp_path / "a"])
    assert loaded.runs and not [s for s in loaded.skipped if "cannot convert (" in s.reason]
    assert {Path(s.path).name for s in loaded.skipped} >= {"loop-a.jsonl", "self.jsonl"}
    controls = {Path(name).name for name in first if Path(name).name.startswith("controls-raw-")}
    assert len(controls) == 4 and not controls & {Path(d.path).name for d in loaded.skipped_lines}
    assert not [s for s in loaded.skipped if "control character" in s.reason]  # read (case 29)


def test_the_drift_cases_are_seeded_and_read_or_skipped_with_a_reason(tmp_path: Path) -> None:
    """Every version-drift case is written for each Claude Code and Codex fixture, the same seed writes
    the same bytes, no file trips a converter, and a response streamed twice (Claude Code's repeated
    entries of one message, Codex's repeated count) is one step with its usage counted once."""
    written = fuzz.write_drift([FIXTURES], tmp_path / "a", 5, 3)
    fuzz.write_drift([FIXTURES], tmp_path / "b", 5, 3)
    first = _corpus(tmp_path / "a")
    assert len(first) == written and first == _corpus(tmp_path / "b")
    assert {Path(name).parts[1] for name in first} == set(fuzz.DRIFT)
    loaded = load_runs([tmp_path / "a"])
    assert loaded.runs and not [s for s in loaded.skipped if "cannot convert (" in s.reason]
    streamed = {r.run_id: r for r in load_runs([tmp_path / "a" / "drift" / "streamed-twice"]).runs}
    originals = {r.run_id: r for r in load_runs([FIXTURES]).runs}
    for run_id, run in originals.items():
        copy_id = next(i for i in streamed if i.rsplit("/", 1)[-1].endswith(run_id.rsplit("/", 1)[-1]))
        assert (streamed[copy_id].steps, streamed[copy_id].usage) == (run.steps, run.usage), run_id


def _recorded_fixtures(root: Path) -> dict[str, int]:
    """The hand-written recorded runs of the importer tests, one folder each; their steps by folder."""
    from test_importers import mini_doc, swe_fc_doc, swe_text_doc, tau_doc
    from test_importers_sessions import openhands_events

    docs = {"mini": mini_doc(), "swefc": swe_fc_doc(), "swetext": swe_text_doc(), "tau": tau_doc(),
            "oh": openhands_events()}  # fmt: skip
    steps = {}
    for name, doc in docs.items():
        (root / name).mkdir(parents=True)
        (root / name / f"{name}.json").write_text(json.dumps(doc))
        steps[name] = sum(r.steps for r in load_runs([root / name]).runs)
    return steps


def test_the_recorded_run_drift_cases_keep_every_step(tmp_path: Path) -> None:
    """Each version-drift case of a recorded-run format (mini-swe-agent v2, SWE-agent 1.x, OpenHands
    condensation and later events, tau2-bench, added fields) is written, seeded, and replayed with the
    steps of the original (a RetryAgent's two attempts: twice), none skipped."""
    steps = _recorded_fixtures(tmp_path / "in")
    written = fuzz.write_drift([tmp_path / "in"], tmp_path / "a", 5, 3)
    fuzz.write_drift([tmp_path / "in"], tmp_path / "b", 5, 3)
    first = _corpus(tmp_path / "a")
    assert len(first) == written and first == _corpus(tmp_path / "b")
    assert {Path(name).parts[1] for name in first} == set(fuzz.RECORDED_DRIFT)
    for case in fuzz.RECORDED_DRIFT:
        for path in sorted((tmp_path / "a" / "drift" / case).iterdir()):
            loaded = load_runs([path])
            folder = path.name.split("-", 1)[0]
            expected = steps[folder] * (2 if case == "swe-retry-attempts" else 1)
            assert (loaded.skipped, sum(r.steps for r in loaded.runs)) == ((), expected), (case, path.name)


def test_a_drift_copy_is_a_session_of_its_own_not_a_copy_of_its_original(tmp_path: Path) -> None:
    """A drift copy gets the case's own provider ids (the same replacement everywhere, keys left
    alone), so the bench replays it beside its original instead of counting it as a copy."""
    line = b'{"call_id": "call_AbC123xyz9", "id": "msg_01ABCDEFGH", "encrypted_content": "gAAAAB"}'
    fresh = fuzz.fresh_ids(line, "usage-missing")
    assert b'"call_id": "call_AbC123xyz9d' in fresh and b'"id": "msg_01ABCDEFGHd' in fresh
    assert fresh.count(b'"call_id"') == 1 and b'"encrypted_content": "d' in fresh
    assert fuzz.fresh_ids(line, "usage-missing") == fresh != fuzz.fresh_ids(line, "unknown-types")
    minute, source = "2026-03-02T10:00", tmp_path / "in" / "s.jsonl"
    source.parent.mkdir()
    claude_log.write(source, [
        claude_log.prompt("u1", None, "Plan it.", 0, minute=minute),
        claude_log.reply("a1", "u1", "msg_01PlanAAAA", "claude-sonnet-4-5", 1, minute=minute),
        claude_log.prompt("u2", "a1", "Go on.", 2, minute=minute),
        claude_log.reply("a2", "u2", "msg_01GoOnBBBB", "claude-sonnet-4-5", 3, minute=minute),
    ])  # fmt: skip
    fuzz.write_drift([source.parent], tmp_path / "out", 5, 3)
    loaded = load_runs([source, tmp_path / "out" / "drift" / "added-fields"])
    assert len(loaded.runs) == 2 and not [r for r in loaded.runs if r.counted_from]
    assert not [s for s in loaded.skipped if s.reason.startswith(fuzz._COPY_REASONS)]
