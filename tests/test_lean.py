"""The lean install: commands that call no model never import litellm, and the benchmark's charts are
an extra (``tiered-agent[charts]``): without matplotlib the bench writes everything else and says
how to get them.

Each command runs in a fresh interpreter (the test process has litellm imported long ago).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[1]
TRACE = ROOT / "traces" / "openhands" / "traj_safety-daemon.jsonl"  # the smallest bundled run
HEAVY = ("litellm", "openai", "matplotlib", "opentelemetry", "mcp")
RUNNER = """
import json, sys
report, block, *args = sys.argv[1:]
for name in filter(None, block.split(",")):
    sys.modules[name] = None  # as if it were not installed
from tiered_agent.cli import main
sys.argv = ["tiered-agent", *args]
code = 0
try:
    main()
except SystemExit as exc:
    code = exc.code if isinstance(exc.code, int) else 1
loaded = sorted({m.split(".")[0] for m in sys.modules if sys.modules[m] is not None})
with open(report, "w") as out:
    json.dump({"code": code, "modules": loaded}, out)
"""


def run(tmp_path: Path, *args: str, block: str = "") -> tuple[dict[str, Any], str]:
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    env.update(COLUMNS="160", PYTHONPATH=str(ROOT))
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(report), block, *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert report.exists(), proc.stderr
    return json.loads(report.read_text()), proc.stdout + proc.stderr


@pytest.mark.parametrize(
    "args",
    [
        ["--help"],
        ["run", "--help"],
        ["trace", "show", str(TRACE)],
        ["trace", "stats", "--json", str(TRACE)],
        ["trace", "html", str(TRACE), "-o", "page.html"],
    ],
    ids=["help", "run-help", "trace-show", "trace-stats", "trace-html"],
)
def test_commands_that_call_no_model_never_import_litellm(tmp_path: Path, args: list[str]) -> None:
    outcome, output = run(tmp_path, *args)
    assert outcome["code"] == 0, output
    assert not set(HEAVY) & set(outcome["modules"]), outcome["modules"]


def test_the_bench_never_imports_litellm_and_draws_charts_when_it_can(tmp_path: Path) -> None:
    args = ["bench", "--policies", "full,tiered", "--out", "out", str(TRACE)]
    outcome, output = run(tmp_path, *args)
    assert outcome["code"] == 0, output
    assert "litellm" not in outcome["modules"] and "openai" not in outcome["modules"]
    assert "matplotlib" in outcome["modules"]  # the charts extra is installed here
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "bench.json",
        "bench.png",
        "bench.runs.jsonl",
        "frontier.png",
        "report.md",
    ]


def test_without_matplotlib_the_bench_says_how_to_get_the_charts(tmp_path: Path) -> None:
    args = ["bench", "--policies", "full,tiered", "--out", "out", str(TRACE)]
    outcome, output = run(tmp_path, *args, block="matplotlib")
    assert outcome["code"] == 0, output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == [
        "bench.json",
        "bench.runs.jsonl",
        "report.md",
    ]
    assert 'no charts: matplotlib is not installed; pip install "tiered-agent[charts]"' in output
    report = (tmp_path / "out" / "report.md").read_text()
    assert ".png" not in report and "`tiered`" in report
    assert json.loads((tmp_path / "out" / "bench.json").read_text())["policies"]
