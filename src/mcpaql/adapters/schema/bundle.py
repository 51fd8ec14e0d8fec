"""Discovery bundles (REQ-DISC-*; CHECKLIST Part E): capture an MCP server's tools as the
spec's auditable intermediate artifact.

``raw_capture`` keeps the ``tools/list`` entries exactly as received; ``source`` holds the
capture context with secrets redacted (header values never persisted; a bearer token is
referenced by its environment variable); ``normalized_bundle`` holds the generator-facing
interpretation with provenance for every inferred field and warnings for ambiguity.

Capture is non-side-effecting: only ``initialize`` and ``tools/list`` (REQ-DISC-013).

Transport note: the current bundle contract enumerates ``streamable_http`` only. A capture
over stdio records ``transport: "stdio"`` and a ``stdio:`` URI rather than pretending to be
HTTP; such bundles validate against the schema except for that enum value.
"""

from __future__ import annotations

import json
import re
import shlex
import urllib.parse
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from ...protocol.schema import pascal, resolve, type_label
from ..upstream.classify import classify, snake_name
from ..upstream.runtime import Upstream, UpstreamSpec

BUNDLE_VERSION = "1.0.0-draft"
_PARAM_KEYS = ("minimum", "maximum", "pattern", "format")


def stdio_url(argv: list[str] | tuple[str, ...]) -> str:
    """A ``stdio:`` URI for a command line (the bundle's ``server_url`` must be a URI)."""
    return "stdio:" + urllib.parse.quote(shlex.join(argv), safe="/@:=.,+-_")


def argv_from_stdio_url(url: str) -> list[str]:
    return shlex.split(urllib.parse.unquote(url.removeprefix("stdio:")))


def _auth(headers: Mapping[str, str] | None) -> dict[str, Any]:
    """Redacted auth metadata: the header and prefix, the env var a ``${VAR}`` value names."""
    for k, v in (headers or {}).items():
        if k.lower() == "authorization":
            m = re.match(r"^(Bearer\s+)(.*)$", v, re.I)
            if m:
                auth: dict[str, Any] = {"type": "bearer", "header": k, "prefix": m.group(1)}
                ref = re.fullmatch(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", m.group(2).strip())
                if ref:
                    auth["token_env"] = ref.group(1)
                return auth
    return {"type": "none"}


def source_for(
    spec: UpstreamSpec | None,
    *,
    name: str,
    server: Mapping[str, Any] | None = None,
    captured_at: str | None = None,
    extra_config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    config: dict[str, Any] = dict(extra_config or {})
    if spec is not None and spec.command is not None:
        url, transport = stdio_url([spec.command, *spec.args]), "stdio"
        config["command"] = [spec.command, *spec.args]
        if spec.env:
            config["env"] = {k: "<redacted>" for k in spec.env}
        auth = {"type": "none"}
    elif spec is not None:
        url, transport = str(spec.url), "streamable_http"
        if spec.headers:
            config["headers"] = {k: "<redacted>" for k in spec.headers}
        auth = _auth(spec.headers)
    else:
        url, transport, auth = (
            str(config.pop("server_url", f"stdio:{name}")),
            str(config.pop("transport", "stdio")),
            {"type": "none"},
        )
    src: dict[str, Any] = {
        "name": name,
        "server_url": url,
        "transport": transport,
        "captured_at": captured_at or datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "auth": auth,
        "capture_config_redacted": config,
    }
    if server:
        s = {k: str(server[k]) for k in ("name", "version", "title") if server.get(k)}
        if s:
            src["server"] = s
    return src


def _json_type(s: Mapping[str, Any]) -> str:
    t = s.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), "string")
    if isinstance(t, str):
        return t
    for key in ("anyOf", "oneOf"):
        for v in s.get(key) or []:
            if isinstance(v, Mapping) and v.get("type") not in (None, "null"):
                return _json_type(v)
    if "properties" in s:
        return "object"
    if "enum" in s:
        return "string"
    return "string"


def normalize_tool(tool: Mapping[str, Any], warnings: list[dict[str, Any]], used: set[str]) -> dict[str, Any]:
    name = str(tool["name"])
    c = classify(tool)
    op = snake_name(name)
    base, i = op, 2
    while op in used:
        op = f"{base}_{i}"
        i += 1
    used.add(op)
    if op != name:
        warnings.append(
            {
                "code": "OPERATION_NAME_NORMALIZED",
                "severity": "info",
                "tool": name,
                "field": "name",
                "message": f"'{name}' exposed as '{op}' (snake_case, REQ-CLS-005)",
            }
        )
    schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), Mapping) else None
    if schema is None:
        warnings.append(
            {
                "code": "INPUT_SCHEMA_MISSING",
                "severity": "warning",
                "tool": name,
                "field": "inputSchema",
                "message": "the tool declares no inputSchema; it takes no parameters",
            }
        )
    resolved = resolve(dict(schema or {}), pascal(op, "input"))
    required = set((schema or {}).get("required") or [])
    params: list[dict[str, Any]] = []
    for original, ps in (resolved.get("properties") or {}).items():
        ps = ps if isinstance(ps, Mapping) else {}
        pname = snake_name(original)
        rec: dict[str, Any] = {
            "name": pname,
            "original_name": original,
            "type": _json_type(ps),
            "required": original in required,
            "source_path": f"inputSchema.properties.{original}",
        }
        if ps.get("description"):
            rec["description"] = str(ps["description"])
        if "default" in ps:
            rec["default"] = ps["default"]
        if isinstance(ps.get("enum"), list):
            if all(isinstance(v, str) for v in ps["enum"]):
                rec["enum"] = list(ps["enum"])
            else:
                warnings.append(
                    {
                        "code": "PARAM_ENUM_NOT_STRING",
                        "severity": "info",
                        "tool": name,
                        "field": original,
                        "message": "non-string enum values are kept in raw_capture only",
                    }
                )
        for k in _PARAM_KEYS:
            if k in ps and (k not in ("minimum", "maximum") or isinstance(ps[k], int | float)):
                rec[k] = ps[k]
        if pname != original:
            warnings.append(
                {
                    "code": "PARAM_NAME_NORMALIZED",
                    "severity": "info",
                    "tool": name,
                    "field": original,
                    "message": f"parameter '{original}' exposed as '{pname}' (forwarded as '{original}')",
                }
            )
        # cast: ps comes from decoded JSON, so the Mapping is a dict
        if rec["type"] in ("object", "array") and type_label(cast(dict[str, Any], ps)) not in ("object", "array"):
            warnings.append(
                {
                    "code": "PARAM_SCHEMA_NESTED",
                    "severity": "info",
                    "tool": name,
                    "field": original,
                    "message": f"nested shape {type_label(cast(dict[str, Any], ps))} is kept in raw_capture (the adapter schema "
                    "cannot represent nested properties)",
                }
            )
        params.append(rec)
    if c.needs_review:
        for reason in c.review_reasons:
            warnings.append(
                {
                    "code": "ENDPOINT_AMBIGUOUS",
                    "severity": "warning",
                    "tool": name,
                    "field": "endpoint",
                    "message": reason,
                    "heuristic": "verb-grammar+annotations",
                }
            )
    ann = tool.get("annotations") if isinstance(tool.get("annotations"), Mapping) else {}
    title = tool.get("title") or (ann or {}).get("title")
    prov: dict[str, Any] = {
        "name": "name",
        "input_schema_present": schema is not None,
        "inference_sources": {
            "operation_name": "direct_source_metadata" if op == name else "deterministic_normalization",
            "description": "direct_source_metadata" if tool.get("description") else "deterministic_normalization",
            "endpoint": c.source,
            "danger_level": c.danger_source,
            "maps_to": "deterministic_normalization",
        },
    }
    if tool.get("description"):
        prov["description"] = "description"
    if ann:
        prov["annotations"] = sorted(ann)
    rec_op: dict[str, Any] = {
        "source_tool_name": name,
        "operation_name": op,
        "description": " ".join(str(tool.get("description") or title or op.replace("_", " ")).split()),
        "endpoint": c.category.value,
        "endpoint_confidence": c.confidence,
        "danger_level": c.danger_level,
        "needs_review": c.needs_review,
        "review_reasons": list(c.review_reasons),
        "params": params,
        "maps_to": f"MCP tools/call {name}",
        "returns": {"type": "object", "name": pascal(op, "result"), "description": "Wrapped tool result"},
        "provenance": prov,
    }
    if title:
        rec_op["title"] = str(title)
    return rec_op


def make_bundle(
    tools: list[dict[str, Any]], source: dict[str, Any], raw_extra: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    warnings: list[dict[str, Any]] = []
    used: set[str] = set()
    ops = [normalize_tool(t, warnings, used) for t in tools]
    raw: dict[str, Any] = {"tools": tools, **dict(raw_extra or {})}
    return {
        "schema_version": BUNDLE_VERSION,
        "source": source,
        "raw_capture": raw,
        "normalized_bundle": {"operations": ops, "warnings": warnings},
    }


def capture_fixture(path: str | Path, name: str | None = None) -> dict[str, Any]:
    """A bundle from a saved ``tools/list`` (and its ``.capture-meta.json`` when present)."""
    p = Path(path)
    data = json.loads(p.read_text(encoding="utf-8"))
    tools = list(data["tools"] if isinstance(data, dict) else data)
    extra = {k: v for k, v in data.items() if k != "tools"} if isinstance(data, dict) else {}
    stem = p.name.removesuffix(".json").removesuffix(".tools-list")
    meta_path = p.with_name(f"{stem}.capture-meta.json")
    meta = json.loads(meta_path.read_text()) if meta_path.exists() else {}
    config: dict[str, Any] = {"fixture": p.name}
    for k in ("package", "client_sdk", "client_mode", "protocol_version", "pages"):
        if k in meta:
            config[k] = meta[k]
    if meta.get("url"):
        config["server_url"], config["transport"] = meta["url"], "streamable_http"
    elif meta.get("argv"):
        config["server_url"], config["transport"] = stdio_url(meta["argv"]), "stdio"
        config["command"] = meta["argv"]
    else:  # how it was captured is not recorded: say so rather than guess
        config["server_url"], config["transport"] = f"file:{urllib.parse.quote(p.name)}", "unknown"
    src = source_for(
        None,
        name=name or meta.get("name") or stem,
        server=meta.get("server_info"),
        captured_at=meta.get("captured_at"),
        extra_config=config,
    )
    return make_bundle(tools, src, extra)


async def capture_live(spec: UpstreamSpec) -> dict[str, Any]:
    """Connect, read ``initialize`` metadata and ``tools/list`` (nothing is called), disconnect."""
    async with Upstream(spec) as up:
        src = source_for(
            spec,
            name=spec.name,
            server=up.server_info,
            extra_config={"protocol_version": up.protocol_version, "timeout_ms": int(spec.connect_timeout * 1000)},
        )
        if up.transport_used == "sse":
            src["transport"] = "sse"  # the legacy fallback: recorded as what it was
        return make_bundle(list(up.tools), src)


def capture(target: UpstreamSpec | str | Path, out: str | Path | None = None, *, name: str | None = None) -> dict[str, Any]:
    """``capture`` for the CLI: a fixture path or a live upstream → bundle (written to ``out``)."""
    if isinstance(target, UpstreamSpec):
        import anyio

        bundle = anyio.run(capture_live, target)
    else:
        bundle = capture_fixture(target, name)
    if out is not None:
        Path(out).write_text(json.dumps(bundle, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    return bundle
