"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``) -> :class:`RecordedRun` s.

One JSON entry per line, by ``type``:

- ``assistant``: one content block of a model response. Claude Code writes one API response
  as several entries sharing ``message.id``; they are merged into ONE step: ``text`` blocks
  become the assistant text, ``tool_use`` blocks its tool calls (``input`` as JSON arguments),
  ``thinking`` and ``redacted_thinking`` blocks are not replayed; a tool the API ran inside the
  response (``server_tool_use``, ``web_search_tool_result`` and other ``*_tool_result`` blocks)
  is replayed as text (its input; the result's titles and URLs: encrypted page content is not in
  the log). ``message.model`` is the model that answered the step; the first is the run's
  model, and a session that switched models (a slash command or skill run on another model,
  ``/model``) is priced and cached per step (:attr:`RecordedRun.step_models`).
  ``message.usage`` is the step's usage: ``prompt_tokens`` = ``input_tokens`` +
  ``cache_read_input_tokens`` + ``cache_creation_input_tokens``, ``cached_tokens`` = the cache
  read, ``cache_write_tokens`` = the cache creation, ``completion_tokens`` = ``output_tokens``
  (each the largest value among the response's entries, which repeat it), ``cost`` = the
  entry's ``costUSD`` where older versions record it. ``usage.cache_creation`` splits the
  writes by lifetime: ``ephemeral_1h_input_tokens`` were written with the 1-hour time to live
  (:attr:`RecordedRun.cache_writes_1h`), the rest with the 5-minute one. ``usage.speed``
  ``"fast"`` (fast mode) and ``usage.inference_geo`` ``"us"`` (US-only inference) are the step's
  billing modifiers (:attr:`RecordedRun.step_billing`): each multiplies its prices, and fast mode
  has its own prompt cache; ``"standard"``, ``"global"`` and empty values are none.
- ``message.id`` (else the entry's ``requestId``, else the response's first ``tool_use`` id) is the
  step's provider id (:attr:`RecordedRun.step_ids`): a history copied into another file (an older
  CLI's ``--resume``, a fork, a backup) holds the same ids, and the bench counts such calls once.
- ``timestamp`` (every entry): a step's request was sent at the latest entry before its
  response (the tool results or the user's prompt), else at the response's first entry.
- ``user``: the user's prompt (a string, or ``text``/``image``/``document`` blocks; an image is
  ``[image]``, an attached PDF ``[document]``) or tool results (``tool_result`` blocks: tool
  messages answering ``tool_use_id``; text written with them, such as a message the user queued
  while the tool ran, is a user message after them).
- ``summary``, ``system``, ``progress``, ``file-history-snapshot``, ``queue-operation`` ...:
  never sent to the model as such; ignored, except the ``compact_boundary`` system entry: Claude
  Code compacted the conversation there, and the next user entry (``isCompactSummary``) is the
  summary it continued from. The run restarts its history there (:attr:`RecordedRun.restarts`):
  the summary and what follows is all the agent sent from then on (``metadata["compactions"]``
  counts them). ``microcompact_boundary`` entries (older tool results cleared in place) are
  counted in ``metadata["microcompactions"]`` but not followed.

Entries are read in file order, along the path the requests sent (``_import_claude_paths.py``:
the ``parentUuid`` tree): a cleared context (a new root mid-file: a plan accepted with "clear
context") restarts the history like a compaction (``metadata["context_resets"]``); a branch
the user rewound (``/rewind``, Esc Esc) and a prompt no later request sent are left out
(``metadata["off_path_entries"]``), and the model calls among them are listed as one skipped
input, ``<file>#rewound``, with the reason (``metadata["rewound_steps"]``). Without a tree to
trust (no ``parentUuid``, a chain that leaves the file) the file order stands.
An entry repeated (the same ``uuid`` and ``message``) is read once, and so is a response: an
assistant entry whose ``message.id`` an earlier step closed (written again under another
``uuid``) is dropped, not a second step with the same usage.
Assistant entries of model ``<synthetic>`` (notices Claude Code writes itself, such as API
errors) are no model call and are dropped (``metadata["synthetic_messages"]``).

Subagents: entries with ``isSidechain`` true are a subagent's own conversation, not part of
the main one. Each subagent thread (entries linked by ``parentUuid``) becomes a run of its own,
``claude-code/<session>/agent-<agentId>`` (or ``sidechain-<n>``), whether it is inline (older
versions) or in ``<session>/subagents/agent-*.jsonl``; a thread follows the chain whatever the
order of its lines.

The logs hold neither the system prompt nor the tool schemas (``prompt_complete`` is False:
the bench estimates that prefix from the usage): iteration 0 is the first user prompt;
schemas are derived from the calls. Damaged logs (lines skipped by the loader): see
``_import_steps.py``; a run left inconsistent is skipped, the file's other runs are kept.

Read-only for the dedup cache: ``Read``, ``Grep``, ``Glob``, ``LS``, ``NotebookRead``,
``TodoRead``, ``WebFetch``, ``WebSearch`` and the MCP resource readers (and MCP tools named
like readers, ``mcp__<server>__get_...``); ``Bash``, ``Edit``, ``Write``, ``Task`` and the
rest are not.
"""

from __future__ import annotations

import re
from collections.abc import Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._messages import Usage
from ._import_claude_paths import active_path
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

FORMAT = "claude-code"
READ_ONLY_NAMES = frozenset(
    {
        "Read", "Grep", "Glob", "LS", "NotebookRead", "TodoRead", "WebFetch", "WebSearch",
        "ListMcpResourcesTool", "ReadMcpResourceTool",
    }
)  # fmt: skip
SYNTHETIC_MODEL = "<synthetic>"
_MESSAGE_TYPES = ("user", "assistant")
_BOOKKEEPING = frozenset({"summary", "file-history-snapshot"})


def matches(records: list[Any]) -> bool:
    """Session entries (``sessionId``/``uuid`` and a ``message``), or only summaries and snapshots."""
    if any(_is_message(r) and ("sessionId" in r or "uuid" in r) for r in records):
        return True
    return bool(records) and all(kind_of(r) in _BOOKKEEPING for r in records)


def _is_message(record: Any) -> bool:
    return kind_of(record) in _MESSAGE_TYPES and isinstance(record.get("message"), dict)


def _is_boundary(record: Any) -> bool:
    return kind_of(record) == "system" and kind_of(record, "subtype") == "compact_boundary"


def read_only_tool(name: str) -> bool:
    """Claude Code's reading tools; MCP tools (``mcp__server__tool``) by the naming convention."""
    return name in READ_ONLY_NAMES or is_read_only(name.rsplit("__", 1)[-1])


def convert(records: list[Any], path: Path, damaged: tuple[int, ...] = ()) -> list[RecordedRun | SkippedRun]:
    entries = _entries(records)
    main = _responses_once([e for e in entries if e.get("isSidechain") is not True])
    sidechains = [r for r in records if isinstance(r, dict) and r.get("isSidechain") is True]
    threads = [_responses_once(t) for t in _threads(sidechains)]
    session = next((e["sessionId"] for e in entries if isinstance(e.get("sessionId"), str)), path.stem)
    micro = sum(1 for r in records if kind_of(r, "subtype") == "microcompact_boundary")
    runs: list[RecordedRun | SkippedRun] = []
    if any(_is_message(e) for e in main) or not threads:
        runs.extend(_main_run(main, records, path, session=session, micro=micro, damaged=damaged))
    for n, thread in enumerate(threads, 1):
        name = _thread_name(thread, path, n, len(threads))
        meta = {"session_id": session, "sidechain": True}
        runs.append(_run(thread, f"{FORMAT}/{session}/{name}", f"{path}#{name}", meta, damaged))
    return runs


def _main_run(
    main: list[dict[str, Any]],
    records: list[Any],
    path: Path,
    *,
    session: str,
    micro: int,
    damaged: tuple[int, ...],
) -> list[RecordedRun | SkippedRun]:
    """The main conversation, along the path its requests sent (``_import_claude_paths.py``), and
    the model calls left out with it (a rewound branch), named with their reason."""
    found = active_path(main, records, _starts(main))
    kept = [e for i, e in enumerate(main) if i not in found.dropped]
    meta = {
        "session_id": session,
        "microcompactions": micro or None,
        "context_resets": len(found.resets) or None,
        "off_path_entries": len(found.dropped) or None,
        "rewound_steps": found.dropped_steps or None,
    }
    resets = frozenset(id(main[i]) for i in found.resets)
    runs: list[RecordedRun | SkippedRun] = [
        _run(kept, f"{FORMAT}/{path.stem}", str(path), meta, damaged, resets=resets)
    ]
    if found.dropped_steps:
        reason = (
            f"{FORMAT}: {found.dropped_steps} model call{'s' * (found.dropped_steps != 1)} on a branch the "
            "user rewound (no later request sent them) left out; the conversation that went on is replayed"
        )
        runs.append(SkippedRun(f"{path}#rewound", reason))
    return runs


def _responses_once(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``entries`` without the assistant entries of a response an earlier step already closed (its
    ``message.id`` seen before another response's): a response written again under another
    ``uuid`` would be a second step, its usage counted twice. The entries of the current response
    (parallel calls with their results in between) stay."""
    closed: set[str] = set()
    current: str | None = None
    kept = []
    for entry in entries:
        message = entry.get("message") if kind_of(entry) == "assistant" else None
        message_id = kind_of(message, "id")
        if message_id is not None and message_id != current:
            if message_id in closed:
                continue
            if current is not None:
                closed.add(current)
            current = message_id
        kept.append(entry)
    return kept


def _starts(entries: list[dict[str, Any]]) -> list[bool]:
    """Per entry, whether it starts a model response (a step), as :func:`_assistant` decides."""
    starts, current, started = [], None, False
    for entry in entries:
        message: dict[str, Any] = entry["message"] if _is_message(entry) else {}
        if entry.get("type") != "assistant" or not message or message.get("model") == SYNTHETIC_MODEL:
            starts.append(False)
            continue
        message_id = _message_id(message)
        starts.append(_new_response(message_id, current) or not started)
        current, started = message_id, True
    return starts


def _entries(records: list[Any]) -> list[dict[str, Any]]:
    """The user and assistant entries and the compaction boundaries, in file order, each repeat read once.

    A repeat is an entry whose ``uuid`` and ``message`` an earlier entry had (Claude Code copies
    entries when a session is resumed). Another entry that reuses a ``uuid`` (a hand-edited or
    damaged log) is read: dropping it would lose what it says without a word.
    """
    first: dict[str, Any] = {}  # uuid -> the message first read under it
    again: dict[str, set[Hashable]] = {}  # uuid -> every message read under it, frozen, once it repeats
    out = []
    for record in records:
        if not (_is_message(record) or _is_boundary(record)):
            continue
        uuid, message = record.get("uuid"), record.get("message")
        if isinstance(uuid, str) and uuid in first:
            # a set of frozen messages, not a list compared one by one: n entries reusing one
            # uuid cost n, not n squared (faults.md case 67)
            forms = again.setdefault(uuid, {_frozen(first[uuid])})
            form = _frozen(message)
            if form in forms:
                continue
            forms.add(form)
        elif isinstance(uuid, str):
            first[uuid] = message
        out.append(record)
    return out


def _frozen(value: Any) -> Hashable:
    """A JSON value as a hashable one equal to another's exactly when the values are ``==``
    (objects as sets of items, arrays as tuples; numbers stay numbers, so ``1`` is ``1.0`` as in
    ``==``). The readers refuse nesting past 255, so the recursion is bounded."""
    if isinstance(value, dict):
        return frozenset((key, _frozen(item)) for key, item in value.items())
    if isinstance(value, list):
        return tuple(_frozen(item) for item in value)
    return value  # type: ignore[no-any-return]


def _threads(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Sidechain message entries grouped by thread (the root their ``parentUuid`` chain reaches),
    whatever the order of the lines (a child written before its parent is in its parent's thread)."""
    parent = {r["uuid"]: r.get("parentUuid") for r in records if isinstance(r.get("uuid"), str)}
    roots: dict[str, str] = {}
    threads: dict[str, list[dict[str, Any]]] = {}
    for index, record in enumerate(records):
        uuid = record.get("uuid")
        key = _root(uuid, parent, roots) if isinstance(uuid, str) else f"#{index}"
        threads.setdefault(key, [])
        if _is_message(record):
            threads[key].append(record)
    return [_entries(t) for t in threads.values() if t]


def _root(uuid: str, parent: dict[str, Any], roots: dict[str, str]) -> str:
    """The first entry of ``uuid``'s chain among ``parent``'s (memoized in ``roots``); the chain of a
    cycle ends at the least ``uuid`` of the cycle, so all of the cycle is one thread."""
    path: list[str] = []
    seen: dict[str, int] = {}
    node: str = uuid
    while node not in roots:
        seen[node] = len(path)
        path.append(node)
        up = parent.get(node)
        if not isinstance(up, str) or up not in parent:
            root = node
            break
        if up in seen:  # a cycle: its members from ``up`` on
            root = min(path[seen[up] :])
            break
        node = up
    else:
        root = roots[node]
    roots.update((p, root) for p in path)
    return root


def _thread_name(thread: list[dict[str, Any]], path: Path, n: int, count: int) -> str:
    agent = next((e["agentId"] for e in thread if isinstance(e.get("agentId"), str)), None)
    if agent:
        return f"agent-{agent}"
    if count == 1 and path.stem.startswith("agent-"):
        return path.stem
    return f"sidechain-{n}"


@dataclass(slots=True)
class _Step:
    message_id: str | None = None
    usage: Usage | None = None
    writes_1h: int = 0
    billing: str = ""


def _run(
    entries: list[dict[str, Any]],
    run_id: str,
    source: str,
    metadata: dict[str, Any],
    damaged: tuple[int, ...],
    *,
    resets: frozenset[int] = frozenset(),
) -> RecordedRun | SkippedRun:
    """One run; ``resets``: the entries (by ``id``) before which the context was cleared."""
    builder = HistoryBuilder(damaged)
    step = _Step()
    models: list[str] = []
    synthetic = compactions = 0
    for index, entry in enumerate(entries):
        where = f"entry {index + 1} ({entry.get('uuid', 'no uuid')})"
        time = parse_time(entry.get("timestamp"))
        if id(entry) in resets:
            builder.restart()
        if _is_boundary(entry):
            compactions += 1
            builder.restart()
            continue
        message = entry["message"]
        if entry["type"] == "user":
            _user(builder, message.get("content"), where, time)
        elif message.get("model") == SYNTHETIC_MODEL:
            synthetic += 1
        else:
            if isinstance(message.get("model"), str):
                models.append(message["model"])
            _assistant(builder, step, entry, where, time)
    version = next((e["version"] for e in entries if isinstance(e.get("version"), str)), None)
    extra = {"version": version, "synthetic_messages": synthetic or None, "compactions": compactions or None}
    metadata = {k: v for k, v in {**metadata, **extra}.items() if v is not None}
    try:
        return builder.build(
            run_id=run_id,
            source=source,
            fmt=FORMAT,
            tools=None,
            model=models[0] if models else None,
            metadata=metadata,
            read_only=read_only_tool,
            prompt_complete=False,
        )
    except ShapeError as exc:
        return SkippedRun(source, f"{FORMAT}: {exc}")


def _user(builder: HistoryBuilder, content: Any, where: str, time: float | None) -> None:
    if isinstance(content, str):
        builder.context("user", content, time=time)
        return
    if not isinstance(content, list):
        raise ShapeError(f"{where}: message.content must be a string or a list of blocks")
    texts = []
    for block in content:
        kind = kind_of(block)
        if kind == "tool_result":
            call_id = block.get("tool_use_id")
            builder.add_result(
                call_id if isinstance(call_id, str) else "", blocks_text(block.get("content")), time=time
            )
        elif kind in ("text", "image", "document"):
            texts.append(blocks_text([block]))
        elif isinstance(block, str):
            texts.append(block)
    if texts:
        builder.context("user", "\n".join(texts), time=time)


def _message_id(message: dict[str, Any]) -> str | None:
    return message.get("id") if isinstance(message.get("id"), str) else None


def _new_response(message_id: str | None, current: str | None) -> bool:
    """Whether an assistant entry of ``message_id`` opens a model response (a step) after one of
    ``current``: entries of one response share its id (the rule :func:`_assistant` builds steps by
    and :func:`_starts` tells the path reader)."""
    return message_id is None or message_id != current


def _assistant(
    builder: HistoryBuilder, step: _Step, entry: dict[str, Any], where: str, time: float | None
) -> None:
    """One entry (one or more content blocks) of a response: a new step unless it continues the current."""
    message = entry["message"]
    message_id = _message_id(message)
    if _new_response(message_id, step.message_id) or builder.step == 0:
        model = message.get("model")
        builder.start_step(time=time, model=model if isinstance(model, str) else None)
        request = entry.get("requestId")
        builder.set_step_id(message_id or (request if isinstance(request, str) else None))
        step.message_id, step.usage, step.writes_1h, step.billing = message_id, None, 0, ""
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        raise ShapeError(f"{where}: message.content must be a string or a list of blocks")
    for block in blocks:
        kind = kind_of(block)
        if kind == "text":
            text = block.get("text")
            builder.add_text(text if isinstance(text, str) else "")
        elif kind == "tool_use":
            call = _call(block, where)
            builder.add_call(*call)
            builder.set_step_id(call[0])  # a response without message.id or requestId
        elif kind in _SERVER_BLOCKS or (kind or "").endswith("_tool_result"):
            builder.add_text(_server_text(block))
    usage = _usage(message.get("usage"), entry.get("costUSD"))
    if usage is not None:
        step.usage = usage if step.usage is None else _largest(step.usage, usage)
        step.writes_1h = max(step.writes_1h, _writes_1h(message.get("usage")))
        step.billing = _billing(message.get("usage")) or step.billing
        builder.set_usage(step.usage, writes_1h=step.writes_1h, billing=step.billing)


_SERVER_BLOCKS = frozenset({"server_tool_use", "mcp_tool_use"})


def _server_text(block: dict[str, Any]) -> str:
    """A tool the provider ran inside the response (web search, web fetch, code execution): its call
    and its result are part of the assistant message later requests send back. Replayed as text:
    the call's input, the result's titles and URLs or text (encrypted page content is not)."""
    if kind_of(block) in _SERVER_BLOCKS:
        return f"[{block.get('name', 'server tool')}: {compact_json(block.get('input'), 'input')}]"
    content = block.get("content")
    items = content if isinstance(content, list) else [content]
    lines = [
        " ".join(str(item[k]) for k in ("title", "url") if isinstance(item.get(k), str))
        for item in items
        if isinstance(item, dict) and ("url" in item or "title" in item)
    ]
    return (
        "\n".join([f"[{block.get('type')}]", *lines])
        if lines
        else f"[{block.get('type')}] {blocks_text(content)}"
    )


def _call(block: dict[str, Any], where: str) -> tuple[str | None, str, str]:
    name = block.get("name")
    if not isinstance(name, str) or not name:
        raise ShapeError(f"{where}: tool_use block without a name")
    arguments = block.get("input")
    text = dump_arguments(arguments) if isinstance(arguments, dict) else compact_json(arguments, "arguments")
    call_id = block.get("id")
    return (call_id if isinstance(call_id, str) and call_id else None), name, text


def _usage(raw: Any, cost: Any) -> Usage | None:
    """The usage of one entry; counts that are not whole non-negative numbers count as 0."""
    if not isinstance(raw, dict):
        return None
    fresh, output = count(raw.get("input_tokens")), count(raw.get("output_tokens"))
    read, write = count(raw.get("cache_read_input_tokens")), count(raw.get("cache_creation_input_tokens"))
    cost_ok = isinstance(cost, int | float) and not isinstance(cost, bool) and 0 <= cost < float("inf")
    return Usage(
        prompt_tokens=fresh + read + write,
        completion_tokens=output,
        cached_tokens=read,
        requests=1,
        cost=float(cost) if cost_ok else None,
        cache_write_tokens=write,
    )


def _writes_1h(raw: Any) -> int:
    """``usage.cache_creation.ephemeral_1h_input_tokens``: the writes with a 1-hour lifetime."""
    split = raw.get("cache_creation") if isinstance(raw, dict) else None
    return count(split.get("ephemeral_1h_input_tokens")) if isinstance(split, dict) else 0


# Values of ``usage.speed`` / ``usage.inference_geo`` that bill as the standard rate.
_STANDARD = frozenset({"", "standard", "global", "not_available"})
_MODIFIER = re.compile(r"[a-z0-9_-]{1,32}")


def _billing(raw: Any) -> str:
    """The billing modifiers a usage record names (``"fast+us"``; ``""``: none): ``speed`` and
    ``inference_geo`` when not the standard rate; a value that is no plain word is ``"other"``
    (priced at the standard rate, with a warning, where the bench prices it)."""
    if not isinstance(raw, dict):
        return ""
    found: list[str] = []
    for key in ("speed", "inference_geo"):
        value = raw.get(key)
        if not isinstance(value, str) or value.strip().lower() in _STANDARD:
            continue
        value = value.strip().lower()
        found.append(value if _MODIFIER.fullmatch(value) else "other")
    return "+".join(found)


def _largest(a: Usage, b: Usage) -> Usage:
    """Per field, the larger of two usage records of the same response (they repeat or grow)."""
    costs = [c for c in (a.cost, b.cost) if c is not None]
    return Usage(
        prompt_tokens=max(a.prompt_tokens, b.prompt_tokens),
        completion_tokens=max(a.completion_tokens, b.completion_tokens),
        cached_tokens=max(a.cached_tokens, b.cached_tokens),
        requests=1,
        cost=max(costs) if costs else None,
        cache_write_tokens=max(a.cache_write_tokens, b.cache_write_tokens),
    )
