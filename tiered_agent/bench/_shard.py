"""``--shard K/N``: a deterministic 1/N of the recorded runs, for spreading a bench over machines.

A run belongs to shard ``K`` of ``N`` when ``sha256(run_id) mod N == K - 1``. The run id is what
the importers derive from the run itself (``mini-swe-agent/<name>``, a Claude Code session id,
...), never from where the file lies, so the choice is the same on every machine, whatever the
order of the paths or of the files in a folder. Runs that share an id (copies of one file) land in
the same shard, so they are numbered ``id``, ``id#2``, ... exactly as in the unsharded bench.

Every shard reads all its inputs (the importers must parse a file to know its runs) and prices the
runs with the provider calibration of *all* of them, so a run's numbers do not depend on the shard
it landed in; only the replay, the expensive part, is split.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from .._errors import ConfigurationError
from ._recorded import RecordedRun

__all__ = ["Shard"]

_SHARD = re.compile(r"\s*(\d{1,9})\s*/\s*(\d{1,9})\s*")
R = TypeVar("R", bound=RecordedRun)


@dataclass(frozen=True, slots=True)
class Shard:
    """Shard ``index`` (1-based) of ``count``."""

    index: int
    count: int

    def __post_init__(self) -> None:
        if self.count < 1 or not 1 <= self.index <= self.count:
            raise ConfigurationError(
                f"shard {self.index}/{self.count} does not exist: K/N needs 1 <= K <= N (e.g. 1/4)"
            )

    @classmethod
    def parse(cls, text: str) -> Shard:
        """``"K/N"`` (``2/8``) as a shard; anything else is one clear :class:`ConfigurationError`."""
        match = _SHARD.fullmatch(text)
        if match is None:
            raise ConfigurationError(f"--shard takes K/N, such as 1/4 (shard 1 of 4), not {text!r}")
        return cls(int(match.group(1)), int(match.group(2)))

    def holds(self, run_id: str) -> bool:
        """Whether the run with this id belongs to this shard."""
        digest = hashlib.sha256(run_id.encode("utf-8", "surrogatepass")).digest()
        return int.from_bytes(digest[:8], "big") % self.count == self.index - 1

    def select(self, runs: Iterable[R]) -> list[R]:
        """The runs of this shard, in their order."""
        return [run for run in runs if self.holds(run.run_id)]

    def __str__(self) -> str:
        return f"{self.index}/{self.count}"
