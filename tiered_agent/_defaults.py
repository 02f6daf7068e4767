"""Defaults shared by the library and the CLI, in a module cheap enough for ``--help`` to import."""

from __future__ import annotations

__all__ = ["DEFAULT_MAX_RETRIES", "DEFAULT_REQUEST_TIMEOUT_S"]

# A provider that never answers costs 3 attempts of 60 s (+ 1 s and 2 s of backoff): about 3 minutes.
DEFAULT_REQUEST_TIMEOUT_S = 60.0
DEFAULT_MAX_RETRIES = 2
