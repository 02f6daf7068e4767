"""Tier 1 masking and clearing: placeholders, counts, the clearing trigger, interplay with truncation."""

from __future__ import annotations

import pytest

from tiered_agent._messages import Message, ToolCall
from tiered_agent._tokens import TokenCounter
from tiered_agent.context._config import PRESETS
from tiered_agent.context._masking import clear_outputs, mask_outputs, output_placeholder, prompt_tokens
from tiered_agent.context._pipeline import build_prompt, validate_pairs


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
    result = mask_outputs(h, keep=2, retrieval=True)
    assert tool_contents(result.messages) == [
        '[output omitted; context_retrieve(tool_call_id="call_1")]',
        '[output omitted; context_retrieve(tool_call_id="call_2")]',
        '[output omitted; context_retrieve(tool_call_id="call_3")]',
        outputs[3],
        outputs[4],
    ]
    assert result.masked_outputs == 3
    assert result.masked_chars == sum(len(o) for o in outputs[:3])
    assert result.masked == frozenset({3, 5, 7})
    assert tool_contents(h) == outputs  # input untouched
    masked = result.messages[3]
    assert (masked.tool_call_id, masked.name, masked.iteration) == ("call_1", "read", 1)


def test_mask_leaves_outputs_shorter_than_the_placeholder() -> None:
    h = history(["ok", "x" * 200, "fine", "y" * 200])
    result = mask_outputs(h, keep=1, retrieval=False)
    assert tool_contents(result.messages) == ["ok", "[output omitted]", "fine", "y" * 200]
    assert (result.masked_outputs, result.masked_chars) == (1, 200)


def test_mask_with_nothing_to_mask() -> None:
    h = history(["a" * 100] * 3)
    result = mask_outputs(h, keep=3, retrieval=True)
    assert result.messages == tuple(h)
    assert (result.masked_outputs, result.masked_chars) == (0, 0)


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
    assert clear_outputs(h, h, config, counter) is None
    built = build_prompt(h, config, summary=None, counter=counter)
    assert built.messages == tuple(h)
    assert built.stats.masked_outputs == 0


def test_clearing_keeps_the_last_outputs_once_triggered(counter: TokenCounter) -> None:
    outputs = [f"word{k} " * 100 for k in range(6)]
    h = history(outputs)
    tokens = counter.count_prompt(h)
    config = PRESETS["anthropic-clear"].replace(clear_trigger_tokens=tokens - 1, clear_keep_outputs=2)
    cleared = clear_outputs(h, h, config, counter)
    assert cleared is not None and cleared.masked_outputs == 4
    built = build_prompt(h, config, summary=None, counter=counter)
    validate_pairs(built.messages)
    assert tool_contents(built.messages)[4:] == outputs[4:]
    assert built.stats.masked_outputs == 4
    assert built.stats.masked_chars == sum(len(o) for o in outputs[:4])
    # Exactly at the trigger: not exceeded, nothing cleared.
    at = config.replace(clear_trigger_tokens=tokens)
    assert build_prompt(h, at, summary=None, counter=counter).stats.masked_outputs == 0


def test_clearing_measures_the_truncated_prompt(counter: TokenCounter) -> None:
    outputs = ["z " * 2_000 for _ in range(4)]
    h = history(outputs)
    truncating = PRESETS["anthropic-clear"].replace(max_output_chars=200)
    truncated = build_prompt(h, truncating.replace(clear_trigger_tokens=None), summary=None, counter=counter)
    tokens = counter.count_prompt(truncated.messages)
    assert tokens < counter.count_prompt(h) // 4
    # Above the truncated size: no clearing although the raw history is far larger.
    built = build_prompt(h, truncating.replace(clear_trigger_tokens=tokens), summary=None, counter=counter)
    assert built.stats.masked_outputs == 0
    assert len(built.stats.truncations) == 4
    # Below it: all but the last output cleared; only the kept one carries a Truncation.
    config = truncating.replace(clear_trigger_tokens=tokens - 1, clear_keep_outputs=1)
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
    config = PRESETS["masking"].replace(mask_keep_outputs=5, clear_trigger_tokens=1, clear_keep_outputs=2)
    built = build_prompt(h, config, summary=None, counter=counter)
    assert built.stats.masked_outputs == 6
    assert built.stats.masked_chars == sum(len(o) for o in outputs[:6])
    assert tool_contents(built.messages)[6:] == outputs[6:]


def test_prompt_tokens_matches_the_counter(counter: TokenCounter) -> None:
    h = history([f"alpha {k} " * 30 for k in range(5)])
    assert prompt_tokens(h, counter) == counter.count_prompt(h)
    assert prompt_tokens(h, counter) == counter.count_prompt(h)  # cached path
    assert prompt_tokens([], counter) == counter.count_prompt([])
