"""The ``tiered-agent`` command line (console script ``tiered_agent.cli:main``).

``_app`` is the click group with ``run`` and ``resume``; ``_bench`` and ``_trace`` are the
``bench`` and ``trace`` commands, imported only when used; ``_run`` wires a run (tools,
AGENTS.md, the model, the display, telemetry) and imports litellm's users, only once the cheap
checks passed; ``_options`` is what they share. Importing this package stays cheap: click only.
"""

from __future__ import annotations

from ._app import cli, main

__all__ = ["cli", "main"]
