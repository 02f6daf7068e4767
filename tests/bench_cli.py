"""The CLI as the bench tests drive it: ``tiered-agent ARGS`` in this process, and a bench JSON read."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
from click.testing import CliRunner, Result

from tiered_agent.cli import cli


def invoke(*args: str | Path) -> Result:
    """``tiered-agent *args`` (paths as strings), its output and exit code."""
    return CliRunner().invoke(cli, [str(a) for a in args])


def load_json(path: Path) -> dict[str, Any]:
    """A JSON document (a bench.json) as a dict."""
    document: dict[str, Any] = orjson.loads(path.read_bytes())
    return document
