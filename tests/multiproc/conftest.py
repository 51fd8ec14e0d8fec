"""Fixtures for the multi-process tests: a deployment of real ``mcpaql serve --stateless``
processes sharing one real Redis (the session's ``redis_server``, each deployment on a database
number of its own, emptied first) and one demo database file."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from multiproc_support import Deployment

_next_db = iter(range(3, 16))


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def deploy(redis_server: Any, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Callable[..., Deployment]]:
    """``deploy(n, **policy)`` → n processes behind one round-robin; stopped at module end."""
    made: list[Deployment] = []

    def make(n: int = 3, **policy: Any) -> Deployment:
        where = tmp_path_factory.mktemp("deployment")
        store = f"redis://127.0.0.1:{redis_server.port}/{next(_next_db)}"
        d = Deployment(n, store=store, directory=Path(where), **policy)
        made.append(d)
        return d

    yield make
    for d in made:
        d.stop()
