"""CPU of ``ContextManager.prepare`` alone, per policy, over recorded runs replayed as histories that
grow by each recorded iteration (no dispatch, no cache simulation, no rulers): the fixed cost every
policy pays per prompt, measured without the rest of the bench around it.

    python benchmarks/prepare_micro.py [PATHS...] [--policies A,B] [--repeat 3]

Prints µs of CPU per prompt and policy (the least of ``--repeat`` passes: noise only adds), and a
digest of every prompt's messages and record, to check that two trees build the same prompts.
Default PATHS: ``../shared/sessions/claude-code_m-claude``.
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT = ROOT.parent / "shared" / "sessions" / "claude-code_m-claude"


async def _replay(runs: list, policy: str, digest: hashlib._Hash, counter: object) -> tuple[float, int]:  # type: ignore[type-arg]
    from tiered_agent.context._manager import ContextManager

    cpu, prompts = 0.0, 0
    for run in runs:
        manager = ContextManager(
            policy,
            counter=counter,
            context_window=200_000,
            background=False,
            enforce_hard_limit=False,
            clock=None,
        )
        async with manager:
            history: list = []
            for message in run.messages:
                if message.role == "assistant" and history:
                    start = time.process_time()
                    prepared = await manager.prepare(tuple(history), run.tools)
                    cpu += time.process_time() - start
                    prompts += 1
                    digest.update(repr((prepared.prompt_tokens, len(prepared.built.messages))).encode())
                    digest.update(repr(prepared.context).encode())
                history.append(message)
    return cpu, prompts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("paths", nargs="*")
    parser.add_argument(
        "--policies", default="full,anthropic-clear,masking,codex,adk-code,adk-compaction,kb-labs-adr"
    )
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    from tiered_agent._logging import configure_logging

    configure_logging(level="error")
    from tiered_agent.bench._caching import IdCounter
    from tiered_agent.bench._importers import load_runs

    runs = load_runs([Path(p) for p in args.paths] or [DEFAULT]).runs
    counter = IdCounter()  # shared and warmed: every text tokenized before the timed passes
    asyncio.run(_replay(runs, "full", hashlib.sha256(), counter))
    total = 0.0
    for policy in args.policies.split(","):
        digest = hashlib.sha256()
        best = None
        for _ in range(args.repeat):
            digest = hashlib.sha256()
            cpu, prompts = asyncio.run(_replay(runs, policy, digest, counter))
            best = cpu if best is None else min(best, cpu)
        assert best is not None
        total += best
        per_prompt = best / max(prompts, 1) * 1e6
        print(f"{policy:20} {per_prompt:9.1f} µs/prompt  {prompts} prompts  {digest.hexdigest()[:12]}")
    print(f"{'total':20} {total:9.2f} s")


if __name__ == "__main__":
    main()
