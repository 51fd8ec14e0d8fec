"""stdin/stdout as event-loop pipes for the SDK's ``stdio_server``.

The SDK reads and writes stdio through ``anyio.wrap_file``, which runs every readline, write
and flush in a worker thread: three thread hops per message, most of a stdio round trip's
cost in a proxy such as ``mcpaql wrap`` that pays for two hops. When fd 0 and fd 1 are pipes
or sockets (how every MCP client launches a server) we register them with the event loop
instead. Like the SDK, we first *claim* the descriptors: the wire moves to private duplicates
while fd 0 reads the null device and fd 1 points at stderr, so a handler's ``print`` or a
child process can never corrupt the protocol stream. Anything else (a regular file, a TTY
the loop cannot watch) returns ``None`` and the caller uses the SDK's own streams.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import stat
from collections.abc import AsyncIterator
from typing import Any

_WATCHABLE = (stat.S_ISFIFO, stat.S_ISSOCK)


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


class PipeLines:
    """``async for line in stdin`` over a pipe, without threads (what ``stdio_server`` reads)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class PipeWriter:
    """``await write(text)`` / ``await flush()`` over a pipe transport (buffered, non-blocking)."""

    def __init__(self, transport: asyncio.WriteTransport, protocol: Any) -> None:
        self._transport = transport
        self._writer = asyncio.StreamWriter(transport, protocol, None, asyncio.get_running_loop())

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@contextlib.asynccontextmanager
async def event_loop_stdio() -> AsyncIterator[tuple[PipeLines, PipeWriter] | None]:
    """Claim fds 0/1 and yield loop-driven streams over them, or ``None`` if they cannot be watched."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:  # another async backend (trio): the SDK's own streams work there
        loop = None
    # The loop makes the wire non-blocking; if stderr is the same pipe as stdout (2>&1) that
    # would make log writes fail when the pipe is full, so such setups keep the SDK's streams.
    if loop is None or not (_watchable(0) and _watchable(1)) or _same_file(1, 2):
        yield None
        return
    wire_in = os.dup(0)
    wire_out = os.dup(1)
    saved_in, saved_out = os.dup(0), os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)  # handlers and children read EOF …
    os.close(devnull)
    os.dup2(2, 1)  # … and their stray output goes to stderr, never onto the wire
    in_file = os.fdopen(wire_in, "rb", buffering=0)
    out_file = os.fdopen(wire_out, "wb", buffering=0)
    read_transport = write_transport = None
    try:
        reader = asyncio.StreamReader(limit=64 * 1024 * 1024, loop=loop)
        read_transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), in_file)
        write_transport, write_protocol = await loop.connect_write_pipe(
            lambda: asyncio.streams.FlowControlMixin(loop=loop), out_file
        )
        yield PipeLines(reader), PipeWriter(write_transport, write_protocol)
    finally:
        for t in (read_transport, write_transport):
            if t is not None:
                t.close()
        for f in (in_file, out_file):
            with contextlib.suppress(OSError):
                f.close()
        for saved in (saved_in, saved_out):  # the loop set O_NONBLOCK on the shared descriptions
            with contextlib.suppress(OSError):
                os.set_blocking(saved, True)
        os.dup2(saved_in, 0)
        os.dup2(saved_out, 1)
        os.close(saved_in)
        os.close(saved_out)
