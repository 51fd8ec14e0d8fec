"""Fixtures for the end-to-end tests: the test adapter served over real stdio subprocesses
and real uvicorn HTTP servers on 127.0.0.1, driven by the official MCP client."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from e2e_support import HttpServer, stdio_target


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def marker_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("session_markers")


@pytest.fixture(scope="session")
def http_servers(marker_dir: Path) -> Iterator[Callable[[str], HttpServer]]:
    """Lazily started, shared HTTP servers keyed by flavour ('stateful' / 'stateless')."""
    servers: dict[str, HttpServer] = {}

    def get(flavour: str) -> HttpServer:
        if flavour not in servers:
            flags = ("--stateless",) if flavour == "stateless" else ()
            servers[flavour] = HttpServer(*flags, env={"MCPAQL_TEST_MARKER_DIR": str(marker_dir)})
        return servers[flavour]

    yield get
    for srv in servers.values():
        srv.stop()


@pytest.fixture(params=["stdio", "http", "http-stateless"])
def transport(request: pytest.FixtureRequest) -> str:
    return request.param


@pytest.fixture
def target(transport: str, http_servers: Callable[[str], HttpServer]) -> Any:
    """Something ``mcpaql.mcp.connect`` accepts, for each transport."""
    if transport == "stdio":
        return stdio_target()
    return http_servers("stateless" if transport == "http-stateless" else "stateful").url
