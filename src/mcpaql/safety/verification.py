"""Out-of-band verification (CORE §8.8; REQ-OOB-*): challenges whose code only a human sees.

A challenge has a random UUID v4 id (what the agent sees) and a code of 160 bits from
:mod:`secrets` (what only the human sees, through a :class:`DisplayChannel`: the local
approval page, a webhook, an OS dialog). The store keeps only a salted hash of the code
(:mod:`.sealing`); the code itself exists only in the display channels and, for the approval
page of this process, in this process's memory (``pending(with_codes=True)``). It is never
put in an MCP response, ``_meta``, error, audit entry or log line.

A challenge belongs to the *identity* it concerns (:mod:`.identity`): only that identity can
submit a code for it — for any other caller it is unknown, and the attempt is counted against
the caller. Verification is one-time: the challenge is *taken* from the store atomically on
its identity's first attempt, right or wrong, so a wrong guess burns it (the failure budget
of a challenge is one attempt; a fresh challenge is issued on the next step). Failed attempts
are also limited per *calling* identity (10 per 60 s by default) in a store window, so the
limit holds across restarts and processes; one caller's failures never lock out another.
"""

from __future__ import annotations

import abc
import asyncio
import base64
import contextlib
import logging
import re
import secrets
import shutil
import time
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from ..config import settings
from ..protocol.errors import MCPAQLError
from ..store.base import NS_CHALLENGE, Store
from .audit import Auditor, iso
from .sealing import opens, seal

log = logging.getLogger("mcpaql.safety.verification")

CODE_BYTES = 20  # 160 bits ≥ the 128 required (CORE §8.8.2)
_SECRET_KEYS = ("code", "code_seal")


def new_code() -> str:
    raw = base64.b32encode(secrets.token_bytes(CODE_BYTES)).decode("ascii").rstrip("=")
    return "-".join(raw[i : i + 4] for i in range(0, len(raw), 4))


def normalize_code(code: str) -> str:
    return re.sub(r"[^A-Z2-7]", "", code.upper())


def public(record: dict[str, Any]) -> dict[str, Any]:
    """A challenge without its secret: the only form that may leave the safety layer."""
    return {k: v for k, v in record.items() if k not in _SECRET_KEYS}


@dataclass(frozen=True)
class IssuedChallenge:
    """A challenge issued while one request was handled, as the MCP layer may show it to the
    client's human: its id, what it is about, and the approval page's link for it (``None``
    without a page). Never the code: the link opens a page that shows the code only to a
    browser holding the operator's key."""

    challenge_id: str
    kind: str
    action: str
    link: str | None


_ISSUED: ContextVar[list[IssuedChallenge] | None] = ContextVar("mcpaql_issued_challenges", default=None)


@contextlib.contextmanager
def collecting_challenges() -> Iterator[list[IssuedChallenge]]:
    """Collect the challenges :meth:`Challenges.create` issues inside the block (one request).

    Why: a client that supports URL-mode elicitation can put the approval link in front of its
    human at the moment it matters (docs/protocol.md); the safety layer only says what it issued
    and stays free of any transport."""
    bucket: list[IssuedChallenge] = []
    token = _ISSUED.set(bucket)
    try:
        yield bucket
    finally:
        _ISSUED.reset(token)


class DisplayChannel(abc.ABC):
    """Where a human sees a challenge's code. Must be unreachable for the AI agent."""

    name = "channel"

    @abc.abstractmethod
    async def show(self, challenge: dict[str, Any]) -> None:
        """Present ``challenge`` (which includes ``code``) to the human operator."""

    async def close(self) -> None:
        return None


class WebhookChannel(DisplayChannel):
    """POSTs the challenge (with its code) as JSON to an operator-controlled URL."""

    name = "webhook"

    def __init__(self, url: str, headers: dict[str, str] | None = None, timeout: float = 5.0) -> None:
        import httpx

        self.url = url
        self._client = httpx.AsyncClient(timeout=timeout, headers=headers or {})

    async def show(self, challenge: dict[str, Any]) -> None:
        try:
            r = await self._client.post(self.url, json=challenge)
            r.raise_for_status()
        except Exception as e:  # the code must not reach the log: name the failure only
            log.warning("webhook display channel failed for challenge %s: %s", challenge.get("id"), type(e).__name__)

    async def close(self) -> None:
        await self._client.aclose()


class OSDialogChannel(DisplayChannel):
    """A desktop dialog (zenity / kdialog on Linux, osascript on macOS), where one exists."""

    name = "os_dialog"

    def __init__(self) -> None:
        self.command = self.detect()

    @staticmethod
    def detect() -> list[str] | None:
        if shutil.which("osascript"):
            return ["osascript", "-e"]
        if settings().desktop:
            if shutil.which("zenity"):
                return ["zenity", "--info", "--title=mcpaql verification", "--text"]
            if shutil.which("kdialog"):
                return ["kdialog", "--title", "mcpaql verification", "--msgbox"]
        return None

    @classmethod
    def available(cls) -> bool:
        return cls.detect() is not None

    async def show(self, challenge: dict[str, Any]) -> None:
        if self.command is None:
            return
        text = (
            f"Agent '{challenge['agent']}' wants to: {challenge.get('action') or ''}\n"
            f"Reason: {challenge.get('reason') or ''}\n\nVerification code: {challenge['code']}"
        )
        if self.command[0] == "osascript":
            text = f'display dialog "{text.replace(chr(34), chr(39))}" with title "mcpaql verification"'
        try:
            await asyncio.create_subprocess_exec(
                *self.command, text, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL
            )
        except OSError as e:
            log.warning("OS dialog display channel failed: %s", type(e).__name__)


class Challenges:
    def __init__(
        self,
        store: Store,
        channels: list[DisplayChannel] | None = None,
        *,
        ttl_seconds: float = 300.0,
        max_failures: int = 10,
        failure_window_seconds: int = 60,
        audit: Auditor | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.store = store
        self.clock = clock  # wall-clock seconds; injectable so expiry is tested without sleeping
        self.channels = list(channels or [])
        self.ttl = ttl_seconds
        self.max_failures = max_failures
        self.window = failure_window_seconds
        self.audit = audit or Auditor(store, "safety")
        # Codes of the challenges this process issued, for its own approval page only: the store
        # never holds them, so a page in another process shows those challenges without a code.
        self._codes: dict[str, tuple[str, float]] = {}
        # The origin of this process's approval page while it is open (set by safety.channel):
        # each challenge then has a link of its own, ``{origin}/c/{id}``, that needs the page's key.
        self.link_origin: str | None = None

    def link(self, cid: str) -> str | None:
        """The approval page's link for challenge ``cid`` (no key, no code in it), if a page is open."""
        return f"{self.link_origin}/c/{cid}" if self.link_origin else None

    async def create(self, agent: str, kind: str, *, action: str = "", reason: str = "", **extra: Any) -> dict[str, Any]:
        """Create and display a challenge for identity ``agent``; return its public form (no code)."""
        code = new_code()
        now = self.clock()
        cid = str(uuid.uuid4())
        rec = {
            "id": cid,
            "agent": agent,
            "kind": kind,
            "action": action[:500],
            "reason": reason,
            "created_at": iso(now),
            "expires_at": now + self.ttl,
            "expires_iso": iso(now + self.ttl),
            "code_seal": seal(normalize_code(code)),
            **extra,
        }
        await self.store.put(NS_CHALLENGE, cid, rec, purge_at=now + self.ttl + 3600)
        self._codes = {k: v for k, v in self._codes.items() if v[1] > now}
        self._codes[cid] = (code, now + self.ttl)
        await self.audit("CHALLENGE_ISSUED", challenge_id=cid, agent=agent, kind=kind, outcome="success")
        bucket = _ISSUED.get()
        if bucket is not None:
            bucket.append(IssuedChallenge(cid, kind, rec["action"], self.link(cid)))
        shown = {**public(rec), "code": code}
        for ch in self.channels:
            try:
                await ch.show(dict(shown))
            except Exception as e:
                log.warning("display channel %s failed: %s", ch.name, type(e).__name__)
        return public(rec)

    async def get(self, cid: str) -> dict[str, Any] | None:
        rec = await self.store.get(NS_CHALLENGE, cid)
        return public(rec) if rec else None

    async def pending(self, *, with_codes: bool = False) -> list[dict[str, Any]]:
        """Unexpired challenges, public form. ``with_codes`` (for the human channel only: the
        approval page) adds ``code`` to those this process issued; others have no code here."""
        now = self.clock()
        out = [public(r) for r in await self.store.scan(NS_CHALLENGE) if r.get("expires_at", 0) > now]
        out.sort(key=lambda r: r.get("created_at", ""))
        if with_codes:
            for r in out:
                held = self._codes.get(r["id"])
                if held is not None:
                    r["code"] = held[0]
        return out

    def code_of(self, cid: str) -> str | None:
        """The code of a challenge this process issued and nobody has tried yet (human channel only)."""
        held = self._codes.get(cid)
        return held[0] if held is not None else None

    def _fail_key(self, caller: str) -> str:
        return f"oobfail:{caller}"

    async def verify(self, cid: Any, code: Any, *, caller: str, kinds: tuple[str, ...] | None = None) -> dict[str, Any]:
        """Check ``code`` for challenge ``cid`` on behalf of identity ``caller``; return the
        public challenge or raise. Another identity's challenge is treated as unknown."""
        cid = cid if isinstance(cid, str) else ""
        fails = await self.store.peek_window(self._fail_key(caller), self.window, now=self.clock())
        if fails.count >= self.max_failures:
            await self.audit("VERIFICATION_RATE_LIMITED", challenge_id=cid, agent=caller, outcome="failure")
            raise MCPAQLError(
                "RATE_LIMIT_EXCEEDED",
                "Too many failed verification attempts from this caller; try again later",
                {
                    "limit": self.max_failures,
                    "remaining": 0,
                    "window": "minute",
                    "resets_at": iso(fails.resets_at),
                    "retry_after_seconds": fails.retry_after(self.clock()),
                },
            )
        peek = await self.store.get(NS_CHALLENGE, cid) if cid else None
        if peek is not None and peek.get("agent") != caller:
            peek = None  # not this caller's challenge: it stays untouched for its own identity
        if peek is not None and kinds is not None and peek.get("kind") not in kinds:
            raise MCPAQLError(
                "VALIDATION_INVALID_VALUE",
                f"Challenge '{cid}' is a {peek.get('kind')} challenge; use "
                f"{'verify_challenge' if peek.get('kind') != 'confirm' else 'confirm_operation'}",
                {"param_name": "challenge_id", "constraint": "kind", "kind": peek.get("kind")},
            )
        rec = await self.store.take(NS_CHALLENGE, cid) if peek is not None else None  # one-time use
        if rec is not None:
            self._codes.pop(cid, None)
        reason = None
        if rec is None:
            reason = "unknown_or_used"
        elif rec.get("expires_at", 0) < self.clock():
            reason = "expired"
        elif not isinstance(code, str) or not opens(rec.get("code_seal"), normalize_code(code)):
            reason = "wrong_code"
        if reason is not None:
            w = await self.store.incr_window(self._fail_key(caller), self.window, now=self.clock())
            await self.audit("VERIFICATION_FAILED", challenge_id=cid, agent=caller, outcome="failure", failure_reason=reason)
            msg = "Verification challenge has expired" if reason == "expired" else "Verification failed"
            raise MCPAQLError(
                "PERMISSION_DENIED",
                f"Permission denied: '{msg}; a new challenge is issued on the next record_execution_step'",
                {
                    "reason": "challenge_expired" if reason == "expired" else "verification_failed",
                    "challenge_id": cid,
                    "attempts_remaining": max(0, self.max_failures - w.count),
                },
            )
        assert rec is not None
        await self.audit("VERIFICATION_SUCCEEDED", challenge_id=cid, agent=caller, kind=rec.get("kind"), outcome="success")
        return public(rec)

    async def discard(self, cid: str) -> None:
        self._codes.pop(cid, None)
        await self.store.delete(NS_CHALLENGE, cid)

    async def close(self) -> None:
        for ch in self.channels:
            await ch.close()
