"""Security audit events, appended to the store's audit log and mirrored to the
``mcpaql.audit`` logger. Entries are built from explicit fields only — never from a whole
record — so an out-of-band code can never reach an audit entry or a log line."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from typing import Any

from ..store.base import Store

log = logging.getLogger("mcpaql.audit")

# Parameter names whose values are redacted from audit entries (DANGER §7.4 "redacted").
_REDACT = ("password", "secret", "token", "key", "code", "credential", "auth")


def iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_iso() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def redact(params: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k, v in params.items():
        if k.startswith("_"):
            continue
        out[k] = "[redacted]" if any(w in k.lower() for w in _REDACT) else v
    return out


class Auditor:
    def __init__(self, store: Store, adapter: str) -> None:
        self.store = store
        self.adapter = adapter

    async def __call__(self, event: str, **fields: Any) -> None:
        entry = {"timestamp": now_iso(), "event": event, "adapter_name": self.adapter, **fields}
        await self.store.append_audit(entry)
        log.info("%s %s", event, {k: v for k, v in fields.items() if k != "parameters"})
