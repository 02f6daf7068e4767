"""The page's chart: prompt tokens sent vs full-history tokens per iteration, as inline SVG.

Generated here (no charting library, no network): two polylines, the saved area
between them, markers for errors, summaries and retrievals, and one invisible
hit area per iteration (``data-it``) the page's script turns into a link.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from ._values import compact

__all__ = ["ChartPoint", "svg_chart"]

WIDTH, HEIGHT = 960, 280
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 18, 34
_TICKS = 5
_MAX_X_LABELS = 12


@dataclass(frozen=True, slots=True)
class ChartPoint:
    iteration: int
    sent: int
    full: int
    error: bool = False
    summary: bool = False
    retrieval: bool = False


def _nice(value: float) -> float:
    """The smallest 1, 2 or 5 times a power of ten that is >= ``value``."""
    if value <= 0:
        return 1.0
    power = 10 ** math.floor(math.log10(value))
    return float(next(m * power for m in (1, 2, 5, 10) if m * power >= value))


def _y_scale(top: float, log: bool) -> tuple[Callable[[float], float], list[float]]:
    plot = HEIGHT - TOP - BOTTOM
    if log:
        low, high = 0, max(1, math.ceil(math.log10(max(top, 10))))
        ticks = [10.0**e for e in range(low, high + 1)]

        def to_y(v: float) -> float:
            return TOP + plot * (1 - math.log10(max(v, 1)) / high)

        return to_y, ticks
    ceiling = _nice(top)
    step = ceiling / _TICKS
    return (lambda v: TOP + plot * (1 - v / ceiling)), [step * i for i in range(_TICKS + 1)]


def _x_scale(points: Sequence[ChartPoint]) -> tuple[Callable[[int], float], float]:
    first, last = points[0].iteration, points[-1].iteration
    plot = WIDTH - LEFT - RIGHT
    span = max(last - first, 1)
    slot = plot / (span + 1)

    def to_x(it: int) -> float:
        return LEFT + slot / 2 + (it - first) * plot / (span + 1)

    return to_x, slot


def _axes(
    points: Sequence[ChartPoint],
    to_x: Callable[[int], float],
    to_y: Callable[[float], float],
    ticks: list[float],
) -> list[str]:
    out = []
    for tick in ticks:
        y = to_y(tick)
        out.append(f'<line class="grid" x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="ylabel" x="{LEFT - 6}" y="{y + 4:.1f}">{compact(tick)}</text>')
    every = max(1, math.ceil(len(points) / _MAX_X_LABELS))
    for index, point in enumerate(points):
        if index % every == 0 or index == len(points) - 1:
            x = to_x(point.iteration)
            out.append(
                f'<text class="xlabel" x="{x:.1f}" y="{HEIGHT - BOTTOM + 16}">{point.iteration}</text>'
            )
    out.append(
        f'<text class="axis-title" x="{(LEFT + WIDTH - RIGHT) / 2:.0f}" y="{HEIGHT - 2}">iteration</text>'
    )
    return out


def _series(
    points: Sequence[ChartPoint], to_x: Callable[[int], float], to_y: Callable[[float], float]
) -> list[str]:
    sent = [(to_x(p.iteration), to_y(p.sent)) for p in points]
    full = [(to_x(p.iteration), to_y(p.full)) for p in points]

    def path(coords: Sequence[tuple[float, float]]) -> str:
        return " ".join(f"{x:.1f},{y:.1f}" for x, y in coords)

    return [
        f'<polygon class="saved" points="{path([*full, *reversed(sent)])}"/>',
        f'<polyline class="full" points="{path(full)}"/>',
        f'<polyline class="sent" points="{path(sent)}"/>',
    ]


def _markers(
    points: Sequence[ChartPoint], to_x: Callable[[int], float], to_y: Callable[[float], float]
) -> list[str]:
    out = []
    for p in points:
        x = to_x(p.iteration)
        if p.error:
            out.append(f'<circle class="m-error" cx="{x:.1f}" cy="{to_y(p.sent):.1f}" r="4.5"/>')
        if p.summary:
            out.append(f'<path class="m-summary" d="M{x:.1f},{TOP - 8} l5,6 l-5,6 l-5,-6 z"/>')
        if p.retrieval:
            y = HEIGHT - BOTTOM - 2
            out.append(f'<path class="m-retrieval" d="M{x:.1f},{y - 8} l5,8 l-10,0 z"/>')
    return out


def _hits(points: Sequence[ChartPoint], to_x: Callable[[int], float], slot: float) -> list[str]:
    out = []
    for p in points:
        saved = f"{1 - p.sent / p.full:.0%}" if p.full else "—"
        tip = f"iteration {p.iteration}: sent {p.sent:,} tokens, full history {p.full:,} (saved {saved})"
        if p.error:
            tip += "; error"
        if p.summary:
            tip += "; summary landed"
        if p.retrieval:
            tip += "; retrieval"
        x = to_x(p.iteration) - slot / 2
        out.append(
            f'<rect class="hit" data-it="{p.iteration}" x="{x:.1f}" y="{TOP}" width="{slot:.1f}" '
            f'height="{HEIGHT - TOP - BOTTOM}"><title>{escape(tip)}</title></rect>'
        )
    return out


def svg_chart(points: Sequence[ChartPoint], *, log: bool = False, label: str = "") -> str:
    """The chart as an ``<svg>`` element (empty string when there is no point)."""
    if not points:
        return ""
    top = max(max(p.full, p.sent) for p in points)
    to_y, ticks = _y_scale(top, log)
    to_x, slot = _x_scale(points)
    body = [
        *_axes(points, to_x, to_y, ticks),
        *_series(points, to_x, to_y),
        *_markers(points, to_x, to_y),
        *_hits(points, to_x, slot),
    ]
    scale = "log" if log else "linear"
    return (
        f'<svg class="chart chart-{scale}" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'aria-label="{escape(label or "prompt tokens per iteration")} ({scale} scale)">'
        + "".join(body)
        + "</svg>"
    )
