"""The observability tests need the ``otel`` extra (the ``test`` extra pulls it in): without it
they are skipped on a developer's machine and fail in CI (``CI`` set), as every optional
component's tests do. (So test modules here import OpenTelemetry inside tests, not at the top.)"""

from __future__ import annotations

import os

import pytest

from mcpaql.observability import installed


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(autouse=True)
def _otel_extra() -> None:
    if not installed():
        why = "the 'otel' extra is not installed (pip install -e '.[test]')"
        if os.environ.get("CI"):
            pytest.fail(why)
        pytest.skip(why)
