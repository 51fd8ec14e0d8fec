"""Safety-layer test support: a small adapter with one operation per danger class, a real
store per test (SQLite file in tmp, or Redis on a real ``redis-server``), and a harness that
runs requests through a real :class:`~mcpaql.protocol.Engine` with safety installed."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from aql_support import open_test_store
from mcpaql.store.base import Store
from mcpaql.store.sqlite import SQLiteStore


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def sqlite_store(tmp_path) -> AsyncIterator[Store]:
    s = SQLiteStore(tmp_path / "safety.db")
    yield s
    await s.close()


@pytest.fixture(params=["sqlite", "redis"])
async def any_store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Store]:
    async for s in open_test_store(request.param, request, tmp_path):
        yield s
