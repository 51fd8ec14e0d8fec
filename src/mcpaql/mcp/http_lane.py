"""A direct lane for ``tools/call`` to a streamable-HTTP upstream, over a kept-alive connection pool.

Why: wrapping a streamable-HTTP upstream cost 3.1–3.4× a direct call. Each call went through the
SDK client's machinery (pydantic models, memory-object streams, a task per POST) and, because the
SDK closes a POST's event stream as soon as the response event arrives — before the server's end
of stream — the connection could not go back to the pool: almost every call opened a new TCP
connection (315 TIME-WAIT sockets after 320 calls).

Here, as for stdio (:mod:`.lane`), the SDK client keeps the handshake, ``tools/list``, the GET
stream and notifications, and a ``tools/call`` takes the lane: one ``POST`` of a compact JSON-RPC
line with the session id and negotiated protocol version, on one ``httpx.AsyncClient`` per
upstream (HTTP/1.1 keep-alive). The answer is either ``application/json`` or an event stream read
with :class:`SSEDecoder`; the call's response is matched by id, its progress notifications are
forwarded, a ``ping`` from the server is answered and any other server request is declined (the
wrapper offers no sampling or elicitation). Once the response is in, the rest of the stream is read
to its end in the background so the connection is reused. A timeout or the caller's cancellation
sends ``notifications/cancelled``. A 404 on a session means the session expired:
:class:`SessionExpired` tells the supervisor to re-initialize, after which the call is retried once.
Transport failures are connection errors (retryable; the supervisor reconnects).
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
from collections.abc import AsyncIterator, Callable, Coroutine
from typing import Any

import anyio
import httpx

from .lane import (
    _FIRST_ID,
    INVALID_REQUEST,
    METHOD_NOT_FOUND,
    Progress,
    call_message,
    cancel_message,
    connection_closed,
    error_message,
    progress_of,
    result_of,
    rpc_error,
    timed_out,
)

log = logging.getLogger("mcpaql.upstream")

Spawn = Callable[[Callable[[], Coroutine[Any, Any, None]]], None]
_DRAIN_TIMEOUT = 10.0  # seconds to read a stream's end after its response, so the connection is reused
_MAX_EVENT = 256 * 1024 * 1024  # one SSE event's data; results can be large


class SessionExpired(Exception):
    """The upstream answered 404 to a request on our session: re-initialize, then retry."""


class SSEDecoder:
    """Incremental ``text/event-stream`` decoding: bytes in, each event's ``data`` out.

    Lines end with CRLF, LF or CR (also split across chunks); ``data`` lines of one event are
    joined with LF, and an event with empty data is not dispatched; comments and the
    ``event``/``id``/``retry`` fields are skipped (the lane does not resume streams); an event
    left incomplete at the end of the stream is dropped, as the SSE specification says.
    """

    __slots__ = ("_buf", "_data", "_size", "_skip_lf")

    def __init__(self) -> None:
        self._buf = bytearray()
        self._data: list[bytes] = []
        self._size = 0
        self._skip_lf = False

    def feed(self, chunk: bytes) -> list[bytes]:
        buf = self._buf
        buf += chunk
        start, n = 0, len(buf)
        if self._skip_lf and n:
            self._skip_lf = False
            if buf[0] == 0x0A:
                start = 1
        events: list[bytes] = []
        while start < n:
            lf = buf.find(b"\n", start)
            cr = buf.find(b"\r", start, lf if lf >= 0 else n)
            if cr >= 0:
                end, nxt = cr, cr + 1
                if nxt < n and buf[nxt] == 0x0A:
                    nxt += 1
                elif nxt == n:
                    self._skip_lf = True
            elif lf >= 0:
                end, nxt = lf, lf + 1
            else:
                break
            self._line(bytes(buf[start:end]), events)
            start = nxt
        del buf[:start]
        if len(buf) > _MAX_EVENT:
            raise ValueError("event stream line too large")
        return events

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if not line:
            if self._data:
                data = b"\n".join(self._data)
                if data:  # an event whose data is empty is not dispatched (e.g. a priming event)
                    events.append(data)
                self._data, self._size = [], 0
            return
        if line[0] == 0x3A:  # ":" comment
            return
        field, colon, value = line.partition(b":")
        if field != b"data":
            return
        if colon and value[:1] == b" ":
            value = value[1:]
        self._size += len(value)
        if self._size > _MAX_EVENT:
            raise ValueError("event stream event too large")
        self._data.append(value)


class HttpLane:
    """``tools/call`` as direct POSTs on a pooled client (see the module docstring)."""

    def __init__(self, name: str, url: str, headers: dict[str, str] | None, spawn: Spawn) -> None:
        self.name = name
        self.url = url
        self._spawn = spawn
        self._http = httpx.AsyncClient(
            headers=headers,
            timeout=httpx.Timeout(30.0, read=None),  # a tool may run long; call_timeout bounds the call
            limits=httpx.Limits(max_connections=None, max_keepalive_connections=32, keepalive_expiry=30.0),
            follow_redirects=False,
        )
        self._ids = itertools.count(_FIRST_ID)
        self.session_id: str | None = None
        self.protocol_version: str | None = None
        self.on_list_changed: Callable[[], None] | None = None
        self._attached = False
        self.calls = 0  # tools/call requests sent over the lane (diagnostics, tests)

    @property
    def open(self) -> bool:
        return self._attached

    def attach(self, session_id: str | None, protocol_version: str | None) -> None:
        """A new session is ready (after each initialize)."""
        self.session_id, self.protocol_version, self._attached = session_id, protocol_version, True

    def detach(self) -> None:
        self._attached = False

    async def aclose(self) -> None:
        self._attached = False
        await self._http.aclose()

    def _headers(self) -> dict[str, str]:
        h = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
        if self.session_id:
            h["mcp-session-id"] = self.session_id
        if self.protocol_version:
            h["mcp-protocol-version"] = self.protocol_version
        return h

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        progress: Progress | None = None,
        timeout: float | None = None,
        trace: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """The upstream's ``CallToolResult`` as a wire dict; JSON-RPC errors raise ``MCPError``.
        ``trace``: W3C trace context, sent in ``params._meta`` and as HTTP headers (telemetry on)."""
        if not self._attached:
            raise connection_closed("the session is not ready")
        rid = next(self._ids)
        self.calls += 1
        body = call_message(rid, tool, arguments, progress is not None, trace)
        session = self.session_id
        try:
            with anyio.fail_after(timeout) if timeout is not None else contextlib.nullcontext():
                response = await self._post(rid, body, progress, trace)
        except TimeoutError:
            self._cancel(rid, session, "timed out")
            raise timed_out(timeout) from None
        except httpx.TransportError:
            raise connection_closed("the HTTP connection failed") from None
        except anyio.get_cancelled_exc_class():  # cancelled by our caller: tell the upstream, as the SDK does
            self._cancel(rid, session, "cancelled by the client")
            raise
        return result_of(response)

    async def _post(self, rid: int, body: bytes, progress: Progress | None, trace: dict[str, str] | None) -> dict[str, Any]:
        headers = self._headers() if not trace else {**self._headers(), **trace}
        request = self._http.build_request("POST", self.url, content=body, headers=headers)
        response = await self._http.send(request, stream=True)
        handed_off = False
        try:
            status = response.status_code
            ctype = response.headers.get("content-type", "").split(";", 1)[0].strip().lower()
            if status == 404 and self.session_id:
                raise SessionExpired
            if status >= 300:
                raise await self._http_error(response, ctype)
            if ctype == "application/json":
                message = json.loads(await response.aread())
                if isinstance(message, list):  # a batch: find ours
                    message = next((m for m in message if isinstance(m, dict) and m.get("id") == rid), None)
                if not isinstance(message, dict) or message.get("id") != rid:
                    raise error_message(INVALID_REQUEST, "the upstream answered with another request's response")
                return message
            if ctype != "text/event-stream":
                raise error_message(INVALID_REQUEST, f"the upstream answered HTTP {status} without a JSON-RPC response")
            decoder = SSEDecoder()
            chunks = response.aiter_bytes()  # one iterator: the drain goes on where the call stopped
            async for chunk in chunks:
                for data in decoder.feed(chunk):
                    message = json.loads(data)
                    if isinstance(message, dict) and message.get("id") == rid and "method" not in message:
                        with contextlib.suppress(RuntimeError):  # closing: the response is closed below
                            self._spawn(lambda: _drain(response, chunks, decoder))
                            handed_off = True
                        return message
                    await self._other(message, rid, progress)
            raise connection_closed("the event stream ended without a response")
        finally:
            if not handed_off:
                await response.aclose()

    async def _http_error(self, response: httpx.Response, ctype: str) -> Exception:
        """A JSON-RPC error in the body when there is one, else the status alone (never the body)."""
        if ctype == "application/json":
            with contextlib.suppress(ValueError, httpx.HTTPError):
                message = json.loads(await response.aread())
                if isinstance(message, dict) and isinstance(message.get("error"), dict):
                    return rpc_error(message["error"])
        if response.status_code in (502, 503, 504):  # the upstream is down behind its proxy: reconnect
            return connection_closed(f"HTTP {response.status_code}")
        if 300 <= response.status_code < 400:
            return error_message(INVALID_REQUEST, f"the upstream redirected (HTTP {response.status_code}); not followed")
        return error_message(-32000, f"the upstream answered HTTP {response.status_code}")

    async def _other(self, message: Any, rid: int, progress: Progress | None) -> None:
        """A message on our stream that is not our response."""
        if not isinstance(message, dict):
            return
        method = message.get("method")
        raw_params = message.get("params")
        params: dict[str, Any] = raw_params if isinstance(raw_params, dict) else {}
        if method == "notifications/progress":
            if progress is not None and params.get("progressToken") == rid:
                try:
                    await progress(*progress_of(params))
                except Exception as e:  # a client that went away must not break the call
                    log.debug("upstream %s: progress not forwarded: %s", self.name, e)
        elif method == "notifications/tools/list_changed":
            if self.on_list_changed is not None:
                self.on_list_changed()
        elif isinstance(method, str) and "id" in message:  # a server request tied to this call
            reply: dict[str, Any] = {"jsonrpc": "2.0", "id": message["id"]}
            if method == "ping":
                reply["result"] = {}
            else:
                reply["error"] = {"code": METHOD_NOT_FOUND, "message": f"the wrapper does not support {method}"}
            self._send_later(json.dumps(reply, separators=(",", ":")).encode())

    def _cancel(self, rid: int, session: str | None, reason: str) -> None:
        if self._attached and session == self.session_id:
            self._send_later(cancel_message(rid, reason))

    def _send_later(self, body: bytes) -> None:
        """POST a notification or response in the background (the caller must not wait for it)."""
        headers = self._headers()

        async def send() -> None:
            with contextlib.suppress(Exception):
                await self._http.post(self.url, content=body, headers=headers)

        with contextlib.suppress(RuntimeError):  # the supervisor's task group is closing
            self._spawn(send)


async def _drain(response: httpx.Response, chunks: AsyncIterator[bytes], decoder: SSEDecoder) -> None:
    """Read a stream to its end after its response, so its connection goes back to the pool."""
    try:
        with anyio.move_on_after(_DRAIN_TIMEOUT):
            async for chunk in chunks:
                decoder.feed(chunk)
    except Exception as e:
        log.debug("event stream not drained: %s", e)
    finally:
        await response.aclose()
