"""``benchmarks/fuzz_logs.py``'s mutator: every mutated document is still one a JSON file can hold."""

from __future__ import annotations

import json
import random

from bench_scripts import load_script

fuzz = load_script("fuzz_logs")


def _record() -> dict[str, object]:
    return {
        "type": "assistant",
        "message": {"role": "assistant", "content": [{"type": "text", "text": "hello"}, {"": None}]},
        "usage": {"input_tokens": 12, "output_tokens": 3},
        "items": [[None], {}, []],
    }


def test_mutations_never_share_or_nest_a_value_in_itself() -> None:
    """Many mutations of many documents (seeded): no document holds a cycle (``json.dumps`` raises
    on one), and the mutator's own odd values stay as they were (a placed value is a copy)."""
    odd_before = json.dumps(fuzz.ODD)
    for seed in range(40):
        rng = random.Random(seed)
        documents = [_record() for _ in range(3)]
        for _ in range(60):
            document = rng.choice(documents)
            fuzz.mutate(rng, document, 1)
            json.dumps(document)
    assert json.dumps(fuzz.ODD) == odd_before


def test_a_mutation_changes_the_document() -> None:
    rng = random.Random(3)
    document = _record()
    before = json.dumps(document, sort_keys=True)
    fuzz.mutate(rng, document, 5)
    assert json.dumps(document, sort_keys=True) != before
