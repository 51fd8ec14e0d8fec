"""Discovery bundle (+ reviewed overrides) → adapter schema (REQ-ADPT-*; CHECKLIST Part D)
and a build report listing every classification with its reasons and ambiguities.

The adapter schema is closed, so everything it cannot hold (provenance, warnings, nested
parameter shapes) stays in the bundle and the report (REQ-DISC-012 "sidecars"). For a wrapped
MCP server the target is the server itself: ``base_url`` is its URL (or a ``stdio:`` URI),
``transport`` is ``http`` (or ``native`` for stdio), ``protocol`` ``custom`` and every
operation ``maps_to`` ``MCP tools/call <tool>``.

Overrides (YAML or a dict)::

    adapter: {name: github, version: 1.0.0, description: "..."}
    exclude: ["*copilot*"]
    operations:
      merge_pull_request: {category: EXECUTE, danger_level: destructive, requires_confirmation: true}
      issue_write: {name: write_issue}
"""

from __future__ import annotations

import fnmatch
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from ...protocol.categories import Category

_ADAPTER_NAME = re.compile(r"^[a-z][a-z0-9-]*[a-z0-9]$")
_PARAM_KEYS = ("description", "default", "enum", "minimum", "maximum", "pattern", "format")
_JSON_TYPES = {"string", "integer", "number", "boolean", "array", "object"}
_DANGER = ("safe", "reversible", "destructive", "dangerous", "forbidden")


def _adapter_name(raw: str) -> str:
    s = re.sub(r"[^a-z0-9-]+", "-", raw.lower()).strip("-")
    s = re.sub(r"-+", "-", s)
    if not s or not s[0].isalpha():
        s = "mcp-" + s
    return (s if len(s) >= 2 else s + "-adapter")[:64].rstrip("-")


def load_overrides(overrides: str | Path | Mapping[str, Any] | None) -> dict[str, Any]:
    if overrides is None:
        return {}
    if isinstance(overrides, Mapping):
        return dict(overrides)
    data = yaml.safe_load(Path(overrides).read_text(encoding="utf-8")) or {}
    if not isinstance(data, dict):
        raise ValueError("overrides must be a YAML mapping")
    return data


def _target(source: Mapping[str, Any]) -> dict[str, Any]:
    url = str(source.get("server_url", ""))
    transport = "http" if url.startswith(("http://", "https://")) else "native"
    return {
        "base_url": url.rstrip("/") if transport == "http" else url,
        "transport": transport,
        "protocol": "custom",
        "serialization": "json",
    }


def build_schema(
    bundle: Mapping[str, Any], overrides: str | Path | Mapping[str, Any] | None = None
) -> tuple[dict[str, Any], dict[str, Any]]:
    """Return ``(adapter_schema, build_report)``."""
    ov = load_overrides(overrides)
    source = bundle["source"]
    ad = dict(ov.get("adapter") or {})
    server = source.get("server") or {}
    name = _adapter_name(str(ad.get("name") or source.get("name") or server.get("name") or "mcp"))
    n_tools = len(bundle["normalized_bundle"]["operations"])
    label = server.get("title") or server.get("name") or source.get("name")
    description = str(ad.get("description") or f"MCP-AQL adapter for the {label} MCP server ({n_tools} tools)")[:200]
    if len(description) < 10:
        description = f"MCP-AQL adapter for {description}"
    schema: dict[str, Any] = {
        "name": name,
        "type": "adapter",
        "version": str(ad.get("version") or "0.1.0"),
        "description": description,
        "target": _target(source),
        "operations": {},
    }
    auth = source.get("auth") or {"type": "none"}
    if auth.get("type") != "none":
        schema["auth"] = {k: v for k, v in auth.items() if k in ("type", "header", "prefix", "token_env")}
    report: dict[str, Any] = {
        "adapter": name,
        "source": source.get("name"),
        "operations": [],
        "ambiguities": [],
        "excluded": [],
        "overrides_applied": [],
        "warnings": list(bundle["normalized_bundle"]["warnings"]),
    }
    per_op: Mapping[str, Any] = ov.get("operations") or {}
    excludes = list(ov.get("exclude") or [])
    groups: dict[str, list[dict[str, Any]]] = {c.value.lower(): [] for c in Category}
    used: set[str] = set()
    for rec in bundle["normalized_bundle"]["operations"]:
        tool, op = rec["source_tool_name"], rec["operation_name"]
        o = dict(per_op.get(tool) or per_op.get(op) or {})
        if o.get("exclude") or any(fnmatch.fnmatchcase(tool, g) or fnmatch.fnmatchcase(op, g) for g in excludes):
            report["excluded"].append(tool)
            continue
        category = str(o.get("category") or rec["endpoint"]).upper()
        if category not in {c.value for c in Category}:
            raise ValueError(f"override for '{tool}': unknown category '{category}'")
        danger = str(o.get("danger_level") or rec["danger_level"])
        if danger not in _DANGER:
            raise ValueError(f"override for '{tool}': unknown danger level '{danger}'")
        final = str(o.get("name") or op)
        if final in used:
            raise ValueError(f"operation name '{final}' is used twice (rename it in the overrides)")
        used.add(final)
        params: dict[str, Any] = {}
        for p in rec["params"]:
            d: dict[str, Any] = {"type": p["type"] if p["type"] in _JSON_TYPES else "string"}
            if p["required"]:
                d["required"] = True
            for k in _PARAM_KEYS:
                if k in p:
                    d[k] = p[k]
            params[p["name"]] = d
        od: dict[str, Any] = {
            "name": final,
            "maps_to": rec["maps_to"],
            "description": str(o.get("description") or rec["description"]),
        }
        if params:
            od["params"] = params
        od["response"] = {"type": "object", "description": rec["returns"]["description"]}
        od["danger_level"] = danger
        if o.get("requires_confirmation", danger in ("dangerous", "forbidden")):
            od["requires_confirmation"] = True
        if category == "EXECUTE":
            od["non_idempotent"] = True
        groups[category.lower()].append(od)
        overridden = sorted(k for k in o if k != "exclude")
        if overridden:
            report["overrides_applied"].append({"tool": tool, "fields": overridden})
        entry = {
            "tool": tool,
            "operation": final,
            "category": category,
            "confidence": rec["endpoint_confidence"],
            "danger_level": danger,
            "needs_review": rec["needs_review"] and "category" not in o,
            "review_reasons": rec["review_reasons"],
            "inference": rec["provenance"].get("inference_sources", {}),
            "overridden": overridden,
        }
        report["operations"].append(entry)
        if entry["needs_review"]:
            report["ambiguities"].append(
                {"tool": tool, "operation": final, "category": category, "reasons": rec["review_reasons"]}
            )
    schema["operations"] = {k: v for k, v in groups.items() if v}
    report["by_category"] = {k.upper(): len(v) for k, v in groups.items() if v}
    report["why"] = _reasons(bundle)
    report["read_only_excluded"] = _read_only_excluded(bundle)
    return schema, report


def _reasons(bundle: Mapping[str, Any]) -> dict[str, list[str]]:
    """Classification reasons, recomputed from the raw tools (the bundle keeps only the outcome)."""
    from ..upstream.classify import classify

    return {str(t.get("name")): list(classify(t).why) for t in bundle["raw_capture"]["tools"]}


def _read_only_excluded(bundle: Mapping[str, Any]) -> dict[str, str]:
    """Tool → why ``wrap --read-only`` would not serve it (only guaranteed reads are served)."""
    from ..upstream.classify import classify

    out = {str(t.get("name")): classify(t).read_only_exclusion() for t in bundle["raw_capture"]["tools"]}
    return {k: v for k, v in out.items() if v}


def format_report(report: Mapping[str, Any]) -> str:
    """The build report as Markdown for humans (the dict is for machines)."""
    lines = [f"# Build report: {report['adapter']}", "", "| category | operations |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in report["by_category"].items()]
    lines += ["", f"## Needs review ({len(report['ambiguities'])})", ""]
    lines += [f"- `{a['tool']}` → {a['category']}: {'; '.join(a['reasons'])}" for a in report["ambiguities"]] or ["- none"]
    lines += [
        "",
        "## Classification",
        "",
        "| tool | operation | category | confidence | danger | why |",
        "|---|---|---|---|---|---|",
    ]
    for e in report["operations"]:
        why = "; ".join(report["why"].get(e["tool"], []))
        lines.append(
            f"| `{e['tool']}` | `{e['operation']}` | {e['category']} | {e['confidence']} | {e['danger_level']} | {why} |"
        )
    if report["excluded"]:
        lines += ["", "## Excluded", ""] + [f"- `{t}`" for t in report["excluded"]]
    ro = report.get("read_only_excluded") or {}
    lines += ["", f"## Not served under --read-only ({len(ro)})", ""]
    lines += [f"- `{t}`: {why}" for t, why in ro.items()] or ["- none: every operation is a guaranteed read"]
    return "\n".join(lines) + "\n"


def write_schema(schema: Mapping[str, Any], path: str | Path) -> None:
    """JSON for ``.json``; canonical Markdown + YAML front matter for ``.md`` (REQ-ADPT-019)."""
    p = Path(path)
    if p.suffix == ".md":
        front = yaml.safe_dump(dict(schema), sort_keys=False, allow_unicode=True)
        p.write_text(f"---\n{front}---\n\n# {schema['name']}\n\n{schema['description']}\n", encoding="utf-8")
    elif p.suffix in (".yaml", ".yml"):
        p.write_text(yaml.safe_dump(dict(schema), sort_keys=False, allow_unicode=True), encoding="utf-8")
    else:
        p.write_text(json.dumps(schema, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


class BuildError(ValueError):
    """What ``mcpaql schema build`` refuses: one ``"<field path>: <problem>"`` line per problem."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


def build_checked(
    bundle_path: str | Path, overrides: str | Path | None, out: str | Path
) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """``schema build``: read and check the bundle (its documented shape), build, check the
    result the way ``mcpaql serve`` will load it (strict on output), then write it. Returns
    ``(schema, report, warnings)``; raises :class:`BuildError` instead of writing anything bad."""
    from ...protocol.registry import SchemaError
    from .bundle_shape import bundle_problems
    from .check import check_adapter_schema

    name = Path(bundle_path).name
    try:
        data = json.loads(Path(bundle_path).read_text(encoding="utf-8"))
    except OSError as e:
        raise BuildError([f"{name}: cannot be read ({e.strerror})"]) from None
    except (ValueError, RecursionError) as e:
        raise BuildError([f"{name}: is not JSON ({str(e)[:120]})"]) from None
    errors, warnings = bundle_problems(data)
    if errors:
        raise BuildError(errors)
    try:
        ov = load_overrides(overrides)
    except (OSError, ValueError, yaml.YAMLError) as e:
        raise BuildError([f"overrides: {str(e).splitlines()[0][:160]}"]) from None
    try:
        schema, report = build_schema(data, ov)
    except (ValueError, TypeError, AttributeError, KeyError) as e:  # an override that names what does not exist
        raise BuildError([f"overrides: {e}"]) from None
    try:
        warnings += check_adapter_schema(json.loads(json.dumps(schema)))
    except SchemaError as e:
        raise BuildError([f"built adapter schema: {e.message}"]) from None
    url = str(schema["target"]["base_url"])
    if not url.startswith(("http://", "https://", "stdio:")):
        warnings.append(
            f"target.base_url: '{url[:60]}' says nothing about how to reach the server, so 'mcpaql serve' "
            "will refuse the file (capture the live server, or set base_url to its http(s):// URL or "
            "'stdio:COMMAND')"
        )
    write_schema(schema, out)
    return schema, report, warnings
