"""The CLI keeps litellm's import out of the garbage collector's way (tiered_agent/_litellm.py)."""

from __future__ import annotations

import gc
import sys
import types

import pytest

from tiered_agent import _litellm


def test_the_cli_settles_the_heap_once_litellm_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "litellm", types.ModuleType("litellm"))  # an instant import
    monkeypatch.setattr(_litellm, "_settle", False)
    gc.unfreeze()
    try:
        _litellm._import()
        assert gc.get_freeze_count() == 0  # a library import leaves the host's heap alone
        _litellm.settle_heap_on_import()
        _litellm._import()
        assert gc.get_freeze_count() > 1000  # everything alive now is out of the collector's way
    finally:
        gc.unfreeze()
