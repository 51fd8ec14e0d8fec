"""Spec flags and extension queries of the safety layer: `OperationSpec.dangerous` (OPS §6.4,
REQ-CLS-012) raises the danger level; `quota_status` / `adapter_info` introspect queries."""

from __future__ import annotations

import dataclasses

from mcpaql.protocol.categories import Category
from mcpaql.protocol.operations import OperationSpec
from mcpaql.safety.danger import DangerLevel, classify


def _spec(category: Category, dangerous: bool) -> OperationSpec:
    return OperationSpec(name="rotate_keys", category=category, description="Rotate keys.", dangerous=dangerous)


def test_REQ_CLS_012_dangerous_flag_raises_the_level() -> None:
    plain = classify(_spec(Category.UPDATE, False))
    marked = classify(_spec(Category.UPDATE, True))
    assert plain.level < DangerLevel.DANGEROUS
    assert marked.level == DangerLevel.DANGEROUS and marked.source == "declared"


def test_declared_level_still_wins_over_the_flag() -> None:
    spec = dataclasses.replace(_spec(Category.UPDATE, True), danger_level="reversible")
    assert classify(spec).level == DangerLevel.REVERSIBLE


def test_REQ_RATE_004_REQ_TRUST_010_quota_status_and_adapter_info_via_introspect(tmp_path) -> None:
    """Extension introspect queries (Part F #20) registered by the safety layer; unknown query
    types still give INVALID_QUERY_TYPE and now list the extensions."""
    import asyncio

    from mcpaql import Adapter, Config
    from mcpaql.safety import SafetyConfig, install_safety

    app = Adapter("quota")

    def list_things() -> list:
        """List things."""
        return []

    app.read(list_things)
    cfg = SafetyConfig(
        trust="validated",
        store=f"sqlite:///{tmp_path / 's.db'}",
        quotas=[{"metric": "requests_per_day", "warn": 5, "pause": 8, "hard_stop": 10}],
    )
    install_safety(app, cfg)
    eng = app.engine(Config())
    s = eng.new_session()

    async def go() -> tuple[dict, dict, dict]:
        call = eng.call_tool
        await call("quota_mcpaql_read", {"operation": "list_things"}, eng.context(s))
        q = await call("quota_mcpaql_read", {"operation": "introspect", "params": {"query": "quota_status"}}, eng.context(s))
        a = await call("quota_mcpaql_read", {"operation": "introspect", "params": {"query": "adapter_info"}}, eng.context(s))
        bad = await call("quota_mcpaql_read", {"operation": "introspect", "params": {"query": "nope"}}, eng.context(s))
        return q, a, bad

    q, a, bad = asyncio.run(go())
    assert q["success"] and q["data"]["quotas"][0]["metric"] == "requests_per_day" and q["data"]["quotas"][0]["status"] == "ok"
    assert a["data"] == {"name": "quota", "trust": {"level": "validated"}}
    assert bad["error"]["code"] == "INVALID_QUERY_TYPE" and "quota_status" in bad["error"]["message"]
