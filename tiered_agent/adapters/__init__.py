"""Adapters: the tiered context policy inside other agent frameworks, request-only.

Each adapter is one module over :class:`~tiered_agent.ContextSession`, imported only when its
name is used (``pip install "tiered-agent[pydantic-ai]"``, ``[openai-agents]``, ``[langchain]``):

- :class:`TieredContext`: a pydantic-ai capability (``Agent(capabilities=[TieredContext()])``);
- :class:`TieredInputFilter`: an OpenAI Agents SDK ``RunConfig(call_model_input_filter=...)``;
- :class:`TieredMiddleware`: a LangChain ``create_agent(..., middleware=[...])`` middleware.

``docs/adapters.md`` has the seams, what each leaves untouched and the measured savings.
"""

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__all__ = ["TieredContext", "TieredInputFilter", "TieredMiddleware"]

_LOCATIONS = {
    "TieredContext": "._pydantic_ai",
    "TieredInputFilter": "._openai_agents",
    "TieredMiddleware": "._langchain",
}

if TYPE_CHECKING:
    from ._langchain import TieredMiddleware
    from ._openai_agents import TieredInputFilter
    from ._pydantic_ai import TieredContext

__getattr__ = lazy_exports(__name__, _LOCATIONS, globals())
