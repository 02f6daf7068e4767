"""Regenerate the golden data of the byte-identical policy check (``tests/golden/``).

Only run it at a commit whose behaviour you mean to freeze: the check exists to prove
that a change of the context code did NOT change any prompt. A refactor must pass
``tests/test_golden.py`` against the data committed before it, untouched.

    python scripts/freeze_golden.py                 # both files
    python scripts/freeze_golden.py --bench-only    # only tests/golden/bench.json (the bench JSON changed)
    python scripts/freeze_golden.py --per-step "tau-bench/task2_trial1|tiered|16000"   # digests to diff

What is frozen, and why these runs: ``tests/golden_data.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from golden_data import main

if __name__ == "__main__":
    from tiered_agent._logging import configure_logging

    configure_logging(level="warning")
    main()
