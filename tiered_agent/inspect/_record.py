"""What the context pipeline recorded about one prompt (``model_request.context``), read defensively.

Known keys get their own fields (aging's ``{"through", "condensed", "epoch"}`` and the dedup
pointers included). Keys this reader does not know are kept generically, so a newer pipeline's
record still shows up: numbers become :attr:`PromptRecord.counters`, lists of
``{"tool_call_id": ...}`` items become :class:`HiddenItem` s named after their key (e.g.
``elided_outputs`` items are ``elided``), lists of iteration numbers become
:attr:`PromptRecord.iteration_lists`. :func:`record_labels` says all of it in words a user reads
(``aged 1-12``, ``2 repeats as pointers (357 chars)``), never a record key.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ._values import as_int, as_mapping, as_range, as_str, is_number, ranges

__all__ = ["KNOWN_KEYS", "HiddenItem", "PromptRecord", "counter_label", "parse_record", "record_labels"]

KNOWN_KEYS = frozenset(
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
    masked_outputs: int = 0  # masked, cleared or elided outputs (one count in schema v1)
    masked_chars: int = 0
    windowed_out: tuple[int, ...] = ()
    summary_range: tuple[int, int] | None = None
    compacted: bool = False
    items: tuple[HiddenItem, ...] = ()
    counters: Mapping[str, float] = field(default_factory=dict)  # of keys this reader does not know
    iteration_lists: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    pointer_outputs: int = 0  # repeated outputs shown as a pointer to an identical one above (dedup)
    pointer_chars: int = 0
    aged_through: int = 0  # iterations 1..N shown in their aged form (a position, not a count)
    condensed_through: int = 0  # iterations 1..N condensed to one line each (a position)
    new_epoch: bool = False  # this prompt aged further than the one before (an aging epoch)


def parse_record(context: Mapping[str, Any]) -> PromptRecord:
    truncations = _items("truncated", context.get("truncations"))
    unknown = {k: v for k, v in context.items() if k not in KNOWN_KEYS}
    extra_items = [item for key, value in unknown.items() for item in _items(_stem(key), value)]
    aging = as_mapping(context.get("aging"))
    return PromptRecord(
        truncated_outputs=as_int(context.get("truncated_outputs"), len(truncations)),
        truncated_chars=as_int(context.get("truncated_chars")),
        masked_outputs=as_int(context.get("masked_outputs")),
        masked_chars=as_int(context.get("masked_chars")),
        windowed_out=_ints(context.get("windowed_out")) or (),
        summary_range=as_range(context.get("summary_range")),
        compacted=context.get("compacted") is True,
        items=(*truncations, *extra_items),
        counters=_counters(unknown),
        iteration_lists={k: ints for k, v in unknown.items() if (ints := _ints(v))},
        pointer_outputs=as_int(context.get("dedup_pointers")),
        pointer_chars=as_int(context.get("dedup_pointer_chars")),
        aged_through=as_int(aging.get("through")),
        condensed_through=as_int(aging.get("condensed")),
        new_epoch=isinstance(aging.get("epoch"), Mapping),
    )


def _counters(unknown: Mapping[str, Any]) -> dict[str, float]:
    """Numbers of keys this viewer does not know, and one level into records of them
    (``{"aging": {"through": 40}}`` counts as ``aging_through``)."""
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


def record_labels(record: PromptRecord) -> list[str]:
    """What the record says beyond truncation, masking, windows and summaries, in a user's words:
    the aging state, pointers to repeated outputs, then what a newer pipeline recorded."""
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
    labels += counter_label(record.counters)
    labels += [f"{_words(key)} {ranges(values)}" for key, values in record.iteration_lists.items()]
    return labels


def _through(last: int) -> str:
    return "1" if last == 1 else f"1-{last}"


def counter_label(counters: Mapping[str, float]) -> list[str]:
    """Non-zero counters a newer pipeline recorded, as labels with the key in words;
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


def _words(key: str) -> str:
    """A record key as words: ``cache_breaks`` -> ``cache breaks``."""
    return key.replace("_", " ").strip()


def _number(value: float) -> str:
    return f"{int(value):,}" if float(value).is_integer() else f"{value:,.3g}"
