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

import base64
import contextlib
import datetime
import json
import logging
import os
import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import anyio
import httpx
import yaml

from ...config import Config
from ...protocol.categories import Category
from ...protocol.dispatch import Engine
from ...protocol.errors import internal_error
from ...protocol.extension import Extension
from ...protocol.operations import NO_DEFAULT, OperationSpec, ParamSpec, TypeRef
from ...protocol.registry import Registry, SchemaError
from ...safety.danger import CATEGORY_DEFAULT
from ...safety.install import SafetyConfig
from ...safety.ratelimit import METRICS
from ..holder import EngineHolderBase
from ..http import http_error
from ..request import build_url, path_segment
from ..upstream.classify import Classification
from ..upstream.fields import FIELDS, fields_param, select, wants_fields
from ..upstream.messages import Redactor, argument_strings
from ..upstream.ops import CTX_PARAM, CallFn, spec_from_tool
from ..upstream.runtime import Upstream, UpstreamSpec
from .bundle import argv_from_stdio_url
from .check import HTTP_RE, MCP_RE, METADATA_KEYS, check_adapter_schema, endpoint_operations, trust_level

log = logging.getLogger("mcpaql.adapter_schema")
_MCP_RE, _HTTP_RE = MCP_RE, HTTP_RE


def parse_adapter_file(path: str | Path) -> dict[str, Any]:
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as e:
        raise SchemaError("SCHEMA_MISSING_FIELD", f"cannot read adapter file '{p.name}': {e.strerror}") from None
    except UnicodeDecodeError:
        raise SchemaError("SCHEMA_INVALID_TYPE", f"adapter file '{p.name}' is not UTF-8 text") from None
    try:
        if p.suffix == ".json":
            data = json.loads(text)
        elif text.startswith("---"):
            m = re.match(r"^---[ \t]*\n(.*?)\n---[ \t]*(\n|$)", text, re.S)  # front matter ends at a bare '---'
            data = yaml.safe_load(m.group(1) if m else text)
        else:
            data = yaml.safe_load(text)
    except (ValueError, yaml.YAMLError, RecursionError) as e:
        raise SchemaError("SCHEMA_INVALID_TYPE", f"adapter file '{p.name}' is not valid JSON/YAML: {e}") from None
    if not isinstance(data, dict):
        raise SchemaError("SCHEMA_INVALID_TYPE", f"adapter file '{p.name}' must hold a mapping")
    return data


@dataclass
class AdapterSchema:
    data: dict[str, Any]
    path: Path | None = None
    warnings: list[str] = field(default_factory=list)

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
        if not url.startswith(("http://", "https://")):
            raise SchemaError(
                "SCHEMA_INVALID_TYPE",
                f"target.base_url: '{url[:60]}' cannot be served (an MCP upstream "
                "is reached at an http(s):// URL or started from a 'stdio:COMMAND' URI)",
            )
        return UpstreamSpec.from_url(url, name=up, headers=self._headers(env_refs=True) or None)

    def _headers(self, env_refs: bool = False) -> dict[str, str]:
        auth = self.data.get("auth") or {}
        kind = auth.get("type", "none")

        def value(env: str) -> str:
            return f"${{{env}}}" if env_refs else os.environ.get(env, "")

        if kind == "bearer" and auth.get("token_env"):
            return {auth.get("header", "Authorization"): f"{auth.get('prefix', 'Bearer ')}{value(auth['token_env'])}"}
        if kind == "api_key" and (auth.get("key_env") or auth.get("token_env")):
            env: Any = auth.get("key_env") or auth.get("token_env")  # as written in the schema file, like token_env above
            return {auth.get("header_name") or auth.get("header") or "X-API-Key": f"{auth.get('prefix', '')}{value(env)}"}
        if kind == "basic":  # RFC 7617; the environment is read when the adapter starts
            pair = f"{os.environ.get(auth['username_env'], '')}:{os.environ.get(auth['password_env'], '')}"
            return {"Authorization": "Basic " + base64.b64encode(pair.encode()).decode("ascii")}
        return {}

    def registry(
        self,
        mcp_call: CallFn | None = None,
        live_tools: list[dict[str, Any]] | None = None,
        http: httpx.AsyncClient | None = None,
    ) -> Registry:
        reg = Registry(self.name, version=str(self.data["version"]), description=str(self.data["description"]), open_world=True)
        by_name = {str(t["name"]): t for t in live_tools or []}
        limit = (self.data.get("rate_limits") or {}).get("concurrent_requests")
        if limit and not hasattr(self, "_slots"):
            self._slots = anyio.Semaphore(int(limit))  # one per file, kept across rebuilds (ELEM §10.2)
        for cat, op in self.operations():
            m = _MCP_RE.match(str(op["maps_to"]))
            if m:
                if mcp_call is None:
                    raise SchemaError("SCHEMA_UNRESOLVED_REF", f"operation '{op['name']}' needs an MCP upstream")
                spec = self._mcp_spec(cat, op, m.group(1), by_name.get(m.group(1)), mcp_call)
            else:
                spec = self._http_spec(cat, op, http)
            reg.add(self._limited(spec) if limit else spec)
        return reg

    def _limited(self, spec: OperationSpec) -> OperationSpec:
        inner, slots = spec.handler, self._slots
        assert inner is not None

        async def handler(**kwargs: Any) -> Any:
            async with slots:
                return await inner(**kwargs)

        return replace(spec, handler=handler)

    def _flat_params(self, op: dict[str, Any]) -> list[ParamSpec]:
        out = []
        for pname, pd in _paginated(op).items():
            schema = {k: v for k, v in pd.items() if k not in ("required", "default", "description")}
            out.append(
                ParamSpec(
                    pname,
                    schema,
                    required=bool(pd.get("required")),
                    description=pd.get("description"),
                    default=pd.get("default", NO_DEFAULT),
                )
            )
        return out

    def _danger(self, cat: Category, op: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """The operation's declared danger level (None: the category's default applies, DANGER §3.3 —
        a DELETE is destructive, Part F #13) and the extensions that carry it to the safety layer."""
        block = op.get("danger")
        danger = str(block["level"]) if block else op.get("danger_level")
        ext: dict[str, Any] = {"maps_to": op["maps_to"], "requires_confirmation": bool(op.get("requires_confirmation"))}
        if block:
            ext["danger"] = dict(block)
        return danger, ext

    def _mcp_spec(self, cat: Category, op: dict[str, Any], tool: str, live: dict[str, Any] | None, call: CallFn) -> OperationSpec:
        danger, ext = self._danger(cat, op)
        c = Classification(cat, "high", danger or CATEGORY_DEFAULT[cat].label, ("adapter schema",), source="manual_override")
        base = live or {"name": tool, "description": op.get("description"), "inputSchema": {}}
        spec = spec_from_tool(base, call, name=str(op["name"]), classification=c, field_selection=bool(op.get("supports_fields")))
        if live is None:
            spec = replace(spec, params=tuple(replace(p, map_to=None) for p in self._flat_params(op)))
        return replace(
            spec,
            description=str(op.get("description") or spec.description),
            dangerous=danger in ("dangerous", "forbidden") or bool(op.get("requires_confirmation")),
            extensions={**spec.extensions, **ext},
        )

    def _http_spec(self, cat: Category, op: dict[str, Any], http: httpx.AsyncClient | None) -> OperationSpec:
        m = _HTTP_RE.match(str(op["maps_to"]))
        assert m is not None
        method, path = m.group(1), m.group(2)
        base = str(self.data["target"]["base_url"]).rstrip("/")
        form = self.data["target"].get("serialization") == "form"
        placeholders = set(re.findall(r"{([^}]+)}", path))
        headers = self._headers()
        name = str(op["name"])
        params = self._flat_params(op)
        default_fields = op.get("default_fields")
        selectable = bool(op.get("supports_fields") or default_fields) and wants_fields(params)
        if selectable:
            params.append(fields_param())

        async def handler(**kwargs: Any) -> Any:
            kwargs.pop(CTX_PARAM, None)
            fields = (kwargs.pop(FIELDS, None) if selectable else None) or default_fields
            # One segment per placeholder, dot segments refused: the route is the one the file names.
            url = build_url(httpx.URL(base), path, {k: path_segment(k, kwargs[k]) for k in placeholders if k in kwargs}, name)
            rest = {k: v for k, v in kwargs.items() if k not in placeholders}
            client = http or httpx.AsyncClient(timeout=30)
            try:
                if method in ("GET", "DELETE"):
                    resp = await client.request(method, url, params=rest or None, headers=headers)
                elif form:
                    resp = await client.request(method, url, data=rest, headers=headers)
                else:
                    resp = await client.request(method, url, json=rest, headers=headers)
            except httpx.HTTPError as e:
                raise internal_error(f"request to the target API failed ({type(e).__name__})", {"operation": name}) from None
            finally:
                if http is None:
                    await client.aclose()
            if resp.status_code >= 400:
                raise http_error(resp, name, redact=Redactor(headers.values()), keep=argument_strings(kwargs))
            if not resp.content:
                return None
            try:
                data = resp.json()
            except ValueError:
                data = resp.text
            return select(data, fields, name) if fields else data

        danger, ext = self._danger(cat, op)
        return OperationSpec(
            name=name,
            category=cat,
            description=str(op.get("description") or name.replace("_", " ")),
            handler=handler,
            params=tuple(params),
            returns=TypeRef("Response", "object"),
            danger_level=danger,
            dangerous=danger in ("dangerous", "forbidden") or bool(op.get("requires_confirmation")),
            context_param=CTX_PARAM,
            is_async=True,
            origin=op["maps_to"],
            extensions=ext,
        )

    def info(self, effective_trust: str | None) -> dict[str, Any]:
        """``introspect {query: 'adapter_info'}`` (TRUST §6.4): the file's identity, trust block and
        metadata (ELEM §2.1), what it targets and the limits it states."""
        out: dict[str, Any] = {"name": self.name, "version": self.data["version"], "description": self.data["description"]}
        trust = dict(self.data.get("trust") or {})
        if trust:
            trust["declared_level"] = trust["level"]
        trust["level"] = effective_trust or trust_level(trust) or "untested"
        out["trust"] = trust
        meta = {k: self.data[k] for k in METADATA_KEYS if k in self.data}
        if meta:
            out["metadata"] = meta
        out["target"] = dict(self.data["target"])
        out["auth"] = {"type": (self.data.get("auth") or {}).get("type", "none")}
        if self.data.get("rate_limits"):
            out["rate_limits"] = self.data["rate_limits"]
        if self.warnings:
            out["warnings"] = list(self.warnings)
        return out


_PAGE_PARAMS = {
    "offset": ("offset", "limit"),
    "cursor": ("cursor", "limit"),
    "page": ("page", "per_page"),
    "link_header": ("page", "per_page"),
}


def _paginated(op: dict[str, Any]) -> dict[str, Any]:
    """The operation's params with its ``pagination`` block applied: the page-size parameter gets
    ``default_limit`` as its default and ``max_limit`` as its maximum, and both parameters exist
    (named by ``param_name``/``per_page_param``, else the style's usual names)."""
    params = {k: dict(v) for k, v in (op.get("params") or {}).items()}
    pg = op.get("pagination")
    if not pg:
        return params
    where, size = _PAGE_PARAMS[pg.get("style", "offset")]
    where, size = pg.get("param_name", where), pg.get("per_page_param", size)
    kind = "string" if pg.get("style") == "cursor" else "integer"
    params.setdefault(where, {"type": kind, "description": f"Pagination: {where}"})
    p = params.setdefault(size, {"type": "integer", "minimum": 1, "description": "Pagination: items per page"})
    if "default_limit" in pg:
        p.setdefault("default", pg["default_limit"])
    if "max_limit" in pg:
        p["maximum"] = min(p.get("maximum", pg["max_limit"]), pg["max_limit"])
    return params


_SECRET_KEYS = re.compile(r"(token|secret|password|passwd|api_?key|key)$", re.I)


def schema_warnings(data: dict[str, Any], filename: str | None = None) -> list[str]:
    """Things a runtime SHOULD warn about: embedded credentials (REQ-ADPT-017), a plain-HTTP
    ``base_url`` that is not local (REQ-ADPT-008) and a description outside 10-200 characters
    (REQ-ADPT-006)."""
    out = []
    for k, v in (data.get("auth") or {}).items():
        if _SECRET_KEYS.search(k) and not k.endswith("_env") and isinstance(v, str) and v:
            out.append(f"auth.{k} looks like an embedded credential: reference an environment variable ({k}_env) instead")
    name = data.get("name")
    if filename is not None and isinstance(name, str) and not filename.startswith(f"{name}-adapter."):
        # ELEM §1.3 (REQ-ADPT-003) names the file after the adapter; a warning, not an error, so
        # `mcpaql serve adapter.json` keeps working
        out.append(f"the file is conventionally named '{name}-adapter.md' (or .json/.yaml) after the adapter")
    desc = data.get("description")
    if isinstance(desc, str) and not 10 <= len(desc.strip()) <= 200:  # REQ-ADPT-006 (ELEM §4.4)
        out.append(
            f"description is {len(desc.strip())} characters; describe the target API and its main "
            "capabilities in 10-200 characters"
        )
    url = str(data.get("target", {}).get("base_url", ""))
    host = urllib.parse.urlsplit(url).hostname or ""
    if url.startswith("http://") and host not in ("localhost", "127.0.0.1", "::1"):
        out.append(f"target.base_url '{url}' is plain HTTP; use HTTPS outside local development")
    return out


def load_adapter_schema(path: str | Path) -> AdapterSchema:
    """Parse and check an adapter-schema file (raises :class:`SchemaError` with a field path);
    each warning is logged once."""
    data = _jsonable(parse_adapter_file(path))
    warnings = [*check_adapter_schema(data), *schema_warnings(data, Path(path).name)]
    for w in warnings:
        log.warning("%s: %s", Path(path).name, w)
    return AdapterSchema(data, Path(path), warnings)


def _jsonable(v: Any) -> Any:
    """YAML reads unquoted timestamps and dates as objects; keep them as the ISO text they were."""
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_jsonable(x) for x in v]
    if isinstance(v, datetime.date | datetime.datetime):
        return v.isoformat()
    return v


class AdapterRuntime(EngineHolderBase):
    """``async with serve_adapter("adapter.json") as rt: rt.engine`` — connects the MCP upstream
    when the schema needs one and builds the engine."""

    not_open_message = "use 'async with serve_adapter(...)'"

    def __init__(
        self,
        schema: AdapterSchema,
        config: Config | None = None,
        upstream: UpstreamSpec | None = None,
        engine_kwargs: dict[str, Any] | None = None,
        safety: SafetyConfig | dict[str, Any] | None = None,
    ) -> None:
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

    def build_engine(self) -> Engine:
        engine = super().build_engine()
        trust = self.safety.trust.label if self.safety is not None and self.safety.config.gatekeeper else None
        info = self.schema.info(trust)

        async def adapter_info(ctx: Any, name: Any) -> dict[str, Any]:
            return info

        # The Engine is immutable once built: the file's adapter_info query is one more extension.
        return engine.extend(Extension("adapter-file", introspect_queries={"adapter_info": adapter_info}))

    async def _changed(self, _up: Upstream) -> None:
        await self.rebuild()  # e.g. the MCP server listens, and tells its clients


# adapter-schema RateLimitConfig → the safety layer's fixed-window rules. ``burst_limit`` caps
# calls within any one second (the schema gives no window for it).
_RATE_KEYS = {"requests_per_minute": "minute", "requests_per_hour": "hour", "requests_per_day": "day", "burst_limit": "second"}


def rate_rules(block: Mapping[str, Any] | None, data: Mapping[str, Any] | None = None) -> list[dict[str, Any]]:
    """The file's ``rate_limits`` block as safety rate rules: the schema's adapter-wide counts and
    RATE §2's ``api_limits`` (an ``endpoint`` limit applies to the operations mapped to it)."""
    block = block or {}
    rules = [{"limit": int(v), "window": _RATE_KEYS[k], "scope": "global"} for k, v in block.items() if k in _RATE_KEYS]
    for lim in block.get("api_limits") or []:
        rule = {"limit": int(lim["limit"]), "window": lim.get("window", "minute")}
        if lim.get("scope", "global") == "global":
            rules.append({**rule, "scope": "global"})
            continue
        # each operation mapped to the endpoint (pattern) counts in its own window
        ops = endpoint_operations(dict(data or {"operations": {}}), str(lim["endpoint"]))
        rules += [{**rule, "scope": "operation", "match": op} for op in ops]
    return rules


def quota_rules(block: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """RATE §2's ``quotas`` (when enabled) on the metrics the safety layer counts."""
    q = (block or {}).get("quotas") or {}
    if q.get("enabled") is False:
        return []
    return [
        {k: lim[k] for k in ("metric", "warn", "pause", "hard_stop") if k in lim}
        for lim in q.get("limits") or []
        if isinstance(lim.get("metric"), str) and lim["metric"] in METRICS
    ]


def _gated(schema: AdapterSchema) -> bool:
    """Whether the file declares anything the gatekeeper must enforce."""
    return any(
        op.get("requires_confirmation") or op.get("danger") or op.get("danger_level") in _CONFIRMED or cat is Category.DELETE
        for cat, op in schema.operations()
    )


_CONFIRMED = ("destructive", "dangerous", "forbidden")


def safety_settings(schema: AdapterSchema, safety: SafetyConfig | dict[str, Any] | None) -> SafetyConfig | None:
    """What the runtime enforces, ``--trust`` or not.

    * The file's ``rate_limits`` (and RATE's ``api_limits``/``quotas``) always apply.
    * Its ``requires_confirmation: true`` and danger levels always apply: an operation so marked,
      or ``destructive`` and above (DANGER §7.1(2)), runs only with a confirmation token. With no
      safety settings the trust is the file's ``trust.level``, or — no trust block — the operator
      who serves the file vouches for it (``certified`` in the gating matrix: nothing is denied,
      the confirmations above still hold).
    * With safety settings, their trust wins over the file's (all three vocabularies, Part F #11).
    """
    data = schema.data
    rules = rate_rules(data.get("rate_limits"), data)
    quotas = quota_rules(data.get("rate_limits"))
    confirm = [
        {"adapter": "*", "operation": str(op["name"]), "permission": "confirm"}
        for _, op in schema.operations()
        if op.get("requires_confirmation")
    ]
    file_trust = trust_level(data.get("trust"))
    if safety is None:
        if not (rules or quotas or _gated(schema)):
            return None
        return SafetyConfig(
            trust=file_trust or "certified",
            describe_danger=False,
            rate_limits=rules,
            quotas=quotas,
            policies=confirm,
            gatekeeper=_gated(schema),
        )
    cfg = safety if isinstance(safety, SafetyConfig) else SafetyConfig.from_dict(dict(safety))
    trust = cfg.trust if cfg.trust is not None else file_trust
    return replace(
        cfg,
        trust=trust,
        rate_limits=[*cfg.rate_limits, *rules],
        quotas=[*cfg.quotas, *quotas],
        policies=[*cfg.policies, *confirm],
    )


def serve_adapter(path: str | Path, **kw: Any) -> AdapterRuntime:
    return AdapterRuntime(load_adapter_schema(path), **kw)
