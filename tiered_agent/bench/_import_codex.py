"""Codex CLI rollouts (``~/.codex/sessions/YYYY/MM/DD/rollout-*.jsonl``) -> :class:`RecordedRun`.

Current rollouts hold one ``{"timestamp", "type", "payload"}`` object per line:

- ``session_meta``: the session (``id``, ``cli_version``); its ``base_instructions`` text, when
  recorded, is the system message (``instructions`` repeats the user's AGENTS.md, which is
  also recorded as a user message, and is not used twice).
- ``turn_context``: the turn's settings; its ``model`` answers the turn's steps, and the first is
  the run's model (a run that switched models is priced and cached per step).
- ``response_item``: the Responses API items the model read or wrote. Input items: ``message``
  of role ``user`` (user message), ``developer``/``system`` (system message),
  ``function_call_output`` and ``custom_tool_call_output`` (tool messages answering
  ``call_id``; ``{content, success}`` objects and content-item lists give their text). Output
  items: ``message`` of role ``assistant`` (the step's text), ``reasoning`` (not replayed; its step is
  marked as one that reasoned, :attr:`RecordedRun.reasoning_steps`),
  ``function_call`` (``name``, JSON ``arguments``), ``custom_tool_call`` (raw ``input`` as the
  arguments, as the model wrote it), ``local_shell_call`` (tool ``local_shell``, its ``action``
  as arguments) and ``web_search_call`` (tool ``web_search``, answered by the provider, so
  without a tool message). Ghost snapshots and item types this reader does not know (a newer
  CLI's) are dropped.
- ``event_msg`` of type ``token_count``: ``info.last_token_usage`` is the usage of one response:
  ``prompt_tokens`` = ``input_tokens`` (OpenAI counts the cached part in it), ``cached_tokens`` =
  ``cached_input_tokens``, ``completion_tokens`` = ``output_tokens`` (reasoning tokens included).
  Counts that carry only the running ``total_token_usage`` give the difference to the previous
  total; a count whose payload is the usage itself (``input_tokens`` beside ``type``, no
  ``info``) is read as a ``last_token_usage``. A ``token_count`` whose ``total_token_usage``
  equals the previous one is a repeat and is ignored. Which response a count measures depends on
  the CLI version, and the rollout says which by its first count: current versions write it
  after the response's items (it measures the latest step), CLI 0.44 to 0.63 before them (it
  measures the next step: the count is held until that response's first item). Other events
  duplicate the items.
- ``compacted``: the agent replaced its history (``metadata["compactions"]``). The run restarts
  there (:attr:`RecordedRun.restarts`) with what Codex kept: the ``replacement_history``
  messages when recorded, else what Codex rebuilds, the system and developer messages and the
  user messages since the last restart (the latest of them within Codex's 20,000 tokens and at
  most 200 messages, the rest counted in ``metadata["compaction_cuts"]``), then the summary
  (``message``) as a user message. A remote compaction's ``compaction`` item (the provider's
  summary, encrypted) is kept as a marker naming its size: its text is not in the log, so the
  replay sends less than Codex did.
- ``event_msg`` of type ``thread_rolled_back``: the user rolled the last ``num_turns`` turns back
  (a turn opens at a user message Codex did not write itself: not its ``<environment_context>``
  or AGENTS.md text). As Codex does, the history loses them from that message on (from the first
  user message when there are fewer turns); their model calls are left out of the run and listed
  as one skipped input, ``<file>#rolled-back``, with the reason (``metadata["rolled_back_steps"]``).
- ``timestamp`` (every line): a step's request was sent at the latest input item before its
  response (the user's message, the tool outputs), else at the response's first item.

Each step's provider id (:attr:`RecordedRun.step_ids`): the first of its output items' ``id``
(older rollouts), a digest of its reasoning's ``encrypted_content``, or its first call's
``call_id``. A fork or resume that starts a new rollout with the old turns holds the same ids, and
the bench counts those calls once.

Steps: the output items from one input item (or ``token_count``) to the next are one model
response, so one step with all its tool calls (parallel calls included).

Older rollouts are flat: the first line is the session meta itself (``id``, ``timestamp``,
``instructions``, no ``type``), then the response items themselves, one per line, with
``{"record_type": "state"}`` lines in between; they record neither usage nor model. A flat
rollout with enveloped lines among its items is read line by line: its bare items as a flat
rollout's, its enveloped lines as the current format's (they were ignored, and the bare items
with them: a run of 0 steps).

No rollout records the tool schemas (``prompt_complete`` is False: the bench estimates the
missing prefix from the usage); they are derived from the calls. Damaged rollouts (lines
skipped by the loader): see ``_import_steps.py``.

Read-only for the dedup cache: ``read_file``, ``list_dir``, ``grep_files``, ``view_image``,
``web_search`` and names following the reader convention; ``shell``, ``exec_command``,
``apply_patch``, ``update_plan`` and the rest are not.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .._messages import Usage
from ._import_common import (
    ShapeError,
    SkippedRun,
    blocks_text,
    compact_json,
    count,
    dump_arguments,
    is_read_only,
    kind_of,
    parse_time,
)
from ._import_steps import HistoryBuilder
from ._recorded import RecordedRun

__all__ = ["FORMAT", "convert", "matches"]

FORMAT = "codex"
READ_ONLY_NAMES = frozenset({"read_file", "list_dir", "grep_files", "view_image", "web_search"})
ENVELOPE_TYPES = frozenset({"session_meta", "response_item", "turn_context", "event_msg", "compacted"})
ITEM_TYPES = frozenset(
    {
        "message", "reasoning", "function_call", "function_call_output", "custom_tool_call",
        "custom_tool_call_output", "local_shell_call", "web_search_call",
    }
)  # fmt: skip
_OUTPUT_CALLS = frozenset({"function_call", "custom_tool_call", "local_shell_call", "web_search_call"})
# What Codex keeps of the messages it rebuilds a compacted history from, in its approximate
# tokens (4 bytes each): codex-rs's COMPACT_USER_MESSAGE_MAX_TOKENS.
COMPACT_BUDGET = 20_000
# And at most this many of them (this reader's cap, not Codex's): each compaction copies what it keeps,
# so n short turns each compacted would make n squared messages (faults.md case 70); a person types
# far fewer messages than this into the 20,000 tokens.
COMPACT_MESSAGES = 200
_RESULTS = frozenset({"function_call_output", "custom_tool_call_output"})
# User messages Codex writes itself (not a turn the user opened): its context, the AGENTS.md text.
_CONTEXTUAL = ("<environment_context>", "<user_instructions>", "# AGENTS.md instructions")


def matches(records: list[Any]) -> bool:
    dicts = [r for r in records if isinstance(r, dict)]
    if len(dicts) != len(records) or not dicts:
        return False
    if any(_is_envelope(r) for r in dicts):
        return True
    # An older flat rollout: its session line first, then items; a record of a type this reader does
    # not know (a newer CLI's, a wrapper's) is ignored as in enveloped rollouts, not the whole file.
    return _flat_meta(dicts[0]) and any(kind_of(r) in ITEM_TYPES for r in dicts[1:])


def _is_envelope(record: dict[str, Any]) -> bool:
    return kind_of(record) in ENVELOPE_TYPES and isinstance(record.get("payload"), dict)


def _flat_meta(record: dict[str, Any]) -> bool:
    """The first line of an older rollout: the session itself (no ``type``)."""
    return (
        "type" not in record
        and "kind" not in record
        and {"id", "timestamp"} <= record.keys()
        and bool({"instructions", "git", "cli_version"} & record.keys())
    )


def read_only_tool(name: str) -> bool:
    return name in READ_ONLY_NAMES or is_read_only(name)


@dataclass
class _Rollout:
    """Conversion state: the history so far and what the log said about the session."""

    builder: HistoryBuilder
    responding: bool = False  # output items since the last input item or token_count
    models: list[str] = field(default_factory=list)
    meta: dict[str, Any] = field(default_factory=dict)
    last_total: Any = None
    compactions: int = 0
    unmatched_usage: int = 0
    # Where token counts sit: "before" the response they measure (CLI 0.44-0.63), or "after" it.
    order: Literal["unknown", "before", "after"] = "unknown"
    pending: Usage | None = None  # a count written before the response it measures
    since_restart: int = 0  # index of the first message of the agent's current history
    turns: list[int] = field(default_factory=list)  # indexes of the user messages that opened a turn
    rolled_back: int = 0  # model calls of turns the user rolled back (left out)
    compaction_cuts: int = 0  # messages a rebuilt history left out or cut (COMPACT_BUDGET)


def convert(
    records: list[dict[str, Any]], path: Path, damaged: tuple[int, ...] = ()
) -> list[RecordedRun | SkippedRun]:
    state = _Rollout(HistoryBuilder(damaged))
    # a flat rollout (its session line first, or no envelope at all) reads its bare items, and its
    # enveloped lines as such
    flat = (bool(records) and _flat_meta(records[0])) or not any(_is_envelope(r) for r in records)
    for index, record in enumerate(records):
        where = f"record {index + 1}"
        if _is_envelope(record):
            _envelope(state, record, where)
        elif not flat:
            continue
        elif index == 0 and _flat_meta(record):
            _session(state, record)
        elif record.get("record_type") is None:
            _item(state, record, where, None)
    if state.pending is not None:
        state.unmatched_usage += 1
    metadata = {
        "session_id": state.meta.get("id") if isinstance(state.meta.get("id"), str) else None,
        "cli_version": state.meta.get("cli_version")
        if isinstance(state.meta.get("cli_version"), str)
        else None,
        "usage_order": state.order if state.order != "unknown" else None,
    }
    counts = (
        ("compactions", state.compactions),
        ("unmatched_usage", state.unmatched_usage),
        ("rolled_back_steps", state.rolled_back),
        ("compaction_cuts", state.compaction_cuts),
    )
    metadata.update((key, value) for key, value in counts if value)
    run = state.builder.build(
        run_id=f"{FORMAT}/{path.name.removesuffix('.jsonl')}",
        source=str(path),
        fmt=FORMAT,
        tools=None,
        model=state.models[0] if state.models else None,
        metadata={k: v for k, v in metadata.items() if v is not None},
        read_only=read_only_tool,
        prompt_complete=False,
    )
    if not state.rolled_back:
        return [run]
    reason = (
        f"{FORMAT}: {state.rolled_back} model call{'s' * (state.rolled_back != 1)} of turns the user "
        "rolled back (thread_rolled_back) left out; the conversation that went on is replayed"
    )
    return [run, SkippedRun(f"{path}#rolled-back", reason)]


def _envelope(state: _Rollout, record: dict[str, Any], where: str) -> None:
    kind, payload = kind_of(record), record.get("payload")
    if not isinstance(payload, dict):
        return
    time = parse_time(record.get("timestamp"))
    if kind == "response_item":
        _item(state, payload, f"{where}.payload", time)
    elif kind == "event_msg" and kind_of(payload) == "token_count":
        _token_count(state, payload, f"{where}.payload")
    elif kind == "event_msg" and kind_of(payload) == "thread_rolled_back":
        _rollback(state, count(payload.get("num_turns")))
    elif kind == "turn_context" and isinstance(payload.get("model"), str):
        state.models.append(payload["model"])
    elif kind == "session_meta":
        _session(state, payload)
    elif kind == "compacted":
        _compacted(state, payload, time)


def _session(state: _Rollout, meta: dict[str, Any]) -> None:
    if state.meta:
        return
    state.meta = meta
    base = meta.get("base_instructions")
    text = blocks_text(base) if isinstance(base, dict | str) else ""
    if text:
        state.builder.context("system", text)


def _item(state: _Rollout, item: dict[str, Any], where: str, time: float | None) -> None:
    kind = kind_of(item)
    if kind == "message":
        _message(state, item, where, time)
    elif kind == "reasoning":
        _respond(state, time)
        state.builder.mark_reasoning()
        state.builder.set_step_id(_item_id(item))
    elif kind in _OUTPUT_CALLS:
        _respond(state, time)
        call = _call(item, where)
        state.builder.add_call(*call)
        state.builder.set_step_id(_item_id(item) or call[0])
    elif kind in _RESULTS:
        state.responding = False
        call_id = item.get("call_id")
        if not isinstance(call_id, str):
            raise ShapeError(f"{where}: {kind} without a call_id")
        state.builder.add_result(call_id, _output_text(item.get("output")), time=time)


def _respond(state: _Rollout, time: float | None) -> None:
    """An output item: part of the current response, or the first item of a new step."""
    if state.responding:
        return
    state.builder.start_step(time=time, model=state.models[-1] if state.models else None)
    state.responding = True
    if state.pending is not None:  # counted before its items (CLI 0.44-0.63)
        state.builder.set_usage(state.pending)
        state.pending = None


def _message(state: _Rollout, item: dict[str, Any], where: str, time: float | None) -> None:
    role, text = item.get("role"), blocks_text(item.get("content"))
    if role == "assistant":
        _respond(state, time)
        state.builder.add_text(text)
        state.builder.set_step_id(_item_id(item))
    elif role in ("user", "developer", "system"):
        state.responding = False
        if role == "user" and not text.lstrip().startswith(_CONTEXTUAL):
            state.turns.append(len(state.builder.messages))
        state.builder.context("user" if role == "user" else "system", text, time=time)
    else:
        raise ShapeError(f"{where}: message of unknown role {role!r}")


def _compacted(state: _Rollout, payload: dict[str, Any], time: float | None) -> None:
    """The agent replaced its history: restart from what it kept (see the module docstring)."""
    state.compactions += 1
    state.responding = False
    builder = state.builder
    replacement = payload.get("replacement_history")
    if isinstance(replacement, list):
        kept = [_kept(m) for m in replacement if kind_of(m) in ("message", "compaction")]
    else:
        kept = _rebuilt(state)
    summary = payload.get("message")
    if isinstance(summary, str) and summary and (not kept or kept[-1][1] != summary):
        kept.append(("user", summary))
    builder.restart()
    state.since_restart = len(builder.messages)
    state.turns = []
    for role, text in kept:
        if role in ("system", "developer", "user") and text:
            if role == "user" and not text.lstrip().startswith(_CONTEXTUAL):
                state.turns.append(len(builder.messages))
            builder.context("user" if role == "user" else "system", text, time=time)


def _rebuilt(state: _Rollout) -> list[tuple[Any, str]]:
    """What Codex rebuilds a history from when the log records no replacement: the system and user
    messages since the last restart, the latest of them within :data:`COMPACT_BUDGET` tokens (the
    one that crosses it cut to its head and tail) and :data:`COMPACT_MESSAGES` messages, older ones
    left out; those cut or left out are counted in ``metadata["compaction_cuts"]``. Without the
    caps a rollout of n compactions would hold n squared messages, each compaction keeping all
    the earlier ones (faults.md case 70)."""
    since = state.builder.messages[state.since_restart :]
    current = [(m.role, m.text) for m in since if m.role in ("system", "user") and m.text]
    floor, left, first = max(0, len(current) - COMPACT_MESSAGES), COMPACT_BUDGET, len(current)
    crossing = False
    while first > floor and not crossing:
        tokens = (len(current[first - 1][1].encode("utf-8", "replace")) + 3) // 4
        crossing = tokens > left
        if not crossing:
            left, first = left - tokens, first - 1
    if not first:
        return current
    state.compaction_cuts += first
    if not crossing or left <= 0:
        return current[first:]
    role, text = current[first - 1]
    half = 2 * left  # characters: a token is about 4 bytes, half of them from each end
    cut = f"{text[:half]}\n...{(len(text) - 2 * half + 3) // 4:,} tokens truncated...\n{text[-half:]}"
    return [(role, cut), *current[first:]]


def _kept(item: dict[str, Any]) -> tuple[Any, str]:
    """A replacement-history item as (role, text); the provider's encrypted summary (remote
    compaction, ``compaction`` items) as a marker of its size: its text is not in the log."""
    if kind_of(item) == "message":
        return item.get("role"), blocks_text(item.get("content"))
    size = len(item["encrypted_content"]) if isinstance(item.get("encrypted_content"), str) else 0
    return (
        "user",
        f"[compacted history: the provider's encrypted summary, {size:,} characters, not replayable]",
    )


def _rollback(state: _Rollout, turns: int) -> None:
    """The user rolled the last ``turns`` turns back: Codex drops its history from the user message
    that opened the first of them (from the first user message when there are fewer)."""
    if not turns or not state.turns:
        return
    first = len(state.turns) - turns if turns < len(state.turns) else 0  # ``turns`` ascends
    cut = state.turns[first]
    del state.turns[first:]  # the work is the turns rolled back, not all of them (faults.md case 68)
    state.rolled_back += state.builder.truncate(cut)
    state.responding = False


def _item_id(item: dict[str, Any]) -> str | None:
    """The provider's id of an output item: its ``id`` (``rs_``, ``msg_``, ``fc_``: older rollouts),
    else a digest of a reasoning item's encrypted content (the provider's, unique to the response)."""
    if isinstance(item.get("id"), str) and item["id"]:
        return str(item["id"])
    sealed = item.get("encrypted_content")
    if isinstance(sealed, str) and sealed:
        return "encrypted:" + hashlib.sha256(sealed.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return None


def _call(item: dict[str, Any], where: str) -> tuple[str | None, str, str]:
    kind = item["type"]
    call_id = item.get("call_id") or item.get("id")
    call_id = call_id if isinstance(call_id, str) and call_id else None
    if kind == "local_shell_call":
        return call_id, "local_shell", _json(item.get("action"))
    if kind == "web_search_call":
        return call_id, "web_search", _json(item.get("action"))
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise ShapeError(f"{where}: {kind} without a name")
    arguments = item.get("input") if kind == "custom_tool_call" else item.get("arguments")
    return call_id, name, arguments if isinstance(arguments, str) else _json(arguments)


def _json(value: Any) -> str:
    return dump_arguments(value) if isinstance(value, dict) else compact_json(value, "arguments")


def _output_text(output: Any) -> str:
    """A tool output as the model read it: a string, ``{content, success}`` or content items."""
    if isinstance(output, dict) and "content" in output:
        return blocks_text(output["content"])
    return blocks_text(output)


def _token_count(state: _Rollout, payload: dict[str, Any], where: str) -> None:
    info = payload.get("info")
    if not isinstance(info, dict) and "input_tokens" in payload:
        info = {"last_token_usage": payload}  # older CLIs: the usage itself, not wrapped in info
    if not isinstance(info, dict):
        return
    last, total = info.get("last_token_usage"), info.get("total_token_usage")
    if total is not None and total == state.last_total:
        return  # the same count re-emitted
    previous, state.last_total = state.last_total, total
    if isinstance(last, dict):
        raw = last
    elif isinstance(total, dict):  # only the running total: this response is the difference
        raw = _difference(total, previous)
    else:
        return
    state.responding = False
    _attach(state, _usage(raw))


def _attach(state: _Rollout, usage: Usage) -> None:
    """Give a count to the response it measures (see the module docstring: the first count decides)."""
    builder = state.builder
    if state.order == "unknown":
        state.order = "after" if builder.step and builder.usage[-1] is None else "before"
    if state.order == "before":
        if state.pending is not None:
            state.unmatched_usage += 1
        state.pending = usage
    elif builder.step and builder.usage[-1] is None:
        builder.set_usage(usage)
    else:
        state.unmatched_usage += 1


def _difference(total: dict[str, Any], previous: Any) -> dict[str, Any]:
    if not isinstance(previous, dict):
        return total
    return {key: count(value) - count(previous.get(key)) for key, value in total.items()}


def _usage(raw: dict[str, Any]) -> Usage:
    """One response's usage; counts that are not whole non-negative numbers count as 0."""
    prompt = count(raw.get("input_tokens"))
    return Usage(
        prompt_tokens=prompt,
        completion_tokens=count(raw.get("output_tokens")),
        cached_tokens=min(count(raw.get("cached_input_tokens")), prompt),
        requests=1,
    )
