"""Cursor pagination (PAG; CHECKLIST REQ-PAGE-*) with offset compatibility (PAG §4.5).

Cursors are keyset positions: the sort values of a record plus its tie-breaker (the
collection's key field, else its position in the handler's order), signed with HMAC-SHA256
under the engine's cursor key and base64url-encoded, so they are opaque, URL-safe, compact,
self-contained and tamper-resistant (PAG §6.4). A cursor also records the operation and the
sort it was issued for; using it with another sort is a clear validation error, never a
silently wrong page. Invalid parameter combinations follow PAG §2.3 exactly.

The cursor key is derived from the deployment secret (:func:`cursor_keys`), so every process of
one deployment accepts every other's cursors; with a rotation in progress the first key signs
and the later ones still verify. Without a secret each engine draws a random key.
"""

from __future__ import annotations

import base64
import binascii
import bisect
import hashlib
import hmac
import json
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import MCPAQLError, invalid_value
from ..warnings import page_size_clamped

CURSOR_SECRET_KEY = "mcpaql.cursor_secret"
_PROCESS_SECRET = os.urandom(32)  # fallback when no engine put its own keys in the context
_CURSOR_PURPOSE = b"mcpaql/cursor/v1"
HARD_MAX_PAGE_SIZE = 1000
CURSOR_PARAMS = ("first", "after", "last", "before")
OFFSET_PARAMS = ("limit", "offset")


def _b64(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode("ascii")


def _unb64(s: str) -> bytes:
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def invalid_cursor(param: str, reason: str) -> MCPAQLError:
    return invalid_value(
        param,
        "cursor",
        f"is not a valid cursor for this query ({reason}). "
        "Use pageInfo.startCursor/endCursor from a previous response of the same query, or omit it to start over",
        hint="Omit the cursor to start from the first page",
    )


def cursor_keys(secrets: Sequence[bytes]) -> tuple[bytes, ...]:
    """The cursor keys derived from the deployment secrets (same order): a key of its own for
    cursors, so the secret itself never signs anything a client sees."""
    return tuple(hmac.new(s, _CURSOR_PURPOSE, hashlib.sha256).digest() for s in secrets)


class CursorCodec:
    """Encode/verify opaque cursors: ``base64url(json) "." base64url(hmac[:16])``. The first key
    signs; any of them verifies (a key rotation in progress)."""

    __slots__ = ("_keys",)

    def __init__(self, secret: bytes | Sequence[bytes] | None = None) -> None:
        keys = (secret,) if isinstance(secret, bytes) else tuple(secret or ())
        self._keys: tuple[bytes, ...] = keys or (_PROCESS_SECRET,)

    def _mac(self, body: bytes, key: bytes | None = None) -> bytes:
        return hmac.new(key or self._keys[0], body, hashlib.sha256).digest()[:16]

    def encode(self, payload: dict[str, Any]) -> str:
        body = json.dumps(payload, separators=(",", ":"), sort_keys=True, default=str).encode()
        return f"{_b64(body)}.{_b64(self._mac(body))}"

    def decode(self, cursor: str, param: str) -> dict[str, Any]:
        body_part, dot, mac_part = cursor.partition(".")
        if not dot or not body_part or not mac_part or len(cursor) > 4096:
            raise invalid_cursor(param, "malformed")
        try:
            body, mac = _unb64(body_part), _unb64(mac_part)
        except (binascii.Error, ValueError):
            raise invalid_cursor(param, "malformed") from None
        if not any(hmac.compare_digest(mac, self._mac(body, key)) for key in self._keys):
            raise invalid_cursor(param, "signature mismatch: the cursor was altered or issued by another server")
        try:
            payload = json.loads(body)
        except ValueError:
            raise invalid_cursor(param, "malformed") from None
        if not isinstance(payload, dict):
            raise invalid_cursor(param, "malformed")
        return payload


def codec_for(ctx: Any) -> CursorCodec:
    keys = getattr(ctx, "extensions", {}).get(CURSOR_SECRET_KEY) if ctx is not None else None
    if isinstance(keys, tuple) and keys and all(isinstance(k, bytes) for k in keys):
        return CursorCodec(keys)
    return CursorCodec(keys if isinstance(keys, bytes) else None)


@dataclass(slots=True)
class PageRequest:
    """The normalized page window. ``after``/``before`` are decoded keyset values (raw)."""

    style: str  # "cursor" | "offset"
    size: int
    backward: bool = False
    after: list[Any] | None = None
    before: list[Any] | None = None
    offset: int = 0
    provided: tuple[str, ...] = ()
    warnings: list[dict[str, Any]] = field(default_factory=list)


def _combination_error(message: str, provided: list[str], hint: str) -> MCPAQLError:
    return MCPAQLError(
        "VALIDATION_INVALID_TYPE",
        message,
        {
            "param_name": "pagination",
            "expected_type": "valid pagination combination",
            "actual_type": "conflicting parameters",
            "provided": provided,
            "hint": hint,
        },
    )


def check_combination(values: dict[str, Any], allow_offset: bool) -> list[str]:
    """PAG §2.3 (and CQ §2.6 mixed styles). Returns the pagination params that were given."""
    given = [p for p in (*CURSOR_PARAMS, *OFFSET_PARAMS) if values.get(p) is not None]
    has = set(given)
    cursor_style = [p for p in given if p in CURSOR_PARAMS]
    offset_style = [p for p in given if p in OFFSET_PARAMS]
    if cursor_style and offset_style:
        raise _combination_error(
            f"Cannot mix cursor pagination ({', '.join(cursor_style)}) with offset pagination ({', '.join(offset_style)})",
            given,
            "Use first/after (or last/before) for cursor pagination, or limit/offset, not both",
        )
    if {"first", "last"} <= has:
        raise _combination_error(
            "Cannot use 'first' and 'last' together",
            ["first", "last"],
            "Use 'first' for forward pagination or 'last' for backward pagination",
        )
    if {"first", "before"} <= has:
        raise _combination_error(
            "Cannot use 'first' with 'before'", ["first", "before"], "Use 'first' with 'after', or 'last' with 'before'"
        )
    if {"last", "after"} <= has:
        raise _combination_error(
            "Cannot use 'last' with 'after'", ["last", "after"], "Use 'first' with 'after', or 'last' with 'before'"
        )
    if "after" in has and "first" not in has:
        raise _combination_error("'after' requires 'first'", ["after"], "Add 'first' (the page size) to continue after a cursor")
    if "before" in has and "last" not in has:
        raise _combination_error(
            "'before' requires 'last'", ["before"], "Add 'last' (the page size) to page back before a cursor"
        )
    return given


def parse_page(
    values: dict[str, Any],
    *,
    default_size: int,
    max_size: int,
    clamp: bool = True,
    allow_offset: bool = True,
    decode: Callable[[str, str], list[Any]] | None = None,
) -> PageRequest:
    given = check_combination(values, allow_offset)
    warnings: list[dict[str, Any]] = []

    def size_of(name: str) -> int:
        n = values.get(name)
        if n is None:
            return default_size
        if n > max_size and clamp:
            warnings.append(page_size_clamped(name, n, max_size))
            return max_size
        return int(n)

    if values.get("limit") is not None or values.get("offset") is not None:
        return PageRequest(
            "offset", size_of("limit"), offset=int(values.get("offset") or 0), provided=tuple(given), warnings=warnings
        )
    if values.get("last") is not None:
        before = decode(values["before"], "before") if decode and values.get("before") is not None else None
        return PageRequest("cursor", size_of("last"), backward=True, before=before, provided=tuple(given), warnings=warnings)
    after = decode(values["after"], "after") if decode and values.get("after") is not None else None
    return PageRequest("cursor", size_of("first"), after=after, provided=tuple(given), warnings=warnings)


@dataclass(slots=True)
class Window:
    start: int
    end: int
    has_next: bool
    has_previous: bool


def window(
    keys: Sequence[Any],
    page: PageRequest,
    key_of_cursor: Callable[[list[Any], bool], Any],
) -> Window:
    """Slice bounds for ``page`` over ``keys`` (already sorted, comparable sort keys);
    ``key_of_cursor(keyset, after)`` turns a decoded cursor into a comparable key."""
    n = len(keys)
    if page.style == "offset":
        start = min(page.offset, n)
        end = min(start + page.size, n)
        return Window(start, end, end < n, start > 0)
    if page.backward:
        end = n if page.before is None else bisect.bisect_left(keys, key_of_cursor(page.before, False))
        start = max(0, end - page.size)
        return Window(start, end, end < n, start > 0)
    start = 0 if page.after is None else bisect.bisect_right(keys, key_of_cursor(page.after, True))
    end = min(start + page.size, n)
    return Window(start, end, end < n, start > 0)


def page_info(
    has_next: bool, has_previous: bool, start_cursor: str | None, end_cursor: str | None, total: int | None
) -> dict[str, Any]:
    info: dict[str, Any] = {"hasNextPage": has_next, "hasPreviousPage": has_previous}
    if start_cursor is not None:
        info["startCursor"] = start_cursor
        info["endCursor"] = end_cursor
    if total is not None:
        info["totalCount"] = total
    return info


def offset_info(page: PageRequest, returned: int, has_more: bool, total: int | None) -> dict[str, Any]:
    info: dict[str, Any] = {"limit": page.size, "offset": page.offset, "returned": returned, "has_more": has_more}
    if total is not None:
        info["total_items"] = total
    return info


__all__ = [
    "CURSOR_SECRET_KEY",
    "CursorCodec",
    "PageRequest",
    "check_combination",
    "codec_for",
    "offset_info",
    "page_info",
    "parse_page",
    "window",
]
