"""Rate-limit rejections and confirmations requested/redeemed, counted from real safety-layer
outcomes (gatekeeper tokens, a rate limit), with this test's own providers (not the global ones)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from mcpaql import Adapter, Config
from mcpaql.safety import SafetyConfig, install_safety
from mcpaql.store.sqlite import SQLiteStore

pytestmark = pytest.mark.anyio


@pytest.fixture
async def store(tmp_path: Path) -> AsyncIterator[SQLiteStore]:
    s = SQLiteStore(tmp_path / "safety.db")
    yield s
    await s.close()


def counters(reader: Any) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for rm in reader.get_metrics_data().resource_metrics:
        for sm in rm.scope_metrics:
            for m in sm.metrics:
                for p in m.data.data_points:
                    if hasattr(p, "value"):
                        key = (m.name, str(p.attributes.get("mcpaql.error.code") or p.attributes.get("mcpaql.operation")))
                        out[key] = out.get(key, 0) + int(p.value)
    return out


async def test_confirmations_and_rate_limits_are_counted(store: SQLiteStore) -> None:
    from opentelemetry.sdk.metrics import MeterProvider
    from opentelemetry.sdk.metrics.export import InMemoryMetricReader
    from opentelemetry.sdk.trace import TracerProvider

    from mcpaql.observability.telemetry import Telemetry

    app = Adapter("safe")

    @app.read
    def get_thing(thing_id: str) -> dict[str, Any]:
        """Read a thing."""
        return {"id": thing_id}

    @app.delete
    def delete_thing(thing_id: str) -> dict[str, Any]:
        """Delete a thing."""
        return {"deleted": thing_id}

    install_safety(
        app,
        SafetyConfig(trust="validated", rate_limits=[{"limit": 2, "window": "hour", "scope": "operation", "match": "get_thing"}]),
        store=store,
    )
    engine = app.engine(Config())
    reader = InMemoryMetricReader()
    telemetry = Telemetry(TracerProvider(), MeterProvider(metric_readers=[reader]))
    session = engine.new_session()

    async def call(operation: str, **params: Any) -> dict[str, Any]:
        tool = engine.tool_for_family[engine.registry.get(operation).family]
        request = {"operation": operation, "params": params}
        return await telemetry.observe_call(engine, tool, request, engine.context(session))

    first = await call("delete_thing", thing_id="t1")
    assert first["error"]["code"] == "CONFIRMATION_REQUIRED"
    token = first["error"]["details"]["confirmation_token"]
    assert (await call("delete_thing", thing_id="t1", _confirmation=token))["success"]
    assert (await call("delete_thing", thing_id="t1", _confirmation=token))["error"]["code"] == "TOKEN_ALREADY_USED"
    for _ in range(2):
        assert (await call("get_thing", thing_id="x"))["success"]
    assert (await call("get_thing", thing_id="x"))["error"]["code"] == "RATE_LIMIT_EXCEEDED"

    got = counters(reader)
    assert got[("mcpaql.confirmations.requested", "delete_thing")] == 1
    assert got[("mcpaql.confirmations.redeemed", "delete_thing")] == 1  # the replayed token is not a redemption
    assert got[("mcpaql.ratelimit.rejections", "RATE_LIMIT_EXCEEDED")] == 1
    assert got[("mcpaql.errors", "TOKEN_ALREADY_USED")] == 1
    assert got[("mcpaql.errors", "CONFIRMATION_REQUIRED")] == 1
    assert sum(v for (name, _), v in got.items() if name == "mcpaql.calls") == 6
