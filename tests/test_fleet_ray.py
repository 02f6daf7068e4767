"""Ray: the bench's replay and a batch on a two-node cluster on 127.0.0.1, and ``--ray local``.

The runs land on both nodes and the bench JSON equals the process pool's; the batch's actors are
spread over both nodes. Skipped where Ray is not installed. The cluster is torn down by process
group (tests/ray_cluster.py), never with ``ray stop``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from batch_model import KEY, MODEL, NOTES, BatchModel, write_tasks
from fake_openai_server import FakeOpenAIServer
from ray_cluster import RayCluster, ray_executable, two_node_cluster

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(ray_executable() is None, reason="Ray is not installed (the ray extra)"),
    pytest.mark.xdist_group("ray"),  # one pytest-xdist worker runs them, one cluster at a time
]

ROOT = Path(__file__).resolve().parents[1]
TRACES = sorted((ROOT / "traces").rglob("*.jsonl"))[:6]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RayCluster]:
    with two_node_cluster({"OPENAI_API_KEY": KEY}) as ready:  # the nodes' own environment
        yield ready


def cli(args: list[str], env: dict[str, str], cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "tiered_agent", "--log-level", "info", "--log-json", *args],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def events(stderr: str, name: str) -> list[dict[str, Any]]:
    found = []
    for line in stderr.splitlines():
        try:
            data = json.loads(line)
        except ValueError:
            continue  # Ray's own lines
        if isinstance(data, dict) and data.get("event") == name:
            found.append(data)
    return found


def bench_json(path: Path) -> dict[str, Any]:
    document: dict[str, Any] = json.loads(path.read_text())
    document.pop("timing")
    return document


def test_bench_runs_land_on_both_nodes_and_the_json_equals_the_pools(
    cluster: RayCluster, tmp_path: Path
) -> None:
    common = ["bench", *map(str, TRACES), "--policies", "tiered,masking"]
    on_ray = cli([*common, "--out", "ray", "--ray", cluster.address], cluster.env, tmp_path)
    assert on_ray.returncode == 0, on_ray.stderr[-3000:]
    pooled = cli([*common, "--out", "pool", "--workers", "2"], cluster.env, tmp_path)
    assert pooled.returncode == 0, pooled.stderr[-3000:]

    assert bench_json(tmp_path / "ray" / "bench.json") == bench_json(tmp_path / "pool" / "bench.json")
    maps = {e["unit"]: e for e in events(on_ray.stderr, "ray.tasks_done")}  # counting, then replaying
    done = maps["record_unit"]
    assert done["tasks"] == len(TRACES) and len(done["nodes"]) == 2  # both nodes replayed runs
    [connected] = events(on_ray.stderr, "ray.connected")
    assert (connected["nodes"], connected["cpus"]) == (2, 2)


def test_a_batch_on_the_cluster_spreads_its_agents_over_both_nodes(
    cluster: RayCluster, tmp_path: Path
) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    (workspace / "notes.txt").write_text(NOTES)
    tasks = write_tasks(tmp_path / "tasks.jsonl", list("abcdef"))
    with FakeOpenAIServer() as server:
        server.respond = model = BatchModel()
        args = [
            "batch",
            str(tasks),
            "--model",
            MODEL,
            "--api-base",
            server.base_url,
            "--out",
            "results.jsonl",
        ]
        args += ["--workspace", str(workspace), "--summary-model", "digest", "--concurrency", "4"]
        done = cli([*args, "--workers", "2", "--ray", cluster.address], cluster.env, tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = [json.loads(line) for line in (tmp_path / "results.jsonl").read_text().splitlines()]
    assert sorted(r["id"] for r in rows) == list("abcdef")
    assert all(r["stop_reason"] == "answered" for r in rows) and sum(model.calls.values()) == 12
    [closed] = events(done.stderr, "batch.ray_lanes_closed")
    assert closed["lanes"] == 2 and len(closed["nodes"]) == 2  # one actor on each node
    assert KEY not in done.stdout + done.stderr


def test_ray_local_starts_ray_for_the_bench_and_stops_it(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    run = cli(
        ["bench", *map(str, TRACES[:2]), "--policies", "tiered", "--out", "out", "--ray"], env, tmp_path
    )
    assert run.returncode == 0, run.stderr[-3000:]
    [connected] = events(run.stderr, "ray.connected")
    assert connected["address"] == "local" and connected["reused"] is False
    assert json.loads((tmp_path / "out" / "bench.json").read_text())["inputs"]["run_count"] == 2
