"""The bench, streamed: memory that does not grow with the number of runs.

:func:`stream_bench` is what ``tiered-agent bench`` runs:

1. **Read.** The inputs are read one file at a time (:class:`~._importers.RunReader`); each run
   gets its id (copies numbered ``id#2``, ...) and is parked in a :class:`~._spool.RunSpool`
   (compressed, on disk); the main process keeps only what the calibration and the plan need
   (its usage, not its messages).
2. **Calibrate.** The runs with recorded usage are counted by the workers
   (:func:`~._calibration.full_prompt_tokens`), and the calibration is fitted on all runs,
   whichever shard is replayed here (``--shard``), so a run's numbers never depend on the shard.
   The token ids a worker encoded for a run's recorded texts are parked on disk
   (:func:`~._spool.park_encoded`, workers on this machine only) for the run's replay to adopt
   instead of encoding the same texts again.
3. **Replay.** The runs of this shard are replayed by the workers, longest first, a bounded
   number at a time; each worker reduces its run to a :class:`~._record.RunRecord` and the main
   process folds it into an :class:`~._aggregate.Aggregate` as it arrives. The per-run detail
   goes to a :class:`~._detail.DetailSpool` (a temporary file), never into memory.

The document the aggregate writes is the one :func:`~._report.build_document` builds from a
replay held in memory (the same records, the same folding), whatever the order the workers
finish in, the number of workers or the backend.
"""

from __future__ import annotations

import dataclasses
import gc
import os
import pickle
import tempfile
import time
import zlib
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future
from contextlib import ExitStack
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType

import structlog

from .._cluster import RayAddress
from .._errors import ConfigurationError, TieredAgentError
from .._tokens import EncodedTexts, TokenCounter
from .._workers import configure_worker_logging
from ..context._policy import Policy
from ._aggregate import Aggregate, Header
from ._backend import Backend, Pool, open_backend
from ._calibration import Calibration, ProviderCalibration, counted_run, fit, measurable
from ._detail import DetailSpool
from ._importers import RunReader, SkippedInput, SkippedLines
from ._pricing import RunPlan
from ._record import FailedRun, RunRecord, failure_reason, record_of
from ._recorded import RecordedRun
from ._replay import ReplaySettings, RunInfo, numbered, replay_job, run_plan
from ._shard import Shard
from ._spool import RunSpool, SpoolRef, load_encoded, load_run, park_encoded, read_ref

__all__ = [
    "PARALLEL_MIN_STEPS",
    "PlannedRun",
    "ReplayJob",
    "Streamed",
    "count_unit",
    "record_unit",
    "stream_bench",
    "warm_unit",
]

PARALLEL_MIN_STEPS = 600  # below this, spawning worker processes costs more than it saves
RunSource = RecordedRun | bytes | SpoolRef  # a run, its spooled bytes, or where they lie
Counted = tuple[str, list[int], SpoolRef | None]  # a run's id, counts, and its texts' ids (parked)
log = structlog.get_logger(__name__)


@dataclass(frozen=True, slots=True)
class _Entry:
    """One input run as the main process keeps it between reading it and replaying it."""

    recorded_id: str  # the id the run recorded (what a shard is chosen by)
    info: RunInfo  # its id here (copies numbered), usage and shape; no plan yet
    skeleton: RecordedRun  # what the calibration reads: everything but the conversation
    ref: SpoolRef
    size: int  # messages (the longest are replayed first)


@dataclass(frozen=True, slots=True)
class _Scan:
    entries: tuple[_Entry, ...]
    skipped: tuple[SkippedInput, ...]
    skipped_lines: tuple[SkippedLines, ...]


@dataclass
class Streamed:
    """A streamed bench's result: the folded document and the per-run detail (None: left out),
    whose temporary file :meth:`close` removes (a context manager)."""

    aggregate: Aggregate
    detail: DetailSpool | None
    note: str | None = None  # for the user: how many runs a shard replayed

    def close(self) -> None:
        if self.detail is not None:
            self.detail.close()

    def __enter__(self) -> Streamed:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def stream_bench(
    inputs: Sequence[Path],
    policies: Mapping[str, Policy],
    settings: ReplaySettings | None = None,
    *,
    workers: int = 0,
    strict: bool = False,
    shard: Shard | None = None,
    ray: RayAddress | None = None,
    detail: bool = True,
    detail_dir: Path | None = None,
    on_start: Callable[[int], None] | None = None,
    on_run: Callable[[int], None] | None = None,
) -> Streamed:
    """Replay the runs of ``inputs`` (this ``shard``'s) under ``policies``, streamed (see the module
    docstring). ``workers``: processes (0: automatic, at most 2), or with ``ray`` the runs in
    flight (0: twice the cluster's CPUs); ``detail``: keep each run's ``runs[]`` entry, in a
    temporary file in ``detail_dir`` (default: the system's); ``on_start(steps)`` once the runs to
    replay are known, ``on_run(steps)`` as each finishes. Raises :class:`ConfigurationError` when
    the inputs hold no run (``strict``: when any input cannot be replayed, as :func:`load_runs`)."""
    started = time.perf_counter()
    settings = settings or ReplaySettings()
    with RunSpool() as spool, ExitStack() as stack:
        parked = stack.enter_context(tempfile.TemporaryDirectory(prefix="tiered-agent-ids-"))
        early = _EarlyPool(stack, workers, ray, shard, settings.tokenizer, parked=parked)
        scan = _scan(inputs, spool, strict, early.seen)
        if not scan.entries:
            raise ConfigurationError(_nothing_found(inputs, scan))
        chosen = [e for e in scan.entries if shard is None or shard.holds(e.recorded_id)]
        steps = sum(e.info.steps for e in chosen)
        counted = sum(e.info.steps for e in scan.entries if measurable(e.skeleton))
        where = ray if chosen else None  # an empty shard starts no cluster
        backend = early.ready() or stack.enter_context(
            open_backend(_workers(workers, where, max(steps, counted)), where)
        )
        counts = early.results()
        folder = None if backend.remote else parked  # workers elsewhere cannot read this machine's files
        calibration = _calibrate(backend, spool, scan.entries, (settings.tokenizer, folder), counts)
        aggregate = Aggregate(_header(settings, policies, calibration, inputs, scan))
        if on_start is not None:
            on_start(steps)
        items = _replay_items(backend, spool, chosen, settings, (calibration, counts))
        job = ReplayJob(dict(policies), settings, dict(calibration.providers), detail)
        details = DetailSpool(detail_dir) if detail else None
        _fold(backend.map(record_unit, items, (job,)), aggregate, details, on_run)
    aggregate.elapsed_seconds = time.perf_counter() - started
    note = None
    if shard is not None:
        note = f"shard {shard}: {len(chosen)} of {len(scan.entries)} runs ({steps} model calls)"
    return Streamed(aggregate, details, note)


def _header(
    settings: ReplaySettings,
    policies: Mapping[str, Policy],
    calibration: Calibration,
    inputs: Sequence[Path],
    scan: _Scan,
) -> Header:
    return Header.of(
        settings,
        policies,
        calibration.providers,
        paths=[str(p) for p in inputs],
        skipped=[s.to_dict() for s in scan.skipped],
        skipped_lines=[s.to_dict() for s in scan.skipped_lines],
    )


def _fold(
    records: Iterator[RunRecord | FailedRun],
    aggregate: Aggregate,
    details: DetailSpool | None,
    on_run: Callable[[int], None] | None,
) -> None:
    """Fold each record into ``aggregate`` and its detail into ``details`` as it arrives; the
    detail's temporary file is removed when the replay fails (it is the caller's otherwise)."""
    try:
        for record in records:
            if isinstance(record, FailedRun):
                aggregate.fail(record)
            else:
                aggregate.add(record)
                if details is not None and record.detail is not None:
                    details.add(record.run_id, record.detail)
            if on_run is not None:
                on_run(record.steps)
    except BaseException:
        if details is not None:
            details.close()
        raise


def _scan(inputs: Sequence[Path], spool: RunSpool, strict: bool, on_entry: Callable[[_Entry], None]) -> _Scan:
    """Read every input run into the spool, keeping its id, usage and shape (``on_entry``: each, as
    it is read)."""
    reader = RunReader(inputs, strict=strict)
    seen: dict[str, int] = {}
    entries = []
    for run in reader:
        name = numbered(run.run_id, seen)
        named = run if name == run.run_id else dataclasses.replace(run, run_id=name)
        entries.append(
            _Entry(run.run_id, RunInfo.of(named), _skeleton(named), spool.add(named), len(run.messages))
        )
        on_entry(entries[-1])
    return _Scan(tuple(entries), reader.skipped, reader.skipped_lines)


class _EarlyPool:
    """The worker pool, started while the inputs are still being read, as soon as they are known
    to need it (:func:`_workers`: an explicit worker count, or enough steps so far; never Ray), so
    that its workers start up (a fresh interpreter each, the bench's modules, the tokenizer) while
    this process reads and spools the rest."""

    def __init__(
        self,
        stack: ExitStack,
        workers: int,
        ray: RayAddress | None,
        shard: Shard | None,
        tokenizer: str,
        *,
        parked: str | None = None,
    ) -> None:
        self._stack = stack
        self._parked = parked  # where the workers park the token ids they encode (None: nowhere)
        self._workers = workers
        self._enabled = ray is None
        self._shard = shard
        self._tokenizer = tokenizer
        self._steps = 0  # of the runs this shard replays
        self._counted = 0  # of the runs the calibration counts
        self._pool: Pool | None = None
        self._started: list[Future[object]] = []
        self._measured: list[_Entry] = []  # read before the pool started: counted once it starts
        self._counts: dict[str, Future[Counted]] = {}

    def seen(self, entry: _Entry) -> None:
        if not self._enabled:
            return
        if measurable(entry.skeleton):
            self._measured.append(entry)
            self._counted += entry.info.steps
        if self._pool is None:
            if self._shard is None or self._shard.holds(entry.recorded_id):
                self._steps += entry.info.steps
            workers = _workers(self._workers, None, max(self._steps, self._counted))
            if workers > 1:  # the count only grows: the bench will open this pool after the reading
                backend = self._stack.enter_context(open_backend(workers))
                assert isinstance(backend, Pool)
                self._pool = backend
                self._started = backend.start(warm_unit, self._tokenizer)
        if self._pool is not None:
            self._count_measured(self._pool)

    def _count_measured(self, pool: Pool) -> None:
        """Hand the runs the calibration measures to the workers as they are read (the workers
        would otherwise wait for the whole reading)."""
        for entry in self._measured:
            self._counts[entry.info.run_id] = pool.submit(
                count_unit, self._tokenizer, self._parked, entry.ref, entry.info.run_id
            )
        self._measured.clear()

    def ready(self) -> Pool | None:
        """The pool, once its workers started (what a start raised, raised here); None if not started."""
        for future in self._started:
            future.result()
        return self._pool

    def results(self) -> dict[str, tuple[list[int], SpoolRef | None]]:
        """The calibration's counts of the runs handed to the workers while reading, and where their
        texts' ids are parked (by run id)."""
        return {run_id: (counts, ref) for run_id, counts, ref in (f.result() for f in self._counts.values())}

    def counted(self) -> dict[str, list[int]]:
        """The calibration's counts of the runs handed to the workers while reading (by run id)."""
        return {run_id: counts for run_id, (counts, _) in self.results().items()}


def warm_unit(level: int | None, tokenizer: str) -> None:
    """A worker's first unit: its logging, and the tokenizer loaded (what the bench's modules
    import came with this function)."""
    if level is not None:
        configure_worker_logging(level)
    TokenCounter(tokenizer).count_text("warm")
    gc.freeze()  # what the worker imported lives as long as it does: no collection scans it again


def _skeleton(run: RecordedRun) -> RecordedRun:
    """The run without its conversation: what the calibration reads (id, model, format, usage)."""
    return dataclasses.replace(
        run,
        messages=(),
        tools=(),
        read_only_tools=frozenset(),
        metadata={},
        read_only_calls=frozenset(),
        routes=(),
        timestamps=(),
        restarts=(),
        step_ids=(),
    )


def _nothing_found(inputs: Sequence[Path], scan: _Scan) -> str:
    count = len(scan.skipped)
    note = f" ({count} input{'s' * (count != 1)} skipped, see the warnings)" if count else ""
    return f"no recorded runs found in {', '.join(str(p) for p in inputs)}{note}"


def _workers(workers: int, ray: RayAddress | None, steps: int) -> int:
    if workers or ray is not None:
        return workers
    return min(2, os.cpu_count() or 1) if steps >= PARALLEL_MIN_STEPS else 1


def _source(backend: Backend, spool: RunSpool, ref: SpoolRef) -> RunSource:
    """How a unit of work gets its run: where it lies, or (for workers on other machines) its bytes."""
    return spool.read(ref) if backend.remote else ref


def _calibrate(
    backend: Backend,
    spool: RunSpool,
    entries: Sequence[_Entry],
    counting: tuple[str, str | None],
    counted: dict[str, tuple[list[int], SpoolRef | None]],
) -> Calibration:
    """The calibration of every input run (the workers count the measured runs' prompts, with
    ``counting``: the tokenizer, and the folder to park their texts' ids in, None for none; ``counted``:
    the runs they already counted, by run id, to which the others are added)."""
    measured = (
        (_source(backend, spool, e.ref), e.info.run_id)
        for e in entries
        if e.info.run_id not in counted and measurable(e.skeleton)
    )
    for run_id, counts, ref in backend.map(count_unit, measured, counting):
        counted[run_id] = (counts, ref)
    tokens = {run_id: counts for run_id, (counts, _) in counted.items()}
    return fit([e.skeleton for e in entries], tokens=tokens)


@dataclass(frozen=True, slots=True)
class PlannedRun:
    """A run's info and plan, and where its calibration parked its texts' ids (None: nowhere)."""

    info: RunInfo
    plan: RunPlan
    parked: SpoolRef | None = None


def _replay_items(
    backend: Backend,
    spool: RunSpool,
    chosen: Sequence[_Entry],
    settings: ReplaySettings,
    calibrated: tuple[Calibration, Mapping[str, tuple[list[int], SpoolRef | None]]],
) -> Iterator[tuple[RunSource, PlannedRun]]:
    """The runs to replay, longest first, each with its planned info, its plan (made lazily) and its
    parked ids (``calibrated``: the calibration, and what it counted by run id)."""
    calibration, counted = calibrated
    for entry in sorted(chosen, key=lambda e: (-e.size, e.info.run_id)):
        plan = run_plan(entry.info, settings, calibration)
        parked = counted.get(entry.info.run_id, ([], None))[1]
        yield _source(backend, spool, entry.ref), PlannedRun(entry.info.planned(plan), plan, parked)


def _run_of(source: RunSource) -> RecordedRun:
    if isinstance(source, RecordedRun):
        return source
    return load_run(source if isinstance(source, bytes) else read_ref(source))


def count_unit(
    level: int | None, tokenizer: str, parked: str | None, source: RunSource, run_id: str
) -> Counted:
    """A unit of work: one run's replayed ``full`` prompt tokens per step, for the calibration, and
    where the ids of its recorded texts are parked in the folder ``parked`` (None: not parked).
    When the count raises, no counts (the calibration leaves the run unmeasured; logged)."""
    if level is not None:
        configure_worker_logging(level)
    try:
        counts, encoded = counted_run(_run_of(source), TokenCounter(tokenizer))
        return run_id, counts, None if parked is None else park_encoded(parked, encoded)
    except TieredAgentError:
        raise
    except Exception as error:  # fail open: the run is calibrated as unmeasured, its replay goes on
        _log_failure("bench.count_failed", run_id, error)
        return run_id, [], None


@dataclass(frozen=True, slots=True)
class ReplayJob:
    """What every run of a bench is replayed with (sent once per unit of work, or once to Ray)."""

    policies: Mapping[str, Policy]
    settings: ReplaySettings
    providers: Mapping[str, ProviderCalibration]  # the calibration runs are priced with
    detail: bool  # records carry their runs[] entry


def record_unit(
    level: int | None, job: ReplayJob, source: RunSource, planned: PlannedRun
) -> RunRecord | FailedRun:
    """A unit of work: one run replayed under every policy and reduced to its record; a
    :class:`FailedRun` (logged) when anything unforeseen raised: a bug in one run never ends the
    bench (the context steps' own errors are already skipped per prompt, ``step_errors``). The
    runtime's own errors (:class:`~tiered_agent._errors.TieredAgentError`: a summary model that
    fails, a configuration) are raised: they are meant to stop the bench in one sentence."""
    if level is not None:
        configure_worker_logging(level)
    try:
        run = _run_of(source)
        parked = _parked(planned.parked, run.run_id)
        replay = replay_job(run, job.policies, job.settings, planned.plan, parked)
        return record_of(planned.info, replay, job.settings, job.providers, detail=job.detail)
    except TieredAgentError:  # named on purpose (a summary model that fails, ...): ends the bench
        raise
    except Exception as error:  # fail open, recorded: inputs.failed, the log, the CLI's warning
        _log_failure("bench.run_failed", planned.info.run_id, error)
        return FailedRun(planned.info.run_id, planned.info.steps, failure_reason(error))


def _log_failure(event: str, run_id: str, error: Exception) -> None:
    """The error in one line; its traceback at debug level (``--log-level debug``)."""
    log.error(event, run_id=run_id, error=failure_reason(error))
    log.debug(f"{event}.traceback", run_id=run_id, exc_info=error)


def _parked(ref: SpoolRef | None, run_id: str) -> EncodedTexts | None:
    """The ids parked at ``ref``; None (the replay encodes the texts itself) when they cannot be read."""
    if ref is None:
        return None
    try:
        return load_encoded(ref)
    except (OSError, EOFError, TypeError, ValueError, pickle.UnpicklingError, zlib.error) as error:
        log.warning("bench.parked_ids_unreadable", run_id=run_id, error=str(error))
        return None
