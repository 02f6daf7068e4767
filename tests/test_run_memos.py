"""A run's memos: the policies replaying one run share what aging derives from its messages (forms,
notes, readings), one memo per way of aging, and every policy still builds what it builds alone."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

import anyio

from tiered_agent import Message, ToolCall
from tiered_agent._messages import Usage
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._metrics import PolicyRunMetrics
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import policy_config, replay_run, resolve_policies
from tiered_agent.context._manager import ContextManager
from tiered_agent.context._policy import Policy
from tiered_agent.context._step import RunMemos
from tiered_agent.context.aging._forms import FormsMemo
from tiered_agent.context.aging._step import Age, AgeRuntime

READ = "read_file"


def _run(steps: int) -> RecordedRun:
    """Reads of files whose outputs name paths and identifiers the agent names again later (notes
    keep some of their lines), with repeated reads (dedup serves some: the histories differ)."""
    messages = [Message("system", "You are a coding agent."), Message("user", "Task: fix pkg/mod_0.py")]
    usage = []
    for k in range(1, steps + 1):
        path = f"pkg/mod_{k % 5}.py"
        thought = f"THOUGHT: I read {path} to find value_{k - 1} and helper_{k % 3}."
        call = ToolCall(f"c{k}", READ, f'{{"path": "{path}"}}')
        messages.append(Message("assistant", thought, (call,), iteration=k))
        body = "\n".join(f"def helper_{i}(x): return value_{k % 5}_{i} + {k * 100 + i}" for i in range(40))
        messages.append(Message("tool", body, tool_call_id=f"c{k}", name=READ, iteration=k))
        usage.append(
            Usage(prompt_tokens=500 * k, completion_tokens=30, cached_tokens=480 * (k - 1), requests=1)
        )
    return RecordedRun(
        run_id="memos",
        source="memory:memos",
        format="tiered-agent",
        messages=tuple(messages),
        tools=({"type": "function", "function": {"name": READ, "parameters": {"type": "object"}}},),
        read_only_tools=frozenset({READ}),
        usage=tuple(usage),
        model="test/model",
    )


def _replay(run: RecordedRun, policies: Mapping[str, Policy]) -> Mapping[str, PolicyRunMetrics]:
    async def main() -> Mapping[str, PolicyRunMetrics]:
        return (await replay_run(run, policies, counter=IdCounter("o200k_base"))).policies

    return anyio.run(main)


def _numbers(metrics: PolicyRunMetrics) -> PolicyRunMetrics:
    """Without the build times (wall clock)."""
    steps = tuple(step._replace(build_seconds=0.0) for step in metrics.steps)
    return dataclasses.replace(metrics, steps=steps)


def test_a_runs_memos_are_one_per_kind_and_key() -> None:
    memos = RunMemos()
    memo = memos.get(FormsMemo, ("a", 1))
    assert memos.get(FormsMemo, ("a", 1)) is memo
    assert memos.get(FormsMemo, ("a", 2)) is not memo
    assert RunMemos().get(FormsMemo, ("a", 1)) is not memo


def _forms(manager: ContextManager) -> FormsMemo:
    return next(r.memo for r in manager.runtimes if isinstance(r, AgeRuntime))


def test_policies_of_one_run_share_aging_forms_only_when_they_age_alike() -> None:
    counter = IdCounter("o200k_base")
    memos = RunMemos()
    tiered, aging = (
        ContextManager(policy_config(n), counter=counter, memos=memos)
        for n in ("tiered", "tiered:aging-only")
    )
    other = ContextManager(Policy("other", (Age(keep_novel=0),)), counter=counter, memos=memos)
    assert _forms(tiered) is _forms(aging)
    assert _forms(other) is not _forms(tiered)
    assert _forms(ContextManager(policy_config("tiered"), counter=counter)) is not _forms(tiered)  # its own


def test_policies_replayed_together_build_what_each_builds_alone() -> None:
    run = _run(60)
    names = ["tiered", "tiered:aging-only"]
    alike = {
        "full": policy_config("full"),
        "age": Policy("age", (Age(),)),
        "fewer": Policy("fewer", (Age(keep_novel=1),)),
    }
    together = _replay(run, {**resolve_policies(names), **alike})
    for name, policy in {**resolve_policies(names), **alike}.items():
        alone = _replay(run, {"full": policy_config("full"), name: policy})[name]
        assert _numbers(together[name]) == _numbers(alone), name
        assert together[name].step_errors == ()
    aged = together["tiered:aging-only"]
    assert sum(s.prompt_tokens for s in aged.steps) < sum(s.prompt_tokens for s in together["full"].steps)
    assert together["tiered"].dedup_hits > 0  # the two aging policies' histories differ
