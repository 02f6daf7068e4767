"""Which endpoint a resumed run talks to, and how to say it.

A trace records the ``api_base`` its run used. Sending the user's API key there again just
because a file says so would let anyone who can edit a trace collect keys, so a resume uses the
endpoint of its own command line (``--api-base``) or environment (the provider's ``*_API_BASE``
variable, else its default), never the recorded one by itself. When the recorded endpoint differs,
the note says how to use it again: repeat it with ``--api-base``. Either way the endpoint is named.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ._trace import redact

__all__ = ["Endpoint", "resume_endpoint"]

# The variables litellm reads for a provider's endpoint, in the order it reads them.
_ENV_BASES = {
    "openai": ("OPENAI_BASE_URL", "OPENAI_API_BASE"),
    "anthropic": ("ANTHROPIC_BASE_URL", "ANTHROPIC_API_BASE"),
    "azure": ("AZURE_API_BASE",),
    "hosted_vllm": ("HOSTED_VLLM_API_BASE",),
    "ollama": ("OLLAMA_API_BASE",),
    "ollama_chat": ("OLLAMA_API_BASE",),
    "openrouter": ("OPENROUTER_API_BASE",),
}


@dataclass(frozen=True, slots=True)
class Endpoint:
    """``api_base`` for the model (None: litellm finds it in the environment or uses the provider's
    default), the sentence that names it, and a note when the trace recorded another one."""

    api_base: str | None
    described: str
    note: str | None = None


def resume_endpoint(
    given: str | None, recorded: Any, model: str, environ: Mapping[str, str] | None = None
) -> Endpoint:
    """The endpoint a resume of a run of ``model`` uses: ``given`` (``--api-base``), else the
    environment's; ``recorded`` (the trace's ``api_base``) only names what the run used."""
    environ = os.environ if environ is None else environ
    if given:
        described = f"endpoint: {redact(given)} (--api-base)"
    else:
        described = f"endpoint: {_from_environment(model, environ)}"
    note = None
    if isinstance(recorded, str) and recorded and recorded != given:
        shown = redact(recorded)
        note = (
            f"the run used the endpoint {shown}, which this resume does not use by itself "
            f"(your API key goes where you say): pass --api-base {shown} to use it again"
        )
    return Endpoint(given or None, described, note)


def _from_environment(model: str, environ: Mapping[str, str]) -> str:
    provider = model.split("/", 1)[0] if "/" in model else ""
    for name in _ENV_BASES.get(provider, ()):
        if environ.get(name):
            return f"{redact(environ[name])} (${name})"
    return f"the default of the provider of {model!r} (no --api-base given)"
