"""Tune the `tiered` preset on recorded runs: replay candidate policies, print per-family tables,
draw the frontier (input cost saved vs the worst ruler of every preset and candidate).

Uses the same replay as `tiered-agent bench` (the live ContextManager, the provider-true cache
model `auto`, each run's own prices); candidates are Policies, i.e. step lists around the default.

    python benchmarks/tune_tiered.py [PATH ...] [--half A|B] [--out DIR] [--workers 2] [--only NAME,...]
        [--presets NAME,...] [--family swe-shell]

PATH defaults to ../shared/trajectories and ../shared/sessions (the real Claude Code and Codex
sessions, replayed with their recorded request times: time-aware aging and the money-losing runs
show there only). ``--half A`` (or ``B``) replays only that half of the
runs of every family (a stable hash of the run id splits them): tune on A, report B. The
frontier chart goes to DIR/frontier.png (default bench-out/tune/), the bench JSON next to it.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tiered_agent._logging import configure_logging
from tiered_agent.bench._frontier import write_frontier
from tiered_agent.bench._importers import load_runs
from tiered_agent.bench._pricing import family_of
from tiered_agent.bench._recorded import RecordedRun
from tiered_agent.bench._replay import ReplaySettings, replay_runs, resolve_policies
from tiered_agent.bench._report import build_document, write_json
from tiered_agent.context._config import ContextConfig
from tiered_agent.context._policy import Policy
from tiered_agent.context._presets import PRESETS
from tiered_agent.context.steps import Age, Summarize, Tidy, Truncate

DEFAULT = PRESETS["tiered"]


def _with_truncate(name: str, **changes: Any) -> Policy:
    """The default with its Truncate step changed."""
    steps = tuple(dataclasses.replace(s, **changes) if isinstance(s, Truncate) else s for s in DEFAULT.steps)
    return DEFAULT.replace(name=name, steps=steps)


def _with_age(name: str, **changes: Any) -> Policy:
    """The default with its Age step changed (``refresh_chunks=True`` without the default's fade:
    the two do not go together)."""
    if changes.get("refresh_chunks"):
        changes.setdefault("fade_after", None)
    steps = tuple(dataclasses.replace(s, **changes) if isinstance(s, Age) else s for s in DEFAULT.steps)
    return DEFAULT.replace(name=name, steps=steps)


def _with_tidy(name: str, **changes: Any) -> Policy:
    """The default with its Tidy step changed."""
    steps = tuple(dataclasses.replace(s, **changes) if isinstance(s, Tidy) else s for s in DEFAULT.steps)
    return DEFAULT.replace(name=name, steps=steps)


def _schema_always(name: str, **changes: Any) -> Policy:
    """The default sending context_retrieve's schema from the first call, its Truncate step cutting at
    arrival (never waiting for the rewrite the schema would cost later) and changed."""
    cut = dict(defer_max_chars=None, **changes)
    steps = tuple(dataclasses.replace(s, **cut) if isinstance(s, Truncate) else s for s in DEFAULT.steps)
    return DEFAULT.replace(name=name, retrieval_schema="always", steps=steps)


# The previous default (before aging): summary every 25 iterations, outputs of all but the last
# iteration elided, 8,000-char cuts.
PREVIOUS = ContextConfig(
    name="previous-tiered",
    max_output_chars=8000,
    window_iterations=1,
    window_keep_actions=True,
    summary_every=25,
)

CANDIDATES: dict[str, Policy] = {
    "previous-tiered": PREVIOUS,
    # issue 18: an aged output keeps its lines naming what no later output shows (a name the agent
    # mentions later is not the line that held it: Age(shown_by="outputs"))
    "shown-by-outputs": _with_age("shown-by-outputs", shown_by="outputs"),
    **{
        f"shown-by-outputs-patience-{p}": _with_age(
            f"shown-by-outputs-patience-{p}", shown_by="outputs", patience=p
        )
        for p in (0.5, 0.6, 0.75, 0.9)
    },
    "shown-by-outputs-novel-per-10": _with_age(
        "shown-by-outputs-novel-per-10", shown_by="outputs", novel_per_lines=10
    ),
    "shown-by-outputs-max-lines-40": _with_age(
        "shown-by-outputs-max-lines-40", shown_by="outputs", max_lines=40
    ),
    # the default before issue 18 round 6: a fixed handful of novel lines, an 8,000-char files note
    "round-5": _with_age("round-5", novel_per_lines=0, written_chars=8000),
    # the default before condensed lines kept novel lines: condensing from 10 iterations, 5 at a time
    "condense-10-5-novel-0": _with_age("condense-10-5-novel-0", condense_after=10, chunk=5, keep_novel=0),
    # when to condense (level 2): older than N iterations, M at a time; never
    "condense-3-1": _with_age("condense-3-1", condense_after=3, chunk=1),
    "condense-4-4": _with_age("condense-4-4", condense_after=4, chunk=4),
    "condense-6-3": _with_age("condense-6-3", condense_after=6, chunk=3),
    "condense-10-5": _with_age("condense-10-5", condense_after=10, chunk=5),
    "no-condense": _with_age("no-condense", condense_after=None),
    "condense-12-4": _with_age("condense-12-4", condense_after=12, chunk=4),
    "condense-20-4": _with_age("condense-20-4", condense_after=20, chunk=4),
    "condense-12-4-novel-per-8": _with_age(
        "condense-12-4-novel-per-8", condense_after=12, chunk=4, novel_per_lines=8
    ),
    # what condensed iterations keep: no referred output lines; N lines naming what nothing later names
    "referred-0": _with_age("referred-0", keep_referred=0),
    "novel-0": _with_age("novel-0", keep_novel=0),
    "novel-3": _with_age("novel-3", keep_novel=3),
    "novel-8": _with_age("novel-8", keep_novel=8),
    "novel-12": _with_age("novel-12", keep_novel=12),
    # novel lines that grow with an iteration's outputs' length: one per K lines when that is more
    # than keep_novel, at most max_lines (Age(novel_per_lines=K); 0, the default: keep_novel always)
    "novel-per-5": _with_age("novel-per-5", novel_per_lines=5),
    "novel-per-10": _with_age("novel-per-10", novel_per_lines=10),
    "novel-per-20": _with_age("novel-per-20", novel_per_lines=20),
    "novel-per-40": _with_age("novel-per-40", novel_per_lines=40),
    "novel-per-8": _with_age("novel-per-8", novel_per_lines=8),
    "novel-8-per-10": _with_age("novel-8-per-10", keep_novel=8, novel_per_lines=10),
    # with the other dial: later epochs keep the agent's own text longer, scaled lines keep more of reads
    "novel-per-10-patience-1.25": _with_age("novel-per-10-patience-1.25", novel_per_lines=10, patience=1.25),
    "novel-per-20-patience-1.25": _with_age("novel-per-20-patience-1.25", novel_per_lines=20, patience=1.25),
    "referred-16": _with_age("referred-16", keep_referred=16),
    # sub-agents' reports aged like any output
    "no-keep-tools": _with_age("no-keep-tools", keep_tools=()),
    # what aged iterations keep: longer call arguments; reasoning sentences naming something new
    "arguments-600": _with_age("arguments-600", max_arg_chars=600),
    "arguments-400": _with_age("arguments-400", max_arg_chars=400),
    "arguments-400-novel-8": _with_age("arguments-400-novel-8", max_arg_chars=400, keep_novel=8),
    "reasoning-novel": _with_age("reasoning-novel", reasoning="novel"),
    # issue 18: the agent's later sentences naming something not shown later, with a leaner schedule
    "reasoning-novel-patience-0.75": _with_age(
        "reasoning-novel-patience-0.75", reasoning="novel", patience=0.75
    ),
    "reasoning-novel-patience-0.6": _with_age(
        "reasoning-novel-patience-0.6", reasoning="novel", patience=0.6
    ),
    "reasoning-novel-patience-0.5": _with_age(
        "reasoning-novel-patience-0.5", reasoning="novel", patience=0.5
    ),
    "reasoning-novel-patience-0.6-novel-8": _with_age(
        "reasoning-novel-patience-0.6-novel-8", reasoning="novel", patience=0.6, keep_novel=8
    ),
    "reasoning-novel-patience-0.75-novel-8": _with_age(
        "reasoning-novel-patience-0.75-novel-8", reasoning="novel", patience=0.75, keep_novel=8
    ),
    # issue 18: condensed iterations also keep up to N lines of what the agent wrote (reasoning after
    # its first sentence, its calls' text) naming what it referred to afterwards or nothing names later
    "own-0": _with_age("own-0", keep_own=0),  # the default before round 6's last change
    "own-0-patience-1.25": _with_age("own-0-patience-1.25", keep_own=0, patience=1.25),
    "own-0-patience-1.5": _with_age("own-0-patience-1.5", keep_own=0, patience=1.5),
    "own-3": _with_age("own-3", keep_own=3),
    "own-1": _with_age("own-1", keep_own=1),
    "own-2": _with_age("own-2", keep_own=2),
    "own-2-patience-0.8": _with_age("own-2-patience-0.8", keep_own=2, patience=0.8),
    "own-2-novel-8": _with_age("own-2-novel-8", keep_own=2, keep_novel=8),
    "own-0-novel-8": _with_age("own-0-novel-8", keep_own=0, keep_novel=8),
    "own-4": _with_age("own-4", keep_own=4),
    "reasoning-novel-own-2": _with_age("reasoning-novel-own-2", reasoning="novel", keep_own=2),
    "reasoning-novel-own-4": _with_age("reasoning-novel-own-4", reasoning="novel", keep_own=4),
    "own-2-patience-0.75": _with_age("own-2-patience-0.75", keep_own=2, patience=0.75),
    "reasoning-novel-own-2-patience-0.75": _with_age(
        "reasoning-novel-own-2-patience-0.75", reasoning="novel", keep_own=2, patience=0.75
    ),
    "reasoning-novel-own-2-patience-0.6": _with_age(
        "reasoning-novel-own-2-patience-0.6", reasoning="novel", keep_own=2, patience=0.6
    ),
    "reasoning-novel-novel-3": _with_age("reasoning-novel-novel-3", reasoning="novel", keep_novel=3),
    # issue 18: every condensed chunk's kept lines chosen again, at each condensing epoch, from what
    # came after it up to then (the agent naming a file again brings its read's lines back)
    "refresh": _with_age("refresh", refresh_chunks=True),
    "refresh-novel-per-10": _with_age("refresh-novel-per-10", refresh_chunks=True, novel_per_lines=10),
    "refresh-novel-per-6": _with_age("refresh-novel-per-6", refresh_chunks=True, novel_per_lines=6),
    "refresh-referred-16": _with_age("refresh-referred-16", refresh_chunks=True, keep_referred=16),
    # issue 18: an iteration whose call named a file the agent named again afterwards keeps N times
    # the novel lines (Age(named_again=N))
    "again-2": _with_age("again-2", named_again=2),
    "again-3": _with_age("again-3", named_again=3),
    "refresh-again-2": _with_age("refresh-again-2", refresh_chunks=True, named_again=2),
    "novel-per-6": _with_age("novel-per-6", novel_per_lines=6),
    "max-lines-60": _with_age("max-lines-60", max_lines=60),
    "max-lines-80": _with_age("max-lines-80", max_lines=80),
    "max-lines-60-again-2": _with_age("max-lines-60-again-2", max_lines=60, named_again=2),
    "max-lines-60-again-2-own-3": _with_age(
        "max-lines-60-again-2-own-3", max_lines=60, named_again=2, keep_own=3
    ),
    # smaller condensed notes (issue 18): kept lines of nothing but markup or the stated exit code
    # left out (Age(bare_lines)), lines kept under a newer iteration of the note not repeated
    # (Age(unique_lines)); both are the default now, "no-terse" is the default before
    "bare": _with_age("bare", bare_lines=True, unique_lines=False),
    "unique": _with_age("unique", bare_lines=False, unique_lines=True),
    "bare-unique": _with_age("bare-unique", bare_lines=True, unique_lines=True),
    "no-terse": _with_age("no-terse", bare_lines=False, unique_lines=False),
    # issue 18: a note leaves out the kept lines an earlier note holds (notes never change once
    # written, Age(across_notes)); the default now, "no-across" is the default before
    "across": _with_age("across", across_notes=True),
    "no-across": _with_age("no-across", across_notes=False),
    # issue 18: a kept line left out as a repeat (held by an earlier note or a newer iteration of the
    # note) takes no place among an iteration's kept lines (Age(spare_held)); the default now,
    # "no-spare" is the default before
    "no-spare": _with_age("no-spare", spare_held=False),
    "spare": _with_age("spare", spare_held=True),
    # issue 18: a third level, old condensed notes fade to their iteration lines plus the kept lines
    # naming what the agent named since (Age(fade_after=N, fade_keep=K)), along with an epoch
    **{
        f"fade-{n}-{k}": _with_age(f"fade-{n}-{k}", fade_after=n, fade_keep=k, fade_cold=False)
        for n in (0, 10, 20, 40)
        for k in (0, 1, 2, 4, 8)
    },
    **{
        f"fade-after-{n}-{k}": _with_age(
            f"fade-after-{n}-{k}", fade_after=n, fade_keep=k, fade_named="after", fade_cold=False
        )
        for n in (0, 10, 20, 40)
        for k in (1, 2, 4, 8)
    },
    # the same, only on a request that finds nothing cached (after an idle gap: a free rewrite); the
    # default since round 10 is fade-cold-5-4, "no-fade" the default before it
    "no-fade": _with_age("no-fade", fade_after=None, fade_cold=False),
    **{
        f"fade-cold-{n}-{k}": _with_age(f"fade-cold-{n}-{k}", fade_after=n, fade_keep=k, fade_cold=True)
        for n in (0, 5, 10, 20)
        for k in (0, 2, 4, 8)
    },
    # every kept line staying, up to k per iteration (a long read's many novel lines go)
    **{
        f"fade-all-{n}-{k}": _with_age(
            f"fade-all-{n}-{k}", fade_after=n, fade_keep=k, fade_named="all", fade_cold=False
        )
        for n in (0, 10)
        for k in (4, 8, 16)
    },
    # the kept lines naming something no newer output (since the chunk was condensed) shows
    **{
        f"fade-unseen-{n}-{k}": _with_age(
            f"fade-unseen-{n}-{k}", fade_after=n, fade_keep=k, fade_named="unseen", fade_cold=False
        )
        for n in (0, 10)
        for k in (8, 60)
    },
    # the lines without their reasoning, every kept line staying (or up to k)
    **{
        f"fade-calls-{n}-{k}": _with_age(
            f"fade-calls-{n}-{k}",
            fade_after=n,
            fade_keep=k,
            fade_named="all",
            fade_reasoning=False,
            fade_cold=False,
        )
        for n in (0, 10, 20)
        for k in (2, 8, 60)
    },
    # issue 18, with spare_held: the budgets around the default (condensed notes' lines, own lines,
    # a file named again, chunks, the window, the break-even rule's patience)
    "max-lines-30": _with_age("max-lines-30", max_lines=30),
    "max-lines-40": _with_age("max-lines-40", max_lines=40),
    "again-1": _with_age("again-1", named_again=1),
    "novel-4": _with_age("novel-4", keep_novel=4),
    "novel-per-12": _with_age("novel-per-12", novel_per_lines=12),
    "referred-4": _with_age("referred-4", keep_referred=4),
    "referred-6": _with_age("referred-6", keep_referred=6),
    "condense-4-3": _with_age("condense-4-3", chunk=3),
    "condense-3-2": _with_age("condense-3-2", condense_after=3),
    "condense-5-2": _with_age("condense-5-2", condense_after=5),
    "patience-0.75": _with_age("patience-0.75", patience=0.75),
    "patience-0.9": _with_age("patience-0.9", patience=0.9),
    "window-1": _with_age("window-1", window=1),
    # the same, two at a time: a more faithful dial (longer outputs kept, a wider window) with a leaner one
    "max-lines-80-patience-0.9": _with_age("max-lines-80-patience-0.9", max_lines=80, patience=0.9),
    "max-lines-80-patience-0.75": _with_age("max-lines-80-patience-0.75", max_lines=80, patience=0.75),
    "max-lines-80-again-1": _with_age("max-lines-80-again-1", max_lines=80, named_again=1),
    "max-lines-80-novel-per-12": _with_age("max-lines-80-novel-per-12", max_lines=80, novel_per_lines=12),
    "window-3-patience-0.75": _with_age("window-3-patience-0.75", window=3, patience=0.75),
    "window-3-max-lines-40": _with_age("window-3-max-lines-40", window=3, max_lines=40),
    "window-3-patience-0.6": _with_age("window-3-patience-0.6", window=3, patience=0.6),
    "window-3-patience-0.5": _with_age("window-3-patience-0.5", window=3, patience=0.5),
    "window-3-patience-0.75-max-lines-80": _with_age(
        "window-3-patience-0.75-max-lines-80", window=3, patience=0.75, max_lines=80
    ),
    "window-3-patience-0.6-max-lines-80": _with_age(
        "window-3-patience-0.6-max-lines-80", window=3, patience=0.6, max_lines=80
    ),
    "window-3-patience-0.5-max-lines-80": _with_age(
        "window-3-patience-0.5-max-lines-80", window=3, patience=0.5, max_lines=80
    ),
    "window-3-patience-0.75-max-lines-100": _with_age(
        "window-3-patience-0.75-max-lines-100", window=3, patience=0.75, max_lines=100
    ),
    "window-3-patience-0.6-max-lines-100": _with_age(
        "window-3-patience-0.6-max-lines-100", window=3, patience=0.6, max_lines=100
    ),
    "window-3-patience-0.9": _with_age("window-3-patience-0.9", window=3, patience=0.9),
    "window-3-patience-0.85": _with_age("window-3-patience-0.85", window=3, patience=0.85),
    "window-3-patience-0.9-max-lines-80": _with_age(
        "window-3-patience-0.9-max-lines-80", window=3, patience=0.9, max_lines=80
    ),
    "condense-4-3-patience-0.9": _with_age("condense-4-3-patience-0.9", chunk=3, patience=0.9),
    "window-4-patience-0.6": _with_age("window-4-patience-0.6", window=4, condense_after=5, patience=0.6),
    "window-3-condense-5-patience-0.75": _with_age(
        "window-3-condense-5-patience-0.75", window=3, condense_after=5, patience=0.75
    ),
    "window-3": _with_age("window-3", window=3),
    "head-0": _with_age("head-0", head_lines=0),
    # when to age: the break-even rule with another patience (below 1: sooner); every N iterations
    "patience-0.5": _with_age("patience-0.5", patience=0.5),
    "patience-0.3": _with_age("patience-0.3", patience=0.3),
    "patience-0.2": _with_age("patience-0.2", patience=0.2),
    "patience-0.4": _with_age("patience-0.4", patience=0.4),
    "patience-0.1": _with_age("patience-0.1", patience=0.1),
    # round 24 (issue 18): eager aging with condensing later or never (where the extra misses are)
    **{
        f"patience-0.1-condense-{n}": _with_age(f"patience-0.1-condense-{n}", patience=0.1, condense_after=n)
        for n in (8, 12, 20)
    },
    **{
        f"patience-{p}-again-{n}": _with_age(f"patience-{p}-again-{n}", patience=p, named_again=n)
        for p in (0.2, 0.3, 0.5)
        for n in (4, 8)
    },
    # round 24: a read (an output showing one file) of a file the agent named after it in its last K
    # iterations up to the epoch stays whole when it ages (Age(focus_reads=K)), with eager aging
    **{
        f"focus-{k}-patience-{p}{'' if n == 2 else f'-again-{n}'}": _with_age(
            f"focus-{k}-patience-{p}{'' if n == 2 else f'-again-{n}'}",
            focus_reads=k,
            patience=p,
            named_again=n,
        )
        for k in (1, 2, 3, 5)
        for p in (0.1, 0.2, 0.25, 0.3, 0.4, 0.5, 0.75, 1.0)
        for n in (2, 8)
    },
    # round 25: focus_reads' reads bounded: not a read whose lines a newer read of the file shows whole
    # (Age(focus_newest=True)), and at most N chars of them kept whole per epoch, newest first
    # (Age(focus_chars=N))
    **{
        f"focus-{k}{'-newest' if newest else ''}{f'-chars-{n // 1000}k' if n else ''}": _with_age(
            f"focus-{k}{'-newest' if newest else ''}{f'-chars-{n // 1000}k' if n else ''}",
            focus_reads=k,
            focus_newest=newest,
            focus_chars=n,
        )
        for k in (1, 2, 3)
        for newest in (False, True)
        for n in (0, 2000, 4000, 8000, 12000, 16000)
    },
    # round 25: a focus read shows only its lines within W of a line naming what the agent named
    # since (Age(focus_near=W))
    **{
        f"focus-{k}-near-{w}{f'-chars-{n // 1000}k' if n else ''}": _with_age(
            f"focus-{k}-near-{w}{f'-chars-{n // 1000}k' if n else ''}",
            focus_reads=k,
            focus_near=w,
            focus_chars=n,
        )
        for k in (1, 3)
        for w in (3, 5, 10, 20, 40)
        for n in (0, 4000, 16000)
    },
    "patience-0.1-no-condense": _with_age("patience-0.1-no-condense", patience=0.1, condense_after=None),
    "patience-2": _with_age("patience-2", patience=2.0),
    "patience-1.25": _with_age("patience-1.25", patience=1.25),
    "patience-1.5": _with_age("patience-1.5", patience=1.5),
    "every-5": _with_age("every-5", every=5),
    "every-10": _with_age("every-10", every=10),
    # the files the agent wrote and still works on (named in its last K iterations): their current
    # text in one note after the aged iterations, within N chars (Age(written_chars=N, written_recent=K);
    # the default: 8,000 chars, K = 10); none: the default before
    "no-written": _with_age("no-written", written_chars=0),
    "written-4k": _with_age("written-4k", written_chars=4000),
    "written-16k": _with_age("written-16k", written_chars=16000),
    "written-8k-k5": _with_age("written-8k-k5", written_recent=5),
    "written-16k-novel-per-8": _with_age("written-16k-novel-per-8", written_chars=16000, novel_per_lines=8),
    "written-16k-novel-per-10": _with_age(
        "written-16k-novel-per-10", written_chars=16000, novel_per_lines=10
    ),
    "written-8k-k20": _with_age("written-8k-k20", written_recent=20),
    # cuts at arrival even when the cut is the first thing hidden (sends context_retrieve's schema)
    "no-defer": _with_truncate("no-defer", defer_max_chars=None),
    # issue 18 (a cut at arrival that the next edit quotes): outputs cut only past 30,000 chars
    "cut-30k": _with_truncate("cut-30k", max_chars=30_000),
    "cut-20k": _with_truncate("cut-20k", max_chars=20_000),
    "cut-15k": _with_truncate("cut-15k", max_chars=15_000),
    "cut-50k": _with_truncate("cut-50k", max_chars=50_000),
    "written-24k": _with_age("written-24k", written_chars=24_000),
    "referred-12": _with_age("referred-12", keep_referred=12),
    # issue 18 (real sessions' dollars): context_retrieve's schema sent from the first call, so a cut at
    # arrival never waits for (and never pays) the rewrite that sending it later costs
    "schema-always": _schema_always("schema-always"),
    "schema-always-cut-6k": _schema_always("schema-always-cut-6k", max_chars=6000),
    "schema-always-cut-4k": _schema_always("schema-always-cut-4k", max_chars=4000),
    # issue 18: padded line numbers unpadded and repeated tagged blocks pointed to, as outputs arrive
    # (the default now; "no-tidy" is the default before)
    "no-tidy": DEFAULT.replace(
        name="no-tidy", steps=tuple(s for s in DEFAULT.steps if not isinstance(s, Tidy))
    ),
    "tidy-numbers": _with_tidy("tidy-numbers", repeated_blocks=False),
    "tidy-blocks": _with_tidy("tidy-blocks", numbers=False),
    "tidy-blocks-100": _with_tidy("tidy-blocks-100", min_block_chars=100),
    "tidy-no-quotes": _with_tidy("tidy-no-quotes", quoted_lines=False),
    "tidy-quotes-8": _with_tidy("tidy-quotes-8", min_quote_lines=8),
    "tidy-quotes-3-200": _with_tidy("tidy-quotes-3-200", min_quote_lines=3, min_quote_chars=200),
    # a person's later user message of at most N chars kept whole when its iteration ages or is
    # condensed (Age(keep_user_chars=N); 0, off, is the default)
    "keep-user-2000": _with_age("keep-user-2000", keep_user_chars=2000),
    "keep-user-500": _with_age("keep-user-500", keep_user_chars=500),
    "keep-user-200": _with_age("keep-user-200", keep_user_chars=200),
    # a rolling summary (the digest) after the aged iterations, refreshed as they age
    "with-summary": DEFAULT.replace(
        name="with-summary", steps=(DEFAULT.steps[0], Summarize(every=10, keep=2), *DEFAULT.steps[1:])
    ),
}
PRESET_NAMES = (
    "full",
    "tiered",
    "kb-labs-adr",
    "adk-compaction",
    "masking",
    "codex",
    "adk-code",
    "anthropic-clear",
)
COLUMNS = (
    "tokens",
    "input cost",
    "w/ turns",
    "USD",
    "salient",
    "word",
    "line",
    "own",
    "peak 65+",
    "rewrites",
    "costlier",
)


def half_of(run_id: str) -> str:
    """``A`` or ``B``: a stable split of the runs (the same on every machine)."""
    return "AB"[int(hashlib.sha256(run_id.encode()).hexdigest(), 16) % 2]


def _pct(value: float | None) -> str:
    return "   n/a" if value is None else f"{value * 100:6.1f}"


def _row(name: str, t: Mapping[str, Any]) -> str:
    cells = [
        t["token_savings_vs_full"],
        t["input_cost_savings_vs_full"],
        t["input_cost_adjusted_savings_vs_full"],
        t["cost_usd_savings_vs_full"],
        t["miss_rate"],
        t["word_miss_rate"],
        t["line_miss_rate"],
        t["own_miss_rate"],
        t["long_run_peak_vs_full"] if t["long_runs"] else None,
        t["prefix_rewrite_rate"],
    ]
    costlier = t.get("runs_costlier_than_full")
    return (
        f"{name:22} "
        + " ".join(f"{_pct(c):>10}" for c in cells)
        + f" {costlier if costlier is not None else '-':>10}"
    )


def print_tables(document: Mapping[str, Any]) -> None:
    """One table per family (and all runs): savings vs full, miss rates, peak, rewrites (in %)."""
    sets = [("all runs", document["policies"], document["inputs"]["run_count"])]
    sets += [(f, e["policies"], e["runs"]) for f, e in sorted(document["families"].items())]
    for title, policies, runs in sets:
        print(f"\n== {title} ({runs} runs); savings vs full and rates, in %")
        print(f"{'policy':22} " + " ".join(f"{c:>10}" for c in COLUMNS))
        order = sorted(policies, key=lambda n: -(policies[n]["totals"]["input_cost_savings_vs_full"] or 0))
        for name in order:
            print(_row(name, policies[name]["totals"]))


def _runs(paths: Sequence[Path], half: str | None, family: str | None = None) -> list[RecordedRun]:
    runs = load_runs(paths).runs  # unreadable inputs: skipped with a warning
    return [
        r
        for r in runs
        if (half is None or half_of(r.run_id) == half) and (family is None or family_of(r.format) == family)
    ]


def main(argv: Sequence[str] | None = None) -> None:
    configure_logging(level="warning")
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", type=Path)
    parser.add_argument("--half", choices=("A", "B"))
    parser.add_argument("--out", type=Path, default=Path("bench-out") / "tune")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--only", help="comma-separated candidate names (default: all)")
    parser.add_argument(
        "--presets", help="comma-separated presets to replay too (default: all; full is always in)"
    )
    parser.add_argument("--family", help="replay only this family's runs (e.g. swe-shell)")
    args = parser.parse_args(argv)
    shared = Path(__file__).resolve().parents[2] / "shared"
    paths = args.paths or [shared / "trajectories", shared / "sessions"]
    chosen = set(args.only.split(",")) if args.only else set(CANDIDATES)
    presets = ["full", *(n for n in args.presets.split(",") if n != "full")] if args.presets else PRESET_NAMES
    policies = resolve_policies(list(presets)) | {n: p for n, p in CANDIDATES.items() if n in chosen}
    runs = _runs(paths, args.half, args.family)
    result = replay_runs(runs, policies, ReplaySettings(), workers=args.workers)
    document = build_document(result, [str(p) for p in paths])
    print_tables(document)
    chart = write_frontier(document, args.out / "frontier.png")
    saved = write_json(document, args.out / "bench.json")
    print(f"\nwrote {chart} and {saved}")


if __name__ == "__main__":
    main()
