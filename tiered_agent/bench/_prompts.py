"""The prompts a policy builds for recorded runs, written out for rulers of your own.

``tiered-agent bench prompts PATHS --policies tiered --output prompts.jsonl`` replays each run as the
bench does (:func:`~._replay.replay_prompts`: the live ``ContextManager``, the same dispatch, the
calibration of the runs read together, :func:`~._replay.bench_plan`) and writes one JSON line per
run, policy and model call (docs/cli.md, "bench prompts"):

- ``run_id``, ``policy``, ``step`` (the model call, from 1) and ``iteration`` (the agent's
  iteration that call answered);
- ``prompt_tokens`` and ``full_tokens``: the bench's count of this prompt and of the whole history
  at that call (messages and tool schemas), and ``unrecorded_prefix_tokens``: the prefix the log
  left out (a system prompt, tool schemas) that is sent before ``messages`` and never shortened;
- ``messages``: the prompt as sent (each message's OpenAI form and its ``iteration``);
- ``tools``: the names of the tools sent with it;
- ``next``: what the agent did at that call in the recording (each assistant message of the
  iteration, same form), the action a ruler checks the prompt against.

Messages are written with secrets redacted as the runtime's trace writes them (:func:`~.._trace.redact`:
private key blocks, ``sk-``/``Bearer`` shapes, keys in URLs, this machine's secret environment
values): a recorded session can hold what its agent printed.

With ``delta``, each line after a run's first for a policy holds ``shared`` and only the messages
after them (:mod:`._prompt_file`; its reader yields whole lines from either form).

A run whose replay raises is left out, logged, and counted (:attr:`PromptsWritten.failed`): one
run never ends the export.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any, BinaryIO

import orjson
import structlog

from .._errors import TieredAgentError
from .._messages import Message
from .._tokens import TokenCounter
from .._trace import redact, remembering_clean_texts
from ..context._manager import PreparedPrompt
from ..context._policy import Policy
from ._calibration import fit
from ._pricing import RunPlan
from ._prompt_file import delta_line
from ._record import failure_reason
from ._recorded import RecordedRun
from ._replay import ReplaySettings, bench_plan, replay_prompts, unique_ids

__all__ = ["PromptsWritten", "prompt_line", "select", "write_prompts"]

log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class PromptsWritten:
    """What :func:`write_prompts` wrote: lines, the runs replayed, and the run ids it left out."""

    lines: int
    runs: int
    failed: tuple[str, ...] = ()


def select(runs: Sequence[RecordedRun], wanted: Sequence[str]) -> list[RecordedRun]:
    """The runs whose id is one of ``wanted`` or ends with ``/`` and one of them (all: none wanted)."""
    if not wanted:
        return list(runs)
    return [run for run in runs if any(run.run_id == w or run.run_id.endswith("/" + w) for w in wanted)]


def _actions(run: RecordedRun) -> list[tuple[int, tuple[Message, ...]]]:
    """Each model call's iteration and the assistant messages the recording holds for it, in order."""
    by_iteration: dict[int, list[Message]] = {}
    for message in run.messages:
        if message.role == "assistant":
            by_iteration.setdefault(message.iteration, []).append(message)
    return [(iteration, tuple(by_iteration[iteration])) for iteration in sorted(by_iteration)]


def prompt_line(
    run: RecordedRun,
    plan: RunPlan,
    *,
    policy: str,
    step: int,
    prepared: PreparedPrompt,
    action: tuple[int, tuple[Message, ...]] | None,
) -> dict[str, Any]:
    """One line of the export: the prompt ``policy`` built for model call ``step`` of ``run``, and
    ``action``, the recorded call it answered (None: the recording holds none)."""
    iteration, answer = action if action is not None else (None, ())
    return {
        "run_id": run.run_id,
        "policy": policy,
        "step": step,
        "iteration": iteration,
        "prompt_tokens": prepared.prompt_tokens,
        "full_tokens": prepared.counterfactual_tokens,
        "unrecorded_prefix_tokens": plan.prefix.tokens,
        "messages": [redact(m).to_dict() for m in prepared.built.messages],
        "tools": [str(t.get("function", {}).get("name", "")) for t in prepared.tools],
        "next": [redact(m).to_dict() for m in answer],
    }


async def _write_run(
    run: RecordedRun, policies: Mapping[str, Policy], settings: ReplaySettings, plan: RunPlan, delta: bool
) -> list[bytes]:
    """Every line of one run (all of them, or the error: a run is written whole or not at all);
    ``delta``: each policy's lines after its first as :func:`~._prompt_file.delta_line` writes them."""
    actions = _actions(run)
    lines = []
    with remembering_clean_texts():  # a message every prompt of the run repeats is scanned once
        for name, policy in policies.items():
            lines += await _policy_lines(
                run, name=name, policy=policy, settings=settings, plan=plan, actions=actions, delta=delta
            )
    return lines


async def _policy_lines(
    run: RecordedRun,
    *,
    name: str,
    policy: Policy,
    settings: ReplaySettings,
    plan: RunPlan,
    actions: list[tuple[int, tuple[Message, ...]]],
    delta: bool,
) -> list[bytes]:
    """The lines of one run and policy (:func:`_write_run`)."""
    lines = []
    async with aclosing(replay_prompts(run, policy, settings, plan)) as prompts:
        step, previous = 0, None
        async for prepared in prompts:
            action = actions[step] if step < len(actions) else None
            step += 1
            line = prompt_line(run, plan, policy=name, step=step, prepared=prepared, action=action)
            whole = line["messages"]
            if delta:
                line, previous = delta_line(line, previous), whole
            lines.append(orjson.dumps(line) + b"\n")
    return lines


async def write_prompts(
    runs: Sequence[RecordedRun],
    policies: Mapping[str, Policy],
    out: BinaryIO,
    settings: ReplaySettings | None = None,
    *,
    only: Sequence[str] = (),
    delta: bool = False,
) -> PromptsWritten:
    """Write the prompts every policy of ``policies`` builds for the runs of ``runs`` (``only``: those
    :func:`select` picks) to ``out`` (JSON lines, see the module docstring; ``delta``: the compact
    form), calibrated on all of ``runs`` together, as the bench is whatever it replays."""
    settings = settings or ReplaySettings()
    runs = unique_ids(runs)  # as the bench numbers them: a run recorded twice is id, id#2, ...
    calibration = fit(runs, TokenCounter(settings.tokenizer))
    chosen = select(runs, only)
    written, failed = 0, []
    for run in chosen:
        try:
            lines = await _write_run(run, policies, settings, bench_plan(run, settings, calibration), delta)
        except TieredAgentError:
            raise
        except Exception as error:  # fail open, as the bench does (inputs.failed): logged, counted
            log.error("bench.prompts_run_failed", run_id=run.run_id, error=failure_reason(error))
            failed.append(run.run_id)
            continue
        out.writelines(lines)
        written += len(lines)
    return PromptsWritten(written, len(chosen) - len(failed), tuple(failed))
