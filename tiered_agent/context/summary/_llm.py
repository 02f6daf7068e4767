"""A rolling working memory written by a litellm model, riding the agent's own cached prompt.

:class:`LLMSummarizer` asks for the sections the deterministic digest writes
(:data:`~.memory._sections.SECTIONS`): when the agent's last prompt went to the same model, the
request is that prompt byte for byte plus one instruction (:func:`memory_request`), else a
standalone request (:func:`summary_messages`). litellm is imported only when it is constructed.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..._errors import ConfigurationError, ModelError
from ..._messages import Message, Usage
from .._names import RETRIEVE_TOOL_NAME
from ..pipeline._types import SentPrompt, Summary
from .memory._sections import SECTIONS, header

__all__ = [
    "MEMORY_REQUEST",
    "SUMMARY_SYSTEM_PROMPT",
    "LLMSummarizer",
    "memory_request",
    "render_range",
    "summary_messages",
]

_GOAL_CHARS = 1_000
_TEXT_CHARS = 2_000
_ARGS_CHARS = 300
_OUTPUT_CHARS = 1_500
_RENDER_CHARS = 48_000

SUMMARY_SYSTEM_PROMPT = """\
You maintain the working memory of an autonomous agent, so that it can continue after older \
iterations are removed from its context. Merge the previous working memory (if any) with the new \
iterations into one updated working memory, as these sections, in this order, each a title line \
followed by "- " items (omit empty sections):
{sections}
Keep exact paths, line numbers, identifiers, ids, amounts, commands, exit codes and test counts; \
drop chit-chat and raw outputs. Reply with the working memory only, starting with "Task:", in at \
most {words} words."""

# Appended to the agent's own last prompt (see LLMSummarizer): the one message that differs.
MEMORY_REQUEST = """\
[Working memory request. This turn is not part of the task: do not call any tool.]
{scope}
{extra}Write it as these sections, in this order, each a title line followed by "- " items (omit \
empty sections):
{sections}
Keep exact paths, line numbers, identifiers, ids, amounts, commands, exit codes and test counts; \
no raw outputs, no chit-chat. Reply with the working memory only, starting with "Task:", in at most \
{words} words."""


def _clip(text: str, limit: int) -> str:
    """Head and tail of ``text`` when longer than ``limit`` characters."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} chars omitted ...]\n{text[-half:]}"


def _goal(snapshot: Sequence[Message]) -> str | None:
    for message in snapshot:
        if message.iteration == 0 and message.role == "user" and message.text.strip():
            return _clip(message.text.strip(), _GOAL_CHARS)
    return None


def _render_message(message: Message, names: dict[str, str]) -> list[str]:
    prefix = f"[it {message.iteration}]"
    if message.role == "assistant":
        text = message.text.strip()
        lines = [f"{prefix} assistant: {_clip(text, _TEXT_CHARS)}"] if text else []
        for call in message.tool_calls:
            names[call.id] = call.name
            lines.append(f"{prefix} call {call.name} ({call.id}) {_clip(call.arguments, _ARGS_CHARS)}")
        return lines
    if message.role == "tool":
        name = message.name or names.get(message.tool_call_id or "", "tool")
        if name == RETRIEVE_TOOL_NAME:
            return [f"{prefix} {name} result omitted (older history, already covered)"]
        return [f"{prefix} {name} result ({message.tool_call_id}): {_clip(message.text, _OUTPUT_CHARS)}"]
    if message.role == "user":
        return [f"{prefix} user: {_clip(message.text.strip(), _TEXT_CHARS)}"]
    return []  # the system prompt is not part of the work


def render_range(snapshot: Sequence[Message], first: int, last: int, *, limit: int = _RENDER_CHARS) -> str:
    """Iterations ``first..last`` as compact text; outputs clipped, the most recent kept past ``limit``."""
    names: dict[str, str] = {}
    lines: list[str] = []
    for message in snapshot:
        if message.iteration > 0 and first <= message.iteration <= last:  # iteration 0: the goal
            lines.extend(_render_message(message, names))
    text = "\n".join(lines)
    if len(text) > limit:
        text = "[earlier lines omitted]\n" + text[-limit:]
    return text or "(no activity in this range)"


def _words(max_tokens: int) -> int:
    return max(50, int(max_tokens * 0.6))


def _sections() -> str:
    return "\n".join(f"{title}: {what}" for title, what in SECTIONS)


def summary_messages(
    previous: Summary | None, snapshot: Sequence[Message], first: int, last: int, *, max_tokens: int = 500
) -> list[dict[str, str]]:
    """The standalone request asking a model for the updated working memory (no cache to ride)."""
    parts: list[str] = []
    goal = _goal(snapshot)
    if goal:
        parts.append(f"Goal (the task):\n{goal}")
    if previous is not None:
        parts.append(
            f"Previous working memory (iterations {previous.first}-{previous.last}):\n{previous.text}"
        )
    parts.append(f"New iterations {first}-{last}:\n{render_range(snapshot, first, last)}")
    system = SUMMARY_SYSTEM_PROMPT.format(sections=_sections(), words=_words(max_tokens))
    return [{"role": "system", "content": system}, {"role": "user", "content": "\n\n".join(parts)}]


def memory_request(
    prompt: SentPrompt,
    previous: Summary | None,
    snapshot: Sequence[Message],
    first: int,
    last: int,
    *,
    max_tokens: int = 500,
) -> str:
    """The instruction appended to the agent's last prompt: the working memory of ``first..last``.

    What the prompt does not show is added: the previous working memory when the prompt was
    built before it landed, and the iterations of the range it does not hold (with ``keep=0``,
    the newest one). Iterations after ``last`` that it shows are named, to be left out.
    """
    shown = {m.iteration for m in prompt.messages if m.role in ("assistant", "tool")}
    later = len({m.iteration for m in prompt.messages if m.role == "assistant" and m.iteration > last})
    previous_shown = previous is not None and any(previous.text in m.text for m in prompt.messages)
    scope = f"Write the working memory of iterations {first}-{last} of the work above"
    if previous is not None:
        scope = f"Write the working memory of iterations {previous.first}-{last} of the work above"
        if previous_shown:
            shown_range = f"iterations {previous.first}-{previous.last}"
            scope += f", folding in the previous working memory shown above ({shown_range})"
    if later:
        scope += f"; leave out the last {later} assistant turn{'s' if later > 1 else ''} and their results"
    extra: list[str] = []
    if previous is not None and not previous_shown:
        covered = f"iterations {previous.first}-{previous.last}"
        extra.append(f"Previous working memory ({covered}), to fold in:\n{previous.text}")
    missing = {k for k in range(first, last + 1) if k not in shown}
    if missing:
        rendered = render_range([m for m in snapshot if m.iteration in missing], min(missing), max(missing))
        extra.append(f"Iterations not shown above:\n{rendered}")
    return MEMORY_REQUEST.format(
        scope=scope + ".",
        extra="".join(f"{part}\n\n" for part in extra),
        sections=_sections(),
        words=_words(max_tokens),
    )


def _stamped(first: int, last: int, text: str) -> str:
    """The reply under the working memory's range line (a range line of the model's own replaced)."""
    lines = text.strip().splitlines()
    if lines and lines[0].lower().startswith("working memory"):
        lines = lines[1:]
    return "\n".join([header(first, last), *lines]).strip()


class LLMSummarizer:
    """A rolling working memory written by a litellm model.

    When the agent's last prompt was sent to this same model (``prompt.model == model``),
    the request *is* that prompt, byte for byte (messages and tool schemas), plus one
    instruction message (:func:`memory_request`): the provider serves the prefix from the
    cache the agent's own request just filled, so its input is billed as cache reads.
    What keeps such a request a cache hit:

    * OpenAI caches prompts of 1,024+ tokens automatically; a hit needs an exact prefix
      match, and the cached prefix covers messages *and* tools, so the tool list must be
      identical (https://platform.openai.com/docs/guides/prompt-caching; cookbook
      "Prompt Caching 201").
    * Anthropic caches up to explicit breakpoints, in the order tools → system → messages;
      changing the tools invalidates everything, and changing ``tool_choice`` (or images,
      or thinking parameters) invalidates the message blocks
      (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
      https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching).
      So this request sends the same tools and no ``tool_choice``, and puts its
      breakpoints on the system prompt and on the last message of the agent's prompt
      (``index=-2``), where the agent's request wrote the cache: a read, and no write for
      the instruction (Claude Code's compaction does the same).
    * Gemini 2.5+ caches implicitly, best effort, for prompts above a minimum size
      (1,024-4,096 tokens by model), when requests share a prefix within a short time
      (https://ai.google.dev/gemini-api/docs/caching).

    Hence no ``tool_choice`` to forbid tools: a reply that calls a tool is a failed summary
    (:class:`ModelError`; the worker retries at the next trigger and never stores it), as
    are a failed request and an empty reply. Without a prompt from the same model (none
    sent yet, or another model whose cache this one cannot read), the standalone request
    of :func:`summary_messages` is sent instead. ``usage`` counts every request, with the
    provider's cached and cache-write tokens (:func:`~tiered_agent._model.map_usage`).
    Extra keyword arguments go to ``litellm.acompletion`` unchanged (tests pass
    ``mock_response=``); pass the agent model's own (reasoning, thinking) to keep its cache.
    """

    def __init__(
        self,
        model: str,
        *,
        max_tokens: int = 500,
        timeout_s: float = 60.0,
        api_base: str | None = None,
        **completion_kwargs: Any,
    ) -> None:
        if not model:
            raise ConfigurationError("LLMSummarizer needs a model name")
        if max_tokens < 1 or timeout_s <= 0:
            raise ConfigurationError("LLMSummarizer: max_tokens must be >= 1 and timeout_s > 0")
        from ..._model import LiteLLMModel, RetryPolicy, needs_cache_breakpoints

        self.model = model
        self.max_tokens = max_tokens
        self.timeout_s = timeout_s
        self.api_base = api_base
        self.completion_kwargs = completion_kwargs
        extra = dict(completion_kwargs)
        if needs_cache_breakpoints(model):
            extra.setdefault("cache_control_injection_points", [dict(p) for p in _SUMMARY_BREAKPOINTS])
        # One attempt: a failed summary is retried at the next trigger, not here.
        self._client = LiteLLMModel(
            model,
            api_base=api_base,
            max_tokens=max_tokens,
            timeout_s=timeout_s,
            retry=RetryPolicy(max_attempts=1),
            extra_kwargs=extra,
            cache_breakpoints=False,
        )
        self.usage = Usage()

    def request(
        self,
        previous: Summary | None,
        snapshot: Sequence[Message],
        first: int,
        last: int,
        prompt: SentPrompt | None = None,
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """The messages and tools this summarizer sends for ``first..last``."""
        if prompt is None or prompt.model != self.model:
            return summary_messages(previous, snapshot, first, last, max_tokens=self.max_tokens), []
        instruction = memory_request(prompt, previous, snapshot, first, last, max_tokens=self.max_tokens)
        messages = [m.to_openai() for m in prompt.messages]
        return [*messages, {"role": "user", "content": instruction}], [dict(t) for t in prompt.tools]

    async def summarize(
        self,
        previous: Summary | None,
        snapshot: Sequence[Message],
        first: int,
        last: int,
        prompt: SentPrompt | None = None,
    ) -> Summary:
        messages, tools = self.request(previous, snapshot, first, last, prompt)
        reply = await self._client.complete(messages, tools)  # ModelError on failure
        self.usage += reply.usage
        if reply.message.tool_calls:
            names = ", ".join(call.name for call in reply.message.tool_calls)
            raise ModelError(
                f"summary model {self.model!r} called a tool ({names}) instead of writing the summary"
            )
        text = reply.message.text.strip()
        if not text:
            raise ModelError(f"summary model {self.model!r} returned an empty reply")
        lo = min(previous.first, first) if previous is not None else first
        usage = reply.usage
        return Summary(
            lo, last, _stamped(lo, last, text), self.model, usage.prompt_tokens, usage.completion_tokens
        )


_SUMMARY_BREAKPOINTS: tuple[dict[str, Any], ...] = (
    {"location": "message", "role": "system"},
    {"location": "message", "index": -2},  # the agent's last message: where its own request wrote the cache
)
