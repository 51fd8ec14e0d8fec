"""What the OpenAPI request-path guards cost per call, measured side by side in one run.

A real uvicorn server on loopback answers ``GET /v1/users/{id}/profile``. Interleaved, we time:

* ``httpx``     — a bare ``httpx.AsyncClient`` GET of the same URL (the floor);
* ``guarded``   — ``httpx`` through :class:`~mcpaql.adapters.targets.GuardedTransport` (the
  connect-time address check; kept-alive connections pay it once);
* ``runtime``   — a whole ``engine.execute`` of the operation through ``OpenAPIRuntime`` (path
  segment checks, URL re-check, header checks, envelope), with the guard;

and, offline, ``summarise`` of a 16 KB HTML error page and of a JSON body with a trace (µs). Medians
and ratios are printed; nothing is asserted.

    .venv/bin/python bench/bench_openapi_request.py [-n 400]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import anyio
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from aql_support import serve_in_thread
from mcpaql.adapters.openapi import serve_openapi
from mcpaql.adapters.targets import GuardedTransport, TargetPolicy
from mcpaql.adapters.upstream.messages import Redactor, summarise
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session


async def app(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "http":
        return
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"application/json")]})
    await send({"type": "http.response.body", "body": b'{"id":"u1","name":"Ada"}'})


def doc(base: str) -> dict[str, Any]:
    uid = {"name": "user_id", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Bench", "version": "1.0.0"},
        "servers": [{"url": base + "/v1"}],
        "paths": {"/users/{user_id}/profile": {"get": {"operationId": "getUserProfile", "parameters": [uid]}}},
    }


async def run(base: str, n: int) -> dict[str, list[float]]:
    times: dict[str, list[float]] = {"httpx": [], "guarded": [], "runtime": []}
    url = base + "/v1/users/u-42/profile"
    async with (
        httpx.AsyncClient() as plain,
        httpx.AsyncClient(transport=GuardedTransport(TargetPolicy(private=True))) as g,
        serve_openapi(doc(base)) as rt,
    ):

        async def bare() -> None:
            (await plain.get(url)).json()

        async def guarded() -> None:
            (await g.get(url)).json()

        async def runtime() -> None:
            env = await rt.engine.execute(
                {"operation": "get_user_profile", "params": {"user_id": "u-42"}}, Context(session=Session())
            )
            assert env["success"], env

        kinds = {"httpx": bare, "guarded": guarded, "runtime": runtime}
        for _ in range(30):
            for f in kinds.values():
                await f()
        for i in range(n):
            order = list(kinds.items()) if i % 2 else list(reversed(kinds.items()))
            for name, f in order:
                t = time.perf_counter()
                await f()
                times[name].append(time.perf_counter() - t)
    return times


def offline(n: int) -> dict[str, float]:
    page = (
        "<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>"
        + "p{}" * 2000
        + "</style></head><body>"
        + "<p>upstream failed at /srv/app/server.py</p>" * 250
        + "</body></html>"
    )[:16384]
    body = json.dumps({"error": "boom", "trace": "Traceback (most recent call last):\n" + '  File "/srv/a.py", line 3\n' * 50})
    r = Redactor(["Bearer tok-9f8e7d6c5b4a"])
    out = {}
    for name, text in (("summarise_html_16k_us", page), ("summarise_json_trace_us", body)):
        t = time.perf_counter()
        for _ in range(n):
            summarise(text, redact=r)
        out[name] = (time.perf_counter() - t) / n * 1e6
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=400)
    args = ap.parse_args()
    with serve_in_thread(app) as base:
        times = anyio.run(run, base, args.n)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    print(f"calls per kind: {args.n} (interleaved, loopback uvicorn)")
    for k, v in med.items():
        print(f"  {k:8s} median {v:.3f} ms   ratio to httpx {v / med['httpx']:.2f}x")
    for k, v in offline(200).items():
        print(f"  {k}: {v:.0f} µs")


if __name__ == "__main__":
    main()
