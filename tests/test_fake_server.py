"""LiteLLMModel over real HTTP: litellm's openai provider against the fake OpenAI server."""

from __future__ import annotations

import json
import re

import httpx
import litellm
import pytest
from fake_openai_server import (
    FakeOpenAIServer,
    HTTPRequest,
    RawReply,
    Slow,
    auth_error_response,
    context_length_response,
    free_port,
    model_not_found_response,
    rate_limit_response,
    server_error_response,
)
from fakes import TOOLS, USER, SleepRecorder, fake_anthropic, make_usage, text_reply, tool_reply

from tiered_agent._errors import AuthenticationError, ContextWindowExceeded, ModelError, ModelNotFoundError
from tiered_agent._messages import ToolCall, Usage
from tiered_agent._model import LiteLLMModel, RetryPolicy

pytestmark = pytest.mark.anyio


@pytest.fixture
def sleep() -> SleepRecorder:
    return SleepRecorder()


def over_http(
    server: FakeOpenAIServer, sleep: SleepRecorder, name: str = "gpt-4o-mini", **kw: object
) -> LiteLLMModel:
    kw.setdefault("api_key", "sk-test")
    kw.setdefault("retry", RetryPolicy(jitter=0.0))
    return LiteLLMModel(f"openai/{name}", api_base=server.base_url, sleep=sleep, **kw)  # type: ignore[arg-type]


async def test_reply_over_http_with_cost(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    server.script(text_reply("hello", usage=make_usage(100, 10, cached=64)))
    reply = await over_http(server, sleep).complete(USER, TOOLS)
    assert reply.message.content == "hello"
    assert (reply.finish_reason, reply.model, reply.attempts) == ("stop", "gpt-4o-mini", 1)
    assert reply.route is None  # no router named an endpoint
    prices = litellm.model_cost["gpt-4o-mini"]
    expected = (
        36 * prices["input_cost_per_token"]
        + 64 * prices["cache_read_input_token_cost"]
        + 10 * prices["output_cost_per_token"]
    )
    assert (reply.usage.prompt_tokens, reply.usage.completion_tokens, reply.usage.cached_tokens) == (
        100,
        10,
        64,
    )
    assert reply.usage.requests == 1
    assert reply.usage.cost == pytest.approx(expected)
    assert expected > 0
    (request,) = server.chat_requests
    assert request.body["model"] == "gpt-4o-mini"
    assert request.body["messages"] == USER
    assert request.body["tools"] == TOOLS
    assert not request.body.get("stream")
    assert request.headers["authorization"] == "Bearer sk-test"


async def test_the_endpoint_a_router_names_is_the_reply_route(
    server: FakeOpenAIServer, sleep: SleepRecorder
) -> None:
    """OpenRouter names the endpoint that served a call in the body's ``provider``."""
    body = {**text_reply("hi").to_openai("gpt-4o-mini"), "provider": "Google AI Studio"}
    server.script(RawReply(json.dumps(body).encode()))
    reply = await over_http(server, sleep).complete(USER, TOOLS)
    assert (reply.message.content, reply.route) == ("hi", "Google AI Studio")


async def test_tool_calls_over_http(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    server.script(
        tool_reply([("call_1", "read_file", {"path": "a"}), ("call_2", "read_file", {"path": "b"})])
    )
    reply = await over_http(server, sleep).complete(USER, TOOLS)
    assert reply.message.tool_calls == (
        ToolCall("call_1", "read_file", '{"path": "a"}'),
        ToolCall("call_2", "read_file", '{"path": "b"}'),
    )
    assert reply.finish_reason == "tool_calls"


async def test_cost_is_none_for_unknown_model(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    server.script(text_reply("x", usage=make_usage(50, 5, cached=None)))
    reply = await over_http(server, sleep, name="no-such-model-xyz").complete(USER, [])
    assert reply.usage == Usage(50, 5, 0, 1, None)
    assert reply.model == "no-such-model-xyz"


async def test_429_with_retry_after_then_500_then_success(
    server: FakeOpenAIServer, sleep: SleepRecorder
) -> None:
    server.script(rate_limit_response(retry_after=7), server_error_response(), "ok")
    reply = await over_http(server, sleep).complete(USER, [])
    assert reply.message.content == "ok"
    assert reply.attempts == 3
    assert sleep.delays == [7.0, 2.0]
    assert len(server.chat_requests) == 3  # the openai SDK did not retry on its own


async def test_500_until_attempts_run_out(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    server.script(*(server_error_response() for _ in range(3)))
    with pytest.raises(
        ModelError, match=r"'openai/gpt-4o-mini' failed after 3 attempt\(s\): InternalServerError"
    ):
        await over_http(server, sleep, retry=RetryPolicy(max_attempts=3, jitter=0)).complete(USER, [])
    assert sleep.delays == [1.0, 2.0]
    assert len(server.chat_requests) == 3


async def test_context_length_400_is_not_retried(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    server.script(context_length_response(limit=8192, sent=9000), "unused")
    with pytest.raises(ContextWindowExceeded, match="maximum context length is 8192 tokens"):
        await over_http(server, sleep).complete(USER, [])
    assert (len(server.chat_requests), sleep.delays) == (1, [])


async def test_401_with_passed_key(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    server.script(auth_error_response())
    with pytest.raises(AuthenticationError, match="openai provider rejected the api_key") as caught:
        await over_http(server, sleep, api_key="sk-test-wrong-0123456789").complete(USER, [])
    assert "sk-test-wrong" not in str(caught.value)
    assert sleep.delays == []


async def test_401_with_env_key_names_the_env_var(
    server: FakeOpenAIServer, sleep: SleepRecorder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-from-env-0123456789")
    server.script(auth_error_response())
    with pytest.raises(AuthenticationError, match="rejected the key in OPENAI_API_KEY") as caught:
        await over_http(server, sleep, api_key=None).complete(USER, [])
    assert "sk-test-from-env" not in str(caught.value)
    assert server.chat_requests[0].headers["authorization"] == "Bearer sk-test-from-env-0123456789"


async def test_404_is_model_not_found(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    server.script(model_not_found_response("gpt-4o-mini"))
    with pytest.raises(ModelNotFoundError, match="does not know model 'openai/gpt-4o-mini'"):
        await over_http(server, sleep).complete(USER, [])
    assert sleep.delays == []


async def test_client_timeout_is_retried(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    server.script(Slow("too late", delay_s=3.0), "in time")  # the slow handler thread outlives the test
    model = over_http(server, sleep, timeout_s=0.5, retry=RetryPolicy(max_attempts=2, jitter=0))
    reply = await model.complete(USER, [])
    assert (reply.message.content, reply.attempts, sleep.delays) == ("in time", 2, [1.0])


async def test_refused_connection_is_retried_then_fails(sleep: SleepRecorder) -> None:
    base = f"http://127.0.0.1:{free_port()}/v1"
    model = LiteLLMModel(
        "openai/gpt-4o-mini",
        api_base=base,
        api_key="sk-test",
        retry=RetryPolicy(max_attempts=3, jitter=0),
        sleep=sleep,
    )
    message = rf"3 attempt\(s\): cannot connect to {re.escape(base)} \(connection refused\)$"
    with pytest.raises(ModelError, match=message) as caught:
        await model.complete(USER, [])
    assert type(caught.value) is ModelError
    assert sleep.delays == [1.0, 2.0]


async def test_respond_function_over_http(server: FakeOpenAIServer, sleep: SleepRecorder) -> None:
    def echo(request: HTTPRequest) -> object:
        return text_reply("you said " + request.body["messages"][-1]["content"])

    server.respond = echo
    model = over_http(server, sleep)
    assert (await model.complete(USER, [])).message.content == "you said hi"
    assert (await model.complete([{"role": "user", "content": "bye"}], [])).message.content == "you said bye"


def test_server_models_streaming_and_exhaustion(server: FakeOpenAIServer) -> None:
    with httpx.Client(base_url=server.base_url, timeout=5) as client:
        models = client.get("/models").json()
        assert [m["id"] for m in models["data"]] == ["gpt-4o-mini", "fake-model"]
        streamed = client.post("/chat/completions", json={"model": "m", "messages": USER, "stream": True})
        assert streamed.status_code == 400 and "streaming" in streamed.json()["error"]["message"]
        exhausted = client.post("/chat/completions", json={"model": "m", "messages": USER})
        assert exhausted.status_code == 400 and "exhausted" in exhausted.json()["error"]["message"]
        limited = server.script(rate_limit_response(retry_after=3))
        response = client.post("/chat/completions", json={"model": "m", "messages": USER})
        assert (response.status_code, response.headers["retry-after"]) == (429, "3")
        assert limited is server
    assert [r.method for r in server.requests] == ["GET", "POST", "POST", "POST"]


def test_server_shuts_down_cleanly() -> None:
    with FakeOpenAIServer() as fake:
        port = fake.port
        with httpx.Client(timeout=5) as client:
            assert client.get(f"{fake.base_url}/models").status_code == 200
    with pytest.raises(httpx.ConnectError), httpx.Client(timeout=2) as client:
        client.get(f"http://127.0.0.1:{port}/v1/models")


async def test_claude_request_carries_cache_breakpoints_over_http() -> None:
    usage = {"input_tokens": 40, "output_tokens": 3, "cache_read_input_tokens": 1200}
    with fake_anthropic("cached ok", usage) as (api_base, bodies):
        model = LiteLLMModel("anthropic/claude-sonnet-4-5", api_base=api_base, api_key="sk-ant-test-not-real")
        messages = [{"role": "system", "content": "You are terse."}, *USER]
        reply = await model.complete(messages, TOOLS)
    body = bodies[0]
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral"}
    assert body["messages"][-1]["content"][-1]["cache_control"] == {"type": "ephemeral"}
    assert reply.message.content == "cached ok"
    assert reply.usage.cached_tokens == 1200
