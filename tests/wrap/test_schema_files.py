"""Discovery bundles, adapter-schema build and load (REQ-DISC-*, REQ-ADPT-*, REQ-GEN-002; Parts D, E)."""

from __future__ import annotations

import json
import time
from pathlib import Path

import jsonschema
import pytest
import yaml
from wrap_helpers import FIXTURES, fixture_tools, new_ctx

from aql_support import serve_in_thread
from mcpaql.adapters.schema import build_schema, capture, format_report, load_adapter_schema, serve_adapter, write_schema
from mcpaql.adapters.schema.bundle import argv_from_stdio_url, stdio_url
from mcpaql.adapters.upstream.runtime import UpstreamSpec
from mcpaql.mcp.replay import argv_for
from mcpaql.protocol.registry import SchemaError

SPEC = FIXTURES.parents[1] / "spec" / "schemas"
BUNDLE_SCHEMA = json.loads((SPEC / "discovery-bundle.schema.json").read_text())
ADAPTER_SCHEMA = json.loads((SPEC / "adapter-schema.schema.json").read_text())
ALL = sorted(p.name.removesuffix(".tools-list.json") for p in FIXTURES.glob("*.tools-list.json"))
FORMATS = jsonschema.Draft202012Validator.FORMAT_CHECKER


def bundle_errors(bundle: dict) -> list[str]:
    v = jsonschema.Draft202012Validator(BUNDLE_SCHEMA, format_checker=FORMATS)
    return [f"{list(e.absolute_path)}: {e.message}" for e in v.iter_errors(bundle)]


def adapter_errors(schema: dict) -> list[str]:
    v = jsonschema.Draft202012Validator(ADAPTER_SCHEMA, format_checker=FORMATS)
    return [f"{list(e.absolute_path)}: {e.message}" for e in v.iter_errors(schema)]


@pytest.mark.parametrize("fixture", ALL)
def test_fixture_bundle_is_spec_shaped(fixture: str) -> None:
    bundle = capture(FIXTURES / f"{fixture}.tools-list.json")
    errors = bundle_errors(bundle)
    # The contract only enumerates streamable_http; stdio/unknown captures say what they were.
    assert all("source', 'transport" in e or "['source', 'transport']" in e for e in errors), errors
    assert bundle["raw_capture"]["tools"] == fixture_tools(fixture)  # REQ-DISC-003: exact entries
    ops = bundle["normalized_bundle"]["operations"]
    assert [o["source_tool_name"] for o in ops] == [t["name"] for t in fixture_tools(fixture)]
    for o in ops:
        assert o["maps_to"] == f"MCP tools/call {o['source_tool_name']}"
        assert set(o["provenance"]["inference_sources"]) == {
            "operation_name",
            "description",
            "endpoint",
            "danger_level",
            "maps_to",
        }
        for p in o["params"]:
            assert p["source_path"] == f"inputSchema.properties.{p['original_name']}"
    reviewed = {w["tool"] for w in bundle["normalized_bundle"]["warnings"] if w["code"] == "ENDPOINT_AMBIGUOUS"}
    assert reviewed == {o["source_tool_name"] for o in ops if o["needs_review"]}


@pytest.mark.parametrize("fixture", ALL)
def test_built_adapter_schema_validates(fixture: str, tmp_path: Path) -> None:
    bundle = capture(FIXTURES / f"{fixture}.tools-list.json")
    schema, report = build_schema(bundle)
    assert adapter_errors(schema) == []
    assert sum(report["by_category"].values()) == len(fixture_tools(fixture))
    assert len(report["operations"]) == len(fixture_tools(fixture))
    assert all(report["why"][e["tool"]] for e in report["operations"])
    md = format_report(report)
    assert "Needs review" in md
    for suffix in (".json", ".md", ".yaml"):
        path = tmp_path / f"{schema['name']}-adapter{suffix}"
        write_schema(schema, path)
        assert load_adapter_schema(path).data == schema


def test_http_capture_source_validates_and_redacts() -> None:
    from mcpaql.adapters.schema.bundle import make_bundle, source_for

    spec = UpstreamSpec.from_url(
        "https://api.example.com/mcp", name="gh", headers={"Authorization": "Bearer ${GITHUB_TOKEN}", "X-Trace": "secret"}
    )
    bundle = make_bundle(fixture_tools("github-mcp-default"), source_for(spec, name="gh", server={"name": "github"}))
    assert bundle_errors(bundle) == []
    assert bundle["source"]["auth"] == {
        "type": "bearer",
        "header": "Authorization",
        "prefix": "Bearer ",
        "token_env": "GITHUB_TOKEN",
    }
    assert "secret" not in json.dumps(bundle["source"]) and "${GITHUB_TOKEN}" not in json.dumps(bundle["source"])
    schema, _ = build_schema(bundle)
    assert adapter_errors(schema) == []
    assert schema["target"] == {
        "base_url": "https://api.example.com/mcp",
        "transport": "http",
        "protocol": "custom",
        "serialization": "json",
    }
    assert schema["auth"]["token_env"] == "GITHUB_TOKEN"


def test_overrides_and_report(tmp_path: Path) -> None:
    bundle = capture(FIXTURES / "github-mcp-all.tools-list.json", name="github")
    ov = tmp_path / "overrides.yaml"
    ov.write_text(
        yaml.safe_dump(
            {
                "adapter": {"name": "github", "version": "1.0.0"},
                "exclude": ["*copilot*"],
                "operations": {
                    "merge_pull_request": {"category": "EXECUTE", "danger_level": "destructive"},
                    "issue_write": {"name": "write_issue"},
                    "label_write": {"category": "UPDATE"},
                },
            }
        )
    )
    schema, report = build_schema(bundle, ov)
    assert adapter_errors(schema) == []
    names = {op["name"]: g for g, ops in schema["operations"].items() for op in ops}
    assert names["merge_pull_request"] == "execute" and "write_issue" in names
    assert not any("copilot" in n for n in names)
    assert "assign_copilot_to_issue" in report["excluded"]
    assert "label_write" not in {a["tool"] for a in report["ambiguities"]}  # reviewed by the override
    assert "projects_write" in {a["tool"] for a in report["ambiguities"]}


def test_load_rejects_bad_files_with_field_paths(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_text(
        json.dumps(
            {
                "name": "x1",
                "type": "adapter",
                "version": "1",
                "description": "d" * 20,
                "target": {"base_url": "https://a", "transport": "http", "protocol": "rest", "serialization": "json"},
                "operations": {},
            }
        )
    )
    with pytest.raises(SchemaError) as e:
        load_adapter_schema(bad)
    assert e.value.code == "SCHEMA_INVALID_TYPE" and "version" in e.value.message
    data = json.loads(bad.read_text())
    data["version"] = "1.0.0"
    data["operations"] = {"read": [{"name": "get_x", "maps_to": "GET /x/{id}"}]}
    bad.write_text(json.dumps(data))
    with pytest.raises(SchemaError) as e:
        load_adapter_schema(bad)
    assert e.value.code == "SCHEMA_UNRESOLVED_REF"


def test_stdio_url_round_trip() -> None:
    argv = ["npx", "-y", "@modelcontextprotocol/server-memory", "a b"]
    assert argv_from_stdio_url(stdio_url(argv)) == argv


@pytest.mark.anyio
async def test_live_capture_build_serve_round_trip(tmp_path: Path) -> None:
    spec = UpstreamSpec.from_argv(argv_for(FIXTURES / "server-filesystem.tools-list.json"), name="fs")
    from mcpaql.adapters.schema import capture_live

    bundle = await capture_live(spec)
    assert bundle["source"]["transport"] == "stdio" and bundle["source"]["server"]["name"] == "mcpaql-replay"
    schema, _ = build_schema(bundle, {"operations": {"move_file": {"name": "rename_path"}}})
    path = tmp_path / "fs-adapter.md"
    write_schema(schema, path)
    async with serve_adapter(path) as rt:
        ops = {op.name: op for op in rt.engine.registry.operations}
        assert ops["rename_path"].origin == "move_file"
        # full nested shapes come from the live tools/list
        assert ops["edit_file"].params[1].schema["items"]["properties"]
        env = await rt.engine.execute(
            {"operation": "directory_tree", "params": {"path": "/p", "exclude_patterns": ["x"]}}, new_ctx()
        )
        assert json.loads(env["data"]) == {"tool": "directory_tree", "arguments": {"path": "/p", "excludePatterns": ["x"]}}


@pytest.fixture
def rest_api():
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    items = {"1": {"id": "1", "title": "first"}}

    async def get_item(request):
        item = items.get(request.path_params["item_id"])
        return JSONResponse(item) if item else JSONResponse({"message": "Not Found"}, status_code=404)

    async def list_items(request):
        limit = int(request.query_params.get("limit", 10))
        return JSONResponse(list(items.values())[:limit])

    async def create_item(request):
        body = await request.json()
        if body["id"] in items:
            return JSONResponse({"message": "exists"}, status_code=409)
        items[body["id"]] = body
        return JSONResponse(body, status_code=201)

    async def delete_item(request):
        items.pop(request.path_params["item_id"], None)
        return Response(status_code=204)

    async def limited(request):  # how APIs say "slow down": 429 + Retry-After, or GitHub's 403 + X-RateLimit-*
        if request.query_params.get("style") == "github":
            return JSONResponse(
                {"message": "API rate limit exceeded"},
                status_code=403,
                headers={"x-ratelimit-remaining": "0", "x-ratelimit-reset": str(int(time.time()) + 30)},
            )
        return JSONResponse({"message": "slow down"}, status_code=429, headers={"retry-after": "7"})

    app = Starlette(
        routes=[
            Route("/limited", limited, methods=["GET"]),
            Route("/items/{item_id}", get_item, methods=["GET"]),
            Route("/items/{item_id}", delete_item, methods=["DELETE"]),
            Route("/items", list_items, methods=["GET"]),
            Route("/items", create_item, methods=["POST"]),
        ]
    )
    with serve_in_thread(app) as url:
        yield url


@pytest.mark.anyio
async def test_rest_adapter_schema_runs(rest_api: str, tmp_path: Path) -> None:
    schema = {
        "name": "items-api",
        "type": "adapter",
        "version": "1.0.0",
        "description": "A tiny items API for tests",
        "target": {"base_url": rest_api, "transport": "http", "protocol": "rest", "serialization": "json"},
        "operations": {
            "read": [
                {
                    "name": "get_item",
                    "maps_to": "GET /items/{item_id}",
                    "danger_level": "safe",
                    "params": {"item_id": {"type": "string", "required": True}},
                },
                {
                    "name": "list_items",
                    "maps_to": "GET /items",
                    "params": {"limit": {"type": "integer", "minimum": 1, "maximum": 100}},
                },
            ],
            "execute": [
                {
                    "name": "limited_call",
                    "maps_to": "GET /limited",
                    "danger_level": "safe",
                    "params": {"style": {"type": "string"}},
                }
            ],
            "create": [
                {
                    "name": "create_item",
                    "maps_to": "POST /items",
                    "params": {"id": {"type": "string", "required": True}, "title": {"type": "string"}},
                }
            ],
            "delete": [
                {
                    "name": "delete_item",
                    "maps_to": "DELETE /items/{item_id}",
                    "danger_level": "destructive",
                    "params": {"item_id": {"type": "string", "required": True}},
                }
            ],
        },
    }
    assert adapter_errors(schema) == []
    path = tmp_path / "items-api-adapter.json"
    write_schema(schema, path)
    async with serve_adapter(path) as rt:
        e = rt.engine
        assert (await e.execute({"operation": "get_item", "params": {"item_id": "1"}}, new_ctx()))["data"]["title"] == "first"
        env = await e.execute({"operation": "create_item", "params": {"id": "2", "title": "second"}}, new_ctx())
        assert env["success"], env
        env = await e.execute({"operation": "create_item", "params": {"id": "2"}}, new_ctx())
        assert env["error"]["code"] == "CONFLICT_ALREADY_EXISTS"
        assert len((await e.execute({"operation": "list_items", "params": {"limit": 5}}, new_ctx()))["data"]) == 2
        # a DELETE is destructive: served from a file it needs a confirmation token, --trust or not
        ctx = new_ctx()
        env = await e.execute({"operation": "delete_item", "params": {"item_id": "2"}}, ctx)
        assert env["error"]["code"] == "CONFIRMATION_REQUIRED", env
        token = env["error"]["details"]["confirmation_token"]
        env = await e.execute({"operation": "delete_item", "params": {"item_id": "2", "_confirmation": token}}, ctx)
        assert env["success"], env
        env = await e.execute({"operation": "get_item", "params": {"item_id": "2"}}, new_ctx())
        assert env["error"]["code"] == "NOT_FOUND_RESOURCE"
        env = await e.execute({"operation": "list_items", "params": {"limit": 0}}, new_ctx())
        assert env["error"]["code"] == "VALIDATION_INVALID_VALUE"
        # A placeholder fills one segment: dot segments never move a call to another route.
        for value in ("..", "%2e%2e", "../limited", "．．"):
            env = await e.execute({"operation": "delete_item", "params": {"item_id": value}}, ctx)
            token = env["error"]["details"]["confirmation_token"]
            env = await e.execute({"operation": "delete_item", "params": {"item_id": value, "_confirmation": token}}, ctx)
            assert env["error"]["code"] == "VALIDATION_INVALID_VALUE", (value, env)
        # REQ-RATE-008: the target API's own limits reach the model with how long to wait
        env = await e.execute({"operation": "limited_call"}, new_ctx())
        assert env["error"]["code"] == "RATE_LIMIT_EXCEEDED" and env["error"]["details"]["retry_after_seconds"] == 7
        env = await e.execute({"operation": "limited_call", "params": {"style": "github"}}, new_ctx())
        assert env["error"]["code"] == "RATE_LIMIT_EXCEEDED"
        assert 25 <= env["error"]["details"]["retry_after_seconds"] <= 31


def test_retry_after_header_forms_REQ_RATE_008() -> None:
    from mcpaql.adapters.http import retry_after_seconds

    now = 1_800_000_000.0
    assert retry_after_seconds({"retry-after": "120"}, now) == 120
    assert retry_after_seconds({"retry-after": "Fri, 15 Jan 2027 08:00:10 GMT"}, 1_800_000_000.0) == 10  # HTTP date
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now) == 0  # in the past
    assert retry_after_seconds({"x-ratelimit-reset": str(int(now) + 42)}, now) == 42  # epoch seconds (GitHub)
    assert retry_after_seconds({"ratelimit-reset": "15"}, now) == 15  # delta seconds (IETF draft)
    assert retry_after_seconds({"retry-after": "soon"}, now) is None
    assert retry_after_seconds({}, now) is None


def test_runtime_warns_about_embedded_credentials_and_plain_http() -> None:
    from mcpaql.adapters.schema.load import schema_warnings

    data = {"auth": {"type": "bearer", "token": "ghp_secret", "token_env": "GH"}, "target": {"base_url": "http://api.x.com"}}
    ws = schema_warnings(data)
    assert any("auth.token" in w for w in ws) and any("plain HTTP" in w for w in ws)
    assert schema_warnings({"auth": {"type": "bearer", "token_env": "GH"}, "target": {"base_url": "http://127.0.0.1:8000"}}) == []


def test_REQ_ADPT_006_description_length_is_warned_about() -> None:
    from mcpaql.adapters.schema.load import schema_warnings

    local = {"base_url": "http://127.0.0.1:8000"}
    assert any("10-200 characters" in w for w in schema_warnings({"description": "API", "target": local}))
    assert any("201 characters" in w for w in schema_warnings({"description": "x" * 201, "target": local}))
    assert schema_warnings({"description": "Tasks API: list, create and close tasks", "target": local}) == []
