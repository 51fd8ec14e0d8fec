"""A Python model of how the spec repository's fixture runner grades an evidence bundle
(semantics as documented in spec/conformance/EVIDENCE-FORMAT.md and CHECKLIST Part F #23),
so tests can assert that the bundles the live suite writes grade as the live run did.

Returns ``{category: {test: result}}`` and the runner's exit code (0 pass, 1 MUST failure,
2 SHOULD warning). Tier 2 semantic tests are graded as the runner does for an empty list.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator, FormatChecker
from referencing import Registry, Resource

LEAK = [
    re.compile(p, re.I)
    for p in (r"typeerror", r"referenceerror", r"syntaxerror", r"at\s+\S+", r"/src/", r"/node_modules/", r"\.ts:\d+", r"\.js:\d+")
]
SNAKE = re.compile(r"^[a-z][a-z0-9_]*$")


def _validators(schemas: Path) -> dict[str, Any]:
    intro = json.loads((schemas / "introspection-response.schema.json").read_text())
    result = json.loads((schemas / "operation-result.schema.json").read_text())
    reg = Registry().with_resources(
        [(intro["$id"], Resource.from_contents(intro)), (result["$id"], Resource.from_contents(result))]
    )
    fc = FormatChecker()

    def sub(name: str) -> Draft202012Validator:
        return Draft202012Validator({"$ref": f"{intro['$id']}#/$defs/{name}"}, registry=reg, format_checker=fc)

    return {
        "result": Draft202012Validator({"$ref": result["$id"]}, registry=reg, format_checker=fc),
        "ops": sub("OperationsListData"),
        "types": sub("TypesListData"),
        "detail": sub("OperationDetails"),
    }


def _path(obj: Any, path: str) -> Any:
    for seg in path.split("."):
        if isinstance(obj, dict):
            obj = obj.get(seg)
        elif isinstance(obj, list) and seg.isdigit() and int(seg) < len(obj):
            obj = obj[int(seg)]
        elif isinstance(obj, list) and seg == "length":
            obj = len(obj)
        else:
            return None
    return obj


def _cat(required: bool, tests: dict[str, str]) -> str:
    vals = tests.values()
    if "FAIL" in vals:
        return "FAIL" if required else "WARN"
    if "WARN" in vals:
        return "WARN"
    return "PASS" if tests else "SKIP"


def _norm(text: Any) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[^a-z0-9_]+", " ", str(text or "").lower())).strip()


def _semantic(c: dict[str, Any]) -> str:
    text = _norm(c.get("response_text"))
    calls = c.get("tool_calls") or []
    tier1 = all(_norm(p) in text for p in (c.get("structural") or {}).get("required_patterns") or [])
    sem = c.get("semantic") or {}
    tier2 = (
        all(any(_norm(p) in text for p in g) for g in sem.get("phrase_groups") or [])
        and all(any(tc.get("operation") == o for tc in calls) for o in sem.get("expected_operations") or [])
        and all(
            any(_norm(p) in _norm(json.dumps(tc.get("params") or {})) for tc in calls) or _norm(p) in text
            for p in sem.get("expected_parameters") or []
        )
    )
    return "PASS" if tier1 and tier2 else "WARN" if tier2 else "FAIL"


def grade(bundle: dict[str, Any], level: int, schemas: Path) -> tuple[dict[str, dict[str, str]], int]:
    v = _validators(schemas)
    out: dict[str, dict[str, str]] = {}
    intro = bundle.get("introspection") or {}
    ops, types = intro.get("operations_list") or {}, intro.get("types_list") or {}
    details = intro.get("operation_details") or []
    acc = bundle.get("accepted_parameters") or {}
    t: dict[str, str] = {}
    t["operations"] = "PASS" if ops.get("success") is True and v["ops"].is_valid(ops.get("data")) else "FAIL"
    t["types"] = "PASS" if types.get("success") is True and v["types"].is_valid(types.get("data")) else "FAIL"
    invalid, missing, undocumented = [], [], []
    for d in details:
        if not v["detail"].is_valid(d):
            invalid.append(d.get("name"))
            continue
        documented = {p["name"] for p in d.get("parameters") or []}
        accepted = acc.get(d["name"], [])
        missing += [p for p in accepted if p not in documented]
        undocumented += [p for p in documented if p not in accepted]
    t["details"] = "FAIL" if invalid else "PASS"
    t["completeness"] = "FAIL" if missing else "WARN" if undocumented else "PASS"
    out["Introspection Fidelity"] = t
    pt = bundle.get("parameter_tests") or {}
    t = {}
    fails = []
    for d in details:
        for p in d.get("parameters") or []:
            if not p.get("required"):
                continue
            case = next(
                (c for c in pt.get("missing_required") or [] if c["operation"] == d["name"] and c["parameter"] == p["name"]), None
            )
            msg = ((case or {}).get("response") or {}).get("error", {}).get("message", "") if case else ""
            if case is None or case["response"].get("success") is not False or p["name"] not in msg:
                fails.append(f"{d['name']}.{p['name']}")
    t["required"] = "FAIL" if fails else "PASS"
    t["unknown"] = "PASS"
    for c in pt.get("unknown_parameter") or []:
        r = c.get("response") or {}
        err = r.get("success") is False and c["parameter"] in str((r.get("error") or {}).get("message", ""))
        warn = r.get("success") is True and bool(r.get("warnings"))
        if not (err or warn):
            t["unknown"] = "FAIL"
    t["defaults"] = (
        "PASS"
        if all(_path(c["response"], c["expected_value_path"]) == c["expected_value"] for c in pt.get("optional_defaults") or [])
        else "FAIL"
    )
    t["snake"] = "PASS" if all(SNAKE.match(p["name"]) for d in details for p in d.get("parameters") or []) else "FAIL"
    out["Parameter Handling"] = t
    t = {"format": "PASS", "leak": "PASS", "actionable": "PASS"}
    for c in bundle.get("error_tests") or []:
        if not v["result"].is_valid(c["response"]):
            t["format"] = "FAIL"
            continue
        msg = (c["response"].get("error") or {}).get("message", "")
        if any(p.search(msg) for p in LEAK):
            t["leak"] = "FAIL"
        if any(m not in msg for m in c.get("must_mention") or []):
            t["actionable"] = "WARN"
    out["Error Quality"] = t
    t = {"create_read": "PASS", "update": "PASS"}
    for c in bundle.get("round_trip_tests") or []:
        if any(json.dumps(_path(c["read_response"], k)) != json.dumps(val) for k, val in c["expected_fields"].items()):
            t["create_read"] = "FAIL"
    for c in bundle.get("update_preservation_tests") or []:
        if any(json.dumps(_path(c["read_response"], k)) != json.dumps(val) for k, val in c["preserved_fields"].items()):
            t["update"] = "FAIL"
    out["Round-Trip Integrity"] = t
    if level >= 2:
        modes, caps = bundle.get("endpoint_modes") or [], bundle.get("capabilities") or {}
        be = bundle.get("batch_example")
        out["Level 2 Features"] = {
            "modes": "PASS" if "crude" in modes and "single" in modes else "FAIL",
            "fields": "PASS" if caps.get("field_selection") else "FAIL",
            "batch": "PASS" if caps.get("batch_operations") and be and v["result"].is_valid(be) else "FAIL",
        }
        t = {"enforced": "PASS", "documented": "PASS"}
        for c in bundle.get("constraint_tests") or []:
            r = c.get("response") or {}
            if not (r.get("success") is False and isinstance((r.get("error") or {}).get("message"), str)):
                t["enforced"] = "FAIL"
            elif c.get("documented") is not True:
                t["documented"] = "WARN"
        out["Constraint Documentation"] = t
        out["Semantic Evaluation"] = {c["name"]: _semantic(c) for c in bundle.get("semantic_tests") or []}
    required = {"Introspection Fidelity", "Parameter Handling", "Error Quality", "Round-Trip Integrity"}
    cats = {name: _cat(name in required, tests) for name, tests in out.items()}
    if any(cats[n] == "FAIL" for n in required):
        return out, 1
    if any(cats[n] in ("WARN", "FAIL") for n in cats if n not in required):
        return out, 2
    return out, 0
