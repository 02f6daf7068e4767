"""What the adapter tests share: the large files their fake models read (one holds a marker the
run later retrieves) and running an example demo as its own process, read back as its report."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
MARKER = "MARKER-7f3a"

__all__ = ["MARKER", "ROOT", "file_text", "run_demo"]


def file_text(path: str) -> str:
    """File ``f<N>``: 400 lines of code; ``f1`` holds the marker at line 201."""
    number = int(path.removeprefix("f"))
    lines = [f"{number:03d}: def handler_{number}_{j}(request): return compute({j})" for j in range(400)]
    if number == 1:
        lines.insert(200, f"checksum {MARKER}")
    return "\n".join(lines)


def run_demo(name: str) -> dict[str, Any]:
    """Run ``examples/adapters/<name>.py`` offline and return the JSON object of its last line."""
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "adapters" / f"{name}.py")],
        capture_output=True,
        text=True,
        check=True,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"},
        timeout=300,
    )
    report: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return report
