"""Offline OpenTelemetry demo: ``tiered-agent run --otel`` against the loopback fake model server,
exporting over OTLP/HTTP to a local receiver; prints the span tree and the metrics the receiver
decoded.

    pip install -e ".[test]" && python scripts/otel_demo.py

No network and no API key: the model is the tests' fake OpenAI-compatible server on 127.0.0.1
(scripted: two concurrent reads, a search, then the answer) and the receiver is
``tests/otlp_receiver.py``. Set ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` to see
the opt-in content attributes too.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_openai_server import FakeOpenAIServer, HTTPRequest  # noqa: E402
from fakes import make_usage, text_reply, tool_reply  # noqa: E402
from otlp_receiver import OTLPReceiver, ReceivedMetric, ReceivedSpan  # noqa: E402
from rich.console import Console  # noqa: E402
from rich.tree import Tree  # noqa: E402

SHOWN = (
    "gen_ai.usage.input_tokens",
    "gen_ai.usage.output_tokens",
    "gen_ai.usage.cache_read.input_tokens",
    "gen_ai.tool.call.id",
    "tiered_agent.prompt.tokens",
    "tiered_agent.prompt.full_history_tokens",
    "tiered_agent.context.truncated_outputs",
    "tiered_agent.tool.output_chars",
    "tiered_agent.run.stop_reason",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.result",
)


def model(request: HTTPRequest) -> object:
    """The scripted model: read two files at once, search, answer."""
    step = sum(1 for m in request.body["messages"] if m["role"] == "assistant")
    usage = make_usage(prompt=800 + 400 * step, completion=40, cached=600 * step)
    if step == 0:
        reads = [("c1", "read_file", {"path": "pyproject.toml"}), ("c2", "list_dir", {"path": "."})]
        return tool_reply(reads, usage)
    if step == 1:
        return tool_reply([("c3", "search_text", {"pattern": "opentelemetry"})], usage)
    return text_reply("The otel extra adds the OpenTelemetry SDK and the OTLP/HTTP exporter.", usage)


def main() -> int:
    console = Console(highlight=False)
    with FakeOpenAIServer() as server, OTLPReceiver() as receiver, tempfile.TemporaryDirectory() as tmp:
        server.respond = model
        env = os.environ | {
            "OPENAI_API_KEY": "sk-demo-not-real",
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.endpoint,
        }
        command = [sys.executable, "-m", "tiered_agent", "run", "What does the otel extra install?"]
        command += ["--model", "openai/gpt-4o-mini", "--api-base", server.base_url, "--otel"]
        command += ["--workspace", str(ROOT), "--trace-dir", tmp]
        code = subprocess.run(command, env=env, check=False).returncode
    console.print(f"\n[bold]{len(receiver.spans)} spans received over OTLP/HTTP at {receiver.endpoint}[/]")
    for root in (s for s in receiver.spans if not s.parent_span_id):
        console.print(_tree(root, receiver.spans))
    console.print(_metrics(list(receiver.latest().values())))
    return code


def _metrics(metrics: list[ReceivedMetric]) -> Tree:
    """Each metric's data points as last exported (cumulative: the run's totals)."""
    tree = Tree(f"[bold]{len(metrics)} metrics received over OTLP/HTTP[/]")
    for metric in sorted(metrics, key=lambda m: m.name):
        node = tree.add(f"[bold]{metric.name}[/] [dim]{metric.kind}, {metric.unit}[/]")
        for point in metric.points:
            shown = " ".join(f"{k.removeprefix('gen_ai.')}={v}" for k, v in sorted(point.attributes.items()))
            if metric.kind == "histogram":
                node.add(f"count={point.count} sum={point.sum:,.6g}  [dim]{shown}[/]")
            else:
                node.add(f"value={point.value:,}  [dim]{shown}[/]")
    return tree


def _tree(span: ReceivedSpan, spans: list[ReceivedSpan]) -> Tree:
    tree = Tree(_label(span))
    children = sorted((s for s in spans if s.parent_span_id == span.span_id), key=lambda s: s.start_ns)
    for child in children:
        tree.add(_tree(child, spans))
    return tree


def _label(span: ReceivedSpan) -> str:
    shown = ", ".join(f"{k}={_short(span.attributes[k])}" for k in SHOWN if k in span.attributes)
    status = " [red]ERROR[/]" if span.status_code == 2 else ""
    return f"[bold]{span.name}[/] {(span.end_ns - span.start_ns) / 1e6:.1f} ms{status}  [dim]{shown}[/]"


def _short(value: object, limit: int = 80) -> str:
    text = str(value)
    return text if len(text) <= limit else text[:limit] + "…"


if __name__ == "__main__":
    sys.exit(main())
