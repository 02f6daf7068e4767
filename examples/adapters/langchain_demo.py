"""LangChain with the tiered policy: ``create_agent(model, tools, middleware=[TieredMiddleware(...)])``.

Offline: LangChain's ``GenericFakeChatModel`` plays the model (scripted replies; ``bind_tools``
accepted). It reads 30 large files with ``read_file``, recovers a marker hidden in the first file
with ``context_retrieve``, and answers. The agent state's messages stay complete; only the
requests are lean. The last line printed is the JSON report (``_demo.report``).

    python examples/adapters/langchain_demo.py
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from _demo import CALLS, MARKER, READ_ONLY, file_text, path_for, report
from langchain.agents import create_agent
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langchain_core.outputs import ChatResult
from langchain_core.tools import tool
from pydantic import Field

from tiered_agent.adapters import TieredMiddleware


class Scripted(GenericFakeChatModel):
    """The scripted replies, with tools bound as given; it notes whether each request showed the marker."""

    showed_marker: list[bool] = Field(default_factory=list)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Scripted:
        return self

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        self.showed_marker.append(any(MARKER in str(m.content) for m in messages))
        return super()._generate(messages, *args, **kwargs)


@tool
def read_file(path: str) -> str:
    """Read a file of the repository."""
    return file_text(path)


def main() -> None:
    replies = [
        AIMessage("", tool_calls=[{"name": "read_file", "args": {"path": path_for(n)}, "id": f"call_{n}"}])
        for n in range(1, CALLS + 1)
    ]
    replies.append(
        AIMessage("", tool_calls=[{"name": "context_retrieve", "args": {"topic": MARKER}, "id": "r"}])
    )
    replies.append(AIMessage(f"The checksum is {MARKER}."))
    model = Scripted(messages=iter(replies))
    middleware = TieredMiddleware(read_only_tools=READ_ONLY)
    agent = create_agent(model, tools=[read_file], middleware=[middleware])
    state = agent.invoke(
        {"messages": [{"role": "user", "content": "Audit the repository."}]}, {"recursion_limit": 200}
    )
    history = state["messages"]
    calls = sum(len(m.tool_calls) for m in history if isinstance(m, AIMessage))
    usage = middleware.usage
    assert usage is not None
    print(f"history: {len(history)} messages (complete); usage: {usage.to_dict()}")
    retrieval = [m for m in history if isinstance(m, ToolMessage) and m.name == "context_retrieve"]
    # the request that asked for the retrieval (after the 30 reads) no longer showed the marker,
    # context_retrieve brought it back, and the request after it showed it
    asked, answered = model.showed_marker[CALLS], model.showed_marker[CALLS + 1]
    retrieved = bool(retrieval) and MARKER in retrieval[-1].text and not asked and answered
    print(report("langchain", calls, usage, retrieved))


if __name__ == "__main__":
    main()
