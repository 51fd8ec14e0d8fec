"""Execution records in the store, changed only through the lifecycle table.

The machine itself — states, events, transitions, adapter states, retry rules — is
:mod:`mcpaql.protocol.lifecycle` (sans-IO, re-exported here); this module persists records and
applies events with compare-and-set, so two processes racing to finish the same execution
cannot both succeed.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from typing import Any

from ..protocol.errors import MCPAQLError, not_found_resource
from ..protocol.lifecycle import (
    ADAPTER_STATES,
    RETRY_AS_NEW,
    TERMINAL,
    TRANSITIONS,
    Event,
    State,
    allowed_events,
    apply,
    core_state,
    lifecycle_info,
    retry_plan,
)
from ..store.base import NS_EXECUTION, Store
from .audit import iso

__all__ = [
    "ADAPTER_STATES",
    "LIFECYCLE_INFO",
    "RETRY_AS_NEW",
    "TERMINAL",
    "TRANSITIONS",
    "Event",
    "Executions",
    "State",
    "allowed_events",
    "apply",
    "core_state",
    "illegal_now",
    "lifecycle_info",
    "retry_plan",
]

# The safety loop's monitored executions: abort_execution cancels them; there is no retry
# operation (an agent starts a new execution) and progress is reported as steps, not percentages.
LIFECYCLE_INFO: dict[str, Any] = lifecycle_info(cancel=True, retry=False, progress=False)


def illegal_now(status: str, message: str) -> MCPAQLError:
    """``VALIDATION_INVALID_VALUE`` for an event the execution's state does not allow, with the
    events it does allow (the same details for the safety loop and background jobs)."""
    details = {
        "param_name": "execution_id",
        "constraint": "lifecycle",
        "status": status,
        "allowed_events": [ev.value for ev in allowed_events(status)],
    }
    return MCPAQLError("VALIDATION_INVALID_VALUE", message, details)


class Executions:
    """Execution records in the store; every change goes through :func:`apply`."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock  # wall-clock seconds; injectable for tests

    async def create(self, agent: str, session_id: str | None, **extra: Any) -> dict[str, Any]:  # None: per-request session
        eid = "exec_" + secrets.token_hex(12)
        now = self.clock()
        rec = {
            "execution_id": eid,
            "element_name": agent,
            "session_id": session_id,
            "status": State.PENDING.value,
            "created_at": iso(now),
            "steps": 0,
            **extra,
        }
        await self.store.put(NS_EXECUTION, eid, rec)
        return rec

    async def get(self, eid: str) -> dict[str, Any] | None:
        return await self.store.get(NS_EXECUTION, eid)

    async def fire(self, eid: str, event: Event, **changes: Any) -> dict[str, Any]:
        """Apply ``event`` atomically; raise ``VALIDATION_INVALID_VALUE`` if illegal now."""
        for _ in range(8):
            rec = await self.get(eid)
            if rec is None:
                raise not_found_resource("execution", eid)
            try:
                nxt = apply(rec["status"], event)
            except ValueError as e:
                raise illegal_now(rec["status"], f"Execution '{eid}': {e}") from None
            now = iso(self.clock())
            stamp: dict[str, Any] = {"status": nxt.value}
            if nxt is State.RUNNING and "started_at" not in rec:
                stamp["started_at"] = now
            if nxt in TERMINAL:
                stamp["finished_at"] = now
            done = await self.store.cas(NS_EXECUTION, eid, {"status": rec["status"]}, {**stamp, **changes})
            if done is not None:
                return done
        raise MCPAQLError(
            "CONFLICT_VERSION_MISMATCH",
            f"Execution '{eid}' changed concurrently; retry",
            {"resource_type": "execution", "resource_id": eid},
        )

    async def fail_session(self, session_id: str) -> int:
        """Session end: in-progress executions of that session become ``cancelled`` (REQ-EXEC-013)."""
        n = 0
        for rec in await self.store.scan(NS_EXECUTION, {"session_id": session_id}):
            if core_state(rec["status"]) not in TERMINAL:
                try:
                    await self.fire(rec["execution_id"], Event.CANCEL, reason="session_closed")
                    n += 1
                except MCPAQLError:
                    pass
        return n

    @staticmethod
    def view(rec: dict[str, Any]) -> dict[str, Any]:
        """The state response of CORE §8.4.3."""
        keys = ("execution_id", "status", "element_name", "started_at", "finished_at", "steps", "error", "reason")
        return {k: rec[k] for k in keys if k in rec}
