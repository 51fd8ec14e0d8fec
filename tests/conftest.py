"""Fixtures shared by every test directory; the helpers live in ``tests/aql_support.py``.

* ``assert_valid_envelope(env)`` — validates against ``operation-result.schema.json``.
* ``assert_valid_introspection(env)`` — validates against ``introspection-response.schema.json``.
* ``assert_no_leak(text)`` — no traceback, exception class name, source path or line ref.
* ``app`` — the sample adapter; ``harness(config=None, adapter=None)`` → engine + session;
  ``h`` — the default harness. ``h.call(tool, request)`` validates every envelope it returns.

Test modules import helpers with ``from aql_support import ...`` (not ``from conftest``: other
directories have their own conftest.py).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

# Tests never touch the user's ~/.mcpaql (default safety store, approval URL file): one private
# (0700) home for the whole run, unless the caller chose one.
if "MCPAQL_HOME" not in os.environ:
    import tempfile

    os.environ["MCPAQL_HOME"] = tempfile.mkdtemp(prefix="mcpaql-home-")

from aql_support import (
    Harness,
    assert_no_leak,
    assert_valid_envelope,
    assert_valid_introspection,
    make_app,
)
from mcpaql import Adapter, Config


@pytest.fixture(name="assert_valid_envelope")
def _assert_valid_envelope_fixture() -> Callable[[Any], None]:
    return assert_valid_envelope


@pytest.fixture(name="assert_valid_introspection")
def _assert_valid_introspection_fixture() -> Callable[[Any], None]:
    return assert_valid_introspection


@pytest.fixture(name="assert_no_leak")
def _assert_no_leak_fixture() -> Callable[[str], None]:
    return assert_no_leak


@pytest.fixture
def app() -> Adapter:
    return make_app()


@pytest.fixture(scope="session")
def shared_app() -> Adapter:
    """One sample adapter for the whole run (building it costs ~30 ms; engines are cheap)."""
    return make_app()


@pytest.fixture
def harness(shared_app: Adapter) -> Callable[..., Harness]:
    def build(config: Config | None = None, adapter: Adapter | None = None, **engine_kw: Any) -> Harness:
        return Harness((adapter or shared_app).engine(config or Config(), **engine_kw))

    return build


@pytest.fixture
def h(harness: Callable[..., Harness]) -> Harness:
    """The sample adapter in the default configuration (semantic mode, CRUDE profile)."""
    return harness()


# ---- durable stores, shared by tests/store and tests/safety -------------------------------------


@pytest.fixture(scope="session")
def redis_server() -> Iterator[Any]:
    """One real ``redis-server`` on a free loopback port for the whole run. Skipped with a reason
    on a developer machine without it; in CI (``CI`` set) its absence is a failure, so a missing
    install step cannot hide behind a skip."""
    from mcpaql.store.testing import RedisServer

    if not RedisServer.available():
        if os.environ.get("CI"):
            pytest.fail("redis-server is not installed; .ci/run installs the Debian package redis-server")
        pytest.skip("redis-server not installed (Debian package: redis-server)")
    with RedisServer() as srv:
        yield srv
