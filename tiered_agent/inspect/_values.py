"""Defensive readers for values of a raw trace event: a missing or odd-typed key reads as empty."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = ["as_float", "as_int", "as_mapping", "as_range", "as_str", "compact", "is_number", "ranges"]


def is_number(value: Any) -> bool:
    """An int or float that is not a bool."""
    return isinstance(value, int | float) and not isinstance(value, bool)


def as_int(value: Any, default: int = 0) -> int:
    return int(value) if is_number(value) else default


def as_float(value: Any) -> float | None:
    return float(value) if is_number(value) else None


def as_str(value: Any, default: str = "") -> str:
    return value if isinstance(value, str) else default


def as_mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def as_range(value: Any) -> tuple[int, int] | None:
    """``[first, last]`` as a pair of ints, else None."""
    if isinstance(value, list | tuple) and len(value) == 2 and all(is_number(v) for v in value):
        return int(value[0]), int(value[1])
    return None


def ranges(numbers: Iterable[int]) -> str:
    """``[1, 2, 3, 5, 7, 8]`` -> ``"1-3, 5, 7-8"`` (sorted, duplicates dropped)."""
    spans: list[list[int]] = []
    for number in sorted(set(numbers)):
        if spans and number == spans[-1][1] + 1:
            spans[-1][1] = number
        else:
            spans.append([number, number])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in spans)


def compact(number: float) -> str:
    """A short size: ``950``, ``18.2k``, ``1.05M``, ``11.0G``."""
    size = abs(number)
    if size < 1000:
        return f"{number:,.0f}"
    if size < 1_000_000:
        return f"{number / 1000:.1f}k"
    if size < 1_000_000_000:
        return f"{number / 1_000_000:.2f}M"
    return f"{number / 1_000_000_000:.1f}G"
