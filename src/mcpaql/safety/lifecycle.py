"""The execution lifecycle as a table-driven state machine (CORE §8.4; REQ-EXEC-*).

Theory of operation (in the manner of h11's ``_state.py``): an execution is always in exactly
one *core state*; every rule of the machine is in the two tables below and nowhere else.

    pending ──start──▶ running ──complete──▶ completed
       │                  │  └───fail─────▶ failed ──retry──▶ running
       └──cancel──▶ cancelled ◀──cancel──┘

``TRANSITIONS`` maps (state, event) to the next state; anything missing is illegal, so
terminal states (``completed``, ``failed``, ``cancelled``) have no way out except the optional
``failed → running`` retry, and ``cancel`` is legal from every non-terminal state
(REQ-EXEC-010). Adapters may have their own states (``queued``, ``paused``, ``retrying``…);
``ADAPTER_STATES`` maps each onto the core state it behaves as (REQ-EXEC-009), and an adapter
state is only ever *reported* — transitions are decided on the core state it maps to.

:func:`apply` is the only function that changes a state; :class:`Executions` persists records
in the store and applies events with compare-and-set, so two processes racing to finish the
same execution cannot both succeed.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable
from enum import StrEnum
from typing import Any

from ..protocol.errors import MCPAQLError
from ..store.base import NS_EXECUTION, Store
from .audit import iso


class State(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"


class Event(StrEnum):
    START = "start"
    COMPLETE = "complete"
    FAIL = "fail"
    CANCEL = "cancel"
    RETRY = "retry"


TRANSITIONS: dict[tuple[State, Event], State] = {
    (State.PENDING, Event.START): State.RUNNING,
    (State.PENDING, Event.CANCEL): State.CANCELLED,
    (State.RUNNING, Event.COMPLETE): State.COMPLETED,
    (State.RUNNING, Event.FAIL): State.FAILED,
    (State.RUNNING, Event.CANCEL): State.CANCELLED,
    (State.FAILED, Event.RETRY): State.RUNNING,
}

TERMINAL: frozenset[State] = frozenset({State.COMPLETED, State.FAILED, State.CANCELLED})

# Adapter-specific states and the core state each behaves as (CORE §8.4.4).
ADAPTER_STATES: dict[str, State] = {
    "queued": State.PENDING,
    "scheduled": State.PENDING,
    "paused": State.RUNNING,
    "retrying": State.RUNNING,
    "awaiting_approval": State.RUNNING,
    "succeeded": State.COMPLETED,
    "errored": State.FAILED,
    "aborted": State.CANCELLED,
}

LIFECYCLE_INFO: dict[str, Any] = {
    "states": [s.value for s in State],  # a paused agent's execution stays "running" (loop.py)
    "supports_cancel": True,
    "supports_retry": False,
    "progress_reporting": False,
}


def core_state(state: str) -> State:
    """The core state for a core or adapter state name; unknown names are rejected."""
    try:
        return State(state)
    except ValueError:
        pass
    if state in ADAPTER_STATES:
        return ADAPTER_STATES[state]
    raise ValueError(f"unknown execution state {state!r}")


def apply(state: str, event: Event | str) -> State:
    """The next core state, or ``ValueError`` if ``event`` is illegal in ``state``."""
    current = core_state(state)
    nxt = TRANSITIONS.get((current, Event(event)))
    if nxt is None:
        raise ValueError(f"cannot {Event(event).value} an execution that is {current.value}")
    return nxt


def allowed_events(state: str) -> list[Event]:
    current = core_state(state)
    return [e for (s, e) in TRANSITIONS if s is current]


class Executions:
    """Execution records in the store; every change goes through :func:`apply`."""

    def __init__(self, store: Store, *, clock: Callable[[], float] = time.time) -> None:
        self.store = store
        self.clock = clock  # wall-clock seconds; injectable for tests

    async def create(self, agent: str, session_id: str, **extra: Any) -> dict[str, Any]:
        eid = "exec_" + secrets.token_hex(12)
        now = self.clock()
        rec = {"execution_id": eid, "element_name": agent, "session_id": session_id, "status": State.PENDING.value,
               "created_at": iso(now), "steps": 0, **extra}
        await self.store.put(NS_EXECUTION, eid, rec)
        return rec

    async def get(self, eid: str) -> dict[str, Any] | None:
        return await self.store.get(NS_EXECUTION, eid)

    async def fire(self, eid: str, event: Event, **changes: Any) -> dict[str, Any]:
        """Apply ``event`` atomically; raise ``VALIDATION_INVALID_VALUE`` if illegal now."""
        for _ in range(8):
            rec = await self.get(eid)
            if rec is None:
                raise MCPAQLError("NOT_FOUND_RESOURCE", f"Resource 'execution' not found: '{eid}'",
                                  {"resource_type": "execution", "resource_id": eid})
            try:
                nxt = apply(rec["status"], event)
            except ValueError as e:
                raise MCPAQLError(
                    "VALIDATION_INVALID_VALUE", f"Execution '{eid}': {e}",
                    {"param_name": "execution_id", "constraint": "lifecycle", "status": rec["status"],
                     "allowed_events": [ev.value for ev in allowed_events(rec["status"])]},
                ) from None
            now = iso(self.clock())
            stamp: dict[str, Any] = {"status": nxt.value}
            if nxt is State.RUNNING and "started_at" not in rec:
                stamp["started_at"] = now
            if nxt in TERMINAL:
                stamp["finished_at"] = now
            done = await self.store.cas(NS_EXECUTION, eid, {"status": rec["status"]}, {**stamp, **changes})
            if done is not None:
                return done
        raise MCPAQLError("CONFLICT_VERSION_MISMATCH", f"Execution '{eid}' changed concurrently; retry",
                          {"resource_type": "execution", "resource_id": eid})

    async def running_for(self, agent: str | None = None) -> list[dict[str, Any]]:
        where: dict[str, Any] = {"status": State.RUNNING.value}
        if agent is not None:
            where["element_name"] = agent
        return await self.store.scan(NS_EXECUTION, where)

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
