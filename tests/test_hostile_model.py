"""A hostile model through the real litellm path (round 23, cases 37, 38 and 40 of docs/faults.md).

An OpenAI-compatible fake on 127.0.0.1 answers with what hypothesis draws (seeded, bounded): tool
calls whose arguments are not JSON, not an object, nested deep, hundreds of KB long, hold lone
surrogates or NULs; names unknown, empty, spaced, huge or half a surrogate; ids missing, repeated or
huge; content that is a list, a number or nothing; usage with hostile numbers; no choices, a body cut
midway. The invariants: ``Agent.run`` returns (never raises); every request the provider gets passes
its rules (each call answered once, right after it; every name in the history a valid tool name); a
call that did not run is answered with why; the trace is read by the strict reader, by
``trace show|stats|html``'s loader and by resume without a skipped line.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import anyio
import pytest
from fake_openai_server import FakeOpenAIServer, HTTPRequest, RawReply
from hostile_traces import provider_problems
from hypothesis import HealthCheck, Phase, given, seed, settings
from hypothesis import strategies as st

from tiered_agent import Agent, RunLimits, tool
from tiered_agent._model import LiteLLMModel, RetryPolicy
from tiered_agent._resume import ResumeState
from tiered_agent._trace import ErrorEvent, MessageEvent, StepError, read_trace, scan_trace
from tiered_agent.inspect._load import load_trace

NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@tool(read_only=True)
def echo(text: str) -> str:
    """Echo a text.

    Args:
        text: What to echo.
    """
    return text


def _deep(levels: int) -> str:
    return '{"text": ' + "[" * levels + "]" * levels + "}"


ARGUMENTS = st.sampled_from(
    [
        '{"text": "hi"}',
        "{not json",
        "[1, 2]",
        '"just a string"',
        "null",
        "",
        _deep(300),
        _deep(2000),  # past orjson's 1,024
        '{"text": "x\\ud800y\\u0000z"}',
        '{"text": "' + "a" * 300_000 + '"}',  # over the 200,000 characters a call may send
        '{"text": "ok", "extra": 1}',
    ]
)
NAMES = st.sampled_from(
    ["echo", "echo", "nosuch", "", "read file", "n" * 5_000, "ec\ud800ho", "naïve", "e" * 65]
)
IDS = st.sampled_from([None, "", "c1", "c1", "c2", "x" * 2_000, "id\ud800"])
CALL = st.tuples(IDS, NAMES, ARGUMENTS)
USAGE = st.sampled_from(
    [
        None,
        {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        {"prompt_tokens": -5, "completion_tokens": 2**70, "total_tokens": 10**30},
        {"prompt_tokens": 1e300, "completion_tokens": 0.5},
    ]
)


def _body(calls: list[tuple[Any, str, str]], content: Any, usage: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": a}} for i, n, a in calls
        ]
    body: dict[str, Any] = {
        "id": "chatcmpl-hostile",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


def _raw(body: dict[str, Any]) -> RawReply:
    return RawReply(json.dumps(body).encode())  # lone surrogates go as \ud800 escapes, as a provider's


REPLIES = st.one_of(
    st.builds(
        lambda calls, content, usage: _raw(_body(calls, content, usage)),
        st.lists(CALL, min_size=1, max_size=6),
        st.sampled_from([None, "thinking", "a\u0000b"]),
        USAGE,
    ),
    st.builds(
        lambda n: _raw(_body([(f"c{i}", "echo", '{"text": "x"}') for i in range(n)], None, None)),
        st.just(300),
    ),
    st.sampled_from(
        [
            _raw(_body([], [{"type": "text", "text": "done"}], None)),
            _raw(_body([], 42, None)),
            _raw(_body([], None, None)),
            _raw({"id": "x", "object": "chat.completion", "created": 1, "model": "m", "choices": []}),
            RawReply(b'{"id": "x", "choices": [{"message": {"role": "assistant", "content": "hel'),
        ]
    ),
)


def _run(tmp_path: Path, replies: list[RawReply]) -> tuple[Any, list[HTTPRequest]]:
    with FakeOpenAIServer() as server:
        server.script(*replies, "final answer", "final answer", "final answer")
        model = LiteLLMModel(
            "openai/gpt-4o-mini",
            api_base=server.base_url,
            api_key="sk-hostile-model",
            retry=RetryPolicy(max_attempts=1),
            timeout_s=30,
        )
        agent = Agent(
            model, tools=[echo], trace_dir=tmp_path, limits=RunLimits(max_iterations=len(replies) + 2)
        )

        async def run() -> Any:
            with anyio.fail_after(120):  # a hang fails the example
                return await agent.run("task")

        return anyio.run(run), list(server.chat_requests)


def _check_requests(requests: list[HTTPRequest]) -> None:
    for number, request in enumerate(requests):
        messages = request.body["messages"]
        assert provider_problems(messages) == [], f"request {number}"
        for message in messages:
            for call in message.get("tool_calls") or ():
                assert NAME.match(call["function"]["name"]), call["function"]["name"][:80]
                assert len(call["function"]["arguments"]) <= 200_000
                assert call["id"] and len(call["id"]) <= 2_000


def _check_trace(trace: Path) -> None:
    events = read_trace(trace)  # the strict reader: every line
    assert scan_trace(trace).skipped == ()
    assert load_trace(trace).warning is None
    ResumeState.load(trace, "go on")
    assert [e for e in events if isinstance(e, StepError)] == []  # every context step coped
    refused = {
        (e.iteration, e.message.split(":")[0].removeprefix("tool call "))
        for e in events
        if isinstance(e, ErrorEvent) and e.kind == "reply_repair"
    }
    results = {
        (e.message.iteration, e.message.tool_call_id): e.message.content or ""
        for e in events
        if isinstance(e, MessageEvent) and e.message.role == "tool"
    }
    for key in refused:  # answered with why
        assert results[key].startswith("Error: this call was not run: "), key


@pytest.mark.slow
@seed(23)
@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,
    phases=[Phase.explicit, Phase.generate],  # no shrinking: megabyte examples shrink for minutes
    suppress_health_check=[
        HealthCheck.function_scoped_fixture,
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
    ],
)
@given(replies=st.lists(REPLIES, min_size=1, max_size=3))
def test_a_hostile_model_never_ends_the_run_with_an_exception_nor_breaks_the_history(
    tmp_path_factory: pytest.TempPathFactory, replies: list[RawReply]
) -> None:
    tmp_path = tmp_path_factory.mktemp("hostile-model")
    result, requests = _run(tmp_path, replies)  # raises nothing
    assert result.stop_reason.value in ("answered", "error", "max_iterations")
    _check_requests(requests)
    _check_trace(result.trace_path)


def test_huge_arguments_and_invalid_names_are_answered_and_the_run_goes_on(tmp_path: Path) -> None:
    """Case 37: 3 MB of arguments ended the run ("the next prompt is ~500,180 tokens ... refusing to
    send it"); a name of 200,000 characters did the same, and an empty, spaced or half-surrogate name
    went back to the provider in the history, which it refuses."""
    huge = '{"text": "' + "a" * 3_000_000 + '"}'
    reply = _raw(
        _body(
            [
                ("c1", "echo", huge),
                ("c2", "n" * 200_000, "{}"),
                ("c3", "read file", "{}"),
                ("c4", "echo", '{"text": "ok"}'),
            ],
            None,
            None,
        )
    )
    result, requests = _run(tmp_path, [reply])
    assert (result.stop_reason.value, result.output) == ("answered", "final answer")
    _check_requests(requests)
    sent = requests[1].body["messages"]
    calls = {c["id"]: c["function"] for c in sent[2]["tool_calls"]}
    assert calls["c1"] == {
        "name": "echo",
        "arguments": json.dumps({"arguments_cut": huge[:1000]}, separators=(",", ":")),
    }
    assert (calls["c2"]["name"], calls["c3"]["name"], calls["c4"]["name"]) == (
        "invalid_" + "n" * 56,
        "invalid_read_file",
        "echo",
    )
    answers = {m["tool_call_id"]: m["content"] for m in sent if m["role"] == "tool"}
    available = "Available tools: echo, context_retrieve."
    assert answers["c1"] == (
        "Error: this call was not run: its arguments are 3,000,012 characters, over the 200,000 a call "
        f"may send (write a large file in parts, or have a command produce it). {available}"
    )
    assert answers["c2"] == (
        f"Error: this call was not run: the tool name '{'n' * 100}...' (200,000 characters) is no tool "
        f"name: names are 1-64 letters, digits, '_' or '-'. {available}"
    )
    assert answers["c3"].startswith("Error: this call was not run: the tool name 'read file' (9 characters)")
    assert answers["c4"] == "ok"
    _check_trace(result.trace_path)
    kinds = [
        (e.kind, e.message.split(":")[0]) for e in read_trace(result.trace_path) if isinstance(e, ErrorEvent)
    ]
    assert kinds == [("reply_repair", f"tool call {n}") for n in ("c1", "c2", "c3")]


@pytest.mark.parametrize(
    ("reply", "why"),
    [
        (
            _body([], "ok", {"prompt_tokens": 5, "completion_tokens": 0.5}),
            "1 validation error for Usage completion_tokens Input should be a valid integer, got a number "
            "with a fractional part [type=int_from_float, input_value=0.5, input_type=float]",
        ),
        (_body([], 42, None), "1 validation error for Message content Input should be a valid string"),
        (
            _body([("c1", "echo", _deep(2000))], None, None),
            "RecursionError: maximum recursion depth exceeded while decoding a JSON array",
        ),
    ],
)
def test_a_reply_litellm_cannot_read_says_why_in_one_sentence_and_warns_nothing(
    tmp_path: Path, reply: dict[str, Any], why: str
) -> None:
    """Case 40: litellm refuses a reply whose usage count is a fraction, whose content is a number or
    whose arguments nest past ~1,000 levels (it parses them); the run ended saying only "Invalid
    response object", and pydantic printed a serializer warning with a line of its source on stderr."""
    import warnings

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        from tiered_agent import _litellm

        _litellm._configure(_litellm.import_litellm())  # the filter, after simplefilter reset it
        result, requests = _run(tmp_path, [_raw(reply)])
    assert result.stop_reason.value == "error" and len(requests) == 1
    assert result.error.startswith(
        "Model 'openai/gpt-4o-mini' sent a reply that is not a chat completion: Invalid response object ("
    )
    assert why in result.error and len(result.error) < 700 and "\n" not in result.error
    assert [str(w.message)[:40] for w in caught if "serializer" in str(w.message)] == []
    _check_trace(result.trace_path)


def test_arguments_nested_past_255_levels_are_answered_and_the_context_steps_go_on(tmp_path: Path) -> None:
    """Arguments 256-1,023 levels deep (JSON for orjson, not for the runtime's readers) made the
    aging step fail at every later iteration (``TypeError: Recursion limit reached`` writing them
    back out in ``context/aging/_forms.py``): they are refused and cut like arguments too long."""
    reply = _raw(_body([("c1", "echo", _deep(300)), ("c2", "echo", _deep(250))], None, None))
    result, requests = _run(tmp_path, [reply, reply, reply])
    assert result.output == "final answer"
    answers = {m["tool_call_id"]: m["content"] for m in requests[1].body["messages"] if m["role"] == "tool"}
    assert answers["c1"].startswith(
        "Error: this call was not run: its arguments nest deeper than 255 levels, which no JSON writer goes."
    )
    assert answers["c2"].startswith(
        "Error: invalid arguments for tool 'echo':"
    )  # 250 levels: JSON, validated
    _check_trace(result.trace_path)
