"""The bench document, folded run by run: :class:`Aggregate`.

Runs are added as they finish (:class:`~._record.RunRecord`), in any order; what the document
says about them all (totals per policy, family and group, losses, the checks against the recorded
usage, prices) is kept as exact sums (``_sums.py``), so the document does not depend on the
order, and the memory it takes grows only with the small per-run lists the document holds
(``inputs.runs``, the per-run checks). The per-run detail (``runs[]``) is not kept here: the
caller streams it (``_detail.py``).

A shard's document carries its aggregate's :meth:`~Aggregate.state` (``shard.state``);
:meth:`Aggregate.from_document` reads it back and :meth:`Aggregate.merge` adds shards, which
is how ``bench merge`` writes exactly the document of the unsharded bench.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._providers import model_prices, price_map_source
from ..context._policy import Policy
from ._anatomy import AnatomySum, anatomy_dict
from ._calibration import ProviderCalibration
from ._document import (
    SCHEMA_VERSION,
    TIMING_KEY,
    caching_dict,
    caching_entry,
    calibration_entry,
    cost_validation_dict,
    fidelity_dict,
    fidelity_entry,
    policy_meta,
    prices_dict,
    recorded_dict,
    rounded,
    settings_dict,
    totals_dict,
    unmeasured_entry,
)
from ._metrics import Totals
from ._record import FailedRun, RunRecord
from ._replay import BASELINE, ReplaySettings
from ._spread import SpreadSum
from ._sums import (
    CachingSum,
    CalibratedSum,
    DollarSum,
    FidelitySum,
    Histogram,
    LossSum,
    RecordedSum,
    StateError,
    TotalsSum,
)
from ._targets import targets_dict

__all__ = ["STATE_VERSION", "Aggregate", "Header"]

STATE_VERSION = 3  # of ``shard.state``: a shard document is merged only by a bench that reads its state
_PRICING_HEADER = ("source", "unit", "price_model", "summary_model", "summary_model_priced")


@dataclass(frozen=True, slots=True)
class Header:
    """What every run of one bench shares, and every shard of it: the document's parts that do not
    depend on which runs were replayed."""

    settings: Mapping[str, Any]
    policies: Mapping[str, Mapping[str, Any]]  # name -> config, ablation_of, retrieval_active
    paths: tuple[str, ...]
    skipped: tuple[Mapping[str, Any], ...]
    skipped_lines: tuple[Mapping[str, Any], ...]
    calibration: Mapping[str, Mapping[str, Any]]  # the measured providers (fitted on every run)
    pricing: Mapping[str, Any]  # the price map's source, the --price-model and the summarizer's

    @classmethod
    def of(
        cls,
        settings: ReplaySettings,
        policies: Mapping[str, Policy],
        providers: Mapping[str, ProviderCalibration],
        *,
        paths: Sequence[str] = (),
        skipped: Sequence[Mapping[str, str]] = (),
        skipped_lines: Sequence[Mapping[str, Any]] = (),
    ) -> Header:
        summary = model_prices(settings.summary_model) if settings.summary_model else None
        return cls(
            settings=settings_dict(settings),
            policies={name: policy_meta(name, policies[name]) for name in sorted(policies)},
            paths=tuple(sorted(paths)),
            skipped=tuple(
                sorted(
                    ({"path": s["path"], "reason": s["reason"]} for s in skipped),
                    key=lambda s: (s["path"], s["reason"]),
                )
            ),
            skipped_lines=tuple(sorted((dict(s) for s in skipped_lines), key=lambda s: str(s["path"]))),
            calibration={p: calibration_entry(c) for p, c in sorted(providers.items())},
            pricing={
                "source": price_map_source(),
                "unit": "USD per token",
                "price_model": settings.price_model,
                "summary_model": None if summary is None else summary.model,
                "summary_model_priced": None if not settings.summary_model else summary is not None,
            },
        )

    @classmethod
    def from_document(cls, document: Mapping[str, Any]) -> Header:
        """The header of a bench document (a shard's)."""
        inputs, pricing = document["inputs"], document["pricing"]
        return cls(
            settings=document["settings"],
            policies={
                name: {k: entry[k] for k in ("config", "ablation_of", "retrieval_active")}
                for name, entry in sorted(document["policies"].items())
            },
            paths=tuple(inputs["paths"]),
            skipped=tuple(inputs["skipped"]),
            skipped_lines=tuple(inputs["skipped_lines"]),
            calibration={p: e for p, e in sorted(document["calibration"].items()) if e["measured"]},
            pricing={key: pricing[key] for key in _PRICING_HEADER},
        )

    def differences(self, other: Header) -> list[str]:
        """The parts in which two headers differ (empty: the same bench)."""
        names = ("settings", "policies", "paths", "skipped", "skipped_lines", "calibration", "pricing")
        return [name for name in names if getattr(self, name) != getattr(other, name)]


class FamilySum:
    """Everything the document sums over a set of runs (a family, a group; all runs)."""

    __slots__ = (
        "anatomy",
        "caching",
        "calibrated",
        "dollars",
        "fidelity",
        "losses",
        "recorded",
        "runs",
        "spread",
        "totals",
    )

    def __init__(self, names: Iterable[str]) -> None:
        self.runs = 0
        self.totals = {name: TotalsSum() for name in names}
        self.spread = SpreadSum(list(self.totals))
        self.losses = {name: LossSum() for name in self.totals}
        self.recorded = RecordedSum()
        self.caching = CachingSum()
        self.dollars = DollarSum()
        self.calibrated = CalibratedSum()
        self.fidelity = FidelitySum()
        self.anatomy = AnatomySum()

    def add(self, record: RunRecord) -> None:
        self.runs += 1
        for name, policy in record.policies.items():
            self.totals[name].add(policy.totals, scale=record.scale, usd_void=policy.usd_void)
            self.losses[name].add(policy.excess, record.run_id)
        self.spread.add(
            {name: p.totals for name, p in record.policies.items()}, record.policies[BASELINE].totals
        )
        self.recorded.add(record.recorded)
        self.caching.add(record.caching)
        self.dollars.add(record.dollars)
        self.calibrated.add(record.calibrated)
        self.anatomy.add(record.anatomy)
        if record.fidelity is not None:
            f = record.fidelity
            self.fidelity.add(f.steps, f.replayed_prompt_tokens, f.recorded_prompt_tokens)

    def merge(self, other: FamilySum) -> None:
        self.runs += other.runs
        for name, total in other.totals.items():
            self.totals[name].merge(total)
            self.losses[name].merge(other.losses[name])
        self.spread.merge(other.spread)
        self.recorded.merge(other.recorded)
        self.caching.merge(other.caching)
        self.dollars.merge(other.dollars)
        self.calibrated.merge(other.calibrated)
        self.fidelity.merge(other.fidelity)
        self.anatomy.merge(other.anatomy)

    def policy_totals(self) -> tuple[dict[str, dict[str, Any]], dict[str, Any] | None]:
        """``{name: totals dict}``, each next to ``full`` over the same runs, with its losses; and
        ``full``'s cost anatomy over them, with each policy's saving over its reach."""
        done = {name: total.totals() for name, total in self.totals.items()}
        full = done[BASELINE]
        totals = {name: self._policy_dict(name, t, full) for name, t in sorted(done.items())}
        return totals, anatomy_dict(self.anatomy.result(), done, BASELINE)

    def _policy_dict(self, name: str, t: Totals, full: Totals) -> dict[str, Any]:
        """One policy's totals next to ``full``'s, its losses, and the 95% interval over runs of each
        figure the set has (:mod:`._spread`)."""
        out = totals_dict(t, full) | self.losses[name].result()
        spread = self.spread.intervals(name)
        out["interval_95"] = {k: v if out.get(k) is not None else None for k, v in spread.items()}
        return out

    def state(self) -> dict[str, Any]:
        return {
            "runs": self.runs,
            "totals": {name: total.state() for name, total in sorted(self.totals.items())},
            "losses": {name: loss.state() for name, loss in sorted(self.losses.items())},
            "spread": self.spread.state(),
            "recorded": self.recorded.state(),
            "caching": self.caching.state(),
            "dollars": self.dollars.state(),
            "calibrated": self.calibrated.state(),
            "fidelity": self.fidelity.state(),
            "anatomy": self.anatomy.state(),
        }

    @classmethod
    def from_state(cls, data: Any, names: Sequence[str], what: str) -> FamilySum:
        if not isinstance(data, Mapping) or not isinstance(data.get("runs"), int):
            raise StateError(f"{what} is not a family's sums")
        out = cls(names)
        out.runs = data["runs"]
        for key in ("totals", "losses"):
            if not isinstance(data.get(key), Mapping) or set(data[key]) != set(names):
                raise StateError(f"{what}.{key} does not hold the policies of the document")
        out.totals = {n: TotalsSum.from_state(data["totals"][n], f"{what}.totals.{n}") for n in names}
        out.losses = {n: LossSum.from_state(data["losses"][n], f"{what}.losses.{n}") for n in names}
        out.spread = SpreadSum.from_state(data.get("spread"), names, f"{what}.spread")
        out.recorded = RecordedSum.from_state(data.get("recorded"), f"{what}.recorded")
        out.caching = CachingSum.from_state(data.get("caching"), f"{what}.caching")
        out.dollars = DollarSum.from_state(data.get("dollars"), f"{what}.dollars")
        out.calibrated = CalibratedSum.from_state(data.get("calibrated"), f"{what}.calibrated")
        out.fidelity = FidelitySum.from_state(data.get("fidelity"), f"{what}.fidelity")
        out.anatomy = AnatomySum.from_state(data.get("anatomy"), f"{what}.anatomy")
        return out


class Aggregate:
    """The document of a bench, folded run by run (see the module docstring)."""

    def __init__(self, header: Header) -> None:
        self.header = header
        self.names = tuple(sorted(header.policies))
        if BASELINE not in self.names:
            raise ValueError(f"the bench always replays {BASELINE!r}")
        self.elapsed_seconds = 0.0
        self._families: dict[str, FamilySum] = {}
        self._groups: dict[str, FamilySum] = {}  # ``_groups.py``: runs of several families
        self._steps = 0
        self._inputs: dict[str, Mapping[str, Any]] = {}  # run id -> its inputs.runs entry
        self._failed: dict[str, str] = {}  # run id -> why its replay failed (inputs.failed)
        self._caching: dict[str, dict[str, Any]] = {}  # run id -> validation.caching.per_run entry
        self._fidelity: dict[str, dict[str, Any]] = {}  # run id -> fidelity.per_run entry
        self._models: dict[str, Mapping[str, Any]] = {}  # price model -> its prices
        self._providers: set[str] = set()  # the providers runs are scaled to
        self._cache_models: set[str] = set()  # of the runs the cache validation covers
        self._timing = {name: Histogram() for name in self.names}

    @property
    def run_count(self) -> int:
        return len(self._inputs)

    def fail(self, failed: FailedRun) -> None:
        """Note a run whose replay failed (its id must be new); nothing of it is counted."""
        self._new(failed.run_id)
        self._failed[failed.run_id] = failed.reason

    def _new(self, run_id: str) -> None:
        if run_id in self._inputs or run_id in self._failed:
            raise ValueError(f"run {run_id!r} was added twice")

    def add(self, record: RunRecord) -> None:
        """Fold one run in (its id must be new)."""
        self._new(record.run_id)
        self._families.setdefault(record.family, FamilySum(self.names)).add(record)
        for group in record.groups:
            self._groups.setdefault(group, FamilySum(self.names)).add(record)
        self._steps += record.steps
        self._inputs[record.run_id] = record.inputs
        if record.caching is not None:
            c = record.caching
            self._caching[record.run_id] = caching_entry(
                record.run_id,
                c.steps,
                c.error_sum / c.steps,
                c.simulated_cached / c.simulated_prompt,
                c.recorded_cached / c.recorded_prompt,
            )
            self._cache_models.add(record.cache_model)
        if record.fidelity is not None:
            f = record.fidelity
            self._fidelity[record.run_id] = fidelity_entry(
                record.run_id, f.steps, f.replayed_prompt_tokens, f.recorded_prompt_tokens
            )
        if record.price_model and record.price_model not in self._models:
            prices = model_prices(record.price_model)
            if prices is not None:
                self._models[record.price_model] = prices_dict(prices)
        if record.provider:
            self._providers.add(record.provider)
        for name, buckets in record.timing.items():
            for bucket, count in buckets.items():
                self._timing[name].add_bucket(bucket, count)

    def merge(self, other: Aggregate) -> None:
        """Add another aggregate of the same bench (another shard); a run in both is an error."""
        both = (self._inputs.keys() | self._failed.keys()) & (other._inputs.keys() | other._failed.keys())
        if both:
            raise ValueError(f"run {min(both)!r} is in two of the documents")
        for mine, theirs in ((self._families, other._families), (self._groups, other._groups)):
            for name, sums in theirs.items():
                mine.setdefault(name, FamilySum(self.names)).merge(sums)
        self._steps += other._steps
        self._inputs |= other._inputs
        self._failed |= other._failed
        self._caching |= other._caching
        self._fidelity |= other._fidelity
        for key, prices in other._models.items():
            if self._models.setdefault(key, prices) != prices:
                raise ValueError(f"the documents price {key!r} differently (another litellm price map)")
        self._providers |= other._providers
        self._cache_models |= other._cache_models
        for name, histogram in other._timing.items():
            self._timing[name].merge(histogram)
        self.elapsed_seconds += other.elapsed_seconds

    # ----------------------------------------------------------------------- the document
    def document(self, runs: Sequence[Mapping[str, Any]] | None = None) -> dict[str, Any]:
        """The bench document (docs/bench-json-schema.md); ``runs``: the per-run detail, sorted by
        run id (None: the document has no ``runs`` key; the caller writes the detail elsewhere)."""
        pooled = FamilySum(self.names)
        for sums in self._families.values():
            pooled.merge(sums)
        totals, anatomy = pooled.policy_totals()
        document = {
            "schema_version": SCHEMA_VERSION,
            "generator": "tiered-agent bench",
            "inputs": self._inputs_dict(),
            "settings": dict(self.header.settings),
            "calibration": self._calibration_dict(),
            "pricing": self._pricing_dict(),
            "policies": {n: dict(self.header.policies[n]) | {"totals": totals[n]} for n in self.names},
            "families": self._sets_dict(self._families),
            "groups": self._sets_dict(self._groups),
            "anatomy": anatomy,
            "recorded": recorded_dict(pooled.recorded.result()),
            **self._validation(pooled),
            TIMING_KEY: self._timing_dict(),
        }
        document["targets"] = targets_dict(document)
        if runs is not None:
            document["runs"] = list(runs)
        return document

    def _inputs_dict(self) -> dict[str, Any]:
        return {
            "paths": list(self.header.paths),
            "skipped": [dict(s) for s in self.header.skipped],
            "skipped_lines": [dict(s) for s in self.header.skipped_lines],
            "failed": [{"run_id": r, "reason": self._failed[r]} for r in sorted(self._failed)],
            "run_count": len(self._inputs),
            "step_count": self._steps,
            "uncounted_steps": sum(entry.get("uncounted_steps", 0) for entry in self._inputs.values()),
            "runs": [dict(self._inputs[run_id]) for run_id in sorted(self._inputs)],
        }

    def _calibration_dict(self) -> dict[str, Any]:
        entries = {p: dict(e) for p, e in self.header.calibration.items()}
        for provider in self._providers - entries.keys():
            entries[provider] = unmeasured_entry()
        return dict(sorted(entries.items()))

    def _pricing_dict(self) -> dict[str, Any]:
        priced = {run_id for run_id, entry in self._inputs.items() if entry["price_model"]}
        return dict(self.header.pricing) | {
            "priced_runs": len(priced),
            "unpriced_runs": sorted(self._inputs.keys() - priced),
            "models": {key: dict(self._models[key]) for key in sorted(self._models)},
        }

    @staticmethod
    def _sets_dict(sets: Mapping[str, FamilySum]) -> dict[str, Any]:
        """``families`` or ``groups``: per set of runs, its totals per policy, recorded usage, anatomy."""
        out = {}
        for name in sorted(sets):
            sums = sets[name]
            policies, anatomy = sums.policy_totals()
            out[name] = {
                "runs": sums.runs,
                "steps": policies[BASELINE]["steps"],
                "policies": {n: {"totals": t} for n, t in policies.items()},
                "recorded": recorded_dict(sums.recorded.result()),
                "anatomy": anatomy,
            }
        return out

    def _validation(self, pooled: FamilySum) -> dict[str, Any]:
        families = sorted(self._families)
        caching = pooled.caching.result()
        per_family = {f: c for f in families if (c := self._families[f].caching.result()) is not None}
        return {
            "validation": {
                "caching": None
                if caching is None
                else {
                    **caching_dict(*caching),
                    "cache_models": sorted(self._cache_models),
                    "per_family": {f: caching_dict(*c) for f, c in per_family.items()},
                    "per_run": [self._caching[run_id] for run_id in sorted(self._caching)],
                },
                "cost_usd": cost_validation_dict(
                    pooled.dollars.result(), {f: self._families[f].dollars.result() for f in families}
                ),
            },
            "fidelity": fidelity_dict(
                pooled.fidelity.result(),
                pooled.calibrated.result(),
                {f: self._families[f].calibrated.result() for f in families},
                [self._fidelity[run_id] for run_id in sorted(self._fidelity)],
            ),
        }

    def _timing_dict(self) -> dict[str, Any]:
        policies = {
            name: {
                "steps": h.count,
                "build_ms_median": rounded(h.percentile(50) * 1000),
                "build_ms_p99": rounded(h.percentile(99) * 1000),
            }
            for name, h in self._timing.items()
        }
        return {"elapsed_seconds": rounded(self.elapsed_seconds), "policies": policies}

    # ----------------------------------------------------------------------- a shard's state
    def state(self) -> dict[str, Any]:
        """What a shard's document carries for ``bench merge`` besides its own lists (plain JSON)."""
        return {
            "version": STATE_VERSION,
            "families": {f: sums.state() for f, sums in sorted(self._families.items())},
            "groups": {g: sums.state() for g, sums in sorted(self._groups.items())},
            "providers": sorted(self._providers),
            "cache_models": sorted(self._cache_models),
            "timing": {name: h.state() for name, h in self._timing.items()},
            "elapsed_seconds": self.elapsed_seconds,
        }

    @classmethod
    def from_document(cls, document: Mapping[str, Any], state: Mapping[str, Any]) -> Aggregate:
        """A shard's aggregate: the header and per-run lists of its ``document``, the sums of its
        ``state``. Raises :class:`StateError` (or KeyError/TypeError on a document of another shape)."""
        out = cls(Header.from_document(document))
        if state.get("version") != STATE_VERSION:
            raise StateError(
                f"its state has version {state.get('version')!r}, this bench reads {STATE_VERSION}"
            )
        out._families = _sets_from_state(state, "families", out.names)
        out._groups = _sets_from_state(state, "groups", out.names)
        inputs = document["inputs"]
        out._inputs = {entry["run_id"]: entry for entry in inputs["runs"]}
        out._failed = {str(e["run_id"]): str(e["reason"]) for e in inputs.get("failed", [])}
        out._steps = inputs["step_count"]
        caching, fidelity = document["validation"]["caching"], document["fidelity"]
        out._caching = {e["run_id"]: e for e in (caching or {}).get("per_run", [])}
        out._fidelity = {e["run_id"]: e for e in (fidelity or {}).get("per_run", [])}
        out._models = dict(document["pricing"]["models"])
        out._providers = set(_strings(state.get("providers"), "providers"))
        out._cache_models = set(_strings(state.get("cache_models"), "cache_models"))
        timing = state.get("timing")
        if not isinstance(timing, Mapping) or set(timing) != set(out.names):
            raise StateError("its timing does not hold the policies of the document")
        out._timing = {name: Histogram.from_state(timing[name], f"timing.{name}") for name in out.names}
        elapsed = state.get("elapsed_seconds")
        if isinstance(elapsed, bool) or not isinstance(elapsed, int | float):
            raise StateError("its elapsed_seconds is not a number")
        out.elapsed_seconds = float(elapsed)
        return out


def _sets_from_state(state: Mapping[str, Any], key: str, names: Sequence[str]) -> dict[str, FamilySum]:
    sets = state.get(key)
    if not isinstance(sets, Mapping):
        raise StateError(f"its state has no {key}")
    return {str(name): FamilySum.from_state(data, names, f"{key}.{name}") for name, data in sets.items()}


def _strings(value: Any, what: str) -> list[str]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise StateError(f"its {what} is not a list of strings")
    return value
