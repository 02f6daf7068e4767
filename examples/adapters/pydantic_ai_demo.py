"""pydantic-ai with the tiered policy: ``Agent(model, capabilities=[TieredContext(...)])``, offline.

pydantic-ai's ``FunctionModel`` plays the model: it reads 30 large files with ``read_file`` (an
identical read would be served from the dedup cache), then recovers a marker hidden in the first
file with ``context_retrieve``, and answers. The run's history stays complete; only the requests
are lean. The last line printed is the JSON report (``_demo.report``).

    python examples/adapters/pydantic_ai_demo.py
"""

from __future__ import annotations

from _demo import CALLS, MARKER, READ_ONLY, file_text, path_for, report
from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart, ToolReturnPart
from pydantic_ai.models.function import AgentInfo, FunctionModel

from tiered_agent.adapters import TieredContext


class Scripted:
    """The model: a read per request, then the retrieval, then the answer; it notes what it saw."""

    def __init__(self) -> None:
        self.requests = 0
        self.marker_shown_before_retrieval = False

    def __call__(self, messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        self.requests += 1
        if self.requests <= CALLS:
            path = path_for(self.requests)
            return ModelResponse(parts=[ToolCallPart("read_file", {"path": path}, f"call_{self.requests}")])
        if self.requests == CALLS + 1:
            self.marker_shown_before_retrieval = MARKER in _text(messages)
            return ModelResponse(parts=[ToolCallPart("context_retrieve", {"topic": MARKER}, "call_retrieve")])
        found = MARKER in _last_tool_output(messages)
        return ModelResponse(parts=[TextPart(f"The checksum is {MARKER}." if found else "Not found.")])


def _text(messages: list[ModelMessage]) -> str:
    return "\n".join(str(part) for message in messages for part in message.parts)


def _last_tool_output(messages: list[ModelMessage]) -> str:
    returns = [p for m in messages for p in m.parts if isinstance(p, ToolReturnPart)]
    return returns[-1].model_response_str() if returns else ""


def main() -> None:
    model = Scripted()
    context = TieredContext(read_only_tools=READ_ONLY)
    agent = Agent(FunctionModel(model), capabilities=[context])

    @agent.tool_plain
    def read_file(path: str) -> str:
        """Read a file of the repository."""
        return file_text(path)

    result = agent.run_sync("Audit the repository and report the checksum.")
    usage = context.last_usage
    assert usage is not None
    history = result.all_messages()
    calls = sum(isinstance(p, ToolCallPart) for m in history for p in m.parts)
    print(f"history: {len(history)} messages (complete); details: {result.usage.details}")
    retrieved = not model.marker_shown_before_retrieval and MARKER in result.output
    print(report("pydantic-ai", calls, usage, retrieved))


if __name__ == "__main__":
    main()
