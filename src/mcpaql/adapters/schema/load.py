"""Load an adapter-schema file (JSON, YAML, or the canonical Markdown + YAML front matter) into
a :class:`Registry` and run it (``mcpaql serve adapter.json``).

Two kinds of ``maps_to`` are executed:

* ``MCP tools/call <tool>``: the operation forwards to an upstream MCP server reached through
  ``target.base_url`` (an ``http(s)://`` URL for streamable HTTP, or a ``stdio:`` URI holding
  the command line). The reviewed name, category, description and danger level come from the
  file; the full nested parameter shapes come from the live ``tools/list`` (the adapter schema
  can only hold flat parameters).
* ``METHOD /path/{placeholder}`` (ELEM §7.4): an HTTP call to ``base_url`` + path; placeholders
  are substituted from parameters, the remaining ones go to the query string (GET, DELETE) or
  the JSON body. Status codes map to error codes per REQ-ERR-007.

Credentials are never read from the file: ``auth.token_env`` / ``auth.key_env`` name
environment variables (REQ-ADPT-017).
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import yaml

from ...config import Config
from ...protocol.categories import Category
from ...protocol.errors import MCPAQLError
from ...protocol.operations import NO_DEFAULT, OperationSpec, ParamSpec, TypeRef
from ...protocol.registry import NAME_RE, Registry, SchemaError
from ...safety.install import SafetyConfig
from ..holder import EngineHolderBase
from ..http import http_error
from ..request import build_url, path_segment
from ..upstream.classify import Classification
from ..upstream.messages import Redactor, argument_strings
from ..upstream.ops import CTX_PARAM, CallFn, spec_from_tool
from ..upstream.runtime import Upstream, UpstreamSpec
from .bundle import argv_from_stdio_url

log = logging.getLogger("mcpaql.adapter_schema")
_MCP_RE = re.compile(r"^MCP\s+tools/call\s+(\S+)$")
_HTTP_RE = re.compile(r"^(GET|POST|PUT|PATCH|DELETE)\s+(/\S*)$")
_TOP_KEYS = {"name", "type", "version", "description", "target", "operations", "auth", "trust", "rate_limits"}
_OP_KEYS = {"name", "maps_to", "description", "params", "response", "pagination", "supports_fields", "danger_level",
            "requires_confirmation", "non_idempotent"}
_PARAM_KEYS = {"type", "required", "description", "default", "enum", "minimum", "maximum", "pattern", "format"}
# The enums of adapter-schema TargetConfig / OperationDefinition / ParameterDefinition / AuthConfig
# (CHECKLIST D.2; REQ-ADPT-007/010/014/016).
_TARGET_ENUMS = {"transport": ("http", "websocket", "serial", "native"), "protocol": ("rest", "graphql", "grpc", "custom"),
                 "serialization": ("json", "xml", "protobuf", "msgpack", "form")}
_PARAM_TYPES = ("string", "integer", "number", "boolean", "array", "object")
_DANGER_LEVELS = ("safe", "reversible", "destructive", "dangerous", "forbidden")
_PAGINATION_STYLES = ("offset", "cursor", "page")
_AUTH_TYPES = ("none", "api_key", "bearer", "basic", "oauth2")
_URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")


def parse_adapter_file(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SchemaError("SCHEMA_MISSING_FIELD", f"cannot read adapter file '{p.name}': {e.strerror}") from None
    try:
        if p.suffix == ".json":
            data = json.loads(text)
        elif text.startswith("---"):
            m = re.match(r"^---[ \t]*\n(.*?)\n---[ \t]*(\n|$)", text, re.S)  # front matter ends at a bare '---'
            data = yaml.safe_load(m.group(1) if m else text)
        else:
            data = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError) as e:
        raise SchemaError("SCHEMA_INVALID_TYPE", f"adapter file '{p.name}' is not valid JSON/YAML: {e}") from None
    if not isinstance(data, dict):
        raise SchemaError("SCHEMA_INVALID_TYPE", f"adapter file '{p.name}' must hold a mapping")
    return data


def _need(cond: bool, code: str, path: str, message: str) -> None:
    if not cond:
        raise SchemaError(code, f"{path}: {message}")


_TRUST_KEYS = {"level", "verified_by", "verification_date"}
_TRUST_LEVELS = ("untrusted", "low", "medium", "high", "verified")


def _check_trust_and_rate_limits(data: dict[str, Any]) -> None:
    """REQ-ADPT-018: the closed ``trust`` and ``rate_limits`` blocks (both are enforced when served)."""
    if "trust" in data:
        t = data["trust"]
        _need(isinstance(t, dict), "SCHEMA_INVALID_TYPE", "trust", "must be an object")
        _need("level" in t, "SCHEMA_MISSING_FIELD", "trust.level", "is required")
        _need(not set(t) - _TRUST_KEYS, "SCHEMA_INVALID_TYPE", "trust", f"unknown key(s) {sorted(set(t) - _TRUST_KEYS)}")
        _need(t["level"] in _TRUST_LEVELS, "SCHEMA_INVALID_TYPE", "trust.level", f"must be one of {', '.join(_TRUST_LEVELS)}")
        if "verification_date" in t:
            _need(isinstance(t["verification_date"], str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", t["verification_date"])
                  is not None, "SCHEMA_INVALID_TYPE", "trust.verification_date", "must be a date, e.g. '2026-01-31'")
        if "verified_by" in t:
            _need(isinstance(t["verified_by"], str), "SCHEMA_INVALID_TYPE", "trust.verified_by", "must be a string")
    if "rate_limits" in data:
        r = data["rate_limits"]
        _need(isinstance(r, dict), "SCHEMA_INVALID_TYPE", "rate_limits", "must be an object")
        for k, v in r.items():
            _need(k in _RATE_KEYS, "SCHEMA_INVALID_TYPE", f"rate_limits.{k}",
                  f"unknown key (use {', '.join(_RATE_KEYS)})")
            _need(isinstance(v, int) and not isinstance(v, bool) and v >= 1, "SCHEMA_INVALID_TYPE", f"rate_limits.{k}",
                  "must be an integer >= 1")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _check_target_and_auth(data: dict[str, Any]) -> None:
    t = data["target"]
    _need(isinstance(t, dict), "SCHEMA_INVALID_TYPE", "target", "must be an object")
    for k in ("base_url", "transport", "protocol", "serialization"):
        _need(k in t, "SCHEMA_MISSING_FIELD", f"target.{k}", "is required")
    extra = set(t) - {"base_url", *_TARGET_ENUMS}
    _need(not extra, "SCHEMA_INVALID_TYPE", "target", f"unknown key(s) {sorted(extra)}")
    _need(isinstance(t["base_url"], str) and _URI_RE.match(t["base_url"]) is not None, "SCHEMA_INVALID_TYPE",
          "target.base_url", "must be a URI, e.g. 'https://api.example.com/v1'")
    for k, allowed in _TARGET_ENUMS.items():
        _need(t[k] in allowed, "SCHEMA_INVALID_TYPE", f"target.{k}", f"must be one of {', '.join(allowed)}")
    if "auth" not in data:
        return
    a = data["auth"]
    _need(isinstance(a, dict), "SCHEMA_INVALID_TYPE", "auth", "must be an object")
    _need("type" in a, "SCHEMA_MISSING_FIELD", "auth.type", "is required")
    _need(a["type"] in _AUTH_TYPES, "SCHEMA_INVALID_TYPE", "auth.type", f"must be one of {', '.join(_AUTH_TYPES)}")
    if a["type"] == "bearer":
        _need(isinstance(a.get("token_env"), str) and bool(a["token_env"]), "SCHEMA_MISSING_FIELD", "auth.token_env",
              "is required for bearer auth (the environment variable holding the token)")
    if a["type"] == "api_key":
        _need(isinstance(a.get("key_env") or a.get("token_env"), str), "SCHEMA_MISSING_FIELD", "auth.key_env",
              "is required for api_key auth (the environment variable holding the key)")


def _check_operation_values(op: dict[str, Any], where: str) -> None:
    """REQ-ADPT-010: the optional keys' value shapes."""
    for k in ("supports_fields", "requires_confirmation", "non_idempotent"):
        if k in op:
            _need(isinstance(op[k], bool), "SCHEMA_INVALID_TYPE", f"{where}.{k}", "must be true or false")
    if "danger_level" in op:
        _need(op["danger_level"] in _DANGER_LEVELS, "SCHEMA_INVALID_TYPE", f"{where}.danger_level",
              f"must be one of {', '.join(_DANGER_LEVELS)}")
    for k in ("description",):
        if k in op:
            _need(isinstance(op[k], str), "SCHEMA_INVALID_TYPE", f"{where}.{k}", "must be a string")
    if "response" in op:
        _need(isinstance(op["response"], dict), "SCHEMA_INVALID_TYPE", f"{where}.response", "must be an object")
    if "params" in op:
        _need(isinstance(op["params"], dict), "SCHEMA_INVALID_TYPE", f"{where}.params", "must be an object")
    if "pagination" in op:
        pg = op["pagination"]
        _need(isinstance(pg, dict), "SCHEMA_INVALID_TYPE", f"{where}.pagination", "must be an object")
        extra = set(pg) - {"style", "default_limit", "max_limit"}
        _need(not extra, "SCHEMA_INVALID_TYPE", f"{where}.pagination", f"unknown key(s) {sorted(extra)}")
        if "style" in pg:
            _need(pg["style"] in _PAGINATION_STYLES, "SCHEMA_INVALID_TYPE", f"{where}.pagination.style",
                  f"must be one of {', '.join(_PAGINATION_STYLES)}")
        for k in ("default_limit", "max_limit"):
            if k in pg:
                _need(isinstance(pg[k], int) and not isinstance(pg[k], bool) and pg[k] >= 1, "SCHEMA_INVALID_TYPE",
                      f"{where}.pagination.{k}", "must be an integer >= 1")


def _check_param_values(pd: dict[str, Any], where: str) -> None:
    """REQ-ADPT-014: the ParameterDefinition value shapes."""
    _need(pd["type"] in _PARAM_TYPES, "SCHEMA_INVALID_TYPE", f"{where}.type", f"must be one of {', '.join(_PARAM_TYPES)}")
    if "required" in pd:
        _need(isinstance(pd["required"], bool), "SCHEMA_INVALID_TYPE", f"{where}.required", "must be true or false")
    if "enum" in pd:
        _need(isinstance(pd["enum"], list) and bool(pd["enum"]) and all(isinstance(v, str) for v in pd["enum"]),
              "SCHEMA_INVALID_TYPE", f"{where}.enum", "must be a non-empty list of strings")
    for k in ("minimum", "maximum"):
        if k in pd:
            _need(_is_number(pd[k]), "SCHEMA_INVALID_TYPE", f"{where}.{k}", "must be a number")
    for k in ("description", "format", "pattern"):
        if k in pd:
            _need(isinstance(pd[k], str), "SCHEMA_INVALID_TYPE", f"{where}.{k}", "must be a string")
    if isinstance(pd.get("pattern"), str):
        try:
            re.compile(pd["pattern"])
        except re.error as e:
            raise SchemaError("SCHEMA_INVALID_TYPE", f"{where}.pattern: is not a valid regular expression ({e})") from None


def check_adapter_schema(data: dict[str, Any]) -> None:
    """The closed structure of adapter-schema.schema.json, with field paths in the errors (GEN §2.2)."""
    for k in ("name", "type", "version", "description", "target", "operations"):
        _need(k in data, "SCHEMA_MISSING_FIELD", k, "is required")
    extra = set(data) - _TOP_KEYS
    _need(not extra, "SCHEMA_INVALID_TYPE", ", ".join(sorted(extra)), "unknown top-level key(s)")
    _need(isinstance(data["name"], str) and re.fullmatch(r"[a-z][a-z0-9-]*[a-z0-9]", data["name"]) is not None
          and len(data["name"]) <= 64, "SCHEMA_INVALID_NAME", "name",
          "must match ^[a-z][a-z0-9-]*[a-z0-9]$ (2-64 characters)")
    _need(isinstance(data["description"], str), "SCHEMA_INVALID_TYPE", "description", "must be a string")
    _need(data["type"] == "adapter", "SCHEMA_INVALID_TYPE", "type", "must be 'adapter'")
    _need(isinstance(data["version"], str) and re.fullmatch(r"\d+\.\d+\.\d+(-[a-z0-9.]+)?", data["version"]) is not None,
          "SCHEMA_INVALID_TYPE", "version", "must be SemVer, e.g. '1.0.0'")
    _check_target_and_auth(data)
    _check_trust_and_rate_limits(data)
    ops = data["operations"]
    _need(isinstance(ops, dict), "SCHEMA_INVALID_TYPE", "operations", "must be an object")
    seen: set[str] = set()
    for group, items in ops.items():
        _need(group in ("create", "read", "update", "delete", "execute"), "SCHEMA_INVALID_TYPE", f"operations.{group}",
              "must be one of create, read, update, delete, execute")
        _need(isinstance(items, list), "SCHEMA_INVALID_TYPE", f"operations.{group}", "must be an array")
        for i, op in enumerate(items):
            where = f"operations.{group}[{i}]"
            _need(isinstance(op, dict), "SCHEMA_INVALID_TYPE", where, "must be an object")
            for k in ("name", "maps_to"):
                _need(k in op, "SCHEMA_MISSING_FIELD", f"{where}.{k}", "is required")
            _need(not set(op) - _OP_KEYS, "SCHEMA_INVALID_TYPE", where, f"unknown key(s) {sorted(set(op) - _OP_KEYS)}")
            _check_operation_values(op, where)
            _need(bool(NAME_RE.match(str(op["name"]))), "SCHEMA_INVALID_NAME", f"{where}.name", "must be snake_case")
            _need(op["name"] not in seen, "SCHEMA_DUPLICATE_NAME", f"{where}.name", f"'{op['name']}' is defined twice")
            seen.add(op["name"])
            m = _HTTP_RE.match(str(op["maps_to"]))
            _need(m is not None or _MCP_RE.match(str(op["maps_to"])) is not None, "SCHEMA_INVALID_TYPE",
                  f"{where}.maps_to", "must be 'METHOD /path' or 'MCP tools/call <tool>'")
            params = op.get("params") or {}
            for pname, pd in params.items():
                _need(isinstance(pd, dict) and "type" in pd, "SCHEMA_MISSING_FIELD", f"{where}.params.{pname}.type",
                      "is required")
                _need(not set(pd) - _PARAM_KEYS, "SCHEMA_INVALID_TYPE", f"{where}.params.{pname}",
                      f"unknown key(s) {sorted(set(pd) - _PARAM_KEYS)}")
                _check_param_values(pd, f"{where}.params.{pname}")
            if m:
                for ph in re.findall(r"{([^}]+)}", m.group(2)):
                    _need(ph in params, "SCHEMA_UNRESOLVED_REF", f"{where}.maps_to", f"placeholder '{{{ph}}}' has no param")


@dataclass
class AdapterSchema:
    data: dict[str, Any]
    path: Path | None = None

    @property
    def name(self) -> str:
        return str(self.data["name"])

    def operations(self) -> list[tuple[Category, dict[str, Any]]]:
        return [(Category(g.upper()), op) for g, items in self.data["operations"].items() for op in items]

    @property
    def needs_mcp(self) -> bool:
        return any(_MCP_RE.match(str(op["maps_to"])) for _, op in self.operations())

    def upstream_spec(self, name: str | None = None) -> UpstreamSpec:
        """The MCP upstream ``target.base_url`` points at (headers from ``auth``, by env reference)."""
        url = str(self.data["target"]["base_url"])
        up = name or re.sub(r"[^a-z0-9_-]", "_", self.name)
        if url.startswith("stdio:"):
            return UpstreamSpec.from_argv(argv_from_stdio_url(url), name=up)
        return UpstreamSpec.from_url(url, name=up, headers=self._headers(env_refs=True) or None)

    def _headers(self, env_refs: bool = False) -> dict[str, str]:
        auth = self.data.get("auth") or {}
        kind = auth.get("type", "none")
        if kind == "bearer" and auth.get("token_env"):
            val = f"${{{auth['token_env']}}}" if env_refs else os.environ.get(auth["token_env"], "")
            return {auth.get("header", "Authorization"): f"{auth.get('prefix', 'Bearer ')}{val}"}
        if kind == "api_key" and (auth.get("key_env") or auth.get("token_env")):
            env = auth.get("key_env") or auth.get("token_env")
            val = f"${{{env}}}" if env_refs else os.environ.get(env, "")
            return {auth.get("header_name") or auth.get("header") or "X-API-Key": f"{auth.get('prefix', '')}{val}"}
        return {}

    def registry(self, mcp_call: CallFn | None = None, live_tools: list[dict[str, Any]] | None = None,
                 http: httpx.AsyncClient | None = None) -> Registry:
        reg = Registry(self.name, version=str(self.data["version"]), description=str(self.data["description"]),
                       open_world=True)
        by_name = {str(t["name"]): t for t in live_tools or []}
        for cat, op in self.operations():
            m = _MCP_RE.match(str(op["maps_to"]))
            if m:
                if mcp_call is None:
                    raise SchemaError("SCHEMA_UNRESOLVED_REF", f"operation '{op['name']}' needs an MCP upstream")
                reg.add(self._mcp_spec(cat, op, m.group(1), by_name.get(m.group(1)), mcp_call))
            else:
                reg.add(self._http_spec(cat, op, http))
        return reg

    def _flat_params(self, op: dict[str, Any]) -> list[ParamSpec]:
        out = []
        for pname, pd in (op.get("params") or {}).items():
            schema = {k: v for k, v in pd.items() if k not in ("required", "default", "description")}
            out.append(ParamSpec(pname, schema, required=bool(pd.get("required")), description=pd.get("description"),
                                 default=pd.get("default", NO_DEFAULT)))
        return out

    def _mcp_spec(self, cat: Category, op: dict[str, Any], tool: str, live: dict[str, Any] | None, call: CallFn
                  ) -> OperationSpec:
        danger = str(op.get("danger_level", "reversible"))
        c = Classification(cat, "high", danger, ("adapter schema",), source="manual_override")
        base = live or {"name": tool, "description": op.get("description"), "inputSchema": {}}
        spec = spec_from_tool(base, call, name=str(op["name"]), classification=c)
        if live is None:
            spec = replace(spec, params=tuple(replace(p, map_to=None) for p in self._flat_params(op)))
        return replace(spec, description=str(op.get("description") or spec.description),
                       dangerous=danger in ("dangerous", "forbidden") or bool(op.get("requires_confirmation")),
                       extensions={**spec.extensions, "maps_to": op["maps_to"],
                                   "requires_confirmation": bool(op.get("requires_confirmation"))})

    def _http_spec(self, cat: Category, op: dict[str, Any], http: httpx.AsyncClient | None) -> OperationSpec:
        m = _HTTP_RE.match(str(op["maps_to"]))
        assert m is not None
        method, path = m.group(1), m.group(2)
        base = str(self.data["target"]["base_url"]).rstrip("/")
        placeholders = set(re.findall(r"{([^}]+)}", path))
        headers = self._headers()
        name = str(op["name"])

        async def handler(**kwargs: Any) -> Any:
            kwargs.pop(CTX_PARAM, None)
            # One segment per placeholder, dot segments refused: the route is the one the file names.
            url = build_url(httpx.URL(base), path, {k: path_segment(k, kwargs[k]) for k in placeholders if k in kwargs},
                            name)
            rest = {k: v for k, v in kwargs.items() if k not in placeholders}
            client = http or httpx.AsyncClient(timeout=30)
            try:
                if method in ("GET", "DELETE"):
                    resp = await client.request(method, url, params=rest or None, headers=headers)
                else:
                    resp = await client.request(method, url, json=rest, headers=headers)
            except httpx.HTTPError as e:
                raise MCPAQLError("INTERNAL_ERROR", f"Internal error: 'request to the target API failed ({type(e).__name__})'",
                                  {"operation": name}) from None
            finally:
                if http is None:
                    await client.aclose()
            if resp.status_code >= 400:
                raise http_error(resp, name, redact=Redactor(headers.values()), keep=argument_strings(kwargs))
            if not resp.content:
                return None
            try:
                return resp.json()
            except ValueError:
                return resp.text

        danger = str(op.get("danger_level", "reversible"))
        return OperationSpec(
            name=name, category=cat, description=str(op.get("description") or name.replace("_", " ")), handler=handler,
            params=tuple(self._flat_params(op)), returns=TypeRef("Response", "object"), danger_level=danger,
            dangerous=danger in ("dangerous", "forbidden") or bool(op.get("requires_confirmation")),
            context_param=CTX_PARAM, is_async=True, origin=op["maps_to"],
            extensions={"maps_to": op["maps_to"], "requires_confirmation": bool(op.get("requires_confirmation"))},
        )


_SECRET_KEYS = re.compile(r"(token|secret|password|passwd|api_?key|key)$", re.I)


def schema_warnings(data: dict[str, Any], filename: str | None = None) -> list[str]:
    """Things a runtime SHOULD warn about: embedded credentials (REQ-ADPT-017), a plain-HTTP
    ``base_url`` that is not local (REQ-ADPT-008) and a description outside 10-200 characters
    (REQ-ADPT-006)."""
    out = []
    for k, v in (data.get("auth") or {}).items():
        if _SECRET_KEYS.search(k) and not k.endswith("_env") and isinstance(v, str) and v:
            out.append(f"auth.{k} looks like an embedded credential: reference an environment variable "
                       f"({k}_env) instead")
    name = data.get("name")
    if filename is not None and isinstance(name, str) and not filename.startswith(f"{name}-adapter."):
        # ELEM §1.3 (REQ-ADPT-003) names the file after the adapter; a warning, not an error, so
        # `mcpaql serve adapter.json` keeps working
        out.append(f"the file is conventionally named '{name}-adapter.md' (or .json/.yaml) after the adapter")
    desc = data.get("description")
    if isinstance(desc, str) and not 10 <= len(desc.strip()) <= 200:  # REQ-ADPT-006 (ELEM §4.4)
        out.append(f"description is {len(desc.strip())} characters; describe the target API and its main "
                   "capabilities in 10-200 characters")
    url = str(data.get("target", {}).get("base_url", ""))
    host = urllib.parse.urlsplit(url).hostname or ""
    if url.startswith("http://") and host not in ("localhost", "127.0.0.1", "::1"):
        out.append(f"target.base_url '{url}' is plain HTTP; use HTTPS outside local development")
    return out


def load_adapter_schema(path: str | Path) -> AdapterSchema:
    """Parse and check an adapter-schema file (raises :class:`SchemaError` with a field path)."""
    data = parse_adapter_file(path)
    check_adapter_schema(data)
    for w in schema_warnings(data, Path(path).name):
        log.warning("%s: %s", Path(path).name, w)
    return AdapterSchema(data, Path(path))


class AdapterRuntime(EngineHolderBase):
    """``async with serve_adapter("adapter.json") as rt: rt.engine`` — connects the MCP upstream
    when the schema needs one and builds the engine."""

    not_open_message = "use 'async with serve_adapter(...)'"

    def __init__(self, schema: AdapterSchema, config: Config | None = None, upstream: UpstreamSpec | None = None,
                 engine_kwargs: dict[str, Any] | None = None, safety: SafetyConfig | dict[str, Any] | None = None) -> None:
        """``safety`` switches the safety layer on (see :func:`safety_settings` for how the file's
        own ``trust`` and ``rate_limits`` blocks combine with it)."""
        super().__init__(safety=safety_settings(schema, safety), engine_kwargs=engine_kwargs)
        self.schema = schema
        self.name = schema.name
        self.config = config
        self.upstream_spec = upstream
        self.upstream: Upstream | None = None
        self._http: httpx.AsyncClient | None = None

    async def _open(self, stack: contextlib.AsyncExitStack) -> None:
        self._http = await stack.enter_async_context(httpx.AsyncClient(timeout=30))
        if self.schema.needs_mcp:
            spec = self.upstream_spec or self.schema.upstream_spec()
            self.upstream = await stack.enter_async_context(Upstream(spec, on_tools_changed=self._changed))

    def registry(self) -> Registry:
        up = self.upstream
        return self.schema.registry(up.call if up else None, up.tools if up else None, self._http)

    async def _changed(self, _up: Upstream) -> None:
        await self.rebuild()  # e.g. the MCP server listens, and tells its clients


# adapter-schema RateLimitConfig → the safety layer's fixed-window rules. ``burst_limit`` caps
# calls within any one second (the schema gives no window for it).
_RATE_KEYS = {"requests_per_minute": "minute", "requests_per_hour": "hour", "requests_per_day": "day", "burst_limit": "second"}


def rate_rules(block: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The file's ``rate_limits`` block as safety rate rules (adapter-wide)."""
    return [{"limit": int(v), "window": _RATE_KEYS[k], "scope": "global"} for k, v in (block or {}).items() if k in _RATE_KEYS]


def safety_settings(schema: AdapterSchema, safety: SafetyConfig | dict[str, Any] | None) -> SafetyConfig | None:
    """What the runtime enforces. The file's ``rate_limits`` always apply (adapter authors state
    them because the API has them); with no safety settings they are the only check. With safety
    on, the file's ``trust.level`` is the adapter's trust unless the settings name one (both
    vocabularies are accepted, Part F #11), and its rate limits join the settings' own."""
    rules = rate_rules(schema.data.get("rate_limits"))
    if safety is None:
        return SafetyConfig(gatekeeper=False, describe_danger=False, rate_limits=rules) if rules else None
    cfg = safety if isinstance(safety, SafetyConfig) else SafetyConfig.from_dict(dict(safety))
    trust = cfg.trust if cfg.trust is not None else (schema.data.get("trust") or {}).get("level")
    return replace(cfg, trust=trust, rate_limits=[*cfg.rate_limits, *rules])


def serve_adapter(path: str | Path, **kw: Any) -> AdapterRuntime:
    return AdapterRuntime(load_adapter_schema(path), **kw)
