"""HTTP target APIs (adapter files' REST targets, OpenAPI documents): error responses as
MCP-AQL errors, including the API's own rate limits (REQ-ERR-007/008, REQ-RATE-008).

The message is ``HTTP <status> <reason>`` and a short safe preview of the body (secrets
redacted, HTML reduced to text, traces and file paths dropped: :mod:`.upstream.messages`)."""

from __future__ import annotations

import email.utils
import math
import time
from collections.abc import Iterable, Mapping

import httpx

from ..protocol.errors import MCPAQLError
from .upstream.messages import Redactor
from .upstream.ops import upstream_error


def retry_after_seconds(headers: Mapping[str, str], now: float | None = None) -> int | None:
    """How long the target API asks us to wait (REQ-RATE-008): ``Retry-After`` (seconds or an HTTP
    date), else ``X-RateLimit-Reset`` / ``RateLimit-Reset`` (epoch seconds, or seconds from now
    when small). None when the response does not say."""
    now = time.time() if now is None else now
    value = headers.get("retry-after")
    if value:
        value = value.strip()
        if value.isdigit():
            return int(value)
        try:
            return max(0, math.ceil(email.utils.parsedate_to_datetime(value).timestamp() - now))
        except (TypeError, ValueError, IndexError, OverflowError):
            return None
    for key in ("x-ratelimit-reset", "ratelimit-reset"):
        raw = (headers.get(key) or "").strip()
        if raw.isdigit():
            n = int(raw)
            return max(0, n - int(now)) if n > 10**9 else n  # epoch seconds (GitHub) or delta (IETF draft)
    return None


def http_error(
    resp: httpx.Response, operation: str, *, redact: Redactor | None = None, keep: Iterable[str] = (), origin: str | None = None
) -> MCPAQLError:
    """A target-API error response as an MCPAQLError named after ``operation`` (the exposed
    name; ``origin`` is the document's): the status decides the code (REQ-ERR-007), the body
    tells a missing parameter from a bad one (REQ-ERR-008), and a rate-limited response (429,
    or 403 with ``X-RateLimit-Remaining: 0`` as GitHub sends it) becomes ``RATE_LIMIT_EXCEEDED``
    carrying ``retry_after_seconds`` when the API says it."""
    status = resp.status_code
    limited = status == 429 or (status == 403 and (resp.headers.get("x-ratelimit-remaining") or "").strip() == "0")
    lead = f"HTTP {status} {resp.reason_phrase}".rstrip()
    err = upstream_error(
        resp.text, tool=operation, status=429 if limited else status, redact=redact, keep=keep, lead=lead, origin=origin
    )
    wait = retry_after_seconds(resp.headers) if limited or status == 503 else None
    if wait is not None:
        err.details = {**(err.details or {}), "retry_after_seconds": wait}
    return err
