"""The SDK side of authentication: an OAuth 2.1 resource server in front of the MCP endpoint.

* :class:`BearerGate` (ASGI) guards the MCP path. It answers exactly as RFC 6750 §3 and the
  MCP authorization spec ask: no credentials → 401 with ``WWW-Authenticate: Bearer
  resource_metadata="…"`` (no error code); a malformed ``Authorization`` header → 400
  ``invalid_request``; a token that does not verify → 401 ``invalid_token``; a token with none
  of our scopes → 403 ``insufficient_scope``. Bodies and headers carry fixed descriptions only:
  never the token, a key, a claim, a path or a traceback.
* An accepted request carries the SDK's ``AuthenticatedUser`` (so the SDK's session manager
  binds each ``Mcp-Session-Id`` to its principal and ``get_access_token()`` works) holding our
  :class:`~mcpaql.auth.scopes.Caller`; :func:`caller_of` reads it back for the MCP server,
  which makes it the session's identity and narrows the engine to its scopes.
* The protected-resource metadata document (RFC 9728) is served by the SDK's own route at
  ``/.well-known/oauth-protected-resource<path>`` when an issuer is configured.

The raw token is not kept: the ``AccessToken`` the SDK sees holds a digest in its place, so
nothing downstream (an upstream client, a log line, an audit entry) can pass it on.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any, cast

from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.authentication import AuthCredentials
from starlette.types import ASGIApp, Receive, Scope, Send

from ..auth.header import MalformedAuthorization, bearer_token
from ..auth.jwks import TokenRejected
from ..auth.options import Authenticator, AuthOptions, build_authenticator
from ..auth.scopes import FULL, READ, SCOPES, Caller, grants_anything

log = logging.getLogger("mcpaql.auth")


class CallerUser(AuthenticatedUser):
    """The SDK's authenticated user, carrying the mcpaql caller it was built from."""

    def __init__(self, access: AccessToken, caller: Caller) -> None:
        super().__init__(access)
        self.caller = caller


def access_token_of(caller: Caller, credential: str, issuer: str | None) -> AccessToken:
    digest = hashlib.sha256(credential.encode("ascii", "replace")).hexdigest()[:32]
    return AccessToken(
        token=f"sha256:{digest}",
        client_id=caller.client_id or caller.identity,
        scopes=sorted(caller.scopes),
        expires_at=caller.expires_at,
        subject=caller.identity,
        claims={"iss": issuer if caller.via == "jwt" else "mcpaql:api-key"},
    )


class BearerGate:
    """ASGI middleware: requests under ``path`` need a valid bearer credential."""

    def __init__(
        self,
        app: ASGIApp,
        *,
        authenticator: Authenticator,
        path: str,
        resource_metadata_url: str | None,
        issuer: str | None,
    ) -> None:
        self.app = app
        self.authenticator = authenticator
        self.path = path.rstrip("/") or "/"
        self.resource_metadata_url = resource_metadata_url
        self.issuer = issuer

    def _guarded(self, path: str) -> bool:
        return path == self.path or path.startswith(self.path.rstrip("/") + "/")

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or not self._guarded(scope.get("path", "")):
            await self.app(scope, receive, send)
            return
        values = [v.decode("latin-1") for k, v in scope.get("headers", []) if k.lower() == b"authorization"]
        try:
            credential = bearer_token(values)
        except MalformedAuthorization as e:
            await self._deny(send, 400, "invalid_request", str(e))
            return
        if credential is None:
            await self._deny(send, 401, None, "authentication required")
            return
        try:
            caller = await self.authenticator.authenticate(credential)
        except TokenRejected as e:
            log.info("bearer credential refused: %s", e.description)
            await self._deny(send, 401, "invalid_token", e.description)
            return
        if not grants_anything(caller.scopes):
            log.info("caller %s holds none of the mcpaql scopes", caller.identity)
            await self._deny(send, 403, "insufficient_scope", "the access token grants no mcpaql scope", scope_hint=True)
            return
        access = access_token_of(caller, credential, self.issuer)
        scope["user"] = CallerUser(access, caller)
        scope["auth"] = AuthCredentials(sorted(caller.scopes))
        reset = auth_context_var.set(scope["user"])
        try:
            await self.app(scope, receive, send)
        finally:
            auth_context_var.reset(reset)

    async def _deny(self, send: Send, status: int, error: str | None, description: str, *, scope_hint: bool = False) -> None:
        params: list[str] = []
        if error is not None:  # RFC 6750 §3.1: no error code when the request had no credentials
            params += [f'error="{error}"', f'error_description="{description}"']
        if scope_hint:
            params.append(f'scope="{READ} {FULL}"')
        if self.resource_metadata_url:
            params.append(f'resource_metadata="{self.resource_metadata_url}"')
        challenge = "Bearer" + (" " + ", ".join(params) if params else "")
        body = json.dumps({"error": error or "unauthorized", "error_description": description}).encode()
        await send(
            {
                "type": "http.response.start",
                "status": status,
                "headers": [
                    (b"content-type", b"application/json"),
                    (b"content-length", str(len(body)).encode()),
                    (b"www-authenticate", challenge.encode()),
                    (b"cache-control", b"no-store"),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


def protect(app: Starlette, auth: AuthOptions, resource: str | None, *, path: str, name: str | None = None) -> None:
    """Put ``app``'s MCP endpoint at ``path`` behind a :class:`BearerGate` and serve the
    protected-resource metadata (RFC 9728) when an authorization server is configured."""
    authenticator = build_authenticator(auth, resource)
    metadata_url: str | None = None
    if auth.issuer and resource:
        # strings, validated by the metadata model itself, which keeps an empty path empty: an
        # issuer is compared as an exact string (RFC 8414 §3.3), so no trailing "/" may appear
        routes = create_protected_resource_routes(
            resource_url=cast(AnyHttpUrl, resource),
            authorization_servers=[cast(AnyHttpUrl, auth.issuer)],
            scopes_supported=list(SCOPES),
            resource_name=name,
        )
        app.router.routes.extend(routes)
        metadata_url = str(build_resource_metadata_url(AnyHttpUrl(resource)))
    app.add_middleware(BearerGate, authenticator=authenticator, path=path, resource_metadata_url=metadata_url, issuer=auth.issuer)


def caller_of(ctx: Any) -> Caller | None:
    """The authenticated caller of an MCP request (``None`` without auth, e.g. stdio)."""
    request = getattr(ctx, "request", None)
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    return user.caller if isinstance(user, CallerUser) else None


def request_identity(ctx: Any) -> str | None:
    """The identity seam of :class:`~mcpaql.mcp.sessions.SessionBinder`: the caller's subject."""
    caller = caller_of(ctx)
    return caller.identity if caller is not None else None
