"""What the context pipeline recorded about one prompt (``model_request.context``), read defensively.

The record is the trace's typed :class:`~tiered_agent._trace.ContextRecord`: per step, what it
hid, cut, pointed or left out, and its own record (``Age``: how far iterations aged); prompt
totals are sums over the steps. :func:`parse_record` reads it with
:meth:`~tiered_agent._trace.ContextRecord.from_dict`, which also reads the flat records of older
traces. Only for those flat records, keys this reader does not know (an older or a newer
pipeline's) are kept generically: numbers become :attr:`PromptRecord.counters`, lists of
``{"tool_call_id": ...}`` items become :class:`HiddenItem` s named after their key, lists of
iteration numbers become :attr:`PromptRecord.iteration_lists`. :func:`record_labels` says all of it
in words a user reads (``aged 1-12``, ``2 repeats as pointers (357 chars)``, ``age hid 3 outputs``),
never a record key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from .._trace import AgingRecord, ContextRecord, StepRecord
from ._values import as_int, as_mapping, as_str, is_number, ranges

__all__ = [
    "FLAT_KEYS",
    "HiddenItem",
    "PromptRecord",
    "counter_label",
    "parse_record",
    "record_labels",
]

# The keys of the flat record (before records were kept per step) that ContextRecord reads.
FLAT_KEYS = frozenset(
    {
        "truncated_outputs",
        "truncated_chars",
        "truncations",
        "truncated_tokens",
        "masked_outputs",
        "masked_chars",
        "windowed_out",
        "summary_range",
        "shown_iterations",
        "compacted",
        "dedup_hits",  # the manager's running total, not this prompt's: read from tool results instead
        "dedup_pointers",
        "dedup_pointer_chars",
        "aging",
    }
)
_SUFFIXES = ("_outputs", "_items", "_ids", "_calls", "s")


@dataclass(frozen=True, slots=True)
class HiddenItem:
    """One tool output the prompt did not show in full: ``kind`` is ``truncated`` or a record key's stem."""

    kind: str
    tool_call_id: str
    iteration: int | None = None
    tool: str = ""
    original_chars: int | None = None
    kept_chars: int | None = None


@dataclass(frozen=True, slots=True)
class PromptRecord:
    """The pipeline's record of one prompt; every field defaults to "nothing done"."""

    truncated_outputs: int = 0
    truncated_chars: int = 0
    masked_outputs: int = 0  # outputs behind a placeholder or a shorter form, by any step
    masked_chars: int = 0
    windowed_out: tuple[int, ...] = ()
    summary_range: tuple[int, int] | None = None
    compacted: bool = False
    items: tuple[HiddenItem, ...] = ()
    steps: Mapping[str, StepRecord] = field(default_factory=dict)  # what each step did, by kind
    counters: Mapping[str, float] = field(default_factory=dict)  # of flat keys this reader does not know
    iteration_lists: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    pointer_outputs: int = 0  # repeated outputs shown as a pointer to an identical one above (dedup)
    pointer_chars: int = 0
    aged_through: int = 0  # iterations 1..N shown in their aged form (a position, not a count)
    condensed_through: int = 0  # iterations 1..N condensed to one line each (a position)
    new_epoch: bool = False  # this prompt aged further than the one before (an aging epoch)


def parse_record(context: Mapping[str, Any]) -> PromptRecord:
    record = ContextRecord.from_dict(context)
    truncations = tuple(
        HiddenItem("truncated", c.tool_call_id, c.iteration, c.tool, c.original_chars, c.kept_chars)
        for c in record.cuts
    )
    typed = "steps" in context
    unknown = {} if typed else {k: v for k, v in context.items() if k not in FLAT_KEYS}
    extra_items = [item for key, value in unknown.items() for item in _items(_stem(key), value)]
    aging = record.aging or AgingRecord()
    return PromptRecord(
        truncated_outputs=record.truncated_outputs,
        truncated_chars=record.truncated_chars,
        masked_outputs=record.hidden_outputs,
        masked_chars=record.hidden_chars,
        windowed_out=record.windowed_out,
        summary_range=record.summary_range,
        compacted=record.compacted,
        items=(*truncations, *extra_items),
        steps=record.steps,
        counters=_counters(unknown),
        iteration_lists={k: ints for k, v in unknown.items() if (ints := _ints(v))},
        pointer_outputs=record.pointers,
        pointer_chars=record.pointer_chars,
        aged_through=aging.through,
        condensed_through=aging.condensed,
        new_epoch=aging.epoch is not None,
    )


def record_labels(record: PromptRecord) -> list[str]:
    """What the record says beyond the prompt's totals, in a user's words: the aging state, pointers
    to repeated outputs, what each step did, then what an unknown (newer) flat record holds."""
    labels = []
    if record.aged_through:
        labels.append(f"aged {_through(record.aged_through)}")
    if record.condensed_through:
        labels.append(f"condensed {_through(record.condensed_through)}")
    if record.new_epoch:
        labels.append("aged further here")
    if record.pointer_outputs:
        repeats = "repeat" if record.pointer_outputs == 1 else "repeats"
        chars = f" ({record.pointer_chars:,} chars)" if record.pointer_chars else ""
        labels.append(f"{record.pointer_outputs:,} {repeats} as pointers{chars}")
    labels += [label for kind, step in record.steps.items() for label in _step_labels(kind, step)]
    labels += counter_label(record.counters)
    labels += [f"{_words(key)} {ranges(values)}" for key, values in record.iteration_lists.items()]
    return labels


def _step_labels(kind: str, step: StepRecord) -> list[str]:
    """What one step hid and its own numbers; aging and pointers are said once for the prompt, cuts
    and windows have their own columns."""
    name = _words(kind)
    labels = []
    if step.hidden:
        labels.append(f"{name} hid {_outputs(step.hidden)} ({step.hidden_chars:,} chars)")
    if step.state and not isinstance(step.state, AgingRecord):
        numbers = as_mapping(step.state)
        labels += [f"{name} {_words(k)} {_number(float(v))}" for k, v in numbers.items() if is_number(v)]
    return labels


def _outputs(count: int) -> str:
    return f"{count:,} output" if count == 1 else f"{count:,} outputs"


def counter_label(counters: Mapping[str, float]) -> list[str]:
    """Non-zero counters of flat keys this reader does not know, as labels with the key in words;
    ``X_outputs`` pairs with ``X_chars``: ``elided 3 (1,200 chars)``."""
    labels = []
    for key, value in sorted(counters.items()):
        if not value or (key.endswith("_chars") and f"{key[:-6]}_outputs" in counters):
            continue
        if key.endswith("_outputs"):
            stem = key[:-8]
            chars = counters.get(f"{stem}_chars")
            labels.append(
                f"{_words(stem)} {_number(value)}" + (f" ({_number(chars)} chars)" if chars else "")
            )
        else:
            labels.append(f"{_words(key)} {_number(value)}")
    return labels


def _counters(unknown: Mapping[str, Any]) -> dict[str, float]:
    """Numbers of flat keys this viewer does not know, and one level into records of them
    (``{"limits": {"tokens": 40}}`` counts as ``limits_tokens``)."""
    flat = {k: float(v) for k, v in unknown.items() if is_number(v)}
    for key, value in unknown.items():
        if isinstance(value, Mapping):
            flat |= {f"{key}_{sub}": float(x) for sub, x in value.items() if is_number(x)}
    return flat


def _stem(key: str) -> str:
    for suffix in _SUFFIXES:
        if key.endswith(suffix) and len(key) > len(suffix):
            return key[: -len(suffix)]
    return key


def _items(kind: str, value: Any) -> list[HiddenItem]:
    if not isinstance(value, list):
        return []
    items = []
    for entry in value:
        if isinstance(entry, Mapping) and isinstance(entry.get("tool_call_id"), str):
            original, kept = entry.get("original_chars"), entry.get("kept_chars")
            items.append(
                HiddenItem(
                    kind=kind,
                    tool_call_id=entry["tool_call_id"],
                    iteration=as_int(entry["iteration"]) if is_number(entry.get("iteration")) else None,
                    tool=as_str(entry.get("tool") or entry.get("tool_name")),
                    original_chars=as_int(original) if is_number(original) else None,
                    kept_chars=as_int(kept) if is_number(kept) else None,
                )
            )
    return items


def _ints(value: Any) -> tuple[int, ...] | None:
    """A non-empty list of numbers as ints, else None."""
    if isinstance(value, list) and value and all(is_number(v) for v in value):
        return tuple(int(v) for v in value)
    return None


def _through(last: int) -> str:
    return "1" if last == 1 else f"1-{last}"


def _words(key: str) -> str:
    """A record key as words: ``cache_breaks`` -> ``cache breaks``."""
    return key.replace("_", " ").strip()


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.3g}"
