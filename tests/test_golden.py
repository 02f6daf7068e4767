"""The byte-identical check: every policy builds exactly the prompts, and the bench exactly the JSON,
frozen in tests/golden/ (see tests/golden_data.py; regenerate only with scripts/freeze_golden.py at a
commit whose behaviour you mean to freeze).

A combination whose prompts differ is reported with the first step that differs and a readable
unified diff of that prompt: as the frozen commit built it (its tree exported with ``git archive``)
and as the code builds it now.
"""

from __future__ import annotations

import pytest
from golden_data import (
    BENCH_FILE,
    FROZEN_AT,
    PROMPTS_FILE,
    bench_golden,
    chain,
    combinations,
    first_difference,
    prompt_entries,
    read,
    step_ids,
)


def test_every_policy_builds_the_frozen_prompts() -> None:
    frozen = read(PROMPTS_FILE)
    golden = combinations(frozen)
    entries = dict(prompt_entries())
    current = {key: {"steps": len(steps), "sha256": chain(steps)} for key, steps in entries.items()}
    assert sorted(current) == sorted(golden), "the set of frozen (run, policy, window) combinations changed"
    changed = sorted(
        key for key in golden if current[key] != {k: golden[key][k] for k in ("steps", "sha256")}
    )
    if changed:
        first = changed[0]
        detail = first_difference(first, golden[first], step_ids(entries[first]), frozen.get(FROZEN_AT, ""))
        pytest.fail(
            f"{len(changed)} of {len(golden)} combinations build other prompts, e.g. {changed[:5]}\n{detail}",
            pytrace=False,
        )


@pytest.fixture(scope="module")
def bench() -> dict[str, object]:
    return bench_golden()


def test_the_bench_json_is_byte_identical(bench: dict[str, object]) -> None:
    golden = read(BENCH_FILE)
    assert bench["totals"] == golden["totals"]
    assert bench["configs_sha256"] == golden["configs_sha256"], "policies.*.config changed"
    assert bench["sha256_without_configs"] == golden["sha256_without_configs"]
    assert bench["sha256"] == golden["sha256"]
