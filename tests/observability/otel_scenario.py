"""Traced calls through real components, in a process of their own (OpenTelemetry's global
providers can be set once per process, and the MCP SDK's spans use them): the test runs this
script and reads what it wrote.

``python otel_scenario.py OUT.json`` installs the SDK's in-memory span exporter and metric reader
as the global providers and a JSON log handler on the root logger, then, with the official MCP
client (in-process transport) against mcpaql's server built with telemetry:

1. a wrapped replay upstream over **stdio** (the stdio lane), recording the ``_meta`` it receives;
2. a wrapped replay upstream over **streamable HTTP** (the HTTP lane), recording ``_meta`` and headers;
3. an **OpenAPI** target: a starlette app on uvicorn recording the request headers;
4. mcpaql's own **HTTP** app (stateless) on uvicorn, called with a raw POST carrying only a
   ``traceparent`` *header* (no ``_meta``), as a tracing proxy in front would; then with both.

Every call puts :data:`SECRET` in its parameters. OUT.json gets the finished spans, the metric
points, the log lines, what each upstream recorded, and the ids the test needs.
"""

from __future__ import annotations

import io
import json
import logging
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
import httpx
import uvicorn
from mcp.client.client import Client
from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mcpaql import Adapter, Config
from mcpaql.adapters.openapi import serve_openapi
from mcpaql.adapters.upstream.runtime import UpstreamSpec
from mcpaql.adapters.upstream.wrap import wrap
from mcpaql.mcp.replay import argv_for
from mcpaql.mcp.server import build_server
from mcpaql.mcp.transports import configure_logging, http_app
from mcpaql.observability.telemetry import Telemetry

SECRET = "sk-live-9f8e7d6c5b4a3210SECRETVALUE"
TIME = Path(__file__).resolve().parents[3] / "shared" / "fixtures" / "surfaces" / "mcp-server-time.tools-list.json"
HEADER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
HEADER_SPAN = "00f067aa0ba902b7"
META_TRACE = "0af7651916cd43dd8448eb211c80319c"
META_SPAN = "b7ad6b7169203331"

app = Adapter("obs", display_name="Observed")


@app.read
def echo(text: str) -> dict[str, Any]:
    """Echo a text."""
    return {"length": len(text)}


PETSTORE = {
    "openapi": "3.0.3",
    "info": {"title": "Pets", "version": "1.0.0"},
    "paths": {
        "/pets/{petId}": {
            "get": {
                "operationId": "getPet",
                "summary": "Get a pet",
                "parameters": [
                    {"name": "petId", "in": "path", "required": True, "schema": {"type": "string"}},
                    {"name": "note", "in": "query", "schema": {"type": "string"}},
                ],
                "responses": {"200": {"description": "a pet", "content": {"application/json": {"schema": {"type": "object"}}}}},
            }
        }
    },
}


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_port(port: int, proc: subprocess.Popen[bytes] | None = None) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        assert proc is None or proc.poll() is None, "the server exited"
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise AssertionError("the server did not listen")


async def uvicorn_task(tg: Any, asgi: Any, port: int) -> uvicorn.Server:
    server = uvicorn.Server(uvicorn.Config(asgi, host="127.0.0.1", port=port, log_level="warning", lifespan="on"))
    tg.start_soon(server.serve)
    while not server.started:
        await anyio.sleep(0.02)
    return server


def tool_for(server_engine: Any, operation: str) -> str:
    op = server_engine.registry.get(operation)
    return str(server_engine.tool_for_family.get(op.family) or server_engine.single_tool)


async def call_through(holder: Any, telemetry: Telemetry, operation: str, params: dict[str, Any]) -> dict[str, Any]:
    """One tools/call with the official client over the SDK's in-process transport."""
    server = build_server(holder, telemetry=telemetry)
    async with Client(server, mode="legacy") as client:
        result = await client.call_tool(tool_for(holder.engine, operation), {"operation": operation, "params": params})
    return json.loads(result.content[0].text)


def records(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


async def scenario(out: dict[str, Any], tmp: Path) -> None:
    telemetry = Telemetry()
    # 1. stdio upstream (the stdio lane)
    rec = tmp / "stdio.jsonl"
    spec = UpstreamSpec.from_argv(argv_for(TIME, control=True, record=rec), name="time")
    async with wrap(spec) as holder:
        out["stdio_ok"] = await call_through(holder, telemetry, "get_current_time", {"timezone": SECRET})
        out["stdio_tool_error"] = await call_through(holder, telemetry, "replay_error", {"message": SECRET})
        out["stdio_invalid"] = await call_through(holder, telemetry, "get_current_time", {"timezone": SECRET, "bogus": SECRET})
    out["stdio_records"] = records(rec)

    # 2. streamable-HTTP upstream (the HTTP lane)
    rec = tmp / "http.jsonl"
    port = free_port()
    proc = subprocess.Popen(
        [*argv_for(TIME, control=True, record=rec), "--http", str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    try:
        wait_port(port, proc)
        spec = UpstreamSpec.from_url(f"http://127.0.0.1:{port}/mcp", name="time", transport="streamable_http")
        async with wrap(spec) as holder:
            out["http_ok"] = await call_through(holder, telemetry, "get_current_time", {"timezone": SECRET})
    finally:
        proc.terminate()
        proc.wait(10)
    out["http_records"] = records(rec)

    # 3. OpenAPI target and 4. mcpaql's own HTTP app, each on uvicorn in this process
    seen: list[dict[str, str]] = []

    async def pet(request: Request) -> JSONResponse:
        seen.append({k: v for k, v in request.headers.items() if k in ("traceparent", "tracestate")})
        return JSONResponse({"id": request.path_params["petId"], "name": "Rex"})

    api_port, mcp_port = free_port(), free_port()
    async with anyio.create_task_group() as tg:
        api = await uvicorn_task(tg, Starlette(routes=[Route("/pets/{petId}", pet)]), api_port)
        async with serve_openapi(PETSTORE, base_url=f"http://127.0.0.1:{api_port}", allow_private_targets=True) as rt:
            out["openapi_ok"] = await call_through(rt, telemetry, "get_pet", {"pet_id": SECRET, "note": SECRET})
        out["openapi_headers"] = seen
        mcp = await uvicorn_task(tg, http_app(app.engine(Config()), stateless=True, telemetry=telemetry), mcp_port)
        body = {
            "jsonrpc": "2.0",
            "id": 7,
            "method": "tools/call",
            "params": {"name": "obs_mcpaql_read", "arguments": {"operation": "echo", "params": {"text": SECRET}}},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "content-type": "application/json",
            "mcp-protocol-version": "2025-11-25",
            "traceparent": f"00-{HEADER_TRACE}-{HEADER_SPAN}-01",
        }
        both = {**body, "id": 8}
        both["params"] = {**body["params"], "_meta": {"traceparent": f"00-{META_TRACE}-{META_SPAN}-01"}}
        async with httpx.AsyncClient() as http:
            resp = await http.post(f"http://127.0.0.1:{mcp_port}/mcp", json=body, headers=headers)
            out["header_call"] = {"status": resp.status_code, "body": resp.text}
            resp = await http.post(f"http://127.0.0.1:{mcp_port}/mcp", json=both, headers=headers)
            out["both_call"] = {"status": resp.status_code, "body": resp.text}
        mcp.should_exit = True
        api.should_exit = True


def span_dict(s: Any) -> dict[str, Any]:
    return {
        "name": s.name,
        "kind": s.kind.name,
        "trace_id": format(s.context.trace_id, "032x"),
        "span_id": format(s.context.span_id, "016x"),
        "parent_id": format(s.parent.span_id, "016x") if s.parent else None,
        "attributes": dict(s.attributes or {}),
        "status": s.status.status_code.name,
        "status_description": s.status.description,
        "links": [format(link.context.span_id, "016x") for link in s.links],
        "events": [{"name": e.name, "attributes": dict(e.attributes or {})} for e in s.events],
        "scope": s.instrumentation_scope.name if s.instrumentation_scope else None,
    }


def metric_points(reader: InMemoryMetricReader) -> list[dict[str, Any]]:
    points: list[dict[str, Any]] = []
    data = reader.get_metrics_data()
    for rm in data.resource_metrics if data else []:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    value = getattr(p, "value", None)
                    points.append(
                        {
                            "name": m.name,
                            "attributes": dict(p.attributes or {}),
                            "value": value,
                            "count": getattr(p, "count", None),
                        }
                    )
    return points


def main() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    reader = InMemoryMetricReader()
    metrics.set_meter_provider(MeterProvider(metric_readers=[reader]))
    logs = io.StringIO()
    stderr, sys.stderr = sys.stderr, logs  # configure_logging's handler writes to the stderr of the moment
    try:
        configure_logging(logging.INFO, "json")  # as `mcpaql serve --log-format json` does
    finally:
        sys.stderr = stderr
    out: dict[str, Any] = {
        "secret": SECRET,
        "header_trace": HEADER_TRACE,
        "header_span": HEADER_SPAN,
        "meta_trace": META_TRACE,
        "meta_span": META_SPAN,
    }
    with tempfile.TemporaryDirectory() as tmp:
        anyio.run(scenario, out, Path(tmp))
    out["spans"] = [span_dict(s) for s in exporter.get_finished_spans()]
    out["metrics"] = metric_points(reader)
    out["logs"] = logs.getvalue().splitlines()
    Path(sys.argv[1]).write_text(json.dumps(out, default=str))


if __name__ == "__main__":
    main()
