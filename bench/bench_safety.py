"""Safety-layer cost, measured side by side in one run:

1. gatekeeper overhead per call: the same READ through an engine without safety and through
   one with the gatekeeper guard (allowed, no store I/O on the hot path), interleaved;
2. the confirmation round trip: CONFIRMATION_REQUIRED + retry with ``_confirmation``
   (token issue, redeem, audit — real SQLite store) against two ungated calls;
3. the identity guard of an enforcing loop (issue 11: blocks and pauses checked on every
   operation of the caller's identity — one store read): the same READ with and without it;
4. ``record_execution_step`` round trips per second through the Engine with the SQLite store
   and with Redis (a real ``redis-server`` on a free loopback port; skipped if absent),
   sequential and with 16 agents concurrently.

Run: .venv/bin/python bench/bench_safety.py [N]
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import tempfile
import time
from pathlib import Path

from mcpaql import Adapter, Config
from mcpaql.safety import SafetyConfig, install_safety
from mcpaql.store.base import Store
from mcpaql.store.redis import RedisStore
from mcpaql.store.sqlite import SQLiteStore
from mcpaql.store.testing import RedisServer


def make_app() -> Adapter:
    app = Adapter("bench")

    @app.read
    def get_item(item_id: str, limit: int = 10) -> dict:
        """Get one item."""
        return {"item_id": item_id, "limit": limit}

    @app.delete
    def delete_item(item_id: str) -> dict:
        """Delete one item."""
        return {"deleted": item_id}

    return app


async def gate_overhead(n: int, store: Store) -> None:
    cfg = Config.load(env={})
    plain = make_app().engine(cfg)
    gated_app = make_app()
    install_safety(gated_app, SafetyConfig(trust="validated"), store=store)
    gated = gated_app.engine(cfg)
    sp, sg = plain.new_session(), gated.new_session()
    req = {"operation": "get_item", "params": {"item_id": "i1", "limit": 5}}
    for _ in range(2000):
        await plain.execute(req, plain.context(sp))
        assert (await gated.execute(req, gated.context(sg)))["success"]
    a: list[int] = []
    b: list[int] = []
    pc = time.perf_counter_ns
    for _ in range(n):
        t0 = pc()
        await plain.execute(req, plain.context(sp))
        t1 = pc()
        await gated.execute(req, gated.context(sg))
        t2 = pc()
        a.append(t1 - t0)
        b.append(t2 - t1)
    ma, mb = statistics.median(a) / 1000, statistics.median(b) / 1000
    print(f"{'READ, ungated engine':<44}{ma:>10.1f} µs")
    print(f"{'READ, gatekeeper guard (allowed)':<44}{mb:>10.1f} µs   ratio {mb / ma:.2f}x  (+{mb - ma:.1f} µs)")

    # confirmation round trip: issue + redeem vs two ungated calls
    m = max(200, n // 20)
    dreq = {"operation": "delete_item", "params": {"item_id": "x"}}
    conf: list[int] = []
    base: list[int] = []
    for _ in range(m):
        t0 = pc()
        await plain.execute(dreq, plain.context(sp))
        await plain.execute(dreq, plain.context(sp))
        t1 = pc()
        first = await gated.execute(dreq, gated.context(sg))
        token = first["error"]["details"]["confirmation_token"]
        ok = await gated.execute(
            {"operation": "delete_item", "params": {"item_id": "x", "_confirmation": token}}, gated.context(sg)
        )
        t2 = pc()
        assert ok["success"], ok
        base.append(t1 - t0)
        conf.append(t2 - t1)
    mc, mbase = statistics.median(conf) / 1000, statistics.median(base) / 1000
    print(f"{'DELETE x2, ungated':<44}{mbase:>10.1f} µs")
    print(f"{'DELETE confirm round trip (SQLite store)':<44}{mc:>10.1f} µs   ratio {mc / mbase:.1f}x")


async def guard_overhead(label: str, store: Store, n: int) -> None:
    cfg = Config.load(env={})
    gated_app, guarded_app = make_app(), make_app()
    install_safety(gated_app, SafetyConfig(trust="validated"), store=store)
    install_safety(guarded_app, SafetyConfig(trust="validated", loop_mode="enforcing"), store=store)
    gated, guarded = gated_app.engine(cfg), guarded_app.engine(cfg)
    sg, sl = gated.new_session(), guarded.new_session()
    req = {"operation": "get_item", "params": {"item_id": "i1", "limit": 5}}
    for _ in range(500):
        await gated.execute(req, gated.context(sg))
        assert (await guarded.execute(req, guarded.context(sl)))["success"]
    a: list[int] = []
    b: list[int] = []
    pc = time.perf_counter_ns
    for _ in range(n):
        t0 = pc()
        await gated.execute(req, gated.context(sg))
        t1 = pc()
        await guarded.execute(req, guarded.context(sl))
        t2 = pc()
        a.append(t1 - t0)
        b.append(t2 - t1)
    ma, mb = statistics.median(a) / 1000, statistics.median(b) / 1000
    print(f"{'READ, gatekeeper only (' + label + ')':<44}{ma:>10.1f} µs")
    print(f"{'READ, + identity block/pause guard':<44}{mb:>10.1f} µs   ratio {mb / ma:.2f}x  (+{mb - ma:.1f} µs)")
    await store.close()


async def loop_rate(label: str, store: Store, n: int) -> None:
    app = make_app()
    install_safety(
        app, SafetyConfig(trust="validated", loop_mode="enforcing", autonomy={"max_autonomous_steps": 10_000_000}), store=store
    )
    eng = app.engine(Config.load(env={}))
    sess = eng.new_session()
    agents = [f"agent{i}" for i in range(16)]
    for a in agents:
        await eng.execute({"operation": "execute_agent", "params": {"element_name": a}}, eng.context(sess))

    def req(agent: str) -> dict:
        return {
            "operation": "record_execution_step",
            "params": {"element_name": agent, "next_action_hint": "read_file notes.txt", "outcome": "success"},
        }

    for _ in range(50):
        r = await eng.execute(req("agent0"), eng.context(sess))
        assert r["success"] and r["data"]["continue"], r
    t0 = time.perf_counter()
    for _ in range(n):
        await eng.execute(req("agent0"), eng.context(sess))
    seq = n / (time.perf_counter() - t0)

    async def worker(agent: str, k: int) -> None:
        for _ in range(k):
            await eng.execute(req(agent), eng.context(sess))

    t0 = time.perf_counter()
    await asyncio.gather(*(worker(a, n // len(agents)) for a in agents))
    conc = (n // len(agents)) * len(agents) / (time.perf_counter() - t0)
    print(f"{'record_execution_step, ' + label:<44}{seq:>10.0f} /s sequential   {conc:>8.0f} /s with 16 agents")
    await store.close()


async def main(n: int) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        store = SQLiteStore(Path(tmp) / "gate.db")
        print("== gatekeeper + confirmation overhead (in process) ==")
        await gate_overhead(n, store)
        await store.close()
        print("== identity guard of an enforcing loop (per operation) ==")
        await guard_overhead("SQLite", SQLiteStore(Path(tmp) / "guard.db"), max(1000, n // 4))
        if RedisServer.available():
            with RedisServer() as srv:
                await guard_overhead("Redis", RedisStore.from_url(srv.url), max(1000, n // 10))
        print("== execution safety loop ==")
        steps = max(500, n // 10)
        await loop_rate("SQLite", SQLiteStore(Path(tmp) / "loop.db"), steps)
        if RedisServer.available():
            with RedisServer() as srv:
                await loop_rate("Redis", RedisStore.from_url(srv.url), steps)
        else:
            print("record_execution_step, Redis: skipped (redis-server not installed)")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 20000))
