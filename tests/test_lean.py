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
from fake_openai_server import FakeOpenAIServer, HTTPRequest

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
present = [m for m in sys.modules if sys.modules[m] is not None]
loaded = sorted({m.split(".")[0] for m in present})
with open(report, "w") as out:
    json.dump({"code": code, "modules": loaded, "all": sorted(present)}, out)
"""


def run(
    tmp_path: Path, *args: str, block: str = "", env: dict[str, str] | None = None
) -> tuple[dict[str, Any], str]:
    report = tmp_path / "report.json"
    environment = {
        k: v for k, v in os.environ.items() if not k.startswith("OTEL_") and not k.endswith("_API_KEY")
    }
    environment.update(COLUMNS="160", PYTHONPATH=str(ROOT), **(env or {}))
    proc = subprocess.run(
        [sys.executable, "-c", RUNNER, str(report), block, *args],
        cwd=tmp_path,
        env=environment,
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
        "frontier.png",
        "report.md",
    ]


def test_without_matplotlib_the_bench_says_how_to_get_the_charts(tmp_path: Path) -> None:
    args = ["bench", "--policies", "full,tiered", "--out", "out", str(TRACE)]
    outcome, output = run(tmp_path, *args, block="matplotlib")
    assert outcome["code"] == 0, output
    assert sorted(p.name for p in (tmp_path / "out").iterdir()) == ["bench.json", "report.md"]
    assert 'no charts: matplotlib is not installed; pip install "tiered-agent[charts]"' in output
    report = (tmp_path / "out" / "report.md").read_text()
    assert ".png" not in report and "`tiered`" in report
    assert json.loads((tmp_path / "out" / "bench.json").read_text())["policies"]


def test_a_run_skips_litellms_mcp_gateway(tmp_path: Path) -> None:
    """The first request does not import litellm's proxy MCP gateway (~1.5 s; our tools are functions),
    and the private switch that skips it never reaches the provider."""
    bodies: list[dict[str, Any]] = []

    def answer(request: HTTPRequest) -> str:
        bodies.append(request.body)
        return "Done."

    with FakeOpenAIServer() as server:
        server.respond = answer
        args = ["run", "x", "--model", "openai/gpt-4o-mini", "--api-base", server.base_url]
        outcome, output = run(tmp_path, *args, "--trace-dir", "traces", env={"OPENAI_API_KEY": "sk-local"})
    assert outcome["code"] == 0, output
    assert "litellm" in outcome["modules"]  # the run did call the model through litellm
    gateway = (
        "litellm.responses.mcp.chat_completions_handler",
        "litellm.responses.mcp.litellm_proxy_mcp_handler",
    )
    assert not set(gateway) & set(outcome["all"])
    assert len(bodies) == 1 and bodies[0]["tools"] and not any("skip" in key for key in bodies[0])
