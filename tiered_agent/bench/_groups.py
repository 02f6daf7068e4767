"""Groups of runs the bench reports next to its agent families, and what decides a run's groups.

A family (``_pricing.FAMILIES``) gathers runs of one harness. A group gathers runs of several
families that one question is asked about. There is one:

- ``real-sessions``: the runs whose importer read an interactive coding agent's own session log,
  as its user's machine wrote it: Claude Code project logs (a session and each of its subagents)
  and Codex CLI rollouts. The format is detected from the file's content (``_importers.py``), never
  from its path or name; a tiered-agent trace written from such a run (``write_run_trace``) keeps
  the format, so it stays in the group, while a trace of a live tiered-agent run has its own format
  (``tiered-agent``) and is not in it. Benchmark harness trajectories (mini-swe-agent, SWE-agent,
  OpenHands, tau-bench) are not sessions of a person at work and are not in it either.

A run is in zero or more groups; the bench sums each group exactly as it sums a family
(``_aggregate.py``) and writes it under ``groups`` (docs/bench-json-schema.md).
"""

from __future__ import annotations

from collections.abc import Mapping

from . import _import_claude, _import_codex

__all__ = ["GROUPS", "REAL_SESSIONS", "groups_of"]

REAL_SESSIONS = "real-sessions"

# Group -> the run formats in it.
GROUPS: Mapping[str, frozenset[str]] = {
    REAL_SESSIONS: frozenset({_import_claude.FORMAT, _import_codex.FORMAT}),
}


def groups_of(fmt: str) -> tuple[str, ...]:
    """The groups of a run of format ``fmt`` (sorted; empty for most formats)."""
    return tuple(sorted(group for group, formats in GROUPS.items() if fmt in formats))
