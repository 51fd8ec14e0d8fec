"""URL-mode elicitation as an out-of-band verification channel (MCP 2025-11-25+, SEP-1036).

Why: when the safety layer pauses an agent, a human has to open the approval page; without
help they only learn that from the start line on stderr. A client that supports URL-mode
elicitation can put the approval link in front of its *user* the moment it is needed, and
MCP requires it to do that outside the model's context (URL mode exists for interactions that
"must not pass through the MCP client"). What goes through the client is only the link
``{page}/c/{challenge_id}`` — no key (a URL elicitation must not be pre-authenticated) and no
code: the page shows the code only to a browser that already holds the operator's key. The
model-visible result is exactly what it was (challenge id, never the code).

Per era:

* **2025-11-25** (a connection with a back-channel): ``elicitation/create`` with ``mode: "url"``
  is sent while the call is still open, related to it; the call answers after the user's
  accept/decline (bounded by :data:`ELICIT_TIMEOUT`). Where there is no back-channel (stateless
  HTTP) nothing is sent.
* **2026-07-28**: the call answers ``InputRequiredResult`` carrying the URL elicitation and a
  ``requestState``; the client shows the link, retries with its responses and the state, and
  gets the original result (kept here, in memory, for :data:`PENDING_TTL` seconds; a retry that
  reaches another process, or comes too late, runs the call again).

Clients that do not declare URL-mode elicitation get today's channels only (page, webhook, OS
dialog). The user's answer is never an approval: approving happens on the page, or by the code
the page shows.
"""

from __future__ import annotations

import logging
import secrets
import time
from collections import OrderedDict
from typing import Any

import anyio
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..safety.verification import IssuedChallenge

log = logging.getLogger("mcpaql.mcp.elicit")

ELICIT_TIMEOUT = 120.0  # seconds a 2025-11-25 call waits for the user's accept/decline
PENDING_TTL = 600.0
MAX_PENDING = 1024


def supports_url_elicitation(ctx: Any) -> bool:
    """Whether the client declared URL-mode elicitation (per request on 2026-07-28)."""
    caps = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    elicitation = getattr(caps, "elicitation", None)
    return getattr(elicitation, "url", None) is not None


def message_for(c: IssuedChallenge) -> str:
    what = f": {c.action}" if c.action else ""
    return f"An AI agent is waiting for your approval{what}. Open the approval page to see it and approve it."


def linked(issued: list[IssuedChallenge]) -> list[IssuedChallenge]:
    return [c for c in issued if c.link]


async def elicit_now(ctx: Any, issued: list[IssuedChallenge]) -> None:
    """2025-11-25: ask the client to show each link to its user (best effort, bounded)."""
    for c in issued:
        assert c.link is not None
        try:
            with anyio.fail_after(ELICIT_TIMEOUT):
                await ctx.session.elicit_url(
                    message_for(c), c.link, elicitation_id=c.challenge_id, related_request_id=ctx.request_id
                )
        except Exception as e:  # no back-channel, a client that went away, a timeout: the page still works
            log.debug("URL elicitation for challenge %s not delivered: %s", c.challenge_id, type(e).__name__)


class PendingResults:
    """2026-07-28 results held while the client shows the approval link (keyed by an unguessable
    ``requestState``; bounded in number and age). A held result is bound to the caller that
    caused it (the authenticated identity, or ``None`` without auth): another caller presenting
    the state gets nothing, and the result stays for its owner."""

    def __init__(self) -> None:
        self._held: OrderedDict[str, tuple[float, str | None, Any]] = OrderedDict()

    def hold(self, result: Any, owner: str | None = None) -> str:
        now = time.monotonic()
        while self._held and (len(self._held) >= MAX_PENDING or next(iter(self._held.values()))[0] < now):
            self._held.popitem(last=False)
        state = secrets.token_urlsafe(24)
        self._held[state] = (now + PENDING_TTL, owner, result)
        return state

    def take(self, state: str | None, owner: str | None = None) -> Any | None:
        if not state:
            return None
        held = self._held.get(state)
        if held is None or held[1] != owner:
            return None
        del self._held[state]
        if held[0] < time.monotonic():
            return None
        return held[2]


def input_required(issued: list[IssuedChallenge], state: str) -> types.InputRequiredResult:
    """2026-07-28: the URL elicitations for ``issued``, to be answered before the retry."""
    requests: dict[str, types.InputRequest] = {
        f"approval-{i}": types.ElicitRequest(params=types.ElicitRequestURLParams(message=message_for(c), url=c.link or ""))
        for i, c in enumerate(issued)
    }
    return types.InputRequiredResult(input_requests=requests, request_state=state)


def is_modern(ctx: Any) -> bool:
    return getattr(ctx, "protocol_version", None) in MODERN_PROTOCOL_VERSIONS
