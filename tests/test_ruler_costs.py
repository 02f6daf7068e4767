"""What the rulers cost and report: the retrieval turn, runs costlier than full, sticky routing."""

from __future__ import annotations

import pytest
from click.testing import CliRunner

from tiered_agent._errors import ConfigurationError
from tiered_agent._messages import Message, ToolCall
from tiered_agent._providers import CACHE_MODELS
from tiered_agent.bench._caching import IdCounter, Pricing
from tiered_agent.bench._losses import costlier_than_full
from tiered_agent.bench._metrics import PolicyRunMetrics, StepMetrics, totals
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, replay_run, resolve_policies
from tiered_agent.bench._turns import CALL_TOKENS, RetrievalTurn, retrieval_turn
from tiered_agent.cli._bench import bench

COUNTER = IdCounter("o200k_base")


# --------------------------------------------------------------------------- the extra turn
def test_a_retrieval_turn_repeats_the_prompt_at_its_cache_price() -> None:
    ideal, gemini = CACHE_MODELS["ideal"], CACHE_MODELS["gemini"]
    openai, anthropic = CACHE_MODELS["openai"], CACHE_MODELS["anthropic"]
    # ideal: the whole prompt is read back; two sources: two calls and both pages
    assert retrieval_turn(ideal, 1.0, 5000, [300, 700]) == RetrievalTurn(2, 5000 + 40 + 1000, 5000, 0, 40)
    # gemini: whole 2,048-token blocks of the prompt, in provider tokens (scale 1.25), less the 3.5% misses
    turn = retrieval_turn(gemini, 1.25, 5000, [100])
    assert turn == RetrievalTurn(1, 5120, round(3 * 2048 * 0.965 / 1.25), 0, CALL_TOKENS)
    # openai: 128-token increments from 1,024
    assert retrieval_turn(openai, 1.0, 1500, [10]).cached_tokens == 1408
    assert retrieval_turn(openai, 1.0, 1000, [10]).cached_tokens == 0
    # anthropic: the step's own request wrote the prompt; the new tokens are written at the premium
    assert retrieval_turn(anthropic, 1.0, 3000, [500]) == RetrievalTurn(1, 3520, 3000, 520, 20)
    assert retrieval_turn(anthropic, 1.0, 500, [100]) == RetrievalTurn(1, 620, 0, 0, 20)  # under the minimum
    assert retrieval_turn(ideal, 1.0, 5000, []) is None


def _truncated_run() -> RecordedRun:
    body = "\n".join(f"entry_{n:03d} = {n * 7}" for n in range(120))
    messages = (
        Message("system", "You read files."),
        Message("user", "Find the last entry."),
        Message("assistant", None, (ToolCall("c1", "read", '{"path": "data.txt"}'),), iteration=1),
        Message("tool", body, tool_call_id="c1", name="read", iteration=1),
        Message(
            "assistant", "entry_119 it is.", (ToolCall("c2", "done", '{"value": "entry_119"}'),), iteration=2
        ),
        Message("tool", "ok", tool_call_id="c2", name="done", iteration=2),
    )
    return RecordedRun("trunc", "test", "tiered-agent", messages, read_only_tools=frozenset({"read"}))


@pytest.mark.anyio
async def test_a_recoverable_miss_costs_one_extra_turn() -> None:
    run = _truncated_run()
    replay = await replay_run(run, resolve_policies(["kb-labs-adr"]), counter=COUNTER)
    step = replay.policies["kb-labs-adr"].steps[1]  # Truncate(500, head) cut the read before entry_119
    assert step.line_missed == ("entry_119",) and step.line_recoverable == 1
    assert step.missed == ("entry_119",) and step.recoverable == 1
    page = COUNTER.count_text(run.messages[3].text)  # under one page: the whole output comes back
    assert step.turn == RetrievalTurn(1, step.prompt_tokens + CALL_TOKENS + page, step.prompt_tokens, 0, 20)
    pricing = Pricing()
    t = totals([replay.policies["kb-labs-adr"]], pricing)
    assert t.retrieval_turns == 1
    assert t.retrieval_turn_input_cost == pytest.approx(CALL_TOKENS + page + 0.1 * step.prompt_tokens)
    assert t.input_cost_adjusted == pytest.approx(t.input_cost + t.retrieval_turn_input_cost)
    assert t.line_miss_rate == t.line_miss_rate_adjusted + 1.0 == 1.0


@pytest.mark.anyio
async def test_no_turn_without_retrieval_or_without_a_shown_call() -> None:
    run = _truncated_run()
    replay = await replay_run(run, resolve_policies(["full", "codex"]), counter=COUNTER)
    assert all(s.turn is None for r in replay.policies.values() for s in r.steps)


# --------------------------------------------------------------------------- runs costlier than full
def _metrics(policy: str, run_id: str, prompt: int, cached: int) -> PolicyRunMetrics:
    step = StepMetrics(1, prompt, cached, 10, 0, (), 0, False, False, False, 0, 0.0)
    return PolicyRunMetrics(policy, run_id, (step,))


def test_runs_costlier_than_full_and_the_worst_excess() -> None:
    replays = [
        {"full": _metrics("full", "a", 1000, 0), "lean": _metrics("lean", "a", 500, 0)},
        {"full": _metrics("full", "b", 1000, 900), "lean": _metrics("lean", "b", 1000, 0)},
        {"full": _metrics("full", "c", 1000, 900), "lean": _metrics("lean", "c", 1000, 800)},
    ]
    losses = costlier_than_full(replays, ["full", "lean"], Pricing(0.1, 4.0), {}, baseline="full")
    # units: full a 1040, b 1000-900+90+40=230, c 230; lean a 540, b 1040, c 200+80+40=320
    assert losses["lean"] == {
        "runs_costlier_than_full": 2,
        "runs_costlier_than_full_share": round(2 / 3, 6),
        "worst_excess_vs_full": round(1040 / 230 - 1, 6),
        "worst_excess_run": "b",
    }
    assert losses["full"]["runs_costlier_than_full"] == 0
    assert losses["full"]["worst_excess_vs_full"] == 0.0


# --------------------------------------------------------------------------- routing
def _routed_run() -> RecordedRun:
    block = " ".join(f"token{n}" for n in range(3000))  # well over one 2,048-token block per output
    messages: list[Message] = [Message("system", "s"), Message("user", "task")]
    for k in range(1, 5):
        messages.append(
            Message("assistant", None, (ToolCall(f"c{k}", "read", f'{{"n": {k}}}'),), iteration=k)
        )
        messages.append(Message("tool", f"{k} {block}", tool_call_id=f"c{k}", iteration=k))
    routes = ("Google", "Google AI Studio", "Google", "Google AI Studio")
    return RecordedRun("routed", "test", "mini-swe-agent", tuple(messages), routes=routes)


@pytest.mark.anyio
async def test_sticky_routing_serves_every_call_from_the_first_endpoint_s_cache() -> None:
    run, gemini = _routed_run(), CACHE_MODELS["gemini"]
    policies = resolve_policies(["full"])
    recorded = await replay_run(run, policies, counter=COUNTER, cache_model=gemini)
    sticky = await replay_run(run, policies, counter=COUNTER, cache_model=gemini, routing="sticky")
    rec = [s.cached_tokens for s in recorded.policies["full"].steps]
    pin = [s.cached_tokens for s in sticky.policies["full"].steps]
    assert rec[:2] == pin[:2] == [0, 0]  # the first prompt is under one block
    assert rec[2] == 0 < pin[2]  # recorded: Google last served the first, tiny prompt
    assert 0 < rec[3] < pin[3]  # recorded: AI Studio is one request behind
    assert [s.prompt_tokens for s in recorded.policies["full"].steps] == [
        s.prompt_tokens for s in sticky.policies["full"].steps
    ]


def test_the_report_says_when_routing_is_sticky() -> None:
    from tiered_agent.bench._replay import replay_runs
    from tiered_agent.bench._report import build_document, render_markdown

    result = replay_runs([_routed_run()], resolve_policies(["full"]), ReplaySettings(routing="sticky"))
    document = build_document(result)
    assert document["settings"]["routing"] == "sticky"
    assert "Routing: `sticky`" in render_markdown(document)
    assert "runs that recorded more than one endpoint: 1)" in render_markdown(document)
    recorded = build_document(replay_runs([_routed_run()], resolve_policies(["full"]), ReplaySettings()))
    assert "Routing:" not in render_markdown(recorded)


def test_routing_is_validated() -> None:
    with pytest.raises(ConfigurationError, match="unknown routing 'pinned'"):
        ReplaySettings(routing="pinned")
    result = CliRunner().invoke(bench, ["--routing", "pinned"])
    assert result.exit_code == 2
    assert "sticky" in result.output
