"""A wrapped server is a conformant MCP-AQL server: the project's live conformance suite, over
real stdio, against the wrapper in front of the GitHub-89 replay and the real server-memory."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from wrap_helpers import FIXTURES

from mcpaql.adapters.upstream.replay import argv_for
from mcpaql.conformance import Status, run_conformance

pytestmark = [pytest.mark.anyio, pytest.mark.e2e]
SCHEMAS = FIXTURES.parents[1] / "spec" / "schemas"
SERVE = ("import anyio, sys; from mcpaql.adapters.upstream.serve import serve_wrapped_stdio; "
         "from mcpaql.adapters.upstream.runtime import UpstreamSpec; "
         "anyio.run(lambda: serve_wrapped_stdio(UpstreamSpec.from_argv(sys.argv[2:], name=sys.argv[1])))")


async def _failures(name: str, upstream: list[str], mode: str, tmp: Path) -> dict[str, str]:
    report = await run_conformance([sys.executable, "-c", SERVE, name, *upstream], level=1, read_only=True,
                                   schemas=SCHEMAS if SCHEMAS.is_dir() else None,
                                   env={"MCP_AQL_ENDPOINT_MODE": mode, "PATH": "/usr/bin:/bin",
                                        "MEMORY_FILE_PATH": str(tmp / "memory.jsonl")})
    return {r.id: r.message for r in report.results if r.status is Status.FAIL}


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
async def test_wrapped_github_replay_passes_level_1(mode: str, tmp_path: Path) -> None:
    assert await _failures("github", argv_for(FIXTURES / "github-mcp-all.tools-list.json"), mode, tmp_path) == {}


@pytest.mark.upstream
async def test_wrapped_real_memory_server_passes_level_1(tmp_path: Path) -> None:
    memory = Path(__file__).resolve().parents[2] / ".cache-upstreams" / "node_modules" / ".bin" / "mcp-server-memory"
    if not memory.exists():
        pytest.fail(f"{memory} is missing: run tests/wrap/install_upstreams.sh")
    assert await _failures("memory", [str(memory)], "all", tmp_path) == {}
