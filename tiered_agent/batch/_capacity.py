"""How many lanes (event loops) a batch opens for the agents it runs at once."""

from __future__ import annotations

import math

__all__ = ["ABORT_WAIT_S", "AGENTS_PER_LANE", "lane_count"]

# Concurrent agents one event loop is given before another lane is opened: an iteration costs
# ~11 ms of CPU (most of it in litellm), so one loop keeps up with a few hundred agents waiting on a
# provider that takes seconds to answer.
AGENTS_PER_LANE = 250
ABORT_WAIT_S = 30.0  # how long a stopping batch waits for a task's worker to record its end


def lane_count(concurrency: int, workers: int, available: int) -> int:
    """Lanes for ``concurrency`` agents: ``workers`` when given, else one per
    :data:`AGENTS_PER_LANE`, at most ``available`` (CPUs), never more than there are agents."""
    wanted = workers if workers > 0 else min(available, math.ceil(concurrency / AGENTS_PER_LANE))
    return max(1, min(wanted, concurrency))
