"""A recorded agent run, normalized into the runtime's message model."""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from .._messages import Message, ToolCall, Usage

__all__ = ["RecordedRun", "Segment"]


@dataclass(frozen=True, slots=True)
class Segment:
    """A stretch of a run between two of the agent's own compactions: what its model calls built on.

    ``messages`` are renumbered as a conversation of their own: iteration 0 is what the agent
    kept (its summary; for the first segment, the run's system prompt and task), then one
    iteration per model call. Local iteration ``i >= 1`` is the run's iteration ``i + offset``
    (and model call ``i + offset``).
    """

    offset: int
    messages: tuple[Message, ...]

    def run_iteration(self, local: int) -> int:
        return local + self.offset


@dataclass(frozen=True, slots=True)
class RecordedRun:
    """One recorded run, whatever its source format.

    ``messages`` is the full history in the runtime's model: iteration 0 holds
    the system prompt and the task; iteration ``k`` holds the ``k``-th
    assistant message (its action as a tool call) and the observations that
    answered it (tool messages, or user messages for a simulated customer).
    ``usage[k - 1]`` is the provider usage recorded for step ``k``, or None;
    ``routes[k - 1]`` the endpoint that served step ``k`` where a router
    recorded it (OpenRouter's ``provider``: ``"Google"``, ``"Google AI
    Studio"``), or None. Each endpoint has its own prompt cache.

    What the log recorded about time and the agent's own context management
    (empty tuples: not recorded):

    - ``timestamps[k - 1]``: when step ``k``'s request was sent (POSIX seconds; the
      log's timestamp of the last entry before the response), or None;
    - ``cache_writes_1h[k - 1]``: the part of step ``k``'s ``cache_write_tokens`` written
      with a 1-hour time to live (Anthropic's ``ephemeral_1h_input_tokens``); the rest
      was written with the 5-minute one;
    - ``restarts``: message indexes where the agent replaced its history (a recorded
      compaction): from index ``i`` on, the messages from ``i`` are all the agent kept
      (its summary first), up to the next restart;
    - ``reasoning_steps``: the model calls (1-based) whose response held reasoning items (a
      reasoning model's hidden thinking, recorded as such by Codex): providers drop the reasoning
      of earlier turns at the next user message, which changes the prompt they cache;
    - ``step_models[k - 1]``: the model that answered step ``k``, recorded only for a run that
      switched models (a slash command or skill run on another model, ``/model`` mid-session):
      each model has its own prices and its own prompt cache;
    - ``step_billing[k - 1]``: the billing modifiers of step ``k`` (``""``: none; ``"fast"``:
      Anthropic's fast mode; ``"us"``: US-only inference; ``"fast+us"``: both), recorded only for a
      run with at least one: each multiplies the step's prices, and fast mode has its own cache;
    - ``prompt_complete``: False when the log does not hold everything the model was
      sent (Claude Code and Codex record neither the tool schemas nor, for Claude Code,
      the system prompt); the bench then estimates the missing prefix from the usage.

    The same model call in two files (a history copied on resume, a fork, a backup):

    - ``step_ids[k - 1]``: an id the provider gave model call ``k``, where the log records one
      (Claude Code: ``message.id``, else ``requestId``, else its first ``tool_use`` id; Codex:
      a response item's ``id``, else a digest of its reasoning's encrypted content, else its first
      call's ``call_id``), or None. Two runs holding the same id hold the same call;
    - ``counted_from``: the leading model calls the reader found in runs read before this one
      (``_importers.py``). They are replayed, so that every policy builds its state as in a live
      resume, but not counted: steps ``1..counted_from`` leave no metrics, usage or cache state
      (:meth:`counted_usage`). ``0 <= counted_from < steps``.

    A tool call is read-only (its result may be served by the dedup cache) when
    its tool is in ``read_only_tools``, or when the call itself is in
    ``read_only_calls`` (call ids: a read-only command of a tool that can also
    write, such as a file editor's ``view``); :meth:`is_read_only` decides.
    """

    run_id: str
    source: str
    # "mini-swe-agent" | "swe-agent" | "tau-bench" | "openhands" | "claude-code" | "codex" | "tiered-agent"
    format: str
    messages: tuple[Message, ...]
    tools: tuple[dict[str, Any], ...] = ()
    read_only_tools: frozenset[str] = frozenset()
    usage: tuple[Usage | None, ...] = ()
    model: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    read_only_calls: frozenset[str] = frozenset()
    routes: tuple[str | None, ...] = ()
    timestamps: tuple[float | None, ...] = ()
    cache_writes_1h: tuple[int, ...] = ()
    restarts: tuple[int, ...] = ()
    prompt_complete: bool = True
    reasoning_steps: frozenset[int] = frozenset()
    step_models: tuple[str, ...] = ()
    step_ids: tuple[str | None, ...] = ()
    counted_from: int = 0
    step_billing: tuple[str, ...] = ()

    @property
    def steps(self) -> int:
        """Number of model calls (assistant messages) in the run."""
        return sum(1 for m in self.messages if m.role == "assistant")

    @property
    def task(self) -> str:
        return next((m.text for m in self.messages if m.role == "user"), "")

    def route(self, step: int) -> str | None:
        """The endpoint that served model call ``step`` (1-based), if recorded."""
        return self.routes[step - 1] if 0 < step <= len(self.routes) else None

    def time(self, step: int) -> float | None:
        """When model call ``step`` (1-based) was sent, if recorded (POSIX seconds)."""
        return self.timestamps[step - 1] if 0 < step <= len(self.timestamps) else None

    def model_at(self, step: int) -> str | None:
        """The model that answered call ``step`` (1-based) when the run switched models; None when it
        used one (:attr:`model`)."""
        return self.step_models[step - 1] if 0 < step <= len(self.step_models) else None

    def step_id(self, step: int) -> str | None:
        """The provider's id of model call ``step`` (1-based), if recorded."""
        return self.step_ids[step - 1] if 0 < step <= len(self.step_ids) else None

    def counted_usage(self) -> tuple[Usage | None, ...]:
        """:attr:`usage` as the bench counts it: None for the steps up to :attr:`counted_from`
        (calls counted in a run read before this one)."""
        if not self.counted_from:
            return self.usage
        return (None,) * min(self.counted_from, len(self.usage)) + self.usage[self.counted_from :]

    def billing_at(self, step: int) -> tuple[str, ...]:
        """The billing modifiers of call ``step`` (1-based): ``("fast", "us")``, or none."""
        tier = self.step_billing[step - 1] if 0 < step <= len(self.step_billing) else ""
        return tuple(tier.split("+")) if tier else ()

    def cache_partition(self, step: int) -> str | None:
        """Which prompt cache call ``step`` reads and writes: its model's (in a run that switched
        models), and fast mode's own (the speed is part of the provider's cache key); None: the
        run's one cache."""
        model = self.model_at(step)
        if "fast" not in self.billing_at(step):
            return model
        return f"{model or self.model or ''} fast"

    def writes_1h(self, step: int) -> int:
        """The tokens model call ``step`` wrote to the cache with a 1-hour time to live."""
        return self.cache_writes_1h[step - 1] if 0 < step <= len(self.cache_writes_1h) else 0

    def turns_after_reasoning(self) -> frozenset[int]:
        """The model calls that open a user turn after a turn with a call that reasoned (the turns:
        the stretches of calls between the run's user messages)."""
        if not self.reasoning_steps:
            return frozenset()
        out: set[int] = set()
        step, reasoned, pending = 0, False, False
        for message in self.messages:
            if message.role == "user":
                pending = True
            elif message.role == "assistant":
                step += 1
                if pending and step > 1:
                    if reasoned:
                        out.add(step)
                    reasoned = False
                pending = False
                reasoned = reasoned or step in self.reasoning_steps
        return frozenset(out)

    def is_read_only(self, call: ToolCall) -> bool:
        """Whether ``call`` only reads: its tool always does, or this call's command does."""
        return call.name in self.read_only_tools or call.id in self.read_only_calls

    def segments(self) -> tuple[Segment, ...]:
        """The run split at its :attr:`restarts` (one segment, the messages as they are, without any)."""
        bounds = [0, *(r for r in self.restarts if 0 < r < len(self.messages)), len(self.messages)]
        out = []
        for start, end in itertools.pairwise(bounds):
            part = self.messages[start:end]
            if not part:
                continue
            offset = part[0].iteration if start else 0
            renumbered = part if not offset else tuple(_shifted(m, offset) for m in part)
            out.append(Segment(offset, renumbered))
        return tuple(out)

    def recording(self) -> dict[str, Any]:
        """The timing and context-management fields as plain JSON (for the trace round trip;
        empty when there are none): :meth:`with_recording` reads it back."""
        out: dict[str, Any] = {}
        if self.timestamps:
            out["timestamps"] = list(self.timestamps)
        if self.cache_writes_1h:
            out["cache_writes_1h"] = list(self.cache_writes_1h)
        if self.restarts:
            out["restarts"] = list(self.restarts)
        if not self.prompt_complete:
            out["prompt_complete"] = False
        if self.reasoning_steps:
            out["reasoning_steps"] = sorted(self.reasoning_steps)
        if self.step_models:
            out["step_models"] = list(self.step_models)
        if any(i is not None for i in self.step_ids):
            out["step_ids"] = list(self.step_ids)
        if self.counted_from:
            out["counted_from"] = self.counted_from
        if self.step_billing:
            out["step_billing"] = list(self.step_billing)
        return out

    def with_recording(self, recording: Any) -> RecordedRun:
        """This run with the fields :meth:`recording` wrote; values of the wrong shape are ignored."""
        if not isinstance(recording, Mapping):
            return self
        steps = self.steps
        return dataclasses.replace(
            self,
            timestamps=_per_step(recording.get("timestamps"), steps, _time) or self.timestamps,
            cache_writes_1h=_per_step(recording.get("cache_writes_1h"), steps, _count)
            or self.cache_writes_1h,
            restarts=_restarts(recording.get("restarts"), len(self.messages)) or self.restarts,
            prompt_complete=recording.get("prompt_complete") is not False and self.prompt_complete,
            reasoning_steps=_steps(recording.get("reasoning_steps"), steps) or self.reasoning_steps,
            step_models=_models(recording.get("step_models"), steps) or self.step_models,
            step_ids=_ids(recording.get("step_ids"), steps) or self.step_ids,
            counted_from=_below(recording.get("counted_from"), steps) or self.counted_from,
            step_billing=_billing(recording.get("step_billing"), steps) or self.step_billing,
        )


def _shifted(message: Message, offset: int) -> Message:
    return dataclasses.replace(message, iteration=max(message.iteration - offset, 0))


def _time(value: Any) -> float | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)
    return float(value) if ok else None


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def _per_step(values: Any, steps: int, read: Any) -> tuple[Any, ...]:
    if not isinstance(values, Sequence) or isinstance(values, str) or len(values) != steps:
        return ()
    return tuple(read(v) for v in values)


def _models(values: Any, steps: int) -> tuple[str, ...]:
    """Per step, a model name: all of them strings, one per step (else none)."""
    models = _per_step(values, steps, lambda v: v if isinstance(v, str) and v else None)
    return models if models and None not in models else ()


def _ids(values: Any, steps: int) -> tuple[str | None, ...]:
    """Per step, an id or None (one per step, else none)."""
    return _per_step(values, steps, lambda v: v if isinstance(v, str) and v else None)


def _below(value: Any, steps: int) -> int:
    """A count of leading steps that leaves at least one step (else 0)."""
    return value if isinstance(value, int) and not isinstance(value, bool) and 0 < value < steps else 0


def _steps(values: Any, steps: int) -> frozenset[int]:
    if not isinstance(values, Sequence) or isinstance(values, str):
        return frozenset()
    return frozenset(v for v in values if isinstance(v, int) and not isinstance(v, bool) and 0 < v <= steps)


def _restarts(values: Any, messages: int) -> tuple[int, ...]:
    if not isinstance(values, Sequence) or isinstance(values, str):
        return ()
    found = {v for v in values if isinstance(v, int) and not isinstance(v, bool) and 0 < v < messages}
    return tuple(sorted(found))


def _billing(values: Any, steps: int) -> tuple[str, ...]:
    """Per step, its billing modifiers (``""``, ``"fast"``, ``"fast+us"``): strings, one per step,
    at least one not empty (else none)."""
    tiers = _per_step(values, steps, lambda v: v if isinstance(v, str) else None)
    return tiers if tiers and None not in tiers and any(tiers) else ()
