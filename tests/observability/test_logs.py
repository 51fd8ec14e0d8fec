"""Logs: quiet by default (no per-request lines from a stateless HTTP server), and one JSON object
per line with ``--log-format json`` (with the active span's ids)."""

from __future__ import annotations

import json
import logging
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpaql.mcp import connect
from mcpaql.observability.logs import JsonFormatter

MCPAQL = [sys.executable, "-m", "mcpaql.cli"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def serve_and_call(tmp_path: Path, *flags: str, env: dict[str, str] | None = None, calls: int = 3) -> list[str]:
    """``mcpaql serve --transport http --stateless`` (the demo), a few calls with the official
    client, then SIGINT: the server's stderr lines."""
    port = free_port()
    full_env = {
        **os.environ,
        "MCPAQL_HOME": str(tmp_path),
        "MCPAQL_DEMO_DB": str(tmp_path / "demo.db"),
        "PYTHONUNBUFFERED": "1",
        **(env or {}),
    }
    for k in [k for k in full_env if k.startswith("OTEL_")]:
        if k not in (env or {}):
            del full_env[k]
    proc = subprocess.Popen(
        [*MCPAQL, "serve", "--transport", "http", "--stateless", "--port", str(port), *flags],
        env=full_env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while socket.socket().connect_ex(("127.0.0.1", port)) != 0:
            assert proc.poll() is None and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.05)

        async def client() -> None:
            async with connect(f"http://127.0.0.1:{port}/mcp") as c:
                tool = next(t["name"] for t in await c.list_tools_raw() if t["name"].endswith("_read"))
                for _ in range(calls):
                    body, is_error, _raw = await c.call_tool(tool, {"operation": "introspect", "params": {"query": "operations"}})
                    assert not is_error, body

        anyio.run(client)
    finally:
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    return [line for line in err.splitlines() if line.strip()]


def test_a_stateless_http_server_logs_nothing_per_request_at_the_default_level(tmp_path: Path) -> None:
    lines = serve_and_call(tmp_path)
    assert len(lines) == 1 and lines[0].startswith("serving Task Tracker on http://127.0.0.1:"), lines  # only the start line
    assert not any("Terminating session" in line for line in lines)


def test_log_format_json_writes_one_object_per_line(tmp_path: Path) -> None:
    env = {"OTEL_TRACES_EXPORTER": "none", "OTEL_METRICS_EXPORTER": "none"}  # telemetry on, exported nowhere
    lines = serve_and_call(tmp_path, "--log-format", "json", "--otel", env=env)
    assert lines
    objects = [json.loads(line) for line in lines]  # every line is JSON
    assert objects[0]["message"].startswith("serving Task Tracker on http://") and objects[0]["level"] == "INFO"
    for o in objects:
        assert {"timestamp", "level", "logger", "message"} <= set(o)
        assert o["timestamp"].endswith("Z")


def record(msg: str, *args: Any, name: str = "mcpaql.test", exc: Any = None) -> logging.LogRecord:
    return logging.LogRecord(name, logging.WARNING, __file__, 1, msg, args, exc)


def test_json_lines_carry_the_active_span_ids() -> None:
    from opentelemetry.sdk.trace import TracerProvider

    fmt = JsonFormatter()
    outside = json.loads(fmt.format(record("before %s", "x")))
    assert outside["message"] == "before x" and "trace_id" not in outside
    tracer = TracerProvider().get_tracer("test")  # not the global provider: this process keeps its own
    with tracer.start_as_current_span("work") as span:
        inside = json.loads(fmt.format(record("inside")))
        ctx = span.get_span_context()
    assert inside["trace_id"] == format(ctx.trace_id, "032x") and inside["span_id"] == format(ctx.span_id, "016x")
    assert inside["level"] == "WARNING" and inside["logger"] == "mcpaql.test"


def test_exceptions_are_one_field_of_one_line() -> None:
    try:
        raise ValueError("boom\nsecond line")
    except ValueError:
        line = JsonFormatter().format(record("failed", exc=sys.exc_info()))
    assert "\n" not in line
    parsed = json.loads(line)
    assert "ValueError: boom" in parsed["exception"] and parsed["message"] == "failed"


@given(st.text(), st.text(min_size=1, max_size=40))
def test_any_message_is_exactly_one_json_line(message: str, name: str) -> None:
    line = JsonFormatter().format(record("%s", message, name=name))
    assert "\n" not in line and "\r" not in line
    parsed = json.loads(line)
    assert parsed["message"] == message and parsed["logger"] == name


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_uvicorn_logs_in_the_same_format(fmt: str) -> None:
    from mcpaql.mcp.transports import LOG_FORMAT, uvicorn_log_config

    plain = uvicorn_log_config("warning", fmt)["formatters"]["plain"]
    assert plain == ({"()": "mcpaql.observability.logs.JsonFormatter"} if fmt == "json" else {"format": LOG_FORMAT})
