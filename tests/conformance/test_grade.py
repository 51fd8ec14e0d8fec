"""Unit and property tests of mcpaql.conformance.grade's JavaScript semantics (the runner's
``===``, ``JSON.stringify`` and property paths); the runner itself is compared in
test_runner_agreement.py."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mcpaql.conformance.grade import UNDEFINED, js_get, js_number, js_strict_equal, js_stringify, runner_leaks

JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=5), inner, max_size=4),
    max_leaves=12,
)


@given(JSON)
def test_stringify_matches_compact_json_without_floats(value) -> None:
    assert js_stringify(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False)


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_js_number_round_trips(x: float) -> None:
    assert float(js_number(x)) == x


@pytest.mark.parametrize(
    ("x", "text"),
    [
        (1e-7, "1e-7"),
        (1.5e-7, "1.5e-7"),
        (1e-6, "0.000001"),
        (1e21, "1e+21"),
        (1.2345e20, "123450000000000000000"),
        (0.1, "0.1"),
        (-2.5, "-2.5"),
        (1.0, "1"),
        (123.456, "123.456"),
        (5e-324, "5e-324"),
        (1.7976931348623157e308, "1.7976931348623157e+308"),
    ],
)
def test_js_number_layout(x: float, text: str) -> None:
    assert js_number(x) == text


def test_js_number_matches_node_on_samples() -> None:
    """Node's own String(x) on a spread of doubles (node is a test dependency of the suite)."""
    if shutil.which("node") is None:
        if os.environ.get("CI"):
            pytest.fail("node is not installed")
        pytest.skip("node is not installed")
    xs = [1e-7, 3.14e-10, 2.5e25, 0.000123, 1e20 + 1e5, 4.35, 1 / 3, -7e-8, 9.007199254740993e15]
    out = subprocess.run(
        ["node", "-e", f"console.log(JSON.stringify({json.dumps(xs)}.map(String)))"], capture_output=True, text=True, check=True
    ).stdout
    assert json.loads(out) == [js_number(x) for x in xs]


def test_strict_equality_and_paths() -> None:
    assert not js_strict_equal({}, {}) and not js_strict_equal([], [])
    assert not js_strict_equal(True, 1) and js_strict_equal(1, 1.0)
    assert not js_strict_equal(UNDEFINED, None) and js_strict_equal(UNDEFINED, UNDEFINED)
    doc = {"data": {"items": ["a", "bc"], "s": "xyz"}}
    assert js_get(doc, "data.items.length") == 2 and js_get(doc, "data.items.1.length") == 2
    assert js_get(doc, "data.s.0") == "x" and js_get(doc, "data.nope.deeper") is UNDEFINED
    assert js_get(doc, "data.items.01") is UNDEFINED


@given(st.text(max_size=60))
def test_leak_patterns_are_the_runners(message: str) -> None:
    hits = runner_leaks(message)
    lowered = message.lower()
    if "typeerror" in lowered or "/src/" in lowered:
        assert hits


def test_leak_examples() -> None:
    assert runner_leaks("must be at least 1") and runner_leaks("Invalid format 'x'")
    assert not runner_leaks("Missing required parameter 'query' (expected 'string')")


REFERENCE = Path(__file__).resolve().parents[3] / "shared" / "spec" / "tests" / "conformance" / "evidence"
MCPAQL = str(Path(sys.executable).with_name("mcpaql"))


@pytest.mark.parametrize("name", sorted(p.name for p in REFERENCE.glob("*.json")))
def test_grade_cli_on_reference_bundles_like_verify_fixtures(name: str) -> None:
    """Each reference bundle states the level and exit code the runner gives it (verify-fixtures)."""
    bundle = json.loads((REFERENCE / name).read_text())
    level = str(bundle.get("expected_level", 1))
    p = subprocess.run([MCPAQL, "conformance", "grade", str(REFERENCE / name), "--level", level], capture_output=True, text=True)
    tier1_code = 0 if name == "reference-semantic-warn.json" else bundle.get("expected_exit_code", 0)
    assert p.returncode == tier1_code, p.stdout  # the CLI grades Tier 1 (the spec README's command)
    assert p.stdout.startswith(f"Implementation: {bundle['implementation']}")
    from mcpaql.conformance import grade_bundle

    both = grade_bundle(bundle, int(level), REFERENCE.parents[2] / "schemas", tier="both")
    assert both.exit_code == bundle.get("expected_exit_code", 0)  # verify-fixtures runs both tiers
    j = subprocess.run(
        [MCPAQL, "conformance", "grade", str(REFERENCE / name), "--format", "json"], capture_output=True, text=True
    )
    assert json.loads(j.stdout)["exitCode"] == j.returncode


@pytest.mark.parametrize("content", [None, "not json", "[1, 2]"])
def test_grade_cli_refuses_unreadable_evidence_in_one_line(tmp_path: Path, content: str | None) -> None:
    path = tmp_path / "evidence.json"
    if content is not None:
        path.write_text(content)
    p = subprocess.run([MCPAQL, "conformance", "grade", str(path)], capture_output=True, text=True)
    assert p.returncode == 3 and "Traceback" not in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr
