"""Provider cache rules and prices (tiered_agent/_providers.py): names, rules, litellm's bundled cost map."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tiered_agent._errors import ConfigurationError
from tiered_agent._providers import (
    CACHE_MODEL_NAMES,
    CACHE_MODELS,
    DEFAULT_CACHE_MODEL,
    LONG_CONTEXT_THRESHOLD,
    ModelPrices,
    cache_model_for,
    model_prices,
    provider_of,
)


@pytest.mark.parametrize(
    ("model", "provider"),
    [
        ("google/gemini-3-pro-preview", "gemini"),
        ("@google/gemini-3-pro-preview", "gemini"),
        ("vertex_ai/gemini-2.5-pro", "gemini"),
        ("claude-sonnet-4-5", "anthropic"),
        ("bedrock/anthropic.claude-sonnet-4-5-20250929-v1:0", "anthropic"),
        ("gpt-5", "openai"),
        ("openai/gpt-4o", "openai"),
        ("o3-mini", "openai"),
        ("hosted_vllm/meta-llama/Llama-3-70b", None),
        ("test/model", None),
        (None, None),
        ("", None),
    ],
)
def test_provider_of_model_names(model: str | None, provider: str | None) -> None:
    assert provider_of(model) == provider


def test_cache_model_names_and_rules() -> None:
    assert CACHE_MODEL_NAMES == ("auto", "ideal", "gemini", "openai", "anthropic")
    ideal, gemini, openai, anthropic = (CACHE_MODELS[n] for n in CACHE_MODEL_NAMES[1:])
    assert [ideal.cacheable(x) for x in (0, 1, 777.9)] == [0, 1, 777]
    # gemini: whole 2,048-token blocks, nothing below one block, 3.5% of them expected to miss
    assert [gemini.cacheable(x) for x in (2047, 2048, 4095, 4096, 10_000)] == [0, 2048, 2048, 4096, 8192]
    assert gemini.expected_hit(4096) == pytest.approx(4096 * 0.965)
    # openai: from 1,024 tokens, in 128-token increments
    assert [openai.cacheable(x) for x in (1023, 1024, 1151, 1152, 5000)] == [0, 1024, 1024, 1152, 4992]
    # no miss rate the break-even rule would weigh (aging's prompts stay as they were); the fitted
    # routing loss and idle survival are the simulation's
    assert openai.miss_rate == 0 and openai.write_premium == 1.0 and openai.routing_loss == 0.031
    assert openai.drops_turn_reasoning and not gemini.drops_turn_reasoning
    assert [openai.survival(g) for g in (None, 10, 300, 301, 1800, 1801, 3600, 3601)] == [
        1.0, 1.0, 1.0, 0.98, 0.98, 0.74, 0.74, 0.0,
    ]  # fmt: skip
    # anthropic: explicit breakpoints, 1.25x writes (2x with the 1-hour lifetime), 20-block lookback
    assert anthropic.explicit and anthropic.max_breakpoints == 4 and anthropic.lookback_blocks == 20
    assert (anthropic.write_premium, anthropic.min_tokens) == (1.25, 1024)
    assert (anthropic.ttl_s, anthropic.long_ttl_s, anthropic.long_write_premium) == (330.0, 3600.0, 2.0)
    assert anthropic.survival(10_000) == 1.0  # explicit entries expire by their own lifetime instead


@pytest.mark.parametrize(
    ("model", "name", "minimum"),
    [
        ("google/gemini-3-pro-preview", "gemini", 2048),
        ("gpt-4o", "openai", 1024),
        ("anthropic/claude-sonnet-4-5", "anthropic", 1024),
        ("claude-haiku-4-5", "anthropic", 4096),
        ("claude-opus-4-5-20251101", "anthropic", 4096),
        ("claude-3-5-haiku-20241022", "anthropic", 2048),
        ("llama-3", DEFAULT_CACHE_MODEL, 1024),
        (None, DEFAULT_CACHE_MODEL, 1024),
    ],
)
def test_cache_model_for_picks_the_provider_rules(model: str | None, name: str, minimum: int) -> None:
    rules = cache_model_for(model)
    assert (rules.name, rules.min_tokens) == (name, minimum)


def test_cache_model_for_unknown_default_is_a_configuration_error() -> None:
    assert cache_model_for(None, default="ideal").name == "ideal"
    with pytest.raises(ConfigurationError, match="unknown cache model 'nope'"):
        cache_model_for("llama", default="nope")


def test_model_prices_from_the_bundled_map() -> None:
    sonnet = model_prices("claude-sonnet-4-5")
    assert sonnet == ModelPrices("claude-sonnet-4-5", 3e-6, 15e-6, 0.3e-6, 3.75e-6, cache_write_1h=6e-6)
    assert model_prices("anthropic/claude-sonnet-4-5") == sonnet  # the provider prefix is stripped
    gpt5 = model_prices("gpt-5")
    assert gpt5 is not None and (gpt5.input, gpt5.output, gpt5.cache_read) == (1.25e-6, 10e-6, 0.125e-6)
    assert gpt5.cache_write == gpt5.input  # OpenAI bills no writes
    # OpenRouter's recorded name maps to the key litellm prices, and the key is reported
    gemini = model_prices("google/gemini-3-pro-preview")
    assert gemini is not None and gemini.model == "vertex_ai/gemini-3-pro-preview"
    assert (gemini.input, gemini.output, gemini.cache_read) == (2e-6, 12e-6, 0.2e-6)
    assert model_prices("@google/gemini-3-pro-preview") == gemini


def test_unknown_models_have_no_price() -> None:
    assert model_prices("no-such-model-xyz") is None
    assert model_prices("hosted_vllm/my-local-model") is None


def test_prices_cost_and_long_context() -> None:
    prices = ModelPrices("m", input=2.0, output=10.0, cache_read=0.5, cache_write=2.5)
    # 100 prompt tokens: 60 read, 30 written, 10 uncached; 7 output
    assert prices.cost(100, 60, 30, 7) == pytest.approx(10 * 2.0 + 60 * 0.5 + 30 * 2.5 + 7 * 10.0)
    # 1-hour writes at their own price; without one listed, at the 5-minute price
    hour = ModelPrices("m", 2.0, 10.0, 0.5, 2.5, cache_write_1h=4.0)
    assert hour.cost(100, 60, 30, 7, written_1h=20) == pytest.approx(20 + 30 + 10 * 2.5 + 20 * 4.0 + 70)
    assert prices.cost(100, 60, 30, 7, written_1h=20) == prices.cost(100, 60, 30, 7)
    assert hour.cost(100, 60, 30, 7, written_1h=999) == hour.cost(100, 60, 30, 7, written_1h=30)
    long = ModelPrices("m", 4.0, 20.0, 1.0, 5.0)
    tiered = ModelPrices("m", 2.0, 10.0, 0.5, 2.5, long_context=long)
    assert tiered.for_prompt(LONG_CONTEXT_THRESHOLD) is tiered
    assert tiered.for_prompt(LONG_CONTEXT_THRESHOLD + 1) is long
    gemini = model_prices("google/gemini-3-pro-preview")
    assert gemini is not None and gemini.long_context is not None
    assert gemini.long_context.input == 4e-6
    assert gemini.write_1h == gemini.cache_write  # no 1-hour cache: the same price


def test_importing_providers_does_not_import_litellm() -> None:
    code = (
        "import sys; from tiered_agent._providers import model_prices; "
        "assert model_prices('gpt-5') is not None; print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
