"""A batch's cost per agent iteration against a single run's, and its memory per concurrent agent.

The model is a fake OpenAI-compatible server on 127.0.0.1 in its own process (its CPU is not
counted): each task reads ``--iterations - 1`` files of a workspace (``read_file``, one per
iteration), then answers. Everything on the client side is real: litellm over HTTP, the tools,
the context pipeline, the trace, and for the batch the result line read back from the trace.

* **single run**: one task at a time through ``Agent.run`` (built as ``tiered-agent run`` builds
  it), after a warm-up task; CPU and wall time per iteration.
* **batch**: ``run_batch`` of ``--tasks`` tasks at ``--concurrency``; the driver's CPU time per
  iteration (with one event loop, every agent runs in this process), and wall time.
* **memory**: for each concurrency in ``--memory`` a fresh process runs twice that many tasks
  while the server holds each answer ``--hold-ms`` (so that many agents are alive at once); its
  peak RSS minus the peak of concurrency 1, per extra agent.

    python benchmarks/batch.py [--tasks 200] [--concurrency 50] [--iterations 10] [--memory 1,50,200]
                               [--workers 0] [--policy tiered]
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import anyio

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("OPENAI_API_KEY", "sk-fake-benchmark-0123456789")

MODEL = "openai/gpt-4o-mini"
LINES = 40  # lines per file read: a small output, so the agents' own state dominates


# ------------------------------------------------------------------ the fake model (its own process)
def _reply(body: dict[str, Any], iterations: int) -> dict[str, Any]:
    messages = body["messages"]
    # The step is read from the newest message (the previous file's content, always shown verbatim):
    # a context policy may condense older iterations, so counting the prompt's messages would not do.
    last = str(messages[-1].get("content") or "") if messages[-1]["role"] == "tool" else ""
    step = int(last.split(" of file ", 1)[1].split(":", 1)[0]) + 1 if " of file " in last else 0
    message: dict[str, Any] = {"role": "assistant", "content": None}
    if step < iterations - 1:
        arguments = json.dumps({"path": f"file_{step}.txt"})
        message["tool_calls"] = [
            {
                "id": f"call_{step}",
                "type": "function",
                "function": {"name": "read_file", "arguments": arguments},
            }
        ]
    else:
        message["content"] = f"read {step} files"
    prompt = sum(len(str(m.get("content") or "")) for m in messages) // 4
    return {
        "id": f"chatcmpl-{step}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if step < iterations - 1 else "stop",
            }
        ],
        "usage": {"prompt_tokens": prompt, "completion_tokens": 20, "total_tokens": prompt + 20},
    }


def serve(port: Any, iterations: int, hold_ms: int) -> None:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            if hold_ms:
                time.sleep(hold_ms / 1000)
            payload = json.dumps(_reply(body, iterations)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: Any) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.request_queue_size = 1024
    port.value = server.server_address[1]
    server.serve_forever()


@dataclass
class FakeModel:
    process: Any
    base_url: str

    @classmethod
    def start(cls, iterations: int, hold_ms: int = 0) -> FakeModel:
        context = multiprocessing.get_context("spawn")
        port = context.Value("i", 0)
        process = context.Process(target=serve, args=(port, iterations, hold_ms), daemon=True)
        process.start()
        while not port.value:
            time.sleep(0.01)
        return cls(process, f"http://127.0.0.1:{port.value}/v1")

    def stop(self) -> None:
        self.process.terminate()
        self.process.join(5)


# ------------------------------------------------------------------ measurements
def workspace(root: Path, iterations: int) -> Path:
    ws = root / "ws"
    ws.mkdir(parents=True, exist_ok=True)
    for n in range(iterations):
        (ws / f"file_{n}.txt").write_text(
            "".join(f"line {i} of file {n}: value_{n}_{i}\n" for i in range(LINES))
        )
    return ws


def settings(base_url: str, ws: Path, traces: Path, policy: str) -> Any:
    from tiered_agent.batch import BatchSettings

    return BatchSettings(
        model=MODEL, api_base=base_url, workspace=ws, trace_dir=traces, policy=policy, summary_model="digest",
        max_iterations=1000,
    )  # fmt: skip


def single_runs(base_url: str, root: Path, iterations: int, policy: str, runs: int) -> dict[str, float]:
    """``runs`` tasks one after another through ``Agent.run``, as ``tiered-agent run`` builds it."""
    from tiered_agent._run_command import _agent
    from tiered_agent.batch._tasks import BatchTask
    from tiered_agent.context._presets import preset

    batch_settings = settings(base_url, workspace(root, iterations), root / "single", policy)

    async def one(n: int) -> int:
        task = BatchTask(f"s{n}", f"single task {n}")
        options = batch_settings.run_options(task, root / "single" / str(n))
        assert options.model is not None
        agent = _agent(
            options, options.model, options.api_base, preset(policy), lambda e: None, telemetry=None
        )
        return len((await agent.run(task.task)).iterations)

    anyio.run(one, -1)  # warm-up: litellm, tokenizers, the HTTP client
    cpu, wall = time.process_time(), time.perf_counter()
    done = sum(anyio.run(one, n) for n in range(runs))
    return _per_iteration(done, time.process_time() - cpu, time.perf_counter() - wall)


def batch_run(
    base_url: str, root: Path, iterations: int, policy: str, tasks: int, concurrency: int, workers: int
) -> dict[str, float]:
    from tiered_agent.batch import BatchTask, run_batch

    batch_settings = settings(base_url, workspace(root, iterations), root / "batch", policy)
    todo = [BatchTask(f"t{n}", f"batch task {n}") for n in range(tasks)]
    warm = [BatchTask("warm", "warm-up task")]
    anyio.run(lambda: run_batch(warm, root / "warm.jsonl", batch_settings, concurrency=1))
    cpu, wall = time.process_time(), time.perf_counter()
    report = anyio.run(
        lambda: run_batch(
            todo, root / "results.jsonl", batch_settings, concurrency=concurrency, workers=workers
        )
    )
    elapsed_cpu, elapsed = time.process_time() - cpu, time.perf_counter() - wall
    assert report.counts == {"answered": tasks}, report.counts
    done = sum(r.iterations for _, r in report.results if r is not None)
    return _per_iteration(done, elapsed_cpu, elapsed)


def _per_iteration(iterations: int, cpu_s: float, wall_s: float) -> dict[str, float]:
    return {
        "iterations": iterations,
        "cpu_ms_per_iteration": 1000 * cpu_s / iterations,
        "wall_ms_per_iteration": 1000 * wall_s / iterations,
        "iterations_per_s": iterations / wall_s,
    }


def memory_probe(concurrency: int, iterations: int, hold_ms: int, policy: str) -> dict[str, float]:
    """In this (fresh) process: peak RSS of ``2 x concurrency`` tasks at ``concurrency``."""
    from tiered_agent.batch import BatchTask, run_batch

    model = FakeModel.start(iterations, hold_ms)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            batch_settings = settings(model.base_url, workspace(root, iterations), root / "traces", policy)
            warm = [BatchTask("warm", "warm-up task")]
            anyio.run(lambda: run_batch(warm, root / "warm.jsonl", batch_settings, concurrency=1))
            before = _peak_rss_mb()
            todo = [BatchTask(f"m{n}", f"memory task {n}") for n in range(2 * concurrency)]
            report = anyio.run(
                lambda: run_batch(todo, root / "r.jsonl", batch_settings, concurrency=concurrency)
            )
            assert report.counts == {"answered": 2 * concurrency}, report.counts
            return {"concurrency": concurrency, "peak_rss_mb": _peak_rss_mb(), "warm_rss_mb": before}
    finally:
        model.stop()


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def memory(levels: list[int], iterations: int, hold_ms: int, policy: str) -> list[dict[str, float]]:
    out = []
    for level in levels:
        command = [sys.executable, __file__, "--probe", str(level), "--iterations", str(iterations)]
        command += ["--hold-ms", str(hold_ms), "--policy", policy]
        done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=1800)
        out.append(json.loads(done.stdout.strip().splitlines()[-1]))
    base = out[0]["peak_rss_mb"]
    for row in out[1:]:
        row["mb_per_extra_agent"] = (row["peak_rss_mb"] - base) / (row["concurrency"] - out[0]["concurrency"])
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--concurrency", type=int, default=50)
    parser.add_argument("--iterations", type=int, default=10)
    parser.add_argument("--single", type=int, default=10, help="single runs to time")
    parser.add_argument("--workers", type=int, default=0)
    parser.add_argument("--policy", default="tiered")
    parser.add_argument("--memory", default="1,50,200", help="concurrencies to measure memory at ('' skips)")
    parser.add_argument("--hold-ms", type=int, default=300)
    parser.add_argument("--probe", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(memory_probe(args.probe, args.iterations, args.hold_ms, args.policy)))
        return
    from tiered_agent._logging import configure_logging

    configure_logging(level="warning")
    model = FakeModel.start(args.iterations)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            single = single_runs(model.base_url, Path(tmp), args.iterations, args.policy, args.single)
            batched = batch_run(
                model.base_url,
                Path(tmp),
                args.iterations,
                args.policy,
                args.tasks,
                args.concurrency,
                args.workers,
            )
    finally:
        model.stop()
    print(f"single run ({args.single} runs x {args.iterations} iterations, one at a time):")
    print("  " + _line(single))
    print(f"batch ({args.tasks} tasks x {args.iterations} iterations, concurrency {args.concurrency}):")
    print("  " + _line(batched))
    ratio = batched["cpu_ms_per_iteration"] / single["cpu_ms_per_iteration"]
    print(f"  batch / single CPU per iteration: {ratio:.2f}x")
    levels = [int(x) for x in args.memory.split(",") if x.strip()]
    if len(levels) > 1:
        print(f"memory (server holds each answer {args.hold_ms} ms; 2 x concurrency tasks; peak RSS):")
        for row in memory(levels, args.iterations, args.hold_ms, args.policy):
            extra = (
                f", {row['mb_per_extra_agent']:.3f} MB per extra agent" if "mb_per_extra_agent" in row else ""
            )
            print(f"  concurrency {row['concurrency']:>4}: peak {row['peak_rss_mb']:.1f} MB{extra}")


def _line(row: dict[str, float]) -> str:
    return (
        f"{row['iterations']:.0f} iterations, {row['cpu_ms_per_iteration']:.2f} ms CPU and "
        f"{row['wall_ms_per_iteration']:.2f} ms wall per iteration, "
        f"{row['iterations_per_s']:.0f} iterations/s"
    )


if __name__ == "__main__":
    main()
