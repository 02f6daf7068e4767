"""Exceptions raised by tiered_agent.

What the *model* did wrong (bad arguments, unknown tool, a failing tool) is not
an exception the user sees: it goes back to the model as a tool result. What
the *developer* configured wrong, or what the outside world made impossible,
raises one of these::

    TieredAgentError
    ├── ConfigurationError          bad settings: unknown preset, no model, bad path, ...
    │   └── TraceInUse              another process is running or resuming this trace
    ├── ToolError                   raised *inside* a tool: its message becomes the tool result
    │   └── PathOutsideWorkspace    a path escapes the workspace root
    ├── ModelError                  a model call failed for good (after retries)
    │   ├── AuthenticationError     missing or rejected credentials
    │   ├── ModelNotFoundError      the provider does not know the model
    │   └── ContextWindowExceeded   the prompt does not fit the model's window
    ├── ContextBudgetExceeded       the safety net refused to send an oversized prompt
    ├── MCPServerError              an MCP server could not be started or reached for the run
    ├── TraceFormatError            a trace or recorded run cannot be read (names file and problem)
    └── TraceWriteError             the trace cannot be written (disk full, unwritable directory)
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "ConfigurationError",
    "ContextBudgetExceeded",
    "ContextWindowExceeded",
    "MCPServerError",
    "ModelError",
    "ModelNotFoundError",
    "PathOutsideWorkspace",
    "TieredAgentError",
    "ToolError",
    "TraceFormatError",
    "TraceInUse",
    "TraceWriteError",
]


class TieredAgentError(Exception):
    """Base of every exception this package raises."""


class ConfigurationError(TieredAgentError, ValueError):
    """The developer configured something that cannot work."""


class TraceInUse(ConfigurationError):
    """Another process holds the trace's lock (a run or a resume of it is going on); names the holder."""


class ToolError(TieredAgentError):
    """Raised by a tool to report a problem to the model (becomes the tool result)."""


class PathOutsideWorkspace(ToolError):
    """A tool argument named a path outside the workspace root."""


class ModelError(TieredAgentError):
    """A model request failed and will not be retried (or retries ran out)."""


class AuthenticationError(ModelError):
    """The provider rejected or did not receive credentials."""


class ModelNotFoundError(ModelError):
    """The model string is unknown to litellm or to the provider."""


class ContextWindowExceeded(ModelError):
    """The prompt exceeds the model's context window (not retried blindly)."""


class ContextBudgetExceeded(TieredAgentError):
    """The next prompt would exceed the hard share of the context window even after compaction."""


class MCPServerError(TieredAgentError):
    """An MCP server failed to start (exited, timed out, unreachable); the message names it and why."""


class TraceFormatError(TieredAgentError, ValueError):
    """A trace or recorded agent run is unreadable; the message names the file and the problem."""


class OutputWriteError(TieredAgentError):
    """An output file (the bench's document, report, charts, per-run detail) cannot be written (a
    full disk, a file too large); the message names the file. Nothing is left half-written under
    its name: the file an earlier run wrote there is kept."""


class TraceWriteError(TieredAgentError):
    """The trace cannot be written (an unwritable directory, a full disk); the run stops.

    The trace keeps every complete line written before the failure and no torn one.
    """
