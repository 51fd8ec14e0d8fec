"""OpenAPI documents at scale and at the edge (mcpaql.adapters.openapi + mcpaql.protocol.schema):
GitHub's real REST description (npm ``@octokit/openapi``, ~1,200 operations, 969 components)
starts, lists every mode and introspects through the library and through the real CLI over
stdio; ``$ref`` fan-out is shared, a schema nested thousands deep skips its one operation, a
document nested past what can be parsed is refused in one line; ``returns`` comes from the 2xx
JSON response. No timings are asserted here: ``bench/bench_openapi_scale.py`` measures them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpaql.adapters.openapi import OpenAPIError, OpenAPIRuntime, load_document
from mcpaql.config import Config
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.schema import MAX_DEPTH

REPO = Path(__file__).resolve().parents[2]
GITHUB = REPO / ".cache-upstreams" / "node_modules" / "@octokit" / "openapi" / "generated" / "api.github.com.json"
MCPAQL = str(Path(sys.executable).with_name("mcpaql"))
MODES = ("semantic", "single", "all")


def run_cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [MCPAQL, *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=REPO,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


@pytest.fixture(scope="module")
def github() -> Any:
    if not GITHUB.exists():
        message = "@octokit/openapi is not installed: run tests/wrap/install_upstreams.sh"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)
    return load_document(str(GITHUB))


def _op_for(rt: OpenAPIRuntime, reg: Any, method: str, path: str) -> str:
    """The exposed operation name for an HTTP route (routes are keyed by operationId, the origin)."""
    origin = next(n for n, r in rt.api.routes.items() if (r.method, r.path) == (method, path))
    return next(op.name for op in reg.operations if op.origin == origin)


def test_github_rest_description_starts_lists_and_introspects(github: Any) -> None:
    assert len(github.tools) > 1100
    assert not [s for s in github.skipped if "nested" in s or "type '" in s]  # only unsupported media types
    # a tool carries the components its arguments reach, by reference: never all 969 of them
    sizes = [len((t["inputSchema"].get("components") or {}).get("schemas") or {}) for t in github.tools]
    assert max(sizes) < 100
    rt = OpenAPIRuntime(github, base_url="http://127.0.0.1:9")
    reg = rt.registry()
    assert len(reg.operations) == len(github.tools)
    for mode in MODES:
        eng = Engine(reg, Config().with_(mode=mode))
        assert eng.tools, mode
    eng = Engine(reg, Config().with_(mode="semantic"))

    def run(query: str, name: str, session: str) -> dict[str, Any]:
        out = eng.introspector.run(query, name, session)
        return out["operation" if query == "operations" else "type"]

    pages = run("operations", _op_for(rt, reg, "PUT", "/repos/{owner}/{repo}/pages"), "s")
    source = next(p for p in pages["parameters"] if p["name"] == "source")
    enum_name, object_name = (
        "ReposUpdateInformationAboutPagesSiteInputSourceEnum",
        "ReposUpdateInformationAboutPagesSiteInputSourceObject",
    )
    assert source["type"] == f"string | {object_name}"
    assert run("types", object_name, "s")["kind"] == "object"
    assert run("types", enum_name, "s")["values"] == ["gh-pages", "master", "master /docs"]

    repo = run("operations", _op_for(rt, reg, "GET", "/repos/{owner}/{repo}"), "s")
    assert repo["returns"]["name"] == "FullRepository"  # the 200 response's schema
    full = run("types", "FullRepository", "s")
    assert {"owner", "license", "permissions"} <= {f["name"] for f in full["fields"]}
    issues = run("operations", _op_for(rt, reg, "GET", "/repos/{owner}/{repo}/issues"), "s")
    assert issues["returns"]["name"] == "Issue[]"
    create = run("operations", _op_for(rt, reg, "POST", "/repos/{owner}/{repo}/issues"), "s")
    assert {"title", "body", "labels"} <= {p["name"] for p in create["parameters"]}
    # every named type is listed once, under one name
    names = [t.name for t in reg.types]
    assert len(names) == len(set(names)) and "FullRepository" in names


def test_github_rest_description_through_the_cli(github: Any) -> None:
    tokens = run_cli("tokens", "--openapi", str(GITHUB), "--json")
    assert tokens.returncode == 0, tokens.stderr[-2000:]
    rep = json.loads(tokens.stdout)
    assert rep["tools"] == len(github.tools)
    assert rep["discrete"]["tokens"] > 300_000  # counted in chunks: no "Input too long to encode"
    assert all(0 < m["tokens"] < rep["discrete"]["tokens"] for m in rep["wrapped"].values())

    name = "repos_update_information_about_pages_site"
    shown = run_cli("introspect", "--name", name, "--", MCPAQL, "openapi", str(GITHUB), "--base-url", "http://127.0.0.1:9")
    assert shown.returncode == 0, shown.stderr[-2000:]
    detail = json.loads(shown.stdout)["data"]["operation"]
    assert detail["name"] == name and detail["semantic_category"] == "UPDATE"


# ---- $ref expansion is bounded ---------------------------------------------------------------


def _doc(schemas: dict[str, Any], body_ref: str) -> dict[str, Any]:
    return {
        "openapi": "3.0.3",
        "info": {"title": "edge", "version": "1.0.0"},
        "servers": [{"url": "http://127.0.0.1:9"}],
        "components": {"schemas": schemas},
        "paths": {
            "/things": {
                "post": {
                    "operationId": "createThing",
                    "requestBody": {"content": {"application/json": {"schema": {"$ref": body_ref}}}},
                }
            },
            "/ok": {"get": {"operationId": "getOk", "parameters": [{"name": "q", "in": "query", "schema": {"type": "string"}}]}},
        },
    }


def fan_out_document() -> dict[str, Any]:
    """Each level refers to the next three times, 12 levels: 3**12 paths through ~2.4 KB."""
    schemas = {
        f"L{i}": {"type": "object", "properties": {k: {"$ref": f"#/components/schemas/L{i + 1}"} for k in ("a", "b", "c")}}
        for i in range(12)
    }
    schemas["L12"] = {"type": "string"}
    return _doc(schemas, "#/components/schemas/L0")


def test_ref_fan_out_starts_at_the_cost_of_its_distinct_shapes(tmp_path: Path) -> None:
    doc = fan_out_document()
    assert len(json.dumps(doc)) < 3000
    api = load_document(doc)
    assert api.schemas.nodes < 200 and not api.skipped
    reg = OpenAPIRuntime(api).registry()
    eng = Engine(reg, Config().with_(mode="semantic"))
    detail = eng.introspector.run("operations", "create_thing", "s")["operation"]
    assert [p["type"] for p in detail["parameters"]] == ["L1", "L1", "L1"]
    path = tmp_path / "fan.json"
    path.write_text(json.dumps(doc))
    shown = run_cli("tokens", "--openapi", str(path), "--json", timeout=120)
    assert shown.returncode == 0 and json.loads(shown.stdout)["tools"] == 2


def deep_document_text(depth: int) -> str:
    """The document as JSON text (too deep for ``json.dumps``), one schema nested ``depth`` levels."""
    deep = '{"type": "object", "properties": {"n": ' * depth + '{"type": "string"}' + "}}" * depth
    return json.dumps(_doc({"Deep": {"type": "string"}}, "#/components/schemas/Deep")).replace(
        '"Deep": {"type": "string"}', f'"Deep": {deep}'
    )


def test_a_schema_nested_3000_deep_skips_its_operation_only(tmp_path: Path) -> None:
    path = tmp_path / "deep.json"
    path.write_text(deep_document_text(3000))
    api = load_document(str(path))
    assert [t["name"] for t in api.tools] == ["getOk"]
    assert api.skipped == [f"POST /things: schema nested more than {MAX_DEPTH} levels deep"]
    shown = run_cli("tokens", "--openapi", str(path), "--json", timeout=120)
    assert shown.returncode == 0 and json.loads(shown.stdout)["tools"] == 1
    assert "Traceback" not in shown.stderr and "RecursionError" not in shown.stderr
    assert f"OpenAPI POST /things skipped: schema nested more than {MAX_DEPTH} levels deep" in shown.stderr


def test_a_document_nested_past_parsing_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "abyss.json"
    path.write_text('{"openapi": "3.0.0", "x": ' + "[" * 20000 + "]" * 20000 + "}")
    with pytest.raises(OpenAPIError, match="nests more than 6000 levels deep"):
        load_document(str(path))
    shown = run_cli("tokens", "--openapi", str(path), timeout=120)
    assert shown.returncode != 0
    assert shown.stderr.strip().splitlines() == ["error: the OpenAPI document nests more than 6000 levels deep"]


# ---- returns ---------------------------------------------------------------------------------

PETS = {
    "openapi": "3.1.0",
    "info": {"title": "pets", "version": "1.0.0"},
    "servers": [{"url": "http://127.0.0.1:9"}],
    "components": {
        "schemas": {
            "Pet": {
                "type": "object",
                "description": "A pet",
                "properties": {"id": {"type": "integer"}, "species": {"type": "string", "enum": ["cat", "dog"]}},
            }
        },
        "responses": {
            "PetList": {
                "description": "pets",
                "content": {"application/json": {"schema": {"type": "array", "items": {"$ref": "#/components/schemas/Pet"}}}},
            }
        },
    },
    "paths": {
        "/pets": {
            "get": {"operationId": "listPets", "responses": {"200": {"$ref": "#/components/responses/PetList"}}},
            "post": {
                "operationId": "createPet",
                "responses": {
                    "201": {
                        "description": "made",
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Pet"}}},
                    },
                    "400": {"description": "bad", "content": {"application/json": {"schema": {"type": "object"}}}},
                },
            },
        },
        "/pets/count": {
            "get": {
                "operationId": "countPets",
                "responses": {"2XX": {"description": "n", "content": {"application/json": {"schema": {"type": "integer"}}}}},
            }
        },
        "/pets/{id}": {
            "delete": {
                "operationId": "deletePet",
                "parameters": [{"name": "id", "in": "path", "required": True, "schema": {"type": "integer"}}],
                "responses": {"204": {"description": "gone"}},
            }
        },
    },
}


def test_returns_come_from_the_success_response_schema() -> None:
    reg = OpenAPIRuntime(load_document(PETS)).registry()
    returns = {op.name: op.returns.info() for op in reg.operations}
    assert returns["create_pet"] == {"name": "Pet", "kind": "object", "description": "A pet"}
    assert returns["list_pets"] == {"name": "Pet[]", "kind": "object", "description": "Array of Pet"}
    assert returns["count_pets"] == {"name": "Integer", "kind": "scalar"}
    assert returns["delete_pet"] == {"name": "ToolResult", "kind": "object"}  # no body: the generic result
    assert {t.name for t in reg.types} >= {"Pet", "PetSpecies"}
