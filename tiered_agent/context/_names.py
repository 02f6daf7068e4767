"""Names shared by the context tiers (kept tiny so every module can import it)."""

from __future__ import annotations

import json

__all__ = ["RETRIEVE_TOOL_NAME", "retrieve_call"]

RETRIEVE_TOOL_NAME = "context_retrieve"


def retrieve_call(argument: str, value: str) -> str:
    """The exact recovery call shown to the model, e.g. ``context_retrieve(tool_call_id="call_7")``."""
    return f"{RETRIEVE_TOOL_NAME}({argument}={json.dumps(value, ensure_ascii=False)})"
