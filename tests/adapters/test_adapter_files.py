"""Adapter files written by others (the spec's examples, the MCPAQL examples repository, the official
generator's output; see data/adapter_files/README.md) and broken copies of them: each loads, loads with
warnings, or is refused with a field path — never a crash. The blocks they declare are applied, and what
mcpaql cannot honour is refused at start."""

from __future__ import annotations

import copy
import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aql_support import serve_in_thread
from mcpaql.adapters.schema import load_adapter_schema, serve_adapter
from mcpaql.adapters.schema.check import check_adapter_schema
from mcpaql.adapters.schema.load import AdapterSchema, parse_adapter_file, safety_settings
from mcpaql.protocol.context import Context, Session
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.registry import SchemaError
from mcpaql.safety.gatekeeper import PolicyRule
from mcpaql.safety.ratelimit import Quota, RateRule

DATA = Path(__file__).parent / "data" / "adapter_files"
FILES = sorted(p for p in DATA.glob("*/*-adapter.*"))
# A refusal always starts with the field path it is about.
_SEG = r'(?:[A-Za-z_][\w-]*|\[\d+\]|\["(?:[^"\\]|\\.)*"\])'
FIELD_PATH = re.compile(rf"^(?:{_SEG})(?:\.?{_SEG})*: \S")

EXPECTED: dict[str, tuple[str, str]] = {
    "examples/apple-mail-adapter.md": ("refused", "target.transport: 'native-applescript' is not a known value"),
    "examples/github-api-adapter.md": ("loads", ""),
    "examples/playwright-mcp-adapter.json": ("loads", ""),
    "spec/danger-levels-adapter.md": ("loads", "operations.delete[0].danger.cooldown_seconds: is not enforced"),
    "spec/elem-extensions-adapter.md": ("loads", ""),
    "spec/example-api-adapter.json": ("loads", "auth.token_env: not set: no bearer token is sent"),
    "spec/minimal-api-adapter.md": ("loads", ""),
    "spec/rate-limiting-adapter.md": ("loads", "rate_limits.cost: cost estimation is not enforced"),
    "spec/trust-levels-adapter.md": ("loads", ""),
}


def ctx() -> Context:
    return Context(session=Session())


def rel(p: Path) -> str:
    return p.relative_to(DATA).as_posix()


def test_every_collected_file_is_listed() -> None:
    assert sorted(EXPECTED) == [rel(p) for p in FILES]


@pytest.mark.parametrize("path", FILES, ids=rel)
def test_collected_file_loads_or_is_refused_with_its_field_path(path: Path) -> None:
    outcome, text = EXPECTED[rel(path)]
    if outcome == "refused":
        with pytest.raises(SchemaError) as e:
            load_adapter_schema(path)
        assert e.value.message.startswith(text) and FIELD_PATH.match(e.value.message)
        assert "\n" not in e.value.message
        return
    schema = load_adapter_schema(path)
    assert all(FIELD_PATH.match(w) or w.startswith("the file is") for w in schema.warnings)
    if text:
        assert any(w.startswith(text) for w in schema.warnings), schema.warnings
    schema.registry(mcp_call=_never_called)  # builds every operation


async def _never_called(tool: str, args: dict[str, Any], ctx: Any) -> Any:
    raise AssertionError("no upstream call expected")


def test_examples_metadata_is_kept() -> None:
    s = load_adapter_schema(DATA / "examples/github-api-adapter.md")
    info = s.info(None)
    assert info["metadata"]["author"] == "MCP-AQL Specification Team"
    assert info["metadata"]["tags"][0] == "github" and info["metadata"]["created"] == "2026-01-26T00:00:00Z"
    assert info["trust"] == {"level": "untested"}


def test_generator_tool_mapping_targets_the_mcp_upstream() -> None:
    s = load_adapter_schema(DATA / "examples/playwright-mcp-adapter.json")
    assert s.needs_mcp
    spec = s.upstream_spec()
    assert str(spec.url) == "http://localhost:8931/mcp"
    reg = s.registry(mcp_call=_never_called)
    assert reg.get("browser_click") is not None


# ---- broken copies: every field's wrong type, every key removed, unknown values ----------------------

WRONG = (None, True, 0, -1, 1.5, "", "x", "extreme", [], ["x"], {}, {"x": 1})


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, (*prefix, i))
    return out


def _set(data: Any, path: tuple[Any, ...], value: Any, delete: bool = False) -> Any:
    data = copy.deepcopy(data)
    node = data
    for p in path[:-1]:
        node = node[p]
    if delete:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


def outcome_of(data: Any) -> str:
    """'loads' / 'refused' — anything else (an exception escaping) fails the test."""
    try:
        warnings = check_adapter_schema(data)
    except SchemaError as e:
        assert FIELD_PATH.match(e.message), e.message
        assert "\n" not in e.message and "Traceback" not in e.message
        return "refused"
    assert all(isinstance(w, str) for w in warnings)
    s = AdapterSchema(data)
    s.info(None)
    cfg = safety_settings(s, None)  # the file's own trust, danger and rate-limit blocks as safety settings
    if cfg is not None:
        [RateRule.parse(r) for r in cfg.rate_limits]
        [Quota.parse(q) for q in cfg.quotas]
        [PolicyRule.parse(p) for p in cfg.policies]
    try:
        Engine(s.registry(mcp_call=_never_called))
    except SchemaError as e:  # e.g. an MCP mapping with no upstream
        assert FIELD_PATH.match(e.message) or e.message.startswith("operation '")
    return "loads"


def _loadable() -> list[tuple[str, dict[str, Any]]]:
    out = []
    for p in FILES:
        if EXPECTED[rel(p)][0] == "loads":
            out.append((rel(p), json.loads(json.dumps(load_adapter_schema(p).data))))
    return out


LOADABLE = _loadable()


@pytest.mark.parametrize(("name", "data"), LOADABLE, ids=[n for n, _ in LOADABLE])
def test_every_field_wrong_type_or_missing_never_crashes(name: str, data: dict[str, Any]) -> None:
    seen = {"loads": 0, "refused": 0}
    for path in _paths(data):
        for value in WRONG:
            seen[outcome_of(_set(data, path, value))] += 1
        seen[outcome_of(_set(data, path, None, delete=True))] += 1
    assert seen["refused"] > 0 and seen["loads"] > 0


@pytest.mark.parametrize("key", ["name", "type", "version", "description", "target", "operations"])
def test_missing_required_key_is_refused_with_its_path(key: str) -> None:
    data = copy.deepcopy(LOADABLE[0][1])
    del data[key]
    with pytest.raises(SchemaError, match=rf"^SCHEMA_MISSING_FIELD: {key}: is required$"):
        check_adapter_schema(data)


def test_unknown_keys_at_every_level_are_warnings() -> None:
    data = copy.deepcopy(dict(LOADABLE[0][1]))
    data["x_top"] = 1
    data["target"]["x_target"] = 1
    op = next(iter(data["operations"].values()))[0]
    op["x_op"] = 1
    warnings = check_adapter_schema(data)
    assert "x_top: unknown key, ignored" in warnings and "target.x_target: unknown key, ignored" in warnings
    assert any(w.endswith(".x_op: unknown key, ignored") for w in warnings)


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 10**6) | st.floats(allow_nan=False) | st.text(max_size=12),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_property_arbitrary_mutations_never_crash_the_loader(data: st.DataObject) -> None:
    _, doc = data.draw(st.sampled_from(LOADABLE))
    for _ in range(data.draw(st.integers(1, 3))):
        paths = _paths(doc)
        path = data.draw(st.sampled_from(paths))
        action = data.draw(st.sampled_from(["set", "delete", "add"]))
        if action == "add" and isinstance(_get(doc, path), dict):
            doc = _set(doc, (*path, data.draw(st.text(max_size=10))), data.draw(JSON))
        else:
            doc = _set(doc, path, data.draw(JSON), delete=action == "delete")
    outcome_of(doc)


def _get(data: Any, path: tuple[Any, ...]) -> Any:
    for p in path:
        data = data[p]
    return data


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=200))
def test_property_any_text_file_never_crashes(tmp_path_factory: pytest.TempPathFactory, text: str) -> None:
    p = tmp_path_factory.mktemp("f") / "x-adapter.md"
    p.write_text("---\n" + text + "\n---\n", encoding="utf-8")
    try:
        data = parse_adapter_file(p)
    except SchemaError:
        return
    outcome_of(data)


# ---- declared but unavailable: refused at start, one line naming the key and what is supported -------


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (
            lambda d: d["target"].update(transport="websocket"),
            "target.transport: 'websocket' is not supported by mcpaql (supported: http, native",
        ),
        (
            lambda d: d["target"].update(protocol="graphql"),
            "target.protocol: 'graphql' is not supported by mcpaql (supported: rest, custom",
        ),
        (
            lambda d: d["target"].update(serialization="xml"),
            "target.serialization: 'xml' is not supported by mcpaql (supported: json, form)",
        ),
        (
            lambda d: d.update(auth={"type": "oauth2"}),
            "auth.type: 'oauth2' is not supported by mcpaql (supported: none, api_key, bearer, basic)",
        ),
        (
            lambda d: d["target"].update(protocol="custom"),
            "target.protocol: 'custom' cannot carry the HTTP mapping of operations.create[0] (use 'rest')",
        ),
    ],
)
def test_declared_but_unavailable_is_refused(change: Any, line: str, tmp_path: Path) -> None:
    data = copy.deepcopy(dict(LOADABLE)["examples/github-api-adapter.md"])
    change(data)
    with pytest.raises(SchemaError) as e:
        check_adapter_schema(data)
    assert e.value.message.startswith(line), e.value.message
    path = tmp_path / "github-api-adapter.json"
    path.write_text(json.dumps(data))
    proc = _run_cli(["serve", str(path)])
    assert proc.returncode == 2 and "Traceback" not in proc.stderr
    assert line in proc.stderr and len([ln for ln in proc.stderr.splitlines() if ln.strip()]) == 1, proc.stderr


def _run_cli(args: list[str]) -> Any:
    import subprocess

    return subprocess.run(
        [sys.executable, "-m", "mcpaql.cli", *args], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL
    )


# ---- the blocks applied, against a real HTTP API -------------------------------------------------------

SEEN: list[dict[str, Any]] = []


@pytest.fixture(scope="module")
def api() -> Any:
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    async def anything(request: Request) -> JSONResponse:
        body = (await request.body()).decode()
        SEEN.append(
            {
                "method": request.method,
                "path": request.url.path,
                "query": dict(request.query_params),
                "headers": dict(request.headers),
                "body": body,
            }
        )
        return JSONResponse(
            [{"id": 1, "name": "a", "secret": "s", "nested": {"x": 1}}, {"id": 2, "name": "b", "secret": "t", "nested": {"x": 2}}]
        )

    app = Starlette(routes=[Route("/{path:path}", anything, methods=["GET", "POST", "PUT", "PATCH", "DELETE"])])
    with serve_in_thread(app) as url:
        yield url


def _file(tmp_path: Path, url: str, extra: dict[str, Any], ops: dict[str, Any]) -> Path:
    data = {
        "name": "items-api",
        "type": "adapter",
        "version": "1.0.0",
        "description": "Items API used by the tests",
        "target": {"base_url": url, "transport": "http", "protocol": "rest", "serialization": "json"},
        "operations": ops,
        **extra,
    }
    p = tmp_path / "items-api-adapter.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


DELETE_OP = {"name": "remove_item", "maps_to": "DELETE /items/{id}", "params": {"id": {"type": "string", "required": True}}}
MARKED = {"name": "ping", "maps_to": "POST /ping", "requires_confirmation": True, "danger_level": "safe"}


@pytest.mark.anyio
async def test_requires_confirmation_holds_without_trust_on_every_path(api: str, tmp_path: Path) -> None:
    path = _file(
        tmp_path, api, {}, {"execute": [MARKED], "delete": [DELETE_OP], "read": [{"name": "list_items", "maps_to": "GET /items"}]}
    )
    SEEN.clear()
    async with serve_adapter(path) as rt:  # no safety settings, no --trust
        e, c = rt.engine, ctx()
        for req in (
            {"operation": "ping"},
            {"operation": "ping", "params": {"_confirmation": "forged"}},
            {"operation": "remove_item", "params": {"id": "1"}},
        ):
            env = await e.execute(req, c)
            assert env["success"] is False and env["error"]["code"] in (
                "CONFIRMATION_REQUIRED",
                "TOKEN_INVALID",
                "TOKEN_NOT_FOUND",
            ), env
        env = await e.execute(
            {
                "operations": [
                    {"operation": "list_items"},
                    {"operation": "ping"},
                    {"operation": "remove_item", "params": {"id": "2"}},
                ]
            },
            c,
        )
        assert not any(s["path"] in ("/ping", "/items/2") for s in SEEN), SEEN
        # a token for one operation does not unlock another; the right one does, once
        env = await e.execute({"operation": "ping"}, c)
        token = env["error"]["details"]["confirmation_token"]
        env = await e.execute({"operation": "remove_item", "params": {"id": "1", "_confirmation": token}}, c)
        assert env["success"] is False
        assert not any(s["path"] in ("/ping", "/items/1") for s in SEEN)
        env = await e.execute({"operation": "ping", "params": {"_confirmation": token}}, c)
        assert env["success"] is True, env
        env = await e.execute({"operation": "ping", "params": {"_confirmation": token}}, c)
        assert env["success"] is False
        assert [s["path"] for s in SEEN].count("/ping") == 1


@pytest.mark.anyio
async def test_requires_confirmation_holds_with_trust_too(api: str, tmp_path: Path) -> None:
    path = _file(tmp_path, api, {}, {"execute": [MARKED]})
    async with serve_adapter(path, safety={"trust": "certified", "store": "sqlite://:memory:"}) as rt:
        env = await rt.engine.execute({"operation": "ping"}, ctx())
        assert env["error"]["code"] == "CONFIRMATION_REQUIRED"


@pytest.mark.anyio
async def test_danger_block_and_trust_block_apply(api: str, tmp_path: Path) -> None:
    op = {
        "name": "purge_item",
        "maps_to": "POST /purge/{id}",
        "params": {"id": {"type": "string", "required": True}},
        "danger": {"level": "dangerous", "reasons": ["Cannot be undone"], "confirmation_message": "Purge item '{id}'?"},
    }
    path = _file(tmp_path, api, {}, {"execute": [op]})
    async with serve_adapter(path) as rt:
        env = await rt.engine.execute({"operation": "purge_item", "params": {"id": "7"}}, ctx())
        d = env["error"]["details"]
        assert d["danger_level"] == "dangerous" and d["reasons"] == ["Cannot be undone"]
        assert d["confirmation_message"] == "Purge item '7'?"
    # the file's own trust level gates: 'medium' (validated) denies a dangerous operation
    path = _file(tmp_path, api, {"trust": {"level": "medium"}}, {"execute": [op]})
    async with serve_adapter(path) as rt:
        env = await rt.engine.execute({"operation": "purge_item", "params": {"id": "7"}}, ctx())
        assert env["error"]["code"] == "PERMISSION_DANGER_LEVEL_DENIED"


@pytest.mark.anyio
async def test_pagination_and_fields_apply(api: str, tmp_path: Path) -> None:
    ops = {
        "read": [
            {
                "name": "list_items",
                "maps_to": "GET /items",
                "supports_fields": True,
                "default_fields": ["id", "name"],
                "pagination": {
                    "style": "page",
                    "param_name": "page",
                    "per_page_param": "per_page",
                    "default_limit": 25,
                    "max_limit": 50,
                },
            }
        ]
    }
    path = _file(tmp_path, api, {}, ops)
    SEEN.clear()
    async with serve_adapter(path) as rt:
        e = rt.engine
        env = await e.execute({"operation": "list_items"}, ctx())
        assert env["data"] == [{"id": 1, "name": "a"}, {"id": 2, "name": "b"}]
        assert SEEN[-1]["query"] == {"per_page": "25"}
        env = await e.execute({"operation": "list_items", "params": {"page": 2, "per_page": 50, "fields": ["secret"]}}, ctx())
        assert env["data"] == [{"secret": "s"}, {"secret": "t"}] and SEEN[-1]["query"] == {"page": "2", "per_page": "50"}
        env = await e.execute({"operation": "list_items", "params": {"per_page": 51}}, ctx())
        assert env["error"]["code"] == "VALIDATION_INVALID_VALUE"


@pytest.mark.anyio
async def test_basic_auth_and_form_serialization(api: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ITEMS_USER", "alice")
    monkeypatch.setenv("ITEMS_PASS", "s3cret")
    path = _file(
        tmp_path,
        api,
        {"auth": {"type": "basic", "username_env": "ITEMS_USER", "password_env": "ITEMS_PASS"}},
        {"create": [{"name": "add_item", "maps_to": "POST /items", "params": {"title": {"type": "string"}}}]},
    )
    data = yaml.safe_load(path.read_text())
    data["target"]["serialization"] = "form"
    path.write_text(yaml.safe_dump(data))
    SEEN.clear()
    async with serve_adapter(path) as rt:
        env = await rt.engine.execute({"operation": "add_item", "params": {"title": "a b"}}, ctx())
        assert env["success"], env
    assert SEEN[-1]["headers"]["authorization"] == "Basic " + __import__("base64").b64encode(b"alice:s3cret").decode()
    assert SEEN[-1]["body"] == "title=a+b"


@pytest.mark.anyio
async def test_rate_limiting_document_blocks_apply(api: str, tmp_path: Path) -> None:
    rl = {
        "api_limits": [{"scope": "endpoint", "endpoint": "POST /search", "limit": 2, "window": "minute"}],
        "concurrent_requests": 1,
    }
    ops = {"read": [{"name": "search_items", "maps_to": "POST /search"}, {"name": "list_items", "maps_to": "GET /items"}]}
    path = _file(tmp_path, api, {"rate_limits": rl}, ops)
    async with serve_adapter(path) as rt:
        e = rt.engine
        codes = [(await e.execute({"operation": "search_items"}, ctx())).get("error", {}).get("code") for _ in range(3)]
        assert codes == [None, None, "RATE_LIMIT_EXCEEDED"]
        assert (await e.execute({"operation": "list_items"}, ctx()))["success"]  # other endpoints are not counted
        results = []

        async def one() -> None:
            results.append((await e.execute({"operation": "list_items"}, ctx()))["success"])

        async with anyio.create_task_group() as tg:  # concurrent_requests: 1 serializes, never refuses
            for _ in range(4):
                tg.start_soon(one)
        assert results == [True] * 4


@pytest.mark.anyio
async def test_adapter_info_shows_the_file(api: str, tmp_path: Path) -> None:
    extra = {"author": "me", "tags": ["a"], "trust": {"level": "community", "verified_by": "ops", "verified_at": "2026-01-02"}}
    path = _file(tmp_path, api, extra, {"read": [{"name": "list_items", "maps_to": "GET /items"}]})
    async with serve_adapter(path) as rt:
        env = await rt.engine.execute({"operation": "introspect", "params": {"query": "adapter_info"}}, ctx())
        info = env["data"]
        assert info["metadata"] == {"author": "me", "tags": ["a"]}
        assert info["trust"]["level"] == "community_reviewed" and info["trust"]["declared_level"] == "community"
        assert info["trust"]["verified_by"] == "ops" and info["target"]["transport"] == "http"


# ---- a server that fails to start ---------------------------------------------------------------------


@pytest.mark.parametrize("command", [["introspect"], ["call", "--operation", "list_items"], ["conformance"]])
def test_client_commands_report_the_server_own_last_error_line(command: list[str], tmp_path: Path) -> None:
    bad = tmp_path / "bad_server.py"
    bad.write_text(
        "import sys\nprint('starting', file=sys.stderr)\n"
        "print('fatal: cannot open database /nope/x.db', file=sys.stderr)\nsys.exit(1)\n"
    )
    proc = _run_cli([*command, "--", sys.executable, str(bad)])
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert "error: the server failed to start: fatal: cannot open database /nope/x.db" in proc.stderr
    assert "TaskGroup" not in proc.stderr + proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.parametrize("extra", [[], ["--mode", "single"]], ids=["semantic", "single"])
def test_requires_confirmation_over_the_wire_without_trust(api: str, tmp_path: Path, extra: list[str]) -> None:
    """Through a real stdio server and the CLI client: the marked operation never reaches the API,
    whichever endpoint or batch carries it."""
    path = _file(tmp_path, api, {}, {"execute": [MARKED], "read": [{"name": "list_items", "maps_to": "GET /items"}]})
    server = [sys.executable, "-m", "mcpaql.cli", "serve", *extra, str(path)]
    SEEN.clear()
    attempts = [
        ["-o", "ping"],
        ["-o", "ping", "-p", '{"_confirmation": "conf_forged"}'],
        ["-o", "ping", "--endpoint", "read"] if not extra else ["-o", "ping", "--endpoint", "items_api_mcpaql"],
    ]
    codes = []
    for args in attempts:
        r = _run_cli(["call", "--json", *args, "--", *server])
        assert r.returncode == 1 and "Traceback" not in r.stderr, r.stderr
        env = json.loads(r.stdout)
        assert env["success"] is False
        codes.append(env["error"]["code"])
    assert codes[0] == "CONFIRMATION_REQUIRED" and codes[1] == "TOKEN_INVALID"
    assert codes[2] == ("VALIDATION_ENDPOINT_MISMATCH" if not extra else "CONFIRMATION_REQUIRED")
    assert not any(s["path"] == "/ping" for s in SEEN), SEEN
