"""Replay benchmark: importers, replay through context policies, metrics and reports.

Public here: the reader of the ``tiered-agent bench prompts`` export (whole or ``--delta``).
"""

from ._prompt_file import prompts_from_lines, read_prompts

__all__ = ["prompts_from_lines", "read_prompts"]
