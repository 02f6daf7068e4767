"""Imported once by the CLI harness's forkserver: what every CLI child would otherwise load.

litellm, the modules its first OpenAI-compatible call imports, and the tokenizers: a child forked
after this starts its run at once instead of paying seconds of imports and tokenizer loading.
Only imports and pure data: no event loop, no client, no thread survives into the children.
"""

from __future__ import annotations

import contextlib
import importlib
import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

from tiered_agent import _logging  # noqa: F401 - imported for the children
from tiered_agent._litellm import import_litellm
from tiered_agent._tokens import ENCODINGS, TokenCounter
from tiered_agent.cli import _run  # noqa: F401 - imported for the children

import_litellm()
for _encoding in ENCODINGS:
    TokenCounter(_encoding).encode("warm")
for _module in (
    "anyio._backends._asyncio",
    "rich.rule",
    "litellm.llms.openai.openai",
    "openai.resources.chat.completions",
    "litellm.litellm_core_utils.streaming_handler",
    "litellm._service_logger",
    "litellm.proxy._types",
    "mcp",
    "mcp.client.session",
):
    with contextlib.suppress(ImportError):
        importlib.import_module(_module)
