"""Lazy, quiet access to litellm.

Importing litellm costs seconds, so nothing in the package imports it at module
level: :func:`import_litellm` does it once, on the first model call, after
pinning the offline cost map and before anything can phone home.
"""

from __future__ import annotations

import gc
import logging
import os
import threading
import warnings
from functools import lru_cache
from types import ModuleType
from typing import Any

import structlog

__all__ = ["context_window", "import_litellm", "settle_heap_on_import"]

_LITELLM_LOGGERS = ("LiteLLM", "LiteLLM Router", "LiteLLM Proxy")
_lock = threading.Lock()
_module: ModuleType | None = None
_settle = False
_log = structlog.get_logger(__name__)


def settle_heap_on_import() -> None:
    """Once litellm is imported, move every object then alive out of the garbage collector's way.

    For a process that owns its heap (the CLI). litellm's import leaves ~300k objects that live as
    long as the process; every full collection would scan them again (~200 ms on a 2-core machine,
    a stall of the loop every few hundred thousand allocations). After a last collection,
    ``gc.freeze()`` keeps them out of it.
    """
    global _settle  # noqa: PLW0603 - a process-wide switch, set by the application
    _settle = True


def import_litellm() -> ModuleType:
    """The litellm module, imported (and configured) once, on first use."""
    global _module  # noqa: PLW0603 - a process-wide import cache, like sys.modules
    if _module is not None:
        return _module
    with _lock:
        if _module is None:
            _module = _configure(_import())
    return _module


def _import() -> ModuleType:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")  # no fetch of the price map
    os.environ.setdefault("LITELLM_DISABLE_BUG_REPORT_LINK", "true")  # no issue URL in error messages
    import litellm

    if _settle:
        gc.collect()
        gc.freeze()
    module: ModuleType = litellm
    return module


def _configure(litellm: Any) -> ModuleType:
    litellm.disable_hf_tokenizer_download = True
    litellm.suppress_debug_info = True  # no "Give Feedback / Get Help" prints on errors
    litellm.telemetry = False
    # litellm re-serializes a provider's reply with pydantic, which warns on stderr (with a line of its
    # source) about each field of the wrong type a hostile reply holds: the reply is judged by us.
    warnings.filterwarnings("ignore", message="Pydantic serializer warnings", category=UserWarning)
    if "LITELLM_LOG" not in os.environ:  # an explicit LITELLM_LOG is the user asking for litellm's logs
        for name in _LITELLM_LOGGERS:
            logging.getLogger(name).setLevel(logging.ERROR)
    module: ModuleType = litellm
    return module


@lru_cache(maxsize=256)
def context_window(model: str) -> int | None:
    """The model's input window in tokens per litellm's cost map; ``None`` when litellm does not know it."""
    litellm = import_litellm()
    try:
        info: Any = litellm.get_model_info(model=model)
    except Exception as exc:  # litellm raises plain Exception subclasses for unmapped models
        _log.debug("context_window_unknown", model=model, error=type(exc).__name__)
        return None
    for key in ("max_input_tokens", "max_tokens"):
        value = info.get(key) if hasattr(info, "get") else None
        if isinstance(value, int) and value > 0:
            return value
    return None
