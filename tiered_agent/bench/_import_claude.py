"""Claude Code session logs (``~/.claude/projects/<project>/<session>.jsonl``) -> :class:`RecordedRun` s.

One JSON entry per line, by ``type``:

- ``assistant``: one content block of a model response. Claude Code writes one API response
  as several entries sharing ``message.id``; they are merged into ONE step: ``text`` blocks
  become the assistant text, ``tool_use`` blocks its tool calls (``input`` as JSON arguments),
  ``thinking`` blocks are not replayed. ``message.model`` is the run's model.
  ``message.usage`` is the step's usage: ``prompt_tokens`` = ``input_tokens`` +
  ``cache_read_input_tokens`` + ``cache_creation_input_tokens``, ``cached_tokens`` = the cache
  read, ``cache_write_tokens`` = the cache creation, ``completion_tokens`` = ``output_tokens``
  (each the largest value among the response's entries, which repeat it), ``cost`` = the
  entry's ``costUSD`` where older versions record it.
- ``user``: the user's prompt (a string, or ``text``/``image`` blocks) or tool results
  (``tool_result`` blocks: tool messages answering ``tool_use_id``).
- ``summary``, ``system``, ``progress``, ``file-history-snapshot``, ``queue-operation`` ...:
  never sent to the model as such; ignored (``metadata["compactions"]`` counts
  ``compact_boundary`` system entries; the compaction summary itself is a user entry and kept).

Entries are read in file order; an entry repeated with the same ``uuid`` is read once.
Assistant entries of model ``<synthetic>`` (notices Claude Code writes itself, such as API
errors) are no model call and are dropped (``metadata["synthetic_messages"]``).

Subagents: entries with ``isSidechain`` true are a subagent's own conversation, not part of
the main one. Each subagent thread (entries linked by ``parentUuid``) becomes a run of its own,
``claude-code/<session>/agent-<agentId>`` (or ``sidechain-<n>``), whether it is inline (older
versions) or in ``<session>/subagents/agent-*.jsonl``.

The logs hold neither the system prompt nor the tool schemas: iteration 0 is the first user
prompt; schemas are derived from the calls. Read-only for the dedup cache: ``Read``, ``Grep``,
``Glob``, ``LS``, ``NotebookRead``, ``TodoRead``, ``WebFetch``, ``WebSearch`` and the MCP resource
readers (and MCP tools named like readers, ``mcp__<server>__get_...``); ``Bash``, ``Edit``,
``Write``, ``Task`` and the rest are not.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._messages import Usage
from ._import_common import ShapeError, blocks_text, dump_arguments, is_read_only
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
    return all(isinstance(r, dict) and r.get("type") in _BOOKKEEPING for r in records)


def _is_message(record: Any) -> bool:
    return (
        isinstance(record, dict)
        and record.get("type") in _MESSAGE_TYPES
        and isinstance(record.get("message"), dict)
    )


def read_only_tool(name: str) -> bool:
    """Claude Code's reading tools; MCP tools (``mcp__server__tool``) by the naming convention."""
    return name in READ_ONLY_NAMES or is_read_only(name.rsplit("__", 1)[-1])


def convert(records: list[Any], path: Path) -> list[RecordedRun]:
    entries = _entries(records)
    main = [e for e in entries if not e.get("isSidechain")]
    threads = _threads([r for r in records if isinstance(r, dict) and r.get("isSidechain")])
    session = next((str(e["sessionId"]) for e in entries if isinstance(e.get("sessionId"), str)), path.stem)
    compactions = sum(1 for r in records if isinstance(r, dict) and r.get("type") == "system" and _compact(r))
    runs = []
    if main or not threads:
        runs.append(_run(main, f"{FORMAT}/{path.stem}", str(path), {"session_id": session}, compactions))
    for n, thread in enumerate(threads, 1):
        name = _thread_name(thread, path, n, len(threads))
        meta = {"session_id": session, "sidechain": True}
        runs.append(_run(thread, f"{FORMAT}/{session}/{name}", f"{path}#{name}", meta, 0))
    return runs


def _entries(records: list[Any]) -> list[dict[str, Any]]:
    """The user and assistant entries, each uuid once, in file order."""
    seen: set[str] = set()
    out = []
    for record in records:
        if not _is_message(record):
            continue
        uuid = record.get("uuid")
        if isinstance(uuid, str):
            if uuid in seen:
                continue
            seen.add(uuid)
        out.append(record)
    return out


def _compact(record: dict[str, Any]) -> bool:
    return record.get("subtype") == "compact_boundary" or "compactMetadata" in record


def _threads(records: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Sidechain message entries grouped by thread (the root their ``parentUuid`` chain reaches)."""
    root_of: dict[str, str] = {}
    threads: dict[str, list[dict[str, Any]]] = {}
    for index, record in enumerate(records):
        uuid, parent = record.get("uuid"), record.get("parentUuid")
        key = root_of.get(parent) if isinstance(parent, str) else None
        key = key or (uuid if isinstance(uuid, str) else f"#{index}")
        if isinstance(uuid, str):
            root_of[uuid] = key
        threads.setdefault(key, [])
        if _is_message(record):
            threads[key].append(record)
    return [_entries(t) for t in threads.values() if t]


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


def _run(
    entries: list[dict[str, Any]], run_id: str, source: str, metadata: dict[str, Any], compactions: int
) -> RecordedRun:
    builder = HistoryBuilder()
    step = _Step()
    models: list[str] = []
    synthetic = 0
    for index, entry in enumerate(entries):
        where = f"entry {index + 1} ({entry.get('uuid', 'no uuid')})"
        message = entry["message"]
        if entry["type"] == "user":
            _user(builder, message.get("content"), where)
        elif message.get("model") == SYNTHETIC_MODEL:
            synthetic += 1
        else:
            if isinstance(message.get("model"), str):
                models.append(message["model"])
            _assistant(builder, step, entry, where)
    version = next((e["version"] for e in entries if isinstance(e.get("version"), str)), None)
    extra = {"version": version, "synthetic_messages": synthetic or None, "compactions": compactions or None}
    metadata = {**metadata, **{k: v for k, v in extra.items() if v is not None}}
    return builder.build(
        run_id=run_id,
        source=source,
        fmt=FORMAT,
        tools=None,
        model=models[0] if models else None,
        metadata=metadata,
        read_only=read_only_tool,
    )


def _user(builder: HistoryBuilder, content: Any, where: str) -> None:
    if isinstance(content, str):
        builder.context("user", content)
        return
    if not isinstance(content, list):
        raise ShapeError(f"{where}: message.content must be a string or a list of blocks")
    texts = []
    for block in content:
        if isinstance(block, dict) and block.get("type") == "tool_result":
            builder.add_result(str(block.get("tool_use_id") or ""), blocks_text(block.get("content")))
        elif isinstance(block, dict) and block.get("type") in ("text", "image"):
            texts.append(blocks_text([block]))
        elif isinstance(block, str):
            texts.append(block)
    if texts:
        builder.context("user", "\n".join(texts))


def _assistant(builder: HistoryBuilder, step: _Step, entry: dict[str, Any], where: str) -> None:
    """One entry (one or more content blocks) of a response: a new step unless it continues the current."""
    message = entry["message"]
    message_id = message.get("id") if isinstance(message.get("id"), str) else None
    if message_id is None or message_id != step.message_id or builder.step == 0:
        builder.start_step()
        step.message_id, step.usage = message_id, None
    content = message.get("content")
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
    if not isinstance(blocks, list):
        raise ShapeError(f"{where}: message.content must be a string or a list of blocks")
    for block in blocks:
        if not isinstance(block, dict):
            continue
        if block.get("type") == "text":
            builder.add_text(str(block.get("text") or ""))
        elif block.get("type") == "tool_use":
            builder.add_call(*_call(block, where))
    usage = _usage(message.get("usage"), entry.get("costUSD"), where)
    if usage is not None:
        step.usage = usage if step.usage is None else _largest(step.usage, usage)
        builder.set_usage(step.usage)


def _call(block: dict[str, Any], where: str) -> tuple[str | None, str, str]:
    name = block.get("name")
    if not isinstance(name, str) or not name:
        raise ShapeError(f"{where}: tool_use block without a name")
    arguments = block.get("input")
    text = dump_arguments(arguments) if isinstance(arguments, dict) else orjson.dumps(arguments).decode()
    call_id = block.get("id")
    return (call_id if isinstance(call_id, str) and call_id else None), name, text


def _usage(raw: Any, cost: Any, where: str) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    try:
        fresh, output = int(raw.get("input_tokens") or 0), int(raw.get("output_tokens") or 0)
        read = int(raw.get("cache_read_input_tokens") or 0)
        write = int(raw.get("cache_creation_input_tokens") or 0)
    except (TypeError, ValueError) as exc:
        raise ShapeError(f"{where}: message.usage: {exc}") from exc
    return Usage(
        prompt_tokens=fresh + read + write,
        completion_tokens=output,
        cached_tokens=read,
        requests=1,
        cost=float(cost) if isinstance(cost, int | float) else None,
        cache_write_tokens=write,
    )


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
