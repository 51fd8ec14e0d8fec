"""The stdio transport to an upstream server, with a direct lane for ``tools/call``.

Why this exists: a proxy pays two stdio hops per call where a direct client pays one. With the
SDK's ``stdio_client`` + ``ClientSession`` each request goes through pydantic models, two
memory-object streams and four tasks on the way out and back; for the one request a proxy
makes thousands of times that machinery was most of ``mcpaql wrap``'s own cost per call
(``bench/bench_wrap_latency.py``). Here the process is spawned under the reaper shim
(:mod:`mcpaql.reaper`: its own process group, killed with the wrapper however the wrapper ends)
with the SDK's default environment, and the SDK :class:`mcp.Client` still drives everything
else — the initialize handshake, ``tools/list``, notifications, the upstream's own requests —
through ordinary streams. A ``tools/call`` sent with :meth:`Lane.call` is written straight to
the pipe, and its response is matched by id *before* any model parsing and resolves a future;
so do its progress notifications. Nothing else changes on the wire.

Shutdown (:func:`_stop`, about 1.5 s at most, inside the 2 s an MCP client waits before it
signals the wrapper): close the upstream's stdin and wait :data:`_GRACE`; then SIGTERM the shim,
which SIGTERMs the upstream's process group and SIGKILLs it :data:`mcpaql.reaper.TERM_GRACE`
later; a shim that does not answer is killed, and its parent-death signal takes the upstream.

Only on POSIX and asyncio (anyio's default backend); elsewhere, or with ``MCPAQL_UPSTREAM_LANE=0``,
:func:`lane_available` is false and the caller uses the SDK transport (still under the shim).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any, cast

import anyio
import mcp_types as types
from mcp import MCPError, StdioServerParameters
from mcp.client.stdio import get_default_environment
from mcp.shared.message import SessionMessage

from .. import reaper
from ..config import settings

log = logging.getLogger("mcpaql.upstream")

Progress = Callable[[float, float | None, str | None], Awaitable[None]]

# Lane request ids live far above the SDK's own counter (which starts at 0) and below 2**53,
# so a JavaScript upstream echoes them exactly.
_FIRST_ID = 1 << 40
_LINE_LIMIT = 256 * 1024 * 1024  # one JSON-RPC message per line; results can be large
_GRACE = 1.0  # seconds for the upstream to exit after its stdin closes, before it is signalled
_SHIM_TIMEOUT = reaper.TERM_GRACE + 0.5  # for the shim to take the group down after SIGTERM


class InvalidResult(ValueError):
    """The upstream answered ``tools/call`` with something that is not a result (message is safe to show)."""


def lane_available() -> bool:
    """True when this process can run the direct lane (POSIX, asyncio event loop).

    ``MCPAQL_UPSTREAM_LANE=0`` turns it off (the SDK transports then carry every call), to rule
    the lanes out when diagnosing an upstream.
    """
    if sys.platform == "win32" or not settings().upstream_lane:
        return False
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class _Pending:
    __slots__ = ("future", "progress")

    def __init__(self, future: asyncio.Future[dict[str, Any]], progress: Progress | None) -> None:
        self.future = future
        self.progress = progress


class Lane:
    """``tools/call`` straight over the upstream's pipes (see the module docstring)."""

    def __init__(self, name: str) -> None:
        self.name = name
        self._ids = itertools.count(_FIRST_ID)
        self._pending: dict[int, _Pending] = {}
        self._stdin: asyncio.StreamWriter | None = None
        self._closed: str | None = "not connected"
        self.pid: int | None = None  # the reaper shim's pid (the upstream is its child)
        self.calls = 0  # tools/call requests sent over the lane (diagnostics, tests)

    @property
    def open(self) -> bool:
        return self._closed is None

    def _attach(self, stdin: asyncio.StreamWriter) -> None:
        self._stdin = stdin
        self._closed = None

    def _close(self, why: str) -> None:
        """The pipe is gone: every call in flight fails as a closed connection."""
        if self._closed is None:
            self._closed = why
        pending, self._pending = self._pending, {}
        for p in pending.values():
            if not p.future.done():
                p.future.set_exception(connection_closed(why))

    async def call(
        self,
        tool: str,
        arguments: dict[str, Any],
        *,
        progress: Progress | None = None,
        timeout: float | None = None,
        trace: dict[str, str] | None = None,
    ) -> dict[str, Any]:
        """The upstream's ``CallToolResult`` as a wire dict; JSON-RPC errors raise :class:`MCPError`.
        ``trace``: W3C trace context for ``params._meta`` (telemetry on)."""
        if self._closed is not None or self._stdin is None or self._stdin.is_closing():
            raise connection_closed(self._closed or "the pipe is closing")
        rid = next(self._ids)
        self.calls += 1
        line = call_message(rid, tool, arguments, progress is not None, trace) + b"\n"
        future: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
        self._pending[rid] = _Pending(future, progress)
        stdin = self._stdin
        try:
            stdin.write(line)
            await stdin.drain()
            if timeout is None:
                response = await future
            else:
                with anyio.fail_after(timeout):
                    response = await future
        except TimeoutError:
            self._cancel(rid, "timed out")
            raise timed_out(timeout) from None
        except (ConnectionError, OSError, RuntimeError):
            # RuntimeError: the event loop's pipe transport is already closed (its message is a repr)
            self._close("the upstream's input pipe is closed")
            raise connection_closed(self._closed) from None
        except BaseException:  # cancelled by our caller: tell the upstream, as the SDK does
            self._cancel(rid, "cancelled by the client")
            raise
        finally:
            self._pending.pop(rid, None)
        return result_of(response)

    def _cancel(self, rid: int, reason: str) -> None:
        if self._closed is not None or self._stdin is None or self._stdin.is_closing():
            return
        with contextlib.suppress(Exception):
            self._stdin.write(cancel_message(rid, reason) + b"\n")

    def take(self, message: Any) -> bool:
        """Consume ``message`` (a decoded JSON-RPC dict) if it belongs to a lane call."""
        if not isinstance(message, dict):
            return False
        rid = message.get("id")
        if rid is not None and "method" not in message:
            pending = self._pending.get(rid) if isinstance(rid, int) else None
            if pending is None:
                return False
            if not pending.future.done():
                pending.future.set_result(message)
            return True
        if message.get("method") == "notifications/progress":
            params = message.get("params")
            token = params.get("progressToken") if isinstance(params, dict) else None
            pending = self._pending.get(token) if isinstance(token, int) else None
            if pending is None:
                return False
            if pending.progress is not None:
                # a pending call was found by a token read from params, so params is a dict
                params = cast(dict[str, Any], params)
                asyncio.get_running_loop().create_task(self._report(pending.progress, *progress_of(params)))
            return True
        return False

    async def _report(self, progress: Progress, p: float, total: float | None, message: str | None) -> None:
        try:
            await progress(p, total, message)
        except Exception as e:  # a client that went away must not break the upstream connection
            log.debug("upstream %s: progress not forwarded: %s", self.name, e)


# ---- the JSON-RPC messages of a lane call (shared by the stdio and HTTP lanes) ----------------


def call_message(
    rid: int, tool: str, arguments: dict[str, Any], with_progress: bool, trace: dict[str, str] | None = None
) -> bytes:
    """A compact ``tools/call`` request; its progress token is its id; ``trace`` (``traceparent``,
    ``tracestate``) goes into ``_meta`` unprefixed, as the MCP trace-context convention says."""
    params: dict[str, Any] = {"name": tool, "arguments": arguments}
    if with_progress or trace:
        params["_meta"] = {**(trace or {}), **({"progressToken": rid} if with_progress else {})}
    message = {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode()


def cancel_message(rid: int, reason: str) -> bytes:
    note = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid, "reason": reason}}
    return json.dumps(note, separators=(",", ":")).encode()


def result_of(response: dict[str, Any]) -> dict[str, Any]:
    """The ``CallToolResult`` of a JSON-RPC response; a JSON-RPC error raises :class:`MCPError`."""
    if "error" in response:
        raise rpc_error(response["error"])
    result = response.get("result")
    if not isinstance(result, dict):
        raise InvalidResult("tools/call result is not an object")
    return result


def rpc_error(error: Any) -> MCPError:
    err = error if isinstance(error, dict) else {}
    code = err.get("code")
    return MCPError(code if isinstance(code, int) else types.INTERNAL_ERROR, str(err.get("message", "error")), err.get("data"))


def progress_of(params: dict[str, Any]) -> tuple[float, float | None, str | None]:
    p, total, msg = params.get("progress"), params.get("total"), params.get("message")
    return (
        p if isinstance(p, int | float) else 0.0,
        total if isinstance(total, int | float) else None,
        msg if isinstance(msg, str) else None,
    )


def connection_closed(why: str | None) -> MCPError:
    return MCPError(types.CONNECTION_CLOSED, f"Connection closed: {why}")


def timed_out(timeout: float | None) -> MCPError:
    return MCPError(types.REQUEST_TIMEOUT, f"Timed out while waiting for response to tools/call after {timeout} seconds")


def error_message(code: int, message: str) -> MCPError:
    return MCPError(code, message)


INVALID_REQUEST = types.INVALID_REQUEST
METHOD_NOT_FOUND = types.METHOD_NOT_FOUND
INTERNAL_ERROR = types.INTERNAL_ERROR


@contextlib.asynccontextmanager
async def lane_stdio_client(server: StdioServerParameters, lane: Lane) -> AsyncIterator[tuple[Any, Any]]:
    """An SDK ``Transport`` over a spawned upstream whose ``tools/call`` may also use ``lane``."""
    env = get_default_environment() | (server.env or {})
    argv = reaper.guarded(server.command, server.args, env, server.cwd)
    proc = await asyncio.create_subprocess_exec(
        *argv,
        env=env,
        cwd=server.cwd,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        start_new_session=True,
        limit=_LINE_LIMIT,
    )
    reaper.track(proc.pid)
    lane.pid = proc.pid
    assert proc.stdin is not None and proc.stdout is not None
    stdin, stdout = proc.stdin, proc.stdout
    read_send, read_recv = anyio.create_memory_object_stream[SessionMessage | Exception](0)
    write_send, write_recv = anyio.create_memory_object_stream[SessionMessage](0)
    lane._attach(stdin)

    async def reader() -> None:
        why = "the upstream closed its output"
        try:
            async with read_send:
                while True:
                    try:
                        line = await stdout.readline()
                    except ValueError:  # a line over the limit: skip it, as a parse error
                        await read_send.send(ValueError("message from the upstream too large"))
                        continue
                    if not line:
                        return
                    if not line.strip():
                        continue
                    try:
                        raw = json.loads(line)
                    except ValueError as e:
                        log.warning("upstream %s: invalid JSON-RPC line: %s", lane.name, e)
                        await read_send.send(e)
                        continue
                    if lane.take(raw):
                        continue
                    try:
                        message = types.jsonrpc_message_adapter.validate_python(raw, by_name=False)
                    except ValueError as e:
                        await read_send.send(e)
                        continue
                    await read_send.send(SessionMessage(message))
        except (anyio.ClosedResourceError, anyio.BrokenResourceError):
            why = "the client session ended"
        except (ConnectionError, OSError) as e:
            why = str(e) or type(e).__name__
        finally:
            lane._close(why)

    async def writer() -> None:
        try:
            async with write_recv:
                async for session_message in write_recv:
                    data = session_message.message.model_dump_json(by_alias=True, exclude_unset=True)
                    stdin.write(data.encode() + b"\n")
                    await stdin.drain()
        except (anyio.ClosedResourceError, anyio.BrokenResourceError, ConnectionError, OSError):
            await read_send.aclose()

    async with anyio.create_task_group() as tg:
        tg.start_soon(reader)
        tg.start_soon(writer)
        try:
            yield read_recv, write_send
        finally:
            with anyio.CancelScope(shield=True):
                lane._close("the connection is closing")
                await _stop(proc, lane.name)
                for s in (read_recv, write_send, write_recv, read_send):
                    await s.aclose()
            tg.cancel_scope.cancel()


async def _stop(proc: asyncio.subprocess.Process, name: str) -> None:
    """The shutdown sequence of the module docstring: EOF, then SIGTERM via the shim, then SIGKILL."""
    if proc.stdin is not None:
        with contextlib.suppress(Exception):
            proc.stdin.close()
    if not await _exited(proc, _GRACE):
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)  # the shim: SIGTERM to the group, SIGKILL after TERM_GRACE
        if not await _exited(proc, _SHIM_TIMEOUT):
            with contextlib.suppress(OSError):
                os.killpg(proc.pid, signal.SIGKILL)  # the shim's own group; its child dies with it
            if not await _exited(proc, 0.5):
                log.warning("upstream %s: process %d survived the kill; abandoning it", name, proc.pid)
    reaper.untrack(proc.pid)
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        with contextlib.suppress(Exception):
            transport.close()


async def _exited(proc: asyncio.subprocess.Process, timeout: float) -> bool:
    """Whether the process exited within ``timeout`` (polled: ``proc.wait()`` would also wait for
    the pipes, which a grandchild may still hold)."""
    with anyio.move_on_after(timeout):
        while proc.returncode is None:
            await anyio.sleep(0.01)
    return proc.returncode is not None
