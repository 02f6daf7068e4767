"""Tier 1, window: choose which iterations the model sees verbatim.

Iteration 0 (system prompt and task) is always shown. Iterations covered by the
rolling summary are replaced by ONE ``user`` message holding it, placed where
they were (right after the task when the summary starts at iteration 1).
Everything after the summary is shown: the last ``window_iterations`` are the
window, older ones stay until their summary lands (no coverage gap). Only when
no summarizer is configured at all are iterations older than the window
dropped, replaced by a short note naming the range and the retrieval call.

The unit is the iteration, so an assistant tool call is never separated from
its results, and every inserted message is a ``user`` message followed by an
iteration's assistant message: the sequence stays valid for every provider.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal

from .._messages import Message
from ._config import ContextConfig
from ._masking import output_placeholder
from ._names import retrieve_call
from ._types import Summary

__all__ = ["Window", "omitted_note", "select_window", "summary_message"]

_Fate = Literal["shown", "summary", "dropped"]


@dataclass(frozen=True, slots=True)
class Window:
    """The messages chosen, and which iterations (>= 1) are shown or not."""

    messages: tuple[Message, ...]
    shown_iterations: tuple[int, ...] = ()
    windowed_out: tuple[int, ...] = ()  # covered by the summary or dropped
    summary_range: tuple[int, int] | None = None
    elided_outputs: int = 0  # window_keep_actions: outputs replaced by placeholders
    elided_chars: int = 0


def summary_message(summary: Summary, iteration: int | None = None) -> Message:
    """The ``user`` message standing for the iterations ``summary`` covers."""
    return Message(
        role="user",
        content=f"[Summary of iterations {summary.first}-{summary.last}]\n{summary.text}",
        iteration=summary.first if iteration is None else iteration,
    )


def omitted_note(first: int, last: int, *, retrieval: bool) -> Message:
    """``[iterations 1-12 omitted; context_retrieve(iteration="1-12")]`` (singular for one iteration)."""
    span = str(first) if first == last else f"{first}-{last}"
    what = f"iteration {span}" if first == last else f"iterations {span}"
    hint = f"; {retrieve_call('iteration', span)}" if retrieval else ""
    return Message(role="user", content=f"[{what} omitted{hint}]", iteration=first)


def select_window(history: Sequence[Message], config: ContextConfig, *, summary: Summary | None) -> Window:
    """Apply the window to ``history``; raises ValueError on a summary with an invalid range."""
    iterations = sorted({m.iteration for m in history if m.iteration > 0})
    if summary is not None and not 1 <= summary.first <= summary.last:
        raise ValueError(f"invalid summary range {summary.first}-{summary.last}")
    fates = {k: _fate(k, iterations[-1], config, summary) for k in iterations} if iterations else {}
    runs = _runs(iterations, fates)
    if not runs:
        return Window(tuple(history), tuple(iterations))
    run_of = {k: run for run in runs for k in iterations if run[1] <= k <= run[2]}
    ends = {run_of[m.iteration]: i for i, m in enumerate(history) if m.iteration in run_of}
    out: list[Message] = []
    emitted: set[int] = set()
    elided = elided_chars = 0
    for index, message in enumerate(history):
        run = run_of.get(message.iteration)
        if run is None:
            out.append(message)
        elif run[0] == "summary" and config.window_keep_actions and summary is not None:
            kept = _elided(message, config)
            if kept is not message:
                elided += 1
                elided_chars += len(message.text) - len(kept.text)
            out.append(kept)
            if ends[run] == index:  # after the covered iterations: earlier prefixes stay cacheable
                out.append(summary_message(summary, run[2]))
        elif run[1] not in emitted:
            emitted.add(run[1])
            out.append(_run_message(run, summary, config))
    covered = [k for k in iterations if fates[k] == "summary"]
    return Window(
        messages=tuple(out),
        shown_iterations=tuple(k for k in iterations if fates[k] == "shown"),
        windowed_out=tuple(k for k in iterations if fates[k] != "shown"),
        summary_range=(summary.first, summary.last) if summary is not None and covered else None,
        elided_outputs=elided,
        elided_chars=elided_chars,
    )


def _fate(k: int, last: int, config: ContextConfig, summary: Summary | None) -> _Fate:
    if summary is not None and summary.first <= k <= summary.last:
        return "summary"
    window = config.window_iterations
    if window is not None and not config.summarizes and k <= last - window:
        return "dropped"
    return "shown"


def _runs(iterations: Sequence[int], fates: dict[int, _Fate]) -> list[tuple[_Fate, int, int]]:
    """Maximal runs of consecutive (present) iterations that are not shown: (fate, first, last)."""
    runs: list[tuple[_Fate, int, int]] = []
    previous: _Fate = "shown"
    for k in iterations:
        fate = fates[k]
        if fate != "shown" and fate == previous:
            runs[-1] = (fate, runs[-1][1], k)
        elif fate != "shown":
            runs.append((fate, k, k))
        previous = fate
    return runs


def _elided(message: Message, config: ContextConfig) -> Message:
    """A covered iteration's message as kept next to the summary: outputs become placeholders."""
    if message.role != "tool" or len(message.text) < config.elide_min_chars:
        return message
    placeholder = output_placeholder(message.tool_call_id, retrieval=config.retrieval_active)
    return message if len(message.text) <= len(placeholder) else replace(message, content=placeholder)


def _run_message(run: tuple[_Fate, int, int], summary: Summary | None, config: ContextConfig) -> Message:
    fate, first, last = run
    if fate == "summary" and summary is not None:
        return summary_message(summary, first)
    return omitted_note(first, last, retrieval=config.retrieval_active)
