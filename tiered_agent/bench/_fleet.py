"""Where a bench runs: ``--shard K/N`` (which runs) and ``--ray [ADDRESS]`` (on what)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from .._cluster import RayAddress, require_ray
from .._tokens import TokenCounter
from ._calibration import Calibration, fit
from ._recorded import RecordedRun
from ._replay import numbered
from ._shard import Shard

__all__ = ["Fleet", "Selection"]


@dataclass(frozen=True, slots=True)
class Selection:
    """The runs to replay here, the calibration to price them with (None: measure it on them),
    and a line for the user when a shard left runs out."""

    runs: tuple[RecordedRun, ...]
    calibration: Calibration | None = None
    note: str | None = None


@dataclass(frozen=True, slots=True)
class Fleet:
    shard: Shard | None = None
    ray: RayAddress | None = None

    @classmethod
    def of(cls, shard: str | None, ray: str | None) -> Fleet:
        """From the command line's text; a mistake is one :class:`ConfigurationError` sentence."""
        address = RayAddress(ray) if ray is not None else None
        if address is not None:
            require_ray()
        return cls(Shard.parse(shard) if shard is not None else None, address)

    def select(self, runs: Sequence[RecordedRun], tokenizer: str) -> Selection:
        """This shard's runs, priced with the calibration of all of them (so a run's numbers are
        the same in every shard layout); every run when there is no shard."""
        if self.shard is None:
            return Selection(tuple(runs))
        seen: dict[str, int] = {}  # copies numbered as the replay numbers them: their prefixes are theirs
        named = [dataclasses.replace(r, run_id=numbered(r.run_id, seen)) for r in runs]
        calibration = fit(named, TokenCounter(tokenizer, cache_size=4096))
        chosen = tuple(self.shard.select(runs))
        steps = sum(r.steps for r in chosen)
        note = f"shard {self.shard}: {len(chosen)} of {len(runs)} runs ({steps} model calls)"
        return Selection(chosen, calibration, note)
