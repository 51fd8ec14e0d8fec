"""Rate limits and quotas through a real Engine and store (REQ-RATE-*)."""

from __future__ import annotations

import pytest
from safety_support import build

from mcpaql.safety.ratelimit import Quota, RateRule

pytestmark = pytest.mark.anyio


async def test_REQ_RATE_002_003_exceeded_with_retry_after(any_store, assert_valid_envelope) -> None:
    h = build(any_store, trust="validated", rate_limits=[{"limit": 3, "window": "hour"}])
    for _ in range(3):
        assert (await h.call("get_task", task_id="1"))["success"] is True
    r = await h.call("get_task", task_id="1")
    assert_valid_envelope(r)
    assert r["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    d = r["error"]["details"]
    assert d["limit"] == 3 and d["remaining"] == 0 and d["window"] == "hour"
    assert 1 <= d["retry_after_seconds"] <= 3600 and d["resets_at"].endswith("Z")


async def test_REQ_RATE_010_per_operation_endpoint_category_and_session_scopes(any_store) -> None:
    h = build(
        any_store,
        trust="validated",
        rate_limits=[
            {"scope": "operation", "match": "create_*", "limit": 1, "window": "hour"},
            {"scope": "endpoint", "match": "update", "limit": 1, "window": "hour"},
            {"scope": "category", "match": "READ", "limit": 2, "window": "hour", "per_session": True},
        ],
    )
    assert (await h.call("create_task", title="a"))["success"] is True
    assert (await h.call("create_task", title="b"))["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert (await h.call("update_task", task_id="1", title="b"))["success"] is True
    assert (await h.call("update_task", task_id="1", title="c"))["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert (await h.call("get_task", task_id="1"))["success"] is True
    assert (await h.call("get_task", task_id="1"))["success"] is True
    assert (await h.call("get_task", task_id="1"))["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    other = h.engine.new_session()  # per-session budget
    assert (await h.call("get_task", session=other, task_id="1"))["success"] is True


async def test_REQ_RATE_001_refused_calls_do_not_consume_budget(any_store) -> None:
    h = build(any_store, trust="validated", rate_limits=[{"limit": 2, "window": "hour"}])
    await h.call("get_task", task_id="1")
    await h.call("get_task", task_id="1")
    for _ in range(5):
        assert (await h.call("get_task", task_id="1"))["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    status = await h.safety.limiter.status()
    assert status["api_limits"][0]["remaining"] == 0
    w = await any_store.peek_window(h.safety.limiter._rule_key(0, h.safety.limiter.rules[0], ""), 3600)
    assert w.count == 2


async def test_REQ_RATE_005_007_quota_warn_pause_continue_exhausted(any_store, assert_valid_envelope) -> None:
    h = build(any_store, trust="validated", quotas=[{"metric": "requests_per_hour", "warn": 1, "pause": 2, "hard_stop": 4}])
    first = await h.call("get_task", task_id="1")
    assert first["success"] is True and "warnings" not in first
    second = await h.call("get_task", task_id="1")
    assert second["warnings"][0]["code"] == "RATE_LIMIT_QUOTA_WARNING"
    paused = await h.call("get_task", task_id="1")
    assert_valid_envelope(paused)
    assert paused["error"]["code"] == "RATE_LIMIT_QUOTA_PAUSE"
    d = paused["error"]["details"]
    assert d["metric"] == "requests_per_hour" and d["pause_threshold"] == 2 and d["hard_stop_threshold"] == 4
    token = d["confirmation_token"]
    assert token.startswith("quota_continue_") and d["expires_at"].endswith("Z")
    wrong = await h.call("get_task", task_id="9", _quota_continue=token)
    assert wrong["error"]["code"] == "TOKEN_SCOPE_MISMATCH"
    cont = await h.call("get_task", task_id="1", _quota_continue=token)
    assert cont["success"] is True and cont["warnings"][0]["code"] == "RATE_LIMIT_QUOTA_WARNING"
    assert (await h.call("get_task", task_id="2"))["success"] is True  # pause acknowledged for this window
    exhausted = await h.call("get_task", task_id="3")
    assert exhausted["error"]["code"] == "RATE_LIMIT_QUOTA_EXHAUSTED"
    assert exhausted["error"]["details"]["hard_stop_threshold"] == 4
    assert exhausted["error"]["details"]["retry_after_seconds"] >= 1
    assert (await h.safety.limiter.status())["quotas"][0]["status"] == "exhausted"


async def test_REQ_RATE_007_confirmation_token_is_not_a_quota_token(any_store) -> None:
    h = build(any_store, trust="validated", quotas=[{"metric": "requests_per_day", "warn": 0, "pause": 0}])
    paused = await h.call("get_task", task_id="1")
    conf_like = "conf_" + paused["error"]["details"]["confirmation_token"].removeprefix("quota_continue_")
    assert (await h.call("get_task", task_id="1", _quota_continue=conf_like))["error"]["code"] == "TOKEN_INVALID"


@pytest.mark.parametrize("bad", [{"limit": 0}, {"limit": 1, "window": "week"}, {"limit": 1, "scope": "planet"}, {"limit": "ten"}])
def test_REQ_RATE_006_bad_rules_rejected(bad) -> None:
    with pytest.raises((ValueError, TypeError)):
        RateRule.parse(bad)


@pytest.mark.parametrize(
    "bad",
    [
        {"metric": "tokens_per_year", "warn": 1, "pause": 2},
        {"metric": "requests_per_hour", "warn": 3, "pause": 2},
        {"metric": "requests_per_hour", "warn": 1, "pause": 3, "hard_stop": 2},
    ],
)
def test_REQ_RATE_006_bad_quotas_rejected(bad) -> None:
    with pytest.raises(ValueError):
        Quota.parse(bad)


async def test_window_rolls_over_on_the_injected_clock_without_sleeping(any_store) -> None:
    """Issue 12 §6: the layer's windows follow the clock it was given (both stores)."""
    h = build(any_store, trust="validated", rate_limits=[{"limit": 2, "window": "hour"}])
    h.clock.now = 3600 * (int(h.clock.now) // 3600 + 1) + 10  # 10 s into a fresh hour
    for _ in range(2):
        assert (await h.call("get_task", task_id="1"))["success"] is True
    r = await h.call("get_task", task_id="1")
    assert r["error"]["code"] == "RATE_LIMIT_EXCEEDED"
    assert r["error"]["details"]["retry_after_seconds"] == 3590  # measured on the injected clock
    h.clock.advance(3590)
    assert (await h.call("get_task", task_id="1"))["success"] is True
