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

from ._chart import ChartPoint, svg_chart
from ._payload import DEFAULT_EMBED_CHARS, build_payload
from ._totals import Totals
from ._view import RunView

__all__ = ["json_for_script", "render_page"]

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
    if run.task:
        task = run.task if len(run.task) <= 1500 else run.task[:1499] + "…"
        parts.append(f'<p class="task"><b>Task:</b> {escape(task)}</p>')
    if run.output:
        answer = run.output if len(run.output) <= 1500 else run.output[:1499] + "…"
        parts.append(f'<p class="answer"><b>Answer:</b> {escape(answer)}</p>')
    if run.error:
        parts.append(f'<p class="run-error"><b>Error:</b> {escape(run.error)}</p>')
    if run.warning:
        parts.append(f'<p class="warning">{escape(run.warning)}</p>')
    return "<header>" + "".join(parts) + "</header>"


def _headline(t: Totals) -> str:
    cls = "big negative" if t.savings < 0 else "big"
    return (
        '<section class="headline">'
        f'<span class="{cls}">{t.savings:.1%} saved</span>'
        f"<span><b>{t.sent_tokens:,}</b> prompt tokens sent vs <b>{t.full_tokens:,}</b> with the full "
        f"history ({t.saved_tokens:,} fewer; local token counts)</span></section>"
    )


def _chart(run: RunView) -> str:
    points = [
        ChartPoint(
            v.iteration,
            v.totals.sent_tokens,
            v.totals.full_tokens,
            error=bool(v.errors or v.totals.tool_errors),
            summary=bool(v.summaries),
            retrieval=bool(v.totals.retrievals),
        )
        for v in run.iterations
        if v.requests
    ]
    if not points:
        return '<section class="box"><p class="empty">No model request recorded.</p></section>'
    top_full = max(p.full for p in points)
    top_sent = max(1, *(p.sent for p in points))
    log = top_full / top_sent > _LOG_SCALE_RATIO
    linear_svg, log_svg = svg_chart(points, log=False), svg_chart(points, log=True)
    hide = ' hidden=""'
    linear_svg = linear_svg.replace("<svg ", f"<svg{hide} ", 1) if log else linear_svg
    log_svg = log_svg if log else log_svg.replace("<svg ", f"<svg{hide} ", 1)
    on_linear, on_log = ("", " on") if log else (" on", "")
    return (
        '<section class="box" id="chart"><div class="box-head"><h2>Prompt tokens per iteration</h2>'
        '<div class="legend"><span><i class="sw sw-sent"></i>sent (after the context pipeline)</span>'
        '<span><i class="sw sw-full"></i>full history (counterfactual)</span>'
        '<span><i class="sw sw-saved"></i>saved</span><span><i class="sw sw-error"></i>error</span>'
        '<span><i class="sw sw-summary"></i>summary landed</span>'
        '<span><i class="sw sw-retrieval"></i>retrieval</span></div>'
        f'<div class="toolbar"><button type="button" data-scale="linear" class="{on_linear.strip()}">linear'
        f'</button><button type="button" data-scale="log" class="{on_log.strip()}">log</button></div></div>'
        f"{linear_svg}{log_svg}"
        '<p class="muted">Click an iteration in the chart to open it.</p></section>'
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
    data = json_for_script(build_payload(run, embed_chars=embed_chars))
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
