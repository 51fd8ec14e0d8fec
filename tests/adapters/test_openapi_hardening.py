"""The OpenAPI runtime as an attack surface (issue 10 points 6-7), against real HTTP servers
(uvicorn on loopback) that record the raw request line:

* path arguments can never change the route: every traversal spelling is refused or arrives as
  one literal segment, and a hypothesis property checks it for any string;
* header arguments with CR/LF/control characters are validation errors; configured headers win;
* targets: link-local/metadata addresses refused at start and at connect time (DNS rebinding),
  private ones unless the document is local; redirects followed only within the origin, so the
  configured credentials never reach another one;
* error bodies summarised (status, safe preview, no HTML/trace/paths), secrets redacted, the
  exposed operation named.
"""

from __future__ import annotations

import base64
import json
import socket
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.from_thread
import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aql_support import assert_no_leak, serve_in_thread
from mcpaql.adapters import targets
from mcpaql.adapters.openapi import OpenAPIDocument, OpenAPIError, OpenAPIRuntime, load_document, serve_openapi
from mcpaql.adapters.targets import GuardedTransport, TargetPolicy, address_class, host_class, refused_by
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session

TOKEN = "tok-9f8e7d6c5b4a"
REFUSED = {"VALIDATION_INVALID_VALUE", "VALIDATION_INVALID_ENCODING"}  # the core refuses NUL as an encoding error
TRAVERSALS = [
    "..",
    ".",
    "%2e%2e",
    "%2E%2E",
    "%2E.",
    ".%2e",
    "..%2f",
    "..%2F",
    "%2e%2e%2f",
    "../",
    "..\\",
    "../admin",
    "x/../../",
    "..%5c",
    "%252e%252e",
    "%25252e%25252e",
    "．．",
    "．",
    "‥",
    "。。",
    "｡｡",
    " .. ",
    "..\t",
    "",
    "..;",
    "\x00",
    "a\nb",
    "\u2025",
]
ODD_BUT_SAFE = [
    "/",
    "//",
    "\\",
    "%5c",
    "%2f",
    ";",
    ";x=1",
    "?",
    "?admin=1",
    "#",
    "#frag",
    "a/b",
    "a?b#c",
    "...",
    "a..b",
    "%",
    "%zz",
    "~",
    "@evil.com",
    ":80",
    "http://evil.com/",
    "é",
    "／",
    "＼",
    "∕",
    " ",
    "{user_id}",
]


def _doc(port: int, **extra: Any) -> dict[str, Any]:
    uid = {"name": "user_id", "in": "path", "required": True, "schema": {"type": "string"}}
    return {
        "openapi": "3.0.3",
        "info": {"title": "Users", "version": "1.0.0"},
        "servers": [{"url": f"http://127.0.0.1:{port}/v1"}],
        "paths": {
            "/profile": {"get": {"operationId": "getProfile", "summary": "The caller's own profile"}},
            "/": {"get": {"operationId": "getRoot", "summary": "Service index"}},
            "/users/{user_id}": {
                "parameters": [uid],
                "get": {"operationId": "getUser", "summary": "Get a user"},
                "delete": {"operationId": "deleteUser", "summary": "Delete a user"},
            },
            "/users/{user_id}/profile": {
                "parameters": [uid],
                "get": {
                    "operationId": "getUserProfile",
                    "summary": "Get a user's profile",
                    "parameters": [
                        {"name": "X-Trace", "in": "header", "schema": {"type": "string"}},
                        {"name": "X-Api-Key", "in": "header", "schema": {"type": "string"}},
                        {"name": "Host", "in": "header", "schema": {"type": "string"}},
                        {"name": "q", "in": "query", "schema": {"type": "string"}},
                    ],
                },
            },
            "/items/{item_id}": {
                "get": {
                    "operationId": "getItem",
                    "summary": "Get an item",
                    "parameters": [{"name": "item_id", "in": "path", "required": True, "schema": {"type": "string"}}],
                }
            },
            "/go/{where}": {
                "get": {
                    "operationId": "getGo",
                    "summary": "Follow a link",
                    "parameters": [{"name": "where", "in": "path", "required": True, "schema": {"type": "string"}}],
                }
            },
        },
        **extra,
    }


class Recorder:
    """A raw ASGI app: records every request's method, raw path, query and headers."""

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.other = ""  # another origin to redirect to

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        raw = scope["raw_path"].decode("latin-1")
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.seen.append(
            {"method": scope["method"], "raw_path": raw, "query": scope["query_string"].decode(), "headers": headers}
        )
        status, body, extra, ctype = self.respond(raw, headers)
        await send({"type": "http.response.start", "status": status, "headers": [(b"content-type", ctype.encode()), *extra]})
        await send({"type": "http.response.body", "body": body.encode()})

    def respond(self, raw: str, headers: dict[str, str]) -> tuple[int, str, list[tuple[bytes, bytes]], str]:
        j = "application/json"
        auth = headers.get("authorization", "")
        if raw.endswith("/items/html502"):
            page = (
                "<!DOCTYPE html><html><head><title>502 Bad Gateway</title><style>h1{color:red}</style>"
                "<script>var t='" + TOKEN + "'</script></head><body><h1>502 Bad Gateway</h1>"
                "<p>upstream /srv/app/server.py failed</p><hr><center>nginx/1.25.3</center></body></html>"
            )
            return 502, page, [], "text/html"
        if raw.endswith("/items/trace"):
            body = {"error": "boom", "trace": 'Traceback (most recent call last):\n  File "/srv/app.py", line 3'}
            return 500, json.dumps(body) + "\ntrace: File /srv/app.py, line 3", [], j
        if raw.endswith("/items/echo"):
            token = auth.partition(" ")[2]
            body = (
                f"invalid token {token} (sent as {auth}); b64 {base64.b64encode(token.encode()).decode()}; "
                f"url {urllib.parse.quote(auth)}; at /home/deploy/api/auth.py:41"
            )
            return 401, body, [], "text/plain"
        if raw.endswith("/items/missing"):
            return 404, json.dumps({"message": "Item not found"}), [], j
        if "/go/out" in raw:
            return 302, "", [(b"location", self.other.encode())], "text/plain"
        if "/go/in" in raw:
            return 302, "", [(b"location", b"/v1/users/u1")], "text/plain"
        if "/go/loop" in raw:
            return 302, "", [(b"location", raw.encode())], "text/plain"
        return 200, json.dumps({"path": raw}), [], j


@pytest.fixture(scope="module")
def api() -> Iterator[tuple[int, Recorder, Recorder]]:
    rec, other = Recorder(), Recorder()
    with serve_in_thread(rec) as url, serve_in_thread(other) as other_url:
        rec.other = other_url.replace("127.0.0.1", "localhost") + "/stolen"
        yield int(url.rsplit(":", 1)[1]), rec, other


@pytest.fixture(scope="module")
def runtime(api: tuple[int, Recorder, Recorder]) -> Iterator[tuple[Any, OpenAPIRuntime, Recorder]]:
    """One open runtime for the module (hypothesis calls it many times), driven through a portal."""
    port, rec, _ = api
    with anyio.from_thread.start_blocking_portal() as portal:
        rt = serve_openapi(_doc(port), headers={"Authorization": f"Bearer {TOKEN}", "X-Api-Key": "k-" + TOKEN})
        portal.call(rt.__aenter__)
        try:
            yield portal, rt, rec
        finally:
            portal.call(rt.__aexit__, None, None, None)


def call(rt_fixture: tuple[Any, OpenAPIRuntime, Recorder], op: str, **params: Any) -> tuple[dict[str, Any], list[dict]]:
    portal, rt, rec = rt_fixture
    before = len(rec.seen)
    env = portal.call(rt.engine.execute, {"operation": op, "params": params}, Context(session=Session()))
    return env, rec.seen[before:]


def _segments(raw: str) -> list[str]:
    return raw.split("?", 1)[0].split("/")


# ---- 1. path arguments cannot change the route ---------------------------------------------------


@pytest.mark.parametrize("value", TRAVERSALS)
def test_traversal_spellings_are_refused_and_nothing_is_sent(runtime: Any, value: str) -> None:
    for op in ("get_user_profile", "get_user", "delete_user"):
        env, seen = call(runtime, op, user_id=value)
        assert env["success"] is False and env["error"]["code"] in REFUSED, (op, value, env)
        assert seen == [], f"{op}({value!r}) reached {seen}"
        assert "user_id" in env["error"]["message"] or env["error"]["details"]["location"] == "user_id"
        assert_no_leak(env["error"]["message"])


@pytest.mark.parametrize("value", ODD_BUT_SAFE)
def test_separators_and_encodings_arrive_as_one_literal_segment(runtime: Any, value: str) -> None:
    env, seen = call(runtime, "get_user_profile", user_id=value)
    assert env["success"], env
    assert len(seen) == 1 and seen[0]["method"] == "GET"
    segs = _segments(seen[0]["raw_path"])
    assert segs[:3] == ["", "v1", "users"] and segs[4:] == ["profile"] and len(segs) == 5, seen[0]["raw_path"]
    assert urllib.parse.unquote(segs[3]) == value  # decoded once, the server has exactly the value
    assert seen[0]["query"] == ""  # nothing spilled into the query string


def test_include_and_read_only_hold_against_dot_segments(api: tuple[int, Recorder, Recorder]) -> None:
    """The issue's reproduction: with only get_user_profile exposed, '..' must not reach /profile or /."""
    port, rec, _ = api

    async def main() -> None:
        async with serve_openapi(_doc(port), include=["getUserProfile"], read_only=True) as rt:
            assert {op.name for op in rt.engine.registry.operations} == {"get_user_profile", "introspect"}
            before = len(rec.seen)
            for value in ("..", "../..", "%2e%2e", "..%2f.."):
                env = await rt.engine.execute(
                    {"operation": "get_user_profile", "params": {"user_id": value}}, Context(session=Session())
                )
                assert env["error"]["code"] == "VALIDATION_INVALID_VALUE"
            assert rec.seen[before:] == []

    anyio.run(main)


@pytest.mark.anyio
async def test_issue_reproduction_over_stdio_with_the_official_client(
    api: tuple[int, Recorder, Recorder], tmp_path: Path
) -> None:
    """`mcpaql openapi doc --include getUserProfile --read-only`, called as a client would."""
    from mcp import Client, StdioServerParameters

    port, rec, _ = api
    path = tmp_path / "users.json"
    path.write_text(json.dumps(_doc(port)))
    argv = ["-m", "mcpaql.cli", "openapi", str(path), "--include", "getUserProfile", "--read-only"]
    async with Client(StdioServerParameters(command=sys.executable, args=argv), mode="legacy", cache=None) as c:
        before = len(rec.seen)
        for value in ("..", "%2e%2e/..", "．．"):
            r = await c.call_tool("users_mcpaql_read", {"operation": "get_user_profile", "params": {"user_id": value}})
            env = json.loads(r.content[0].text)
            assert env["error"]["code"] == "VALIDATION_INVALID_VALUE", env
        assert rec.seen[before:] == []
        r = await c.call_tool("users_mcpaql_read", {"operation": "get_user_profile", "params": {"user_id": "a/b"}})
        assert json.loads(r.content[0].text)["data"] == {"path": "/v1/users/a%2Fb/profile"}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    value=st.text(max_size=24)
    | st.sampled_from(TRAVERSALS + ODD_BUT_SAFE).flatmap(
        lambda s: st.tuples(st.text(max_size=4), st.just(s), st.text(max_size=4)).map("".join)
    )
)
def test_property_any_string_reaches_exactly_the_templated_route_or_nothing(runtime: Any, value: str) -> None:
    env, seen = call(runtime, "get_user_profile", user_id=value)
    if not env["success"]:
        assert env["error"]["code"] in REFUSED and seen == [], (value, env, seen)
        return
    assert len(seen) == 1
    segs = _segments(seen[0]["raw_path"])
    assert len(segs) == 5 and segs[:3] == ["", "v1", "users"] and segs[4] == "profile", seen[0]["raw_path"]
    assert urllib.parse.unquote(segs[3]) == value and seen[0]["query"] == ""


# ---- 3. headers and query values -----------------------------------------------------------------


@pytest.mark.parametrize("value", ["a\r\nX-Injected: 1", "a\nb", "a\rb", "\x00", "a\x7f", "é", "\r\n\r\nGET / HTTP/1.1"])
def test_header_values_with_control_characters_are_validation_errors(runtime: Any, value: str) -> None:
    env, seen = call(runtime, "get_user_profile", user_id="u1", x_trace=value)
    assert env["error"]["code"] in REFUSED and seen == [], env
    assert "X-Trace" in env["error"]["message"] or env["error"]["details"]["location"] == "x_trace"
    assert not env["error"]["details"].get("retryable")


def test_header_arguments_arrive_and_configured_headers_win(runtime: Any) -> None:
    env, seen = call(
        runtime, "get_user_profile", user_id="u1", x_trace="t-1\tok", x_api_key="agent-chosen", q="line1\r\nline2 & ?#"
    )
    assert env["success"], env
    h = seen[0]["headers"]
    assert h["x-trace"] == "t-1\tok" and h["x-api-key"] == "k-" + TOKEN and h["authorization"] == f"Bearer {TOKEN}"
    assert urllib.parse.parse_qs(seen[0]["query"]) == {"q": ["line1\r\nline2 & ?#"]}  # query values: encoded whole


def test_reserved_header_arguments_and_bad_configured_values_are_not_sent(
    runtime: Any, api: tuple[int, Recorder, Recorder], monkeypatch: pytest.MonkeyPatch
) -> None:
    env, seen = call(runtime, "get_user_profile", user_id="u1", host="metadata.google.internal")
    assert env["error"]["code"] == "VALIDATION_INVALID_VALUE" and "reserved" in env["error"]["message"] and seen == []
    port, rec, _ = api
    for bad in ({"Bad Name": "x"}, {"X-Key": "a\r\nX-Evil: 1"}, {"X-Key": "ключ"}):
        with pytest.raises(OpenAPIError, match="--header"):
            OpenAPIRuntime(load_document(_doc(port)), headers=bad)  # refused at start, one line
    monkeypatch.setenv("INJECTED", "abc\r\nX-Evil: 1")

    async def main() -> None:
        async with serve_openapi(_doc(port), headers={"X-Key": "${INJECTED}"}) as rt:
            before = len(rec.seen)
            env = await rt.engine.execute({"operation": "get_user", "params": {"user_id": "u1"}}, Context(session=Session()))
            assert env["error"]["code"] == "INTERNAL_ERROR" and "X-Key" in env["error"]["message"], env
            assert "abc" not in env["error"]["message"] and rec.seen[before:] == []

    anyio.run(main)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=st.text(max_size=20))
def test_property_header_values_arrive_exactly_or_are_refused(runtime: Any, value: str) -> None:
    env, seen = call(runtime, "get_user_profile", user_id="u1", x_trace=value)
    if env["success"]:
        assert seen[0]["headers"].get("x-trace", "") == value.strip(" \t")  # HTTP strips optional whitespace
    else:
        assert env["error"]["code"] in REFUSED and seen == []


# ---- 2. targets and credentials ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("host", "klass"),
    [
        ("169.254.169.254", "forbidden"),
        ("169.254.170.2", "forbidden"),
        ("[fd00:ec2::254]", "forbidden"),
        ("metadata.google.internal", "forbidden"),
        ("METADATA.GOOGLE.INTERNAL.", "forbidden"),
        ("metadata", "forbidden"),
        ("100.100.100.200", "forbidden"),
        ("[::ffff:169.254.169.254]", "forbidden"),
        ("[64:ff9b::a9fe:a9fe]", "forbidden"),
        ("[fe80::1]", "forbidden"),
        ("0.0.0.0", "forbidden"),
        ("[::]", "forbidden"),
        ("224.0.0.1", "forbidden"),
        ("240.0.0.1", "forbidden"),
        ("127.0.0.1", "private"),
        ("[::1]", "private"),
        ("localhost", "private"),
        ("api.localhost", "private"),
        ("10.1.2.3", "private"),
        ("172.16.0.1", "private"),
        ("192.168.1.1", "private"),
        ("[fd12::1]", "private"),
        ("100.64.0.1", "private"),
        ("[::ffff:10.0.0.1]", "private"),
        ("8.8.8.8", "public"),
        ("[2606:4700:4700::1111]", "public"),
        ("api.example.com", None),
    ],
)
def test_address_classes(host: str, klass: str | None) -> None:
    assert host_class(host) == klass


@given(st.integers(0, 2**16 - 1))
def test_property_all_of_link_local_is_forbidden_in_every_spelling(n: int) -> None:
    import ipaddress

    v4 = ipaddress.IPv4Address((169 << 24) | (254 << 16) | n)
    for ip in (
        v4,
        ipaddress.IPv6Address(f"::ffff:{v4}"),
        ipaddress.IPv6Address(int(ipaddress.IPv6Address("64:ff9b::")) | int(v4)),
    ):
        assert address_class(ip) == "forbidden"


def _remote(doc: dict[str, Any]) -> OpenAPIDocument:
    """A document as if fetched from a public URL (its origin decides what its servers may name)."""
    api = load_document(doc)
    api.origin = "https://8.8.8.8/openapi.json"
    return api


def test_targets_are_refused_at_start_with_one_line(api: tuple[int, Recorder, Recorder]) -> None:
    port = api[0]
    for url in (
        "http://169.254.169.254/latest",
        "http://metadata.google.internal/computeMetadata/v1",
        "http://[fd00:ec2::254]/",
        "http://[::ffff:169.254.169.254]/",
    ):
        doc = {**_doc(port), "servers": [{"url": url}]}
        with pytest.raises(OpenAPIError, match="link-local or cloud-metadata") as e:
            OpenAPIRuntime(load_document(doc))  # even from a local file
        assert "\n" not in str(e.value) and "--allow-private-targets" in str(e.value)
        OpenAPIRuntime(load_document(doc), allow_private_targets=True)  # the operator's explicit choice
    # Loopback/private: fine for a local document or an explicit --base-url, refused for a fetched one.
    local = _doc(port)
    OpenAPIRuntime(load_document(local))
    with pytest.raises(OpenAPIError, match="private or loopback"):
        OpenAPIRuntime(_remote(local))
    OpenAPIRuntime(_remote(local), base_url=f"http://127.0.0.1:{port}/v1")
    OpenAPIRuntime(_remote(local), allow_private_targets=True)
    with pytest.raises(OpenAPIError, match="must be an http"):
        OpenAPIRuntime(load_document(local), base_url="file:///etc/passwd")


def test_cli_refuses_a_metadata_target_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "api.json"
    path.write_text(json.dumps({**_doc(1), "servers": [{"url": "http://169.254.169.254/v1"}]}))
    r = subprocess.run(
        [sys.executable, "-m", "mcpaql.cli", "openapi", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert r.returncode == 2 and "refusing the API target" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len([ln for ln in r.stderr.splitlines() if ln.strip()]) == 1


def test_connect_time_check_stops_dns_rebinding(api: tuple[int, Recorder, Recorder], monkeypatch: pytest.MonkeyPatch) -> None:
    """The name resolves to a public address at start and to loopback when connecting: refused then."""
    port, rec, _ = api
    for var in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        monkeypatch.delenv(var, raising=False)  # through a proxy the proxy would connect, not us
    real = socket.getaddrinfo

    def start_lookup(host: Any, *a: Any, **kw: Any) -> Any:
        return real("8.8.8.8", *a, **kw) if host == "rebind.test" else real(host, *a, **kw)

    async def connect_lookup(host: Any, port_: Any, **kw: Any) -> Any:
        return real("127.0.0.1" if host == "rebind.test" else host, port_, **kw)

    monkeypatch.setattr(socket, "getaddrinfo", start_lookup)
    monkeypatch.setattr(targets.anyio, "getaddrinfo", connect_lookup)
    doc = {**_doc(port), "servers": [{"url": f"http://rebind.test:{port}/v1"}]}

    async def main() -> None:
        async with OpenAPIRuntime(_remote(doc), headers={"Authorization": f"Bearer {TOKEN}"}) as rt:
            before = len(rec.seen)
            env = await rt.engine.execute({"operation": "get_user", "params": {"user_id": "u1"}}, Context(session=Session()))
            assert env["error"]["code"] == "PERMISSION_DENIED", env
            assert "private or loopback" in env["error"]["message"] and "127.0.0.1" in env["error"]["message"]
            assert rec.seen[before:] == []

    anyio.run(main)


def test_guarded_transport_checks_the_dialled_address(api: tuple[int, Recorder, Recorder]) -> None:
    port = api[0]

    async def main() -> None:
        async with httpx.AsyncClient(transport=GuardedTransport(TargetPolicy())) as c:
            with pytest.raises(httpx.ConnectError) as e:
                await c.get(f"http://localhost:{port}/v1/users/x")
            assert "private or loopback" in (refused_by(e.value) or "")
        async with httpx.AsyncClient(transport=GuardedTransport(TargetPolicy(private=True))) as c:
            assert (await c.get(f"http://localhost:{port}/v1/users/x")).status_code == 200

    anyio.run(main)


def test_redirects_stay_on_the_origin_and_credentials_never_leave(runtime: Any, api: tuple[int, Recorder, Recorder]) -> None:
    _, _, other = api
    env, seen = call(runtime, "get_go", where="in")
    assert env["success"] and env["data"] == {"path": "/v1/users/u1"}, env
    assert seen[-1]["headers"]["authorization"] == f"Bearer {TOKEN}"  # same origin: followed with credentials
    env, seen = call(runtime, "get_go", where="out")
    assert env["error"]["code"] == "PERMISSION_DENIED" and "another origin" in env["error"]["message"], env
    assert other.seen == []  # the other origin got nothing, so certainly no Authorization
    env, _ = call(runtime, "get_go", where="loop")
    assert env["error"]["code"] == "INTERNAL_ERROR" and "redirected more than" in env["error"]["message"]


# ---- 4. errors a model can act on ----------------------------------------------------------------


def test_error_bodies_are_summarised_redacted_and_name_the_exposed_operation(runtime: Any) -> None:
    env, _ = call(runtime, "get_item", item_id="html502")
    e = env["error"]
    assert e["code"] == "INTERNAL_ERROR" and "get_item" in e["message"] and "getItem" not in e["message"]
    assert "HTTP 502 Bad Gateway" in e["message"] and "nginx" in e["message"]
    for bad in ("<", "color:red", TOKEN, "/srv/", "server.py"):
        assert bad not in e["message"], (bad, e["message"])
    env, _ = call(runtime, "get_item", item_id="trace")
    e = env["error"]
    assert "boom" in e["message"] and "/srv/" not in e["message"] and "Traceback" not in e["message"], e
    assert "File " not in e["message"]
    env, _ = call(runtime, "get_item", item_id="echo")
    e = env["error"]
    assert e["code"] == "PERMISSION_DENIED" and e["message"].startswith("get_item: HTTP 401 Unauthorized"), e
    b64 = base64.b64encode(TOKEN.encode()).decode()
    for bad in (TOKEN, b64, b64.rstrip("="), urllib.parse.quote(f"Bearer {TOKEN}"), "/home/deploy"):
        assert bad not in e["message"], (bad, e["message"])
    assert "[REDACTED]" in e["message"] and e["details"]["upstream_tool"] == "getItem"
    env, _ = call(runtime, "get_item", item_id="missing")
    assert env["error"]["code"] == "NOT_FOUND_RESOURCE"
    assert env["error"]["message"] == 'get_item: HTTP 404 Not Found: {"message":"Item not found"}'
    assert_no_leak(env["error"]["message"])
