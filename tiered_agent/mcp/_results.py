"""An MCP ``CallToolResult`` as the text the model reads.

Text blocks are kept as they are; images, audio, resource links and embedded
resources are described (type, MIME type, size, URI) rather than dropped; an
embedded text resource is shown with its URI. Structured content is shown as
JSON when the result has no text. An ``isError`` result raises :class:`ToolError`,
so the model gets it as a tool error like any other tool's failure.
"""

from __future__ import annotations

import orjson
from mcp.types import (
    AudioContent,
    BlobResourceContents,
    CallToolResult,
    ContentBlock,
    EmbeddedResource,
    ImageContent,
    ResourceLink,
    TextContent,
    TextResourceContents,
)

from .._errors import ToolError

__all__ = ["render_result"]


def render_result(result: CallToolResult) -> str:
    """The result's content as text; raises :class:`ToolError` with that text when ``is_error``."""
    parts = [_render_block(block) for block in result.content]
    has_text = any(isinstance(block, TextContent) for block in result.content)
    if not has_text and result.structured_content is not None:
        parts.append(orjson.dumps(result.structured_content).decode())
    text = "\n".join(parts)
    if result.is_error:
        raise ToolError(text or "the tool reported an error without a message")
    return text


def _render_block(block: ContentBlock) -> str:
    if isinstance(block, TextContent):
        return block.text
    if isinstance(block, ImageContent | AudioContent):
        return f"[{block.type}: {block.mime_type}, {_base64_size(block.data):,} bytes, not shown]"
    if isinstance(block, ResourceLink):
        return _describe_link(block)
    if isinstance(block, EmbeddedResource):
        return _render_resource(block.resource)
    return f"[{getattr(block, 'type', type(block).__name__)} content, not shown]"


def _describe_link(link: ResourceLink) -> str:
    details = [f"resource link: {link.uri}"]
    if link.name:
        details.append(f"name {link.name!r}")
    if link.mime_type:
        details.append(link.mime_type)
    if link.size is not None:
        details.append(f"{link.size:,} bytes")
    text = "[" + ", ".join(details) + "]"
    return f"{text} {link.description}" if link.description else text


def _render_resource(resource: TextResourceContents | BlobResourceContents) -> str:
    mime = f", {resource.mime_type}" if resource.mime_type else ""
    if isinstance(resource, TextResourceContents):
        return f"[resource: {resource.uri}{mime}]\n{resource.text}"
    return (
        f"[resource: {resource.uri}{mime}, {_base64_size(resource.blob):,} bytes of binary data, not shown]"
    )


def _base64_size(data: str) -> int:
    """Decoded size of base64 ``data``, computed without decoding it."""
    compact = "".join(data.split())
    return max(len(compact) * 3 // 4 - (len(compact) - len(compact.rstrip("="))), 0)
