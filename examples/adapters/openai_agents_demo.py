"""The OpenAI Agents SDK with the tiered policy: ``RunConfig(call_model_input_filter=TieredInputFilter())``.

Offline: a scripted ``agents.models.interface.Model`` plays the model. It reads 30 large files with
``read_file`` (a ``function_tool`` wrapped by ``TieredInputFilter.tools``), recovers a marker hidden
in the first file with ``context_retrieve``, and answers. ``result.to_input_list()`` stays complete;
only the requests are lean. The last line printed is the JSON report (``_demo.report``).

    python examples/adapters/openai_agents_demo.py
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from _demo import CALLS, MARKER, READ_ONLY, file_text, path_for, report
from agents import Agent, RunConfig, Runner, function_tool
from agents.items import ModelResponse, TResponseInputItem
from agents.models.interface import Model
from agents.usage import Usage
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from tiered_agent.adapters import TieredInputFilter


class Scripted(Model):
    """A read per request, then the retrieval, then the answer; it notes what it saw."""

    def __init__(self) -> None:
        self.requests = 0
        self.marker_shown_before_retrieval = False

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        *args: Any,
        **kwargs: Any,
    ) -> ModelResponse:
        self.requests += 1
        if self.requests <= CALLS:
            output: list[Any] = [
                _call(f"call_{self.requests}", "read_file", {"path": path_for(self.requests)})
            ]
        elif self.requests == CALLS + 1:
            self.marker_shown_before_retrieval = MARKER in json.dumps(input, default=str)
            output = [_call("call_retrieve", "context_retrieve", {"topic": MARKER})]
        else:
            found = MARKER in str(input[-1]) if isinstance(input, list) else False
            output = [_answer(f"The checksum is {MARKER}." if found else "Not found.")]
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> Any:
        raise NotImplementedError("the demo does not stream")


def _call(call_id: str, name: str, arguments: dict[str, str]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        type="function_call", call_id=call_id, name=name, arguments=json.dumps(arguments), id=f"fc_{call_id}"
    )


def _answer(text: str) -> ResponseOutputMessage:
    content = [ResponseOutputText(type="output_text", text=text, annotations=[])]
    return ResponseOutputMessage(
        id="msg_1", type="message", role="assistant", status="completed", content=content
    )


@function_tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return file_text(path)


async def main() -> None:
    model = Scripted()
    context = TieredInputFilter(read_only_tools=READ_ONLY)
    agent = Agent(
        name="auditor", instructions="Audit the repository.", model=model, tools=context.tools(read_file)
    )
    config = RunConfig(call_model_input_filter=context, tracing_disabled=True)
    result = await Runner.run(
        agent, "Audit the repository and report the checksum.", run_config=config, max_turns=40
    )
    history = result.to_input_list()
    calls = sum(1 for item in history if isinstance(item, dict) and item.get("type") == "function_call")
    print(f"history: {len(history)} items (complete); usage: {context.usage.to_dict()}")
    retrieved = not model.marker_shown_before_retrieval and MARKER in str(result.final_output)
    print(report("openai-agents", calls, context.usage, retrieved))


if __name__ == "__main__":
    asyncio.run(main())
