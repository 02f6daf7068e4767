"""The ``run_shell`` tool: ``bash -c`` in the workspace root, bounded in time and output.

Each command runs under its own supervisor (:mod:`._reaper`), a small process that starts ``bash``
in a process group of its own and is the *child subreaper* of everything the command starts:
background jobs, daemons that double-fork or call ``setsid``, even with a cleared environment
(``setsid env -i daemon &``), all stay in its process tree. On timeout or cancellation the
command's group gets SIGTERM, then the supervisor SIGKILLs the whole tree after a grace period;
when the command finishes normally, whatever it left running is killed the same way, so no command
outlives its tool call. The supervisor also holds a *lifeline* to the runtime: if the runtime dies
(``kill -9`` included) the supervisor kills the command's tree by itself. stdout and stderr are
combined in the order they were written; beyond the output cap the head and the tail are kept and
the cut is stated, never through a secret (the cut is made after redaction, see :class:`_HeadTail`).

The command sees a minimal environment (:data:`SHELL_BASE_ENV`: ``PATH``, ``HOME``, the locale and
the like), never the runtime's API keys and tokens; ``pass_env`` names (or ``fnmatch`` patterns)
add variables the user chooses.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import anyio
import anyio.abc
import structlog
from pydantic import Field

from . import _reaper
from ._errors import ConfigurationError, ToolError
from ._tools import Tool, ToolTimeout, tool
from ._trace import REDACTED, longest_secret, redact

__all__ = [
    "DEFAULT_SHELL_MAX_TIMEOUT_S",
    "DEFAULT_SHELL_OUTPUT_BYTES",
    "DEFAULT_SHELL_TIMEOUT_S",
    "SHELL_BASE_ENV",
    "shell_environment",
    "shell_tool",
]

DEFAULT_SHELL_TIMEOUT_S = 60.0
DEFAULT_SHELL_MAX_TIMEOUT_S = 600.0
DEFAULT_SHELL_OUTPUT_BYTES = 100_000
_TERM_GRACE_S = 2.0
_DRAIN_S = 1.0  # after the shell exits, how long background holders of its stdout may keep it open
_START_TIMEOUT_S = 30.0  # the supervisor (a Python interpreter) reports the command's pid by then
_SUPERVISOR_EXIT_S = 5.0  # after the lifeline closes, the supervisor kills the tree and exits by then
_MIN_SECRET_MARGIN = 4096
_SUPERVISOR = str(Path(_reaper.__file__))
log = structlog.get_logger(__name__)
_QUIET_ENV = {"PAGER": "cat", "GIT_PAGER": "cat", "TERM": "dumb", "GIT_TERMINAL_PROMPT": "0"}
# What a command inherits from the runtime by default: enough to find programs, write temporary
# files and read text, nothing that authenticates (API keys, tokens, proxies with credentials).
SHELL_BASE_ENV = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "LANG",
    "LANGUAGE",
    "LC_*",
    "TZ",
    "TMPDIR",
    "TMP",
    "TEMP",
    "HOSTNAME",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "REQUESTS_CA_BUNDLE",
    "CURL_CA_BUNDLE",
    "NODE_EXTRA_CA_CERTS",
    "XDG_RUNTIME_DIR",
    "XDG_CONFIG_HOME",
    "XDG_CACHE_HOME",
    "XDG_DATA_HOME",
)
_ENV_PATTERN = re.compile(r"^[A-Za-z_*?\[][A-Za-z0-9_*?\[\]!-]*$")

TimeoutArg = Annotated[float, Field(gt=0)] | None


@dataclass(frozen=True)
class _Settings:
    bash: str
    cwd: Path
    env: Mapping[str, str] | None
    pass_env: tuple[str, ...]
    max_output_bytes: int
    term_grace_s: float


@dataclass(frozen=True)
class _ShellResult:
    output: str
    exit_code: int | None
    timed_out: bool


class _HeadTail:
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts the rest.

    Each end keeps ``margin`` bytes more than it shows, and :meth:`render` redacts before it cuts:
    a secret no longer than the margin that straddles a cut is redacted whole, so no part of it is
    shown (cutting first would leave its first or last characters unrecognizable).
    """

    def __init__(self, limit: int, margin: int = 0) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head_cap = self._head_limit + margin
        self._tail_cap = self._tail_limit + margin
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_cap - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        if len(self._tail) > self._tail_cap:
            del self._tail[: len(self._tail) - self._tail_cap]

    def render(self) -> str:
        head = bytes(self._head).decode("utf-8", errors="replace")
        tail = bytes(self._tail).decode("utf-8", errors="replace")
        if self.total <= self._head_cap + self._tail_cap:  # nothing dropped: one text, one redaction
            whole: str = redact(head + tail)
            if self.total <= self._head_limit + self._tail_limit:
                return whole
            head, tail = whole, whole
        else:
            head, tail = redact(head), redact(tail)
        shown_head = _cut_after(head, self._head_limit)
        shown_tail = _cut_before(tail, max(len(tail) - self._tail_limit, 0))
        cut = max(self.total - len(shown_head.encode()) - len(shown_tail.encode()), 0)
        return (
            f"{shown_head}\n[... {cut} bytes of output cut ({self.total} bytes in total) ...]\n{shown_tail}"
        )


def _cut_after(text: str, end: int) -> str:
    """``text[:end]``, extended to the end of a ``[redacted]`` marker the cut would split."""
    start = text.find(REDACTED, max(end - len(REDACTED) + 1, 0), end + len(REDACTED) - 1)
    if start != -1 and start < end < start + len(REDACTED):
        end = start + len(REDACTED)
    return text[:end]


def _cut_before(text: str, start: int) -> str:
    """``text[start:]``, extended back to the start of a ``[redacted]`` marker the cut would split."""
    found = text.find(REDACTED, max(start - len(REDACTED) + 1, 0), start + len(REDACTED) - 1)
    if found != -1 and found < start < found + len(REDACTED):
        start = found
    return text[start:]


def _secret_margin() -> int:
    """Bytes each end of the output keeps beyond what it shows: more than the longest secret."""
    return max(_MIN_SECRET_MARGIN, longest_secret() + 16)


def shell_tool(
    root: Path,
    *,
    timeout_s: float = DEFAULT_SHELL_TIMEOUT_S,
    max_timeout_s: float = DEFAULT_SHELL_MAX_TIMEOUT_S,
    max_output_bytes: int = DEFAULT_SHELL_OUTPUT_BYTES,
    term_grace_s: float = _TERM_GRACE_S,
    env: Mapping[str, str] | None = None,
    pass_env: Sequence[str] = (),
) -> Tool:
    """The ``run_shell`` tool, running ``bash -c <command>`` with ``root`` as working directory.

    ``timeout_s`` is the default limit, ``max_timeout_s`` the most the model may ask for. The
    command gets the :data:`SHELL_BASE_ENV` variables of the runtime plus those named in
    ``pass_env`` (names or ``fnmatch`` patterns such as ``"AWS_*"``), read at each call; ``env``
    replaces all of that with exactly the mapping given. Pagers are disabled either way.
    """
    bash = shutil.which("bash")
    if bash is None:
        raise ConfigurationError("run_shell needs bash, which is not on PATH")
    if not sys.executable:
        raise ConfigurationError("run_shell needs a Python interpreter to supervise its commands")
    if not 0 < timeout_s <= max_timeout_s or max_output_bytes <= 0 or term_grace_s < 0:
        raise ConfigurationError("run_shell: need 0 < timeout_s <= max_timeout_s, positive output cap")
    if isinstance(pass_env, str):
        raise ConfigurationError("run_shell: pass_env takes a list of variable names, not one string")
    bad = [name for name in pass_env if not _ENV_PATTERN.match(name)]
    if bad:
        raise ConfigurationError(
            f"run_shell: {', '.join(map(repr, bad))} is not an environment variable name"
        )
    settings = _Settings(bash, Path(root), env, tuple(pass_env), max_output_bytes, term_grace_s)

    async def run_shell(command: str, timeout_s: TimeoutArg = None) -> str:
        limit = min(timeout_s or default_timeout, max_timeout_s)
        return _format(await _execute(command, limit, settings), limit)

    default_timeout = timeout_s
    run_shell.__doc__ = f"""Run a bash command in the workspace root; returns its stdout and stderr combined,
        then "exit code: N". stdin is empty and pagers are off, so nothing can wait for input. On timeout
        the command and every process it started are killed; background processes still running when
        it finishes are killed too. Output beyond {max_output_bytes} bytes is cut in the middle.

        Args:
            command: The command line, run as `bash -c <command>` in the workspace root.
            timeout_s: Seconds before the command is killed (default {timeout_s:g},
                at most {max_timeout_s:g}).
        """
    backstop = max_timeout_s + term_grace_s + _DRAIN_S + 5.0
    return tool(read_only=False, timeout_s=backstop)(run_shell)


def shell_environment(
    pass_env: Sequence[str] = (), source: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of ``source`` (default: this process's environment) a command inherits:
    :data:`SHELL_BASE_ENV` and ``pass_env`` (names or fnmatch patterns)."""
    source = os.environ if source is None else source
    patterns = (*SHELL_BASE_ENV, *pass_env)
    return {
        name: value
        for name, value in source.items()
        if any(fnmatch.fnmatchcase(name, pattern) for pattern in patterns)
    }


@dataclass
class _Job:
    """One running command: its supervisor, the status it reports, and the lifeline we hold."""

    process: anyio.abc.Process
    status_fd: int
    lifeline_fd: int
    pid: int | None = None  # the command's (bash's) pid, also its process group
    exit_code: int | None = None  # once it exited; negative: killed by that signal
    ended: bool = False  # the status pipe closed: the supervisor is gone
    pending: bytes = b""

    async def read_status(self) -> None:
        """Read the supervisor's next status line (``pid N`` or ``exit N``)."""
        while b"\n" not in self.pending:
            await anyio.wait_readable(self.status_fd)
            try:
                data = os.read(self.status_fd, 256)
            except BlockingIOError:
                continue
            if not data:
                self.ended = True
                return
            self.pending += data
        line, self.pending = self.pending.split(b"\n", 1)
        kind, _, value = line.decode(errors="replace").partition(" ")
        if kind == "pid" and value.lstrip("-").isdigit():
            self.pid = int(value)
        elif kind == "exit" and value.lstrip("-").isdigit():
            self.exit_code = int(value)

    async def wait_exit(self) -> None:
        """Until the command exits (or its supervisor is gone)."""
        while self.exit_code is None and not self.ended:
            await self.read_status()

    def close_lifeline(self) -> None:
        if self.lifeline_fd >= 0:
            os.close(self.lifeline_fd)
            self.lifeline_fd = -1


async def _execute(command: str, limit: float, settings: _Settings) -> _ShellResult:
    base = shell_environment(settings.pass_env) if settings.env is None else dict(settings.env)
    env = {**base, **_QUIET_ENV}
    buffer = _HeadTail(settings.max_output_bytes, _secret_margin())
    # Shielded: a cancellation while asyncio connects the pipes would leak the supervisor; the
    # finally below stops whatever started.
    with anyio.CancelScope(shield=True):
        job = await _start(command, settings, env)
    try:
        with anyio.move_on_after(limit) as scope:
            await _collect(job, buffer)
    finally:
        with anyio.CancelScope(shield=True):
            await _stop(job, settings.term_grace_s)
    timed_out = scope.cancelled_caught or job.exit_code is None
    return _ShellResult(buffer.render(), None if timed_out else job.exit_code, timed_out)


async def _start(command: str, settings: _Settings, env: Mapping[str, str]) -> _Job:
    """Start the supervisor, which starts ``bash -c command`` and reports its pid."""
    status_r, status_w = os.pipe()
    lifeline_r, lifeline_w = os.pipe()
    os.set_blocking(status_r, False)
    argv = [sys.executable, "-I", "-S", _SUPERVISOR, str(status_w), str(lifeline_r)]
    try:
        process = await anyio.open_process(
            [*argv, settings.bash, "-c", command],
            cwd=settings.cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            pass_fds=(status_w, lifeline_r),
        )
    except OSError as exc:
        for fd in (status_r, lifeline_w):
            os.close(fd)
        raise ToolError(f"could not start bash in {settings.cwd}: {exc}") from exc
    finally:
        os.close(status_w)
        os.close(lifeline_r)
    job = _Job(process, status_r, lifeline_w)
    with anyio.move_on_after(_START_TIMEOUT_S):
        await job.read_status()
    if job.pid is None:
        await _stop(job, 0)
        raise ToolError(f"could not start bash in {settings.cwd}: its supervisor did not start")
    return job


async def _collect(job: _Job, buffer: _HeadTail) -> None:
    """Read output until the command exits and its stdout is drained (or ``_DRAIN_S`` passes)."""
    drained = anyio.Event()
    process = job.process

    async def pump() -> None:
        try:
            if process.stdout is not None:
                async for chunk in process.stdout:
                    buffer.feed(chunk)
        finally:
            drained.set()

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        await job.wait_exit()
        with anyio.move_on_after(_DRAIN_S):
            await drained.wait()
        group.cancel_scope.cancel()


async def _stop(job: _Job, grace: float) -> None:
    """SIGTERM the command's group if it still runs; then close the lifeline, so the supervisor
    SIGKILLs whatever is left of the command's tree and exits; then reap the supervisor."""
    if job.exit_code is None and job.pid is not None and not job.ended:
        _signal_group(job.pid, signal.SIGTERM)
        with anyio.move_on_after(grace):
            await job.wait_exit()
    job.close_lifeline()
    process = job.process
    with anyio.move_on_after(_SUPERVISOR_EXIT_S):
        await process.wait()
    if process.returncode is None:  # a supervisor that does not exit: kill it and the command's group
        log.warning("shell.supervisor_stuck", pid=process.pid)
        _signal_group(process.pid, signal.SIGKILL)
        if job.pid is not None:
            _signal_group(job.pid, signal.SIGKILL)
        await process.wait()
    os.close(job.status_fd)
    await process.aclose()


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    # ProcessLookupError: the group is already gone; PermissionError: the id now belongs to someone else.
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, sig)


def _format(result: _ShellResult, limit: float) -> str:
    body = result.output or "(no output)"
    if not body.endswith("\n"):
        body += "\n"
    if result.timed_out:
        raise ToolTimeout(
            f"command timed out after {limit:g} s; its process group was killed. Partial output:\n{body}"
        )
    code = result.exit_code
    if code is not None and code < 0:
        return f"{body}exit code: {code} (killed by {signal.Signals(-code).name})"
    return f"{body}exit code: {code}"
