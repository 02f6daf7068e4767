"""ContextSession: a policy for code that owns its own loop (a framework, an application).

The agent loop hands :class:`~._manager.ContextManager` a history of iteration-tagged
:class:`~tiered_agent._messages.Message` objects; a framework holds OpenAI-style chat messages
(or its own types, which an adapter turns into them). A session sits between the two, and drives
the same manager, so the same steps, dedup rules, retrieval and counts apply:

- :meth:`ContextSession.prepare` takes the messages as the framework would send them, derives the
  iterations (0: what comes before the first assistant message; each assistant message starts
  the next one, and the tool results and user messages after it belong to it), keeps the history
  append-only across calls (a history the framework rewrote starts the policy afresh), and
  returns the lean request (:class:`LeanRequest`): the messages to send instead, the tool schemas with
  ``context_retrieve``'s once something is hidden, the token counts of both;
- :meth:`ContextSession.run_tool` runs one tool call through the dispatch (an identical read-only
  call of an earlier reply is answered from the cache); tool results the session did not run are
  observed when the next :meth:`~ContextSession.prepare` sees them, so repeated outputs still
  become pointers;
- :meth:`ContextSession.retrieve` answers a ``context_retrieve`` call from the full history;
- :attr:`ContextSession.usage` says what the lean requests spared (:class:`SessionUsage`).

Fail open: a history the session cannot read (an unknown role, a malformed tool call) is sent as
given, counted in :attr:`SessionUsage.unmanaged` and logged; a step that raises is skipped as in
the agent loop (:attr:`SessionUsage.step_errors`). The framework's own history is never changed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

import orjson
import structlog

from .._messages import Message, ToolCall, shared_prefix
from .._tokens import TokenCounter
from .._tools import ToolOutcome, ToolSet
from .._trace import ContextRecord, Event, RetrievalEvent, redact
from ._dispatch import ToolKind
from ._manager import ContextManager, PreparedPrompt
from ._names import RETRIEVE_TOOL_NAME
from ._policy import Policy
from ._presets import as_policy
from .summary._summarizer import Summarizer

__all__ = ["RETRIEVE_TOOL_NAME", "ContextSession", "LeanRequest", "SessionUsage"]

log = structlog.get_logger(__name__)

T = TypeVar("T")

_ROLES = {"developer": "system"}  # OpenAI's newer name for the system role


@dataclass(frozen=True, slots=True)
class LeanRequest:
    """What to send instead of the full history.

    ``messages`` are OpenAI chat messages; one the policy left unchanged is the caller's own
    mapping (content parts and extra keys intact). ``sources[i]`` is the index, in the messages
    given to :meth:`ContextSession.prepare`, of the message ``messages[i]`` stands for (None: a
    message the policy added, such as a summary or the note on left-out iterations), and
    ``unchanged[i]`` whether it is sent exactly as given. ``tools`` are the schemas to send:
    those given, plus ``context_retrieve``'s once the policy hid something (``retrieval``).
    ``prompt_tokens`` counts this request, ``full_history_tokens`` the same request with the full
    history (and without ``context_retrieve``), both with the session's token counter.
    """

    messages: tuple[Mapping[str, Any], ...]
    tools: tuple[Mapping[str, Any], ...]
    sources: tuple[int | None, ...]
    unchanged: tuple[bool, ...]
    prompt_tokens: int
    full_history_tokens: int
    retrieval: bool = False
    record: ContextRecord = dataclasses.field(default_factory=ContextRecord)

    @property
    def saved_tokens(self) -> int:
        return max(0, self.full_history_tokens - self.prompt_tokens)


@dataclass(frozen=True, slots=True)
class SessionUsage:
    """What the session's requests cost and spared, summed over its :meth:`~ContextSession.prepare` calls."""

    requests: int = 0
    prompt_tokens: int = 0  # the lean requests
    full_history_tokens: int = 0  # the same requests with the full history
    last_prompt_tokens: int = 0
    last_full_history_tokens: int = 0
    dedup_hits: int = 0  # tool calls answered from the cache instead of run
    retrievals: int = 0  # context_retrieve calls answered
    step_errors: int = 0  # steps that raised and were skipped (fail open)
    unmanaged: int = 0  # requests sent as given because the session could not read them

    @property
    def saved_tokens(self) -> int:
        return max(0, self.full_history_tokens - self.prompt_tokens)

    @property
    def saved_share(self) -> float:
        """The share of the full-history tokens the lean requests did not send (0 before any)."""
        return self.saved_tokens / self.full_history_tokens if self.full_history_tokens else 0.0

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["saved_tokens"] = self.saved_tokens
        out["saved_share"] = round(self.saved_share, 4)
        return out


class ContextSession:
    """A context policy over a history someone else keeps (see the module docstring).

    ``read_only_tools`` names the tools whose identical calls may be answered from the cache (and
    whose repeated outputs are shown as pointers). ``model`` (a litellm name) picks the tokenizer
    and the cache and price terms aging decides by; ``context_window`` lets ``Compact`` compact
    before the window fills. Summaries are written inline (``background=False``), so a session
    needs no ``async with``: it can live inside any framework's run. Not safe to share between
    concurrent runs: one session per run (or per conversation).
    """

    def __init__(
        self,
        policy: Policy | str = "tiered",
        *,
        model: str | None = None,
        read_only_tools: Iterable[str] = (),
        context_window: int | None = None,
        summarizer: Summarizer | None = None,
        counter: TokenCounter | None = None,
    ) -> None:
        self.policy = as_policy(policy)
        self.counter = counter or (TokenCounter.for_model(model) if model else TokenCounter())
        self.read_only_tools = frozenset(read_only_tools)
        self._settings = (context_window, summarizer, model)
        self.manager = self._start()
        self._history: list[Message] = []
        self._handled: set[str] = set()  # tool call ids run or observed already
        self._errors: set[str] = set()  # tool call ids whose result was an error
        self._retrieval = ToolSet(self.manager.tools(lambda: self._history))
        self._usage = SessionUsage()
        self._retrievals = 0
        self._carried = (0, 0)  # dedup hits and step errors of the managers before a restart

    def _start(self) -> ContextManager:
        context_window, summarizer, model = self._settings
        return ContextManager(
            self.policy,
            counter=self.counter,
            context_window=context_window,
            summarizer=summarizer,
            background=False,
            enforce_hard_limit=False,
            on_event=self._event,
            model=model,
        )

    def _restart(self) -> None:
        """A history the framework rewrote (its own compaction, a trimmed session) starts the
        policy afresh: the iterations are numbered anew, so no step's state (the dedup cache, the
        aging schedule, the summaries) would still name the right messages."""
        old = self.manager
        self._carried = (self._carried[0] + old.dedup_hits, self._carried[1] + len(old.step_errors))
        self.manager = self._start()
        self._retrieval = ToolSet(self.manager.tools(lambda: self._history))
        self._handled.clear()
        log.info("context.session_restarted", messages=len(self._history))

    # ------------------------------------------------------------------ public
    @property
    def usage(self) -> SessionUsage:
        hits, errors = self._carried
        return dataclasses.replace(
            self._usage,
            dedup_hits=hits + self.manager.dedup_hits,
            retrievals=self._retrievals,
            step_errors=errors + len(self.manager.step_errors),
        )

    @property
    def history(self) -> tuple[Message, ...]:
        """The full history as the session read it (iteration-tagged), the retrieval's source."""
        return tuple(self._history)

    @property
    def retrieve_schema(self) -> dict[str, Any] | None:
        """``context_retrieve``'s OpenAI tool schema (None: the policy hides nothing, so it has none)."""
        tool = self._retrieval.get(RETRIEVE_TOOL_NAME)
        return tool.schema() if tool is not None else None

    async def prepare(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]] = ()
    ) -> LeanRequest:
        """The lean request for ``messages`` (the full history, as the framework would send it) and
        the framework's tool schemas (a ``context_retrieve`` schema among them is replaced by ours)."""
        try:
            await self._sync(messages)
            offered = [t for t in tools if _tool_name(t) != RETRIEVE_TOOL_NAME]
            schema = self.retrieve_schema
            prepared = await self.manager.prepare(self._history, [*offered, *([schema] if schema else [])])
            request = self._lean(messages, prepared)
        except Exception as exc:  # fail open: the request goes as the framework built it
            return self._unmanaged(messages, tools, exc)
        self._usage = dataclasses.replace(
            self._usage,
            requests=self._usage.requests + 1,
            prompt_tokens=self._usage.prompt_tokens + request.prompt_tokens,
            full_history_tokens=self._usage.full_history_tokens + request.full_history_tokens,
            last_prompt_tokens=request.prompt_tokens,
            last_full_history_tokens=request.full_history_tokens,
        )
        return request

    async def retrieve(self, arguments: Mapping[str, Any] | str, *, call_id: str = "") -> str:
        """The answer to a ``context_retrieve`` call (arguments as a mapping or JSON text). A mistake
        in the arguments is answered as text for the model, never raised."""
        raw = arguments if isinstance(arguments, str) else _json(arguments)
        outcome = await self._retrieval.execute(ToolCall(call_id or "retrieve", RETRIEVE_TOOL_NAME, raw))
        return outcome.content

    async def run_tool(
        self,
        name: str,
        arguments: Mapping[str, Any] | str,
        call_id: str,
        execute: Callable[[], Awaitable[T]],
        *,
        describe: Callable[[T], tuple[str, bool]] | None = None,
    ) -> T | str:
        """Run one tool call of the reply to the last prepared request through the dispatch: an
        identical read-only call of an earlier reply is answered from the cache (the text the
        model sees: the earlier output, marked), else ``execute()`` runs and its result is
        returned as is. ``describe(result)`` gives its text and whether it is an error (an error
        is never remembered); by default a string is the text, anything else its JSON, and no
        result is an error. An exception from ``execute`` propagates, and that call is not
        remembered."""
        raw = arguments if isinstance(arguments, str) else _json(arguments)
        call = ToolCall(call_id, name, raw)
        produced: list[T] = []

        async def run(indexes: Sequence[int]) -> list[ToolOutcome]:
            try:
                value = await execute()
            except BaseException:
                self._errors.add(call_id)
                raise
            produced.append(value)
            text, error = describe(value) if describe is not None else (_text(value), False)
            return [ToolOutcome(content=text, is_error=error)]

        self._handled.add(call_id)
        iteration = self._next_iteration()
        (result,) = await self.manager.dispatch([call], self._kind, run, iteration=iteration)
        return produced[0] if produced else result.outcome.content

    # ------------------------------------------------------------------ history
    async def _sync(self, messages: Sequence[Mapping[str, Any]]) -> None:
        """Read ``messages`` into the append-only history; observe the tool results not run here."""
        converted = _convert(messages)
        history = self._history
        shared = shared_prefix(history, converted)
        if shared == len(history):
            history.extend(converted[shared:])
        else:  # the framework rewrote its history: take it whole, and start over
            self._history = history = converted
            self._restart()
            shared = 0
        for index in range(shared, len(messages)):
            if messages[index].get("is_error") and history[index].tool_call_id:
                self._errors.add(history[index].tool_call_id or "")
        await self._observe(history[shared:])

    async def _observe(self, added: Sequence[Message]) -> None:
        """Tool results that ran outside the session, one batch per iteration, in call order."""
        calls = {call.id: call for message in self._history for call in message.tool_calls}
        batches: dict[int, list[tuple[ToolCall, ToolOutcome]]] = {}
        for message in added:
            call_id = message.tool_call_id
            if message.role != "tool" or not call_id or call_id in self._handled:
                continue
            self._handled.add(call_id)
            call = calls.get(call_id) or ToolCall(call_id, message.name or "", "{}")
            outcome = ToolOutcome(content=message.text, is_error=call_id in self._errors)
            batches.setdefault(message.iteration, []).append((call, outcome))
        for iteration, pairs in batches.items():
            calls_made = [call for call, _ in pairs]
            outcomes = [outcome for _, outcome in pairs]
            await self.manager.observe(calls_made, self._kind, outcomes, iteration=iteration)

    def _kind(self, call: ToolCall) -> ToolKind:
        internal = call.name == RETRIEVE_TOOL_NAME
        return ToolKind(read_only=internal or call.name in self.read_only_tools, internal=internal)

    def _next_iteration(self) -> int:
        """The iteration of the reply to the last prepared request (the newest assistant message's
        own, once the framework has added it to what the session saw)."""
        return max((m.iteration for m in self._history[-1:]), default=0) + 1

    # ------------------------------------------------------------------ requests
    def _lean(self, messages: Sequence[Mapping[str, Any]], prepared: PreparedPrompt) -> LeanRequest:
        positions = {id(message): index for index, message in enumerate(self._history)}
        by_call = _call_positions(self._history)
        out: list[Mapping[str, Any]] = []
        sources: list[int | None] = []
        unchanged: list[bool] = []
        for message in prepared.built.messages:
            index = positions.get(id(message))
            same = index is not None
            if index is None:
                index = _source(message, by_call)
            out.append(messages[index] if same and index is not None else message.to_openai())
            sources.append(index)
            unchanged.append(same)
        return LeanRequest(
            messages=tuple(out),
            tools=tuple(prepared.tools),
            sources=tuple(sources),
            unchanged=tuple(unchanged),
            prompt_tokens=prepared.prompt_tokens,
            full_history_tokens=prepared.counterfactual_tokens,
            retrieval=any(_tool_name(t) == RETRIEVE_TOOL_NAME for t in prepared.tools),
            record=prepared.record(),
        )

    def _unmanaged(
        self, messages: Sequence[Mapping[str, Any]], tools: Sequence[Mapping[str, Any]], exc: Exception
    ) -> LeanRequest:
        log.warning("context.session_unmanaged", error=redact(f"{type(exc).__name__}: {str(exc)[:300]}"))
        try:
            tokens = self.counter.count_prompt(messages, tools)
        except Exception:  # a message the counter cannot read either: no count for this request
            log.warning("context.session_uncounted", messages=len(messages))
            tokens = 0
        self._usage = dataclasses.replace(self._usage, unmanaged=self._usage.unmanaged + 1)
        count = len(messages)
        return LeanRequest(
            tuple(messages), tuple(tools), tuple(range(count)), (True,) * count, tokens, tokens
        )

    def _event(self, event: Event) -> None:
        if isinstance(event, RetrievalEvent):
            self._retrievals += 1


# --------------------------------------------------------------------------- helpers
def _convert(messages: Sequence[Mapping[str, Any]]) -> list[Message]:
    """Iteration-tagged messages; ValueError naming the message that cannot be read."""
    out: list[Message] = []
    iteration = 0
    for index, given in enumerate(messages):
        if not isinstance(given, Mapping):
            raise ValueError(f"message {index} is {type(given).__name__}, not a mapping")
        role = given.get("role")
        data = {**given, "role": _ROLES[role]} if isinstance(role, str) and role in _ROLES else given
        if data.get("role") == "assistant":
            iteration += 1
        try:
            out.append(Message.from_openai(data, iteration=iteration))
        except ValueError as exc:
            raise ValueError(f"message {index}: {exc}") from None
    return out


def _call_positions(history: Sequence[Message]) -> dict[tuple[str, str], int]:
    """(role, tool call id) -> the position of the tool result or of the assistant message that made it."""
    found: dict[tuple[str, str], int] = {}
    for index, message in enumerate(history):
        if message.role == "tool" and message.tool_call_id:
            found.setdefault(("tool", message.tool_call_id), index)
        for call in message.tool_calls:
            found.setdefault(("assistant", call.id), index)
    return found


def _source(message: Message, by_call: Mapping[tuple[str, str], int]) -> int | None:
    """The history position a rewritten message stands for (None: the policy added it)."""
    if message.role == "tool" and message.tool_call_id:
        return by_call.get(("tool", message.tool_call_id))
    if message.role == "assistant" and message.tool_calls:
        return by_call.get(("assistant", message.tool_calls[0].id))
    return None


def _tool_name(schema: Mapping[str, Any]) -> str | None:
    function = schema.get("function")
    name = function.get("name") if isinstance(function, Mapping) else schema.get("name")
    return name if isinstance(name, str) else None


def _json(value: Any) -> str:
    return orjson.dumps(value, default=str, option=orjson.OPT_SORT_KEYS).decode()


def _text(value: object) -> str:
    if isinstance(value, str):
        return value
    try:
        return _json(value)
    except TypeError:
        return str(value)
