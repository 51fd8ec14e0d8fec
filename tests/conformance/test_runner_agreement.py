"""The spec repository's own runner (run-conformance-tests.mjs, installed by
tests/conformance/install_spec_runner.sh) grades the evidence ``mcpaql conformance`` writes,
and its verdict agrees with ours (issue 13 point 6):

* for the demo in every mode, read-only and not, and for a wrapped real server, the runner's
  per-test results equal :mod:`mcpaql.conformance.grade`'s, and Level 1 is met by the runner
  exactly when ``mcpaql conformance`` says so; a read-only run says UNVERIFIED, never MET;
* on the runner's reference bundles and deliberately broken copies of them, ``mcpaql
  conformance grade`` prints the runner's verdict and exits with its code.
"""

from __future__ import annotations

import copy
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from mcpaql.conformance import Report, grade_bundle, run_conformance, write_evidence

from .conftest import SCHEMAS, demo_cmd

pytestmark = pytest.mark.e2e
REPO = Path(__file__).resolve().parents[2]
RUNNER_DIR = Path(os.environ.get("MCPAQL_SPEC_RUNNER_DIR") or REPO / ".cache-upstreams" / "spec-runner")
RUNNER = RUNNER_DIR / "scripts" / "run-conformance-tests.mjs"
REFERENCE = REPO.parent / "shared" / "spec" / "tests" / "conformance" / "evidence"
MCPAQL = str(Path(sys.executable).with_name("mcpaql"))


@pytest.fixture(scope="module")
def runner() -> Path:
    if not (RUNNER.is_file() and (RUNNER_DIR / "node_modules" / "ajv").is_dir()):
        msg = f"the spec runner is not installed in {RUNNER_DIR}: run tests/conformance/install_spec_runner.sh"
        if os.environ.get("CI"):
            pytest.fail(msg)
        pytest.skip(msg)
    return RUNNER


def run_runner(evidence: Path, level: int, tier: str = "1") -> tuple[int, dict[str, Any]]:
    """``node run-conformance-tests.mjs test EVIDENCE --level N --tier 1 --format json``."""
    p = subprocess.run(
        ["node", str(RUNNER), "test", str(evidence), "--level", str(level), "--tier", tier, "--format", "json"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert p.returncode in (0, 1, 2), p.stderr
    return p.returncode, json.loads(p.stdout)


def shape(report: dict[str, Any]) -> list[tuple[str, str, list[tuple[str, str]]]]:
    return [(c["name"], c["result"], [(t["name"], t["result"]) for t in c["tests"]]) for c in report["categories"]]


def assert_agree(bundle: dict[str, Any], path: Path, tier: str = "1") -> dict[int, tuple[int, dict[str, Any]]]:
    """The runner and grade.py agree test by test at both levels; returns the runner's reports."""
    out = {}
    for level in (1, 2):
        code, theirs = run_runner(path, level, tier)
        ours = grade_bundle(json.loads(json.dumps(bundle)), level, SCHEMAS, tier)
        assert shape(ours.to_dict()) == shape(theirs), (level, theirs)
        assert ours.exit_code == code and ours.conformance_level == theirs["conformanceLevel"]
        out[level] = (code, theirs)
    return out


def live(cmd: list[str], tmp: Path, **kw: Any) -> tuple[Report, Path]:
    r = anyio.run(lambda: run_conformance(cmd, level=2, schemas=SCHEMAS, **kw))
    assert r.fatal is None, r.fatal
    return r, write_evidence(r, tmp / "evidence.json")


@pytest.mark.parametrize("read_only", [False, True], ids=["read-write", "read-only"])
@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
def test_runner_agrees_on_the_demo(runner: Path, mode: str, read_only: bool, tmp_path: Path) -> None:
    r, path = live(demo_cmd(mode, tmp_path / "demo.db"), tmp_path, read_only=read_only)
    verdicts = assert_agree(r.evidence_bundle, path)
    code1, rep1 = verdicts[1]
    assert code1 == 0 and rep1["conformanceLevel"] == 1, rep1  # the runner grades the demo Level 1
    assert r.level1_met  # … and so does mcpaql conformance
    assert verdicts[2][0] == 0, verdicts[2][1]
    if read_only:  # the round trip did not run: the verdict says so instead of MET
        assert r.unverified and "UNVERIFIED" in r.summary_line() and " MET" not in r.summary_line()
    else:
        assert not r.unverified and "Level 2 MET" in r.summary_line()


@pytest.mark.upstream
def test_runner_agrees_on_a_wrapped_server(runner: Path, tmp_path: Path) -> None:
    memory = REPO / ".cache-upstreams" / "node_modules" / ".bin" / "mcp-server-memory"
    if not memory.exists():
        pytest.fail(f"{memory} is missing: run tests/wrap/install_upstreams.sh")
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "MEMORY_FILE_PATH": str(tmp_path / "memory.jsonl")}
    r, path = live([MCPAQL, "wrap", "--mode", "all", "--", str(memory)], tmp_path, env=env)
    verdicts = assert_agree(r.evidence_bundle, path)
    assert (verdicts[1][0] != 1) == r.level1_met, verdicts[1][1]


def _break(bundle: dict[str, Any], how: str) -> dict[str, Any]:
    b = copy.deepcopy(bundle)
    if how == "leaky-message":
        b["error_tests"][0]["response"]["error"]["message"] = "Value must be at least 1"
    elif how == "required-unnamed":
        for c in b["parameter_tests"]["missing_required"]:
            c["response"]["error"]["message"] = "A required parameter is missing"
    elif how == "default-object":
        b["parameter_tests"]["optional_defaults"] = [
            {"operation": "x", "parameter": "p", "expected_value_path": "data", "expected_value": {}, "response": {"data": {}}}
        ]
    elif how == "default-missing-vs-null":
        b["parameter_tests"]["optional_defaults"] = [
            {
                "operation": "x",
                "parameter": "p",
                "expected_value_path": "data.q",
                "expected_value": None,
                "response": {"data": {}},
            }
        ]
    elif how == "round-trip-key-order":
        b["round_trip_tests"] = [
            {"name": "rt", "expected_fields": {"data": {"a": 1, "b": 2}}, "read_response": {"data": {"b": 2, "a": 1}}}
        ]
    elif how == "round-trip-float":
        b["round_trip_tests"] = [{"name": "rt", "expected_fields": {"data.n": 1}, "read_response": {"data": {"n": 1.0}}}]
    elif how == "length-path":
        b["parameter_tests"]["optional_defaults"] = [
            {
                "operation": "x",
                "parameter": "p",
                "expected_value_path": "data.items.length",
                "expected_value": 2,
                "response": {"data": {"items": ["a", "b"]}},
            }
        ]
    elif how == "halted-batch":
        b["batch_example"] = {
            "success": True,
            "data": None,
            "results": [],
            "summary": {"total": 1, "succeeded": 0, "failed": 0, "halted": 1},
            "halted_at": {
                "index": 0,
                "operation": "x",
                "result": {"success": False, "error": {"code": "CONFIRMATION_REQUIRED", "message": "m"}},
            },
        }
    elif how == "unknown-silent":
        b["parameter_tests"]["unknown_parameter"] = [
            {"operation": "x", "parameter": "bogus", "response": {"success": True, "data": {}, "warnings": []}}
        ]
    elif how == "undocumented-constraint":
        b["constraint_tests"] = [
            {"name": "c", "documented": False, "response": {"success": False, "error": {"code": "X", "message": "m"}}}
        ]
    return b


BREAKS = [
    "leaky-message",
    "required-unnamed",
    "default-object",
    "default-missing-vs-null",
    "round-trip-key-order",
    "round-trip-float",
    "length-path",
    "halted-batch",
    "unknown-silent",
    "undocumented-constraint",
]


@pytest.mark.parametrize("name", sorted(p.name for p in REFERENCE.glob("*.json")))
def test_grade_agrees_on_the_reference_bundles(runner: Path, name: str) -> None:
    path = REFERENCE / name
    for tier in ("1", "both"):
        assert_agree(json.loads(path.read_text()), path, tier)


@pytest.mark.parametrize("how", BREAKS)
def test_grade_agrees_on_broken_bundles(runner: Path, how: str, tmp_path: Path) -> None:
    bundle = _break(json.loads((REFERENCE / "reference-level2.json").read_text()), how)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(bundle))
    verdicts = assert_agree(bundle, path)
    for level in (1, 2):  # the CLI prints the same verdict with the same exit code
        p = subprocess.run(
            [MCPAQL, "conformance", "grade", str(path), "--level", str(level)], capture_output=True, text=True, cwd=REPO
        )
        assert p.returncode == verdicts[level][0], p.stderr
        assert f"Conformance level: {verdicts[level][1]['conformanceLevel']}" in p.stdout
