"""LiteLLMModel over the real litellm code path, driven by the ScriptedLLM custom provider."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import litellm
import pytest
import structlog
from fakes import (
    FAKE_MODEL,
    TOOLS,
    USER,
    RecordedRequest,
    ScriptedLLM,
    SleepRecorder,
    auth_error,
    context_window_error,
    make_usage,
    not_found_error,
    rate_limit_error,
    scripted_provider,
    server_error,
    text_reply,
    timeout_error,
    tool_reply,
)
from litellm.exceptions import BadRequestError

from tiered_agent import _litellm
from tiered_agent._errors import (
    AuthenticationError,
    ConfigurationError,
    ContextWindowExceeded,
    ModelError,
    ModelNotFoundError,
)
from tiered_agent._messages import Message, ToolCall, Usage
from tiered_agent._model import LiteLLMModel, Model, ModelReply, RetryPolicy, map_usage, retry_after_s

pytestmark = pytest.mark.anyio

NO_JITTER = RetryPolicy(jitter=0.0)


@pytest.fixture
def llm() -> Iterator[ScriptedLLM]:
    with scripted_provider() as fake:
        yield fake


@pytest.fixture
def sleep() -> SleepRecorder:
    return SleepRecorder()


def make_model(sleep: SleepRecorder, **kwargs: Any) -> LiteLLMModel:
    kwargs.setdefault("api_key", "sk-test")
    kwargs.setdefault("retry", NO_JITTER)
    return LiteLLMModel(FAKE_MODEL, sleep=sleep, **kwargs)


# ---------------------------------------------------------------- RetryPolicy
def test_retry_policy_backoff_sequence_and_cap() -> None:
    policy = RetryPolicy(initial_delay_s=1.0, multiplier=2.0, max_delay_s=5.0, jitter=0.0)
    assert [policy.delay(n) for n in (1, 2, 3, 4)] == [1.0, 2.0, 4.0, 5.0]


def test_retry_policy_jitter_bounds() -> None:
    policy = RetryPolicy(initial_delay_s=2.0, jitter=0.1)
    assert policy.delay(1, rand=lambda: 0.0) == pytest.approx(1.8)
    assert policy.delay(1, rand=lambda: 1.0) == pytest.approx(2.2)
    assert policy.delay(1, rand=lambda: 0.5) == pytest.approx(2.0)


def test_retry_policy_honours_retry_after_but_caps_it() -> None:
    policy = RetryPolicy(initial_delay_s=1.0, max_delay_s=30.0, jitter=0.0)
    assert policy.delay(1, retry_after=7.0) == 7.0
    assert policy.delay(3, retry_after=0.5) == 4.0  # backoff already longer
    assert policy.delay(1, retry_after=120.0) == 30.0


@pytest.mark.parametrize(
    "kwargs",
    [
        {"max_attempts": 0},
        {"initial_delay_s": -1.0},
        {"initial_delay_s": 10.0, "max_delay_s": 5.0},
        {"multiplier": 0.5},
        {"jitter": 1.5},
    ],
)
def test_retry_policy_validates(kwargs: dict[str, Any]) -> None:
    with pytest.raises(ConfigurationError):
        RetryPolicy(**kwargs)


def test_retry_after_header_parsing() -> None:
    assert retry_after_s(rate_limit_error(retry_after=7)) == 7.0
    assert retry_after_s(rate_limit_error()) is None
    assert retry_after_s(ValueError("no headers")) is None

    class WithHeaders(Exception):
        def __init__(self, headers: dict[str, str]) -> None:
            super().__init__("x")
            self.litellm_response_headers = headers

    assert retry_after_s(WithHeaders({"Retry-After-Ms": "1500"})) == 1.5
    assert retry_after_s(WithHeaders({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"})) == 0.0  # a past date
    assert retry_after_s(WithHeaders({"retry-after": "soon"})) is None


# ---------------------------------------------------------------- usage mapping
def test_map_usage_none_and_partial() -> None:
    assert map_usage(None) == Usage(requests=1)
    assert map_usage({"prompt_tokens": 12, "completion_tokens": 3}) == Usage(12, 3, 0, 1)
    assert map_usage(
        {"prompt_tokens": 12, "completion_tokens": None, "prompt_tokens_details": None}
    ) == Usage(12, 0, 0, 1)


def test_map_usage_cached_tokens_openai_and_anthropic() -> None:
    assert map_usage(make_usage(100, 7, cached=40), cost=0.5) == Usage(100, 7, 40, 1, 0.5)
    anthropic = make_usage(100, 7, cached=None, cache_read_input_tokens=60)
    assert map_usage(anthropic).cached_tokens == 60
    anthropic["cache_creation_input_tokens"] = 25
    assert map_usage(anthropic).cache_write_tokens == 25
    total = map_usage(anthropic) + map_usage(anthropic)
    assert (total.cached_tokens, total.cache_write_tokens) == (120, 50)


def test_map_usage_reads_litellm_objects() -> None:
    usage = litellm.Usage(prompt_tokens=50, completion_tokens=9, prompt_tokens_details={"cached_tokens": 32})
    assert map_usage(usage) == Usage(50, 9, 32, 1)


# ---------------------------------------------------------------- construction
def test_constructor_validates_and_hides_the_key() -> None:
    with pytest.raises(ConfigurationError):
        LiteLLMModel("")
    with pytest.raises(ConfigurationError):
        LiteLLMModel("openai/x", timeout_s=0)
    with pytest.raises(ConfigurationError, match="num_retries"):
        LiteLLMModel("openai/x", extra_kwargs={"num_retries": 3})
    model = LiteLLMModel("openai/x", api_key="sk-secret-value-1234567890")
    assert "sk-secret" not in repr(model)
    assert isinstance(model, Model)


def test_construction_does_not_import_litellm() -> None:
    code = (
        "import sys\n"
        "from tiered_agent._model import LiteLLMModel\n"
        "LiteLLMModel('openai/gpt-4o-mini', api_key='sk-test', context_window=1000).context_window()\n"
        "print('litellm' in sys.modules)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert result.stdout.strip() == "False"


def test_context_window_from_litellm_and_override() -> None:
    assert LiteLLMModel("openai/gpt-4o-mini").context_window() == 128_000
    assert LiteLLMModel("openai/gpt-4o-mini", context_window=4096).context_window() == 4096
    assert LiteLLMModel("openai/no-such-model-xyz").context_window() is None
    assert _litellm.context_window(FAKE_MODEL) is None


# ---------------------------------------------------------------- replies
async def test_text_reply(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(text_reply("hello", usage=make_usage(120, 8, cached=64)))
    reply = await make_model(sleep).complete(USER, TOOLS)
    assert isinstance(reply, ModelReply)
    assert reply.message == Message(role="assistant", content="hello", iteration=0)
    assert reply.usage == Usage(
        prompt_tokens=120, completion_tokens=8, cached_tokens=64, requests=1, cost=None
    )
    assert (reply.finish_reason, reply.model, reply.attempts) == ("stop", "any", 1)
    assert reply.latency_s >= 0
    assert dataclasses.replace(reply.message, iteration=3).iteration == 3


async def test_usage_missing_from_response(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(text_reply("x", usage=None), text_reply("y", usage=make_usage(10, 2, cached=None)))
    model = make_model(sleep)
    first, second = await model.complete(USER, []), await model.complete(USER, [])
    assert (first.usage.prompt_tokens, first.usage.cached_tokens, first.usage.requests) == (0, 0, 1)
    assert second.usage == Usage(10, 2, 0, 1)


async def test_tool_calls_keep_raw_arguments(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(
        tool_reply(
            [
                ("call_1", "read_file", {"path": "a"}),
                ("call_2", "read_file", '{"path": "b"'),
            ],  # 2nd malformed
            content="reading",
        )
    )
    reply = await make_model(sleep).complete(USER, TOOLS)
    assert reply.message.tool_calls == (
        ToolCall("call_1", "read_file", '{"path": "a"}'),
        ToolCall("call_2", "read_file", '{"path": "b"'),
    )
    assert (reply.message.content, reply.finish_reason) == ("reading", "tool_calls")


async def test_request_reaches_provider(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script("a", "b")
    model = make_model(sleep, temperature=0.2, max_tokens=64)
    await model.complete(USER, TOOLS)
    await model.complete(USER, [])
    first, second = llm.requests
    assert first.messages == USER
    assert first.tools == TOOLS
    assert first.api_key == "sk-test"
    assert first.params["temperature"] == 0.2
    assert first.params["max_tokens"] == 64
    assert first.params["max_retries"] == 0  # litellm's own retries are off
    assert second.tools == []


async def test_respond_function_computes_replies(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    def echo(request: RecordedRequest) -> Any:
        return text_reply(f"echo: {request.messages[-1]['content']} ({len(request.tools)} tools)")

    llm.respond = echo
    model = make_model(sleep)
    assert (await model.complete(USER, TOOLS)).message.content == "echo: hi (1 tools)"
    other = [{"role": "user", "content": "again"}]
    assert (await model.complete(other, [])).message.content == "echo: again (0 tools)"
    assert len(llm.requests) == 2


async def test_scripted_provider_restores_litellm() -> None:
    before = list(litellm.custom_provider_map)
    with scripted_provider("x") as fake:
        assert any(item["custom_handler"] is fake for item in litellm.custom_provider_map)
    assert litellm.custom_provider_map == before
    with pytest.raises(ModelNotFoundError):  # provider 'fake' is gone again
        await LiteLLMModel(FAKE_MODEL, api_key="sk-test", retry=RetryPolicy(max_attempts=1)).complete(
            USER, []
        )


# ---------------------------------------------------------------- retries
async def test_retries_transient_errors_with_backoff(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(rate_limit_error(retry_after=5), server_error(), timeout_error(), text_reply("finally"))
    with structlog.testing.capture_logs() as logs:
        reply = await make_model(sleep, retry=RetryPolicy(max_attempts=4, jitter=0.0)).complete(USER, [])
    assert reply.message.content == "finally"
    assert reply.attempts == 4
    assert sleep.delays == [5.0, 2.0, 4.0]  # Retry-After wins over 1 s, then 2 s, 4 s
    assert len(llm.requests) == 4
    retries = [e for e in logs if e["event"] == "model_retry"]
    assert [(e["attempt"], e["delay_s"], e["error"]) for e in retries] == [
        (1, 5.0, "RateLimitError"),
        (2, 2.0, "InternalServerError"),
        (3, 4.0, "Timeout"),
    ]


async def test_retries_run_out(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(*(server_error(f"boom {i}") for i in range(5)))
    with pytest.raises(ModelError) as caught:
        await make_model(sleep, retry=RetryPolicy(max_attempts=3, jitter=0)).complete(USER, [])
    assert type(caught.value) is ModelError
    message = str(caught.value)
    assert "'fake/any'" in message and "3 attempt(s)" in message and "InternalServerError" in message
    assert "boom 2" in message
    assert sleep.delays == [1.0, 2.0]
    assert llm.remaining == 2


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        (context_window_error, ContextWindowExceeded),
        (auth_error, AuthenticationError),
        (not_found_error, ModelNotFoundError),
    ],
)
async def test_permanent_errors_are_not_retried(
    llm: ScriptedLLM, sleep: SleepRecorder, error: Any, expected: type[Exception]
) -> None:
    llm.script(error(), "never reached")
    with pytest.raises(expected):
        await make_model(sleep).complete(USER, [])
    assert (len(llm.requests), sleep.delays) == (1, [])


async def test_bad_request_naming_context_length_is_context_window(
    llm: ScriptedLLM, sleep: SleepRecorder
) -> None:
    llm.script(BadRequestError("Input exceeds maximum context length of 4096", model="any", llm_provider="x"))
    with pytest.raises(ContextWindowExceeded, match="maximum context length of 4096"):
        await make_model(sleep).complete(USER, [])


async def test_other_bad_request_is_model_error_without_retry(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(BadRequestError("tools[0] is invalid", model="any", llm_provider="fake"))
    with pytest.raises(ModelError, match=r"1 attempt\(s\): BadRequestError: tools\[0\] is invalid"):
        await make_model(sleep).complete(USER, [])
    assert sleep.delays == []


async def test_error_messages_never_contain_the_key(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    key = "sk-live-0123456789abcdef"
    llm.script(BadRequestError(f"bad key {key} and sk-other-0123456789xyz", model="any", llm_provider="x"))
    with pytest.raises(ModelError) as caught:
        await make_model(sleep, api_key=key).complete(USER, [])
    assert key not in str(caught.value)
    assert "sk-other-0123456789xyz" not in str(caught.value)
    assert "[redacted]" in str(caught.value)


async def test_rejected_key_message(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(auth_error())
    with pytest.raises(AuthenticationError) as caught:
        await make_model(sleep, api_key="sk-test-rejected-000").complete(USER, [])
    assert "rejected the api_key" in str(caught.value)
    assert "sk-test-rejected-000" not in str(caught.value)


@pytest.mark.parametrize(
    ("model", "env_var"),
    [("openai/gpt-4o-mini", "OPENAI_API_KEY"), ("anthropic/claude-x", "ANTHROPIC_API_KEY")],
)
async def test_missing_key_names_env_var(sleep: SleepRecorder, model: str, env_var: str) -> None:
    with pytest.raises(AuthenticationError, match=f"set {env_var} or pass api_key") as caught:
        await LiteLLMModel(model, sleep=sleep).complete(USER, [])
    assert sleep.delays == []  # a missing key is not retried
    assert str(caught.value).count(".") == 1  # one sentence


async def test_auth_error_for_provider_without_known_env_var(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(auth_error())
    with pytest.raises(AuthenticationError, match="provider's API key environment variable"):
        await LiteLLMModel(FAKE_MODEL, sleep=sleep).complete(USER, [])


async def test_unknown_provider_is_model_not_found(sleep: SleepRecorder) -> None:
    with pytest.raises(ModelNotFoundError, match=r"'nonexistent-model-xyz'.*prefix it") as caught:
        await LiteLLMModel("nonexistent-model-xyz", api_key="sk-test", sleep=sleep).complete(USER, [])
    assert sleep.delays == []
    assert isinstance(caught.value.__cause__, BadRequestError)


async def test_unexpected_provider_exception_is_model_error(llm: ScriptedLLM, sleep: SleepRecorder) -> None:
    llm.script(*(ValueError("socket closed") for _ in range(2)))
    with pytest.raises(ModelError, match="socket closed"):
        await make_model(sleep, retry=RetryPolicy(max_attempts=2, jitter=0)).complete(USER, [])


def test_claude_requests_get_prompt_cache_breakpoints_and_others_do_not() -> None:
    from tiered_agent._model import CACHE_BREAKPOINTS, needs_cache_breakpoints

    claude = LiteLLMModel("anthropic/claude-sonnet-4-5")._request(USER, TOOLS)
    assert claude["cache_control_injection_points"] == list(CACHE_BREAKPOINTS)
    assert needs_cache_breakpoints("bedrock/anthropic.claude-3-5-sonnet-20240620-v1:0")
    for model in ("openai/gpt-4o", "gemini/gemini-2.5-pro", "anthropic-proxy/claude", "hosted_vllm/llama"):
        assert "cache_control_injection_points" not in LiteLLMModel(model)._request(USER, TOOLS), model
    off = LiteLLMModel("anthropic/claude-sonnet-4-5", cache_breakpoints=False)._request(USER, TOOLS)
    assert "cache_control_injection_points" not in off
