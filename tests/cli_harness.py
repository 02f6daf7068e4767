"""The ``tiered-agent`` CLI in child processes that start in milliseconds.

Each CLI run is a real process (its own pid, signals, exit code, rlimits, environment, stdout and
stderr files) forked from a multiprocessing *forkserver* that imported litellm once: a fresh
``python -m tiered_agent`` pays 4-8 s for that import, a forked child nothing. The child runs
``tiered_agent.cli.main`` with the given arguments, environment and working directory.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.forkserver
import os
import resource
import signal
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["CliChild", "CliResult", "run_cli", "start_cli"]

_context: Any = None


def _forkserver() -> Any:
    """The forkserver context, its server started with ``cli_warmup`` imported."""
    global _context  # noqa: PLW0603 - one forkserver per test session
    if _context is None:
        context = multiprocessing.get_context("forkserver")
        context.set_forkserver_preload(["cli_warmup"])
        saved = os.environ.get("PYTHONPATH")
        os.environ["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)  # the server finds tests/
        try:
            multiprocessing.forkserver.ensure_running()
        finally:
            if saved is None:
                del os.environ["PYTHONPATH"]
            else:
                os.environ["PYTHONPATH"] = saved
        _context = context
    return _context


@dataclass(frozen=True)
class CliResult:
    code: int | None  # the exit code; -N when killed by signal N
    stdout: str
    stderr: str


class CliChild:
    """A running CLI process: ``pid``, ``send(signal)``, ``wait()``."""

    def __init__(self, process: Any, out: Path, err: Path) -> None:
        self.process = process
        self.out = out
        self.err = err

    @property
    def pid(self) -> int:
        return int(self.process.pid)

    def send(self, sig: int) -> None:
        os.kill(self.pid, sig)

    def wait(self, timeout: float = 60) -> CliResult:
        self.process.join(timeout)
        if self.process.exitcode is None:
            self.send(signal.SIGKILL)
            self.process.join(10)
            raise AssertionError(f"CLI child did not finish in {timeout} s: {self.err.read_text()[-2000:]}")
        return CliResult(self.process.exitcode, self.out.read_text(), self.err.read_text())


def start_cli(
    args: list[str],
    *,
    cwd: Path,
    env: dict[str, str] | None = None,
    fsize_limit: int | None = None,
    name: str = "cli",
) -> CliChild:
    """Start ``tiered-agent ARGS`` in a child; stdout and stderr go to ``cwd/<name>.out|.err``."""
    out, err = cwd / f"{name}.out", cwd / f"{name}.err"
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environment.update({"COLUMNS": "200", **(env or {})})
    process = _forkserver().Process(
        target=_child, args=(args, environment, str(cwd), str(out), str(err), fsize_limit), daemon=True
    )
    process.start()
    return CliChild(process, out, err)


def run_cli(args: list[str], *, cwd: Path, timeout: float = 60, **kwargs: Any) -> CliResult:
    return start_cli(args, cwd=cwd, **kwargs).wait(timeout)


def _child(
    args: list[str], env: dict[str, str], cwd: str, out: str, err: str, fsize_limit: int | None
) -> None:
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    for fd, path in ((1, out), (2, err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    if fsize_limit is not None:  # a full disk: writes past this size fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_limit, fsize_limit))
    from tiered_agent.cli import main

    sys.argv = ["tiered-agent", *args]
    main()
