"""``tiered-agent trace html``: one self-contained HTML page for a run.

Inline CSS and JS (package data in ``assets/``), the chart as inline SVG, the
data as JSON in a ``<script type="application/json">`` block escaped so that no
text of the trace can close it, and a Content-Security-Policy that allows only
those two inline blocks (by hash) and no network at all.
"""

from __future__ import annotations

import base64
import hashlib
from html import escape
from importlib.resources import files
from typing import Any

import orjson

from .._trace import redact
from ._chart import NARROW, WIDE, ChartPoint, svg_chart
from ._payload import DEFAULT_EMBED_CHARS, build_payload
from ._totals import Totals
from ._view import RunView

__all__ = ["json_for_script", "render_page"]

_HEADER_CHARS = 600
_LOG_SCALE_RATIO = 8  # full history above 8x what was sent: a log scale shows both lines
_ESCAPES = {
    b"<": b"\\u003c",
    b">": b"\\u003e",
    b"&": b"\\u0026",
    "\u2028".encode(): b"\\u2028",
    "\u2029".encode(): b"\\u2029",
}


def json_for_script(value: Any) -> str:
    """JSON safe inside a ``<script>`` element: no ``<``, ``>``, ``&`` or line separators left raw."""
    data = orjson.dumps(value)
    for raw, escaped in _ESCAPES.items():
        data = data.replace(raw, escaped)
    return data.decode()


def _asset(name: str) -> str:
    return files(__package__).joinpath("assets", name).read_text(encoding="utf-8")


def _sha256(text: str) -> str:
    return "sha256-" + base64.b64encode(hashlib.sha256(text.encode()).digest()).decode()


def _card(label: str, value: str, *, bad: bool = False) -> str:
    cls = "card bad" if bad else "card"
    return f'<dl class="{cls}"><dt>{escape(label)}</dt><dd>{escape(value)}</dd></dl>'


def _cards(t: Totals) -> str:
    cost = "unknown" if t.cost is None else f"${t.cost:.4f}"
    cards = [
        _card("iterations", f"{t.iterations:,}"),
        _card("provider prompt tokens", f"{t.prompt_tokens:,}"),
        _card("cached prompt tokens", f"{t.cached_tokens:,}"),
        _card("completion tokens", f"{t.completion_tokens:,}"),
        _card("cost", cost),
        _card("tool calls", f"{t.tool_calls:,}"),
        _card(
            "tool errors / error events",
            f"{t.tool_errors:,} / {t.errors:,}",
            bad=bool(t.tool_errors or t.errors),
        ),
        _card("outputs truncated", f"{t.outputs_truncated:,}"),
        _card("masked / elided (in prompts)", f"{t.masked_outputs:,}"),
        _card("dedup hits", f"{t.dedup_hits:,}"),
        _card("retrievals", f"{t.retrievals:,}"),
        _card("summaries", f"{t.summaries:,}"),
    ]
    return '<section class="cards">' + "".join(cards) + "</section>"


def _header(run: RunView) -> str:
    stop = run.stop_label
    meta = [f"model {run.model or '?'}", f"file {run.path.name}"]
    context = run.config.get("context")
    if isinstance(context, dict) and isinstance(context.get("name"), str):
        meta.insert(1, f"policy {context['name']}")
    if run.segments > 1:
        meta.append(f"{run.segments} segments (resumed)")
    parts = [
        f"<h1>Run <code>{escape(run.run_id or '?')}</code> "
        f'<span class="badge stop-{escape(stop)}">{escape(stop)}</span></h1>',
        '<p class="meta">' + "".join(f"<span>{escape(m)}</span>" for m in meta) + "</p>",
    ]
    for label, cls, value in (
        ("Task", "task", run.task),
        ("Answer", "answer", run.output),
        ("Error", "run-error", run.error),
    ):
        if value:
            shown = value if len(value) <= _HEADER_CHARS else value[: _HEADER_CHARS - 1] + "…"
            parts.append(f'<p class="{cls}"><b>{label}:</b> {escape(redact(shown))}</p>')
    if run.warning:
        parts.append(f'<p class="warning">{escape(run.warning)}</p>')
    return "<header>" + "".join(parts) + "</header>"


def _headline(t: Totals) -> str:
    if t.full_tokens <= 0:
        return (
            '<section class="headline"><span>No context-pipeline record in this trace (an imported '
            f"recording, or no request yet): <b>{t.prompt_tokens:,}</b> prompt tokens reported by the "
            "provider.</span></section>"
        )
    cls = "big negative" if t.savings < 0 else "big"
    return (
        '<section class="headline">'
        f'<span class="{cls}">{t.savings:.1%} saved</span>'
        f"<span><b>{t.sent_tokens:,}</b> prompt tokens sent vs <b>{t.full_tokens:,}</b> with the full "
        f"history ({t.saved_tokens:,} fewer; local token counts)</span></section>"
    )


def _points(run: RunView) -> list[ChartPoint]:
    """One point per iteration; without pipeline records (imports), the provider's prompt tokens."""
    points = []
    for view in run.iterations:
        totals = view.totals
        if not totals.iterations:
            continue
        sent = totals.sent_tokens if run.measured else totals.prompt_tokens
        full = totals.full_tokens if run.measured else sent
        error = bool(view.errors or totals.tool_errors)
        points.append(
            ChartPoint(view.iteration, sent, full, error, bool(view.summaries), bool(totals.retrievals))
        )
    return points


def _chart(run: RunView) -> str:
    points = _points(run)
    if not points:
        return '<section class="box"><p class="empty">No model call recorded.</p></section>'
    note = "" if run.measured else " No context-pipeline record: the lines show the provider's prompt tokens."
    log = max(p.full for p in points) / max(1, *(p.sent for p in points)) > _LOG_SCALE_RATIO
    shown = "log" if log else "linear"
    scales = ("linear", "log")
    svgs = "".join(  # each scale in the desktop and the phone layout; CSS shows one layout
        svg if scale == shown else svg.replace("<svg ", '<svg hidden="" ', 1)
        for scale in scales
        for svg in (svg_chart(points, log=scale == "log", layout=layout) for layout in (WIDE, NARROW))
    )
    on = ' class="on"'
    buttons = "".join(
        f'<button type="button" data-scale="{scale}"{on if scale == shown else ""}>{scale}</button>'
        for scale in scales
    )
    return (
        '<section class="box" id="chart"><div class="box-head"><h2>Prompt tokens per iteration</h2>'
        '<div class="legend"><span><i class="sw sw-sent"></i>sent (after the context pipeline)</span>'
        '<span><i class="sw sw-full"></i>full history (counterfactual)</span>'
        '<span><i class="sw sw-saved"></i>saved</span><span><i class="sw sw-error"></i>error</span>'
        '<span><i class="sw sw-summary"></i>summary landed</span>'
        '<span><i class="sw sw-retrieval"></i>retrieval</span></div>'
        f'<div class="toolbar">{buttons}</div></div>{svgs}'
        f'<p class="muted">Click an iteration in the chart to open it.{note}</p></section>'
    )


_TOOLBAR = (
    '<div class="toolbar"><span class="muted">show</span>'
    '<button type="button" data-filter="all" class="on">all</button>'
    '<button type="button" data-filter="error">errors</button>'
    '<button type="button" data-filter="hidden">hidden parts</button>'
    '<button type="button" data-filter="retrieval">retrievals</button>'
    '<button type="button" data-filter="summary">summaries</button><span class="sep"></span>'
    '<button type="button" id="expand-all">expand all</button>'
    '<button type="button" id="collapse-all">collapse all</button></div>'
)


def render_page(run: RunView, *, embed_chars: int = DEFAULT_EMBED_CHARS) -> str:
    """The run as one self-contained HTML document (no network: see the module docstring)."""
    css, js = _asset("page.css"), _asset("page.js")
    policy = (
        f"default-src 'none'; script-src '{_sha256(js)}'; style-src '{_sha256(css)}'; "
        "img-src 'none'; base-uri 'none'; form-action 'none'"
    )
    totals = run.totals
    title = f"Run {run.run_id or run.path.stem} · {totals.savings:.0%} saved · tiered_agent trace"
    data = json_for_script(redact(build_payload(run, embed_chars=embed_chars)))  # older traces, imports
    return (
        '<!doctype html>\n<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">'  # fixed text and base64
        '<meta name="referrer" content="no-referrer">'
        f"<title>{escape(title)}</title><style>{css}</style></head><body>"
        f"{_header(run)}{_headline(totals)}{_cards(totals)}{_chart(run)}"
        '<section><div class="box-head"><h2>Summaries</h2></div><div id="summaries"></div></section>'
        f'<section><div class="box-head"><h2>Iterations</h2>{_TOOLBAR}</div><div id="iterations"></div>'
        "<noscript><p>The iteration list needs JavaScript; the data is in this page as JSON.</p></noscript>"
        "</section>"
        f"<footer>Generated by tiered-agent trace html from {escape(run.path.name)}. Message texts are "
        f"capped at {embed_chars:,} characters each; the trace holds them whole.</footer>"
        f'<script type="application/json" id="trace-data">{data}</script>'
        f"<script>{js}</script></body></html>\n"
    )
