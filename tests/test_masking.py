"""Mask and Clear: placeholders, counts, the clearing trigger, interplay with truncation."""

from __future__ import annotations

import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._policy import Policy
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.pipeline._build import build_prompt, validate_pairs
from tiered_agent.context.pipeline._types import BuiltPrompt
from tiered_agent.context.steps import Clear, Mask, Truncate
from tiered_agent.context.steps._clear import prompt_tokens
from tiered_agent.context.steps._mask import output_placeholder

COUNTER = TokenCounter("o200k_base")


@pytest.fixture(scope="module")
def counter() -> TokenCounter:
    return TokenCounter("o200k_base")


def history(outputs: list[str]) -> list[Message]:
    """One iteration per output: assistant call ``call_k`` + its result."""
    out = [Message(role="system", content="sys"), Message(role="user", content="task")]
    for k, content in enumerate(outputs, start=1):
        call = ToolCall(f"call_{k}", "read", "{}")
        out.append(Message(role="assistant", tool_calls=(call,), iteration=k))
        out.append(Message(role="tool", content=content, tool_call_id=call.id, name="read", iteration=k))
    return out


def tool_contents(messages: tuple[Message, ...] | list[Message]) -> list[str | None]:
    return [m.content for m in messages if m.role == "tool"]


def mask(h: list[Message], *, keep: int, retrieval: bool) -> BuiltPrompt:
    return build_prompt(h, Policy("mask", (Mask(keep),), retrieval=retrieval), summary=None, counter=COUNTER)


def anthropic_clear(trigger_tokens: int, keep: int = 3) -> Policy:
    return PRESETS["anthropic-clear"].replace(steps=(Clear(trigger_tokens, keep),))


def test_placeholders() -> None:
    assert (
        output_placeholder("call_7", retrieval=True)
        == '[output omitted; context_retrieve(tool_call_id="call_7")]'
    )
    assert output_placeholder("call_7", retrieval=False) == "[output omitted]"
    assert output_placeholder(None, retrieval=True) == "[output omitted]"


def test_mask_keeps_the_last_n_outputs() -> None:
    outputs = [f"output {k} " * 20 for k in range(1, 6)]
    h = history(outputs)
    result = mask(h, keep=2, retrieval=True)
    assert tool_contents(result.messages) == [
        '[output omitted; context_retrieve(tool_call_id="call_1")]',
        '[output omitted; context_retrieve(tool_call_id="call_2")]',
        '[output omitted; context_retrieve(tool_call_id="call_3")]',
        outputs[3],
        outputs[4],
    ]
    assert result.stats.masked_outputs == 3
    assert result.stats.masked_chars == sum(len(o) for o in outputs[:3])
    assert [i for i, m in enumerate(result.messages) if m is not h[i]] == [3, 5, 7]
    assert tool_contents(h) == outputs  # input untouched
    masked = result.messages[3]
    assert (masked.tool_call_id, masked.name, masked.iteration) == ("call_1", "read", 1)


def test_mask_leaves_outputs_shorter_than_the_placeholder() -> None:
    h = history(["ok", "x" * 200, "fine", "y" * 200])
    result = mask(h, keep=1, retrieval=False)
    assert tool_contents(result.messages) == ["ok", "[output omitted]", "fine", "y" * 200]
    assert (result.stats.masked_outputs, result.stats.masked_chars) == (1, 200)


def test_mask_with_nothing_to_mask() -> None:
    h = history(["a" * 100] * 3)
    result = mask(h, keep=3, retrieval=True)
    assert result.messages == tuple(h)
    assert (result.stats.masked_outputs, result.stats.masked_chars) == (0, 0)


def test_masking_preset_in_the_pipeline(counter: TokenCounter) -> None:
    outputs = [f"file {k}\n" * 40 for k in range(1, 16)]
    built = build_prompt(history(outputs), PRESETS["masking"], summary=None, counter=counter)
    validate_pairs(built.messages)
    contents = tool_contents(built.messages)
    assert contents[5:] == outputs[5:]
    assert contents[:5] == ["[output omitted]"] * 5  # published masking has no retrieval tool
    assert built.stats.masked_outputs == 5
    assert built.stats.masked_chars == sum(len(o) for o in outputs[:5])
    assert built.stats.truncations == ()


def test_clearing_not_triggered_below_the_threshold(counter: TokenCounter) -> None:
    h = history(["word " * 100] * 6)
    config = PRESETS["anthropic-clear"]
    built = build_prompt(h, config, summary=None, counter=counter)
    assert built.messages == tuple(h)
    assert built.stats.masked_outputs == 0


def test_clearing_keeps_the_last_outputs_once_triggered(counter: TokenCounter) -> None:
    outputs = [f"word{k} " * 100 for k in range(6)]
    h = history(outputs)
    tokens = counter.count_prompt(h)
    config = anthropic_clear(tokens - 1, keep=2)
    built = build_prompt(h, config, summary=None, counter=counter)
    validate_pairs(built.messages)
    assert tool_contents(built.messages)[4:] == outputs[4:]
    assert built.stats.masked_outputs == 4
    assert built.stats.masked_chars == sum(len(o) for o in outputs[:4])
    # Exactly at the trigger: not exceeded, nothing cleared.
    at = anthropic_clear(tokens, keep=2)
    assert build_prompt(h, at, summary=None, counter=counter).stats.masked_outputs == 0


def test_clearing_measures_the_truncated_prompt(counter: TokenCounter) -> None:
    outputs = ["z " * 2_000 for _ in range(4)]
    h = history(outputs)
    cut = Truncate(max_chars=200)
    truncating = PRESETS["anthropic-clear"].replace(steps=(cut,))
    truncated = build_prompt(h, truncating, summary=None, counter=counter)
    tokens = counter.count_prompt(truncated.messages)
    assert tokens < counter.count_prompt(h) // 4
    # Above the truncated size: no clearing although the raw history is far larger.
    config = truncating.replace(steps=(cut, Clear(tokens)))
    built = build_prompt(h, config, summary=None, counter=counter)
    assert built.stats.masked_outputs == 0
    assert len(built.stats.truncations) == 4
    # Below it: all but the last output cleared; only the kept one carries a Truncation.
    config = truncating.replace(steps=(cut, Clear(tokens - 1, keep=1)))
    built = build_prompt(h, config, summary=None, counter=counter)
    assert built.stats.masked_outputs == 3
    assert built.stats.masked_chars == 3 * len(outputs[0])
    assert [t.tool_call_id for t in built.stats.truncations] == ["call_4"]
    assert tool_contents(built.messages)[:3] == ["[output omitted]"] * 3
    with_retrieval = build_prompt(h, config.replace(retrieval=True), summary=None, counter=counter)
    assert tool_contents(with_retrieval.messages)[:3] == [
        f'[output omitted; context_retrieve(tool_call_id="call_{k}")]' for k in range(1, 4)
    ]


def test_masking_then_clearing_counts_each_output_once(counter: TokenCounter) -> None:
    outputs = [f"data{k} " * 50 for k in range(8)]
    h = history(outputs)
    config = PRESETS["masking"].replace(steps=(Mask(keep=5), Clear(trigger_tokens=1, keep=2)))
    built = build_prompt(h, config, summary=None, counter=counter)
    assert built.stats.masked_outputs == 6
    assert built.stats.masked_chars == sum(len(o) for o in outputs[:6])
    assert tool_contents(built.messages)[6:] == outputs[6:]


def test_prompt_tokens_matches_the_counter(counter: TokenCounter) -> None:
    h = history([f"alpha {k} " * 30 for k in range(5)])
    assert prompt_tokens(h, counter) == counter.count_prompt(h)
    assert prompt_tokens(h, counter) == counter.count_prompt(h)  # cached path
    assert prompt_tokens([], counter) == counter.count_prompt([])
