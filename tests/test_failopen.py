"""Fail open: a context step that raises never ends a run, a replay or a bench.

The step is skipped for that prompt (or that batch of tool calls), the prompt is what the other
steps build, call/result pairs stay valid, and the trace holds a ``step_error`` event (its message
redacted); the bench counts them and ``--strict`` fails on them. Also the regression this was
found by: a shell command with an empty quoted string (``echo ''``) crashed every summarizing
preset in live runs.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from click.testing import CliRunner

from tiered_agent import Agent, Policy, RunLimits, Workspace, tool, workspace_tools
from tiered_agent._messages import Message
from tiered_agent._result import StopReason
from tiered_agent._trace import StepError, SummaryEvent, read_trace
from tiered_agent.cli._bench import bench
from tiered_agent.context._dispatch import Batch, Dispatched
from tiered_agent.context._presets import PRESETS
from tiered_agent.context._step import Run, Step, StepRuntime, Turn
from tiered_agent.context.pipeline._build import validate_pairs
from tiered_agent.context.pipeline._draft import BuildContext, Draft
from tiered_agent.context.pipeline._types import Summary
from tiered_agent.context.steps import Age, Summarize, Truncate
from tiered_agent.context.steps._truncate import TruncateRuntime
from tiered_agent.inspect._load import load_trace
from tiered_agent.inspect._view import build_run
from tiered_agent.testing import AgentRequest, FunctionModel, calls, text

pytestmark = pytest.mark.anyio

SECRET = "sk-" + "failopen0123456789abcdef"
TRACES = Path(__file__).resolve().parents[1] / "traces"


@tool(read_only=True)
def lookup(key: str) -> str:
    """Look a key up.

    Args:
        key: The key.
    """
    return f"value of {key}: " + "x" * 300


@dataclass(frozen=True, slots=True)
class Boom(Step):
    """A deliberately failing custom step: it raises in the hook named by ``phase``."""

    kind: ClassVar[str] = "boom"
    hides: ClassVar[bool] = False
    phase: str = "apply"

    def start(self, run: Run) -> StepRuntime:
        return _BoomRuntime(self)


class _BoomRuntime(StepRuntime):
    def __init__(self, step: Boom) -> None:
        super().__init__(step)
        self.phase = step.phase

    def _raise(self, phase: str) -> None:
        if phase == self.phase:
            raise RuntimeError(f"boom in {phase} with the key {SECRET}")

    def serve(self, batch: Batch) -> Mapping[int, Dispatched]:
        self._raise("serve")
        return {}

    def observe(self, batch: Batch, results: Sequence[Dispatched]) -> None:
        self._raise("observe")

    def decide(self, turn: Turn) -> None:
        self._raise("decide")

    async def act(self, turn: Turn) -> None:
        self._raise("act")

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        self._raise("apply")
        return draft

    def finish(self, draft: Draft, context: BuildContext) -> Draft:
        self._raise("finish")
        return draft

    async def after(self, turn: Turn, tokens: int) -> bool:
        self._raise("after")
        return False

    def record(self) -> dict[str, int] | None:
        self._raise("record")
        return None


def _script(reads: int) -> list[Message]:
    """Two reads per reply (one repeated: the dedup-like serve/observe hooks see a batch), then done."""
    replies = [
        calls((f"c{i}a", "lookup", {"key": f"k{i}"}), (f"c{i}b", "lookup", {"key": "same"}))
        for i in range(reads)
    ]
    return [*replies, text("done")]


async def _run(policy: Policy, tmp_path: Path, reads: int = 4) -> tuple[FunctionModel, Path, StopReason]:
    model = FunctionModel.scripted(_script(reads))
    agent = Agent(
        model,
        tools=[lookup],
        context=policy,
        limits=RunLimits(max_iterations=reads + 2),
        trace_dir=tmp_path / policy.name,
    )
    result = await agent.run("Look the keys up.")
    return model, result.trace_path, result.stop_reason


def _prompts(model: FunctionModel) -> list[list[dict[str, object]]]:
    return [request.messages for request in model.requests]


@pytest.mark.parametrize("phase", ["serve", "observe", "decide", "act", "apply", "finish", "after", "record"])
async def test_a_failing_step_never_ends_a_run_and_its_prompts_are_those_without_it(
    phase: str, tmp_path: Path
) -> None:
    without = Policy(f"without-{phase}", (Truncate(max_chars=120),))
    failing = Policy(f"with-{phase}", (Boom(phase), Truncate(max_chars=120)))
    reference, _, stopped = await _run(without, tmp_path)
    model, trace_path, stop = await _run(failing, tmp_path)
    assert stop == stopped == StopReason.ANSWERED
    # the prompts the model saw are exactly those of the policy without the failing step
    assert _prompts(model) == _prompts(reference)
    for request in model.requests:
        validate_pairs([Message.from_openai(m) for m in request.messages])
    events = read_trace(trace_path)
    errors = [e for e in events if isinstance(e, StepError)]
    assert errors and {(e.step, e.phase, e.error) for e in errors} == {("boom", phase, "RuntimeError")}
    # once per prompt (or per batch of tool calls): 5 prompts, 4 batches
    assert len(errors) == (4 if phase in ("serve", "observe") else 5)
    assert all(e.message == f"boom in {phase} with the key [redacted]" for e in errors)
    assert SECRET not in trace_path.read_text()
    # tiered-agent trace shows them as errors of their iterations
    run = build_run(load_trace(trace_path))
    shown = [m for view in run.iterations for kind, m in view.errors if kind == "step_error"]
    assert len(shown) == len(errors) and not run.unknown_events
    assert shown[0] == f"boom ({phase}): RuntimeError: boom in {phase} with the key [redacted]"


async def test_the_step_after_a_failing_one_still_runs(tmp_path: Path) -> None:
    # Boom fails in apply; Truncate, after it, still cuts the 300-char outputs
    model, _, stop = await _run(Policy("p", (Boom("apply"), Truncate(max_chars=120))), tmp_path)
    assert stop == StopReason.ANSWERED
    last = model.requests[-1].messages
    tool_outputs = [str(m["content"]) for m in last if m["role"] == "tool"]
    assert tool_outputs and all("omitted" in t for t in tool_outputs)


class _FailingSummarizer:
    """A summarizer that raises (a buggy LLM adapter or digest)."""

    async def summarize(
        self, previous: Summary | None, snapshot: Sequence[Message], first: int, last: int
    ) -> Summary:
        raise ValueError(f"cannot summarize {first}-{last}")


@pytest.mark.parametrize("background", [True, False])
async def test_a_failing_summarizer_is_a_step_error_and_the_run_goes_on(
    background: bool, tmp_path: Path
) -> None:
    from tiered_agent.context._manager import ContextManager
    from tiered_agent.testing import calls as call_of

    policy = Policy("sum2", (Summarize(every=2, keep=1),))
    if not background:  # the replay's inline mode: the job runs at the next prompt
        from tiered_agent._tokens import TokenCounter

        manager = ContextManager(
            policy, counter=TokenCounter("o200k_base"), background=False, summarizer=_FailingSummarizer()
        )
        history = [Message("system", "s"), Message("user", "task")]
        async with manager:
            for k in range(1, 6):
                await manager.prepare(history)
                call = call_of(("lookup", {"key": str(k)})).tool_calls[0]
                history += [
                    Message("assistant", None, (call,), iteration=k),
                    Message("tool", "v", tool_call_id=call.id, name="lookup", iteration=k),
                ]
            await manager.prepare(history)
        errors = manager.step_errors
        assert manager.summary is None
    else:
        agent = Agent(
            FunctionModel.scripted(_script(6)),
            tools=[lookup],
            context=policy,
            summarizer=_FailingSummarizer(),
            trace_dir=tmp_path,
        )
        result = await agent.run("Look the keys up.")
        assert result.stop_reason == StopReason.ANSWERED
        events = read_trace(result.trace_path)
        errors = [e for e in events if isinstance(e, StepError)]
        assert not [e for e in events if isinstance(e, SummaryEvent)]
    assert errors and {(e.step, e.phase, e.error) for e in errors} == {("summarize", "summary", "ValueError")}
    assert errors[0].message.startswith("cannot summarize 1-")


# ----------------------------------------------------------------------------- echo '' (the crash)
def _echo_script(turns: int) -> list[Message]:
    commands = [
        "echo ''",
        'echo "" > empty.txt',
        'grep -n "" empty.txt; true',
        "sed -i '' 's/a/b/' empty.txt",
    ]
    replies = [calls(("run_shell", {"command": commands[i % len(commands)]})) for i in range(turns)]
    return [*replies, text("all done")]


@pytest.mark.parametrize("preset", list(PRESETS))
async def test_an_agent_running_echo_empty_quotes_answers_under_every_preset(
    preset: str, tmp_path: Path
) -> None:
    # 11 turns: kb-labs-adr (every 10) and adk-compaction (every 5) write digests over these
    # commands, and a small window makes the compacting presets compact over them too.
    ws = tmp_path / "ws"
    ws.mkdir()
    turns = 11

    def reply(request: AgentRequest) -> Message:
        return _echo_script(turns)[request.index]

    agent = Agent(
        FunctionModel(reply, window=1_500),
        tools=workspace_tools(Workspace(ws), allow_shell=True),
        context=preset,
        limits=RunLimits(max_iterations=turns + 1),
        trace_dir=tmp_path / "traces",
    )
    result = await agent.run("Empty the notes.")
    assert result.stop_reason == StopReason.ANSWERED, result.error
    assert result.output == "all done"
    events = read_trace(result.trace_path)
    assert not [e for e in events if isinstance(e, StepError)]
    if PRESETS[preset].summarizes and preset != "codex":  # codex compacts at 90%: not reached here
        assert [e for e in events if isinstance(e, SummaryEvent)], "a summary was written over the commands"


# ----------------------------------------------------------------------------- the bench
def _bench(tmp_path: Path, *options: str) -> tuple[int, str, dict[str, object]]:
    out = tmp_path / "out"
    trace = TRACES / "tau-bench" / "task2_trial1.jsonl"
    result = CliRunner().invoke(
        bench, [str(trace), "--policies", "codex", "--workers", "1", "--out", str(out), *options]
    )
    document = json.loads((out / "bench.json").read_text()) if (out / "bench.json").exists() else {}
    if "runs_file" in document:  # the per-run detail, beside bench.json
        lines = (out / str(document["runs_file"])).read_text().splitlines()
        document["runs"] = [json.loads(line) for line in lines]
    return result.exit_code, result.output, document


def test_the_bench_counts_step_errors_and_strict_fails_on_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    code, output, document = _bench(tmp_path / "clean", "--strict")
    assert code == 0, output
    policies = document["policies"]
    assert isinstance(policies, dict) and policies["codex"]["totals"]["step_errors"] == 0

    def boom(self: TruncateRuntime, draft: Draft, context: BuildContext) -> Draft:
        raise RuntimeError("truncation bug")

    monkeypatch.setattr(TruncateRuntime, "apply", boom)
    code, output, document = _bench(tmp_path / "lenient")
    assert code == 0, output
    assert "Warning: " in output and "context step error" in output
    policies = document["policies"]
    assert isinstance(policies, dict)
    steps = policies["codex"]["totals"]["steps"]
    assert policies["codex"]["totals"]["step_errors"] == steps > 0  # one per prompt
    assert policies["full"]["totals"]["step_errors"] == 0
    runs = document["runs"]
    assert isinstance(runs, list)
    listed = runs[0]["policies"]["codex"]["step_error_list"]
    assert listed[0] == {
        "iteration": 1,
        "step": "truncate",
        "phase": "apply",
        "error": "RuntimeError",
        "message": "truncation bug",
    }
    code, output, _ = _bench(tmp_path / "strict", "--strict")
    assert code == 1 and "Error: " in output and "context step error" in output


_AGING_EVERY_CALL = Policy("aging", (Age(every=1, window=1),))


@pytest.mark.anyio
@pytest.mark.parametrize("depth", [300, 1020])
@pytest.mark.parametrize("policy", [_AGING_EVERY_CALL, *PRESETS.values()], ids=lambda p: p.name)
async def test_a_recorded_call_nested_past_what_orjson_writes_ages_without_a_step_error(
    depth: int, policy: Policy
) -> None:
    """A log (or a trace of an older runtime) may hold a call whose arguments, or an output, nest
    256-1,023 levels: orjson reads them but will not write them back, and Python's recursion stops
    near 1,000. The aging step's key of a call raised ``JSONEncodeError`` and its cut of long
    arguments and its reading of JSON outputs ``RecursionError`` at every later prompt, and so did
    the digest summary's (round 23); no preset's step fails on them now."""
    from tiered_agent._messages import ToolCall
    from tiered_agent._tokens import TokenCounter
    from tiered_agent.context._manager import ContextManager
    from tiered_agent.context.aging._forms import _call_key

    deep = '{"text": ' + "[" * depth + "]" * depth + "}"
    assert _call_key(ToolCall("c", "echo", deep)) == "echo\x00" + deep
    manager = ContextManager(policy, counter=TokenCounter("o200k_base"), background=False)
    history = [Message("system", "s"), Message("user", "task")]
    async with manager:
        for k in range(1, 8):
            await manager.prepare(history)
            call = ToolCall(f"c{k}", "echo", deep)
            history += [
                Message("assistant", "Reading it again.", (call,), iteration=k),
                Message(
                    "tool",
                    deep if k % 2 else "line\n" * 400 + deep,
                    tool_call_id=call.id,
                    name="echo",
                    iteration=k,
                ),
            ]
        prepared = await manager.prepare(history)
    assert manager.step_errors == []
    if policy is _AGING_EVERY_CALL:
        assert prepared.prompt_tokens < prepared.counterfactual_tokens  # the old outputs aged
