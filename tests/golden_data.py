"""Golden data of the context policies: what the byte-identical check (tests/test_golden.py) compares.

Two files in ``tests/golden/``, produced from a few bundled runs:

* ``prompts.json`` (the strongest check, independent of the bench's JSON layout): every
  preset and ``tiered:*`` ablation, plus a few extra configurations that exercise what the
  presets leave idle (window drop notes, masking with truncation, clearing, elision
  thresholds, summary overlap), replayed at two context windows (the nominal 128k, and 16k
  so that compaction and the hard limit fire). At every step, the prompt
  ``ContextManager.prepare`` built (each message as sent, with its iteration tag, and the
  tool schemas) and its recorded stats (the trace's ``model_request.context`` record, local,
  counterfactual and estimated tokens, dedup hits) are hashed; the hashes are chained per
  (run, policy, window).
* ``bench.json``: the sha256 of the bench JSON of the same runs, every policy, default
  settings, minus ``timing``; the same without ``policies.*.config`` and of those configs
  alone (so a change of the config representation shows as that key only); and the
  per-policy totals, to read what moved when a hash differs.

Regenerate ONLY at a commit whose behaviour you mean to freeze (``scripts/freeze_golden.py``).
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

import anyio
import orjson

from tiered_agent._messages import Message, group_by_iteration
from tiered_agent._trace import ContextRecord
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import (
    ReplaySettings,
    _observations,
    _tool_kinds,
    available_policies,
    policy_config,
    replay_runs,
    resolve_policies,
)
from tiered_agent.bench._report import build_document, dumps, strip_timing
from tiered_agent.context._config import ContextConfig
from tiered_agent.context._manager import ContextManager, PreparedPrompt
from tiered_agent.context._policy import Policy

ROOT = Path(__file__).resolve().parents[1]
FROZEN_AT = "_frozen_at"  # prompts.json: the commit the prompts were frozen from
STEP_ID_CHARS = 12
DIFF_LINES = 80
GOLDEN = ROOT / "tests" / "golden"
PROMPTS_FILE = GOLDEN / "prompts.json"
BENCH_FILE = GOLDEN / "bench.json"
RUNS = (
    "mini-swe-agent/matplotlib__matplotlib-26466",
    "mini-swe-agent/psf__requests-2317",
    "swe-agent/marshmallow-1867__default_windowed",
    "tau-bench/task2_trial1",
)
WINDOWS = (128_000, 16_000)
ENCODING = "o200k_base"

# Configurations the presets leave idle, so that the check covers them too.
EXTRAS: dict[str, Policy] = {
    # window without a summarizer: older iterations dropped behind a note; head-only cuts by lines
    "extra:window-drop": ContextConfig(
        name="extra:window-drop",
        max_output_chars=1_200,
        max_output_lines=30,
        truncation_mode="head",
        window_iterations=3,
        summary_every=None,
        compact_at=None,
    ),
    # masking, truncation and clearing together, with retrieval hints
    "extra:mask-clear": ContextConfig(
        name="extra:mask-clear",
        max_output_chars=2_000,
        window_iterations=None,
        mask_keep_outputs=6,
        clear_trigger_tokens=6_000,
        clear_keep_outputs=2,
        summary_every=None,
        compact_at=None,
    ),
    # elision with a threshold, summaries with an overlap, a wider kept window
    "extra:elide-overlap": ContextConfig(
        name="extra:elide-overlap",
        max_output_chars=4_000,
        window_iterations=3,
        window_keep_actions=True,
        elide_min_chars=600,
        summary_every=8,
        summary_overlap=2,
        compact_at=0.6,
        compact_keep_iterations=2,
    ),
}


def policies() -> dict[str, Any]:
    """Every policy the prompts are frozen for: the presets, the ablations, the extras."""
    return {name: policy_config(name) for name in available_policies()} | EXTRAS


def bundled_runs() -> list[RecordedRun]:
    return load_runs([ROOT / "traces" / f"{name}.jsonl" for name in RUNS], strict=True).runs


# --------------------------------------------------------------------------- (a) prompts
@lru_cache(maxsize=65_536)
def _message_digest(message: Message) -> bytes:
    return hashlib.sha256(orjson.dumps(message.to_dict(), option=orjson.OPT_SORT_KEYS)).digest()


def flat_record(record: ContextRecord) -> dict[str, Any]:
    """The typed per-step record in the flat form the golden data was frozen with (the trace's
    ``model_request.context`` before records were kept per step): the same facts, summed over the
    steps, so that the check stays independent of the record's layout."""
    flat: dict[str, Any] = {
        "truncated_outputs": record.truncated_outputs,
        "truncated_chars": record.truncated_chars,
        "truncations": [cut.to_dict() for cut in record.cuts],
        "masked_outputs": record.hidden_outputs,
        "masked_chars": record.hidden_chars,
        "windowed_out": list(record.windowed_out),
        "summary_range": list(record.summary_range) if record.summary_range else None,
        "shown_iterations": list(record.shown_iterations),
        "truncated_tokens": record.truncated_tokens,
        "compacted": record.compacted,
        "dedup_hits": record.dedup_hits,
    }
    if record.pointers:
        flat |= {"dedup_pointers": record.pointers, "dedup_pointer_chars": record.pointer_chars}
    if record.aging is not None:
        flat["aging"] = record.aging.to_dict()
    return flat


def step_digest(prepared: PreparedPrompt, dedup_hits: int) -> bytes:
    """The fingerprint of one built prompt and everything recorded about it."""
    context = prepared.record()
    assert context.dedup_hits == dedup_hits, "the record's dedup hits are the manager's, as it was built"
    record = {
        "messages": [_message_digest(m).hex() for m in prepared.built.messages],
        "tools": hashlib.sha256(orjson.dumps(list(prepared.tools), option=orjson.OPT_SORT_KEYS)).hexdigest(),
        "context": flat_record(context),
        "prompt_tokens": prepared.prompt_tokens,
        "counterfactual_tokens": prepared.counterfactual_tokens,
        "estimated_tokens": prepared.estimated_tokens,
        "compacted": prepared.compacted,
    }
    return hashlib.sha256(orjson.dumps(record, option=orjson.OPT_SORT_KEYS)).digest()


async def _prompt_steps(
    run: RecordedRun, config: Any, window: int, counter: IdCounter, render: int = 0
) -> list[bytes] | str:
    """Step through ``run`` as the replay does (same manager calls, same dispatch); one digest per
    step, or (``render`` > 0) the prompt of that step as text."""
    manager = ContextManager(  # no clock: the records hold no wall-clock time (the replay is instant)
        config, counter=counter, context_window=window, background=False, enforce_hard_limit=False, clock=None
    )
    kind = _tool_kinds(run)
    groups = group_by_iteration(run.messages)
    history: list[Message] = list(groups.get(0, ()))
    digests: list[bytes] = []
    async with manager:
        schemas = [*run.tools, *(t.schema() for t in manager.tools(lambda: history))]
        for iteration in sorted(i for i in groups if i > 0):
            group = groups[iteration]
            if any(m.role == "assistant" for m in group):
                prepared = await manager.prepare(history, schemas)
                digests.append(step_digest(prepared, manager.dedup_hits))
                if len(digests) == render:
                    return rendered(prepared)
            history.extend(await _observations(manager, group, kind, iteration))
    assert not manager.step_errors, f"a step raised (skipped, fail open): {manager.step_errors[:3]}"
    return digests if not render else f"(no step {render}: the run has {len(digests)})"


def rendered(prepared: PreparedPrompt) -> str:
    """A prompt as readable text: its record, tokens and tools, then each message (for a diff)."""
    lines = [
        f"record: {orjson.dumps(flat_record(prepared.record()), option=orjson.OPT_SORT_KEYS).decode()}",
        f"tokens: prompt {prepared.prompt_tokens}, counterfactual {prepared.counterfactual_tokens}, "
        f"estimated {prepared.estimated_tokens}",
        f"tools: {[t.get('function', {}).get('name') for t in prepared.tools]}",
    ]
    for index, message in enumerate(prepared.built.messages):
        lines.append(
            f"--- [{index}] {message.role} iteration={message.iteration} {message.tool_call_id or ''}"
        )
        lines.extend((message.content or "").splitlines() or [""])
        lines.extend(f"    call {c.id} {c.name} {c.arguments}" for c in message.tool_calls)
    return "\n".join(lines)


def render_step(key: str, step: int) -> str:
    """The prompt of step ``step`` (1-based) of the combination ``"<run>|<policy>|<window>"``."""
    run_id, name, window = key.split("|")
    run = next(r for r in bundled_runs() if r.run_id == run_id)
    prompt = anyio.run(_prompt_steps, run, policies()[name], int(window), IdCounter(ENCODING), step)
    assert isinstance(prompt, str)
    return prompt


def prompt_entries() -> Iterator[tuple[str, list[bytes]]]:
    """``("<run>|<policy>|<window>", per-step digests)`` for every frozen combination."""
    counter = IdCounter(ENCODING)
    for run in bundled_runs():
        for name, config in policies().items():
            for window in WINDOWS:
                steps = anyio.run(_prompt_steps, run, config, window, counter, backend="asyncio")
                assert isinstance(steps, list)
                yield f"{run.run_id}|{name}|{window}", steps


def chain(digests: Sequence[bytes]) -> str:
    total = hashlib.sha256()
    for digest in digests:
        total.update(digest)
    return total.hexdigest()


def step_ids(digests: Sequence[bytes]) -> list[str]:
    """Each step's digest, short (to find the first step that differs)."""
    return [digest.hex()[:STEP_ID_CHARS] for digest in digests]


def prompts_golden() -> dict[str, Any]:
    entries = {
        key: {"steps": len(steps), "sha256": chain(steps), "per_step": step_ids(steps)}
        for key, steps in prompt_entries()
    }
    return {FROZEN_AT: _head(), **entries}


def combinations(golden: Mapping[str, Any]) -> dict[str, Any]:
    """The frozen combinations of ``prompts.json`` (without the commit they were frozen at)."""
    return {key: value for key, value in golden.items() if key != FROZEN_AT}


def _head() -> str:
    """The commit whose code the data is frozen from (its prompts are what a diff compares with)."""
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=False)
    return done.stdout.strip() if done.returncode == 0 else ""


def first_difference(key: str, frozen: Mapping[str, Any], current: Sequence[str], commit: str) -> str:
    """A readable account of where ``key``'s prompts first differ from the frozen ones: the step, and
    a unified diff of that prompt as the frozen commit built it and as the code builds it now (the
    frozen commit's tree is exported with ``git archive``; without git, only the step)."""
    before = list(frozen.get("per_step", ()))
    step = next((i for i, (a, b) in enumerate(zip(before, current, strict=False)) if a != b), None)
    if step is None:
        step = min(len(before), len(current))
    head = f"{key}: {len(current)} steps now, {len(before)} frozen; step {step + 1} is the first that differs"
    now = render_step(key, step + 1)
    then = _render_at(commit, key, step + 1) if commit else None
    if then is None:
        return (
            f"{head} (no diff: the frozen commit {commit or '?'} could not be exported); now:\n{now[:4000]}"
        )
    diff = list(
        difflib.unified_diff(
            then.splitlines(), now.splitlines(), f"frozen ({commit[:10]})", "now", lineterm="", n=2
        )
    )
    shown = diff[:DIFF_LINES] + (
        [f"... {len(diff) - DIFF_LINES} more diff lines"] if len(diff) > DIFF_LINES else []
    )
    return "\n".join([head, *shown])


def _render_at(commit: str, key: str, step: int) -> str | None:
    """The prompt of ``key``'s step as the code at ``commit`` builds it (None when it cannot)."""
    with tempfile.TemporaryDirectory() as folder:
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, capture_output=True, check=False)
        if archive.returncode != 0:
            return None
        subprocess.run(["tar", "-x", "-C", folder], input=archive.stdout, check=False)
        code = (
            "import sys; from tiered_agent._logging import configure_logging as c; c(level='warning'); "
            "import golden_data as g; sys.stdout.write(g.render_step(sys.argv[1], int(sys.argv[2])))"
        )
        env = {**os.environ, "PYTHONPATH": folder}
        done = subprocess.run(
            [sys.executable, "-c", code, key, str(step)],
            cwd=Path(folder) / "tests",
            env=env,
            capture_output=True,
            text=True,
            check=False,
            timeout=600,
        )
        return done.stdout if done.returncode == 0 else None


# --------------------------------------------------------------------------- (b) bench JSON
def bench_document() -> dict[str, Any]:
    """The bench JSON (minus timing) of the golden runs, every policy, default settings."""
    result = replay_runs(bundled_runs(), resolve_policies(None), ReplaySettings(), workers=1)
    return strip_timing(build_document(result, [f"traces/{name}.jsonl" for name in RUNS]))


def _sha(document: Any) -> str:
    return hashlib.sha256(dumps(document)).hexdigest()


def bench_golden() -> dict[str, Any]:
    document = bench_document()
    without = document | {
        "policies": {
            n: {k: v for k, v in p.items() if k != "config"} for n, p in document["policies"].items()
        }
    }
    return {
        "sha256": _sha(document),
        "sha256_without_configs": _sha(without),
        "configs_sha256": _sha({n: p.get("config") for n, p in document["policies"].items()}),
        "totals": {n: p["totals"] for n, p in document["policies"].items()},
    }


# --------------------------------------------------------------------------- files
def write(path: Path, data: Mapping[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(orjson.dumps(data, option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2) + b"\n")


def read(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = orjson.loads(path.read_bytes())
    return data


def main(argv: Sequence[str] | None = None, out: Callable[[str], None] = print) -> None:
    parser = argparse.ArgumentParser(description="Regenerate the golden data of the context policies.")
    parser.add_argument("--bench-only", action="store_true", help="only tests/golden/bench.json")
    parser.add_argument(
        "--per-step", metavar="RUN|POLICY|WINDOW", help="print one combination's per-step digests (to diff)"
    )
    parser.add_argument("--render", metavar="RUN|POLICY|WINDOW@STEP", help="print the prompt of one step")
    args = parser.parse_args(argv)
    if args.per_step:
        steps = dict(prompt_entries())[args.per_step]
        for number, digest in enumerate(steps, start=1):
            out(f"{number:4d} {digest.hex()}")
        return
    if args.render:
        key, _, step = args.render.rpartition("@")
        out(render_step(key, int(step)))
        return
    write(BENCH_FILE, bench_golden())
    out(f"wrote {BENCH_FILE.relative_to(ROOT)}")
    if not args.bench_only:
        write(PROMPTS_FILE, prompts_golden())
        out(f"wrote {PROMPTS_FILE.relative_to(ROOT)}")
