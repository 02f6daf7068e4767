"""Whether a process still runs, read from ``/proc`` (Linux), for the tests that kill process trees."""

from __future__ import annotations

import threading
from pathlib import Path


def process_gone(pid: int) -> bool:
    """True once the process no longer runs: absent, or a zombie waiting to be reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # gone before the open, or between open and read
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def still_running(pids: list[int], seconds: float = 10) -> list[int]:
    """The pids still running after up to ``seconds`` (a hang guard, not a timing assertion)."""
    waiter = threading.Event()
    for _ in range(int(seconds / 0.02)):
        if all(process_gone(pid) for pid in pids):
            return []
        waiter.wait(0.02)
    return [pid for pid in pids if not process_gone(pid)]
