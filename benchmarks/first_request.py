"""Start-up cost of the CLI: the time from ``tiered-agent run`` starting to its first model request.

Runs ``python -m tiered_agent run`` against the loopback fake OpenAI server (tests/fake_openai_server.py)
a few times and prints, per run, the seconds until the server received the first chat request and
until the process exited (it answers at once), and the CPU seconds the process used (user + system:
steadier than wall time on a shared machine). ``--python`` picks the interpreter, so an install in
another virtual environment can be measured (e.g. a fresh ``pip install -e .`` under /tmp):

    python benchmarks/first_request.py [--python /tmp/venv/bin/python] [--runs 5]
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from fake_openai_server import FakeOpenAIServer, HTTPRequest  # noqa: E402 - from tests/


def measure(python: str, workdir: Path) -> tuple[float, float, float]:
    """(seconds to the first model request, seconds to exit, CPU seconds) for one CLI run."""
    first = threading.Event()
    seen: list[float] = []

    def answer(request: HTTPRequest) -> str:
        if not seen:
            seen.append(time.perf_counter())
            first.set()
        return "Done."

    with FakeOpenAIServer() as server:
        server.respond = answer
        env = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY") and k != "PYTHONPATH"}
        env.update({"OPENAI_API_KEY": "sk-placeholder", "TIERED_AGENT_MODEL": "openai/gpt-4o-mini"})
        command = [python, "-m", "tiered_agent", "run", "Say done.", "--api-base", server.base_url]
        command += ["--trace-dir", str(workdir / "traces"), "--workspace", str(workdir)]
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        proc = subprocess.run(command, env=env, cwd=workdir, capture_output=True, text=True, check=False)
        ended = time.perf_counter()
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0 or not seen:
        raise SystemExit(f"the run failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return seen[0] - started, ended - started, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--python", default=sys.executable, help="interpreter of the install to measure")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    firsts, totals, cpus = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(args.runs):
            first, total, cpu = measure(args.python, Path(tmp))
            firsts.append(first)
            totals.append(total)
            cpus.append(cpu)
            print(f"first request {first:.2f} s, exit {total:.2f} s, CPU {cpu:.2f} s")
    first, total, cpu = (statistics.median(values) for values in (firsts, totals, cpus))
    print(
        f"median of {args.runs}: first request {first:.2f} s (min {min(firsts):.2f}), "
        f"exit {total:.2f} s, CPU {cpu:.2f} s"
    )


if __name__ == "__main__":
    main()
