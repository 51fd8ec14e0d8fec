"""Discovery bundles checked on the way in (adapters/schema/bundle_shape.py, ``mcpaql schema build``):
bad bundles are refused with one line per problem and its field path (exit 2, never a traceback), and
what ``schema build`` writes, ``mcpaql serve`` serves — for every captured surface in the fixtures."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mcpaql.adapters.schema import capture_fixture, serve_adapter
from mcpaql.adapters.schema.build import BuildError, build_checked
from mcpaql.adapters.schema.bundle import stdio_url
from mcpaql.adapters.schema.bundle_shape import bundle_problems
from mcpaql.adapters.schema.load import load_adapter_schema
from mcpaql.protocol.context import Context, Session

ROOT = Path(__file__).resolve().parents[2]
SURFACE_DIRS = (ROOT.parent / "shared" / "fixtures" / "surfaces", ROOT / "tests" / "wrap" / "surfaces")
SURFACES = sorted({p.name: p for d in SURFACE_DIRS if d.is_dir() for p in d.glob("*.tools-list.json")}.values())


def test_fixtures_are_found() -> None:
    assert len(SURFACES) >= 10


def _replay_bundle(fixture: Path) -> dict[str, Any]:
    """A bundle of ``fixture`` whose source is the replay server serving it over stdio."""
    bundle = capture_fixture(fixture)
    bundle["source"]["server_url"] = stdio_url([sys.executable, "-m", "mcpaql.mcp.replay", str(fixture)])
    bundle["source"]["transport"] = "stdio"
    return bundle


@pytest.mark.anyio
@pytest.mark.parametrize("fixture", SURFACES, ids=lambda p: p.name.removesuffix(".tools-list.json"))
async def test_round_trip_capture_build_serve(fixture: Path, tmp_path: Path) -> None:
    bundle_path = tmp_path / "bundle.json"
    bundle_path.write_text(json.dumps(_replay_bundle(fixture)))
    assert bundle_problems(json.loads(bundle_path.read_text()))[0] == []
    schema, report, _ = build_checked(bundle_path, None, tmp_path / "built-adapter.json")
    loaded = load_adapter_schema(tmp_path / "built-adapter.json")
    assert loaded.data == schema
    async with serve_adapter(tmp_path / "built-adapter.json") as rt:  # a real replay server over stdio
        env = await rt.engine.execute({"operation": "introspect", "params": {"query": "operations"}}, Context(session=Session()))
        served = {o["name"] for o in env["data"]["operations"]}
    assert {e["operation"] for e in report["operations"]} <= served


def _examples_shape_bundle() -> dict[str, Any]:
    """The source block as the MCPAQL examples repository's generator writes it
    (generated/playwright-mcp/capture/discovery-bundle.json: ``capture_config_redacted.transport``
    is an object, ``captured_at`` has milliseconds)."""
    fixture = next(p for p in SURFACES if p.name.startswith("playwright-mcp"))
    bundle = capture_fixture(fixture)
    bundle["source"] = {
        "name": "playwright-mcp-local",
        "server_url": "http://localhost:8931/mcp",
        "transport": "streamable_http",
        "captured_at": "2026-04-01T13:00:21.058Z",
        "server": {"name": "Playwright", "version": "0.0.41"},
        "auth": {"type": "none"},
        "capture_config_redacted": {
            "name": "playwright-mcp-local",
            "server_url": "http://localhost:8931/mcp",
            "transport": {"type": "streamable_http"},
        },
    }
    return bundle


def test_bundle_in_the_examples_repository_shape_builds(tmp_path: Path) -> None:
    p = tmp_path / "discovery-bundle.json"
    p.write_text(json.dumps(_examples_shape_bundle()))
    assert bundle_problems(json.loads(p.read_text())) == ([], [])
    schema, _, _ = build_checked(p, None, tmp_path / "playwright-mcp-adapter.md")
    assert schema["target"]["base_url"] == "http://localhost:8931/mcp"
    assert load_adapter_schema(tmp_path / "playwright-mcp-adapter.md").needs_mcp


BASE = _examples_shape_bundle()


@pytest.mark.parametrize(
    ("change", "line"),
    [
        (lambda b: b.pop("raw_capture"), "raw_capture: is required"),
        (lambda b: b.pop("source"), "source: is required"),
        (lambda b: b["normalized_bundle"].pop("warnings"), "normalized_bundle.warnings: is required"),
        (
            lambda b: b["normalized_bundle"]["operations"][0].update(endpoint="QUERY"),
            "normalized_bundle.operations[0].endpoint: Input should be 'CREATE', 'READ', 'UPDATE', 'DELETE' or 'EXECUTE'",
        ),
        (
            lambda b: b["normalized_bundle"]["operations"][0].update(danger_level="extreme"),
            "normalized_bundle.operations[0].danger_level: Input should be 'safe', 'reversible', 'destructive', 'dangerous'",
        ),
        (lambda b: b.update(schema_version="2.0"), "schema_version: Input should be '1.0.0-draft'"),
        (lambda b: b["source"].update(transport="websocket"), "source.transport: Input should be"),
        (lambda b: b["source"].update(captured_at="yesterday"), "source.captured_at: must be an ISO 8601 date-time"),
        (lambda b: b["source"]["auth"].update(token="ghp_x"), "source.auth.token: unknown key"),
        (
            lambda b: b["normalized_bundle"]["operations"][0]["params"].insert(0, {"name": "x"}),
            "normalized_bundle.operations[0].params[0].original_name: is required",
        ),
        (
            lambda b: b["normalized_bundle"]["operations"][0]["returns"].update(type="array"),
            "normalized_bundle.operations[0].returns.type: Input should be 'object'",
        ),
    ],
)
def test_bad_bundles_are_refused_with_field_paths(change: Any, line: str) -> None:
    b = copy.deepcopy(BASE)
    change(b)
    errors, _ = bundle_problems(b)
    assert any(e.startswith(line) for e in errors), errors


@pytest.mark.parametrize("case", ["no_raw_capture", "endpoint_query"])
def test_schema_build_cli_exit_2_one_line_per_problem(case: str, tmp_path: Path) -> None:
    b = copy.deepcopy(BASE)
    if case == "no_raw_capture":
        b.pop("raw_capture")
        b["source"].pop("captured_at")
    else:
        b["normalized_bundle"]["operations"][0]["endpoint"] = "QUERY"
    p = tmp_path / "bundle.json"
    p.write_text(json.dumps(b))
    out = tmp_path / "adapter.json"
    r = subprocess.run(
        [sys.executable, "-m", "mcpaql.cli", "schema", "build", str(p), "--out", str(out)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "Traceback" not in r.stderr and not out.exists()
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    expected = (
        ["error: source.captured_at: is required", "error: raw_capture: is required"]
        if case == "no_raw_capture"
        else [
            "error: normalized_bundle.operations[0].endpoint: Input should be 'CREATE', 'READ', 'UPDATE', 'DELETE' or 'EXECUTE'"
        ]
    )
    assert lines == expected


def test_what_build_cannot_make_servable_is_refused(tmp_path: Path) -> None:
    b = copy.deepcopy(BASE)
    b["normalized_bundle"]["operations"][0]["maps_to"] = "native-applescript:command:make"
    p = tmp_path / "bundle.json"
    p.write_text(json.dumps(b))
    with pytest.raises(BuildError) as e:
        build_checked(p, None, tmp_path / "adapter.json")
    assert e.value.problems[0].startswith("built adapter schema: operations.")
    assert not (tmp_path / "adapter.json").exists()


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-3, 100) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=5,
)


def _paths(node: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(node, list):
        for i, v in enumerate(node[:3]):
            out += _paths(v, (*prefix, i))
    return out


SMALL = copy.deepcopy(BASE)
SMALL["raw_capture"]["tools"] = SMALL["raw_capture"]["tools"][:3]
SMALL["normalized_bundle"]["operations"] = SMALL["normalized_bundle"]["operations"][:3]
SMALL_PATHS = _paths(SMALL)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.data())
def test_property_mutated_bundles_never_crash_schema_build(tmp_path: Path, data: st.DataObject) -> None:
    b = copy.deepcopy(SMALL)
    path = data.draw(st.sampled_from(SMALL_PATHS))
    node = b
    for p in path[:-1]:
        node = node[p]
    if data.draw(st.booleans()):
        node[path[-1]] = data.draw(JSON)
    else:
        del node[path[-1]]
    p = tmp_path / "bundle.json"
    p.write_text(json.dumps(b))
    try:
        build_checked(p, None, tmp_path / "adapter.json")
    except BuildError as e:
        assert e.problems and all(": " in line and "\n" not in line for line in e.problems)


def test_a_bundle_without_a_reachable_server_builds_with_a_warning(tmp_path: Path) -> None:
    fixture = next(p for p in SURFACES if p.name.startswith("github-mcp-default"))
    p = tmp_path / "bundle.json"
    p.write_text(json.dumps(capture_fixture(fixture)))  # no capture record: server_url 'file:…'
    _, _, warnings = build_checked(p, None, tmp_path / "gh-adapter.json")
    assert any(w.startswith("target.base_url: 'file:") and "mcpaql serve" in w for w in warnings)
    r = subprocess.run(
        [sys.executable, "-m", "mcpaql.cli", "serve", str(tmp_path / "gh-adapter.json")],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("error:")]
    assert r.returncode == 2 and len(lines) == 1 and "target.base_url: 'file:" in lines[0], r.stderr
    assert "Traceback" not in r.stderr
