"""The tasks file of a batch: one JSON object per line, each checked before anything runs.

``{"id": "fix-42", "task": "Fix the failing test", "workspace": "repos/a", "model": "...",
"policy": "tiered"}``: ``id`` (a string or an integer, unique in the file) and ``task`` are
required; ``workspace`` (a folder, relative to the tasks file's folder), ``model`` and ``policy``
(a preset) override the batch's options for that task. Blank lines are skipped; anything else
that is not such an object is one error naming its line, and nothing runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .._errors import ConfigurationError
from .._files import NotRegularFile, open_regular
from ..context._presets import PRESETS

__all__ = ["BatchTask", "load_tasks", "parse_tasks"]

_KEYS = ("id", "task", "workspace", "model", "policy")
MAX_ID_CHARS = 200


@dataclass(frozen=True, slots=True)
class BatchTask:
    """One task of a batch; ``None`` fields take the batch's options. ``line`` is where it was read."""

    id: str
    task: str
    workspace: Path | None = None
    model: str | None = None
    policy: str | None = None
    line: int = 0


def load_tasks(path: Path) -> tuple[BatchTask, ...]:
    """The tasks of ``path`` (see the module's docstring); a problem is one :class:`ConfigurationError`."""
    try:
        with open_regular(path) as handle:  # a FIFO would block the batch before it starts
            data = handle.read()
    except NotRegularFile as exc:
        raise ConfigurationError(f"{exc}: it cannot be a tasks file") from None
    except OSError as exc:
        raise ConfigurationError(f"cannot read the tasks file {path}: {exc.strerror or exc}") from exc
    return parse_tasks(data, name=str(path), base=path.parent)


def parse_tasks(data: bytes, *, name: str, base: Path) -> tuple[BatchTask, ...]:
    """Tasks from the bytes of a tasks file called ``name``; relative workspaces are under ``base``."""
    tasks: list[BatchTask] = []
    seen: dict[str, int] = {}
    data = data.removeprefix(b"\xef\xbb\xbf")  # a byte-order mark some editors write first
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if not raw.strip():
            continue
        task = _task(raw, number, name, base)
        if task.id in seen:
            raise ConfigurationError(f"{name} line {number}: id {task.id!r} repeats line {seen[task.id]}")
        seen[task.id] = number
        tasks.append(task)
    if not tasks:
        raise ConfigurationError(f"{name} has no tasks (one JSON object per line, with an id and a task)")
    return tuple(tasks)


def _task(raw: bytes, number: int, name: str, base: Path) -> BatchTask:
    where = f"{name} line {number}"
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        raise ConfigurationError(f"{where}: not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise ConfigurationError(f"{where}: expected a JSON object, got {_kind(value)}")
    unknown = sorted(k for k in value if k not in _KEYS)
    if unknown:
        raise ConfigurationError(
            f"{where}: unknown key {', '.join(map(repr, unknown))} (a task has {', '.join(_KEYS)})"
        )
    fields = {k: v for k, v in value.items() if v is not None}
    return BatchTask(
        id=_task_id(fields, where),
        task=_text(fields, "task", where, required=True) or "",
        workspace=_workspace(fields, where, base),
        model=_text(fields, "model", where),
        policy=_policy(fields, where),
        line=number,
    )


def _task_id(fields: Mapping[str, Any], where: str) -> str:
    value = fields.get("id")
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f'{where}: "id" must be a non-empty string or an integer')
    if len(value) > MAX_ID_CHARS or not value.isprintable():
        raise ConfigurationError(
            f'{where}: "id" must be printable and at most {MAX_ID_CHARS} characters long'
        )
    return value


def _text(fields: Mapping[str, Any], key: str, where: str, *, required: bool = False) -> str | None:
    value = fields.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ConfigurationError(f'{where}: "{key}" must be a non-empty string')
    return value


def _workspace(fields: Mapping[str, Any], where: str, base: Path) -> Path | None:
    text = _text(fields, "workspace", where)
    if text is None:
        return None
    try:
        path = Path(text).expanduser()
    except RuntimeError:  # ``~user`` of a user this machine does not know
        raise ConfigurationError(
            f'{where}: "workspace" {text!r} names a home folder that does not exist'
        ) from None
    path = path if path.is_absolute() else base / path
    if not path.is_dir():
        raise ConfigurationError(f'{where}: "workspace" {text!r} is not a folder ({path})')
    return path.resolve()


def _policy(fields: Mapping[str, Any], where: str) -> str | None:
    name = _text(fields, "policy", where)
    if name is not None and name not in PRESETS:
        raise ConfigurationError(f'{where}: unknown "policy" {name!r}; choose from {", ".join(PRESETS)}')
    return name


def _kind(value: Any) -> str:
    if isinstance(value, list):
        return "a list"
    if isinstance(value, str):
        return "a string"
    return "null" if value is None else type(value).__name__
