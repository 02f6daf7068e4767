"""Worker processes log like the driver whoever started them, and a pool leaves no helper behind."""

from __future__ import annotations

import logging
import multiprocessing
import os
import subprocess
import sys
import textwrap
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import pytest
import structlog
from test_shard import _run

from tiered_agent._logging import configure_logging
from tiered_agent._workers import worker_log_level
from tiered_agent.bench._pricing import plan_run
from tiered_agent.bench._replay import Planned, ReplaySettings, replay_job, replay_unit, resolve_policies

ROOT = Path(__file__).resolve().parents[1]


def test_workers_log_at_warning_when_the_driver_never_configured_logging() -> None:
    structlog.reset_defaults()
    assert worker_log_level() == logging.WARNING  # not structlog's default: every debug line


@pytest.mark.parametrize("level", ["debug", "info", "error"])
def test_workers_log_at_the_drivers_level(level: str) -> None:
    configure_logging(level=level)
    assert worker_log_level() == logging.getLevelName(level.upper())


def test_a_worker_another_scheduler_started_logs_like_the_driver(capfd: pytest.CaptureFixture[str]) -> None:
    """A process pool without our initializer (as Ray's or a library user's): the unit of work
    configures logging itself, so the summaries of a long run print no debug lines."""
    run = _run("long", 25, usage_ratio=1.0)
    policies = resolve_policies(["kb-labs-adr"])  # summarizes every 10 iterations
    plan = plan_run(run.model, "auto", None, {})
    context = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=context) as pool:
        bare = pool.submit(replay_job, run, policies, ReplaySettings(), plan).result()
        noisy = capfd.readouterr()
        ours = pool.submit(
            replay_unit, logging.WARNING, policies, ReplaySettings(), run, Planned(plan)
        ).result()
        quiet = capfd.readouterr()
    assert "summary_landed" in noisy.out + noisy.err  # the premise: an unconfigured worker floods
    assert "summary_landed" not in quiet.out + quiet.err
    tokens = {n: [s.prompt_tokens for s in m.steps] for n, m in ours.policies.items()}
    assert tokens == {n: [s.prompt_tokens for s in m.steps] for n, m in bare.policies.items()}


def test_the_pool_stops_the_resource_tracker_it_started(tmp_path: Path) -> None:
    script = textwrap.dedent(
        """
        import os, sys
        sys.path.insert(0, "tests")
        from test_shard import _run
        from tiered_agent.bench._replay import replay_runs, resolve_policies

        def children():
            found = []
            for pid in os.listdir("/proc"):
                try:
                    with open(f"/proc/{pid}/stat") as f:
                        parent = int(f.read().rsplit(")", 1)[1].split()[1])
                    with open(f"/proc/{pid}/cmdline", "rb") as f:
                        command = f.read().replace(b"\\0", b" ").decode()
                except (OSError, ValueError, IndexError):
                    continue
                if parent == os.getpid():
                    found.append(command)
            return found

        if __name__ == "__main__":
            runs = [_run(f"r{i}", 3, usage_ratio=1.0) for i in range(3)]
            replay_runs(runs, resolve_policies(["full"]), workers=2)
            print(sum("resource_tracker" in c for c in children()))
        """
    )
    path = tmp_path / "pool.py"
    path.write_text(script)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
    done = subprocess.run(
        [sys.executable, str(path)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "0"
