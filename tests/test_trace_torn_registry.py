"""The log-once registry of torn trace files is bounded: the oldest file state is forgotten first."""

from __future__ import annotations

from pathlib import Path

import pytest

from tiered_agent import _trace
from tiered_agent._trace import SkippedLine


def test_the_registry_of_torn_traces_keeps_at_most_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(_trace, "_warned_torn", {})
    monkeypatch.setattr(_trace, "_WARNED_TORN_MAX", 2)
    paths = [tmp_path / f"t{n}.jsonl" for n in range(3)]
    for path in paths:
        path.write_text('{"torn"')
        _trace._warn_torn(path, SkippedLine(1, "torn", torn=True))
        _trace._warn_torn(path, SkippedLine(1, "torn", torn=True))  # the same state: logged once
    assert [Path(name).name for name, _ in _trace._warned_torn] == ["t1.jsonl", "t2.jsonl"]
