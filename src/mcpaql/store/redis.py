"""The shared store: Redis via redis-py's asyncio client, for several server processes behind
one load balancer. Blocks, rate-limit windows, tokens and challenges are then enforced once
across all of them.

Layout (``prefix`` defaults to ``mcpaql``): a record is a JSON string at ``{p}:r:{ns}:{key}``
(expiring at its ``purge_at``) and its key is listed in the set ``{p}:i:{ns}`` for scans;
a window is an integer at ``{p}:w:{key}:{start}`` expiring with the window; the audit log is
the list ``{p}:audit`` (``RPUSH`` returns the new length, which is the entry's sequence
number). Atomicity: ``GETDEL``/``SET NX`` for take/add, ``WATCH``/``MULTI`` for
compare-and-set, ``MULTI`` for counters.
"""

from __future__ import annotations

import json
import time
from typing import Any, cast

from redis import asyncio as aioredis
from redis.exceptions import WatchError

from .base import Record, Store, Window, matches, window_start


def _dump(v: Record) -> str:
    return json.dumps(v, separators=(",", ":"), sort_keys=True)


class RedisStore(Store):
    def __init__(self, client: aioredis.Redis, prefix: str = "mcpaql") -> None:
        self.r = client
        self.prefix = prefix

    @classmethod
    def from_url(cls, url: str, prefix: str = "mcpaql", **kw: Any) -> RedisStore:
        return cls(aioredis.from_url(url, decode_responses=True, **kw), prefix)

    def _rk(self, ns: str, key: str) -> str:
        return f"{self.prefix}:r:{ns}:{key}"

    def _ik(self, ns: str) -> str:
        return f"{self.prefix}:i:{ns}"

    @staticmethod
    def _ms(purge_at: float | None) -> int | None:
        return None if purge_at is None else int(purge_at * 1000)

    # ---- records ---------------------------------------------------------------------------

    async def put(self, ns: str, key: str, value: Record, *, purge_at: float | None = None) -> None:
        if purge_at is not None and purge_at <= time.time():
            await self.delete(ns, key)
            return
        async with self.r.pipeline(transaction=True) as p:
            p.set(self._rk(ns, key), _dump(value), pxat=self._ms(purge_at))
            p.sadd(self._ik(ns), key)
            await p.execute()

    async def add(self, ns: str, key: str, value: Record, *, purge_at: float | None = None) -> bool:
        ok = await self.r.set(self._rk(ns, key), _dump(value), nx=True, pxat=self._ms(purge_at))
        if ok:
            await self.r.sadd(self._ik(ns), key)
        return bool(ok)

    async def get(self, ns: str, key: str) -> Record | None:
        raw = await self.r.get(self._rk(ns, key))
        return json.loads(raw) if raw is not None else None

    async def get_many(self, keys: list[tuple[str, str]]) -> list[Record | None]:
        if not keys:
            return []
        raws = await self.r.mget([self._rk(ns, key) for ns, key in keys])
        return [json.loads(raw) if raw is not None else None for raw in raws]

    async def take(self, ns: str, key: str) -> Record | None:
        raw = await self.r.getdel(self._rk(ns, key))
        if raw is None:
            return None
        await self.r.srem(self._ik(ns), key)
        return json.loads(raw)

    async def cas(self, ns: str, key: str, expect: Record, changes: Record) -> Record | None:
        rk = self._rk(ns, key)
        async with self.r.pipeline(transaction=True) as p:
            while True:
                try:
                    await p.watch(rk)
                    raw = await p.get(rk)
                    if raw is None:
                        await p.unwatch()
                        return None
                    rec = json.loads(raw)
                    if not matches(rec, expect):
                        await p.unwatch()
                        return None
                    rec.update(changes)
                    p.multi()
                    p.set(rk, _dump(rec), keepttl=True)
                    await p.execute()
                    return rec
                except WatchError:
                    continue

    async def delete(self, ns: str, key: str) -> bool:
        async with self.r.pipeline(transaction=True) as p:
            p.delete(self._rk(ns, key))
            p.srem(self._ik(ns), key)
            n, _ = await p.execute()
        return bool(n)

    async def scan(self, ns: str, where: Record | None = None) -> list[Record]:
        # str, not bytes: this store needs a client with decode_responses=True (see from_url)
        keys = sorted(cast(set[str], await self.r.smembers(self._ik(ns))))
        if not keys:
            return []
        raws = await self.r.mget([self._rk(ns, k) for k in keys])
        gone = [k for k, raw in zip(keys, raws, strict=True) if raw is None]
        if gone:
            await self.r.srem(self._ik(ns), *gone)
        out = [json.loads(raw) for raw in raws if raw is not None]
        return [r for r in out if matches(r, where)]

    # ---- counters ----------------------------------------------------------------------------

    def _wk(self, key: str, start: int) -> str:
        return f"{self.prefix}:w:{key}:{start}"

    async def incr_window(self, key: str, seconds: int, amount: int = 1, *, now: float | None = None) -> Window:
        t = time.time() if now is None else now
        start = window_start(t, seconds)
        resets = start + seconds
        wk = self._wk(key, start)
        async with self.r.pipeline(transaction=True) as p:
            p.incrby(wk, amount)
            # Relative TTL (an extra window of slack) so callers passing ``now`` still count.
            p.expire(wk, max(int(resets - time.time()), 0) + seconds + 1)
            count, _ = await p.execute()
        return Window(int(count), float(resets))

    async def peek_window(self, key: str, seconds: int, *, now: float | None = None) -> Window:
        t = time.time() if now is None else now
        start = window_start(t, seconds)
        raw = await self.r.get(self._wk(key, start))
        return Window(int(raw) if raw else 0, float(start + seconds))

    async def reset_window(self, key: str, seconds: int, *, now: float | None = None) -> None:
        t = time.time() if now is None else now
        await self.r.delete(self._wk(key, window_start(t, seconds)))

    # ---- audit -------------------------------------------------------------------------------

    async def append_audit(self, entry: Record) -> int:
        return int(await self.r.rpush(f"{self.prefix}:audit", _dump({**entry, "at": entry.get("at", time.time())})))

    async def read_audit(self, after: int = 0, limit: int = 1000) -> list[Record]:
        raws = await self.r.lrange(f"{self.prefix}:audit", after, after + limit - 1)
        out = []
        for i, raw in enumerate(raws):
            rec = json.loads(raw)
            rec.pop("at", None)
            rec["seq"] = after + i + 1
            out.append(rec)
        return out

    # ---- housekeeping ------------------------------------------------------------------------

    async def purge(self, now: float | None = None) -> int:
        """Redis expires records itself; this only drops stale index entries."""
        n = 0
        async for ik in self.r.scan_iter(match=f"{self.prefix}:i:*"):
            ns = ik[len(f"{self.prefix}:i:") :]
            keys = list(cast(set[str], await self.r.smembers(ik)))  # str: decode_responses=True
            if not keys:
                continue
            exists = await self.r.mget([self._rk(ns, k) for k in keys])
            gone = [k for k, v in zip(keys, exists, strict=True) if v is None]
            if gone:
                n += await self.r.srem(ik, *gone)
        return n

    async def close(self) -> None:
        await self.r.aclose()

    def __repr__(self) -> str:
        return f"RedisStore(prefix={self.prefix!r})"
