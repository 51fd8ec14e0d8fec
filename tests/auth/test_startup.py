"""Secure by default: an HTTP server bound beyond loopback with no authentication does not
start (one line, exit 2) unless ``--insecure-no-auth``; every serving command has the auth
flags; settings that cannot work are refused at start, without echoing a secret."""

from __future__ import annotations

import logging
import subprocess
import sys
from pathlib import Path

import pytest

from mcpaql import cli
from mcpaql.auth.options import AuthConfigError, AuthOptions
from mcpaql.config import auth_settings
from mcpaql.serving import ServeOptions

AUTH_FLAGS = ("--auth-issuer", "--auth-audience", "--auth-jwks-url", "--api-keys-file", "--resource-url", "--insecure-no-auth")


def run(*argv: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mcpaql.cli", *argv],
        capture_output=True,
        text=True,
        stdin=subprocess.DEVNULL,
        timeout=60,
        env={"COLUMNS": "300", "PATH": "/usr/bin:/bin", **(env or {})},
    )


@pytest.mark.parametrize(
    "argv",
    [
        ["serve", "--transport", "http", "--host", "0.0.0.0"],
        ["openapi", "x.yaml", "--transport", "http", "--host", "::"],
        ["wrap", "--transport", "http", "--host", "10.1.2.3", "--", "true"],
        ["guard", "--transport", "http", "--host", "0.0.0.0", "--store", "sqlite:////tmp/never-made.db"],
    ],
)
def test_no_auth_beyond_loopback_refuses_to_start(argv: list[str]) -> None:
    r = run(*argv)
    assert r.returncode == 2, r.stderr
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and "refusing to serve HTTP" in lines[0] and "--insecure-no-auth" in lines[0], r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.parametrize("command", ["serve", "wrap", "openapi", "guard"])
def test_every_serving_command_has_the_auth_flags(command: str) -> None:
    import typer

    group = typer.main.get_command(cli.app)
    have = {o for p in group.commands[command].params for o in p.opts}  # type: ignore[attr-defined]
    assert set(AUTH_FLAGS) <= have, command


def options(**kw: object) -> ServeOptions:
    defaults = {name: default for name, _a, default in cli.SERVING_FLAGS}
    opts = cli._serve_options(logging.WARNING, **{**defaults, "transport": "http", **kw})
    assert isinstance(opts, ServeOptions)
    return opts


def test_insecure_no_auth_is_an_explicit_choice() -> None:
    assert options(host="0.0.0.0", insecure_no_auth=True).auth.insecure_no_auth
    assert options(host="127.0.0.1").auth.configured is False  # loopback: no auth needed


def test_auth_settings_come_from_flags_over_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    env = {"MCPAQL_AUTH_ISSUER": "https://env.example", "MCPAQL_API_KEYS_FILE": "/k", "MCPAQL_INSECURE_NO_AUTH": "0"}
    got = auth_settings(env, auth_issuer="https://flag.example", api_keys_file=None)
    assert got == {"auth_issuer": "https://flag.example", "api_keys_file": "/k", "insecure_no_auth": False}
    (tmp_path / "keys").write_text("ci mcpaql:read " + "k" * 32 + "\n")
    monkeypatch.setenv("MCPAQL_API_KEYS_FILE", str(tmp_path / "keys"))
    assert options(host="0.0.0.0").auth.api_keys_file == str(tmp_path / "keys")


@pytest.mark.parametrize(
    ("settings", "says"),
    [
        ({"auth_audience": "x"}, "need --auth-issuer"),
        ({"auth_issuer": "ftp://x"}, "http(s) URL"),
        ({"auth_issuer": "https://i.example", "insecure_no_auth": True}, "contradicts"),
    ],
)
def test_settings_that_cannot_work_are_refused(settings: dict[str, object], says: str) -> None:
    with pytest.raises(AuthConfigError, match=says.replace("(", r"\(").replace(")", r"\)")):
        AuthOptions.from_settings(settings)


def test_an_issuer_beyond_loopback_needs_the_public_url() -> None:
    auth = AuthOptions(issuer="https://issuer.example")
    with pytest.raises(ValueError, match="--resource-url"):
        ServeOptions(transport="http", host="0.0.0.0", auth=auth)
    ok = ServeOptions(
        transport="http",
        host="0.0.0.0",
        auth=AuthOptions(issuer="https://issuer.example", resource_url="https://mcp.example/mcp"),
    )
    assert ok.auth.configured


def test_a_bad_keys_file_is_one_line_without_the_key(tmp_path: Path) -> None:
    keys = tmp_path / "keys.txt"
    keys.write_text("alice mcpaql:everything sk_live_0123456789abcdefghijklmnop\n")
    r = run("serve", "--transport", "http", "--port", "1", "--api-keys-file", str(keys))
    assert r.returncode != 0 and "unknown scope" in r.stderr and "sk_live" not in r.stderr and "Traceback" not in r.stderr
    assert len([line for line in r.stderr.splitlines() if line.strip()]) == 1, r.stderr


@pytest.mark.anyio
async def test_the_low_level_http_server_refuses_too() -> None:
    from mcpaql import Adapter, Config
    from mcpaql.mcp.transports import serve_http_async

    with pytest.raises(AuthConfigError, match="refusing"):
        await serve_http_async(Adapter("x").engine(Config()), host="0.0.0.0", port=1)


@pytest.mark.anyio
async def test_api_keys_beyond_loopback_need_no_resource_url() -> None:
    """API keys alone need no public URL (no audience, no metadata document): the app builds
    for 0.0.0.0 and answers a request without credentials with a bare ``Bearer`` challenge."""
    import httpx

    from mcpaql import Adapter, Config
    from mcpaql.mcp.transports import http_app

    auth = AuthOptions(api_keys="ops mcpaql:read " + "k" * 30)
    assert ServeOptions(transport="http", host="0.0.0.0", auth=auth).auth.summary() == " with auth: API keys"
    app = http_app(Adapter("x").engine(Config()), host="0.0.0.0", auth=auth)
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://h") as client:
        r = await client.post("/mcp", json={})
        assert (r.status_code, r.headers["www-authenticate"]) == (401, "Bearer")
        assert (await client.get("/.well-known/oauth-protected-resource/mcp")).status_code == 404
