"""Cache affinity: the request fields that keep a provider's prompt cache warm across one run's calls.

A provider caches a prompt's prefix where it served it; a run's next call only
reads that cache if it lands on the same machine, before the entry expires.
One :class:`CacheAffinity` per run (a context variable: :func:`cache_affinity`,
entered by :meth:`Agent.run` and :meth:`Agent.resume`; the agent's model calls
and its summarizer's, running in the run's tasks, share it) decides three
request fields (:func:`affinity_fields`):

- **OpenAI** (``openai/`` models and bare OpenAI names): ``prompt_cache_key``,
  the run's key, so OpenAI routes the run's requests to the machine holding its
  prefix (https://platform.openai.com/docs/guides/prompt-caching). Outside a
  run's scope the key is derived from the conversation's first system and user
  messages (one key per conversation).
- **OpenRouter** (``openrouter/`` models): once a reply names the endpoint that
  served it (its ``provider``), later calls ask for that endpoint first,
  fallbacks allowed (``provider: {"order": [endpoint], "allow_fallbacks":
  true}``, https://openrouter.ai/docs/features/provider-routing): each endpoint
  has its own cache, so a switch re-sends the whole prompt uncached.
- **Anthropic** (``anthropic/`` Claude models, which cache only at breakpoints):
  once two calls of the run were :data:`LONG_GAP_S` apart or more (a slow tool,
  a human), the 5-minute entries would expire between calls, so both
  breakpoints (the system prompt and the newest message, the stable prefix the
  next call shares) ask for the 1-hour TTL: written at 2x instead of 1.25x,
  read after gaps up to an hour. litellm 1.106.2 drops the
  ``extended-cache-ttl-2025-04-11`` beta header from its allowlist, so only the
  ``ttl`` field is sent; the reply's ``cache_creation.ephemeral_1h_input_tokens``
  shows whether the hour was granted. Bedrock and Vertex keep the default TTL.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

__all__ = [
    "LONG_GAP_S",
    "CacheAffinity",
    "affinity_fields",
    "cache_affinity",
    "conversation_key",
    "current_affinity",
    "long_ttl_requested",
]

LONG_GAP_S = 270.0  # two calls this far apart nearly outlive Anthropic's 5-minute cache entries
ONE_HOUR = {"type": "ephemeral", "ttl": "1h"}
_OPENAI_BARE = ("gpt-", "chatgpt-", "o1", "o3", "o4", "codex-")
_AFFINITY: ContextVar[CacheAffinity | None] = ContextVar("tiered_agent_cache_affinity", default=None)


@dataclass
class CacheAffinity:
    """One run's cache affinity: its key, the endpoint pinned, when it last called (mutable per-run
    state, never shared between runs)."""

    key: str
    route: str | None = None  # the endpoint that served the run's first routed call
    last_request: float | None = None  # clock time of the run's last call
    long_gaps: bool = False  # two calls of the run were LONG_GAP_S apart or more

    def requested(self, now: float) -> None:
        """A call starts at ``now`` (seconds, any monotonic clock)."""
        if self.last_request is not None and now - self.last_request >= LONG_GAP_S:
            self.long_gaps = True
        self.last_request = now

    def answered(self, route: str | None) -> None:
        """A reply came from ``route`` (the endpoint a router named; None: not named)."""
        if self.route is None and route:
            self.route = route


@contextmanager
def cache_affinity(run_id: str) -> Iterator[CacheAffinity]:
    """The scope of one run: every model call inside shares one :class:`CacheAffinity`."""
    token = _AFFINITY.set(CacheAffinity(f"tiered-agent-{run_id}"))
    try:
        affinity = _AFFINITY.get()
        assert affinity is not None
        yield affinity
    finally:
        _AFFINITY.reset(token)


def current_affinity() -> CacheAffinity | None:
    """The affinity of the run this call belongs to, if inside one."""
    return _AFFINITY.get()


def _provider(model: str) -> str:
    return model.split("/", 1)[0].lower() if "/" in model else ""


def _is_openai(model: str) -> bool:
    provider = _provider(model)
    return provider == "openai" or (not provider and model.lower().startswith(_OPENAI_BARE))


def conversation_key(messages: Sequence[Mapping[str, Any]]) -> str:
    """A key for a conversation outside any run: a hash of its first system and user messages."""
    first: dict[str, str] = {}
    for message in messages:
        role = str(message.get("role"))
        if role in ("system", "user") and role not in first:
            first[role] = str(message.get("content"))
    digest = hashlib.sha256(f"{first.get('system', '')}\0{first.get('user', '')}".encode()).hexdigest()
    return f"tiered-agent-{digest[:24]}"


def long_ttl_requested(model: str | None, affinity: CacheAffinity | None) -> bool:
    """Whether the run's requests to ``model`` write their cache entries with the 1-hour TTL."""
    return (
        model is not None and affinity is not None and affinity.long_gaps and _provider(model) == "anthropic"
    )


def affinity_fields(
    model: str,
    messages: Sequence[Mapping[str, Any]],
    affinity: CacheAffinity | None,
    breakpoints: Sequence[Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """The request fields cache affinity adds for ``model`` (litellm keyword arguments).

    ``breakpoints``: the Anthropic cache breakpoints the request carries, if any; they come back
    with the 1-hour TTL when the run has long gaps."""
    fields: dict[str, Any] = {}
    if _is_openai(model):
        fields["prompt_cache_key"] = affinity.key if affinity is not None else conversation_key(messages)
    if _provider(model) == "openrouter" and affinity is not None and affinity.route:
        fields["extra_body"] = {"provider": {"order": [affinity.route], "allow_fallbacks": True}}
    if breakpoints and long_ttl_requested(model, affinity):
        assert affinity is not None
        fields["cache_control_injection_points"] = [
            {**point, "control": dict(ONE_HOUR)} for point in breakpoints
        ]
    return fields
