"""``tiered-agent bench merge``: the shards of a bench (``--shard K/N``) combined into one document.

Every shard reads all the inputs and prices its runs with the calibration of all of them, so a
run's record is the same in any shard; a shard's document carries, besides its own per-run
lists, the exact sums of its runs (``shard.state``: :meth:`~._aggregate.Aggregate.state`).
Merging adds those sums (exactly: ``_sums.py``) and concatenates the lists, which gives exactly
the document the unsharded bench writes (``timing`` aside: it sums the shards' elapsed time and
merges their build-time histograms). The per-run detail is read from each shard's
``runs_file`` (or its inline ``runs``) one line at a time.

Every input is checked first: a file that is not a shard document, shards of different benches
(settings, policies, inputs, calibration, prices), a shard missing or given twice, a run in two
shards, a run entry whose fields have the wrong types, a document or detail file that is not a
regular file (a FIFO would block), are each one sentence
(:class:`~tiered_agent._errors.ConfigurationError`).
"""

from __future__ import annotations

import stat
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._errors import ConfigurationError
from .._files import NotRegularFile, describe_mode, open_regular
from ._aggregate import Aggregate
from ._detail import DetailSpool, read_jsonl
from ._document import SCHEMA_VERSION
from ._stream import Streamed
from ._sums import StateError

__all__ = ["SHARD_KEY", "merge_shards", "shard_section"]

SHARD_KEY = "shard"  # a shard document's section: index, count, state


def shard_section(index: int, count: int, aggregate: Aggregate) -> dict[str, Any]:
    """What a shard's document carries for ``bench merge``."""
    return {"index": index, "count": count, "state": aggregate.state()}


@dataclass(frozen=True, slots=True)
class _Shard:
    path: Path
    document: Mapping[str, Any]
    index: int
    count: int
    aggregate: Aggregate


def merge_shards(paths: Sequence[Path], *, detail: bool = True, detail_dir: Path | None = None) -> Streamed:
    """The merged document of the shard documents at ``paths`` (every shard of one bench, once) and,
    with ``detail``, their per-run detail (in a temporary file in ``detail_dir``)."""
    if not paths:
        raise ConfigurationError("bench merge needs the shard documents (the --json of each --shard K/N)")
    shards = sorted((_read(path) for path in paths), key=lambda s: s.index)
    _check_complete(shards)
    merged = Aggregate(shards[0].aggregate.header)
    for shard in shards:
        differ = shard.aggregate.header.differences(merged.header)
        if differ:
            raise ConfigurationError(
                f"{shard.path} and {shards[0].path} are shards of different benches "
                f"(their {differ[0]} differ)"
            )
        try:
            merged.merge(shard.aggregate)
        except ValueError as exc:
            raise ConfigurationError(f"{shard.path}: {exc}") from None
    if not detail:
        return Streamed(merged, None)
    spool = DetailSpool(detail_dir)
    try:
        for shard in shards:
            _add_detail(spool, shard)
    except BaseException:
        spool.close()
        raise
    return Streamed(merged, spool)


def _read(path: Path) -> _Shard:
    try:
        with open_regular(path) as handle:  # a FIFO given as a shard must not block the merge
            document = orjson.loads(handle.read())
    except NotRegularFile as exc:
        raise ConfigurationError(f"{exc}: not a bench document") from None
    except OSError as exc:
        raise ConfigurationError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except orjson.JSONDecodeError:
        raise ConfigurationError(
            f"{path}: not JSON (expected a bench document written with --shard K/N)"
        ) from None
    if not isinstance(document, dict) or document.get("generator") != "tiered-agent bench":
        raise ConfigurationError(f"{path}: not a bench document (tiered-agent bench --json)")
    if document.get("schema_version") != SCHEMA_VERSION:
        raise ConfigurationError(
            f"{path}: a bench document of schema {document.get('schema_version')!r}; this bench merges "
            f"schema {SCHEMA_VERSION} (bench the shards again with this version)"
        )
    section = document.get("shard")
    if not isinstance(section, dict):
        raise ConfigurationError(f"{path}: not a shard (its bench ran without --shard K/N); nothing to merge")
    index, count, state = section.get("index"), section.get("count"), section.get("state")
    if not (isinstance(index, int) and isinstance(count, int) and 1 <= index <= count):
        raise ConfigurationError(f"{path}: its shard section has no valid index and count")
    _check_runs(path, document)
    try:
        aggregate = Aggregate.from_document(document, state if isinstance(state, dict) else {})
    except (StateError, KeyError, TypeError, ValueError, AttributeError) as exc:
        reason = str(exc) if isinstance(exc, StateError) else f"{type(exc).__name__}: {exc}"
        raise ConfigurationError(f"{path}: not a shard document this bench can merge ({reason})") from None
    return _Shard(path, document, index, count, aggregate)


# The fields of a shard's ``inputs.runs`` entries that the merge and the report sort, sum or key on.
_RUN_FIELDS: dict[str, type] = {
    "run_id": str, "format": str, "family": str, "steps": int, "uncounted_steps": int
}  # fmt: skip


def _check_runs(path: Path, document: Mapping[str, Any]) -> None:
    """Each run a shard lists is an object whose keyed fields have the types the bench writes
    (a hand-edited or damaged shard ended the merge with a ``TypeError`` sorting them)."""
    inputs = document.get("inputs")
    runs = inputs.get("runs") if isinstance(inputs, dict) else None
    if not isinstance(runs, list):
        raise ConfigurationError(f"{path}: not a shard document this bench can merge (no inputs.runs list)")
    for number, entry in enumerate(runs, 1):
        wrong = (
            [k for k, kind in _RUN_FIELDS.items() if not _is(entry.get(k), kind)]
            if isinstance(entry, dict)
            else ["the entry itself"]
        )
        if wrong:
            raise ConfigurationError(
                f"{path}: not a shard document this bench can merge (inputs.runs[{number - 1}]: "
                f"{wrong[0]} is not what a bench writes)"
            )


def _is(value: Any, kind: type) -> bool:
    return isinstance(value, kind) and not isinstance(value, bool)


def _check_complete(shards: Sequence[_Shard]) -> None:
    counts = {s.count for s in shards}
    if len(counts) > 1:
        raise ConfigurationError(
            f"the shards split the runs differently ({' and '.join(f'into {n}' for n in sorted(counts))})"
        )
    count = counts.pop()
    seen: dict[int, Path] = {}
    for shard in shards:
        if shard.index in seen:
            raise ConfigurationError(
                f"shard {shard.index}/{count} is given twice ({seen[shard.index]} and {shard.path})"
            )
        seen[shard.index] = shard.path
    missing = [k for k in range(1, count + 1) if k not in seen]
    if missing:
        shown = ", ".join(f"{k}/{count}" for k in missing[:5]) + (" and more" if len(missing) > 5 else "")
        raise ConfigurationError(f"shard{'s' * (len(missing) > 1)} {shown} missing: merge needs all {count}")


def _add_detail(spool: DetailSpool, shard: _Shard) -> None:
    """A shard's per-run detail into the spool, checked against the runs its document lists."""
    expected = {entry["run_id"] for entry in shard.document["inputs"]["runs"]}
    found = set()
    for entry in _detail(shard):
        run_id = entry.get("run_id")
        if not isinstance(run_id, str) or run_id not in expected or run_id in found:
            raise ConfigurationError(
                f"{shard.path}: its per-run detail holds a run it did not replay ({run_id!r})"
            )
        found.add(run_id)
        spool.add(run_id, orjson.dumps(entry, option=orjson.OPT_SORT_KEYS))
    if found != expected:
        raise ConfigurationError(
            f"{shard.path}: its per-run detail lacks {len(expected - found)} of its runs (was it cut short?)"
        )


def _detail(shard: _Shard) -> Iterator[dict[str, Any]]:
    inline = shard.document.get("runs")
    if isinstance(inline, list):
        yield from inline
        return
    name = shard.document.get("runs_file")
    if not isinstance(name, str) or not name or Path(name).name != name:
        raise ConfigurationError(
            f"{shard.path}: has no per-run detail (benched with --run-detail none); "
            "merge with --run-detail none"
        )
    path = shard.path.parent / name
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        raise ConfigurationError(
            f"{path}: missing (the per-run detail of {shard.path}; keep them together)"
        ) from None
    except OSError as error:  # a name too long, a loop of links, no permission
        raise ConfigurationError(
            f"{shard.path}: its runs_file {name[:80]!r} cannot be read ({error.strerror})"
        ) from None
    if not stat.S_ISREG(mode):  # a FIFO, a device, a folder
        raise ConfigurationError(f"{path}: {describe_mode(mode)}, not the per-run detail of {shard.path}")
    yield from read_jsonl(path)
