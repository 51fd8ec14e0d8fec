"""The execution lifecycle as a table-driven state machine (CORE §8.4; REQ-EXEC-*), sans-IO.

Theory of operation (in the manner of h11's ``_state.py``): an execution is always in exactly
one *core state*; every rule of the machine is in the tables below and nowhere else. Three
users derive from it: the safety loop's monitored executions and background jobs
(``safety/lifecycle.py`` persists records and applies events with compare-and-set), and the demo
adapter's executions (``demo/store.py``). Introspection's ``lifecycle`` block of each operation
is :func:`lifecycle_info`, computed from the same tables for the events that operation's runtime
offers — so ``supports_retry`` can never disagree with the table again.

    pending ──start──▶ running ──complete──▶ completed
       │                  │  └───fail─────▶ failed ──retry──▶ running
       └──cancel──▶ cancelled ◀──cancel──┘

``TRANSITIONS`` maps (state, event) to the next state; anything missing is illegal, so
terminal states (``completed``, ``failed``, ``cancelled``) have no way out except the optional
``failed → running`` retry, and ``cancel`` is legal from every non-terminal state
(REQ-EXEC-010). ``cancelled`` is terminal (REQ-EXEC-004), so "retrying" a cancelled execution
is not a transition: it *starts a new execution* linked to the old one (``RETRY_AS_NEW``);
:func:`retry_plan` says which applies. A runtime that offers no retry operation (the safety
loop, the demo) simply never fires ``retry``, and says so in its :func:`lifecycle_info`.

Adapters may have their own states (``queued``, ``paused``, ``retrying``…);
``ADAPTER_STATES`` maps each onto the core state it behaves as (REQ-EXEC-009), and an adapter
state is only ever *reported* — transitions are decided on the core state it maps to.

:func:`apply` is the only function that decides a next state; ``safety/lifecycle.py``'s ``Executions`` persists records
in the store and applies events with compare-and-set, so two processes racing to finish the
same execution cannot both succeed.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, Literal


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

# A cancelled execution is retried by starting a new one (it is terminal, REQ-EXEC-004).
RETRY_AS_NEW: frozenset[State] = frozenset({State.CANCELLED})


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


def retry_plan(state: str) -> Literal["same", "new"] | None:
    """How a retry of an execution in ``state`` runs: ``same`` (the table's ``retry``
    transition, same id), ``new`` (a new execution, ``retry_of`` the old), or None (not now)."""
    current = core_state(state)
    if (current, Event.RETRY) in TRANSITIONS:
        return "same"
    return "new" if current in RETRY_AS_NEW else None


def lifecycle_info(*, cancel: bool, retry: bool, progress: bool) -> dict[str, Any]:
    """The ``lifecycle`` an operation's introspection shows (CORE §8.4), for a runtime that
    offers a cancel operation (``cancel``), a retry operation (``retry``) and progress."""
    return {
        "states": [s.value for s in State],
        "supports_cancel": cancel and any(e is Event.CANCEL for (_, e) in TRANSITIONS),
        "supports_retry": retry and (any(e is Event.RETRY for (_, e) in TRANSITIONS) or bool(RETRY_AS_NEW)),
        "progress_reporting": progress,
    }
