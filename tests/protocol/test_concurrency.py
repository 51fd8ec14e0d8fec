"""Optimistic concurrency (REQ-CONC-002..004): _etag, if_match, CONFLICT_VERSION_MISMATCH;
several asyncio clients updating one record with if_match + retry lose no update."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import pytest
from pydantic import BaseModel

from mcpaql import Adapter, MCPAQLError
from mcpaql.protocol.concurrency import IF_MATCH, check_if_match, etag_of, next_version, with_etag
from mcpaql.protocol.update import apply_patch


class CounterPatch(BaseModel):
    count: int | None = None
    label: str | None = None


def make(use_version: bool = False) -> tuple[Any, dict]:
    store: dict[str, dict] = {"c1": {"counter_id": "c1", "count": 0, "label": "x"}}
    if use_version:
        store["c1"]["_version"] = 1
    app = Adapter("counters", supports_etag=True, concurrency="fully-concurrent")

    @app.read
    async def get_counter(counter_id: str) -> dict:
        """Read a counter."""
        await asyncio.sleep(0)
        return store[counter_id] if use_version else with_etag(store[counter_id])

    @app.update
    async def update_counter(counter_id: str, input: CounterPatch, if_match: str | int | None = None) -> dict:
        """Conditional update."""
        await asyncio.sleep(random.random() / 1000)  # let other clients interleave before the CAS
        current = store[counter_id]
        # compare-and-set: no await between the check and the write
        check_if_match(current, if_match, resource_type="counter", resource_id=counter_id)
        new = apply_patch(current, input)
        if use_version:
            new["_version"] = next_version(current)
        store[counter_id] = new
        return new if use_version else with_etag(new)

    return app.engine(), store


async def _call(engine: Any, tool: str, op: str, **params: Any) -> dict:
    return await engine.call_tool(tool, {"operation": op, "params": params}, engine.context(engine.new_session()))


def test_req_conc_002_etag_changes_with_content() -> None:
    a = {"id": 1, "t": "x"}
    assert etag_of(a) == etag_of({"t": "x", "id": 1}) == etag_of(with_etag(a))
    assert etag_of(a) != etag_of({"id": 1, "t": "y"})
    assert etag_of(a).startswith('W/"')


def test_req_conc_004_mismatch_error_shape() -> None:
    with pytest.raises(MCPAQLError) as e:
        check_if_match({"id": 1}, 'W/"deadbeefdeadbeef"', resource_type="doc", resource_id=1)
    assert e.value.code == "CONFLICT_VERSION_MISMATCH"
    assert e.value.details["expected"] == 'W/"deadbeefdeadbeef"' and e.value.details["actual"] == etag_of({"id": 1})
    check_if_match({"id": 1}, None)
    check_if_match({"id": 1}, "*")
    check_if_match({"id": 1}, etag_of({"id": 1}).removeprefix("W/"))  # strong/weak forms compare equal
    check_if_match({"id": 1, "_version": 3}, 3)
    with pytest.raises(MCPAQLError):
        check_if_match({"id": 1, "_version": 3}, 2)


def test_version_as_digit_string_and_star_forms() -> None:
    """A string-typed if_match may carry the _version ("3"); the etag still matches too."""
    res = with_etag({"id": 1, "_version": 3})
    check_if_match(res, "3")
    check_if_match(res, res["_etag"])
    check_if_match(res, ' "*" ')
    with pytest.raises(MCPAQLError) as e:
        check_if_match(res, "2", resource_type="doc", resource_id=1)
    assert e.value.details["actual"] == res["_etag"]
    with pytest.raises(MCPAQLError):
        check_if_match({"id": 1}, "1")  # no _version: digits are compared as an etag


def test_req_conc_003_if_match_param_helper() -> None:
    assert IF_MATCH.name == "if_match" and not IF_MATCH.required


def test_req_conc_003_004_over_the_wire() -> None:
    engine, _ = make()

    async def go() -> None:
        r = await _call(engine, "counters_mcpaql_read", "get_counter", counter_id="c1")
        tag = r["data"]["_etag"]
        ok = await _call(engine, "counters_mcpaql_update", "update_counter", counter_id="c1", input={"count": 1}, if_match=tag)
        assert ok["success"] and ok["data"]["_etag"] != tag
        stale = await _call(engine, "counters_mcpaql_update", "update_counter", counter_id="c1", input={"count": 2}, if_match=tag)
        assert stale["error"]["code"] == "CONFLICT_VERSION_MISMATCH"
        assert stale["error"]["details"]["actual"] == ok["data"]["_etag"]

    asyncio.run(go())


@pytest.mark.parametrize("use_version", [False, True])
def test_req_conc_002_004_concurrent_clients_lose_no_update(use_version: bool) -> None:
    engine, store = make(use_version)
    clients, increments = 8, 10
    conflicts = 0

    async def client() -> None:
        nonlocal conflicts
        for _ in range(increments):
            while True:
                r = await _call(engine, "counters_mcpaql_read", "get_counter", counter_id="c1")
                tag = r["data"]["_version"] if use_version else r["data"]["_etag"]
                u = await _call(
                    engine,
                    "counters_mcpaql_update",
                    "update_counter",
                    counter_id="c1",
                    input={"count": r["data"]["count"] + 1},
                    if_match=tag,
                )
                if u["success"]:
                    break
                assert u["error"]["code"] == "CONFLICT_VERSION_MISMATCH"
                conflicts += 1

    async def main() -> None:
        await asyncio.gather(*(client() for _ in range(clients)))

    asyncio.run(main())
    assert store["c1"]["count"] == clients * increments
    assert conflicts > 0  # the race really happened and was caught
    assert store["c1"]["label"] == "x"
    if use_version:
        assert store["c1"]["_version"] == 1 + clients * increments


def test_req_conc_005_protocol_metadata() -> None:
    engine, _ = make()
    env = asyncio.run(_call(engine, "counters_mcpaql_read", "introspect", query="operations"))
    assert env["data"]["_protocol"]["supports_etag"] is True
    assert env["data"]["_protocol"]["concurrency"] == "fully-concurrent"
