"""Payload limits and text encoding checks (CORE §4.7.1, §4.7.5).

One walk over the decoded request enforces nesting depth (root object = level 1), array
length, string length and well-formed text (no lone surrogates: a JSON ``\\ud800`` escape
decodes into one), and estimates the request's size. The exact serialized size is computed
only when the estimate comes near the limit, so small requests pay a few microseconds.
"""

from __future__ import annotations

import json
import math
import re
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
        return json.loads(text, parse_constant=_reject_constant)
    except ValueError:
        raise MCPAQLError("VALIDATION_ERROR", "Request is not valid JSON") from None
    except RecursionError:
        # The C scanner recurses per nesting level: far deeper than any allowed depth.
        raise payload_too_large("nesting_depth", limits.max_nesting_depth, _raw_depth(text), "levels") from None


def _raw_depth(text: str) -> int:
    """Bracket depth of raw JSON text, ignoring brackets inside strings (error path only)."""
    depth = deepest = 0
    for m in _BRACKETS.finditer(text):
        tok = m.group()
        if tok in "[{":
            depth += 1
            deepest = max(deepest, depth)
        elif tok in "]}":
            depth -= 1
    return deepest


_BRACKETS = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _utf8_len(s: str, where: str) -> int:
    """UTF-8 length of ``s``; a lone surrogate is ``VALIDATION_INVALID_ENCODING``."""
    if s.isascii():
        return len(s)
    try:
        return len(s.encode("utf-8"))
    except UnicodeEncodeError:
        raise encoding_error(where) from None


def _serialized_bound(s: str, nbytes: int) -> int:
    """Upper bound of the JSON-serialized size of ``s``: printable text doubles at most
    (``"`` and ``\\`` are escaped); control characters become six-byte ``\\u00hh`` escapes."""
    return (2 * nbytes if s.isprintable() else 6 * len(s)) + 2


def _scalar_bound(v: Any) -> int:
    if isinstance(v, int) and not isinstance(v, bool):
        return v.bit_length() // 3 + 3  # decimal digits < bits / 3.3, plus sign and comma
    if isinstance(v, float) and not math.isfinite(v):
        raise _not_json()  # NaN/Infinity would be echoed back as invalid JSON
    return 26  # floats (repr ≤ 24 chars), true/false/null


def _not_json(_: str = "") -> MCPAQLError:
    return MCPAQLError("VALIDATION_ERROR", "Request is not valid JSON: NaN and Infinity are not JSON numbers")


def _reject_constant(name: str) -> Any:
    raise _not_json(name)


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
            n = _utf8_len(node, where)  # string_length is in bytes, not characters
            if n > max_str:
                raise payload_too_large("string_length", max_str, n, "bytes")
            size += _serialized_bound(node, n)
            if "\x00" in node:
                has_nul = True
            continue
        if isinstance(node, dict):
            if depth > max_depth:
                raise payload_too_large("nesting_depth", max_depth, depth, "levels")
            size += 2
            for k, v in node.items():
                if isinstance(k, str):
                    kn = _utf8_len(k, where)
                    if kn > max_str:
                        raise payload_too_large("string_length", max_str, kn, "bytes")
                    size += _serialized_bound(k, kn) + 2
                    if "\x00" in k:
                        has_nul = True
                if isinstance(v, dict | list):
                    stack.append((v, depth + 1, k if isinstance(k, str) else where))
                elif isinstance(v, str):
                    stack.append((v, depth, k if isinstance(k, str) else where))
                else:
                    size += _scalar_bound(v)
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
                    size += _scalar_bound(v)
            continue
        size += _scalar_bound(node)
    # ``size`` is an upper bound of the compact UTF-8 serialization; measure exactly only
    # when that bound exceeds the limit.
    if size > limits.max_request_size:
        exact = len(json.dumps(request, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "replace"))
        if exact > limits.max_request_size:
            raise payload_too_large("request_size", limits.max_request_size, exact, "bytes")
    return has_nul
