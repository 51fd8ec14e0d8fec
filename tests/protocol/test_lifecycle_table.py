"""The execution lifecycle is one table (issue 12 §4): every derived view agrees with it, for
any sequence of events (hypothesis), and the introspected ``lifecycle`` of each runtime is
computed from it."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcpaql.protocol.lifecycle import (
    ADAPTER_STATES,
    RETRY_AS_NEW,
    TERMINAL,
    TRANSITIONS,
    Event,
    State,
    allowed_events,
    apply,
    lifecycle_info,
    retry_plan,
)
from mcpaql.safety.jobs import LIFECYCLE as JOBS_LIFECYCLE
from mcpaql.safety.lifecycle import LIFECYCLE_INFO as LOOP_LIFECYCLE

STATE_NAMES = [s.value for s in State] + list(ADAPTER_STATES)


@given(st.sampled_from(STATE_NAMES), st.lists(st.sampled_from(list(Event)), max_size=12))
def test_any_event_sequence_follows_the_table(start: str, events: list[Event]) -> None:
    state = start
    for event in events:
        legal = event in allowed_events(state)
        try:
            nxt = apply(state, event)
        except ValueError as e:
            assert not legal
            assert event.value in str(e)  # one line naming what was refused
            continue
        assert legal
        core = State(state) if state in State.__members__.values() else ADAPTER_STATES[state]
        assert TRANSITIONS[(core, event)] is nxt
        # terminal states are final, except the one retry edge the table names
        assert core not in TERMINAL or (core, event) == (State.FAILED, Event.RETRY)
        state = nxt.value


@given(st.sampled_from(STATE_NAMES))
def test_retry_plan_agrees_with_the_table(state: str) -> None:
    plan = retry_plan(state)
    if Event.RETRY in allowed_events(state):
        assert plan == "same"
    elif plan == "new":  # retried as a new execution: the old one is terminal and stays so
        assert allowed_events(state) == []
    assert (plan is not None) == (
        Event.RETRY in allowed_events(state) or any(s.value == state or ADAPTER_STATES.get(state) is s for s in RETRY_AS_NEW)
    )


def test_each_runtime_lifecycle_is_derived_from_the_table() -> None:
    assert lifecycle_info(cancel=True, retry=True, progress=True) == JOBS_LIFECYCLE
    assert JOBS_LIFECYCLE["supports_retry"] is True  # jobs offer retry_execution
    assert LOOP_LIFECYCLE["supports_retry"] is False  # the loop offers no retry operation
    assert LOOP_LIFECYCLE["supports_cancel"] is True  # abort_execution
    from mcpaql.demo.operations import LIFECYCLE as DEMO_LIFECYCLE

    assert lifecycle_info(cancel=False, retry=False, progress=True) == DEMO_LIFECYCLE
    for info in (JOBS_LIFECYCLE, LOOP_LIFECYCLE, DEMO_LIFECYCLE):
        assert info["states"] == [s.value for s in State]
