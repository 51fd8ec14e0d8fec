"""``parse_server_spec``: how the CLI's server argument becomes a transport."""

from __future__ import annotations

import pytest

from mcpaql.mcp import ServerSpec, parse_server_spec


def test_urls_mean_streamable_http() -> None:
    assert parse_server_spec("http://127.0.0.1:8000/mcp") == ServerSpec("http", url="http://127.0.0.1:8000/mcp")
    assert parse_server_spec(["https://example.test/mcp"]).kind == "http"


def test_commands_mean_stdio() -> None:
    spec = parse_server_spec("npx -y '@scope/server files' ~/notes")
    assert spec == ServerSpec("stdio", command="npx", args=("-y", "@scope/server files", "~/notes"))
    assert parse_server_spec(["python", "-m", "srv"]) == ServerSpec("stdio", command="python", args=("-m", "srv"))
    assert parse_server_spec(str(spec)) == spec  # str() is a shell-safe round trip


def test_a_spec_passes_through() -> None:
    spec = ServerSpec("stdio", command="x")
    assert parse_server_spec(spec) is spec


@pytest.mark.parametrize("bad", ["", [], ["http://h/mcp", "extra"]])
def test_bad_specs_say_what_to_pass(bad: object) -> None:
    with pytest.raises(ValueError):
        parse_server_spec(bad)  # type: ignore[arg-type]
