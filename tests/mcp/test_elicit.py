"""The 2026-07-28 held results behind URL-mode elicitation: only the exact ``requestState`` this
server minted gets a held result back, once; anything a client makes up gets nothing."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from mcpaql.mcp.elicit import MAX_PENDING, PendingResults, input_required, supports_url_elicitation
from mcpaql.safety.verification import IssuedChallenge


@given(st.one_of(st.none(), st.text(max_size=64)))
def test_a_made_up_state_gets_nothing(state: str | None) -> None:
    pending = PendingResults()
    pending.hold({"r": 1})
    assert pending.take(state) is None


def test_a_held_result_is_returned_once_and_the_store_is_bounded() -> None:
    pending = PendingResults()
    states = [pending.hold(i) for i in range(MAX_PENDING + 5)]
    assert pending.take(states[0]) is None  # the oldest were dropped
    assert pending.take(states[-1]) == MAX_PENDING + 4
    assert pending.take(states[-1]) is None


def test_input_required_carries_only_the_link() -> None:
    c = IssuedChallenge("0b0e…", "confirm", "delete_task t_1", "http://127.0.0.1:1/c/0b0e")
    result = input_required([c], "state")
    wire = result.model_dump(by_alias=True, mode="json", exclude_none=True)
    [request] = wire["inputRequests"].values()
    assert request["method"] == "elicitation/create"
    assert request["params"]["mode"] == "url" and request["params"]["url"] == c.link
    assert wire["requestState"] == "state"


def test_no_session_no_url_elicitation() -> None:
    assert supports_url_elicitation(object()) is False


def test_a_held_result_is_only_for_the_caller_that_caused_it() -> None:
    pending = PendingResults()
    state = pending.hold({"r": "alice's"}, "alice")
    assert pending.take(state, "mallory") is None  # another caller gets nothing
    assert pending.take(state) is None  # nor does an unauthenticated one
    assert pending.take(state, "alice") == {"r": "alice's"}  # and the owner still gets it, once
    assert pending.take(state, "alice") is None
