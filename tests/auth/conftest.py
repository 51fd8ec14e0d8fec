"""Fixtures for the auth tests: a real token issuer on 127.0.0.1 (``issuer.py``) and
``mcpaql serve`` in a subprocess trusting it, plus API keys from a file."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from auth_support import APP, Keys, Served
from issuer import Issuer


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    iss = Issuer()
    yield iss
    iss.stop()


@pytest.fixture(scope="module")
def keys(tmp_path_factory: pytest.TempPathFactory) -> Keys:
    return Keys(tmp_path_factory.mktemp("keys"))


@pytest.fixture(scope="module")
def server(issuer: Issuer, keys: Keys, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    """The auth demo behind both a JWT issuer and API keys."""
    tmp = tmp_path_factory.mktemp("served")
    argv = ["serve", APP, "--auth-issuer", issuer.url, "--auth-jwks-url", issuer.jwks_url, "--api-keys-file", str(keys.file)]
    srv = Served(argv, tmp, env={"MCPAQL_HOME": str(tmp)})
    yield srv
    srv.stop()
