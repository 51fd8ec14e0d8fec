"""Liveness and readiness for HTTP deployments: ``GET /healthz`` and ``GET /readyz``.

Why two: a load balancer or orchestrator must tell "the process is alive" (``/healthz``: the
event loop answers; restart it if not) from "send it traffic" (``/readyz``: the source is open —
the backend's lifespan entered, its engine built — and every dependency answers, e.g. the shared
store). A process that is starting or draining is alive but not ready. Answers are tiny JSON with
the names of failed checks only: no error text, host name or secret ever appears in them.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

import anyio
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

log = logging.getLogger("mcpaql.mcp.health")

Check = Callable[[], Awaitable[bool]]
CHECK_TIMEOUT = 2.0


@dataclass
class Readiness:
    """What ``/readyz`` asks: ``open`` is set while the app's lifespan runs (the source is open),
    ``checks`` are named dependency probes (True: fine)."""

    checks: Mapping[str, Check] = field(default_factory=dict)
    open: bool = False
    draining: bool = False  # shutting down: finish what is in flight, take nothing new

    async def failed(self) -> list[str]:
        if self.draining:
            return ["draining"]
        bad = [] if self.open else ["source"]
        for name, check in self.checks.items():
            try:
                with anyio.fail_after(CHECK_TIMEOUT):
                    ok = await check()
            except Exception:  # a probe that raises or hangs is a failed probe, logged without detail
                log.warning("readiness check %s failed", name, exc_info=log.isEnabledFor(logging.DEBUG))
                ok = False
            if not ok:
                bad.append(name)
        return bad


def health_routes(readiness: Readiness) -> list[Route]:
    async def healthz(_request: Request) -> JSONResponse:
        return JSONResponse({"status": "ok"})

    async def readyz(_request: Request) -> JSONResponse:
        bad = await readiness.failed()
        if bad:
            return JSONResponse({"status": "not ready", "failed": bad}, status_code=503)
        return JSONResponse({"status": "ready"})

    return [Route("/healthz", healthz, methods=["GET"]), Route("/readyz", readyz, methods=["GET"])]
