"""The ``run_shell`` tool: ``bash -c`` in the workspace root, bounded in time and output.

Each command runs in its own session (``start_new_session=True``), so it and
everything it spawns share one process group. On timeout or cancellation the
whole group gets SIGTERM, then SIGKILL after a grace period; when the command
finishes normally, leftover background processes of the group are killed too,
and so are descendants that left the group with ``setsid`` (found by a marker
in their environment, see :mod:`._reaper`), so no command outlives its tool
call. stdout and stderr are combined in the order they were written; beyond the
output cap the head and the tail are kept and the cut is stated.

The command sees a minimal environment (:data:`SHELL_BASE_ENV`: ``PATH``,
``HOME``, the locale and the like), never the runtime's API keys and tokens;
``pass_env`` names (or ``fnmatch`` patterns) add variables the user chooses.
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import shutil
import signal
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

import anyio
import anyio.abc
import anyio.to_thread
from pydantic import Field

from . import _reaper
from ._errors import ConfigurationError, ToolError
from ._tools import Tool, ToolTimeout, tool

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
    """Keeps the first and last ``limit // 2`` bytes of a stream and counts the rest."""

    def __init__(self, limit: int) -> None:
        self._head_limit = limit // 2
        self._tail_limit = limit - self._head_limit
        self._head = bytearray()
        self._tail = bytearray()
        self.total = 0

    def feed(self, chunk: bytes) -> None:
        self.total += len(chunk)
        room = self._head_limit - len(self._head)
        if room > 0:
            self._head += chunk[:room]
            chunk = chunk[room:]
        self._tail += chunk
        if len(self._tail) > self._tail_limit:
            del self._tail[: len(self._tail) - self._tail_limit]

    def render(self) -> str:
        head = bytes(self._head).decode("utf-8", errors="replace")
        tail = bytes(self._tail).decode("utf-8", errors="replace")
        cut = self.total - len(self._head) - len(self._tail)
        if cut <= 0:
            return bytes(self._head + self._tail).decode("utf-8", errors="replace")
        return f"{head}\n[... {cut} bytes of output cut ({self.total} bytes in total) ...]\n{tail}"


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


async def _execute(command: str, limit: float, settings: _Settings) -> _ShellResult:
    base = shell_environment(settings.pass_env) if settings.env is None else dict(settings.env)
    token = uuid.uuid4().hex
    env = {**base, **_QUIET_ENV, _reaper.MARKER: token}
    _reaper.become_subreaper()
    since = _reaper.start_ticks()
    buffer = _HeadTail(settings.max_output_bytes)
    try:
        # Shielded: a cancellation while asyncio connects the pipes would kill only the shell
        # and leak whatever it had started already; the finally below handles the whole group.
        with anyio.CancelScope(shield=True):
            process = await anyio.open_process(
                [settings.bash, "-c", command],
                cwd=settings.cwd,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
    except OSError as exc:
        raise ToolError(f"could not start bash in {settings.cwd}: {exc}") from exc
    try:
        with anyio.move_on_after(limit):
            await _collect(process, buffer)
    finally:
        timed_out = process.returncode is None
        with anyio.CancelScope(shield=True):
            await _stop_group(process, settings.term_grace_s, token, since)
    return _ShellResult(buffer.render(), None if timed_out else process.returncode, timed_out)


async def _collect(process: anyio.abc.Process, buffer: _HeadTail) -> None:
    """Read output until the shell exits and its stdout is drained (or ``_DRAIN_S`` passes)."""
    drained = anyio.Event()

    async def pump() -> None:
        try:
            if process.stdout is not None:
                async for chunk in process.stdout:
                    buffer.feed(chunk)
        finally:
            drained.set()

    async with anyio.create_task_group() as group:
        group.start_soon(pump)
        await process.wait()
        with anyio.move_on_after(_DRAIN_S):
            await drained.wait()
        group.cancel_scope.cancel()


async def _stop_group(process: anyio.abc.Process, grace: float, token: str, since: int) -> None:
    """SIGTERM the group if the shell still runs, SIGKILL whatever is left (in the group, or marked
    with the command's token after leaving it), then reap the shell."""
    if process.returncode is None:
        _signal_group(process.pid, signal.SIGTERM)
        with anyio.move_on_after(grace):
            await process.wait()
    _signal_group(process.pid, signal.SIGKILL)
    await anyio.to_thread.run_sync(lambda: _reaper.kill_command(token, since, spare=process.pid))
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
