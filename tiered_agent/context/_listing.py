"""Line-numbered listings: the padding before a listing's line numbers, which says nothing.

A line-numbered listing (``cat -n``, ``nl``, an editor's view, Claude Code's ``Read``) pads each
number to a fixed width: ``     1→package main`` or ``    12\\tdef f():``. The number and the text
after the separator are the line; ``1→package main`` is the same line. :func:`unpad_numbers` is the
one implementation of dropping that padding: Tidy applies it to the outputs shown verbatim
(:mod:`.steps._tidy`), the aged forms to the output lines they keep (:mod:`.aging._forms`).
"""

from __future__ import annotations

import re

from ._memo import run_memo

__all__ = ["LISTING_NUMBER", "unpad_numbers"]

# A listing's line number and its separator (``cat -n``, ``nl``, an editor's view: a tab; Claude Code's
# Read: →), padded with spaces; the working memory reads the same listings (summary/memory/_code.py).
LISTING_NUMBER = r"(\d{1,9})(?:\u2192|\t)"
# A number padded with spaces at the start of a line, then the listing's separator (→ or a tab).
_PADDED = re.compile(r"^ +(?=" + LISTING_NUMBER + ")", re.MULTILINE)


@run_memo(16_384)
def unpad_numbers(text: str) -> str:
    """``text`` with the spaces before each line's leading number and its ``→`` or tab removed."""
    return _PADDED.sub("", text) if " " in text else text
