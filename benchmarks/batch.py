"""A batch's cost per agent iteration against a single run's, and its memory per concurrent agent.

The model is a fake OpenAI-compatible server on 127.0.0.1 in its own process (its CPU is not
counted): each task reads ``--iterations - 1`` files of a workspace (``read_file``, one per
iteration), then answers. Everything on the client side is real: litellm over HTTP, the tools,
the context pipeline, the trace, and for the batch the result line read back from the trace.

* **single run**: one task at a time through ``Agent.run`` (built as ``tiered-agent run`` builds
  it), after a warm-up task; CPU and wall time per iteration.
* **batch**: ``run_batch`` of ``--tasks`` tasks at ``--concurrency``; the driver's CPU time per
  iteration (with one event loop, every agent runs in this process), and wall time.
* **memory**: for each concurrency in ``--memory`` a fresh process runs twice that many tasks (each
  reading its own files, as a real batch's tasks do; ``--shared-files``: all the same files)
  while the server holds each answer ``--hold-ms`` (so that many agents are alive at once); the
  most its RSS reaches (sampled every 5 ms) minus its RSS after a warm-up task, per agent.

Both run as the CLI runs them: litellm's objects frozen out of the garbage collector's way once it is
imported (``settle_heap_on_import``). Single runs and batches alternate, ``--repeat`` times, and
each keeps its attempt with the least CPU: the noise of a shared machine only adds.

    python benchmarks/batch.py [--tasks 200] [--concurrency 50] [--iterations 10] [--memory 50,200]
                               [--workers 0] [--policy tiered] [--repeat 3] [--hold-ms 300]
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import json
import multiprocessing
import os
import resource
import subprocess
import sys
import tempfile
import threading
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
def workspace(root: Path, iterations: int, name: str = "ws") -> Path:
    """The files a task reads; a ``name`` other than ``ws`` gets its own values (another task's files)."""
    ws = root / name
    ws.mkdir(parents=True, exist_ok=True)
    mark = "" if name == "ws" else f"{name}_"
    for n in range(iterations):
        (ws / f"file_{n}.txt").write_text(
            "".join(f"line {i} of file {n}: value_{mark}{n}_{i}\n" for i in range(LINES))
        )
    return ws


def settings(base_url: str, ws: Path, traces: Path, policy: str) -> Any:
    from tiered_agent.batch import BatchSettings

    return BatchSettings(
        model=MODEL, api_base=base_url, workspace=ws, trace_dir=traces, policy=policy, summary_model="digest",
        max_iterations=1000,
    )  # fmt: skip


def single_runs(
    base_url: str, root: Path, iterations: int, policy: str, runs: int, repeat: int
) -> dict[str, float]:
    """``runs`` tasks one after another through ``Agent.run``, as ``tiered-agent run`` builds it."""
    from tiered_agent.batch._tasks import BatchTask
    from tiered_agent.cli._run import _agent
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
    best: dict[str, float] = {}
    for attempt in range(repeat):
        cpu, wall = time.process_time(), time.perf_counter()
        done = sum(anyio.run(one, attempt * runs + n) for n in range(runs))
        best = _best(best, _per_iteration(done, time.process_time() - cpu, time.perf_counter() - wall))
    return best


def batch_run(
    base_url: str, root: Path, iterations: int, policy: str, args: argparse.Namespace
) -> dict[str, float]:
    """``run_batch`` of ``args.tasks`` tasks at ``args.concurrency``, ``args.repeat`` times."""
    from tiered_agent.batch import BatchTask, run_batch

    batch_settings = settings(base_url, workspace(root, iterations), root / "batch", policy)
    todo = [BatchTask(f"t{n}", f"batch task {n}") for n in range(args.tasks)]
    warm = [BatchTask("warm", "warm-up task")]
    anyio.run(lambda: run_batch(warm, root / "warm.jsonl", batch_settings, concurrency=1))
    best: dict[str, float] = {}
    for attempt in range(args.repeat):
        attempt_settings = dataclasses.replace(batch_settings, trace_dir=root / f"batch-{attempt}")
        out = root / f"results-{attempt}.jsonl"

        async def main(run_settings: Any = attempt_settings, out: Path = out) -> Any:
            return await run_batch(
                todo, out, run_settings, concurrency=args.concurrency, workers=args.workers
            )

        cpu, wall = time.process_time(), time.perf_counter()
        report = anyio.run(main)
        elapsed_cpu, elapsed = time.process_time() - cpu, time.perf_counter() - wall
        assert report.counts == {"answered": args.tasks}, report.counts
        done = sum(r.iterations for _, r in report.results if r is not None)
        best = _best(best, _per_iteration(done, elapsed_cpu, elapsed))
    return best


def _per_iteration(iterations: int, cpu_s: float, wall_s: float) -> dict[str, float]:
    return {
        "iterations": iterations,
        "cpu_ms_per_iteration": 1000 * cpu_s / iterations,
        "wall_ms_per_iteration": 1000 * wall_s / iterations,
        "iterations_per_s": iterations / wall_s,
    }


def _best(best: dict[str, float], new: dict[str, float]) -> dict[str, float]:
    """The attempt with the least CPU per iteration (a shared machine's noise only adds)."""
    return new if not best or new["cpu_ms_per_iteration"] < best["cpu_ms_per_iteration"] else best


# ------------------------------------------------------------------ memory
def memory_probe(
    concurrency: int, iterations: int, hold_ms: int, policy: str, shared: bool = False
) -> dict[str, float]:
    """In this (fresh) process: RSS after a warm-up task, and the most it reaches while
    ``2 x concurrency`` tasks run at ``concurrency`` (sampled every 5 ms). Each task reads its own
    files, as the tasks of a real batch do (``shared``: every task reads the same files, which
    flatters anything shared between runs)."""
    from tiered_agent.batch import BatchTask, run_batch

    model = FakeModel.start(iterations, hold_ms)
    try:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            batch_settings = settings(model.base_url, workspace(root, iterations), root / "traces", policy)
            warm = [BatchTask("warm", "warm-up task")]
            anyio.run(lambda: run_batch(warm, root / "warm.jsonl", batch_settings, concurrency=1))
            spaces = [
                None if shared else workspace(root, iterations, f"m{n}") for n in range(2 * concurrency)
            ]
            todo = [BatchTask(f"m{n}", f"memory task {n}", space) for n, space in enumerate(spaces)]
            gc.collect()
            before = _rss_mb()
            sampler = _Sampler()
            sampler.start()
            report = anyio.run(
                lambda: run_batch(todo, root / "r.jsonl", batch_settings, concurrency=concurrency)
            )
            sampler.done.set()
            sampler.join()
            assert report.counts == {"answered": 2 * concurrency}, report.counts
            return {"concurrency": concurrency, "rss_before_mb": before, "rss_max_mb": sampler.most}
    finally:
        model.stop()


class _Sampler(threading.Thread):
    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.done = threading.Event()
        self.most = 0.0

    def run(self) -> None:
        while not self.done.wait(0.005):
            self.most = max(self.most, _rss_mb())


def _rss_mb() -> float:
    with open("/proc/self/statm") as statm:
        return int(statm.read().split()[1]) * resource.getpagesize() / 2**20


def memory(
    levels: list[int], iterations: int, hold_ms: int, policy: str, shared: bool = False
) -> list[dict[str, float]]:
    out = []
    for level in levels:
        command = [sys.executable, __file__, "--probe", str(level), "--iterations", str(iterations)]
        command += ["--hold-ms", str(hold_ms), "--policy", policy] + (["--shared-files"] if shared else [])
        done = subprocess.run(command, capture_output=True, text=True, check=True, timeout=1800)
        row = json.loads(done.stdout.strip().splitlines()[-1])
        row["mb_per_agent"] = (row["rss_max_mb"] - row["rss_before_mb"]) / level
        out.append(row)
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
    parser.add_argument("--repeat", type=int, default=3, help="attempts per timing; the least CPU is kept")
    parser.add_argument("--memory", default="50,200", help="concurrencies to measure memory at ('' skips)")
    parser.add_argument("--hold-ms", type=int, default=300)
    parser.add_argument("--probe", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--shared-files",
        action="store_true",
        help="memory: all tasks read one set of files",
    )
    args = parser.parse_args()
    from tiered_agent._litellm import settle_heap_on_import

    settle_heap_on_import()  # as the CLI does: litellm's objects out of the garbage collector's way
    if args.probe:
        print(
            json.dumps(
                memory_probe(args.probe, args.iterations, args.hold_ms, args.policy, args.shared_files)
            )
        )
        return
    from tiered_agent._logging import configure_logging

    configure_logging(level="warning")
    model = FakeModel.start(args.iterations)
    single: dict[str, float] = {}
    batched: dict[str, float] = {}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            for attempt in range(args.repeat):  # interleaved: both see the same machine, attempt by attempt
                root = Path(tmp) / str(attempt)
                once = argparse.Namespace(**{**vars(args), "repeat": 1})
                single = _best(
                    single, single_runs(model.base_url, root, args.iterations, args.policy, args.single, 1)
                )
                batched = _best(batched, batch_run(model.base_url, root, args.iterations, args.policy, once))
    finally:
        model.stop()
    print(f"single run ({args.single} runs x {args.iterations} iterations, one at a time):")
    print("  " + _line(single))
    print(f"batch ({args.tasks} tasks x {args.iterations} iterations, concurrency {args.concurrency}):")
    print(f"  (timings: the best of {args.repeat} attempts)")
    print("  " + _line(batched))
    ratio = batched["cpu_ms_per_iteration"] / single["cpu_ms_per_iteration"]
    print(f"  batch / single CPU per iteration: {ratio:.2f}x")
    levels = [int(x) for x in args.memory.split(",") if x.strip()]
    if levels:
        print(f"memory (server holds each answer {args.hold_ms} ms; 2 x concurrency tasks; RSS):")
        for row in memory(levels, args.iterations, args.hold_ms, args.policy, args.shared_files):
            print(
                f"  concurrency {row['concurrency']:>4}: {row['rss_before_mb']:.1f} MB warm, at most "
                f"{row['rss_max_mb']:.1f} MB while running: {row['mb_per_agent']:.3f} MB per concurrent agent"
            )


def _line(row: dict[str, float]) -> str:
    return (
        f"{row['iterations']:.0f} iterations, {row['cpu_ms_per_iteration']:.2f} ms CPU and "
        f"{row['wall_ms_per_iteration']:.2f} ms wall per iteration, "
        f"{row['iterations_per_s']:.0f} iterations/s"
    )


if __name__ == "__main__":
    main()
