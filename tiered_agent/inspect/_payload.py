"""The data the page embeds: run metadata, totals, iterations, messages with marks, summaries.

Texts are capped (:func:`clip`): a message keeps its first and last characters
up to ``embed_chars`` in all, so a run of 1 MB outputs stays a page of a few
MB; the marks say where the full text is.
"""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime
from typing import Any

from .._messages import Message
from ._marks import MarkIndex
from ._record import record_labels
from ._values import ranges
from ._view import IterationView, RunView

__all__ = ["DEFAULT_EMBED_CHARS", "build_payload", "clip"]

DEFAULT_EMBED_CHARS = 12_000
_HEAD_SHARE = 0.75
_ARGS_CHARS = 2_000
_TASK_CHARS = 4_000


def clip(text: str, limit: int) -> dict[str, Any]:
    """``{"h": head, "t": tail, "n": total chars}``: the whole text in ``h`` when it fits ``limit``."""
    if len(text) <= limit:
        return {"h": text, "t": "", "n": len(text)}
    head = int(limit * _HEAD_SHARE)
    return {"h": text[:head], "t": text[len(text) - (limit - head) :], "n": len(text)}


def _short(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _meta(run: RunView) -> dict[str, Any]:
    started = (
        datetime.fromtimestamp(run.started_at, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if run.started_at
        else None
    )
    context = run.config.get("context")
    return {
        "run_id": run.run_id,
        "model": run.model,
        "task": _short(run.task, _TASK_CHARS),
        "stop": run.stop_label,
        "error": run.error,
        "output": _short(run.output, _TASK_CHARS) if run.output else None,
        "file": run.path.name,
        "started": started,
        "segments": run.segments,
        "policy": context.get("name") if isinstance(context, dict) else None,
        "warning": run.warning,
        "measured": run.measured,
    }


def _iteration(view: IterationView) -> dict[str, Any]:
    totals, record = view.totals, view.record
    return {
        "i": view.iteration,
        "tools": list(view.tool_calls),
        "prompt": totals.prompt_tokens,
        "sent": totals.sent_tokens,
        "full": totals.full_tokens,
        "cached": totals.cached_tokens,
        "completion": totals.completion_tokens,
        "cost": totals.cost,
        "trunc": totals.truncated_outputs,
        "trunc_chars": totals.truncated_chars,
        "masked": totals.masked_outputs,
        "masked_chars": totals.masked_chars,
        "window": ranges(record.windowed_out),
        "summary_in": list(record.summary_range) if record.summary_range else None,
        "summaries": list(view.summaries),
        "dedup": totals.dedup_hits,
        "retr": totals.retrievals,
        "errors": [[kind, _short(message, 2_000)] for kind, message in view.errors],
        "tool_errors": totals.tool_errors,
        "compacted": record.compacted,
        "requests": view.requests,
        "finish": view.finish_reason,
        "other": record_labels(record),
        "hidden": [
            {
                "k": item.kind,
                "id": item.tool_call_id,
                "it": item.iteration,
                "orig": item.original_chars,
                "kept": item.kept_chars,
            }
            for item in record.items
        ],
    }


def _message(message: Message, line: int, marks: list[dict[str, Any]], embed: int) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "line": line, "text": clip(message.text, embed)}
    if message.name:
        out["name"] = message.name
    if message.tool_call_id:
        out["id"] = message.tool_call_id
    if message.tool_calls:
        out["calls"] = [
            {"id": c.id, "name": c.name, "args": _short(c.arguments, _ARGS_CHARS)} for c in message.tool_calls
        ]
    if marks:
        out["marks"] = marks
    return out


def build_payload(run: RunView, *, embed_chars: int = DEFAULT_EMBED_CHARS) -> dict[str, Any]:
    """Everything the page's script renders, JSON-ready."""
    index = MarkIndex(run)
    messages: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for view in run.messages:
        marks = [m.to_dict() for m in index.marks(view)]
        messages[view.message.iteration].append(_message(view.message, view.line, marks, embed_chars))
    return {
        "meta": _meta(run),
        "totals": run.totals.to_dict(),
        "iterations": [_iteration(view) for view in run.iterations],
        "messages": {str(k): v for k, v in sorted(messages.items())},
        "summaries": [
            {
                "first": s.first,
                "last": s.last,
                "landed": s.landed_at,
                "model": s.model,
                "line": s.line,
                "tokens": s.input_tokens + s.output_tokens,
                "text": clip(s.text, embed_chars),
            }
            for s in run.summaries
        ],
        "embed_chars": embed_chars,
    }
