"""Inspecting recorded runs: per-iteration views and totals of traces, and a self-contained HTML page.

The ``tiered-agent trace`` commands (``show``, ``stats``, ``html``) are built
on these; every trace is read leniently (:func:`load_trace`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .._lazy import lazy_exports

__all__ = ["RunStats", "RunView", "Totals", "build_run", "collect_stats", "load_trace", "render_page"]

_LOCATIONS = {
    "RunStats": "._stats",
    "collect_stats": "._stats",
    "RunView": "._view",
    "build_run": "._view",
    "Totals": "._totals",
    "load_trace": "._load",
    "render_page": "._page",
}

if TYPE_CHECKING:
    from ._load import load_trace
    from ._page import render_page
    from ._stats import RunStats, collect_stats
    from ._totals import Totals
    from ._view import RunView, build_run

__getattr__ = lazy_exports(__name__, _LOCATIONS, globals())


def __dir__() -> list[str]:
    return sorted(__all__)
