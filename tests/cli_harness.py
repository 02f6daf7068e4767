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
    stdout: str = "file",
    closed: tuple[int, ...] = (),
) -> CliChild:
    """Start ``tiered-agent ARGS`` in a child; stdout and stderr go to ``cwd/<name>.out|.err``.

    ``stdout="broken"``: stdout is a pipe whose reader is gone (``| head`` done reading), every
    write an EPIPE. ``closed``: descriptors closed before the CLI starts (``2>&-``)."""
    out, err = cwd / f"{name}.out", cwd / f"{name}.err"
    environment = {k: v for k, v in os.environ.items() if not k.endswith("_API_KEY")}
    environment.update({"COLUMNS": "200", **(env or {})})
    streams = _Streams(str(out), str(err), stdout, closed)
    process = _forkserver().Process(
        target=_child, args=(args, environment, str(cwd), streams, fsize_limit), daemon=True
    )
    process.start()
    return CliChild(process, out, err)


def run_cli(args: list[str], *, cwd: Path, timeout: float = 60, **kwargs: Any) -> CliResult:
    return start_cli(args, cwd=cwd, **kwargs).wait(timeout)


@dataclass(frozen=True)
class _Streams:
    out: str
    err: str
    stdout: str  # "file" or "broken"
    closed: tuple[int, ...]


def _child(
    args: list[str], env: dict[str, str], cwd: str, streams: _Streams, fsize_limit: int | None
) -> None:
    os.environ.clear()
    os.environ.update(env)
    os.chdir(cwd)
    for fd, path in ((1, streams.out), (2, streams.err)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
        os.dup2(target, fd)
        os.close(target)
    if streams.stdout == "broken":
        reader, writer = os.pipe()
        os.close(reader)
        os.dup2(writer, 1)
        os.close(writer)
    for fd in streams.closed:
        os.close(fd)
        setattr(sys, {0: "stdin", 1: "stdout", 2: "stderr"}[fd], None)  # as Python starts with it closed
    if fsize_limit is not None:  # a full disk: writes past this size fail with EFBIG
        resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_limit, fsize_limit))
    from tiered_agent.cli import main

    sys.argv = ["tiered-agent", *args]
    main()


def notes_workspace(tmp_path: Path) -> Path:
    """A workspace holding one small text file (``notes.txt``), for runs of the CLI in a child."""
    root = tmp_path / "ws"
    root.mkdir()
    (root / "notes.txt").write_text("the retry delay doubles each attempt\n")
    return root
