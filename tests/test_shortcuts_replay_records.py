"""The replay's per-step records are ``NamedTuple``s, built (and unpickled) in C (speed round 17a,
docs/bench-speed.md).

The shortcuts' tests fail on the round's base (the records were frozen dataclasses); the property
tests pin that a record holds what it was built with, by name, that copies and pickles keep it, and
that the aggregates read from records give the sums a plain recount gives.
"""

from __future__ import annotations

import pickle
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiered_agent.bench._cache_chain import _Sent
from tiered_agent.bench._caching import CacheUse, _Entry, _Route
from tiered_agent.bench._caching import Pricing as CachePricing
from tiered_agent.bench._metrics import PolicyRunMetrics, StepMetrics, totals
from tiered_agent.bench._replay import _LineRulers, _Misses
from tiered_agent.bench._turns import RetrievalTurn

# The fields of the frozen dataclass it was, in its order (positional construction relies on it).
FIELDS = (
    "step",
    "prompt_tokens",
    "cached_tokens",
    "output_tokens",
    "salient",
    "missed",
    "retrieval_tokens",
    "rewrote_prefix",
    "compacted",
    "over_hard_limit",
    "truncated_chars",
    "build_seconds",
    "cache_write_tokens",
    "recoverable",
    "recovery_tokens",
    "word_salient",
    "word_missed",
    "line_needed",
    "line_missed",
    "line_recoverable",
    "own_needed",
    "own_missed",
    "own_recoverable",
    "turn",
    "fixed_tokens",
    "new_tokens",
)
REQUIRED = 12  # the fields without a default
RECORDS: tuple[type[Any], ...] = (StepMetrics, _Misses, _LineRulers, CacheUse, _Route, _Entry, _Sent)

# ----------------------------------------------------------------------------- the shortcut


@pytest.mark.parametrize("record", RECORDS, ids=lambda r: r.__name__)
def test_the_per_step_records_are_named_tuples(record: type[Any]) -> None:
    assert issubclass(record, tuple)
    assert record.__slots__ == ()  # no instance dict: as small as the slotted dataclass was


def test_step_metrics_keeps_the_dataclass_fields_and_defaults() -> None:
    assert StepMetrics._fields == FIELDS
    assert tuple(StepMetrics._field_defaults) == FIELDS[REQUIRED:]
    step = StepMetrics(1, 2, 3, 4, 5, ("a",), 6, True, False, True, 7, 0.5)
    assert (step.step, step.missed, step.over_hard_limit, step.build_seconds) == (1, ("a",), True, 0.5)
    assert step.line_missed == step.own_missed == () and step.turn is None
    assert step.cache_write_tokens == step.fixed_tokens == step.new_tokens == 0


def test_the_records_are_immutable() -> None:
    step = StepMetrics(1, 2, 3, 4, 5, (), 6, False, False, False, 7, 0.0)
    with pytest.raises(AttributeError):
        step.prompt_tokens = 9  # type: ignore[misc]
    with pytest.raises(AttributeError):
        CacheUse(1).read = 2  # type: ignore[misc]
    with pytest.raises(AttributeError):
        _Misses().missed = ("x",)  # type: ignore[misc]


def test_the_small_records_keep_their_defaults() -> None:
    assert CacheUse(5) == CacheUse(5, 0) and CacheUse(5).written == 0
    assert _Misses() == _Misses(0, (), 0, 0, 0, (), 0, ())
    assert (_LineRulers().line_recoverable, _LineRulers().own_recoverable, _LineRulers().turn) == (0, 0, None)


# ----------------------------------------------------------------------------- equivalences

_strings = st.tuples() | st.lists(st.text(max_size=6), max_size=3).map(tuple)
_turns = st.none() | st.builds(RetrievalTurn, st.integers(0, 9), st.integers(0, 10**6), st.integers(0, 10**6))


def _field(name: str) -> st.SearchStrategy[Any]:
    if name in ("missed", "line_missed", "own_missed"):
        return _strings
    if name in ("rewrote_prefix", "compacted", "over_hard_limit"):
        return st.booleans()
    if name == "build_seconds":
        return st.floats(0, 10, allow_nan=False)
    if name == "turn":
        return _turns
    return st.integers(0, 10**7)


_steps = st.fixed_dictionaries({name: _field(name) for name in FIELDS})


@settings(max_examples=200, deadline=None)
@given(_steps)
def test_a_step_holds_what_it_was_built_with(values: dict[str, Any]) -> None:
    step = StepMetrics(**values)
    assert {name: getattr(step, name) for name in FIELDS} == values == step._asdict()
    assert step == StepMetrics(*(values[name] for name in FIELDS))
    copy = step._replace(build_seconds=0.0)
    assert type(copy) is StepMetrics and copy.build_seconds == 0.0
    assert {**copy._asdict(), "build_seconds": values["build_seconds"]} == values
    again = pickle.loads(pickle.dumps(step, protocol=pickle.HIGHEST_PROTOCOL))
    assert type(again) is StepMetrics and again == step and hash(again) == hash(step)


def _recount(steps: list[StepMetrics]) -> dict[str, int]:
    """The sums :func:`totals` reports, by a loop over the records' fields by name."""
    out = dict.fromkeys(
        ("prompt_tokens", "cached_tokens", "output_tokens", "missed", "steps_with_miss", "line_missed"), 0
    )
    out |= dict.fromkeys(("own_missed", "prefix_rewrites", "compactions", "retrieval_turns", "peak"), 0)
    for s in steps:
        out["prompt_tokens"] += s.prompt_tokens
        out["cached_tokens"] += s.cached_tokens
        out["output_tokens"] += s.output_tokens
        out["missed"] += len(s.missed)
        out["steps_with_miss"] += 1 if s.missed else 0
        out["line_missed"] += len(s.line_missed)
        out["own_missed"] += len(s.own_missed)
        out["prefix_rewrites"] += 1 if s.rewrote_prefix else 0
        out["compactions"] += 1 if s.compacted else 0
        out["retrieval_turns"] += 0 if s.turn is None else 1
        out["peak"] = max(out["peak"], s.prompt_tokens)
    return out


@settings(max_examples=100, deadline=None)
@given(st.lists(_steps, max_size=12))
def test_the_totals_of_records_equal_a_recount(values: list[dict[str, Any]]) -> None:
    steps = [StepMetrics(**v) for v in values]
    found = totals([PolicyRunMetrics("p", "r", tuple(steps))], CachePricing())
    expected = _recount(steps)
    assert found.steps == len(steps) and found.peak_prompt_tokens == expected.pop("peak")
    assert {name: getattr(found, name) for name in expected} == expected


def test_records_compare_by_their_fields_in_order() -> None:
    assert CacheUse(3, 4) == CacheUse(read=3, written=4) != CacheUse(4, 3)
    assert tuple(CacheUse(3, 4)) == (3, 4)
