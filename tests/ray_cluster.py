"""A two-node Ray cluster on 127.0.0.1 for the fleet tests, torn down by process group, never `ray stop`.

Each node is one ``ray start --block`` in its own session (so its process group holds everything it
started: GCS, raylet, agents, workers); both have one CPU and token authentication
(``RAY_AUTH_MODE=token`` with a fresh ``RAY_AUTH_TOKEN``). Every port is chosen free, and the
cluster keeps its files in its own temporary folder, so clusters of parallel test runs on one
machine do not meet. ``ray stop`` would kill every Ray on the machine: it is never called.
"""

from __future__ import annotations

import importlib.util
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STARTED = "Ray runtime started"


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _client_port() -> list[str]:
    """A free port for the Ray Client server, only where its dependency (grpcio) is installed.

    Without ``ray[client]``, ``ray start`` refuses any client port, and it starts no client server.
    """
    if importlib.util.find_spec("grpc") is None:
        return []
    return [f"--ray-client-server-port={_free_port()}"]


def _node_ports() -> list[str]:
    names = (
        "--node-manager-port",
        "--object-manager-port",
        "--metrics-export-port",
        "--dashboard-agent-listen-port",
        "--dashboard-agent-grpc-port",
        "--runtime-env-agent-port",
    )
    return [f"{name}={_free_port()}" for name in names]


@dataclass(frozen=True)
class RayCluster:
    address: str
    env: dict[str, str]
    temp_dir: Path


def ray_executable() -> Path | None:
    """The ``ray`` CLI of this interpreter's environment, when Ray is installed."""
    if importlib.util.find_spec("ray") is None:
        return None
    found = Path(sys.executable).parent / "ray"
    return found if found.exists() else None


def _start(command: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with log.open("wb") as out:
        return subprocess.Popen(
            command, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def _wait_started(process: subprocess.Popen[bytes], log: Path, timeout_s: float = 180) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if STARTED in log.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.2)
    raise AssertionError(f"ray start did not start: {log.read_text(errors='replace')[-3000:]}")


def _stop(process: subprocess.Popen[bytes]) -> None:
    """SIGTERM to the node's process group, SIGKILL to what is left after 5 s."""
    for sig, wait in ((signal.SIGTERM, 5.0), (signal.SIGKILL, 10.0)):
        try:
            os.killpg(process.pid, sig)
        except ProcessLookupError:
            break
        deadline = time.monotonic() + wait
        while time.monotonic() < deadline:
            if process.poll() is not None and not _group_alive(process.pid):
                return
            time.sleep(0.2)
    process.wait(timeout=10)


def _group_alive(pgid: int) -> bool:
    """Whether a process of the group still runs (zombies, which nobody here may reap, do not)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] not in ("Z", "X"):
            return True
    return False


@contextmanager
def two_node_cluster(extra_env: dict[str, str] | None = None) -> Iterator[RayCluster]:
    ray = ray_executable()
    if ray is None:
        pytest.skip("Ray is not installed (pip install 'tiered-agent[ray]')")
    temp_dir = Path(tempfile.mkdtemp(prefix="tar", dir="/tmp"))  # short: Ray's socket paths are limited
    token = secrets.token_hex(32)
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = {**os.environ, "RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": token, "PYTHONPATH": path}
    env |= {"RAY_USAGE_STATS_ENABLED": "0", **(extra_env or {})}
    port = _free_port()
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats", "--block"]
    head_command = [str(ray), "start", "--head", f"--port={port}", f"--temp-dir={temp_dir}", *common]
    head_command += ["--include-dashboard=false", f"--dashboard-port={_free_port()}"]
    head_command += [*_client_port(), *_node_ports()]
    nodes: list[subprocess.Popen[bytes]] = []
    try:
        nodes.append(_start(head_command, env, temp_dir / "head.log"))
        _wait_started(nodes[0], temp_dir / "head.log")
        worker_command = [str(ray), "start", f"--address=127.0.0.1:{port}", *common, *_node_ports()]
        nodes.append(_start(worker_command, env, temp_dir / "worker.log"))
        _wait_started(nodes[1], temp_dir / "worker.log")
        yield RayCluster(f"127.0.0.1:{port}", env, temp_dir)
    finally:
        for node in reversed(nodes):
            _stop(node)
        shutil.rmtree(temp_dir, ignore_errors=True)
