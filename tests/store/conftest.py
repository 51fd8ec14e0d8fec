"""The same suite runs against every store backend: SQLite (a file in tmp) and Redis (a real
``redis-server`` on a free loopback port, skipped with a reason when not installed)."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

from mcpaql.store.base import Store
from mcpaql.store.redis import RedisStore
from mcpaql.store.sqlite import SQLiteStore
from mcpaql.store.testing import RedisServer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def redis_server() -> Iterator[RedisServer]:
    if not RedisServer.available():
        pytest.skip("redis-server not installed (Debian package: redis-server)")
    with RedisServer() as srv:
        yield srv


@pytest.fixture(params=["sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        s: Store = SQLiteStore(tmp_path / "state.db")
    else:
        srv = request.getfixturevalue("redis_server")
        s = RedisStore.from_url(srv.url, prefix="t" + uuid.uuid4().hex[:8])
    try:
        yield s
    finally:
        await s.close()
