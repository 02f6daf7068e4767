"""Every step a context policy is made of, by name; the simple ones, that only reshape the prompt, live here.

==============  ===========================  ====================================================
step            file                         what it does
==============  ===========================  ====================================================
``Dedup``       ``dedup/_step.py``           identical read-only calls served from a cache; pointers
``Summarize``   ``summary/_summarize.py``    every N iterations, a rolling summary of all but the last K
``Compact``     ``summary/_compact.py``      past a share of the window, summarize now (safety net)
``Elide``       ``steps/_elide.py``          the summary's range keeps the agent's messages, outputs go
``Window``      ``steps/_window.py``         no summary: the last N iterations, older ones behind a note
``Mask``        ``steps/_mask.py``           the last N tool outputs, older ones behind a placeholder
``Truncate``    ``steps/_truncate.py``       long outputs cut to head (and tail), with the recovery call
``Clear``       ``steps/_clear.py``          past a token count, all outputs but the last N cleared
``Age``         ``aging/_step.py``           older iterations in a compressed form fixed when they aged
``Tidy``        ``steps/_tidy.py``           padded line numbers unpadded, repeated tagged blocks pointed to
==============  ===========================  ====================================================

A policy applies its steps in order (:func:`~..pipeline._build.build_prompt`). What a step is,
and how to write one: :mod:`.._step` and ``docs/context.md``. :data:`STEP_TYPES` names every
built-in step for :meth:`~.._policy.Policy.from_dict`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..._errors import ConfigurationError
from .._step import Step
from ..aging._step import Age
from ..dedup._step import Dedup
from ..summary._compact import Compact
from ..summary._summarize import Summarize
from ._clear import Clear
from ._elide import Elide
from ._mask import Mask
from ._tidy import Tidy
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
    "Tidy",
    "Truncate",
    "Window",
    "step_from_dict",
]

STEP_TYPES: dict[str, type[Step]] = {
    cls.kind: cls for cls in (Dedup, Summarize, Compact, Elide, Window, Mask, Truncate, Clear, Age, Tidy)
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
