"""The recorded runs bundled with the repository (``traces/``) and how they are built.

The bundle lives in the source checkout's top-level ``traces/`` folder (not in
the wheel): a curated subset of the shared trajectories converted to the
project's trace format, with ``traces/SOURCES.md`` (attribution) and
``traces/licenses/`` (the upstream LICENSE files). :func:`build_bundle`
regenerates it byte-for-byte from the shared trajectories
(``scripts/bundle_traces.py``); :func:`bundled_traces_dir` finds it.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass, replace
from pathlib import Path

from .._errors import ConfigurationError
from ._importers import load_runs, write_run_trace
from ._recorded import RecordedRun

__all__ = [
    "BUNDLE",
    "BUNDLED_FORMATS",
    "BundleItem",
    "build_bundle",
    "bundled_trace_paths",
    "bundled_traces_dir",
]

_MINI = "mini-swe-agent_gemini-3-pro"
_SWE = "swe-agent_demos"
_TAU = "tau-bench/gpt-4o-airline.json"
_OPENHANDS = "openhands-sdk_gpt-4o"
BUNDLED_FORMATS = ("mini-swe-agent", "swe-agent", "tau-bench", "openhands")  # one sub-folder of traces/ each
# Models the files themselves do not name: tau-bench's per its file name and notes, OpenHands' per the
# upstream output folder (``litellm_proxy/neulab/gpt-4o-2024-08-06_maxiter_100_N_initial``).
_MODELS = {"tau-bench": "gpt-4o", "openhands": "gpt-4o-2024-08-06"}


@dataclass(frozen=True, slots=True)
class BundleItem:
    """One bundled run: the shared file it comes from and, for tau-bench, the conversation."""

    local: str  # path under the shared trajectories folder (as in its SOURCES.md)
    conversation: str | None = None  # tau-bench: "task3_trial0"


BUNDLE: tuple[BundleItem, ...] = (
    # mini-swe-agent, Gemini 3 Pro, 19..145 steps, per-step provider usage
    *(
        BundleItem(f"{_MINI}/{name}.traj.json")
        for name in (
            "django__django-16560",  # 145 steps, the longest
            "django__django-13297",  # 95 steps, 7 format errors
            "scikit-learn__scikit-learn-10908",  # 53 steps
            "matplotlib__matplotlib-26466",  # 48 steps, unresolved
            "scikit-learn__scikit-learn-25102",  # 43 steps, largest final prompt (106k tokens)
            "psf__requests-2317",  # 33 steps, a timeout observation and a format error
            "scikit-learn__scikit-learn-14141",  # 20 steps
            "django__django-12708",  # 19 steps, the shortest
        )
    ),
    # SWE-agent demonstrations: function calling, windowed editor, CTF
    BundleItem(f"{_SWE}/marshmallow-1867__function_calling_replace.traj"),
    BundleItem(f"{_SWE}/marshmallow-1867__default_windowed.traj"),
    BundleItem(f"{_SWE}/ctf_rev_rock.traj"),
    # tau-bench airline: seven of the ten longest, then successful and short ones
    *(
        BundleItem(_TAU, name)
        for name in (
            "task3_trial0",
            "task33_trial0",
            "task2_trial1",
            "task9_trial2",
            "task46_trial3",
            "task13_trial0",
            "task23_trial3",
            "task0_trial0",
            "task11_trial0",
            "task34_trial0",
            "task6_trial0",
            "task42_trial0",
            "task35_trial3",
        )
    ),
    # OpenHands SDK, gpt-4o on OpenAgentSafety: a run with its task and a final reply; parallel
    # calls (one response, several tool calls) in a run whose log starts without the task; the browser
    *(BundleItem(f"{_OPENHANDS}/traj_safety-{name}.json") for name in ("daemon", "transitions", "clockout")),
)


@dataclass(frozen=True, slots=True)
class _Source:
    repo: str
    commit: str
    path: str
    blob: str
    license: str


def bundled_traces_dir() -> Path:
    """The bundled ``traces/`` folder of the source checkout this package runs from."""
    candidate = Path(__file__).resolve().parents[2] / "traces"
    if (candidate / "SOURCES.md").is_file():
        return candidate
    raise ConfigurationError(
        f"bundled traces not found (looked for {candidate}/SOURCES.md): they ship with the source "
        "repository's traces/ folder, not with an installed wheel. Pass PATH (trace files or folders) "
        "explicitly, or install from a checkout with `pip install -e .`."
    )


def bundled_trace_paths() -> list[Path]:
    """The bundled runs' folders (``traces/<format>/``), for :func:`load_runs`.

    Prefer these over :func:`bundled_traces_dir` itself: the agent's default
    trace folder ``traces/runs/`` (git-ignored) sits in the same folder and may
    hold local runs.
    """
    root = bundled_traces_dir()
    return [root / fmt for fmt in BUNDLED_FORMATS if (root / fmt).is_dir()]


def build_bundle(shared: Path, out: Path) -> list[Path]:
    """(Re)write the bundle into ``out`` from the shared trajectories folder; returns the trace files."""
    sources = _parse_sources((shared / "SOURCES.md").read_text(encoding="utf-8"))
    _clean(out)
    written: list[Path] = []
    rows: list[tuple[Path, RecordedRun, _Source]] = []
    for local, items in _by_file(BUNDLE).items():
        source = sources.get(local)
        if source is None:
            raise ConfigurationError(f"{shared / 'SOURCES.md'}: no row for {local}")
        runs = {r.run_id.split("/", 1)[1]: r for r in load_runs([shared / local], strict=True).runs}
        for item in items:
            run = _attributed(_pick(runs, item, local), source, item)
            target = out / run.format / f"{run.run_id.split('/', 1)[1]}.jsonl"
            write_run_trace(run, target)
            written.append(target)
            rows.append((target, run, source))
    folders: dict[str, str] = {}  # repository -> the first shared folder the bundle takes from it
    for item in BUNDLE:
        folders.setdefault(sources[item.local].repo, item.local.split("/", 1)[0])
    licenses = _copy_licenses(shared, out, folders)
    notes = _source_notes((shared / "SOURCES.md").read_text(encoding="utf-8"), folders)
    (out / "SOURCES.md").write_text(_sources_md(out, rows, licenses) + notes, encoding="utf-8")
    return written


def _by_file(items: tuple[BundleItem, ...]) -> dict[str, list[BundleItem]]:
    grouped: dict[str, list[BundleItem]] = {}
    for item in items:
        grouped.setdefault(item.local, []).append(item)
    return grouped


def _pick(runs: dict[str, RecordedRun], item: BundleItem, local: str) -> RecordedRun:
    if item.conversation is not None:
        key = item.conversation
    elif len(runs) == 1:
        key = next(iter(runs))
    else:
        raise ConfigurationError(f"{local}: holds {len(runs)} runs; name the conversation")
    if key not in runs:
        raise ConfigurationError(f"{local}: no run {key!r}")
    return runs[key]


def _attributed(run: RecordedRun, source: _Source, item: BundleItem) -> RecordedRun:
    upstream = f"{source.repo}@{source.commit}:{source.path}"
    if item.conversation is not None:
        upstream += f"#{item.conversation}"
    return replace(run, source=upstream, model=run.model or _MODELS.get(run.format))


def _clean(out: Path) -> None:
    """Remove what a previous build wrote (trace folders, licenses, SOURCES.md), nothing else."""
    for fmt in BUNDLED_FORMATS:
        for old in (out / fmt).glob("*.jsonl"):
            old.unlink()
    if (out / "licenses").is_dir():
        shutil.rmtree(out / "licenses")
    (out / "SOURCES.md").unlink(missing_ok=True)


# ---------------------------------------------------------------- attribution
_ROW = re.compile(  # a row of the shared SOURCES.md tables (the later one adds a steps column)
    r"^\| `(?P<local>[^`]+)` \| (?P<repo>[^|]+?) \| `(?P<commit>[0-9a-f]+)` \| `(?P<path>[^`]+)` "
    r"\| `(?P<blob>[0-9a-f]+)` \| (?P<license>[^|]+?) \|(?: \d+ \|)?$"
)


def _parse_sources(text: str) -> dict[str, _Source]:
    rows = (_ROW.match(line.strip()) for line in text.splitlines())
    return {
        m["local"]: _Source(m["repo"], m["commit"], m["path"], m["blob"], m["license"]) for m in rows if m
    }


def _source_notes(text: str, folders: dict[str, str]) -> str:
    """The shared SOURCES.md's notes on the bundled repositories and folders, verbatim."""
    _, _, section = text.partition("## Source notes")
    keys = [f"**{repo}**" for repo in folders] + [f"- `{folder}/`" for folder in folders.values()]
    notes = [line for line in section.splitlines() if any(key in line for key in keys)]
    return "\n## Source notes (from the shared SOURCES.md)\n\n" + "\n".join(notes) + "\n" if notes else ""


def _copy_licenses(shared: Path, out: Path, folders: dict[str, str]) -> dict[str, tuple[Path, str]]:
    """Copy each repository's LICENSE; returns ``repo -> (copy, copyright line)``."""
    copied: dict[str, tuple[Path, str]] = {}
    for repo, folder in sorted(folders.items()):
        found = sorted((shared / folder).glob("LICENSE*"))
        if not found:
            raise ConfigurationError(f"{shared / folder}: no LICENSE file for {repo}")
        target = out / "licenses" / repo.replace("/", "__") / found[0].name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(found[0], target)
        text = found[0].read_text(encoding="utf-8")
        holder = next((line.strip() for line in text.splitlines() if line.startswith("Copyright")), "")
        copied[repo] = (target, holder)
    return copied


def _sources_md(
    out: Path, rows: list[tuple[Path, RecordedRun, _Source]], licenses: dict[str, tuple[Path, str]]
) -> str:
    lines = [
        "# Sources of the bundled traces",
        "",
        "Recorded agent runs from public MIT-licensed repositories, converted to this project's trace",
        "format (one JSONL event per line: `run_start`, `message`, `model_response` with the recorded",
        "provider usage) by `tiered_agent.bench` (`_import_*.py`). Converted, not byte-identical: actions",
        "became tool calls, observations tool messages (see the importers). Regenerate with",
        "`python scripts/bundle_traces.py` from `../shared/trajectories`. Each trace's `run_start.source`",
        "names its upstream file (`repo@commit:path`, plus `#conversation` for tau-bench). The files do not",
        f"name their model: the tau-bench runs carry `{_MODELS['tau-bench']}` (the upstream file name), the",
        f"OpenHands runs `{_MODELS['openhands']}` (the upstream output folder).",
        "",
        "| bundled file | steps | repo | commit | upstream path | blob | license |",
        "|---|---|---|---|---|---|---|",
    ]
    for target, run, src in rows:
        where = src.path + (f" ({run.source.rsplit('#', 1)[1]})" if "#" in run.source else "")
        lines.append(
            f"| `{target.relative_to(out).as_posix()}` | {run.steps} | {src.repo} | `{src.commit}` "
            f"| `{where}` | `{src.blob}` | {src.license} |"
        )
    lines += ["", "## Licenses and copyright holders", ""]
    for repo, (copy, holder) in sorted(licenses.items()):
        lines.append(f"- **{repo}**: MIT, {holder}; full text in `{copy.relative_to(out).as_posix()}`.")
    return "\n".join(lines) + "\n"
