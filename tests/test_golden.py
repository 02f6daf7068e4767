"""The byte-identical check: every policy builds exactly the prompts, and the bench exactly the JSON,
frozen in tests/golden/ (see tests/golden_data.py; regenerate only with scripts/freeze_golden.py at a
commit whose behaviour you mean to freeze)."""

from __future__ import annotations

import pytest
from golden_data import BENCH_FILE, PROMPTS_FILE, bench_golden, chain, prompt_entries, read


def test_every_policy_builds_the_frozen_prompts() -> None:
    golden = read(PROMPTS_FILE)
    current = {key: {"steps": len(steps), "sha256": chain(steps)} for key, steps in prompt_entries()}
    assert sorted(current) == sorted(golden), "the set of frozen (run, policy, window) combinations changed"
    changed = sorted(key for key in golden if current[key] != golden[key])
    assert not changed, (
        f"{len(changed)} of {len(golden)} combinations build other prompts, e.g. {changed[:5]}; "
        'diff `python scripts/freeze_golden.py --per-step "RUN|POLICY|WINDOW"` against the frozen commit'
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
