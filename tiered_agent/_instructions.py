"""AGENTS.md instructions: global, project root, then working directory, capped in size.

The files are read in this order and concatenated, each under a header naming
it; the same file is never included twice (for instance when the project root
is the working directory). The total is capped (32 KiB by default) with a
visible note saying how much was omitted.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import structlog

from ._errors import ConfigurationError
from ._text import clean_surrogates

__all__ = [
    "AGENTS_FILE",
    "DEFAULT_INSTRUCTIONS_CAP_BYTES",
    "PROJECT_MARKERS",
    "Instructions",
    "build_system_prompt",
    "find_project_root",
    "load_instructions",
]

AGENTS_FILE = "AGENTS.md"
DEFAULT_INSTRUCTIONS_CAP_BYTES = 32 * 1024
PROJECT_MARKERS = (".git", "pyproject.toml", "package.json", "go.mod")
_GLOBAL_DIR = ".tiered_agent"
_INTRO = "Instructions from AGENTS.md files (global, then project, then working directory; later ones are "
_INTRO += "more specific and take precedence when they conflict):"

log = structlog.get_logger(__name__)


@dataclass(frozen=True)
class Instructions:
    """The concatenated AGENTS.md text, the files it came from (in order), and whether it was cut."""

    text: str = ""
    sources: tuple[Path, ...] = ()
    truncated: bool = False

    def __bool__(self) -> bool:
        return bool(self.text)


def find_project_root(cwd: Path) -> Path | None:
    """The nearest directory at or above ``cwd`` holding a project marker (.git, pyproject.toml, ...)."""
    for directory in (cwd, *cwd.parents):
        if any((directory / marker).exists() for marker in PROJECT_MARKERS):
            return directory
    return None


def load_instructions(
    cwd: Path, *, home: Path | None = None, cap_bytes: int = DEFAULT_INSTRUCTIONS_CAP_BYTES
) -> Instructions:
    """Read the AGENTS.md hierarchy for ``cwd``: ``home/.tiered_agent``, the project root, then ``cwd``."""
    cwd = cwd.resolve()
    sections: list[str] = []
    sources: list[Path] = []
    for path, scope in _candidates(cwd, home):
        if path in sources:
            continue
        text = _read(path)
        if text is None:
            continue
        sources.append(path)
        # a path is bytes on POSIX: one that is not UTF-8 is shown with escapes (\udcff), not refused
        sections.append(f"## {scope}: {clean_surrogates(str(path))}\n\n{text.strip()}\n")
    if not sections:
        return Instructions()
    text, truncated = _cap("\n".join(sections), cap_bytes)
    return Instructions(text=text, sources=tuple(sources), truncated=truncated)


def _candidates(cwd: Path, home: Path | None) -> list[tuple[Path, str]]:
    found: list[tuple[Path, str]] = []
    home_dir = home if home is not None else _home()
    if home_dir is not None:
        found.append((_real(home_dir / _GLOBAL_DIR / AGENTS_FILE), "Global instructions"))
    root = find_project_root(cwd)
    if root is not None:
        found.append((_real(root / AGENTS_FILE), "Project instructions"))
    found.append((_real(cwd / AGENTS_FILE), "Working-directory instructions"))
    return found


def _home() -> Path | None:
    try:
        return Path.home()
    except RuntimeError:  # no HOME and no passwd entry
        log.warning("instructions_no_home")
        return None


def _real(path: Path) -> Path:
    try:
        return path.resolve()
    except (OSError, RuntimeError):
        return path


def _read(path: Path) -> str | None:
    """The file's text, or None when it is absent or blank.

    An instructions file (or its directory, such as ``~/.tiered_agent``) that exists but cannot be
    read raises :class:`ConfigurationError`: running without the user's rules would be a surprise.
    """
    try:
        if not path.is_file():
            return None
        text = path.read_bytes().decode("utf-8", errors="replace")
    except OSError as exc:
        raise ConfigurationError(
            f"cannot read the instructions in {clean_surrogates(str(path))}: {exc.strerror or exc}; "
            "fix its permissions or move it away"
        ) from exc
    return text if text.strip() else None


def _cap(text: str, cap_bytes: int) -> tuple[str, bool]:
    data = text.encode("utf-8")
    if len(data) <= cap_bytes:
        return text, False
    kept = data[:cap_bytes].decode("utf-8", errors="ignore")
    omitted = len(data) - len(kept.encode("utf-8"))
    note = f"[AGENTS.md instructions cut at {_size(cap_bytes)}; {omitted} bytes omitted]"
    return f"{kept.rstrip()}\n\n{note}", True


def _size(n_bytes: int) -> str:
    return f"{n_bytes // 1024} KiB" if n_bytes % 1024 == 0 else f"{n_bytes} bytes"


def build_system_prompt(base: str, instructions: Instructions) -> str:
    """``base`` followed by the AGENTS.md instructions (``base`` alone when there are none)."""
    if not instructions.text:
        return base
    return f"{base.rstrip()}\n\n{_INTRO}\n\n{instructions.text}"
