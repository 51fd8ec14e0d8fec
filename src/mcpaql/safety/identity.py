"""Who an operation's safety state belongs to: the caller's *identity*, which the agent
cannot choose (issue 11).

Resolution, first that applies:

1. ``session.identity`` — set by the transport only: over authenticated HTTP the token's
   subject or the API key's ``key:<subject>`` (docs/auth.md; ``mcpaql.mcp.auth.request_identity``
   through :class:`mcpaql.mcp.sessions.SessionBinder`'s ``identify`` seam);
2. the operator-assigned agent id of this server: ``SafetyConfig.agent_id`` (``--agent-id``),
   else the environment variable ``MCPAQL_AGENT_ID``, else ``"default"``.

Nothing a request carries (``element_name``, ``_meta``, a session id the client names) takes
part. Without auth the server cannot tell its clients apart in a way they cannot forge — a
new connection or a sessionless request costs nothing — so every client of one endpoint is
one identity and a block holds for all of them; give agents separate endpoints (``--agent-id``
per stdio server) or authenticate them (``--auth-issuer`` / ``--api-keys-file``) to separate them.
"""

from __future__ import annotations

import re

from ..config import settings
from ..protocol.context import Context

DEFAULT_AGENT_ID = "default"
ENV_AGENT_ID = "MCPAQL_AGENT_ID"
_VALID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$")


def agent_id(configured: str | None) -> str:
    """The operator-assigned identity of this server's clients (checked: a printable id)."""
    value = configured or settings().agent_id or DEFAULT_AGENT_ID
    if not _VALID.match(value):
        raise ValueError("agent_id must be 1-128 characters of letters, digits and . _ @ : / - (starting with a letter or digit)")
    return value


def identity_of(ctx: Context, default: str) -> str:
    """The identity a call's blocks, pauses, challenges and tokens belong to."""
    return ctx.session.identity or default


def token_session(ctx: Context) -> str | None:
    """The session a token is additionally bound to: the connection's, where one outlives
    the request; ``None`` for per-request sessions (stateless HTTP, 2026-07-28 requests)."""
    return None if ctx.session.per_request else ctx.session.id
