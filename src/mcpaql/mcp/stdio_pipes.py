"""stdin/stdout for the SDK's ``stdio_server``: claimed, framed, and drained at EOF.

Three jobs, all on the wire side of the SDK (whose own streams decode with
``errors="replace"``, read lines of any length, and cancel in-flight requests at EOF):

* **Claim** fds 0/1 like the SDK does: the wire moves to private duplicates while fd 0 reads
  the null device and fd 1 points at stderr, so a handler's ``print`` or a child process can
  never corrupt the protocol stream.
* **Frame** (:mod:`.framing`): every line is bounded (the request size limit's worst-case
  wire length), strict UTF-8, and a refused line is answered here with a structured error —
  the server keeps serving.
* **Drain**: every request read before EOF is answered before the SDK learns of the EOF.
  Its dispatcher cancels handlers still running at end of input, so the last request of a
  piped batch used to run but never be answered. :class:`AnswerLedger` counts requests in
  and answers out (on the SDK's public stream interface) and holds EOF back until they match
  or ``MCPAQL_STDIO_DRAIN_SECONDS`` (:class:`mcpaql.config.Settings`) pass (the client has hung up;
  it will not wait for ever either).

When fds 0 and 1 are pipes or sockets (how every MCP client launches a server) they are
registered with the event loop: the SDK's ``anyio.wrap_file`` costs three thread hops per
message, most of a stdio round trip in a proxy such as ``mcpaql wrap``. Anything else (a
regular file, a TTY, trio) is read and written from a worker thread.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import stat
from collections import Counter, deque
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, Protocol, cast

import anyio

from ..config import settings
from .framing import Frame, Line, LineFramer, encode, refuse_frame

log = logging.getLogger("mcpaql.mcp.stdio")

_WATCHABLE = (stat.S_ISFIFO, stat.S_ISSOCK)
CHUNK = 64 * 1024


def _same_file(a: int, b: int) -> bool:
    try:
        sa, sb = os.fstat(a), os.fstat(b)
    except OSError:
        return True
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def _watchable(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return any(test(mode) for test in _WATCHABLE)


class WireWriter(Protocol):
    async def write(self, text: str) -> None: ...

    async def flush(self) -> None: ...

    async def write_line(self, data: bytes) -> None: ...


class PipeWriter:
    """``await write(text)`` / ``await flush()`` over a pipe transport (buffered, non-blocking).
    Each write hands a whole line to the transport at once, so lines never interleave."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: Any) -> None:
        self._writer = asyncio.StreamWriter(transport, protocol, None, asyncio.get_running_loop())

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()

    async def write_line(self, data: bytes) -> None:
        self._writer.write(data)
        await self._writer.drain()


class ThreadWriter:
    """The same over a blocking descriptor, one worker-thread write per line (under a lock)."""

    def __init__(self, fd: int) -> None:
        self._fd = fd
        self._lock = anyio.Lock()

    def _write_all(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    async def write(self, text: str) -> None:
        await self.write_line(text.encode("utf-8"))

    async def flush(self) -> None:
        return None

    async def write_line(self, data: bytes) -> None:
        async with self._lock:
            await anyio.to_thread.run_sync(self._write_all, data)


class WireLines:
    """``async for line in stdin`` (what ``stdio_server`` reads): strict UTF-8 lines of bounded
    length; refused lines are answered through ``writer`` and never reach the SDK."""

    def __init__(self, read_chunk: Callable[[], Awaitable[bytes]], writer: WireWriter, limit: int) -> None:
        self._read = read_chunk
        self._writer = writer
        self._limit = limit
        self._framer = LineFramer(limit)
        self._ready: deque[Frame] = deque()
        self._eof = False

    @property
    def at_eof(self) -> bool:
        return self._eof

    def __aiter__(self) -> WireLines:
        return self

    async def __anext__(self) -> str:
        while True:
            while self._ready:
                frame = self._ready.popleft()
                refused = refuse_frame(frame, self._limit)
                if refused is None:
                    line = cast(Line, frame)  # refuse_frame refuses every Overlong: this is a Line
                    if line.data.strip():
                        return line.data.decode("utf-8")
                    continue
                error, answer = refused
                log.warning("stdio: refused a message (%s)%s", error.code, "" if answer else "; no id to answer")
                if answer is not None:
                    await self._writer.write_line(encode(answer))
            if self._eof:
                raise StopAsyncIteration
            chunk = await self._read()
            if chunk:
                self._ready.extend(self._framer.feed(chunk))
            else:
                self._eof = True
                self._ready.extend(self._framer.eof())


class AnswerLedger:
    """Requests read minus answers written, by JSON-RPC id; :meth:`drained` waits for zero.

    Fed from the SDK's public stream types (``SessionMessage.message`` is a JSON-RPC request,
    notification, response or error): a request adds its id, a response or error for that id
    removes it, and ``notifications/cancelled`` removes the id it names (a cancelled request
    is never answered).
    """

    def __init__(self) -> None:
        self._open: Counter[Any] = Counter()
        self._changed = anyio.Event()

    def _key(self, rid: Any) -> Any:
        return (type(rid).__name__, rid)

    def inbound(self, item: Any) -> None:
        msg = getattr(item, "message", None)
        method = getattr(msg, "method", None)
        if method is None:
            return
        rid = getattr(msg, "id", None)
        if rid is not None:
            self._open[self._key(rid)] += 1
        elif method == "notifications/cancelled":
            params = getattr(msg, "params", None) or {}
            self._close(params.get("requestId") if isinstance(params, dict) else None)

    def outbound(self, item: Any) -> None:
        msg = getattr(item, "message", None)
        if msg is not None and getattr(msg, "method", None) is None:
            self._close(getattr(msg, "id", None))

    def _close(self, rid: Any) -> None:
        key = self._key(rid)
        if self._open.get(key):
            self._open[key] -= 1
            if not self._open[key]:
                del self._open[key]
            self._changed.set()
            self._changed = anyio.Event()

    @property
    def pending(self) -> int:
        return sum(self._open.values())

    async def drained(self, timeout: float | None = None) -> None:
        """Wait until every request read has been answered, at most ``timeout`` seconds
        (default: ``MCPAQL_STDIO_DRAIN_SECONDS``, read now so a changed environment is obeyed)."""
        if timeout is None:
            timeout = settings().stdio_drain_seconds
        with anyio.move_on_after(timeout):
            while self._open:
                await self._changed.wait()
        if self._open:
            log.warning(
                "stdio: input closed with %d request(s) still running after %.0f s; they are cancelled", self.pending, timeout
            )


class DrainingReceive:
    """The SDK's read stream, recording requests and holding EOF until the ledger drains."""

    def __init__(self, inner: Any, ledger: AnswerLedger) -> None:
        self._inner = inner
        self._ledger = ledger

    @property
    def last_context(self) -> Any:  # the SDK reads the sender's contextvars from here
        return getattr(self._inner, "last_context", None)

    def __getattr__(self, name: str) -> Any:  # anything else a later SDK uses: the stream's own
        return getattr(self._inner, name)

    async def receive(self) -> Any:
        try:
            item = await self._inner.receive()
        except anyio.EndOfStream:
            await self._ledger.drained()
            raise
        self._ledger.inbound(item)
        return item

    def __aiter__(self) -> DrainingReceive:
        return self

    async def __anext__(self) -> Any:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> DrainingReceive:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class LedgerSend:
    """The SDK's write stream, recording answers as they are sent."""

    def __init__(self, inner: Any, ledger: AnswerLedger) -> None:
        self._inner = inner
        self._ledger = ledger

    async def send(self, item: Any) -> None:
        await self._inner.send(item)
        self._ledger.outbound(item)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    def close(self) -> None:
        self._inner.close()

    async def aclose(self) -> None:
        await self._inner.aclose()

    async def __aenter__(self) -> LedgerSend:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


def drained_streams(read_stream: Any, write_stream: Any) -> tuple[DrainingReceive, LedgerSend]:
    ledger = AnswerLedger()
    return DrainingReceive(read_stream, ledger), LedgerSend(write_stream, ledger)


@contextlib.asynccontextmanager
async def claimed_stdio(limit: int) -> AsyncIterator[tuple[WireLines, WireWriter]]:
    """Claim fds 0/1 and yield (lines, writer) over private duplicates of them."""
    try:
        loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
    except RuntimeError:  # another async backend (trio): worker threads work there
        loop = None
    # The loop makes the wire non-blocking; if stderr is the same pipe as stdout (2>&1) that
    # would make log writes fail when the pipe is full, so such setups use threads.
    use_loop = loop is not None and _watchable(0) and _watchable(1) and not _same_file(1, 2)
    wire_in, wire_out = os.dup(0), os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # handlers and children read EOF …
    os.close(devnull)
    os.dup2(2, 1)  # … and their stray output goes to stderr, never onto the wire
    in_file = os.fdopen(wire_in, "rb", buffering=0)
    out_file = os.fdopen(wire_out, "wb", buffering=0)
    read_transport = write_transport = None
    keep_open = False
    try:
        if use_loop:
            assert loop is not None
            reader = asyncio.StreamReader(limit=CHUNK, loop=loop)  # pauses the pipe beyond 2 × CHUNK
            read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), in_file)
            write_transport, write_protocol = await loop.connect_write_pipe(
                lambda: asyncio.streams.FlowControlMixin(loop=loop), out_file
            )
            writer: WireWriter = PipeWriter(write_transport, write_protocol)
            yield WireLines(lambda: reader.read(CHUNK), writer, limit), writer
        else:
            thread_writer = ThreadWriter(wire_out)

            async def read_chunk() -> bytes:
                return await anyio.to_thread.run_sync(os.read, wire_in, CHUNK, abandon_on_cancel=True)

            thread_lines = WireLines(read_chunk, thread_writer, limit)
            yield thread_lines, thread_writer
            # A worker thread may still block reading the wire (we were cancelled before EOF):
            # its descriptor must stay open, or the number could be reused under it.
            keep_open = not thread_lines.at_eof
    finally:
        for t in (read_transport, write_transport):
            if t is not None:
                t.close()
        for f in (out_file,) if keep_open else (in_file, out_file):
            with contextlib.suppress(OSError):
                f.close()
        for saved in (saved_in, saved_out):  # the loop set O_NONBLOCK on the shared descriptions
            with contextlib.suppress(OSError):
                os.set_blocking(saved, True)
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
