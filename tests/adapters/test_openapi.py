"""OpenAPI 3.x documents served through MCP-AQL (mcpaql.adapters.openapi) against a real HTTP API
(Starlette under uvicorn): derivation of operations, classification, parameters and nested types;
calls with path/query/header/body arguments; error mapping; the CLI over stdio with the official client."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
import yaml
from mcp import Client, StdioServerParameters

from aql_support import serve_in_thread
from mcpaql.adapters.openapi import OpenAPIError, load_document, looks_like_openapi, serve_openapi
from mcpaql.config import Config
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session

PET = {
    "type": "object",
    "required": ["name", "species"],
    "properties": {
        "id": {"type": "integer", "readOnly": True},
        "name": {"type": "string", "minLength": 1, "description": "The pet's name"},
        "species": {"type": "string", "enum": ["cat", "dog", "fish"]},
        "owner": {"$ref": "#/components/schemas/Owner"},
        "nickname": {"type": "string", "nullable": True},
    },
}
DOC: dict[str, Any] = {
    "openapi": "3.0.3",
    "info": {"title": "Pet Store", "version": "1.2.0", "description": "Pets and their adoptions"},
    "servers": [{"url": "http://127.0.0.1:{port}/v1", "variables": {"port": {"default": "1"}}}],
    "components": {
        "schemas": {
            "Pet": PET,
            "Owner": {"type": "object", "properties": {"name": {"type": "string"}, "email": {"type": "string"}}},
        },
        "parameters": {
            "PetId": {"name": "petId", "in": "path", "required": True, "schema": {"type": "integer"}, "description": "Pet id"}
        },
    },
    "paths": {
        "/pets": {
            "get": {
                "operationId": "listPets",
                "summary": "List pets",
                "parameters": [
                    {"name": "species", "in": "query", "schema": {"type": "string", "enum": ["cat", "dog", "fish"]}},
                    {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 50}},
                    {"name": "X-Request-Id", "in": "header", "schema": {"type": "string"}},
                ],
            },
            "post": {
                "operationId": "createPet",
                "summary": "Add a pet",
                "requestBody": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}}},
            },
        },
        "/pets/{petId}": {
            "parameters": [{"$ref": "#/components/parameters/PetId"}],
            "get": {"operationId": "getPet", "summary": "Get one pet"},
            "patch": {
                "operationId": "updatePet",
                "summary": "Rename a pet",
                "requestBody": {
                    "required": True,
                    "content": {"application/json": {"schema": {"type": "object", "properties": {"name": {"type": "string"}}}}},
                },
            },
            "delete": {"operationId": "deletePet", "summary": "Remove a pet"},
        },
        "/pets/{petId}/adoptions": {
            "parameters": [{"$ref": "#/components/parameters/PetId"}],
            "post": {"operationId": "sendAdoptionPapers", "summary": "Email the adoption papers to the owner"},
        },
        "/limited": {"get": {"operationId": "getQuota", "summary": "Always rate limited"}},
        "/upload": {"put": {"operationId": "uploadPhoto", "requestBody": {"content": {"image/png": {}}}}},
    },
}


@pytest.fixture(scope="module")
def pet_api():
    from starlette.applications import Starlette
    from starlette.responses import JSONResponse, Response
    from starlette.routing import Route

    pets: dict[int, dict[str, Any]] = {1: {"id": 1, "name": "Tom", "species": "cat", "nickname": None}}
    seen: dict[str, Any] = {}

    async def list_pets(request):
        seen["request_id"] = request.headers.get("x-request-id")
        seen["auth"] = request.headers.get("authorization")
        out = [p for p in pets.values() if request.query_params.get("species") in (None, p["species"])]
        return JSONResponse(out[: int(request.query_params.get("limit", 50))])

    async def create_pet(request):
        body = await request.json()
        if not body.get("name"):
            return JSONResponse({"message": "name is required"}, status_code=422)
        pid = max(pets) + 1
        pets[pid] = {"id": pid, **body}
        return JSONResponse(pets[pid], status_code=201)

    async def pet(request):
        pid = int(request.path_params["pet_id"])
        if pid not in pets:
            return JSONResponse({"message": "Pet not found"}, status_code=404)
        if request.method == "PATCH":
            pets[pid].update(await request.json())
        if request.method == "DELETE":
            del pets[pid]
            return Response(status_code=204)
        return JSONResponse(pets[pid])

    async def adopt(request):
        return Response(f"papers sent for pet {request.path_params['pet_id']}", media_type="text/plain")

    async def limited(request):
        return JSONResponse({"message": "slow down"}, status_code=429, headers={"retry-after": "9"})

    app = Starlette(
        routes=[
            Route("/v1/pets", list_pets, methods=["GET"]),
            Route("/v1/pets", create_pet, methods=["POST"]),
            Route("/v1/pets/{pet_id}", pet, methods=["GET", "PATCH", "DELETE"]),
            Route("/v1/pets/{pet_id}/adoptions", adopt, methods=["POST"]),
            Route("/v1/limited", limited, methods=["GET"]),
        ]
    )
    with serve_in_thread(app) as url:
        yield url, seen


def doc_for(url: str) -> dict[str, Any]:
    port = url.rsplit(":", 1)[1]
    return {**DOC, "servers": [{**DOC["servers"][0], "variables": {"port": {"default": port}}}]}


def ctx() -> Context:
    return Context(session=Session())


def test_operations_are_derived_and_classified() -> None:
    api = load_document(DOC)
    assert [t["name"] for t in api.tools] == [
        "listPets",
        "createPet",
        "getPet",
        "updatePet",
        "deletePet",
        "sendAdoptionPapers",
        "getQuota",
    ]
    assert any("uploadPhoto" in s or "/upload" in s for s in api.skipped)  # a PNG body cannot be sent as JSON
    assert api.base_url() == "http://127.0.0.1:1/v1"  # server variables take their defaults
    assert api.base_url("https://api.example.com/v2/") == "https://api.example.com/v2"


@pytest.mark.anyio
async def test_registry_parameters_types_and_categories(pet_api) -> None:
    url, _ = pet_api
    async with serve_openapi(doc_for(url), config=Config.load(env={})) as rt:
        reg = rt.engine.registry
        cats = {op.name: op.category.value for op in reg.operations if op.name != "introspect"}
        assert cats == {
            "list_pets": "READ",
            "create_pet": "CREATE",
            "get_pet": "READ",
            "update_pet": "UPDATE",
            "delete_pet": "DELETE",
            "send_adoption_papers": "EXECUTE",
            "get_quota": "READ",
        }
        assert reg.display_name == "Pet Store" and reg.version == "1.2.0" and rt.name == "pet-store"
        create = {p.name: p for p in reg.get("create_pet").params}
        assert create["name"].required and create["species"].required and not create["nickname"].required
        assert create["species"].schema["enum"] == ["cat", "dog", "fish"]
        assert create["nickname"].schema["type"] == ["string", "null"]  # OpenAPI 3.0 nullable
        get = {p.name: p for p in reg.get("get_pet").params}
        assert get["pet_id"].required and get["pet_id"].map_to == "petId" and get["pet_id"].schema["description"] == "Pet id"
        listing = {p.name: p for p in reg.get("list_pets").params}
        assert listing["x_request_id"].map_to == "X-Request-Id" and "fields" in listing  # READ ops project JSON
        detail = await rt.engine.execute(
            {"operation": "introspect", "params": {"query": "operations", "name": "create_pet"}}, ctx()
        )
        owner = next(p for p in detail["data"]["operation"]["parameters"] if p["name"] == "owner")
        types = await rt.engine.execute({"operation": "introspect", "params": {"query": "types", "name": owner["type"]}}, ctx())
        assert {f["name"] for f in types["data"]["type"]["fields"]} == {"name", "email"}  # nested $ref kept, named


@pytest.mark.anyio
async def test_calls_reach_the_api_with_every_kind_of_argument(pet_api, monkeypatch: pytest.MonkeyPatch) -> None:
    url, seen = pet_api
    async with serve_openapi(doc_for(url), headers={"Authorization": "Bearer ${PETS_TOKEN}"}) as rt:
        env = await rt.engine.execute({"operation": "list_pets"}, ctx())
        assert env["success"] and seen["auth"] is None  # unset variable: the header is not sent at all
    monkeypatch.setenv("PETS_TOKEN", "s3cret")
    async with serve_openapi(doc_for(url), headers={"Authorization": "Bearer ${PETS_TOKEN}"}) as rt:
        e = rt.engine
        env = await e.execute({"operation": "list_pets", "params": {"species": "cat", "limit": 5, "x_request_id": "r-1"}}, ctx())
        assert env["success"] and env["data"][0]["name"] == "Tom", env
        assert seen["request_id"] == "r-1" and seen["auth"] == "Bearer s3cret"
        env = await e.execute(
            {"operation": "create_pet", "params": {"name": "Rex", "species": "dog", "owner": {"name": "Ada"}}}, ctx()
        )
        assert env["success"], env
        pid = env["data"]["id"]
        assert env["data"]["owner"] == {"name": "Ada"}
        env = await e.execute({"operation": "update_pet", "params": {"pet_id": pid, "name": "Rexy"}}, ctx())
        assert env["data"]["name"] == "Rexy"
        env = await e.execute({"operation": "list_pets", "params": {"fields": ["name"]}}, ctx())
        assert env["data"] == [{"name": "Tom"}, {"name": "Rexy"}]
        env = await e.execute({"operation": "send_adoption_papers", "params": {"pet_id": pid}}, ctx())
        assert env["data"] == f"papers sent for pet {pid}"  # text responses stay text
        assert (await e.execute({"operation": "delete_pet", "params": {"pet_id": pid}}, ctx()))["success"]
        env = await e.execute({"operation": "get_pet", "params": {"pet_id": pid}}, ctx())
        assert env["error"]["code"] == "NOT_FOUND_RESOURCE"
        env = await e.execute({"operation": "get_quota"}, ctx())
        assert env["error"]["code"] == "RATE_LIMIT_EXCEEDED" and env["error"]["details"]["retry_after_seconds"] == 9
        # validated before any request is made
        env = await e.execute({"operation": "create_pet", "params": {"species": "dog"}}, ctx())
        assert env["error"]["code"] == "VALIDATION_MISSING_PARAM"
        env = await e.execute({"operation": "list_pets", "params": {"species": "bird"}}, ctx())
        assert env["error"]["code"] == "VALIDATION_INVALID_VALUE"


@pytest.mark.anyio
async def test_read_only_and_globs(pet_api) -> None:
    url, _ = pet_api
    async with serve_openapi(doc_for(url), read_only=True, exclude=["get_quota"]) as rt:
        assert {op.name for op in rt.engine.registry.operations} == {"list_pets", "get_pet", "introspect"}


def test_documents_that_cannot_be_served_say_why(tmp_path: Path) -> None:
    cases = [
        ({"swagger": "2.0", "paths": {}}, "Swagger 2.0 is not supported"),
        ({"info": {}}, "not an OpenAPI 3.x document"),
        ({"openapi": "3.1.0", "paths": {}}, "has no paths"),
        ({**DOC, "servers": [{"url": "/v1"}]}, None),
    ]
    for doc, message in cases[:3]:
        with pytest.raises(OpenAPIError, match=message):
            load_document(doc)
    api = load_document(cases[3][0])
    with pytest.raises(OpenAPIError, match="relative: pass --base-url"):
        api.base_url()
    bad = tmp_path / "api.yaml"
    bad.write_text("openapi: [unclosed")
    with pytest.raises(OpenAPIError, match="not valid JSON/YAML"):
        load_document(bad)
    with pytest.raises(OpenAPIError, match="cannot read"):
        load_document(tmp_path / "missing.yaml")
    ext = {**DOC, "paths": {"/x": {"get": {"operationId": "getX", "parameters": [{"$ref": "other.yaml#/p"}]}}}}
    with pytest.raises(OpenAPIError, match="no operation mcpaql can call"):
        load_document(ext)  # the only operation used an external $ref, so it was skipped


@pytest.mark.anyio
async def test_cli_serves_a_document_over_stdio(pet_api, tmp_path: Path) -> None:
    url, _ = pet_api
    path = tmp_path / "petstore.yaml"
    path.write_text(yaml.safe_dump(doc_for(url)))
    assert looks_like_openapi(path)
    for argv in (
        [sys.executable, "-m", "mcpaql.cli", "openapi", str(path), "--read-only"],
        [sys.executable, "-m", "mcpaql.cli", "serve", str(path)],
    ):  # serve detects OpenAPI files
        async with Client(StdioServerParameters(command=argv[0], args=argv[1:]), mode="legacy", cache=None) as c:
            tools = {t.name for t in (await c.list_tools()).tools}
            assert "pet_store_mcpaql_read" in tools
            r = await c.call_tool("pet_store_mcpaql_read", {"operation": "get_pet", "params": {"pet_id": 1}})
            assert json.loads(r.content[0].text)["data"]["name"] == "Tom"
            if "openapi" in argv:
                assert tools == {"pet_store_mcpaql_read"}
    bad = await anyio.run_process([sys.executable, "-m", "mcpaql.cli", "openapi", str(tmp_path / "nope.yaml")], check=False)
    assert bad.returncode == 2 and b"cannot read the OpenAPI document" in bad.stderr and b"Traceback" not in bad.stderr


def test_token_report_for_a_document(tmp_path: Path) -> None:
    import subprocess

    path = tmp_path / "petstore.json"
    path.write_text(json.dumps(DOC))
    r = subprocess.run(
        [sys.executable, "-m", "mcpaql.cli", "tokens", "--openapi", str(path), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert r.returncode == 0, r.stderr
    rep = json.loads(r.stdout)
    assert rep["tools"] == 7 and rep["adapter"] == "pet-store"
    assert rep["wrapped"]["single"]["tokens"] < rep["discrete"]["tokens"]
    assert {p["operation"] for p in rep["per_operation"]} >= {"list_pets", "create_pet", "send_adoption_papers"}
