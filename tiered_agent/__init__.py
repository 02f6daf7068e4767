"""tiered_agent: an async agent runtime over litellm with a tiered, measured context pipeline.

    from tiered_agent import Agent, tool

    agent = Agent(model="openai/gpt-4o-mini", tools=[...], context="tiered")
    result = await agent.run("Find where the retry delay is computed and explain it")
    result.output, result.usage, result.trace_path

Names are imported lazily so that ``import tiered_agent`` (and ``tiered-agent --help``)
stays fast and never imports litellm.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ._lazy import lazy_exports

__all__ = [
    "PRESETS",
    "Age",
    "Agent",
    "AuthenticationError",
    "Clear",
    "Compact",
    "ConfigurationError",
    "ContextBudgetExceeded",
    "ContextConfig",
    "ContextWindowExceeded",
    "Dedup",
    "DigestSummarizer",
    "Elide",
    "IterationStats",
    "LLMSummarizer",
    "LiteLLMModel",
    "MCPHttpServer",
    "MCPServerConfig",
    "MCPServerError",
    "MCPSseServer",
    "MCPStdioServer",
    "Mask",
    "Message",
    "Model",
    "ModelError",
    "ModelNotFoundError",
    "ModelReply",
    "PathOutsideWorkspace",
    "Policy",
    "RetryPolicy",
    "RunLimits",
    "RunResult",
    "Step",
    "StopReason",
    "Summarize",
    "Summarizer",
    "Summary",
    "Telemetry",
    "TieredAgentError",
    "TokenCounter",
    "Tool",
    "ToolCall",
    "ToolError",
    "ToolSet",
    "TraceFormatError",
    "TraceWriteError",
    "Truncate",
    "Usage",
    "Window",
    "Workspace",
    "load_history",
    "load_mcp_config",
    "preset",
    "read_trace",
    "tool",
    "workspace_tools",
]

_STEPS = ("Age", "Clear", "Compact", "Dedup", "Elide", "Mask", "Step", "Summarize", "Truncate", "Window")
_LOCATIONS = {
    "Agent": "._agent",
    "RunLimits": "._agent",
    "RunResult": "._result",
    "StopReason": "._result",
    "IterationStats": "._result",
    "Message": "._messages",
    "ToolCall": "._messages",
    "Usage": "._messages",
    "Tool": "._tools",
    "ToolSet": "._tools",
    "tool": "._tools",
    "Workspace": "._workspace",
    "workspace_tools": "._workspace",
    "LiteLLMModel": "._model",
    "Model": "._model",
    "ModelReply": "._model",
    "RetryPolicy": "._model",
    "ContextConfig": ".context._config",
    "Policy": ".context._policy",
    "PRESETS": ".context._presets",
    "preset": ".context._presets",
    "Summary": ".context.pipeline._types",
    "Summarizer": ".context.summary._summarizer",
    "DigestSummarizer": ".context.summary._summarizer",
    "LLMSummarizer": ".context.summary._llm",
    **dict.fromkeys(_STEPS, ".context.steps"),
    "TokenCounter": "._tokens",
    "Telemetry": ".telemetry",
    "read_trace": "._trace",
    "load_history": "._trace",
    "MCPStdioServer": ".mcp._config",
    "MCPHttpServer": ".mcp._config",
    "MCPServerConfig": ".mcp._config",
    "MCPSseServer": ".mcp._config",
    "load_mcp_config": ".mcp._config",
}
_LOCATIONS.update({name: "._errors" for name in __all__ if name.endswith(("Error", "Exceeded", "Workspace"))})
_LOCATIONS["Workspace"] = "._workspace"

if TYPE_CHECKING:
    from ._agent import Agent, RunLimits
    from ._errors import (
        AuthenticationError,
        ConfigurationError,
        ContextBudgetExceeded,
        ContextWindowExceeded,
        MCPServerError,
        ModelError,
        ModelNotFoundError,
        PathOutsideWorkspace,
        TieredAgentError,
        ToolError,
        TraceFormatError,
        TraceWriteError,
    )
    from ._messages import Message, ToolCall, Usage
    from ._model import LiteLLMModel, Model, ModelReply, RetryPolicy
    from ._result import IterationStats, RunResult, StopReason
    from ._tokens import TokenCounter
    from ._tools import Tool, ToolSet, tool
    from ._trace import load_history, read_trace
    from ._workspace import Workspace, workspace_tools
    from .context._config import ContextConfig
    from .context._policy import Policy
    from .context._presets import PRESETS, preset
    from .context.pipeline._types import Summary
    from .context.steps import Age, Clear, Compact, Dedup, Elide, Mask, Step, Summarize, Truncate, Window
    from .context.summary._llm import LLMSummarizer
    from .context.summary._summarizer import DigestSummarizer, Summarizer
    from .mcp._config import (
        MCPHttpServer,
        MCPServerConfig,
        MCPSseServer,
        MCPStdioServer,
        load_mcp_config,
    )
    from .telemetry import Telemetry


__getattr__ = lazy_exports(__name__, _LOCATIONS, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
