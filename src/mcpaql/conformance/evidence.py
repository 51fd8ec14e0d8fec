"""The evidence bundle: what the live run observed, in the exact format graded by the spec
repository's fixture runner (conformance/EVIDENCE-FORMAT.md).

Responses are MCP-AQL envelopes (never the ``CallToolResult`` wrapper). Keys the schemas
forbid are stripped (CHECKLIST Part F #6): no ``_meta``/``warnings`` on failures, nothing but
``success`` + ``data``/``error`` on introspection envelopes and no ``details`` in their errors.
"""

from __future__ import annotations

import copy
import json
import os
from pathlib import Path
from typing import Any

from .model import Report

_SUCCESS_KEYS = ("success", "data", "warnings", "_meta", "results", "summary")
_FAILURE_KEYS = ("success", "error", "confirmation", "deprecated", "deprecationMessage", "deprecatedSince", "removalVersion")


def clean_envelope(env: Any) -> Any:
    """An operation-result envelope with only the keys operation-result.schema.json allows."""
    if not isinstance(env, dict):
        return env
    env = copy.deepcopy(env)
    if env.get("success") is True:
        out = {k: env[k] for k in _SUCCESS_KEYS if k in env}
        if "results" in out and isinstance(out["results"], list):
            out["results"] = [
                {**r, "result": clean_envelope(r.get("result"))} if isinstance(r, dict) else r for r in out["results"]
            ]
        return out
    out = {k: env[k] for k in _FAILURE_KEYS if k in env}
    err = out.get("error")
    if isinstance(err, dict):
        out["error"] = {k: err[k] for k in ("code", "message", "details") if k in err}
    return out


def without_error_details(env: Any) -> Any:
    """``env`` without ``error.details``: introspection-response.schema.json forbids them, mcpaql
    keeps them on introspect's errors like on every operation's (docs/conformance.md decision E2)."""
    if isinstance(env, dict) and isinstance(env.get("error"), dict) and "details" in env["error"]:
        return {**env, "error": {k: v for k, v in env["error"].items() if k != "details"}}
    return env


def clean_introspection(env: Any) -> Any:
    """An introspection envelope as introspection-response.schema.json allows it."""
    if not isinstance(env, dict):
        return env
    if env.get("success") is True:
        return {"success": True, "data": copy.deepcopy(env.get("data"))}
    err: Any = env.get("error") if isinstance(env.get("error"), dict) else {}
    return {"success": False, "error": {k: err[k] for k in ("code", "message") if k in err}}


def build_bundle(report: Report, raw: dict[str, Any]) -> dict[str, Any]:
    b: dict[str, Any] = {"implementation": report.implementation}
    if report.version:
        b["version"] = report.version
    b["spec_version"] = report.spec_version
    b["endpoint_modes"] = list(raw.get("endpoint_modes") or [])
    caps = raw.get("capabilities") or {}
    b["capabilities"] = {
        "field_selection": bool(caps.get("field_selection")),
        "batch_operations": bool(caps.get("batch_operations")),
    }
    intro = raw.get("introspection") or {}
    b["introspection"] = {
        "operations_list": clean_introspection(intro.get("operations_list")),
        "types_list": clean_introspection(intro.get("types_list")),
        "operation_details": copy.deepcopy(intro.get("operation_details") or []),
    }
    b["accepted_parameters"] = copy.deepcopy(raw.get("accepted_parameters") or {})
    pt = raw.get("parameter_tests") or {}
    b["parameter_tests"] = {
        key: [
            {**c, "response": clean_envelope(c.get("response")) if c.get("response") is not None else {}}
            for c in pt.get(key) or []
        ]
        for key in ("missing_required", "unknown_parameter", "optional_defaults")
    }
    b["error_tests"] = [
        {**t, "response": clean_envelope(t["response"])}
        for t in raw.get("error_tests") or []
        if isinstance(t.get("response"), dict)
    ]
    b["round_trip_tests"] = [
        {**t, "read_response": clean_envelope(t["read_response"])} for t in raw.get("round_trip_tests") or []
    ]
    b["update_preservation_tests"] = [
        {**t, "read_response": clean_envelope(t["read_response"])} for t in raw.get("update_preservation_tests") or []
    ]
    if raw.get("batch_example"):
        b["batch_example"] = clean_envelope(raw["batch_example"])
    b["constraint_tests"] = [
        {**t, "response": clean_envelope(t.get("response")) if t.get("response") else {}}
        for t in raw.get("constraint_tests") or []
    ]
    b["semantic_tests"] = []
    return b


def write_evidence(report: Report, path: str | os.PathLike[str]) -> Path:
    """Write ``report``'s evidence bundle as JSON to ``path`` and return the path."""
    p = Path(path)
    p.write_text(json.dumps(report.evidence_bundle, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return p
