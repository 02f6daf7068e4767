"""The steps a context policy is made of, one small frozen value per file.

==============  =====================  ==========================================================
step            file                   what it does
==============  =====================  ==========================================================
``Dedup``       ``_dedup.py``          identical read-only calls served from a cache; repeats as pointers
``Summarize``   ``_summarize.py``      every N iterations, a rolling summary of all but the last K
``Compact``     ``_compact.py``        past a share of the window, summarize now (safety net)
``Elide``       ``_elide.py``          the summary's range keeps the agent's messages, outputs go
``Window``      ``_window.py``         no summary: the last N iterations, older ones behind a note
``Mask``        ``_mask.py``           the last N tool outputs, older ones behind a placeholder
``Truncate``    ``_truncate.py``       long outputs cut to head (and tail), with the recovery call
``Clear``       ``_clear.py``          past a token count, all outputs but the last N cleared
``Age``         ``_age.py``            older iterations in a compressed form fixed when they aged
==============  =====================  ==========================================================

A policy applies its steps in order (:func:`~.._pipeline.build_prompt`).
Adding a step is one new file here, its line in :data:`STEP_TYPES`, and its place in a preset.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._errors import ConfigurationError
from ._age import Age
from ._base import Step
from ._clear import Clear
from ._compact import Compact
from ._dedup import Dedup
from ._elide import Elide
from ._mask import Mask
from ._summarize import Summarize
from ._truncate import Truncate
from ._window import Window

__all__ = [
    "STEP_TYPES",
    "Age",
    "Clear",
    "Compact",
    "Dedup",
    "Elide",
    "Mask",
    "Step",
    "Summarize",
    "Truncate",
    "Window",
    "step_from_dict",
]

STEP_TYPES: dict[str, type[Step]] = {
    cls.kind: cls for cls in (Dedup, Summarize, Compact, Elide, Window, Mask, Truncate, Clear, Age)
}


def step_from_dict(data: Mapping[str, Any]) -> Step:
    """The step ``Step.to_dict`` wrote; a clear :class:`ConfigurationError` for anything else."""
    fields = dict(data)
    kind = fields.pop("step", None)
    cls = STEP_TYPES.get(str(kind))
    if cls is None:
        raise ConfigurationError(f"unknown context step {kind!r}; choose one of {', '.join(STEP_TYPES)}")
    try:
        return cls(**fields)
    except TypeError as exc:
        raise ConfigurationError(f"invalid fields for step {kind!r}: {exc}") from None
