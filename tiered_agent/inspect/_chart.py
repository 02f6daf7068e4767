"""The page's chart: prompt tokens sent vs full-history tokens per iteration, as inline SVG.

Generated here (no charting library, no network): two polylines, the saved area
between them, markers for errors, summaries and retrievals, and one invisible
hit area per iteration (``data-it``) the page's script turns into a link.

Two layouts: :data:`WIDE` for a desktop column and :data:`NARROW` for a phone
(the page shows one of them by a CSS media query), so the axis text stays
readable, >= 10 px, at a 390 px wide screen. The linear y-axis ends at the
first step of a 1-2-5 ladder above the maximum (59k: 60k, not 100k); the log
axis spans the decades the data occupies (2.3k-59k: 1k-100k), not from 1.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape

from ._values import compact

__all__ = ["NARROW", "WIDE", "ChartPoint", "Layout", "svg_chart", "tick_label", "y_axis"]


@dataclass(frozen=True, slots=True)
class Layout:
    """The chart's geometry in SVG user units; the page scales it to the column's width."""

    name: str
    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int
    max_ticks: int  # y intervals at most
    max_x_labels: int


WIDE = Layout("wide", 960, 280, 64, 16, 18, 34, 5, 12)
NARROW = Layout("narrow", 360, 250, 46, 10, 18, 32, 5, 5)


@dataclass(frozen=True, slots=True)
class ChartPoint:
    iteration: int
    sent: int
    full: int
    error: bool = False
    summary: bool = False
    retrieval: bool = False


def _linear_axis(top: float, max_ticks: int) -> list[float]:
    """Ticks from 0 to the first multiple of a 1-2-2.5-5 step at or above ``top``, at most
    ``max_ticks`` intervals (59,000 and 5: 0, 20k, 40k, 60k)."""
    if top <= 0:
        return [0.0, 1.0]
    power = 10 ** math.floor(math.log10(top / max_ticks))
    step = next(m * power for m in (1, 2, 2.5, 5, 10, 20) if math.ceil(top / (m * power)) <= max_ticks)
    step = max(step, 1)  # token counts: no fractional ticks
    return [float(step * i) for i in range(math.ceil(top / step) + 1)]


def tick_label(value: float) -> str:
    """An axis label: :func:`compact` without zeros after the point (``20k``, ``2.5k``, ``1.5M``)."""
    text = compact(value)
    number, unit = (text[:-1], text[-1]) if text[-1:].isalpha() else (text, "")
    if "." in number:
        number = number.rstrip("0").rstrip(".")
    return number + unit


def _log_axis(low: float, top: float) -> list[float]:
    """Powers of ten from the one at or below the smallest value to the one at or above the largest;
    with at most two decades, the 2x and 5x steps between them too."""
    first = math.floor(math.log10(max(low, 1)))
    last = max(first + 1, math.ceil(math.log10(max(top, 1))))
    ticks = [10.0**e for e in range(first, last + 1)]
    if last - first <= 2:
        ticks = sorted({*ticks, *(m * 10.0**e for e in range(first, last) for m in (2, 5))})
    return ticks


def y_axis(points: Sequence[ChartPoint], *, log: bool, max_ticks: int = WIDE.max_ticks) -> list[float]:
    """The y-axis ticks for ``points``: the first is the axis' bottom, the last its top."""
    top = max(max(p.full, p.sent) for p in points)
    if not log:
        return _linear_axis(top, max_ticks)
    positive = [v for p in points for v in (p.sent, p.full) if v > 0]
    return _log_axis(min(positive, default=1), top)


def _y_scale(ticks: list[float], log: bool, layout: Layout) -> Callable[[float], float]:
    plot = layout.height - layout.top - layout.bottom
    low, high = ticks[0], ticks[-1]
    if log:
        bottom, span = math.log10(low), math.log10(high) - math.log10(low)
        return lambda v: layout.top + plot * (1 - (math.log10(max(v, low)) - bottom) / span)
    return lambda v: layout.top + plot * (1 - v / high)


def _x_scale(points: Sequence[ChartPoint], layout: Layout) -> tuple[Callable[[int], float], float]:
    first, last = points[0].iteration, points[-1].iteration
    plot = layout.width - layout.left - layout.right
    span = max(last - first, 1)
    slot = plot / (span + 1)

    def to_x(it: int) -> float:
        return layout.left + slot / 2 + (it - first) * plot / (span + 1)

    return to_x, slot


def _axes(
    points: Sequence[ChartPoint],
    to_x: Callable[[int], float],
    to_y: Callable[[float], float],
    ticks: list[float],
    layout: Layout,
) -> list[str]:
    out = []
    right = layout.width - layout.right
    for tick in ticks:
        y = to_y(tick)
        out.append(f'<line class="grid" x1="{layout.left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}"/>')
        out.append(f'<text class="ylabel" x="{layout.left - 6}" y="{y + 4:.1f}">{tick_label(tick)}</text>')
    every = max(1, math.ceil(len(points) / layout.max_x_labels))
    labelled = [i for i in range(len(points)) if i % every == 0]
    last = len(points) - 1
    if last - labelled[-1] >= every / 2:
        labelled.append(last)
    elif labelled[-1] != last:
        labelled[-1] = last  # the last iteration, in place of a label that would touch it
    baseline = layout.height - layout.bottom + 16
    for index in labelled:
        x = to_x(points[index].iteration)
        out.append(f'<text class="xlabel" x="{x:.1f}" y="{baseline}">{points[index].iteration}</text>')
    middle = (layout.left + right) / 2
    out.append(f'<text class="axis-title" x="{middle:.0f}" y="{layout.height - 2}">iteration</text>')
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
    points: Sequence[ChartPoint],
    to_x: Callable[[int], float],
    to_y: Callable[[float], float],
    layout: Layout,
) -> list[str]:
    out = []
    for p in points:
        x = to_x(p.iteration)
        if p.error:
            out.append(f'<circle class="m-error" cx="{x:.1f}" cy="{to_y(p.sent):.1f}" r="4.5"/>')
        if p.summary:
            out.append(f'<path class="m-summary" d="M{x:.1f},{layout.top - 8} l5,6 l-5,6 l-5,-6 z"/>')
        if p.retrieval:
            y = layout.height - layout.bottom - 2
            out.append(f'<path class="m-retrieval" d="M{x:.1f},{y - 8} l5,8 l-10,0 z"/>')
    return out


def _hits(
    points: Sequence[ChartPoint], to_x: Callable[[int], float], slot: float, layout: Layout
) -> list[str]:
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
            f'<rect class="hit" data-it="{p.iteration}" x="{x:.1f}" y="{layout.top}" width="{slot:.1f}" '
            f'height="{layout.height - layout.top - layout.bottom}"><title>{escape(tip)}</title></rect>'
        )
    return out


def svg_chart(
    points: Sequence[ChartPoint], *, log: bool = False, label: str = "", layout: Layout = WIDE
) -> str:
    """The chart as an ``<svg>`` element (empty string when there is no point)."""
    if not points:
        return ""
    ticks = y_axis(points, log=log, max_ticks=layout.max_ticks)
    to_y = _y_scale(ticks, log, layout)
    to_x, slot = _x_scale(points, layout)
    body = [
        *_axes(points, to_x, to_y, ticks, layout),
        *_series(points, to_x, to_y),
        *_markers(points, to_x, to_y, layout),
        *_hits(points, to_x, slot, layout),
    ]
    scale = "log" if log else "linear"
    return (
        f'<svg class="chart chart-{scale} chart-{layout.name}" viewBox="0 0 {layout.width} {layout.height}" '
        'role="img" '
        f'aria-label="{escape(label or "prompt tokens per iteration")} ({scale} scale)">'
        + "".join(body)
        + "</svg>"
    )
