"""``tools/call`` results on the wire: the envelope as text *and* as ``structuredContent``.

Why both: the text block is what every client and every token figure in this project has
always seen (MCP says a tool returning structured content SHOULD also return it serialized as
text, for clients that read only ``content``), so it stays byte-for-byte as it was;
``structuredContent`` is the same envelope as a JSON object, for clients and gateways that
read results programmatically instead of re-parsing text.

``ENVELOPE_OUTPUT_SCHEMA`` is the one return type every mcpaql tool has for certain: the
discriminated response envelope (CORE §5.1). ``data`` is left open on purpose: one CRUDE tool
serves many operations, and field selection, paging and aggregation reshape an operation's
declared return type, so a per-operation ``data`` schema could not be *always* honoured.
The schema is advertised only when ``Config.output_schema`` is on (see docs/protocol.md for
what it costs in ``tools/list`` tokens); ``structuredContent`` is sent either way, and
``tests/mcp/test_results.py`` checks every structured result against the schema.
"""

from __future__ import annotations

import json
from typing import Any

import mcp_types as types

from ..protocol.dispatch import Engine

ENVELOPE_OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "success": {"type": "boolean"},
        "data": {},
        "warnings": {"type": "array", "items": {"type": "object"}},
        "error": {
            "type": "object",
            "properties": {"code": {"type": "string"}, "message": {"type": "string"}, "details": {"type": "object"}},
            "required": ["code", "message"],
        },
        "confirmation": {"type": "object"},
    },
    "required": ["success"],
    "oneOf": [
        {"properties": {"success": {"const": True}}, "required": ["data"]},
        {"properties": {"success": {"const": False}}, "required": ["error"]},
    ],
}
"""The response envelope: ``{success: true, data, warnings?, _meta?}`` or
``{success: false, error: {code, message, details?}, confirmation?}``."""


def structured_of(text: str) -> dict[str, Any] | None:
    """The envelope behind a rendered text, as an object (None if the text is not one).

    Parsed back from the text rather than taken from the envelope the engine rendered,
    because rendering may have replaced it (a response over the size limit becomes a
    ``PAYLOAD_TOO_LARGE`` failure): text and structured content must always say the same."""
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def tool_result(text: str, is_error: bool, *, structured: bool = True) -> types.CallToolResult:
    """A ``CallToolResult``: the envelope text as today, plus ``structuredContent`` (parsed
    back from the text; :func:`envelope_result` avoids that when the envelope is at hand)."""
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured_of(text) if structured else None,
        is_error=is_error,
    )


def envelope_result(engine: Engine, envelope: dict[str, Any]) -> types.CallToolResult:
    """The ``CallToolResult`` of an envelope: rendered once by the engine, which also hands back
    the envelope its text says (size limit applied) — the same object, without re-parsing it."""
    text, is_error, shown = engine.rendered(envelope)
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], structured_content=shown, is_error=is_error)
