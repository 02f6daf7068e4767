"""What a missing or broken OpenTelemetry collector costs a CLI run: seconds and stderr lines.

Runs ``python -m tiered_agent run --otel`` (one model call against the loopback fake OpenAI
server) with ``OTEL_EXPORTER_OTLP_ENDPOINT`` pointing at: no collector at all (``dead``), one that
accepts connections and never answers (``hang``), one that takes spans and answers 405 to metrics
(``traces-only``, as Arize Phoenix does), a healthy receiver (``ok``), and without ``--otel``
(``off``, the baseline). ``--tree`` runs another checkout of the package (its ``PYTHONPATH``).

    python benchmarks/otel_exit.py [--runs 1] [--tree PATH] [--modes off,ok,dead,hang,traces-only]
"""

from __future__ import annotations

import argparse
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_openai_server import FakeOpenAIServer  # noqa: E402 - from tests/
from otlp_receiver import OTLPReceiver  # noqa: E402 - from tests/


@contextmanager
def dead() -> Iterator[str]:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    yield f"http://127.0.0.1:{port}"


@contextmanager
def hang() -> Iterator[str]:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(64)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(listener.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}"
    finally:
        listener.close()
        for connection in held:
            connection.close()


@contextmanager
def receiver(traces_only: bool) -> Iterator[str]:
    with OTLPReceiver(traces_only=traces_only) as running:
        yield running.endpoint


COLLECTORS: dict[str, Callable[[], AbstractContextManager[str]]] = {
    "off": dead,
    "ok": lambda: receiver(False),
    "dead": dead,
    "hang": hang,
    "traces-only": lambda: receiver(True),
}


def measure(mode: str, tree: Path, workdir: Path) -> tuple[float, int]:
    """(seconds from start to exit, stderr lines) of one CLI run."""
    with COLLECTORS[mode]() as endpoint, FakeOpenAIServer() as server:
        server.respond = lambda request: "Done."
        env = {
            k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and not k.startswith("OTEL_")
        }
        env.update(PYTHONPATH=str(tree), OPENAI_API_KEY="sk-placeholder", COLUMNS="200")
        if mode != "off":
            env["OTEL_EXPORTER_OTLP_ENDPOINT"] = endpoint
        command = [sys.executable, "-m", "tiered_agent", "run", "Say done.", "--model", "openai/gpt-4o-mini"]
        command += [
            "--api-base",
            server.base_url,
            "--trace-dir",
            str(workdir),
            *(["--otel"] * (mode != "off")),
        ]
        started = time.perf_counter()
        proc = subprocess.run(command, env=env, cwd=workdir, capture_output=True, text=True, check=False)
        seconds = time.perf_counter() - started
    if proc.returncode != 0:
        raise SystemExit(f"{mode}: exit {proc.returncode}: {proc.stderr[-500:]}")
    return seconds, len([line for line in proc.stderr.splitlines() if line.strip()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=1)
    parser.add_argument("--tree", type=Path, default=ROOT, help="the checkout whose package runs")
    parser.add_argument("--modes", default=",".join(COLLECTORS))
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        for mode in args.modes.split(","):
            results = [measure(mode, args.tree, Path(tmp)) for _ in range(args.runs)]
            seconds = statistics.median(s for s, _ in results)
            print(f"{mode:12} {seconds:6.1f} s to exit, {results[-1][1]} stderr line(s)")


if __name__ == "__main__":
    main()
