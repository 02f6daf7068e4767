"""Load a script of ``benchmarks/`` or ``examples/`` as a module (not packages), for its tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _load(folder: str, name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, ROOT / folder / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # as importlib's recipe does: a dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def load_script(name: str) -> ModuleType:
    """``benchmarks/<name>.py``, imported under ``name``."""
    return _load("benchmarks", name)


def load_example(name: str) -> ModuleType:
    """``examples/<name>.py``, imported under ``name``."""
    return _load("examples", name)
