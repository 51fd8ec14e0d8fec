"""The OAuth 2.1 resource server, end to end: a real issuer (``issuer.py``) on 127.0.0.1, the
real ``mcpaql serve`` CLI trusting it, raw HTTP for the status/``WWW-Authenticate`` matrix and
the official MCP client (streamable HTTP) for what an accepted caller can do.

Matrix (RFC 6750 §3, RFC 9728 §5.1): no credentials → 401 with ``resource_metadata`` and no
error code; malformed header → 400 ``invalid_request``; a token that does not verify (wrong
audience or issuer, expired, not yet valid, bad signature, unknown kid, ``alg: none``, HS256
with the public key, an unknown API key) → 401 ``invalid_token``; no mcpaql scope → 403
``insufficient_scope``. No body, header or server log line carries the token, a key, a path or
a traceback.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import httpx
import pytest
from auth_support import APP, Keys, Served
from issuer import Issuer

from mcpaql.mcp.client import connect

pytestmark = pytest.mark.anyio

INIT = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "auth-test", "version": "1"}},
}
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
LEAKS = re.compile(r"Traceback|File \"|\.py\b|/tmp/|/work/|BEGIN (?:RSA|PUBLIC|PRIVATE)")


def metadata_url(server: Served) -> str:
    return f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp"


def post(server: Served, authorization: list[str] | None) -> httpx.Response:
    headers = [(k, v) for k, v in HEADERS.items()] + [("Authorization", a) for a in authorization or []]
    return httpx.post(server.url, content=json.dumps(INIT), headers=headers, timeout=20)


def cases(issuer: Issuer, server: Served, keys: Keys) -> dict[str, tuple[list[str] | None, int, str | None]]:
    """name → (Authorization header values, status, RFC 6750 error code)."""
    aud = server.url
    now = int(time.time())
    from cryptography.hazmat.primitives.asymmetric import rsa

    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    return {
        "valid RS256 token": ([f"Bearer {issuer.token(aud)}"], 200, None),
        "valid ES256 token": ([f"Bearer {issuer.token(aud, key=issuer.ec, kid='ec-1', alg='ES256')}"], 200, None),
        "valid API key": ([f"Bearer {keys.reader}"], 200, None),
        "valid hashed API key": ([f"Bearer {keys.admin}"], 200, None),
        "scheme in lower case": ([f"bearer {issuer.token(aud)}"], 200, None),
        "no token": (None, 401, None),
        "wrong audience": ([f"Bearer {issuer.token('https://elsewhere.example/mcp')}"], 401, "invalid_token"),
        "wrong issuer": ([f"Bearer {issuer.token(aud, issuer='https://evil.example')}"], 401, "invalid_token"),
        "expired": ([f"Bearer {issuer.token(aud, lifetime=-120)}"], 401, "invalid_token"),
        "not yet valid": ([f"Bearer {issuer.token(aud, nbf=now + 600)}"], 401, "invalid_token"),
        "bad signature": ([f"Bearer {issuer.token(aud, key=issuer.rogue)}"], 401, "invalid_token"),
        "unknown kid": ([f"Bearer {issuer.token(aud, key=stranger, kid='nobody')}"], 401, "invalid_token"),
        "alg none": ([f"Bearer {issuer.unsigned(aud)}"], 401, "invalid_token"),
        "HS256 with the public key": ([f"Bearer {issuer.hmac_confusion(aud)}"], 401, "invalid_token"),
        "no sub claim": ([f"Bearer {issuer.token(aud, sub='')}"], 401, "invalid_token"),
        "unknown API key": (["Bearer " + "x" * 40], 401, "invalid_token"),
        "missing scope": ([f"Bearer {issuer.token(aud, scope='openid profile')}"], 403, "insufficient_scope"),
        "no scope claim": ([f"Bearer {issuer.token(aud, scope=None)}"], 403, "insufficient_scope"),
        "Basic scheme": (["Basic YWxpY2U6c2VjcmV0"], 400, "invalid_request"),
        "Bearer without token": (["Bearer"], 400, "invalid_request"),
        "two tokens": ([f"Bearer {keys.reader} {keys.writer}"], 400, "invalid_request"),
        "two headers": ([f"Bearer {keys.reader}", f"Bearer {keys.writer}"], 400, "invalid_request"),
        "bad characters": (['Bearer abc"def'], 400, "invalid_request"),
    }


def challenge_params(value: str) -> dict[str, str]:
    assert value.startswith("Bearer"), value
    return dict(re.findall(r'(\w+)="([^"]*)"', value))


async def test_the_auth_matrix(issuer: Issuer, server: Served, keys: Keys) -> None:
    table = cases(issuer, server, keys)
    rows = []
    for name, (authorization, status, error) in table.items():
        r = post(server, authorization)
        assert r.status_code == status, (name, r.status_code, r.text)
        secrets_sent = [a.partition(" ")[2] for a in authorization or [] if len(a) > 12]
        for s in secrets_sent:
            assert s not in r.text and s not in str(r.headers), name
        assert not LEAKS.search(r.text), (name, r.text)
        if status == 200:
            assert "www-authenticate" not in r.headers
            rows.append((name, status, "-"))
            continue
        header = r.headers["www-authenticate"]
        params = challenge_params(header)
        assert params["resource_metadata"] == metadata_url(server), name
        if error is None:
            assert "error" not in params, (name, header)  # RFC 6750 §3.1: no error without credentials
        else:
            assert params["error"] == error and params["error_description"], (name, header)
            assert r.json()["error"] == error
        if error == "insufficient_scope":
            assert "mcpaql:read" in params["scope"]
        rows.append((name, status, header))
    log = server.log()
    for authorization, _s, _e in table.values():
        for a in authorization or []:
            credential = a.partition(" ")[2]
            if len(credential) > 12:
                assert credential not in log
    assert not LEAKS.search(log), log[-2000:]
    print("\n".join(f"{n:28} {s} {h}" for n, s, h in rows))


async def test_protected_resource_metadata(issuer: Issuer, server: Served) -> None:
    r = httpx.get(metadata_url(server), timeout=10)
    assert r.status_code == 200
    doc = r.json()
    assert doc["resource"] == server.url
    assert doc["authorization_servers"] == [issuer.url]
    assert {"mcpaql:read", "mcpaql:create", "mcpaql:update", "mcpaql:delete", "mcpaql:execute"} <= set(doc["scopes_supported"])
    assert {"mcpaql:full", "mcpaql:admin"} <= set(doc["scopes_supported"])
    assert doc["bearer_methods_supported"] == ["header"]
    # the document itself needs no token, and other paths are not behind the gate
    assert httpx.get(f"http://127.0.0.1:{server.port}/elsewhere", timeout=10).status_code == 404


async def call(conn: Any, tool: str, request: dict[str, Any]) -> dict[str, Any]:
    body, _is_error, _raw = await conn.call_tool(tool, request)
    assert isinstance(body, dict), body
    return body


async def test_the_official_client_with_a_token(issuer: Issuer, server: Served) -> None:
    token = issuer.token(server.url, sub="alice@example.com")
    async with connect(server.url, headers={"Authorization": f"Bearer {token}"}) as conn:
        tools = {t["name"] for t in await conn.list_tools_raw()}
        assert tools == {f"authdemo_mcpaql_{e}" for e in ("create", "read", "update", "delete", "execute")}
        me = await call(conn, "authdemo_mcpaql_read", {"operation": "whoami"})
        assert me["data"]["identity"] == "alice@example.com", me
        made = await call(conn, "authdemo_mcpaql_create", {"operation": "create_note", "params": {"name": "n1"}})
        assert made["success"], made


async def test_an_api_key_is_its_subject(keys: Keys, server: Served) -> None:
    async with connect(server.url, headers={"Authorization": f"Bearer {keys.writer}"}) as conn:
        me = await call(conn, "authdemo_mcpaql_read", {"operation": "whoami"})
        assert me["data"]["identity"] == "key:writer"
        tools = {t["name"] for t in await conn.list_tools_raw()}
        assert "authdemo_mcpaql_execute" not in tools and "authdemo_mcpaql_delete" in tools


async def test_a_session_belongs_to_its_caller(keys: Keys, server: Served) -> None:
    """B presenting A's ``Mcp-Session-Id`` is refused (the SDK binds sessions to principals)."""
    seen: list[str] = []
    async with connect(server.url, headers={"Authorization": f"Bearer {keys.reader}"}) as conn:
        await call(conn, "authdemo_mcpaql_read", {"operation": "whoami"})
        r = httpx.post(server.url, content=json.dumps(INIT), headers={**HEADERS, "Authorization": f"Bearer {keys.reader}"})
        seen.append(r.headers.get("mcp-session-id", ""))
        sid = seen[0]
        assert sid
        list_call = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
        as_b = {**HEADERS, "Authorization": f"Bearer {keys.writer}", "Mcp-Session-Id": sid, "Mcp-Protocol-Version": "2025-11-25"}
        hijack = httpx.post(server.url, content=json.dumps(list_call), headers=as_b, timeout=10)
        assert hijack.status_code == 404, hijack.text  # "as if the session did not exist"
        assert "authdemo_mcpaql" not in hijack.text


@pytest.fixture(scope="module")
def stateless(issuer: Issuer, tmp_path_factory: pytest.TempPathFactory) -> Any:
    tmp = tmp_path_factory.mktemp("stateless")
    argv = ["serve", APP, "--stateless", "--auth-issuer", issuer.url]  # JWKS found from the issuer's metadata
    srv = Served(argv, tmp, env={"MCPAQL_HOME": str(tmp)})
    yield srv
    srv.stop()


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_stateless_and_both_protocol_eras_carry_the_identity(issuer: Issuer, stateless: Served, mode: str) -> None:
    token = issuer.token(stateless.url, sub="svc-7", scope="mcpaql:read")
    async with connect(stateless.url, headers={"Authorization": f"Bearer {token}"}, mode=mode) as conn:  # type: ignore[arg-type]
        assert [t["name"] for t in await conn.list_tools_raw()] == ["authdemo_mcpaql_read"]
        for _ in range(2):
            me = await call(conn, "authdemo_mcpaql_read", {"operation": "whoami"})
            assert me["data"]["identity"] == "svc-7", me
        denied = await call(conn, "authdemo_mcpaql_create", {"operation": "create_note", "params": {"name": "x"}})
        assert denied["success"] is False
    assert post(stateless, None).status_code == 401
