"""Wire framing checks that happen before the SDK sees a message (CORE §4.7.1, §4.7.5).

The SDK decodes stdio with ``errors="replace"`` and HTTP bodies as JSON straight away, so
invalid UTF-8 would reach a handler as U+FFFD (stdio) or come back as a bare ``-32700``
(HTTP), and a stdio line had no bound at all. REQ-VAL-023 is a MUST: such a request is
*rejected* with ``VALIDATION_INVALID_ENCODING``. Both transports therefore look at the raw
bytes first and answer bad ones themselves, in the shape the request asked for:

* a ``tools/call`` gets a normal tool result whose text is the MCP-AQL error envelope
  (``isError: true``), exactly like any other refused operation;
* any other request gets a JSON-RPC error (``-32700`` for encoding, ``-32600`` for size) whose
  ``data`` carries the MCP-AQL code, message and details;
* a line whose id cannot be found gets no answer (there is nobody to answer) — it is logged.

The id and method are read from the bytes we have: the whole message when it is small enough,
else the first :data:`PREFIX_BYTES` of an over-long line (``id`` and ``method`` come first in
every client we know); never by buffering the rest.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from ..config import Limits
from ..protocol.envelope import failure
from ..protocol.errors import MCPAQLError, payload_too_large
from ..protocol.limits import encoding_error

PREFIX_BYTES = 4096
"""How much of an over-long line is kept to find its id and method."""

FRAMING_ALLOWANCE = 64 * 1024
"""Bytes a JSON-RPC message may add around its arguments (``jsonrpc``, ``id``, ``_meta``…)."""

JSON_ESCAPE_FACTOR = 6
"""Worst case growth of text under JSON escaping (one control byte → ``\\u00hh``)."""


def line_limit(limits: Limits) -> int:
    """The longest stdio line that can still hold an acceptable request.

    The request size limit applies to the decoded request; a client escaping everything
    (``ensure_ascii`` plus control characters) can send up to six bytes per byte of it. A line
    longer than this bound cannot be a request we would accept, so it is refused unread.
    """
    return limits.max_request_size * JSON_ESCAPE_FACTOR + FRAMING_ALLOWANCE


@dataclass(frozen=True)
class Line:
    """One complete line, newline removed."""

    data: bytes


@dataclass(frozen=True)
class Overlong:
    """A line longer than the limit: its first bytes and its total length."""

    prefix: bytes
    size: int


Frame = Line | Overlong


class LineFramer:
    """Split a byte stream into lines, holding at most ``limit`` bytes of any one line.

    Pure and synchronous (fed by whichever reader the transport uses), so it can be tested
    on arbitrary byte sequences and chunkings. A line over ``limit`` is reported once as
    :class:`Overlong` when its newline (or EOF) arrives; its bytes beyond the prefix are
    counted and dropped as they come.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._buf = bytearray()
        self._skipping = False
        self._prefix = b""
        self._skipped = 0

    def feed(self, data: bytes) -> list[Frame]:
        frames: list[Frame] = []
        start = 0
        while True:
            nl = data.find(b"\n", start)
            end = len(data) if nl < 0 else nl
            self._take(data[start:end])
            if nl < 0:
                return frames
            frames.append(self._finish())
            start = nl + 1

    def eof(self) -> list[Frame]:
        """The last line when the stream ends without a newline."""
        if self._skipping or self._buf:
            return [self._finish()]
        return []

    def _take(self, chunk: bytes) -> None:
        if self._skipping:
            self._skipped += len(chunk)
            return
        self._buf += chunk
        if len(self._buf) > self.limit:
            self._skipping = True
            self._prefix = bytes(self._buf[:PREFIX_BYTES])
            self._skipped = len(self._buf)
            self._buf = bytearray()

    def _finish(self) -> Frame:
        if self._skipping:
            frame: Frame = Overlong(self._prefix, self._skipped)
            self._skipping, self._prefix, self._skipped = False, b"", 0
            return frame
        data = bytes(self._buf).rstrip(b"\r")
        self._buf = bytearray()
        return Line(data)


_ID = re.compile(rb'"id"\s*:\s*(-?\d{1,18}|"(?:[^"\\]|\\.){0,200}")')
_METHOD = re.compile(rb'"method"\s*:\s*"([A-Za-z0-9_/.\-]{1,100})"')


def request_identity(raw: bytes) -> tuple[Any, str | None]:
    """The JSON-RPC ``id`` and ``method`` of a raw (possibly invalid or truncated) message.

    A whole message is parsed (with bad bytes replaced) so the answer goes to the right id;
    when that fails, the first ``"id"`` / ``"method"`` found in the text are used. ``id`` is
    ``None`` when none is found (or the message is a notification).
    """
    text = raw.decode("utf-8", errors="replace")
    try:
        msg = json.loads(text)
    except (ValueError, RecursionError):
        msg = None
    if isinstance(msg, dict):
        rid: Any = msg.get("id")
        method = msg.get("method")
        valid_id = isinstance(rid, str) or (isinstance(rid, int) and not isinstance(rid, bool))
        return (rid if valid_id else None), (method if isinstance(method, str) else None)
    if msg is not None:  # JSON, but not a request object (a batch, a scalar)
        return None, None
    m = _ID.search(raw)
    rid = None
    if m:
        try:
            rid = json.loads(m.group(1).decode("utf-8", errors="replace"))
        except ValueError:
            rid = None
    mm = _METHOD.search(raw)
    return rid, (mm.group(1).decode() if mm else None)


def check_line(data: bytes) -> MCPAQLError | None:
    """``VALIDATION_INVALID_ENCODING`` for a line that is not strict UTF-8, else None."""
    try:
        data.decode("utf-8", errors="strict")
    except UnicodeDecodeError as e:
        return encoding_error("request", e.start)
    return None


def too_large(size: int, limit: int) -> MCPAQLError:
    return payload_too_large("request_size", limit, size, "bytes")


MODERN_META_KEY = b"io.modelcontextprotocol/protocolVersion"
"""Present only in 2026-07-28 per-request envelopes, whose results must carry ``resultType``."""


def refusal(rid: Any, method: str | None, error: MCPAQLError, *, modern: bool = False) -> dict[str, Any] | None:
    """The JSON-RPC message answering a request refused at the wire, or None without an id."""
    if rid is None:
        return None
    if method == "tools/call":
        text = json.dumps(failure(error), separators=(",", ":"))
        result: dict[str, Any] = {"content": [{"type": "text", "text": text}], "isError": True}
        if modern:
            result["resultType"] = "complete"
        return {"jsonrpc": "2.0", "id": rid, "result": result}
    rpc_code = -32700 if error.code == "VALIDATION_INVALID_ENCODING" else -32600
    return {"jsonrpc": "2.0", "id": rid, "error": {"code": rpc_code, "message": error.message, "data": error.to_error()}}


def refuse_frame(frame: Frame, limit: int) -> tuple[MCPAQLError, dict[str, Any] | None] | None:
    """For a frame the SDK must not see: the error and the answer (None if unanswerable).
    None when the frame is a well-formed line to pass on."""
    if isinstance(frame, Overlong):
        error = too_large(frame.size, limit)
        rid, method = request_identity(frame.prefix)
        return error, refusal(rid, method, error, modern=MODERN_META_KEY in frame.prefix)
    invalid = check_line(frame.data)
    if invalid is None:
        return None
    rid, method = request_identity(frame.data)
    return invalid, refusal(rid, method, invalid, modern=MODERN_META_KEY in frame.data)


def encode(message: dict[str, Any]) -> bytes:
    return (json.dumps(message, separators=(",", ":"), ensure_ascii=False) + "\n").encode("utf-8")


class Utf8Guard:
    """ASGI middleware: a POST body that is not strict UTF-8 is answered here (see module doc)
    instead of reaching the SDK, which would answer a bare ``-32700``. Bodies larger than
    ``limit`` are passed through unchecked (the SDK's body-size limit refuses them), so this
    never buffers more than ``limit`` bytes."""

    def __init__(self, app: Any, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope.get("type") != "http" or scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        seen: list[dict[str, Any]] = []
        size, more = 0, True
        while more and size <= self.limit:
            message = await receive()
            seen.append(message)
            if message.get("type") != "http.request":
                break
            size += len(message.get("body", b""))
            more = bool(message.get("more_body", False))
        if not more and seen and seen[-1].get("type") == "http.request":
            body = b"".join(m.get("body", b"") for m in seen)
            refused = refuse_frame(Line(body), self.limit)
            if refused is not None:
                await self._answer(send, *refused)
                return

        async def replay() -> dict[str, Any]:
            return seen.pop(0) if seen else await receive()

        await self.app(scope, replay, send)

    async def _answer(self, send: Any, error: MCPAQLError, answer: dict[str, Any] | None) -> None:
        status = 200
        if answer is None:  # nothing to address: a plain JSON-RPC parse error, as HTTP allows
            status = 400
            answer = {"jsonrpc": "2.0", "id": None, "error": {"code": -32700, "message": error.message, "data": error.to_error()}}
        body = encode(answer)
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())],
            }
        )
        await send({"type": "http.response.body", "body": body})
