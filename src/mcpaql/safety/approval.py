"""The local approval page: a human-only display channel (CORE §8.8.6 "security dashboard").

A small Starlette app bound to 127.0.0.1 that lists pending challenges *with their codes*
and hard-blocked agents with an admin "Unblock" (and per-challenge "Approve") button. It
reads the store directly, so it shows challenges created by any process sharing the store.

Who can see and approve, and why that excludes the agent it guards:

* **the admin key** (``?key=…`` once, then an HttpOnly ``SameSite=Strict`` cookie named per
  port, since cookies ignore ports): a fresh random key per start, written only to the
  operator's owner-only URL file (:mod:`.channel`), never logged and never put in an MCP
  response — an agent (or another local user) that can reach loopback gets 403 and no code;
* **forms carry the key as a CSRF token** and a POST whose ``Origin`` is not this page is
  refused, so a web page the operator visits cannot click "Approve" through their cookie;
* **the Host header must name this loopback address** (DNS rebinding: a hostile name resolved
  to 127.0.0.1 is refused before anything is read).

This page is the one place outside the store where codes exist; do not give the agent a
browser or an HTTP tool together with the operator's files.
"""

from __future__ import annotations

import asyncio
import hmac
import html
import secrets
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from ..store.base import NS_BLOCK
from .loop import SafetyLoop
from .verification import Challenges

_CSS = """body{font:15px system-ui,sans-serif;margin:2em;max-width:70em;color:#222}
table{border-collapse:collapse;width:100%;margin-bottom:2em}td,th{border:1px solid #ccc;padding:.4em;text-align:left}
.code{font:bold 18px ui-monospace,monospace;letter-spacing:.05em;background:#ffe;padding:.2em .4em}
.kind-danger_zone{color:#b00}.empty{color:#777}button{padding:.3em .8em}"""


_HOST_NAMES = ("127.0.0.1", "localhost", "[::1]")  # how a browser names our loopback address


class ApprovalPageError(Exception):
    """The page cannot listen where asked (one line for the operator)."""


class ApprovalPage:
    def __init__(
        self,
        challenges: Challenges,
        loop: SafetyLoop | None = None,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        admin_key: str | None = None,
    ) -> None:
        if host not in ("127.0.0.1", "::1", "localhost"):
            raise ValueError("the approval page binds to loopback only")
        self.challenges = challenges
        self.loop = loop
        self.host = host
        self.port = port
        self.key = admin_key or secrets.token_urlsafe(24)
        self._server: Any = None
        self._task: asyncio.Task[None] | None = None
        self.app = Starlette(
            routes=[
                Route("/", self.index, methods=["GET"]),
                Route("/c/{challenge_id}", self.one, methods=["GET"]),
                Route("/api/state", self.state, methods=["GET"]),
                Route("/unblock", self.unblock, methods=["POST"]),
                Route("/approve", self.approve, methods=["POST"]),
            ]
        )

    @property
    def origin(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def url(self) -> str:
        return f"{self.origin}/?key={self.key}"

    @property
    def cookie(self) -> str:
        return f"mcpaql_admin_{self.port}"

    def _host_ok(self, request: Request) -> bool:
        """Only our own loopback names (DNS-rebinding protection)."""
        return request.headers.get("host", "") in {f"{h}:{self.port}" for h in _HOST_NAMES}

    def _authorized(self, request: Request, form_key: str | None = None) -> bool:
        if not self._host_ok(request):
            return False
        given = form_key or request.query_params.get("key") or request.cookies.get(self.cookie) or ""
        return hmac.compare_digest(given.encode(), self.key.encode())

    def _deny(self) -> Response:
        return HTMLResponse("<h1>403</h1><p>Open the URL printed for the operator.</p>", status_code=403)

    async def _data(self) -> dict[str, Any]:
        pending = await self.challenges.pending(with_codes=True)
        blocks = await self.challenges.store.scan(NS_BLOCK)
        return {
            "challenges": [
                {
                    "id": c["id"],
                    "agent": c["agent"],
                    "kind": c["kind"],
                    "action": c.get("action", ""),
                    "reason": c.get("reason", ""),
                    "expires_at": c.get("expires_iso"),
                    "code": c.get("code") or "",  # codes exist only in the issuing process (never in the store)
                    "expires_in": max(0, int(c.get("expires_at", 0) - self.challenges.clock())),
                }
                for c in pending
            ],
            "blocked_agents": [
                {
                    "agent": b["agent"],
                    "reason": b.get("reason"),
                    "action": b.get("action"),
                    "blocked_at": b.get("blocked_at"),
                    "challenge_id": b.get("challenge_id"),
                }
                for b in sorted(blocks, key=lambda b: b.get("blocked_at", ""))
            ],
        }

    async def state(self, request: Request) -> Response:
        if not self._authorized(request):
            return JSONResponse({"error": "forbidden"}, status_code=403)
        return JSONResponse(await self._data(), headers={"Cache-Control": "no-store"})

    async def one(self, request: Request) -> Response:
        """One challenge's page: the link a client's human gets through URL-mode elicitation.

        The link carries no key (MCP: a URL elicitation must not be pre-authenticated), so it
        shows the challenge only to a browser that already holds the operator's key cookie;
        anyone else, the agent included, gets the 403 below and no code."""
        if not self._authorized(request):
            return HTMLResponse(
                "<h1>403</h1><p>Open the approval URL from the operator's owner-only file in this browser "
                "once, then follow this link again.</p>",
                status_code=403,
                headers={"Cache-Control": "no-store"},
            )
        return await self.index(request, only=request.path_params.get("challenge_id"))

    async def index(self, request: Request, only: str | None = None) -> Response:
        if not self._authorized(request):
            return self._deny()
        d = await self._data()
        if only is not None:
            d["challenges"] = [c for c in d["challenges"] if c["id"] == only]
        e = html.escape
        key = e(self.key)
        rows = (
            "".join(
                f"<tr class='kind-{e(c['kind'])}' data-challenge='{e(c['id'])}'><td>{e(c['agent'])}</td><td>{e(c['kind'])}</td>"
                f"<td>{e(c['action'])}</td><td>{e(c['reason'])}</td><td><span class='code'>{e(c['code'])}</span></td>"
                f"<td>{c['expires_in']} s</td><td><code>{e(c['id'])}</code></td><td><form method='post' action='/approve'>"
                f"<input type='hidden' name='key' value='{key}'><input type='hidden' name='challenge_id' "
                f"value='{e(c['id'])}'><button>Approve</button></form></td></tr>"
                for c in d["challenges"]
            )
            or "<tr><td colspan='8' class='empty'>No pending challenges</td></tr>"
        )
        blocked = (
            "".join(
                f"<tr data-agent='{e(b['agent'])}'><td>{e(b['agent'])}</td><td>{e(str(b['reason']))}</td>"
                f"<td>{e(str(b['action']))}</td><td>{e(str(b['blocked_at']))}</td><td><form method='post' action='/unblock'>"
                f"<input type='hidden' name='key' value='{key}'><input type='hidden' name='agent' value='{e(b['agent'])}'>"
                f"<button>Unblock</button></form></td></tr>"
                for b in d["blocked_agents"]
            )
            or "<tr><td colspan='5' class='empty'>No blocked agents</td></tr>"
        )
        body = (
            "<!doctype html><html><head><meta charset='utf-8'><meta http-equiv='refresh' content='5'>"
            f"<title>mcpaql approvals</title><style>{_CSS}</style></head><body>"
            "<h1>mcpaql — human approvals</h1><p>Codes on this page are for the human operator only. "
            "Read a code to the agent's operator channel, or approve here.</p>"
            "<h2>Pending challenges</h2><table id='challenges'><tr><th>Agent</th><th>Kind</th><th>Action</th>"
            "<th>Reason</th><th>Code</th><th>Expires</th><th>Challenge id</th><th></th></tr>"
            f"{rows}</table><h2>Blocked agents</h2><table id='blocked'><tr><th>Agent</th><th>Reason</th>"
            f"<th>Action</th><th>Blocked at</th><th></th></tr>{blocked}</table></body></html>"
        )
        resp = HTMLResponse(
            body,
            headers={
                "Cache-Control": "no-store",
                "X-Frame-Options": "DENY",
                "Content-Security-Policy": "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'",
            },
        )
        resp.headers["Referrer-Policy"] = "same-origin"  # "no-referrer" would make our own form's Origin "null"
        resp.set_cookie(self.cookie, self.key, httponly=True, samesite="strict")
        return resp

    async def _form(self, request: Request) -> dict[str, str] | None:
        origin = request.headers.get("origin")
        site = request.headers.get("sec-fetch-site")
        if (origin is not None and origin not in {f"http://{h}:{self.port}" for h in _HOST_NAMES}) or (
            site is not None and site != "same-origin"
        ):
            return None  # a cross-site form post (CSRF), even if it guessed nothing else
        form = await request.form()
        data = {k: str(v) for k, v in form.items()}
        if not self._authorized(request, data.get("key")) or not data.get("key"):
            return None  # POSTs need the key in the form (CSRF), not just the cookie
        return data

    async def unblock(self, request: Request) -> Response:
        data = await self._form(request)
        if data is None or self.loop is None:
            return self._deny()
        await self.loop.admin_unblock(data.get("agent", ""), by="approval page")
        return RedirectResponse("/", status_code=303)

    async def approve(self, request: Request) -> Response:
        data = await self._form(request)
        if data is None or self.loop is None:
            return self._deny()
        await self.loop.admin_approve(data.get("challenge_id", ""), by="approval page")
        return RedirectResponse("/", status_code=303)

    # ---- serving -------------------------------------------------------------------------------

    async def start(self) -> str:
        """Serve in the background on the running loop; return the operator URL."""
        import socket

        import uvicorn

        sock = socket.socket(socket.AF_INET6 if ":" in self.host else socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
        except OSError as e:
            sock.close()
            raise ApprovalPageError(
                f"the approval page cannot listen on {self.host}:{self.port}: "
                f"{e.strerror or e} (choose another --approval-port, or 0 for any)"
            ) from None
        self.port = sock.getsockname()[1]
        config = uvicorn.Config(self.app, log_level="warning", access_log=False, lifespan="off")
        self._server = uvicorn.Server(config)
        self._task = asyncio.create_task(self._server.serve(sockets=[sock]))
        while not self._server.started:
            if self._task.done():
                self._task.result()
            await asyncio.sleep(0.01)
        return self.url

    async def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._task is not None:
            await self._task
        self._server = self._task = None
