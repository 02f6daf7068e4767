"""Local token counting (bundled tokenizers, offline) and provider calibration."""

from __future__ import annotations

import pytest

from tiered_agent import ConfigurationError, Message, ToolCall
from tiered_agent._tokens import (
    MESSAGE_OVERHEAD,
    PROMPT_OVERHEAD,
    Calibration,
    TokenCounter,
    encoding_for_model,
)


@pytest.mark.parametrize(
    ("model", "encoding"),
    [
        ("openai/gpt-4o", "o200k_base"),  # litellm's token_counter falls back to cl100k here
        ("gpt-4o-mini", "o200k_base"),
        ("azure/gpt-4.1", "o200k_base"),
        ("openai/o3-mini", "o200k_base"),
        ("openai/gpt-4", "cl100k_base"),
        ("gpt-3.5-turbo", "cl100k_base"),
        ("anthropic/claude-sonnet-4-5", "o200k_base"),
        ("hosted_vllm/meta-llama/Llama-3-8B", "o200k_base"),
    ],
)
def test_encoding_follows_the_model_family_not_the_prefix(model: str, encoding: str) -> None:
    assert encoding_for_model(model) == encoding


def test_counts_with_the_bundled_tokenizers_offline() -> None:
    o200k, cl100k = TokenCounter("o200k_base"), TokenCounter("cl100k_base")
    assert o200k.count_text("hello world") == 2 == cl100k.count_text("hello world")
    text = "Tokenization of 'interoperability' differs 🙂"
    assert o200k.encode(text) != cl100k.encode(text)
    assert o200k.count_text("") == 0


def test_message_and_prompt_counts_add_the_framing() -> None:
    counter = TokenCounter("o200k_base")
    plain = Message("user", "hello world")
    assert counter.count_message(plain) == MESSAGE_OVERHEAD + 2
    assert counter.count_message(plain.to_openai()) == counter.count_message(plain)
    call = Message("assistant", None, (ToolCall("c1", "read", '{"a": 1}'),))
    expected = MESSAGE_OVERHEAD * 2 + counter.count_text("read") + counter.count_text('{"a": 1}')
    assert counter.count_message(call) == expected
    tools = [{"type": "function", "function": {"name": "read", "parameters": {}}}]
    assert counter.count_prompt([plain], tools) == PROMPT_OVERHEAD + 5 + counter.count_tools(tools)
    assert counter.count_tools(tools) > 5


def test_unknown_tokenizer_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError, match="o200k_base, cl100k_base"):
        TokenCounter("p50k_base")


def test_calibration_factor_and_estimate() -> None:
    calibration = Calibration()
    assert calibration.estimate(1000) == 1000  # uncalibrated: the local count
    calibration.observe(provider_prompt_tokens=1200, local_count=1000)
    assert calibration.factor == pytest.approx(1.2)
    assert calibration.estimate(1500) == 1800  # local_now * factor
    assert calibration.estimate(1000) == 1200
    calibration.observe(provider_prompt_tokens=1250, local_count=1000)
    assert calibration.estimate(1001) == 1251
    assert calibration.estimate(500) == 625  # the prompt shrank (summary, compaction): no stale floor
    calibration.observe(None, 1000)  # a provider that reports nothing leaves it unchanged
    calibration.observe(0, 1000)
    assert calibration.factor == pytest.approx(1.25) and calibration.observations == 2


def test_calibration_is_bounded_and_never_below_the_local_count() -> None:
    liar = Calibration()
    liar.observe(provider_prompt_tokens=50, local_count=35_000)  # a provider that always says "50"
    assert liar.estimate(841_000) == 841_000  # was 1,201 (factor 0.0014): sent to a 128k model
    assert liar.estimate(100) == 100
    boaster = Calibration()
    boaster.observe(provider_prompt_tokens=100_000, local_count=1_000)  # 100x: clamped to 2x
    assert boaster.factor == 2.0
    assert boaster.estimate(1_000) == 2_000 and boaster.estimate(1_500) == 3_000
    gemini = Calibration()
    gemini.observe(provider_prompt_tokens=880, local_count=1_000)  # a real tokenizer 12% leaner
    assert gemini.factor == pytest.approx(0.88)
    assert gemini.estimate(2_000) == 2_000  # never below the local count
