"""The project's own JSONL trace <-> :class:`RecordedRun`.

Reading takes the first ``run_start`` event as the header, every ``message``
event as the history and ``model_response`` events as the recorded usage of the
step with the same iteration (summed if an iteration made several calls; the
endpoint that served it, ``route``, is the last call's).
Writing produces exactly what reading expects, so a run survives the round trip.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from .._errors import TraceFormatError
from .._messages import Message, Usage
from .._trace import MessageEvent, ModelResponse, RunStarted, TraceWriter, iter_trace
from ._import_common import build_run
from ._recorded import RecordedRun

__all__ = ["FORMAT", "load_trace_run", "write_run_trace"]

FORMAT = "tiered-agent"


def load_trace_run(path: Path) -> RecordedRun:
    header: RunStarted | None = None
    messages: list[Message] = []
    responses: dict[int, Usage] = {}
    routes: dict[int, str | None] = {}
    for event in iter_trace(path):
        if isinstance(event, RunStarted) and header is None:
            header = event
        elif isinstance(event, MessageEvent):
            messages.append(event.message)
        elif isinstance(event, ModelResponse):
            previous = responses.get(event.iteration)
            responses[event.iteration] = event.usage if previous is None else previous + event.usage
            routes[event.iteration] = event.route
    if header is None:
        raise TraceFormatError(f"{path}: no run_start event (not a complete tiered-agent trace)")
    config = header.config if isinstance(header.config, dict) else {}
    steps = [m.iteration for m in messages if m.role == "assistant"]
    run = build_run(
        run_id=header.run_id,
        source=header.source or str(path),
        fmt=str(config.get("format") or FORMAT),
        messages=messages,
        tools=[dict(t) for t in header.tools],
        usage=[responses.get(i) for i in steps],
        routes=[routes.get(i) for i in steps],
        model=header.model or None,
        metadata=dict(metadata) if isinstance(metadata := config.get("metadata"), dict) else {},
    )
    if isinstance(config.get("read_only_tools"), list):
        run = replace(run, read_only_tools=_strings(config["read_only_tools"]))
    if isinstance(config.get("read_only_calls"), list):
        run = replace(run, read_only_calls=_strings(config["read_only_calls"]))
    return run.with_recording(config.get("recording"))


def _strings(values: list[Any]) -> frozenset[str]:
    return frozenset(str(v) for v in values)


def write_run_trace(run: RecordedRun, path: Path) -> None:
    """Write ``run`` as a tiered-agent trace (replacing ``path``); :func:`load_runs` reads it back equal.

    Events: one ``run_start`` (run id, model, task, tools, source and a config
    holding ``read_only_tools``, ``format`` and ``metadata``, plus
    ``read_only_calls`` when the run has any), one ``message``
    per message and one ``model_response`` per step whose usage was recorded.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    path.unlink(missing_ok=True)
    config: dict[str, Any] = {
        "read_only_tools": sorted(run.read_only_tools),
        "format": run.format,
        "metadata": run.metadata,
    }
    if run.read_only_calls:
        config["read_only_calls"] = sorted(run.read_only_calls)
    if run.recording():
        config["recording"] = run.recording()
    header = RunStarted(
        run_id=run.run_id, model=run.model or "", task=run.task, config=config, tools=list(run.tools),
        source=run.source,
    )  # fmt: skip
    step = 0
    with TraceWriter(path) as writer:
        writer.write(header)
        for message in run.messages:
            writer.write(MessageEvent(message))
            if message.role != "assistant":
                continue
            step += 1
            usage = run.usage[step - 1] if step <= len(run.usage) else None
            if usage is not None:
                writer.write(
                    ModelResponse(
                        iteration=message.iteration, usage=usage, model=run.model or "", route=run.route(step)
                    )
                )
