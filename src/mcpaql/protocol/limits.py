"""Payload limits and text encoding checks (CORE §4.7.1, §4.7.5).

One walk over the decoded request enforces nesting depth (root object = level 1), array
length, string length and well-formed text (no lone surrogates: a JSON ``\\ud800`` escape
decodes into one), and estimates the request's size. The exact serialized size is computed
only when the estimate comes near the limit, so small requests pay a few microseconds.
"""

from __future__ import annotations

import json
from typing import Any

from ..config import Limits
from .errors import MCPAQLError, payload_too_large


def encoding_error(location: str, byte_offset: int | None = None) -> MCPAQLError:
    details: dict[str, Any] = {"location": location}
    if byte_offset is not None:
        details["byte_offset"] = byte_offset
    return MCPAQLError("VALIDATION_INVALID_ENCODING", "Invalid character encoding in request", details)


def decode_raw(raw: bytes | str, limits: Limits) -> Any:
    """Decode a raw request body: strict UTF-8, then JSON. Used by the byte-level entry point."""
    if isinstance(raw, bytes):
        if len(raw) > limits.max_request_size:
            raise payload_too_large("request_size", limits.max_request_size, len(raw), "bytes")
        try:
            text = raw.decode("utf-8", errors="strict")
        except UnicodeDecodeError as e:
            raise encoding_error("request", e.start) from None
    else:
        text = raw
    try:
        return json.loads(text)
    except ValueError:
        raise MCPAQLError("VALIDATION_ERROR", "Request is not valid JSON") from None


def _has_lone_surrogate(s: str) -> bool:
    try:
        s.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def check_payload(request: Any, limits: Limits) -> bool:
    """Raise ``VALIDATION_PAYLOAD_TOO_LARGE`` or ``VALIDATION_INVALID_ENCODING`` if needed.

    Returns whether any string holds U+0000, so binding can reject it for parameters that do
    not document support for it (REQ-VAL-024) without scanning again when none does.
    """
    max_depth = limits.max_nesting_depth
    max_str = limits.max_string_length
    max_arr = limits.max_array_elements
    size = 0
    has_nul = False
    # Iterative walk: a hostile, deeply nested request must not exhaust the Python stack.
    stack: list[tuple[Any, int, str]] = [(request, 1, "request")]
    while stack:
        node, depth, where = stack.pop()
        if isinstance(node, str):
            n = len(node)
            if n > max_str:
                raise payload_too_large("string_length", max_str, n, "bytes")
            size += n + 2
            if "\x00" in node:
                has_nul = True
            if not node.isascii() and _has_lone_surrogate(node):
                raise encoding_error(where)
            continue
        if isinstance(node, dict):
            if depth > max_depth:
                raise payload_too_large("nesting_depth", max_depth, depth, "levels")
            size += 2
            for k, v in node.items():
                if isinstance(k, str):
                    size += len(k) + 4
                    if "\x00" in k:
                        has_nul = True
                    if not k.isascii() and _has_lone_surrogate(k):
                        raise encoding_error(where)
                if isinstance(v, dict | list):
                    stack.append((v, depth + 1, k if isinstance(k, str) else where))
                elif isinstance(v, str):
                    stack.append((v, depth, k if isinstance(k, str) else where))
                else:
                    size += 8
            continue
        if isinstance(node, list):
            if depth > max_depth:
                raise payload_too_large("nesting_depth", max_depth, depth, "levels")
            if len(node) > max_arr:
                raise payload_too_large("array_elements", max_arr, len(node), "elements")
            size += 2 + len(node)
            for v in node:
                if isinstance(v, dict | list):
                    stack.append((v, depth + 1, where))
                elif isinstance(v, str):
                    stack.append((v, depth, where))
                else:
                    size += 8
            continue
        size += 8
    if size * 2 > limits.max_request_size:
        exact = len(json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace"))
        if exact > limits.max_request_size:
            raise payload_too_large("request_size", limits.max_request_size, exact, "bytes")
    return has_nul
