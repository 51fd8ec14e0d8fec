"""Serve an OpenAPI 3.x document through MCP-AQL, with no code (``mcpaql openapi SPEC``).

An OpenAPI operation is treated as what a wrapped MCP tool is: a name, a description, one JSON
Schema for its arguments and annotations, whose *call* happens to be an HTTP request. So the
document is turned into tool definitions and everything after that is the wrapper's, shared and
tested once: classification (annotations from the HTTP method first — GET reads, DELETE deletes,
PUT/PATCH update — then the verb grammar of the ``operationId`` for POST, ``send_invoice`` being
an EXECUTE and ``create_pet`` a CREATE), snake_case parameter names with the mapping applied on
every call, nested ``components/schemas`` kept whole and named for ``introspect types``,
``fields`` projection of JSON results for READ operations, include/exclude/read-only selection.

Per operation the arguments are the path, query and header parameters plus the JSON (or form)
request body: an object body contributes its properties as parameters, any other body — or one
whose property names clash with a parameter — is the single parameter ``body``. Calls go to the
document's first server (``--base-url`` overrides; server variables take their defaults). Target
errors map by status with the body deciding missing vs invalid parameters, and a 429 carries
``retry_after_seconds`` (:mod:`mcpaql.adapters.http`). Swagger 2.0 is refused with a clear message.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import urllib.parse
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from ..config import Config
from ..observability.hooks import current_telemetry
from ..protocol.context import Context
from ..protocol.errors import MCPAQLError, internal_error
from ..protocol.registry import Registry, SchemaError
from ..protocol.schema import MAX_DEPTH, SchemaContext, SchemaTooComplex, pascal, resolve
from .holder import EngineHolderBase
from .http import http_error
from .request import build_url, header_problem, header_value, path_segment
from .targets import GuardedTransport, TargetPolicy, is_local_source, proxied, refused_by
from .upstream.classify import snake_name
from .upstream.messages import Redactor, argument_strings
from .upstream.ops import RETURNS_KEY, param_name
from .upstream.runtime import expand_env
from .upstream.wrap import build_registry, format_exclusions

log = logging.getLogger("mcpaql.openapi")

METHODS = ("get", "put", "post", "delete", "patch")
# MCP annotations per HTTP method (RFC 9110 semantics: safe, idempotent, destructive).
_ANNOTATIONS: dict[str, dict[str, bool]] = {
    "get": {"readOnlyHint": True, "destructiveHint": False, "idempotentHint": True},
    "put": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
    "patch": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": False},
    "delete": {"readOnlyHint": False, "destructiveHint": True, "idempotentHint": True},
    "post": {"readOnlyHint": False, "destructiveHint": False, "idempotentHint": False},
}
_JSON_MEDIA = re.compile(r"^application/([a-z0-9.+-]*\+)?json\b", re.I)
_FORM_MEDIA = "application/x-www-form-urlencoded"
MAX_REDIRECTS = 5
# Configured headers that describe the client rather than authenticate it (not redacted).
_PLAIN_HEADERS = frozenset({"accept", "accept-language", "content-type", "user-agent", "cache-control"})


class OpenAPIError(ValueError):
    """A document mcpaql cannot serve; the message says why and what to do."""


@dataclass(frozen=True)
class Route:
    """Where each argument of one operation goes in the HTTP request."""

    method: str
    path: str
    where: dict[str, str]  # argument name → path | query | header | body-field | body
    body_media: str | None = None


@dataclass
class OpenAPIDocument:
    doc: dict[str, Any]
    origin: str | None = None  # the URL or file it came from (relative server URLs resolve against a URL)
    tools: list[dict[str, Any]] = field(default_factory=list)
    routes: dict[str, Route] = field(default_factory=dict)
    skipped: list[str] = field(default_factory=list)
    # Shared by every operation: each component is resolved once and becomes one named type.
    schemas: SchemaContext = field(default_factory=SchemaContext)

    @property
    def title(self) -> str:
        return str((self.doc.get("info") or {}).get("title") or "api")

    @property
    def version(self) -> str:
        v = str((self.doc.get("info") or {}).get("version") or "0.1.0")
        return v if re.fullmatch(r"\d+\.\d+\.\d+.*", v) else "0.1.0"

    def base_url(self, override: str | None = None) -> str:
        if override:
            return override.rstrip("/")
        servers = self.doc.get("servers") or []
        if not servers or not isinstance(servers[0], dict) or not servers[0].get("url"):
            raise OpenAPIError("the document names no server: pass --base-url")
        url = str(servers[0]["url"])
        for var, spec in (servers[0].get("variables") or {}).items():
            url = url.replace("{" + var + "}", str((spec or {}).get("default", "")))
        if not re.match(r"^https?://", url):
            if self.origin and re.match(r"^https?://", self.origin):
                url = urllib.parse.urljoin(self.origin, url)
            else:
                raise OpenAPIError(f"the document's server URL '{url}' is relative: pass --base-url")
        return url.rstrip("/")


def load_document(source: str | Path | Mapping[str, Any], *, http: httpx.Client | None = None) -> OpenAPIDocument:
    """Read an OpenAPI 3.x document (a file, an http(s) URL or a mapping) and derive its tools."""
    origin: str | None = None
    if isinstance(source, Mapping):
        doc: Any = dict(source)
    else:
        text = str(source)
        try:
            if re.match(r"^https?://", text):
                origin = text
                client = http or httpx.Client(timeout=30, follow_redirects=True)
                try:
                    resp = client.get(text)
                finally:
                    if http is None:
                        client.close()
                if resp.status_code >= 400:
                    raise OpenAPIError(f"could not fetch the OpenAPI document: HTTP {resp.status_code}")
                body = resp.text
            else:
                origin = str(Path(text).resolve())
                body = Path(text).read_text(encoding="utf-8")
        except OSError as e:
            raise OpenAPIError(f"cannot read the OpenAPI document '{Path(text).name}': {e.strerror}") from None
        except httpx.HTTPError as e:
            raise OpenAPIError(f"could not fetch the OpenAPI document ({type(e).__name__})") from None
        doc = _parse(body)
    if not isinstance(doc, dict):
        raise OpenAPIError("the OpenAPI document must be a mapping")
    if "swagger" in doc:
        raise OpenAPIError(f"Swagger {doc['swagger']} is not supported: convert the document to OpenAPI 3 first")
    if not str(doc.get("openapi", "")).startswith("3."):
        raise OpenAPIError("not an OpenAPI 3.x document (no 'openapi: 3.x' field)")
    if not isinstance(doc.get("paths"), dict) or not doc["paths"]:
        raise OpenAPIError("the OpenAPI document has no paths")
    out = OpenAPIDocument(doc, origin, schemas=SchemaContext(root=doc))
    _derive(out)
    if not out.tools:
        raise OpenAPIError("the OpenAPI document has no operation mcpaql can call")
    return out


_PARSE_DEPTH = 6000  # nesting a document may have at all; a schema past MAX_DEPTH only skips its operation


def _parse(body: str) -> Any:
    """JSON or YAML text → data. Deeply nested documents parse (up to :data:`_PARSE_DEPTH`) so that
    one absurd schema costs only its operation; anything deeper is refused in one line."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, _PARSE_DEPTH + 500))
    try:
        return json.loads(body) if body.lstrip().startswith("{") else yaml.safe_load(body)
    except RecursionError:
        raise OpenAPIError(f"the OpenAPI document nests more than {_PARSE_DEPTH} levels deep") from None
    except (ValueError, yaml.YAMLError) as e:
        raise OpenAPIError(f"the OpenAPI document is not valid JSON/YAML: {e}") from None
    finally:
        sys.setrecursionlimit(limit)


def _ref(doc: dict[str, Any], node: Any) -> Any:
    """Follow a local ``$ref`` (parameters, request bodies, responses); schemas keep theirs, which
    the document's :class:`SchemaContext` resolves once each."""
    seen = 0
    while isinstance(node, dict) and isinstance(node.get("$ref"), str) and seen < 20:
        ref = node["$ref"]
        if not ref.startswith("#/"):
            raise OpenAPIError(f"external reference '{ref}' is not supported: bundle the document first")
        target: Any = doc
        for part in ref[2:].split("/"):
            part = part.replace("~1", "/").replace("~0", "~")
            target = target.get(part) if isinstance(target, dict) else None
        if target is None:
            raise OpenAPIError(f"reference '{ref}' points nowhere")
        node = target
        seen += 1
    return node


_COMPONENT = "#/components/schemas/"


class _Components:
    """Which ``components/schemas`` an operation's schema reaches, so its tool definition carries
    those (by reference, not copied) and no others. Each component's own references are listed
    once; the scan is iterative and depth-bounded, so no document can exhaust the stack here."""

    def __init__(self, doc: dict[str, Any]) -> None:
        comps = (doc.get("components") or {}).get("schemas")
        self.schemas: dict[str, Any] = comps if isinstance(comps, dict) else {}
        self._direct: dict[str, set[str]] = {}
        self._closures: dict[str, dict[str, Any]] | None = None

    @staticmethod
    def refs_in(node: Any) -> set[str]:
        found: set[str] = set()
        stack: list[tuple[Any, int]] = [(node, 0)]
        while stack:
            n, depth = stack.pop()
            if depth > MAX_DEPTH * 4:
                continue  # the resolver refuses such a schema; nothing more to list
            if isinstance(n, dict):
                ref = n.get("$ref")
                if isinstance(ref, str) and ref.startswith(_COMPONENT):
                    found.add(ref[len(_COMPONENT) :].split("/", 1)[0].replace("~1", "/").replace("~0", "~"))
                stack.extend((v, depth + 1) for v in n.values() if isinstance(v, dict | list))
            elif isinstance(n, list):
                stack.extend((v, depth + 1) for v in n if isinstance(v, dict | list))
        return found

    def reached(self, node: Any) -> dict[str, Any]:
        """Every component ``node`` reaches, by name. One reference (the common case: a body or a
        response that is one component) gets that component's closure, shared between tools."""
        names = sorted(n for n in self.refs_in(node) if n in self.schemas)
        if len(names) == 1:
            return self._closure(names[0])
        out: dict[str, Any] = {}
        for name in names:
            out.update(self._closure(name))
        return dict(sorted(out.items()))

    def _closure(self, name: str) -> dict[str, Any]:
        if self._closures is None:
            self._closures = self._all_closures()
        return self._closures.get(name, {})

    def _edges(self, name: str) -> list[str]:
        direct = self._direct.get(name)
        if direct is None:
            direct = self._direct[name] = self.refs_in(self.schemas[name])
        return sorted(n for n in direct if n in self.schemas)

    def _all_closures(self) -> dict[str, dict[str, Any]]:
        """Each component's closure, computed per strongly connected group (Tarjan, iterative):
        components that refer to each other in a cycle share one closure, so a document whose
        components are all connected costs its size, not its size squared."""
        index: dict[str, int] = {}
        low: dict[str, int] = {}
        on_stack: set[str] = set()
        stack: list[str] = []
        closures: dict[str, dict[str, Any]] = {}
        for root in self.schemas:
            if root in index:
                continue
            index[root] = low[root] = len(index)
            stack.append(root)
            on_stack.add(root)
            work = [(root, iter(self._edges(root)))]
            while work:
                v, edges = work[-1]
                for w in edges:
                    if w not in index:
                        index[w] = low[w] = len(index)
                        stack.append(w)
                        on_stack.add(w)
                        work.append((w, iter(self._edges(w))))
                        break
                    if w in on_stack:
                        low[v] = min(low[v], index[w])
                else:
                    work.pop()
                    if work:
                        parent = work[-1][0]
                        low[parent] = min(low[parent], low[v])
                    if low[v] == index[v]:  # v roots a group; everything it reaches is done
                        members: list[str] = []
                        while True:
                            w = stack.pop()
                            on_stack.discard(w)
                            members.append(w)
                            if w == v:
                                break
                        reach = set(members)
                        for m in members:
                            for w in self._edges(m):
                                if w not in reach:
                                    reach.update(closures[w])
                        shared = {n: self.schemas[n] for n in sorted(reach)}
                        for m in members:
                            closures[m] = shared
        return closures


def _slug(method: str, path: str) -> str:
    words = [w for w in re.split(r"[^A-Za-z0-9]+", path) if w]
    return "_".join([method, *words]) or method


def _derive(api: OpenAPIDocument) -> None:
    doc = api.doc
    components = _Components(doc)
    for path, item in doc["paths"].items():
        item = _ref(doc, item)
        if not isinstance(item, dict):
            continue
        shared = [_ref(doc, p) for p in item.get("parameters") or []]
        for method, op in item.items():  # the document's order: it is the author's
            if method not in METHODS or not isinstance(op, dict):
                continue
            name = str(op.get("operationId") or _slug(method, path))
            try:
                tool, route = _tool(doc, components, name, method, path, op, shared)
                _check_schemas(api.schemas, tool)
            except (OpenAPIError, SchemaTooComplex) as e:
                api.skipped.append(f"{method.upper()} {path}: {e}")
                log.warning("OpenAPI %s %s skipped: %s", method.upper(), path, e)
                continue
            if name in api.routes:
                api.skipped.append(f"{method.upper()} {path}: operationId '{name}' is used twice")
                continue
            api.tools.append(tool)
            api.routes[name] = route


def _check_schemas(schemas: SchemaContext, tool: dict[str, Any]) -> None:
    """Resolve the tool's schemas now, in the document's context: a schema past the depth or size
    budget skips this operation at load (and is listed), and the registry later finds every
    component already resolved."""
    op = snake_name(str(tool["name"]))  # the hints params_from_schema uses: the same names, once
    resolve(dict(tool["inputSchema"]), pascal(op, "input"), schemas)
    if RETURNS_KEY in tool:
        resolve(dict(tool[RETURNS_KEY]), pascal(op, "result"), schemas)


def _tool(
    doc: dict[str, Any], components: _Components, name: str, method: str, path: str, op: dict[str, Any], shared: list[Any]
) -> tuple[dict[str, Any], Route]:
    props: dict[str, Any] = {}
    required: list[str] = []
    where: dict[str, str] = {}
    params = {(p.get("in"), p.get("name")): p for p in shared if isinstance(p, dict)}
    for p in op.get("parameters") or []:
        p = _ref(doc, p)
        if isinstance(p, dict):
            params[(p.get("in"), p.get("name"))] = p
    for (loc, pname), p in params.items():
        if loc not in ("path", "query", "header") or not isinstance(pname, str):
            continue  # cookies are a browser's business
        if loc == "header" and pname.lower() in ("authorization", "content-type", "accept"):
            continue  # set by the runtime
        s: Any = p.get("schema") if isinstance(p.get("schema"), dict) else {"type": "string"}  # a dict either way
        if p.get("description") and "description" not in s:
            s = {**s, "description": str(p["description"])}
        props[pname] = s
        where[pname] = loc
        if p.get("required") or loc == "path":
            required.append(pname)
    media: str | None = None
    body = _ref(doc, op.get("requestBody")) if op.get("requestBody") else None
    if isinstance(body, dict):
        content = body.get("content") or {}
        media = next((m for m in content if _JSON_MEDIA.match(m)), None) or (_FORM_MEDIA if _FORM_MEDIA in content else None)
        if media is None:
            raise OpenAPIError(f"request body types {sorted(content)} are not supported (JSON or form only)")
        bs = (content.get(media) or {}).get("schema")
        bs = bs if isinstance(bs, dict) else {}
        resolved = _ref(doc, bs) if "$ref" in bs else bs
        fields = resolved.get("properties") if isinstance(resolved, dict) else None
        if isinstance(fields, dict) and fields and not set(fields) & set(props) and "body" not in props:
            for fname, fs in fields.items():
                props[fname] = fs
                where[fname] = "body-field"
            if body.get("required") or method in ("post", "put"):  # a create/replace without its body is no call
                required += [f for f in resolved.get("required") or [] if f in fields]
        else:
            props["body"] = {**bs, "description": str(body.get("description") or bs.get("description") or "Request body")}
            where["body"] = "body"
            if body.get("required"):
                required.append("body")
    summary = " ".join(str(op.get("summary") or "").split())
    detail = " ".join(str(op.get("description") or "").split())
    description = ". ".join(x.rstrip(".") for x in (summary, detail) if x) or f"{method.upper()} {path}"
    if op.get("deprecated"):
        description += " (deprecated)"
    schema: dict[str, Any] = {"type": "object", "properties": props}
    if required:
        schema["required"] = list(dict.fromkeys(required))
    reached = components.reached(props)
    if reached:  # "#/components/schemas/X" resolves inside the tool's own schema: it is self-contained
        schema["components"] = {"schemas": reached}
    tool = {
        "name": name,
        "description": description,
        "inputSchema": schema,
        "annotations": {**_ANNOTATIONS[method], "openWorldHint": True},
    }
    returns = _response_schema(doc, op)
    if returns is not None:
        tool[RETURNS_KEY] = returns
    return tool, Route(method.upper(), path, where, media)


def _response_schema(doc: dict[str, Any], op: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema of the operation's success response (the lowest 2xx with a JSON body; its
    components are found through the document, so the tool carries only the reference)."""
    responses = op.get("responses")
    if not isinstance(responses, dict):
        return None
    for code in sorted((str(c) for c in responses), key=lambda c: (c.upper() == "2XX", c)):
        if not (code.startswith("2") and len(code) == 3):
            continue
        try:
            resp = _ref(doc, responses.get(code) if code in responses else responses.get(int(code)))
        except (OpenAPIError, ValueError):
            continue
        content = resp.get("content") if isinstance(resp, dict) else None
        if not isinstance(content, dict):
            continue
        media = next((m for m in content if _JSON_MEDIA.match(m)), None)
        schema = (content.get(media) or {}).get("schema") if media else None
        if isinstance(schema, dict) and schema:
            return schema
    return None


class OpenAPIRuntime(EngineHolderBase):
    """``async with serve_openapi("petstore.yaml") as rt: rt.engine`` — the engine plus the HTTP
    client its operations call through (an engine holder like the wrapper's)."""

    not_open_message = "use 'async with serve_openapi(...)'"

    def __init__(
        self,
        api: OpenAPIDocument,
        *,
        name: str | None = None,
        base_url: str | None = None,
        headers: Mapping[str, str] | None = None,
        config: Config | None = None,
        read_only: bool = False,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        timeout: float = 30.0,
        safety: Any = None,
        transport: httpx.AsyncBaseTransport | None = None,
        allow_private_targets: bool = False,
    ) -> None:
        super().__init__(safety=safety)
        self.api = api
        self.name = name or (re.sub(r"[^a-z0-9]+", "-", api.title.lower()).strip("-") or "api")
        self.base_url = api.base_url(base_url)
        self.policy = target_policy(api, base_url, allow_private_targets)
        self._base = _checked_base(self.base_url, self.policy)
        self.headers = dict(headers or {})
        for k, v in self.headers.items():
            problem = header_problem(k, re.sub(r"\$\{[A-Za-z_][A-Za-z0-9_]*\}", "", v))
            if problem:
                raise OpenAPIError(f"--header {problem}")
        self.config = config
        self.select = {"read_only": read_only, "include": tuple(include), "exclude": tuple(exclude)}
        self.timeout = timeout
        self._transport = transport
        self._http: httpx.AsyncClient | None = None
        self._warned: set[str] = set()

    async def _open(self, stack: contextlib.AsyncExitStack) -> None:
        transport = self._transport
        if transport is None and not self.policy.anything:
            if proxied(self.base_url):
                log.warning(
                    "API calls go through the environment's proxy: it, not mcpaql, checks the addresses "
                    "it connects to (the base URL was checked at start)"
                )
            else:
                transport = GuardedTransport(self.policy)
        # Redirects are followed by call(), within the base URL's origin only.
        self._http = await stack.enter_async_context(
            httpx.AsyncClient(timeout=self.timeout, transport=transport, follow_redirects=False)
        )

    def registry(self) -> Registry:
        excluded: list[dict[str, str]] = []
        try:
            reg = build_registry(
                self.name,
                {self.name: self.api.tools},
                lambda _up: self.call,
                display_name=self.api.title,
                version=self.api.version,
                description=str((self.api.doc.get("info") or {}).get("description") or "") or None,
                open_world=True,
                excluded=excluded,
                schemas=self.api.schemas,
                **self.select,
            )
        except SchemaError as e:
            raise OpenAPIError(str(e)) from None
        if excluded:  # --read-only: what it left out, and why (only GETs are guaranteed reads)
            log.warning("%s", format_exclusions(excluded, len(reg.operations)))
        return reg

    def _configured_headers(self) -> dict[str, str]:
        """``--header`` values with ``${VAR}`` expanded; a header whose variable is unset is not sent
        (never ``Authorization: Bearer`` with an empty token)."""
        out: dict[str, str] = {}
        for k, v in self.headers.items():
            missing = [n for n in re.findall(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}", v) if not os.environ.get(n)]
            if missing:
                if k not in self._warned:
                    self._warned.add(k)
                    log.warning("header %s not sent: environment variable(s) %s unset", k, ", ".join(missing))
                continue
            value = expand_env(v).strip()
            problem = header_problem(k, value)
            if problem:  # the environment changed since start: say so, send nothing
                raise internal_error(f"the configured {problem}; it was not sent", {"retryable": False})
            out[k] = value
        return out

    def _redactor(self) -> Redactor:
        """Every configured header value that could be a credential (all but a few descriptive ones)."""
        return Redactor(v for k, v in self._configured_headers().items() if k.lower() not in _PLAIN_HEADERS)

    async def call(self, tool: str, arguments: dict[str, Any], ctx: Context | None = None) -> dict[str, Any]:
        """One HTTP request for operation ``tool``; the response as a CallToolResult-shaped dict.

        The request reaches exactly the operation's templated route on the base URL's origin
        (:mod:`.request`), configured headers win over header arguments, redirects are followed
        only within that origin (credentials never leave it), and errors name the exposed
        operation with the body summarised and the configured secrets redacted."""
        route = self.api.routes[tool]
        assert self._http is not None, "the runtime is not open"
        op = (ctx.operation if ctx is not None and ctx.operation else None) or param_name(tool)
        path_args: dict[str, str] = {}
        query: dict[str, Any] = {}
        headers: dict[str, str] = {}
        body: dict[str, Any] = {}
        whole: Any = None
        for arg, value in arguments.items():
            loc = route.where.get(arg)
            if loc == "path":
                path_args[arg] = path_segment(param_name(arg), value)
            elif loc == "query":
                query[arg] = json.dumps(value) if isinstance(value, dict) else value
            elif loc == "header":
                headers[arg] = header_value(arg, value, param_name(arg))
            elif loc == "body-field":
                body[arg] = value
            elif loc == "body":
                whole = value
        configured = self._configured_headers()
        lowered = {k.lower() for k in configured}
        headers = {**{k: v for k, v in headers.items() if k.lower() not in lowered}, **configured}
        url = build_url(self._base, route.path, path_args, op)
        payload = whole if whole is not None else (body or None)
        kw: dict[str, Any] = {"params": query or None, "headers": headers}
        if payload is not None:
            kw["json" if route.body_media != _FORM_MEDIA else "data"] = payload
        telemetry = current_telemetry()
        try:
            if telemetry is None:
                resp = await self._send(route.method, url, op, kw)
            else:  # a CLIENT span for the request, its traceparent sent as a header
                with telemetry.upstream_http(route.method, route.path, self._base, {"mcpaql.upstream": self.name}) as span:
                    kw["headers"] = {**span.carrier, **headers}
                    resp = await self._send(route.method, url, op, kw)
                    span.http_status(resp.status_code)
        except httpx.HTTPError as e:
            refused = refused_by(e)
            if refused:
                raise MCPAQLError(
                    "PERMISSION_DENIED", f"{op}: the API address was refused: {refused}", {"operation": op, "upstream_tool": tool}
                ) from None
            raise internal_error(
                f"request to the API failed ({type(e).__name__})", {"operation": op, "retryable": True}
            ) from None
        if resp.status_code >= 400:
            raise http_error(resp, op, redact=self._redactor(), keep=argument_strings(arguments), origin=tool)
        if not resp.content:
            return {"content": []}
        if _JSON_MEDIA.match(resp.headers.get("content-type", "")):
            try:
                data = resp.json()
            except ValueError:
                return {"content": [{"type": "text", "text": resp.text}]}
            return {"content": [{"type": "text", "text": resp.text}], "structuredContent": data}
        return {"content": [{"type": "text", "text": resp.text}]}

    async def _send(self, method: str, url: httpx.URL, op: str, kw: dict[str, Any]) -> httpx.Response:
        assert self._http is not None
        resp = await self._http.request(method, url, **kw)
        return await self._same_origin_redirects(resp, op)

    async def _same_origin_redirects(self, resp: httpx.Response, op: str) -> httpx.Response:
        """Follow up to :data:`MAX_REDIRECTS` redirects that stay on the base URL's origin; one to
        another origin is an error (never followed: it would carry the configured credentials)."""
        assert self._http is not None
        for _ in range(MAX_REDIRECTS):
            nxt = resp.next_request
            if nxt is None:
                return resp
            if (nxt.url.scheme, nxt.url.host, nxt.url.port) != (self._base.scheme, self._base.host, self._base.port):
                await resp.aclose()
                raise MCPAQLError(
                    "PERMISSION_DENIED",
                    f"{op}: the API redirected to another origin '{nxt.url.scheme}://{nxt.url.netloc.decode()}'; "
                    "not followed, so the configured credentials stay with "
                    f"'{self._base.scheme}://{self._base.netloc.decode()}'",
                    {"operation": op, "http_status": resp.status_code},
                )
            await resp.aclose()
            resp = await self._http.send(nxt)
        if resp.next_request is not None:
            raise internal_error(f"the API redirected more than {MAX_REDIRECTS} times", {"operation": op, "retryable": False})
        return resp


def target_policy(api: OpenAPIDocument, base_url: str | None, allow_private_targets: bool) -> TargetPolicy:
    """Private/loopback targets are the operator's choice when they gave ``--base-url`` or the
    document came from this machine or network; ``--allow-private-targets`` allows anything
    (:mod:`.targets`)."""
    return TargetPolicy(private=bool(base_url) or is_local_source(api.origin), anything=allow_private_targets)


def _checked_base(base_url: str, policy: TargetPolicy) -> httpx.URL:
    """The base URL, refused at start (one line) when it is not http(s) or not an allowed target."""
    try:
        url = httpx.URL(base_url)
    except httpx.InvalidURL:
        raise OpenAPIError(f"the API base URL '{base_url}' is not a valid URL") from None
    if url.scheme not in ("http", "https") or not url.host:
        raise OpenAPIError(f"the API base URL '{base_url}' must be an http(s) URL")
    why = policy.check_host(url.host, url.port)
    if why:
        raise OpenAPIError(
            f"refusing the API target {url.scheme}://{url.netloc.decode()}: {why}; pass --allow-private-targets if you mean it"
        )
    return url


def serve_openapi(source: str | Path | Mapping[str, Any], **kw: Any) -> OpenAPIRuntime:
    """Load ``source`` and return the runtime to ``async with`` (see :class:`OpenAPIRuntime`)."""
    return OpenAPIRuntime(load_document(source), **kw)


def looks_like_openapi(path: str | Path) -> bool:
    """True for a file whose top level says ``openapi: 3…`` or ``swagger:`` (``mcpaql serve FILE``)."""
    try:
        head = Path(path).read_text(encoding="utf-8")[:4096]
    except OSError:
        return False
    return re.search(r"""^\s*["']?(openapi|swagger)["']?\s*:""", head, re.M) is not None
