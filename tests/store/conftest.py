"""The same suite runs against every store backend: SQLite (a file in tmp) and Redis (a real
``redis-server`` on a free loopback port, skipped with a reason when not installed)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from aql_support import open_test_store
from mcpaql.store.base import Store


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(params=["sqlite", "redis"])
async def store(request: pytest.FixtureRequest, tmp_path) -> AsyncIterator[Store]:
    async for s in open_test_store(request.param, request, tmp_path):
        yield s
