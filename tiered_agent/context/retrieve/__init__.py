"""``context_retrieve``: the model's way back to anything the context steps hid.

* ``_tool``: :func:`retrieve` (select items of the full history by iteration, call id, tool name
  or topic, and page them by a token budget) and :func:`make_retrieve_tool` (the runtime tool).
"""
