"""Start-up, memory, listing tokens and per-call latency against the number of operations.

For 10 / 100 / 1,000 / 10,000 operations from each of three sources, each size measured in a
fresh subprocess, side by side in one run:

* ``python``  — the Python API: generated functions over six parameter shapes (ids and limits,
  a pydantic model, lists and flags, an enum filter, an async handler, a constrained page size);
* ``wrap``    — a wrapped MCP server: a synthetic capture of N tools served by the replay
  upstream (``mcpaql.mcp.replay``) over real stdio;
* ``openapi`` — an OpenAPI document of N operations (``bench_openapi_scale.synthetic``), its
  calls answered by a local HTTP server.

Columns: ``start s`` (definition/load → registry → engine; for ``wrap`` also spawning the
upstream and listing its tools), ``build s`` (for ``wrap``: registry and engine alone), ``RSS MB``
(the child's peak resident set less what it had before building), ``tools tok`` (o200k tokens
of tools/list in semantic mode, ``mcpaql.tokens``), ``intro tok`` (tokens of the
``introspect operations`` answer), ``call µs`` (median of many in-process ``Engine.execute``
calls of one read operation: for ``python`` a sync handler, run in a worker thread, and an
async one; for ``wrap`` and ``openapi`` including the real stdio/HTTP round trip). The ratio
lines divide the largest size by the smallest: with 1,000× the operations, linear start-up
shows as ≈1,000× and flat per-call latency as ≈1.0×.

``--before SRC`` runs every child a second time with ``PYTHONPATH=SRC`` (another checkout's
``src``, e.g. main before this change) and prints its figures beside these.

    .venv/bin/python bench/bench_scale.py [--sizes 10,100,1000,10000] [--sources python,wrap,openapi]
        [--before /path/to/other/src] [--calls 2000]
"""

from __future__ import annotations

import argparse
import enum
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, Field

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

SOURCES = ("python", "wrap", "openapi")
TIMEOUT = 3600  # seconds for one child (the quadratic "before" at 10,000 operations takes minutes)


# ---- inputs ------------------------------------------------------------------------------------


def capture(n: int) -> dict[str, Any]:
    """A tools/list of ``n`` tools over six input shapes and seven verbs (what a real server's
    capture looks like, N times over)."""
    verbs = ("get", "list", "create", "update", "delete", "search", "run")
    shapes: list[dict[str, Any]] = [
        {"type": "object", "properties": {"id": {"type": "string", "description": "The id"}}, "required": ["id"]},
        {
            "type": "object",
            "properties": {
                "query": {"type": "string"},
                "limit": {"type": "integer", "minimum": 1, "maximum": 100},
                "state": {"type": "string", "enum": ["open", "closed", "all"]},
            },
        },
        {
            "type": "object",
            "properties": {
                "title": {"type": "string", "description": "Title"},
                "body": {"type": "string"},
                "labels": {"type": "array", "items": {"type": "string"}},
            },
            "required": ["title"],
        },
        {
            "type": "object",
            "properties": {
                "id": {"type": "string"},
                "patch": {"type": "object", "properties": {"title": {"type": "string"}, "done": {"type": "boolean"}}},
            },
            "required": ["id", "patch"],
        },
        {
            "type": "object",
            "properties": {"paths": {"type": "array", "items": {"type": "string"}}, "recursive": {"type": "boolean"}},
        },
        {"type": "object", "properties": {"script": {"type": "string"}, "timeout": {"type": "number"}}, "required": ["script"]},
    ]
    tools = []
    for i in range(n):
        verb = verbs[i % len(verbs)]
        tools.append(
            {
                "name": f"{verb}_thing_{i}",
                "description": f"{verb.title()} thing number {i}.",
                "inputSchema": shapes[(i // len(verbs)) % len(shapes)] if verb != "get" else shapes[0],
                "annotations": {"readOnlyHint": verb in ("get", "list", "search")},
            }
        )
    return {"tools": tools}


# ---- the measured child ------------------------------------------------------------------------


class Thing(BaseModel):
    thing_id: str
    title: str
    size: int = 0
    tags: list[str] = []


class State(enum.Enum):
    OPEN = "open"
    CLOSED = "closed"


def _python_functions(n: int) -> list[tuple[str, Any]]:
    """``n`` (category, function) pairs cloned from six templates (distinct function objects,
    as a large code base would have)."""
    import types

    def get_(thing_id: str, limit: int = 10) -> dict[str, Any]:
        """Get one thing by id."""
        return {"thing_id": thing_id, "limit": limit}

    def create_(thing: Thing) -> Thing:
        """Create a thing."""
        return thing

    def update_(thing_id: str, tags: list[str], replace: bool = False) -> list[str]:
        """Tag a thing."""
        return tags

    def list_(state: State = State.OPEN, labels: list[str] | None = None) -> list[dict[str, Any]]:
        """List things in a state."""
        return []

    async def fetch_(thing_id: str, note: str | None = None) -> dict[str, Any]:
        """Fetch one thing by id (async)."""
        return {"thing_id": thing_id}

    def search_(query: str, page: int = 1, size: Annotated[int, Field(ge=1, le=100)] = 20) -> list[str]:
        """Search things."""
        return []

    templates = [("READ", get_), ("CREATE", create_), ("UPDATE", update_), ("READ", list_), ("READ", fetch_), ("READ", search_)]
    out: list[tuple[str, Any]] = []
    for i in range(n):
        category, t = templates[i % len(templates)]
        name = f"{t.__name__}thing_{i}"
        f = types.FunctionType(t.__code__, t.__globals__, name, t.__defaults__, t.__closure__)
        f.__annotations__ = dict(t.__annotations__)
        f.__kwdefaults__ = t.__kwdefaults__
        f.__doc__ = t.__doc__
        f.__qualname__ = name
        out.append((category, f))
    return out


def _start_python(n: int) -> tuple[Any, dict[str, Any]]:
    from mcpaql import Adapter, Config

    functions = _python_functions(n)
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    t0 = time.perf_counter()
    app = Adapter("bench")
    for category, f in functions:
        app.operation(f, category=category)
    engine = app.engine(Config())
    start = time.perf_counter() - t0
    calls = {"sync": ("get_thing_0", {"thing_id": "t1"}), "async": ("fetch_thing_4", {"thing_id": "t1"})}
    return engine, {"start": start, "base_rss": base, "calls": calls}


def _openapi_server() -> tuple[str, Any]:
    """A local HTTP server answering every request with one small JSON object."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"  # keep-alive: the client reuses its connection
        disable_nagle_algorithm = True  # headers and body go out at once (no 40 ms delayed ACK)
        wbufsize = 1 << 16  # one write per response, flushed by handle_one_request

        def do_GET(self) -> None:
            body = b'{"id": 1, "name": "thing"}'
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_address[1]}", server


async def _measure_calls(engine: Any, calls: dict[str, tuple[str, dict[str, Any]]], count: int) -> dict[str, float]:
    from mcpaql.protocol.context import Context
    from mcpaql.protocol.session import Session

    session = Session()
    out: dict[str, float] = {}
    for label, (op, params) in calls.items():
        request = {"operation": op, "params": params}
        for _ in range(min(50, count)):  # warm up (first-use compilation, connections)
            env = await engine.execute(request, Context(session=session))
        assert env["success"] is True, env
        times = []
        for _ in range(count):
            t = time.perf_counter()
            await engine.execute(request, Context(session=session))
            times.append(time.perf_counter() - t)
        out[label] = 1e6 * statistics.median(times)
    return out


async def child(source: str, n: int, calls: int, path: str) -> dict[str, Any]:
    from mcpaql import tokens as tk
    from mcpaql.config import Config
    from mcpaql.protocol.context import Context
    from mcpaql.protocol.session import Session

    out: dict[str, Any] = {"source": source, "n": n}
    import mcpaql

    out["mcpaql"] = str(Path(mcpaql.__file__).parent)
    if source == "python":
        engine, info = _start_python(n)
        out["start"], base = info["start"], info["base_rss"]
        out["rss_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
        await _report(out, engine, info["calls"], calls, tk, Context, Session)
        return out
    if source == "wrap":
        from mcpaql.adapters.upstream.runtime import UpstreamSpec
        from mcpaql.adapters.upstream.wrap import wrap
        from mcpaql.mcp.replay import argv_for
        from mcpaql.protocol.dispatch import Engine

        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        async with wrap(UpstreamSpec.from_argv(argv_for(path), name="things"), config=Config()) as w:
            engine = w.engine
            out["start"] = time.perf_counter() - t0
            out["rss_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
            t1 = time.perf_counter()
            Engine(w.registry(), Config())
            out["build"] = time.perf_counter() - t1
            await _report(out, engine, {"stdio": ("get_thing_0", {"id": "t1"})}, max(50, calls // 10), tk, Context, Session)
        return out
    from mcpaql.adapters.openapi import OpenAPIRuntime, load_document

    url, server = _openapi_server()
    try:
        base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        t0 = time.perf_counter()
        rt = OpenAPIRuntime(load_document(path), base_url=url, config=Config(), allow_private_targets=True)
        async with rt:
            engine = rt.engine
            out["start"] = time.perf_counter() - t0
            out["rss_mb"] = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - base) / 1024
            op = next(o.name for o in engine.registry.operations if o.name.startswith("get_res"))
            await _report(out, engine, {"http": (op, {"id": 1})}, max(50, calls // 10), tk, Context, Session)
    finally:
        server.shutdown()
    return out


async def _report(out: dict[str, Any], engine: Any, calls: Any, count: int, tk: Any, Context: Any, Session: Any) -> None:
    out["ops"] = len(engine.registry.operations) - 1  # introspect is not counted
    out["tools_tokens"] = tk.count_tools(engine.tools)
    env = await engine.execute({"operation": "introspect", "params": {"query": "operations"}}, Context(session=Session()))
    out["intro_tokens"] = tk.count_text(engine.render(env)[0])
    out["call_us"] = await _measure_calls(engine, calls, count)


def run_child(source: str, n: int, calls: int, path: str, src: str | None) -> dict[str, Any]:
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    done = subprocess.run(
        [sys.executable, __file__, "--child", source, str(n), str(calls), path],
        capture_output=True,
        text=True,
        env=env,
        timeout=TIMEOUT,
    )
    if done.returncode != 0:
        raise SystemExit(f"child {source} {n} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


# ---- the table ---------------------------------------------------------------------------------


def _row(m: dict[str, Any]) -> str:
    calls = " ".join(f"{k} {v:,.0f}" for k, v in m["call_us"].items())
    build = f"{m['build']:>8.2f}" if "build" in m else f"{'':>8}"
    return f"{m['ops']:>7,}{m['start']:>9.2f}{build}{m['rss_mb']:>8.0f}{m['tools_tokens']:>10,}{m['intro_tokens']:>11,}   {calls}"


def _ratios(ms: list[dict[str, Any]]) -> str:
    a, b = ms[0], ms[-1]
    calls = ", ".join(f"call ({k}) {b['call_us'][k] / a['call_us'][k]:.2f}×" for k in a["call_us"])
    return (
        f"  {b['ops']:,} vs {a['ops']:,} operations ({b['ops'] / a['ops']:,.0f}×): start-up {b['start'] / a['start']:,.0f}×, "
        f"tools/list tokens {b['tools_tokens'] / a['tools_tokens']:.1f}×, introspect tokens "
        f"{b['intro_tokens'] / a['intro_tokens']:,.0f}×, {calls}"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--sizes", default="10,100,1000,10000")
    ap.add_argument("--sources", default=",".join(SOURCES))
    ap.add_argument("--calls", type=int, default=2000, help="calls per latency median (wrap/openapi: a tenth)")
    ap.add_argument("--before", help="another checkout's src directory, measured beside this one")
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        import logging

        import anyio

        logging.disable(logging.WARNING)
        source, n, calls, path = args.child
        print(json.dumps(anyio.run(child, source, int(n), int(calls), path)))
        return
    sizes = [int(s) for s in args.sizes.split(",") if s]
    variants = [("after", None), *([("before", args.before)] if args.before else [])]
    head = f"{'ops':>7}{'start s':>9}{'build s':>8}{'RSS MB':>8}{'tools tok':>10}{'intro tok':>11}   call µs (median)"
    with tempfile.TemporaryDirectory() as tmp:
        for source in [s for s in args.sources.split(",") if s]:
            for label, src in variants:
                where = f" [{label}: {src}]" if args.before else ""
                print(f"\n{source}{where}\n{head}\n{'-' * (len(head) + 12)}", flush=True)
                ms = []
                for n in sizes:
                    path = Path(tmp) / f"{source}-{n}.json"
                    if source == "wrap":
                        path.write_text(json.dumps(capture(n)))
                    elif source == "openapi":
                        from bench_openapi_scale import synthetic

                        path.write_text(json.dumps(synthetic(n)))
                    m = run_child(source, n, args.calls, str(path), src)
                    ms.append(m)
                    print(_row(m), flush=True)
                if len(ms) > 1:
                    print(_ratios(ms))
                print(f"  (mcpaql from {ms[0]['mcpaql']})")


if __name__ == "__main__":
    main()
