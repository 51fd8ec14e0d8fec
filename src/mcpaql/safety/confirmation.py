"""Confirmation tokens (CT; CHECKLIST REQ-TOKEN-*): ``conf_…`` for dangerous operations and
``quota_continue_…`` for quota pauses.

A token is ``{prefix}_{public id}{secret}``: a 96-bit public id (16 characters) that names the
record, and a 256-bit secret (43 characters) of which the store holds only a salted hash
(:mod:`.sealing`). The payload lives server-side (tamper-resistant, CT §6.2), bound to the
adapter, the operation, a SHA-256 of the canonical JSON of the bound parameters (underscore
meta excluded), the caller's *identity* (:mod:`.identity`) and, where the connection has a
session that outlives the request, that session. So a token is redeemable from any process
sharing the store and across stateless requests, but only by its caller: another identity's
or another session's token is ``TOKEN_INVALID`` (indistinct from unknown, CT §6.3).

Only the public id (``token_id``) is ever logged or audited. Tokens are single use (the
consumption is a compare-and-set in one store transaction, atomic across processes) and
expire (5 min default). Session-bound tokens are deleted when their session closes unless
``persist_tokens`` is set, which keeps them (still bound to the identity) past the session.

Validation order follows CT §4.3: exists → scope (operation, params, adapter) → expiry →
consumption.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from ..protocol.context import Context
from ..protocol.errors import MCPAQLError
from ..store.base import NS_TOKEN, Store
from .audit import Auditor, iso
from .identity import DEFAULT_AGENT_ID, identity_of, token_session
from .sealing import opens, seal

TOKEN_RE = re.compile(r"^(conf|quota_continue)_[A-Za-z0-9_-]{1,64}$")
ID_CHARS = 16  # secrets.token_urlsafe(12): the public id
SECRET_CHARS = 43  # secrets.token_urlsafe(32): 256 bits
PURGE_GRACE = 3600.0  # expired tokens are kept this long so TOKEN_EXPIRED stays distinguishable
MAX_TTL = {"conf": 900, "conf_forbidden": 300, "quota_continue": 600}


class ConfirmationRequired(MCPAQLError):
    """``CONFIRMATION_REQUIRED`` carrying the schema-valid top-level ``confirmation`` object
    that :func:`mcpaql.protocol.envelope.failure` mirrors next to ``error`` (Part F #7)."""

    def __init__(
        self, message: str, details: dict[str, Any], confirmation: dict[str, Any], code: str = "CONFIRMATION_REQUIRED"
    ) -> None:
        super().__init__(code, message, details)
        self.confirmation = confirmation


def params_hash(operation: str, params: dict[str, Any]) -> str:
    canon = json.dumps(
        {"operation": operation, "params": {k: v for k, v in params.items() if not k.startswith("_")}},
        sort_keys=True,
        separators=(",", ":"),
        ensure_ascii=False,
        default=str,
    )
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


def split_token(token: Any, prefix: str) -> tuple[str, str] | None:
    """``(token_id, secret)`` of a well-formed token with ``prefix`` (``conf_``), else None."""
    if not isinstance(token, str) or not TOKEN_RE.match(token) or not token.startswith(prefix):
        return None
    body = token[len(prefix) :]
    if len(body) != ID_CHARS + SECRET_CHARS:
        return None
    return prefix + body[:ID_CHARS], body[ID_CHARS:]


def token_id(token: Any) -> str | None:
    """The loggable public id of a token (never the secret half); None if malformed."""
    for prefix in ("conf_", "quota_continue_"):
        parts = split_token(token, prefix)
        if parts is not None:
            return parts[0]
    return None


@dataclass(frozen=True, slots=True)
class Issued:
    token: str
    token_id: str
    expires_at: float

    @property
    def expires_iso(self) -> str:
        return iso(self.expires_at)


class ConfirmationService:
    def __init__(
        self,
        store: Store,
        adapter: str,
        *,
        ttl_seconds: float = 300.0,
        forbidden_ttl_seconds: float = 120.0,
        quota_ttl_seconds: float = 300.0,
        clock_skew_tolerance_seconds: float = 30.0,
        persist: bool = False,
        audit: Auditor | None = None,
        max_failures_per_minute: int = 30,
        agent_id: str = DEFAULT_AGENT_ID,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if not 0 <= clock_skew_tolerance_seconds <= 300:
            raise ValueError("clock_skew_tolerance_seconds must be within 0..300 (CT §5.1)")
        if ttl_seconds <= 0 or ttl_seconds > MAX_TTL["conf"]:
            raise ValueError("confirmation ttl must be within (0, 900] seconds (CT §5.1)")
        if forbidden_ttl_seconds <= 0 or forbidden_ttl_seconds > MAX_TTL["conf_forbidden"]:
            raise ValueError("forbidden-operation ttl must be within (0, 300] seconds (CT §5.1)")
        if quota_ttl_seconds <= 0 or quota_ttl_seconds > MAX_TTL["quota_continue"]:
            raise ValueError("quota continuation ttl must be within (0, 600] seconds (CT §5.1)")
        self.store = store
        self.adapter = adapter
        self.ttl = ttl_seconds
        self.forbidden_ttl = forbidden_ttl_seconds
        self.quota_ttl = quota_ttl_seconds
        self.skew = clock_skew_tolerance_seconds
        self.persist = persist
        self.audit = audit or Auditor(store, adapter)
        self.max_failures = max_failures_per_minute  # CT §6.5: failed validations are rate-limited
        self.agent_id = agent_id  # the identity of callers whose transport established none
        self.clock = clock  # wall-clock seconds; injectable so expiry is tested without sleeping
        if clock_skew_tolerance_seconds > 60:
            import logging

            logging.getLogger("mcpaql.safety").warning(
                "clock_skew_tolerance_seconds=%s widens the replay window (CT §5.1)", clock_skew_tolerance_seconds
            )

    def caller(self, ctx: Context) -> tuple[str, str | None]:
        """``(identity, session_id)`` a token of this call is bound to (see :mod:`.identity`)."""
        return identity_of(ctx, self.agent_id), token_session(ctx)

    async def issue(
        self,
        kind: str,
        operation: str,
        params: dict[str, Any],
        identity: str,
        session_id: str | None,
        *,
        ttl: float | None = None,
        context: dict[str, Any] | None = None,
    ) -> Issued:
        """A new token for ``identity`` (and ``session_id``, None for a per-request session)."""
        prefix = "conf" if kind == "confirmation" else "quota_continue"
        tid = f"{prefix}_{secrets.token_urlsafe(12)}"
        secret = secrets.token_urlsafe(32)  # 256 bits (CT §3.1)
        now = self.clock()
        expires = now + (ttl if ttl is not None else (self.ttl if prefix == "conf" else self.quota_ttl))
        record = {
            "id": tid,
            "type": kind,
            "operation": operation,
            "params_hash": params_hash(operation, params),
            "adapter_name": self.adapter,
            "issued_at": iso(now),
            "expires_at": expires,
            "consumed": False,
            "identity": identity,
            "session_id": None if self.persist else session_id,
            "secret": seal(secret),
            "context": context or {},
        }
        await self.store.put(NS_TOKEN, tid, record, purge_at=expires + PURGE_GRACE)
        await self.audit(
            "TOKEN_ISSUED",
            token_id=tid,
            operation=operation,
            outcome="success",
            client_context={"identity": identity, "session_id": session_id},
        )
        return Issued(tid + secret, tid, expires)

    async def redeem(
        self, kind: str, token: Any, operation: str, params: dict[str, Any], identity: str, session_id: str | None
    ) -> dict[str, Any]:
        """Validate and consume ``token`` for this exact call by this caller, or raise ``TOKEN_*``.

        Rejections count against the caller's identity (30 a minute), never against the
        identity a token was issued to, so nobody can lock another caller out."""
        prefix = "conf_" if kind == "confirmation" else "quota_continue_"
        fails = await self.store.peek_window(self._fail_key(identity), 60, now=self.clock())
        if fails.count >= self.max_failures:
            raise MCPAQLError(
                "RATE_LIMIT_EXCEEDED",
                "Too many rejected confirmation tokens from this caller; try again later",
                {
                    "limit": self.max_failures,
                    "remaining": 0,
                    "window": "minute",
                    "resets_at": iso(fails.resets_at),
                    "retry_after_seconds": fails.retry_after(self.clock()),
                },
            )
        parts = split_token(token, prefix)
        if parts is None:
            await self._reject(None, operation, identity, session_id, "malformed")
            raise MCPAQLError("TOKEN_INVALID", "Confirmation token is invalid", None)
        tid, secret = parts
        rec = await self.store.get(NS_TOKEN, tid)
        if (
            rec is None
            or rec.get("type") != kind
            or not opens(rec.get("secret"), secret)
            or rec.get("identity") != identity
            or rec.get("session_id") not in (None, session_id)
        ):
            await self._reject(tid, operation, identity, session_id, "unknown")
            raise MCPAQLError("TOKEN_INVALID", "Confirmation token is invalid", {"token_id": tid})
        if (
            rec.get("operation") != operation
            or rec.get("adapter_name") != self.adapter
            or rec.get("params_hash") != params_hash(operation, params)
        ):
            await self._reject(tid, operation, identity, session_id, "scope_mismatch")
            raise MCPAQLError(
                "TOKEN_SCOPE_MISMATCH",
                "Confirmation token was issued for a different operation or different parameters",
                {"token_id": tid, "operation": operation},
            )
        expires = rec.get("expires_at")
        now = self.clock()
        if not isinstance(expires, int | float) or now > expires + self.skew:
            await self._reject(tid, operation, identity, session_id, "expired")
            raise MCPAQLError(
                "TOKEN_EXPIRED",
                "Confirmation token has expired",
                {
                    "token_id": tid,
                    "expired_at": iso(expires) if isinstance(expires, int | float) else None,
                    "current_time": iso(now),
                },
            )
        if (
            rec.get("consumed")
            or await self.store.cas(NS_TOKEN, tid, {"consumed": False}, {"consumed": True, "consumed_at": iso(now)}) is None
        ):
            await self._reject(tid, operation, identity, session_id, "already_used")
            raise MCPAQLError("TOKEN_ALREADY_USED", "Confirmation token has already been used", {"token_id": tid})
        await self.audit(
            "TOKEN_VALIDATED",
            token_id=tid,
            operation=operation,
            outcome="success",
            client_context={"identity": identity, "session_id": session_id},
        )
        return rec

    async def revoke(self, token: str, identity: str, session_id: str | None = None) -> bool:
        tid = token_id(token)
        rec = await self.store.get(NS_TOKEN, tid) if tid else None
        if rec is None or rec.get("identity") != identity or rec.get("session_id") not in (None, session_id):
            return False
        await self.store.delete(NS_TOKEN, cast(str, tid))  # str: rec is only found when tid is set
        await self.audit(
            "TOKEN_REVOKED",
            token_id=tid,
            operation=rec.get("operation"),
            outcome="success",
            client_context={"identity": identity, "session_id": session_id},
        )
        return True

    async def revoke_session(self, session_id: str) -> int:
        """Session end invalidates every session-scoped token (REQ-TOKEN-022, REQ-SESS-003)."""
        n = 0
        for rec in await self.store.scan(NS_TOKEN, {"session_id": session_id}):
            if await self.store.delete(NS_TOKEN, rec["id"]):
                n += 1
                await self.audit(
                    "TOKEN_REVOKED",
                    token_id=rec["id"],
                    operation=rec.get("operation"),
                    outcome="success",
                    failure_reason="session_closed",
                    client_context={"session_id": session_id},
                )
        return n

    def _fail_key(self, identity: str) -> str:
        return f"tokfail:{self.adapter}:{identity}"

    async def _reject(self, tid: str | None, operation: str, identity: str, session_id: str | None, reason: str) -> None:
        await self.store.incr_window(self._fail_key(identity), 60, now=self.clock())
        await self.audit(
            "TOKEN_REJECTED",
            token_id=tid,
            operation=operation,
            outcome="failure",
            failure_reason=reason,
            client_context={"identity": identity, "session_id": session_id},
        )
