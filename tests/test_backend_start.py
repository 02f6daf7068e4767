"""The bench's worker pool starts while the inputs are read, and its workers leave without losing output."""

from __future__ import annotations

import dataclasses
import gc
import os
import sys
from contextlib import ExitStack

import pytest
from test_shard import _run

from tiered_agent._tokens import TokenCounter
from tiered_agent.bench._backend import GC_THRESHOLDS, Pool, open_backend
from tiered_agent.bench._calibration import full_prompt_tokens
from tiered_agent.bench._replay import RunInfo
from tiered_agent.bench._shard import Shard
from tiered_agent.bench._spool import RunSpool
from tiered_agent.bench._stream import PARALLEL_MIN_STEPS, _EarlyPool, _Entry, _skeleton


def _entry(name: str, steps: int, *, usage: bool = False) -> _Entry:
    run = _run(name, 2, usage_ratio=1.0 if usage else 0.0)  # no usage: the calibration does not count it
    info = dataclasses.replace(RunInfo.of(run), steps=steps)
    return _Entry(name, info, _skeleton(run), None, len(run.messages))  # type: ignore[arg-type]


def test_the_pool_starts_once_the_runs_read_so_far_need_it() -> None:
    half = PARALLEL_MIN_STEPS // 2
    with ExitStack() as stack:
        early = _EarlyPool(stack, 0, None, None, "o200k_base")
        early.seen(_entry("a", half))
        assert early.ready() is None  # too few steps yet: the bench may still run in this process
        early.seen(_entry("b", PARALLEL_MIN_STEPS - half))
        pool = early.ready()
        assert isinstance(pool, Pool)
        early.seen(_entry("c", 5))
        assert early.ready() is pool  # one pool, whatever is read after
        assert list(pool.map(_pid, [(1,), (2,)])) != []


def test_no_early_pool_for_ray_for_one_worker_or_for_runs_another_shard_replays() -> None:
    with ExitStack() as stack:
        ray = _EarlyPool(stack, 0, "local", None, "o200k_base")  # type: ignore[arg-type]
        one = _EarlyPool(stack, 1, None, None, "o200k_base")
        shard = Shard.parse("2/2")
        other = next(n for n in map(str, range(100)) if not shard.holds(n))
        sharded = _EarlyPool(stack, 0, None, shard, "o200k_base")
        for early in (ray, one, sharded):
            early.seen(_entry(other, PARALLEL_MIN_STEPS * 2))
        assert (ray.ready(), one.ready(), sharded.ready()) == (None, None, None)


def test_an_explicit_worker_count_starts_the_pool_at_the_first_run() -> None:
    with ExitStack() as stack:
        early = _EarlyPool(stack, 2, None, None, "o200k_base")
        early.seen(_entry("a", 1))
        assert isinstance(early.ready(), Pool)


def _pid(level: int | None, value: int) -> int:
    return os.getpid()


def _unflushed(level: int | None, text: str) -> int:
    sys.stdout.write(text)  # no line break, no flush: still in the worker's buffer when it exits
    return os.getpid()


def test_workers_exit_with_their_output_written(capfd: pytest.CaptureFixture[str]) -> None:
    """A worker leaves without the interpreter's teardown, after what it wrote was flushed."""
    with open_backend(2) as backend:
        pids = set(backend.map(_unflushed, [("one-",), ("two-",), ("three-",)]))
    assert pids and os.getpid() not in pids
    out = capfd.readouterr().out
    assert all(word in out for word in ("one-", "two-", "three-"))


def test_the_runs_the_calibration_counts_start_the_pool_whatever_the_shard() -> None:
    shard = Shard.parse("2/2")
    other = next(n for n in map(str, range(100)) if not shard.holds(n))
    with ExitStack() as stack:
        early = _EarlyPool(stack, 0, None, shard, "o200k_base")
        early.seen(_entry(other, PARALLEL_MIN_STEPS, usage=True))
        assert isinstance(early.ready(), Pool)


def test_the_runs_the_calibration_measures_are_counted_by_the_workers_while_reading() -> None:
    """Each measured run is handed to a worker as it is read, before and after the pool started,
    and its counts are what the calibration would count itself; unmeasured runs are not counted."""
    runs = [
        _run(name, steps, usage_ratio=ratio)
        for name, steps, ratio in (("early", 3, 1.0), ("late", 5, 1.0), ("none", 4, 0.0))
    ]
    with RunSpool() as spool, ExitStack() as stack:
        early = _EarlyPool(stack, 0, None, None, "o200k_base")
        for run, steps in zip(runs, (1, PARALLEL_MIN_STEPS, 1), strict=True):
            info = dataclasses.replace(RunInfo.of(run), steps=steps)
            early.seen(_Entry(run.run_id, info, _skeleton(run), spool.add(run), len(run.messages)))
        counted = early.counted()
    counter = TokenCounter("o200k_base")
    assert counted == {run.run_id: full_prompt_tokens(run, counter) for run in runs[:2]}
    assert len(counted["late"]) == 5 and counted["late"][0] > 0


def _thresholds(level: int | None, _: int) -> tuple[int, ...]:
    return tuple(gc.get_threshold())


def test_workers_collect_garbage_at_the_bench_thresholds() -> None:
    with open_backend(2) as backend:
        seen = set(backend.map(_thresholds, [(1,), (2,)]))
    assert seen == {GC_THRESHOLDS}
    assert tuple(gc.get_threshold()) != GC_THRESHOLDS  # this process keeps its own


def test_the_serial_backend_replays_under_the_workers_collector_and_restores_the_callers() -> None:
    """The serial backend (``--workers 1``, ``replay_runs`` of one process) collects garbage as a pool
    worker does (:data:`GC_THRESHOLDS`), and gives the caller its own thresholds back, even after an
    error inside."""
    before = gc.get_threshold()
    try:
        gc.set_threshold(700, 10, 10)
        with open_backend(1) as backend:
            assert list(backend.map(lambda _level, x: gc.get_threshold(), [(1,)])) == [GC_THRESHOLDS]
        assert gc.get_threshold() == (700, 10, 10)
        with pytest.raises(RuntimeError), open_backend(1):
            raise RuntimeError("a replay that failed")
        assert gc.get_threshold() == (700, 10, 10)
    finally:
        gc.set_threshold(*before)
