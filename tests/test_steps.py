"""Each step alone on small hand-built histories, the order they compose in, a step of your own,
and a composed policy through the live agent and through the replay."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

import pytest
from samples import HAND_RUN

from tiered_agent import Agent, Message, Policy, RunLimits, ToolCall, tool
from tiered_agent._tokens import TokenCounter
from tiered_agent._trace import ContextRecord, ModelRequest, RunStarted, read_trace
from tiered_agent.bench._caching import IdCounter
from tiered_agent.bench._replay import replay_run, replay_runs, resolve_policies
from tiered_agent.bench._report import build_document
from tiered_agent.context._manager import ContextManager
from tiered_agent.context.pipeline._build import build_prompt, validate_pairs
from tiered_agent.context.pipeline._draft import BuildContext, Draft, with_content
from tiered_agent.context.pipeline._types import BuiltPrompt, Summary
from tiered_agent.context.steps import Clear, Compact, Dedup, Elide, Mask, Step, Summarize, Truncate, Window
from tiered_agent.context.summary._compact import compaction_keep
from tiered_agent.testing import FunctionModel, calls, text

COUNTER = TokenCounter("o200k_base")
SYSTEM = Message("system", "You are an agent.")
TASK = Message("user", "Fix the bug.")
LONG = "".join(f"line {i:03d} of a long output\n" for i in range(60))  # 1,560 chars, 60 lines


def history(last: int, *, calls_per_step: int = 2, output: str = LONG) -> list[Message]:
    """``last`` iterations of ``calls_per_step`` parallel reads each, results in reverse order."""
    out = [SYSTEM, TASK]
    for k in range(1, last + 1):
        ids = [f"c{k}_{j}" for j in range(calls_per_step)]
        tool_calls = tuple(ToolCall(i, "read", f'{{"k": "{i}"}}') for i in ids)
        out.append(Message("assistant", f"thinking {k}", tool_calls, iteration=k))
        out += [
            Message("tool", f"{i}\n{output}", tool_call_id=i, name="read", iteration=k) for i in reversed(ids)
        ]
    return out


def build(
    h: list[Message], *steps: Step, summary: Summary | None = None, retrieval: bool = True
) -> BuiltPrompt:
    built = build_prompt(h, Policy("t", steps, retrieval=retrieval), summary=summary, counter=COUNTER)
    validate_pairs(built.messages)  # every step alone keeps calls and results together
    return built


def tool_texts(built: BuiltPrompt) -> dict[str, str]:
    return {m.tool_call_id or "": m.text for m in built.messages if m.role == "tool"}


# ----------------------------------------------------------------------------- each step alone
def test_steps_that_act_elsewhere_leave_the_prompt_alone() -> None:
    h = history(6)
    for step in (Dedup(), Summarize(every=2), Compact(at=0.5)):
        built = build(h, step)
        assert built.messages == tuple(h) and all(a is b for a, b in zip(built.messages, h, strict=True))
        assert built.stats.truncations == () and built.stats.masked_outputs == 0


def test_truncate_alone_cuts_every_long_output_and_records_it() -> None:
    built = build(history(3), Truncate(max_lines=10))
    assert len(built.stats.truncations) == 6
    assert all("[... " in t and "of 61 lines omitted" in t for t in tool_texts(built).values())
    assert built.stats.masked_outputs == 0 and built.stats.windowed_out == ()


def test_mask_alone_hides_all_but_the_last_outputs() -> None:
    built = build(history(3), Mask(keep=3))
    hidden = [i for i, t in tool_texts(built).items() if t.startswith("[output omitted")]
    assert sorted(hidden) == ["c1_0", "c1_1", "c2_1"]  # c2_0 and c3_* are the last three in the prompt
    assert built.stats.masked_outputs == 3 and built.stats.masked_chars == 3 * len(f"c1_0\n{LONG}")


def test_clear_alone_waits_for_its_trigger() -> None:
    h = history(3)
    tokens = COUNTER.count_prompt(h)
    assert build(h, Clear(trigger_tokens=tokens)).stats.masked_outputs == 0
    assert build(h, Clear(trigger_tokens=tokens - 1, keep=1)).stats.masked_outputs == 5


def test_window_alone_drops_old_iterations_behind_one_note() -> None:
    built = build(history(6), Window(iterations=2))
    assert built.messages[2].content == '[iterations 1-4 omitted; context_retrieve(iteration="1-4")]'
    assert built.stats.windowed_out == (1, 2, 3, 4) and built.stats.shown_iterations == (5, 6)


def test_a_landed_summary_stands_in_for_its_range_and_elide_keeps_the_agents_messages() -> None:
    h, summary = history(5), Summary(1, 3, "did 1-3")
    plain = build(h, summary=summary)
    assert [m.role for m in plain.messages[:4]] == ["system", "user", "user", "assistant"]
    assert plain.messages[2].content == "[Summary of iterations 1-3]\ndid 1-3"
    elided = build(h, Elide(), summary=summary)
    assert [m.content for m in elided.messages if m.role == "assistant"][:3] == [
        f"thinking {k}" for k in (1, 2, 3)
    ]
    assert elided.messages[2 + 3 * 3].content == "[Summary of iterations 1-3]\ndid 1-3"  # after iteration 3
    assert elided.stats.masked_outputs == 6 and elided.stats.windowed_out == (1, 2, 3)
    assert build(h, Elide(min_chars=10_000), summary=summary).stats.masked_outputs == 0
    assert build(h, Elide()).messages == tuple(h)  # no summary: nothing to elide


def test_summarize_decides_when_and_what() -> None:
    step = Summarize(every=10, keep=3, overlap=2)
    assert step.due(9, covered=0) is None
    assert step.due(10, covered=0) == (1, 7)
    assert step.due(20, covered=7) == (6, 17)  # re-covers the last 2 summarized iterations
    assert step.due(20, covered=17) is None  # already queued through 17
    assert Summarize(every=5, keep=0).due(5, covered=0) == (1, 5)
    assert Summarize(every=5, keep=5).due(5, covered=0) is None


def test_compact_decides_when_and_how_much_to_keep() -> None:
    step = Compact(at=0.7, keep=5)
    assert step.due(70_001, 100_000) and not step.due(70_000, 100_000)
    assert not step.due(10**9, None)  # unknown window: never
    assert compaction_keep(step, emergency=False) == 5
    assert compaction_keep(step, emergency=True) == 1
    assert compaction_keep(Compact(keep=0), emergency=True) == 0
    assert compaction_keep(None, emergency=True) == 1


# ----------------------------------------------------------------------------- composition order
def test_order_matters_mask_then_truncate_or_truncate_then_mask() -> None:
    h = history(3)
    masked_first = build(h, Mask(keep=2), Truncate(max_chars=200))
    cut_first = build(h, Truncate(max_chars=200), Mask(keep=2))
    # same prompt either way: a hidden output is never cut, and a cut one can still be hidden...
    assert masked_first.messages == cut_first.messages
    # ...and it records only the cuts the model actually sees
    assert [t.tool_call_id for t in masked_first.stats.truncations] == ["c3_1", "c3_0"]
    assert cut_first.stats.truncations == masked_first.stats.truncations
    assert masked_first.stats.masked_chars == cut_first.stats.masked_chars == 4 * len(f"c1_0\n{LONG}")


def test_order_matters_clear_measures_what_the_steps_before_it_left() -> None:
    h = history(4)
    cut = Truncate(max_chars=100)
    trigger = COUNTER.count_prompt(build(h, cut).messages) + 1  # above the cut prompt, below the full one
    assert build(h, cut, Clear(trigger_tokens=trigger)).stats.masked_outputs == 0
    assert build(h, Clear(trigger_tokens=trigger), cut).stats.masked_outputs == 5


def test_order_matters_elide_before_or_after_truncate() -> None:
    h, summary = history(4, output="x" * 900), Summary(1, 2, "s")
    elide = Elide(min_chars=2_000)  # these outputs are short enough to stay verbatim in the covered range
    after = build(h, elide, Truncate(max_chars=500), summary=summary)
    before = build(h, Truncate(max_chars=500), elide, summary=summary)
    assert len(after.stats.truncations) == 8  # the covered outputs Elide kept are cut too
    assert len(before.stats.truncations) == 4  # Elide brought the covered outputs back after the cut


def test_statistics_describe_the_prompt_as_sent_whatever_the_order() -> None:
    h = history(4)
    masked_then_dropped = build(h, Mask(keep=1), Window(iterations=1))
    assert masked_then_dropped.stats.windowed_out == (1, 2, 3)
    assert masked_then_dropped.stats.masked_outputs == 1  # the placeholders in dropped iterations are gone
    assert masked_then_dropped.stats.masked_chars == len(f"c4_1\n{LONG}")
    assert masked_then_dropped.stats == build(h, Window(iterations=1), Mask(keep=1)).stats


def test_equal_histories_give_equal_statistics() -> None:
    """Memoized steps must not mistake an equal message from an earlier build for a rewrite."""
    summary = Summary(1, 2, "s")
    short = history(3, output="ok")  # outputs shorter than their placeholder: never elided
    first = build(short, Elide(), summary=summary)
    again = build([dataclasses.replace(m) for m in short], Elide(), summary=summary)
    assert first.stats == again.stats and again.stats.masked_outputs == 0


# ----------------------------------------------------------------------------- a step of your own
@dataclass(frozen=True, slots=True)
class ShoutErrors(Step):
    """A new step in a few lines: tool outputs that start with "Error" get a banner."""

    kind: ClassVar[str] = "shout-errors"
    hides: ClassVar[bool] = False
    banner: str = "!!"

    def apply(self, draft: Draft, context: BuildContext) -> Draft:
        shown = {
            i: with_content(m, f"{self.banner} {m.text}")
            for i, m in enumerate(draft.messages)
            if m.role == "tool" and i not in draft.hidden and m.text.startswith("Error")
        }
        return draft.cut(shown, {}, self.kind) if shown else draft


def test_a_step_of_your_own_composes_with_the_others() -> None:
    h = history(3, output="ok")
    h[3] = dataclasses.replace(h[3], content="Error: boom " + "x" * 200)
    built = build(h, Mask(keep=6), ShoutErrors())
    assert tool_texts(built)["c1_1"].startswith("!! Error: boom")
    hidden = build(h, Mask(keep=5), ShoutErrors())  # hidden by an earlier step: left alone
    assert tool_texts(hidden)["c1_1"] == '[output omitted; context_retrieve(tool_call_id="c1_1")]'
    assert Policy("mine", [ShoutErrors()]).to_dict()["steps"] == [{"step": "shout-errors", "banner": "!!"}]


# ----------------------------------------------------------------------------- the agent and the replay
MINE = Policy("mine", [Dedup(), Mask(keep=1), Truncate(max_chars=300)])


@tool(read_only=True)
def read_file(path: str) -> str:
    """Read a file.

    Args:
        path: The file.
    """
    return f"{path}\n{LONG}"


@pytest.mark.anyio
async def test_a_composed_policy_through_the_live_agent(tmp_path: Path) -> None:
    script = [calls((f"call_{k}", "read_file", {"path": f"f{k}.py"})) for k in (1, 2, 3)] + [text("done")]
    model = FunctionModel.scripted(script)
    agent = Agent(
        model, tools=[read_file], context=MINE, trace_dir=tmp_path, limits=RunLimits(max_iterations=5)
    )
    result = await agent.run("read three files")
    assert result.output == "done"
    last = [m["content"] for m in model.requests[3].messages if m["role"] == "tool"]
    assert last[:2] == [f'[output omitted; context_retrieve(tool_call_id="call_{k}")]' for k in (1, 2)]
    assert last[2].startswith("f3.py\n") and 'context_retrieve(tool_call_id="call_3")' in last[2]
    events = read_trace(result.trace_path)
    started = next(e for e in events if isinstance(e, RunStarted))
    assert started.config["context"] == MINE.to_dict()
    request = [e for e in events if isinstance(e, ModelRequest)][-1]
    record = ContextRecord.from_dict(request.context)
    assert (record.hidden_outputs, record.truncated_outputs) == (2, 1)
    # typed, per step: the masking step hid two outputs, the truncation step cut one
    assert record.steps["mask"].hidden == 2 and len(record.steps["truncate"].cuts) == 1
    assert set(request.context) == {
        "steps",
        "shown_iterations",
        "windowed_out",
        "summary_range",
        "compacted",
        "dedup_hits",
    }


@pytest.mark.anyio
async def test_a_composed_policy_through_the_replay() -> None:
    counter = IdCounter("o200k_base")
    replay = await replay_run(HAND_RUN, {"mine": MINE}, counter=counter)
    steps = replay.policies["mine"].steps
    async with ContextManager(MINE, counter=counter, background=False, enforce_hard_limit=False) as manager:
        schemas = [t.schema() for t in manager.tools(list)]
        for step in steps:  # the same prompts the manager builds directly
            history = [m for m in HAND_RUN.messages if m.iteration < step.step]
            assert (await manager.prepare(history, schemas)).prompt_tokens == step.prompt_tokens
    assert len(steps) == 3


def test_a_composed_policy_in_the_bench_json() -> None:
    document = build_document(replay_runs([HAND_RUN], resolve_policies(["full"]) | {"mine": MINE}), ["hand"])
    assert document["policies"]["mine"]["config"] == MINE.to_dict()
    assert document["policies"]["mine"]["retrieval_active"] is True
