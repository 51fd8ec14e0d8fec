"""Validation of live responses against the MCP-AQL JSON Schemas, or against our own
structural models of the documented shapes when the schemas are not available.

The spec's schemas are AGPL data and are never shipped with mcpaql: they are loaded from a
directory (``MCPAQL_SPEC_SCHEMAS``, else ``../shared/spec/schemas`` relative to the working
directory). Without them the structural models below (written from CHECKLIST Part C: closed
objects, required keys, enums, patterns) do the job, and the report says schema validation
was skipped.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import Any

from ..config import settings

SCHEMA_FILES = ("introspection-response.schema.json", "operation-result.schema.json")
INTRO_ID = "https://mcpaql.org/schemas/introspection-response.schema.json"
RESULT_ID = "https://mcpaql.org/schemas/operation-result.schema.json"

# kind → $defs name inside introspection-response (None: the whole document)
_INTRO_DEFS = {
    "introspection_response": None,
    "OperationsListData": "OperationsListData",
    "TypesListData": "TypesListData",
    "OperationDetails": "OperationDetails",
    "TypeDetails": "TypeDetails",
}


def default_schema_dir() -> Path | None:
    env = settings().spec_schemas
    candidates = [Path(env)] if env else []
    candidates.append(Path.cwd() / ".." / "shared" / "spec" / "schemas")
    for c in candidates:
        if all((c / f).is_file() for f in SCHEMA_FILES):
            return c.resolve()
    return None


class Validators:
    """``problems(kind, instance)`` → list of human-readable problems (empty = valid)."""

    def __init__(self, directory: str | os.PathLike[str] | None = None, *, use_schemas: bool = True) -> None:
        self.directory: Path | None = None
        self._validators: dict[str, Any] = {}
        if not use_schemas:
            return
        d = Path(directory) if directory is not None else default_schema_dir()
        if d is None or not all((d / f).is_file() for f in SCHEMA_FILES):
            return
        try:
            self._load(d)
            self.directory = d
        except Exception:  # a broken schema directory degrades to structural checks
            self._validators = {}
            self.directory = None

    @property
    def available(self) -> bool:
        return bool(self._validators)

    def _load(self, d: Path) -> None:
        from jsonschema import Draft202012Validator, FormatChecker
        from referencing import Registry, Resource

        intro = json.loads((d / "introspection-response.schema.json").read_text(encoding="utf-8"))
        result = json.loads((d / "operation-result.schema.json").read_text(encoding="utf-8"))
        registry = Registry().with_resources(
            [
                (intro.get("$id", INTRO_ID), Resource.from_contents(intro)),
                (result.get("$id", RESULT_ID), Resource.from_contents(result)),
            ]
        )
        fc = FormatChecker()
        intro_id = intro.get("$id", INTRO_ID)
        for kind, ref in _INTRO_DEFS.items():
            schema = {"$ref": intro_id if ref is None else f"{intro_id}#/$defs/{ref}"}
            self._validators[kind] = Draft202012Validator(schema, registry=registry, format_checker=fc)
        self._validators["operation_result"] = Draft202012Validator(
            {"$ref": result.get("$id", RESULT_ID)}, registry=registry, format_checker=fc
        )

    def problems(self, kind: str, instance: Any) -> list[str]:
        v = self._validators.get(kind)
        if v is None:
            return structural_problems(kind, instance)
        out = []
        for err in sorted(v.iter_errors(instance), key=lambda e: list(e.absolute_path))[:8]:
            path = "/" + "/".join(str(p) for p in err.absolute_path)
            out.append(f"{path} {_short(err.message)}")
        return out


def _short(s: str, n: int = 160) -> str:
    return s if len(s) <= n else s[: n - 1] + "…"


# ---- structural models (CHECKLIST Part C) -----------------------------------------------------

CATEGORIES = ("CREATE", "READ", "UPDATE", "DELETE", "EXECUTE")
KINDS = ("enum", "object", "scalar", "union")
CODE_RE = re.compile(r"^[A-Z][A-Z0-9_]*$")
VERSION_RE = re.compile(r"^\d+\.\d+\.\d+(-[a-zA-Z0-9.-]+)?$")


def _closed(obj: Any, where: str, required: tuple[str, ...], allowed: tuple[str, ...], out: list[str]) -> bool:
    if not isinstance(obj, dict):
        out.append(f"{where} must be an object")
        return False
    for k in required:
        if k not in obj:
            out.append(f"{where} is missing required key '{k}'")
    for k in obj:
        if k not in allowed:
            out.append(f"{where} has a key the schema forbids: '{k}'")
    return True


def _str(obj: dict[str, Any], key: str, where: str, out: list[str], min_len: int = 0) -> None:
    if key in obj and (not isinstance(obj[key], str) or len(obj[key]) < min_len):
        out.append(f"{where}.{key} must be a string" + (f" of at least {min_len} character" if min_len else ""))


def _bool(obj: dict[str, Any], key: str, where: str, out: list[str]) -> None:
    if key in obj and not isinstance(obj[key], bool):
        out.append(f"{where}.{key} must be a boolean")


_PARAM_KEYS = (
    "name",
    "type",
    "required",
    "description",
    "default",
    "enum",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "pattern",
    "format",
    "items",
    "sensitive",
)


def _param(p: Any, where: str, out: list[str]) -> None:
    if not _closed(p, where, ("name", "type", "required"), _PARAM_KEYS, out):
        return
    for k in ("name", "type", "description", "pattern", "format"):
        _str(p, k, where, out)
    for k in ("required", "sensitive"):
        _bool(p, k, where, out)
    if "enum" in p and not isinstance(p["enum"], list):
        out.append(f"{where}.enum must be an array")
    for k in ("minimum", "maximum"):
        if k in p and (isinstance(p[k], bool) or not isinstance(p[k], int | float)):
            out.append(f"{where}.{k} must be a number")
    for k in ("minLength", "maxLength"):
        if k in p and (isinstance(p[k], bool) or not isinstance(p[k], int) or p[k] < 0):
            out.append(f"{where}.{k} must be an integer >= 0")
    if "items" in p and not isinstance(p["items"], dict):
        out.append(f"{where}.items must be an object")


def _type_info(t: Any, where: str, out: list[str]) -> None:
    if not _closed(t, where, ("name", "kind"), ("name", "kind", "description"), out):
        return
    _str(t, "name", where, out)
    _str(t, "description", where, out)
    if t.get("kind") not in KINDS:
        out.append(f"{where}.kind must be one of {', '.join(KINDS)}")


def _operation_info(o: Any, where: str, out: list[str]) -> None:
    keys = ("name", "semantic_category", "endpoint", "description")
    if not _closed(o, where, keys, keys, out):
        return
    _str(o, "name", where, out)
    _str(o, "description", where, out)
    _str(o, "endpoint", where, out, 1)
    if o.get("semantic_category") not in CATEGORIES:
        out.append(f"{where}.semantic_category must be one of {', '.join(CATEGORIES)}")


_DETAIL_KEYS = (
    "name",
    "semantic_category",
    "endpoint",
    "mcpTool",
    "description",
    "permissions",
    "parameters",
    "returns",
    "examples",
    "computed_fields",
    "aggregation_support",
    "relationship_capabilities",
    "lifecycle",
)


def _operation_details(d: Any, where: str, out: list[str]) -> None:
    if not _closed(d, where, _DETAIL_KEYS[:8], _DETAIL_KEYS, out):
        return
    for k in ("name", "mcpTool", "description"):
        _str(d, k, where, out)
    _str(d, "endpoint", where, out, 1)
    if "semantic_category" in d and d["semantic_category"] not in CATEGORIES:
        out.append(f"{where}.semantic_category must be one of {', '.join(CATEGORIES)}")
    perms = d.get("permissions")
    if "permissions" in d and _closed(
        perms, f"{where}.permissions", ("readOnly", "destructive"), ("readOnly", "destructive"), out
    ):
        _bool(perms, "readOnly", f"{where}.permissions", out)
        _bool(perms, "destructive", f"{where}.permissions", out)
    params = d.get("parameters")
    if "parameters" in d:
        if not isinstance(params, list):
            out.append(f"{where}.parameters must be an array")
        else:
            for i, p in enumerate(params):
                _param(p, f"{where}.parameters[{i}]", out)
    if "returns" in d:
        _type_info(d["returns"], f"{where}.returns", out)
    if "examples" in d:
        if not isinstance(d["examples"], list):
            out.append(f"{where}.examples must be an array")
        else:
            for i, e in enumerate(d["examples"]):
                w = f"{where}.examples[{i}]"
                if _closed(e, w, ("request",), ("description", "request"), out) and not isinstance(e.get("request"), dict):
                    out.append(f"{w}.request must be an object")
    if "lifecycle" in d:
        lc = d["lifecycle"]
        w = f"{where}.lifecycle"
        keys = ("states", "supports_cancel", "supports_retry", "progress_reporting")
        if _closed(lc, w, ("states",), keys, out) and not isinstance(lc.get("states"), list):
            out.append(f"{w}.states must be an array")


def _type_details(t: Any, where: str, out: list[str]) -> None:
    if not isinstance(t, dict):
        out.append(f"{where} must be an object")
        return
    kind: Any = t.get("kind")  # untrusted JSON: any value, looked up below
    extra = {"enum": ("values",), "object": ("fields",), "union": ("members",), "scalar": ()}.get(kind)
    if extra is None:
        out.append(f"{where}.kind must be one of {', '.join(KINDS)}")
        return
    if not _closed(t, where, ("name", "kind", *extra), ("name", "kind", "description", *extra), out):
        return
    if kind == "object":
        fields = t.get("fields")
        if not isinstance(fields, list):
            out.append(f"{where}.fields must be an array")
        else:
            for i, f in enumerate(fields):
                _param(f, f"{where}.fields[{i}]", out)
    elif extra and not (isinstance(t.get(extra[0]), list) and all(isinstance(x, str) for x in t[extra[0]])):
        out.append(f"{where}.{extra[0]} must be an array of strings")


def _envelope(env: Any, where: str, out: list[str]) -> None:
    if not isinstance(env, dict) or not isinstance(env.get("success"), bool):
        out.append(f"{where} must be an object with a boolean 'success'")
        return
    if env["success"]:
        if _closed(env, where, ("success", "data"), ("success", "data", "warnings", "_meta", "results", "summary"), out):
            for i, w in enumerate(env.get("warnings") or []):
                ww = f"{where}.warnings[{i}]"
                if _closed(w, ww, ("code", "message"), ("code", "message", "details", "severity"), out) and not CODE_RE.match(
                    str(w.get("code"))
                ):
                    out.append(f"{ww}.code must match ^[A-Z][A-Z0-9_]*$")
            for i, r in enumerate(env.get("results") or []):
                rw = f"{where}.results[{i}]"
                if not isinstance(r, dict) or not all(k in r for k in ("index", "operation", "result")):
                    out.append(f"{rw} must have index, operation and result")
                else:
                    _envelope(r["result"], f"{rw}.result", out)
            if "summary" in env:
                s = env["summary"]
                if not isinstance(s, dict) or not all(isinstance(s.get(k), int) for k in ("total", "succeeded", "failed")):
                    out.append(f"{where}.summary must have integer total, succeeded and failed")
        return
    allowed = ("success", "error", "confirmation", "deprecated", "deprecationMessage", "deprecatedSince", "removalVersion")
    if _closed(env, where, ("success", "error"), allowed, out):
        err: Any = env.get("error")
        w = f"{where}.error"
        if _closed(err, w, ("code", "message"), ("code", "message", "details"), out):
            if not isinstance(err.get("code"), str) or not CODE_RE.match(err["code"]):
                out.append(f"{w}.code must be a string matching ^[A-Z][A-Z0-9_]*$")
            _str(err, "message", w, out)
            if "details" in err and not isinstance(err["details"], dict):
                out.append(f"{w}.details must be an object")


def _introspection_envelope(env: Any, out: list[str]) -> None:
    if not isinstance(env, dict) or not isinstance(env.get("success"), bool):
        out.append("/ must be an object with a boolean 'success'")
        return
    if env["success"]:
        if not _closed(env, "/", ("success", "data"), ("success", "data"), out):
            return
        data: Any = env.get("data")
        payloads = {
            "operations": lambda: _ops_list(data, out),
            "types": lambda: _types_list(data, out),
            "operation": lambda: (
                None if data.get("operation") is None else _operation_details(data["operation"], "/data/operation", out)
            ),
            "type": lambda: None if data.get("type") is None else _type_details(data["type"], "/data/type", out),
        }
        if not isinstance(data, dict):
            out.append("/data must be an object")
            return
        hits = [k for k in payloads if k in data]
        if len(hits) != 1:
            out.append("/data must be exactly one introspection payload (operations, types, operation or type)")
            return
        if hits[0] in ("operation", "type") and set(data) != {hits[0]}:
            out.append(f"/data has keys the schema forbids: {sorted(set(data) - {hits[0]})}")
        payloads[hits[0]]()
        return
    if _closed(env, "/", ("success", "error"), ("success", "error"), out):
        _closed(env.get("error"), "/error", ("code", "message"), ("code", "message"), out)


def _ops_list(data: Any, out: list[str]) -> None:
    if not _closed(data, "/data", ("operations",), ("operations", "_protocol"), out):
        return
    ops = data.get("operations")
    if not isinstance(ops, list):
        out.append("/data/operations must be an array")
        return
    for i, o in enumerate(ops):
        _operation_info(o, f"/data/operations[{i}]", out)
    proto = data.get("_protocol")
    if proto is not None:
        if not isinstance(proto, dict) or not isinstance(proto.get("version"), str) or not VERSION_RE.match(proto["version"]):
            out.append("/data/_protocol.version must be a semver string")
        elif proto.get("conformance") not in (None, "level-1", "level-2"):
            out.append("/data/_protocol.conformance must be level-1 or level-2")
        elif proto.get("mode") not in (None, "semantic", "single", "all"):
            out.append("/data/_protocol.mode must be semantic, single or all")


def _types_list(data: Any, out: list[str]) -> None:
    if not _closed(data, "/data", ("types",), ("types",), out):
        return
    types = data.get("types")
    if not isinstance(types, list):
        out.append("/data/types must be an array")
        return
    for i, t in enumerate(types):
        _type_info(t, f"/data/types[{i}]", out)


def structural_problems(kind: str, instance: Any) -> list[str]:
    out: list[str] = []
    if kind == "operation_result":
        _envelope(instance, "/", out)
    elif kind == "introspection_response":
        _introspection_envelope(instance, out)
    elif kind == "OperationsListData":
        _ops_list(instance, out)
    elif kind == "TypesListData":
        _types_list(instance, out)
    elif kind == "OperationDetails":
        _operation_details(instance, "/", out)
    elif kind == "TypeDetails":
        _type_details(instance, "/", out)
    else:  # pragma: no cover - programming error
        raise ValueError(kind)
    return out[:8]
