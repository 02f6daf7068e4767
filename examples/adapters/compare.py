"""Each framework's own context tool against the tiered adapter, on the demos' 30 reads (offline).

Runs every framework three ways over the same scripted run (30 reads of ~24 kB files, then an
answer): with no context tool (the full history), with the framework's own tool at its defaults,
and with the tiered adapter; it counts every request the model received with the project's token
counter (messages only, the same way for all) and prints a Markdown table: the last request's
tokens, all requests' tokens summed, and whether the marker hidden in file 1 is still in the
request or recoverable (``context_retrieve``).

    python examples/adapters/compare.py

pydantic-ai ships no client-side context tool to compare: its ``AnthropicCompaction`` and
``OpenAICompaction`` ask the provider to compact on its side, so the client sends the full history.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Sequence
from typing import Any

from _demo import CALLS, MARKER, READ_ONLY, file_text, path_for

from tiered_agent import TokenCounter

COUNTER = TokenCounter()
Row = tuple[str, str, list[list[dict[str, Any]]], bool]


def measure(framework: str, tool: str, requests: list[list[dict[str, Any]]], retrievable: bool) -> Row:
    return framework, tool, requests, retrievable


# ----------------------------------------------------------------------------- pydantic-ai
def pydantic_ai(capabilities: Sequence[Any]) -> list[list[dict[str, Any]]]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    from tiered_agent.adapters._pydantic_ai import from_pydantic_ai

    seen: list[list[dict[str, Any]]] = []

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        seen.append(from_pydantic_ai(messages)[0])
        if len(seen) <= CALLS:
            return ModelResponse(
                parts=[ToolCallPart("read_file", {"path": path_for(len(seen))}, f"c{len(seen)}")]
            )
        return ModelResponse(parts=[TextPart("done")])

    agent = Agent(FunctionModel(model), capabilities=list(capabilities))
    agent.tool_plain(file_text, name="read_file")
    agent.run_sync("Audit the repository.")
    return seen


# ----------------------------------------------------------------------------- openai-agents
def openai_agents(input_filter: Any, tools: Callable[[Any], list[Any]]) -> list[list[dict[str, Any]]]:
    from agents import Agent, RunConfig, Runner, function_tool
    from agents.items import ModelResponse
    from agents.models.interface import Model
    from agents.usage import Usage
    from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

    from tiered_agent.adapters._openai_agents import from_responses

    seen: list[list[dict[str, Any]]] = []

    class Scripted(Model):
        async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> Any:
            seen.append(from_responses(list(input))[0])
            n = len(seen)
            if n <= CALLS:
                arguments = json.dumps({"path": path_for(n)})
                output: list[Any] = [
                    ResponseFunctionToolCall(
                        type="function_call", call_id=f"c{n}", name="read_file", arguments=arguments
                    )
                ]
            else:
                text = ResponseOutputText(type="output_text", text="done", annotations=[])
                output = [
                    ResponseOutputMessage(
                        id="m", type="message", role="assistant", status="completed", content=[text]
                    )
                ]
            return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

        def stream_response(self, *args: Any, **kwargs: Any) -> Any:
            raise NotImplementedError

    agent = Agent(
        name="auditor", model=Scripted(), tools=tools(function_tool(file_text, name_override="read_file"))
    )
    config = RunConfig(call_model_input_filter=input_filter, tracing_disabled=True)
    asyncio.run(Runner.run(agent, "Audit the repository.", run_config=config, max_turns=40))
    return seen


# ----------------------------------------------------------------------------- LangChain
def langchain(middleware: Sequence[Any]) -> list[list[dict[str, Any]]]:
    from langchain.agents import create_agent
    from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
    from langchain_core.messages import AIMessage
    from langchain_core.tools import tool

    from tiered_agent.adapters._langchain import from_langchain

    seen: list[list[dict[str, Any]]] = []

    class Scripted(GenericFakeChatModel):
        def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Scripted:
            return self

        def _generate(self, messages: list[Any], *args: Any, **kwargs: Any) -> Any:
            seen.append(from_langchain(messages))
            return super()._generate(messages, *args, **kwargs)

    replies = [
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": path_for(n)}, "id": f"c{n}"}])
        for n in range(1, CALLS + 1)
    ]
    model = Scripted(messages=iter([*replies, AIMessage("done")]))
    agent = create_agent(model, tools=[tool("read_file")(file_text)], middleware=list(middleware))
    agent.invoke(
        {"messages": [{"role": "user", "content": "Audit the repository."}]}, {"recursion_limit": 200}
    )
    return seen


def rows() -> list[Row]:
    from agents.extensions import ToolOutputTrimmer
    from langchain.agents.middleware import ClearToolUsesEdit, ContextEditingMiddleware

    from tiered_agent.adapters import TieredContext, TieredInputFilter, TieredMiddleware

    tiered_filter = TieredInputFilter(read_only_tools=READ_ONLY)
    return [
        measure("pydantic-ai", "none (full history)", pydantic_ai([]), False),
        measure(
            "pydantic-ai", "TieredContext", pydantic_ai([TieredContext(read_only_tools=READ_ONLY)]), True
        ),
        measure("openai-agents", "none (full history)", openai_agents(None, lambda t: [t]), False),
        measure(
            "openai-agents", "ToolOutputTrimmer()", openai_agents(ToolOutputTrimmer(), lambda t: [t]), False
        ),
        measure(
            "openai-agents", "TieredInputFilter", openai_agents(tiered_filter, tiered_filter.tools), True
        ),
        measure("langchain", "none (full history)", langchain([]), False),
        measure(
            "langchain",
            "ContextEditingMiddleware(ClearToolUsesEdit())",
            langchain([ContextEditingMiddleware(edits=[ClearToolUsesEdit()])]),
            False,
        ),
        measure(
            "langchain", "TieredMiddleware", langchain([TieredMiddleware(read_only_tools=READ_ONLY)]), True
        ),
    ]


def main() -> None:
    columns = [
        "framework",
        "context tool",
        "last request tokens",
        "all requests tokens",
        "marker shown",
        "recoverable",
    ]
    print(f"| {' | '.join(columns)} |")
    print("|---|---|---:|---:|---|---|")
    for framework, tool, requests, retrievable in rows():
        counts = [COUNTER.count_prompt(request) for request in requests]
        shown = MARKER in json.dumps(requests[-1])
        recoverable = "yes (context_retrieve)" if retrievable else ("yes" if shown else "no")
        cells = [
            framework,
            tool,
            f"{counts[-1]:,}",
            f"{sum(counts):,}",
            "yes" if shown else "no",
            recoverable,
        ]
        print(f"| {' | '.join(cells)} |")


if __name__ == "__main__":
    main()
