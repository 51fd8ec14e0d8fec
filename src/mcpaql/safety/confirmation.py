"""Confirmation tokens (CT; CHECKLIST REQ-TOKEN-*): ``conf_…`` for dangerous operations and
``quota_continue_…`` for quota pauses.

A token is a random lookup key (256 bits from :mod:`secrets`); its payload lives server-side
in the store (tamper-resistant, CT §6.2), bound to the adapter, the operation and a SHA-256
hash of the canonical JSON of the bound parameters (underscore-prefixed meta excluded).
Tokens are single-use, expire (5 min default), and are session-scoped by default: they are
deleted when the session closes and another session's token is ``TOKEN_INVALID`` (indistinct
from unknown, CT §6.3). The retry sends the token as ``params._confirmation`` (Part F #8).

Validation order follows CT §4.3: exists → scope (operation, params, adapter) → expiry →
consumption; consumption is a compare-and-set, so two concurrent retries cannot both win.
"""

from __future__ import annotations

import hashlib
import json
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any

from ..protocol.errors import MCPAQLError
from ..store.base import NS_TOKEN, Store
from .audit import Auditor, iso

TOKEN_RE = re.compile(r"^(conf|quota_continue)_[A-Za-z0-9_-]{1,64}$")
PURGE_GRACE = 3600.0  # expired tokens are kept this long so TOKEN_EXPIRED stays distinguishable
MAX_TTL = {"conf": 900, "conf_forbidden": 300, "quota_continue": 600}


class ConfirmationRequired(MCPAQLError):
    """``CONFIRMATION_REQUIRED`` carrying the schema-valid top-level ``confirmation`` object
    that :func:`mcpaql.protocol.envelope.failure` mirrors next to ``error`` (Part F #7)."""

    def __init__(self, message: str, details: dict[str, Any], confirmation: dict[str, Any],
                 code: str = "CONFIRMATION_REQUIRED") -> None:
        super().__init__(code, message, details)
        self.confirmation = confirmation


def params_hash(operation: str, params: dict[str, Any]) -> str:
    canon = json.dumps(
        {"operation": operation, "params": {k: v for k, v in params.items() if not k.startswith("_")}},
        sort_keys=True, separators=(",", ":"), ensure_ascii=False, default=str,
    )
    return hashlib.sha256(canon.encode("utf-8")).hexdigest()


@dataclass(frozen=True, slots=True)
class Issued:
    token: str
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
        if clock_skew_tolerance_seconds > 60:
            import logging

            logging.getLogger("mcpaql.safety").warning(
                "clock_skew_tolerance_seconds=%s widens the replay window (CT §5.1)", clock_skew_tolerance_seconds
            )

    async def issue(
        self,
        kind: str,
        operation: str,
        params: dict[str, Any],
        session_id: str | None,
        *,
        ttl: float | None = None,
        context: dict[str, Any] | None = None,
    ) -> Issued:
        prefix = "conf" if kind == "confirmation" else "quota_continue"
        token = f"{prefix}_{secrets.token_urlsafe(32)}"  # 256 bits (CT §3.1)
        now = time.time()
        expires = now + (ttl if ttl is not None else (self.ttl if prefix == "conf" else self.quota_ttl))
        record = {
            "id": token,
            "type": kind,
            "operation": operation,
            "params_hash": params_hash(operation, params),
            "adapter_name": self.adapter,
            "issued_at": iso(now),
            "expires_at": expires,
            "consumed": False,
            "session_id": None if self.persist else session_id,
            "context": context or {},
        }
        await self.store.put(NS_TOKEN, token, record, purge_at=expires + PURGE_GRACE)
        await self.audit("TOKEN_ISSUED", token_id=token, operation=operation, outcome="success",
                         client_context={"session_id": session_id})
        return Issued(token, expires)

    async def redeem(self, kind: str, token: Any, operation: str, params: dict[str, Any],
                     session_id: str | None) -> dict[str, Any]:
        """Validate and consume ``token`` for this exact call, or raise ``TOKEN_*``."""
        prefix = "conf_" if kind == "confirmation" else "quota_continue_"
        fails = await self.store.peek_window(f"tokfail:{self.adapter}:{session_id}", 60)
        if fails.count >= self.max_failures:
            raise MCPAQLError(
                "RATE_LIMIT_EXCEEDED",
                "Too many rejected confirmation tokens in this session; try again later",
                {"limit": self.max_failures, "remaining": 0, "window": "minute", "resets_at": iso(fails.resets_at),
                 "retry_after_seconds": fails.retry_after()},
            )
        if not isinstance(token, str) or not TOKEN_RE.match(token) or not token.startswith(prefix):
            await self._reject(token if isinstance(token, str) else None, operation, session_id, "malformed")
            raise MCPAQLError("TOKEN_INVALID", "Confirmation token is invalid", None)
        rec = await self.store.get(NS_TOKEN, token)
        if rec is None or rec.get("type") != kind or (rec.get("session_id") not in (None, session_id)):
            await self._reject(token, operation, session_id, "unknown")
            raise MCPAQLError("TOKEN_INVALID", "Confirmation token is invalid", {"token": token})
        if (
            rec.get("operation") != operation
            or rec.get("adapter_name") != self.adapter
            or rec.get("params_hash") != params_hash(operation, params)
        ):
            await self._reject(token, operation, session_id, "scope_mismatch")
            raise MCPAQLError(
                "TOKEN_SCOPE_MISMATCH",
                "Confirmation token was issued for a different operation or different parameters",
                {"token": token, "operation": operation},
            )
        expires = rec.get("expires_at")
        now = time.time()
        if not isinstance(expires, int | float) or now > expires + self.skew:
            await self._reject(token, operation, session_id, "expired")
            raise MCPAQLError(
                "TOKEN_EXPIRED",
                "Confirmation token has expired",
                {"token": token, "expired_at": iso(expires) if isinstance(expires, int | float) else None,
                 "current_time": iso(now)},
            )
        if rec.get("consumed") or await self.store.cas(NS_TOKEN, token, {"consumed": False},
                                                       {"consumed": True, "consumed_at": iso(now)}) is None:
            await self._reject(token, operation, session_id, "already_used")
            raise MCPAQLError("TOKEN_ALREADY_USED", "Confirmation token has already been used", {"token": token})
        await self.audit("TOKEN_VALIDATED", token_id=token, operation=operation, outcome="success",
                         client_context={"session_id": session_id})
        return rec

    async def revoke(self, token: str, session_id: str | None = None) -> bool:
        rec = await self.store.get(NS_TOKEN, token)
        if rec is None or rec.get("session_id") not in (None, session_id):
            return False
        await self.store.delete(NS_TOKEN, token)
        await self.audit("TOKEN_REVOKED", token_id=token, operation=rec.get("operation"), outcome="success",
                         client_context={"session_id": session_id})
        return True

    async def revoke_session(self, session_id: str) -> int:
        """Session end invalidates every session-scoped token (REQ-TOKEN-022, REQ-SESS-003)."""
        n = 0
        for rec in await self.store.scan(NS_TOKEN, {"session_id": session_id}):
            if await self.store.delete(NS_TOKEN, rec["id"]):
                n += 1
                await self.audit("TOKEN_REVOKED", token_id=rec["id"], operation=rec.get("operation"),
                                 outcome="success", failure_reason="session_closed",
                                 client_context={"session_id": session_id})
        return n

    async def _reject(self, token: str | None, operation: str, session_id: str | None, reason: str) -> None:
        await self.store.incr_window(f"tokfail:{self.adapter}:{session_id}", 60)
        await self.audit("TOKEN_REJECTED", token_id=token, operation=operation, outcome="failure",
                         failure_reason=reason, client_context={"session_id": session_id})
