"""Safety-layer test support: a small adapter with one operation per danger class, a real
store per test (SQLite file in tmp, or Redis on a real ``redis-server``), and a harness that
runs requests through a real :class:`~mcpaql.protocol.Engine` with safety installed."""

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


@pytest.fixture
async def sqlite_store(tmp_path) -> AsyncIterator[Store]:
    s = SQLiteStore(tmp_path / "safety.db")
    yield s
    await s.close()


@pytest.fixture(params=["sqlite", "redis"])
async def any_store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Store]:
    if request.param == "sqlite":
        s: Store = SQLiteStore(tmp_path / "safety.db")
    else:
        srv = request.getfixturevalue("redis_server")
        s = RedisStore.from_url(srv.url, prefix="t" + uuid.uuid4().hex[:8])
    yield s
    await s.close()
