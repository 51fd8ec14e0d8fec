"""From an upstream MCP tool to an :class:`OperationSpec`, and from its result to envelope data.

* Names: the operation is the tool name in snake_case (``get-tiny-image`` → ``get_tiny_image``);
  the tool name is kept as ``origin``. Parameters are snake_case too, with ``map_to`` set to
  the upstream spelling, so every call is forwarded under the names the upstream expects.
* Schemas: each parameter keeps its full upstream schema (``$ref``s inlined by
  :func:`~mcpaql.protocol.schema.resolve`, nested shapes named for ``introspect types``).
  Descriptions are the upstream ones, verbatim; nothing else (icons, provenance) is added,
  so an operation's introspection detail stays no larger than the tool definition it replaces.
* Results (:func:`result_data`): one text block → the text; structured content whose text
  blocks only repeat it → the structured object; anything else → the MCP content blocks as
  they came (images, audio, resources, links, annotations) — lossless and without wrappers
  added when none are needed. READ operations built with ``field_selection=True`` (``wrap``)
  also take ``fields``, which projects a JSON result (see :mod:`.fields`). ``isError`` results and JSON-RPC errors become
  :class:`MCPAQLError` codes by message inspection (REQ-ERR-007's status table).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from ...protocol.categories import Category
from ...protocol.context import Context
from ...protocol.errors import MCPAQLError
from ...protocol.operations import NO_DEFAULT, OperationSpec, ParamSpec, TypeRef, TypeSpec, type_specs
from ...protocol.registry import NAME_RE
from ...protocol.schema import TYPE_NAME_KEY, SchemaContext, pascal, resolve, strip_null, type_label
from .classify import Classification, classify, snake_name
from .fields import FIELDS, fields_param, select, wants_fields
from .messages import MAX_INPUT, Redactor, argument_strings, strip_traces, summarise

CTX_PARAM = "_mcpaql_ctx"
RESULT_TYPE = TypeRef("ToolResult", "object")
# A tool-definition key (never shown to a model: tokens count only MCP's fields) holding the schema
# of what a call returns when the source knows it but MCP's outputSchema cannot say it (OpenAPI).
RETURNS_KEY = "x-mcpaql-returns"

# Calls an upstream tool: (tool name, arguments with upstream names, context) → CallToolResult
# as a wire dict (``content``, ``structuredContent``, ``isError``, ``_meta``).
CallFn = Callable[[str, dict[str, Any], Context], Awaitable[dict[str, Any]]]


def param_name(original: str) -> str:
    """``issueNumber`` / ``issue-number`` / ``$filter`` → ``issue_number`` / ``filter``."""
    return snake_name(original)


def params_from_schema(
    op_name: str, input_schema: Mapping[str, Any] | None, context: SchemaContext | None = None
) -> tuple[list[ParamSpec], list[TypeSpec]]:
    """Parameters and nested types of one tool. ``context`` is shared by all the tools of one
    registry: type names stay distinct across them and shared ``$ref`` targets are resolved once.
    Raises :class:`SchemaTooComplex` for a schema past the depth/size budget."""
    schema = dict(input_schema or {})
    required = {r for r in schema.get("required") or [] if isinstance(r, str)}
    # Resolve the whole input schema once so ``$defs`` shared between parameters are resolved once.
    resolved = resolve(schema, pascal(op_name, "input"), context)
    props = resolved.get("properties")
    props = props if isinstance(props, dict) else {}
    params: list[ParamSpec] = []
    types: list[TypeSpec] = []
    used: set[str] = set()
    for original, pschema in props.items():
        name = param_name(original)
        if name in used or not NAME_RE.match(name):
            name = f"{name}_{len(used)}"
        used.add(name)
        if not isinstance(pschema, dict):
            pschema = {}
        params.append(
            ParamSpec(
                name=name,
                schema=pschema,
                required=original in required,
                map_to=original if original != name else None,
                # A documented default is applied like any MCP-AQL default (OPS §5.4), so what
                # introspection promises is what the upstream receives. A ``null`` default is left
                # to the upstream: FastMCP servers declare ``{"type": "string", "default": null}``
                # and reject the null they documented (office-word-mcp-server).
                default=pschema["default"] if pschema.get("default") is not None and original not in required else NO_DEFAULT,
                sensitive=bool(pschema.get("writeOnly")) or pschema.get("format") == "password",
            )
        )
        types.extend(type_specs(pschema, context))
    return params, types


def returns_from_schema(
    op_name: str, schema: Mapping[str, Any] | None, context: SchemaContext | None = None
) -> tuple[TypeRef, list[TypeSpec]]:
    """``returns`` (a TypeInfo) for a result schema (an OpenAPI 2xx JSON response or an MCP
    ``outputSchema``), plus the named types it uses; no schema → the generic ``ToolResult``."""
    if not isinstance(schema, Mapping) or not schema:
        return RESULT_TYPE, []
    resolved = strip_null(resolve(dict(schema), pascal(op_name, "result"), context))
    types = type_specs(resolved, context)
    name = resolved.get(TYPE_NAME_KEY)
    desc = resolved.get("description") if isinstance(resolved.get("description"), str) else None
    if name and "enum" in resolved:
        return TypeRef(str(name), "enum", desc), types
    label = type_label(resolved)
    if name and label == name:
        return TypeRef(label, "object", desc), types
    if label.endswith("[]"):
        return TypeRef(label, "object", desc or f"Array of {label[:-2]}"), types
    kind = "union" if " | " in label else "object" if label in ("object", "array", "any") else "scalar"
    return TypeRef(label.title() if kind != "union" else label, kind, desc), types


def spec_from_tool(
    tool: Mapping[str, Any],
    call: CallFn,
    *,
    name: str | None = None,
    classification: Classification | None = None,
    upstream: str | None = None,
    field_selection: bool = False,
    schemas: SchemaContext | None = None,
) -> OperationSpec:
    """One operation per upstream tool; the handler forwards to ``call`` (upstream ``tools/call``).

    ``field_selection`` adds the ``fields`` parameter to a READ operation whose tool has none.
    ``schemas`` is the registry's shared :class:`SchemaContext` (distinct type names, shared refs).
    ``returns`` comes from the tool's result schema (:data:`RETURNS_KEY`, else ``outputSchema``).
    """
    tool_name = str(tool["name"])
    c = classification or classify(tool)
    op_name = name or snake_name(tool_name)
    params, types = params_from_schema(op_name, tool.get("inputSchema"), schemas)
    returns, result_types = returns_from_schema(op_name, tool.get(RETURNS_KEY) or tool.get("outputSchema"), schemas)
    description = " ".join(str(tool.get("description") or tool.get("title") or op_name.replace("_", " ")).split())
    selectable = field_selection and c.category is Category.READ and wants_fields(params)
    if selectable:
        params.append(fields_param())
    output_schema = tool.get("outputSchema") if isinstance(tool.get("outputSchema"), dict) else None

    async def handler(**kwargs: Any) -> Any:
        ctx: Context = kwargs.pop(CTX_PARAM)
        fields = kwargs.pop(FIELDS, None) if selectable else None
        try:
            result = await call(tool_name, kwargs, ctx)
        except MCPAQLError as e:
            raise renamed(e, tool_name, op_name) from None
        data = result_data(result, op_name, keep=argument_strings(kwargs), origin=tool_name)  # raises for isError
        return data if fields is None else select(data, fields, op_name, output_schema)

    return OperationSpec(
        name=op_name,
        category=c.category,
        description=description,
        handler=handler,
        params=tuple(params),
        returns=returns,
        types=(*types, *result_types),
        danger_level=c.danger_level,
        dangerous=c.danger_level in ("dangerous", "forbidden"),
        context_param=CTX_PARAM,
        is_async=True,
        origin=tool_name,
        extensions={
            "upstream": upstream,
            "classification": c.as_dict(),
            "annotations": dict(tool.get("annotations") or {}),
            **({"field_selection": True} if selectable else {}),
        },
    )


# ---- results ---------------------------------------------------------------------------------


def _text_repeats(text: str, structured: Any) -> bool:
    """True if a text block is just a JSON rendering of the structured content (or of its only
    field, as servers that wrap a list in ``{"entities": [...]}`` do)."""
    try:
        parsed = json.loads(text)
    except ValueError:
        return False
    if parsed == structured:
        return True
    return isinstance(structured, dict) and len(structured) == 1 and parsed == next(iter(structured.values()))


def result_data(result: Mapping[str, Any], tool: str = "", *, keep: Iterable[str] = (), origin: str | None = None) -> Any:
    """Envelope ``data`` for a CallToolResult (wire dict); raises for ``isError`` results (named
    ``tool``, the exposed operation; paths in ``keep``, the call's arguments, stay in the message)."""
    content = list(result.get("content") or [])
    if result.get("isError"):
        raise upstream_error(_joined_text(content) or "the upstream tool reported an error", tool=tool, keep=keep, origin=origin)
    structured = result.get("structuredContent")
    meta = result.get("_meta")
    if (
        structured is not None
        and not meta
        and all(b.get("type") == "text" and set(b) <= {"type", "text"} and _text_repeats(b["text"], structured) for b in content)
    ):
        return structured
    if structured is None and not meta and len(content) == 1 and set(content[0]) == {"type", "text"}:
        return content[0]["text"]
    if structured is None and not meta and not content:
        return None
    out: dict[str, Any] = {"content": content}
    if structured is not None:
        out["structuredContent"] = structured
    if meta:
        out["_meta"] = meta
    return out


def data_content(data: Any) -> tuple[list[dict[str, Any]], Any]:
    """The inverse of :func:`result_data`: ``(content blocks, structuredContent)``.

    For the structured case the text block is the upstream's own JSON rendering, which is not
    kept; callers compare structured content instead (see the parity tests).
    """
    if isinstance(data, str):
        return [{"type": "text", "text": data}], None
    if data is None:
        return [], None
    if (
        isinstance(data, dict)
        and isinstance(data.get("content"), list)
        and set(data) <= {"content", "structuredContent", "_meta"}
    ):
        return data["content"], data.get("structuredContent")
    return [], data


def renamed(e: MCPAQLError, origin: str, name: str) -> MCPAQLError:
    """``e`` with the upstream's name for an operation replaced by the exposed one in its message
    (the lane raises with the name it called; the model only knows ``name``)."""
    if origin == name:
        return e
    for old, new in ((f"upstream tool {origin} failed", f"upstream tool {name} failed"), (f"{origin}: ", f"{name}: ")):
        if old in e.message:
            e.message = e.message.replace(old, new, 1)
            e.args = (e.message,)
            break
    return e


def _joined_text(content: list[Mapping[str, Any]]) -> str:
    return "\n".join(str(b.get("text", "")) for b in content if b.get("type") == "text").strip()


# ---- errors (REQ-ERR-007) --------------------------------------------------------------------
#
# Without an HTTP status the upstream's words decide (wrapped MCP tools, JSON-RPC errors). The
# rules are tried in order and the first match wins; each names what it recognises:
#
# * RATE_LIMIT_EXCEEDED — "429", "rate limit", "too many requests";
# * PERMISSION_DENIED — "401"/"403", "unauthorized", "forbidden", "permission denied", "access
#   denied", "not permitted", EACCES/EPERM, "outside (the) allowed …", "not in (the) allowed list",
#   "<path|host|command|…> is not allowed", "read-only transaction/mode/database/file system",
#   "insufficient permissions/privileges/scope", "bad credentials", "requires authentication";
# * NOT_FOUND_RESOURCE — "404", "not found", "no such (file…)", "does not exist", "could not /
#   cannot / unable to find", ENOENT, "unknown repository/issue/file/entity/…";
# * CONFLICT_ALREADY_EXISTS — "409", "already exists", EEXIST, "conflict";
# * VALIDATION_MISSING_PARAM — "missing required", "required parameter/argument/property", "is required";
# * VALIDATION_UNKNOWN_PARAM — "additional properties", "unexpected (keyword) argument", "unknown /
#   unrecognized parameter/field/option", "extra fields not permitted";
# * VALIDATION_INVALID_TYPE — a type named as expected ("must be a string", "expected … got …",
#   "should be a valid integer", "wrong type", "TypeError");
# * VALIDATION_INVALID_VALUE — a value outside its constraint ("must point to …", "must be one
#   of / between / at least …", "is not one of", "not a valid …", "out of range", "unsupported
#   file type/format/extension", "invalid value/format/path/url/date…", "too long/short/large");
# * VALIDATION_INVALID_TYPE — any other "invalid", "validation", "malformed", "bad request", "400"/"422";
# * anything else → INTERNAL_ERROR.
#
# With a status (HTTP APIs) the status decides, as REQ-ERR-007's table says; for 400/422 the body
# tells a missing or unknown parameter from a bad one (REQ-ERR-008).

_RULES: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b(429|rate.?limit|too many requests|secondary rate)", re.I), "RATE_LIMIT_EXCEEDED"),
    (
        re.compile(
            r"\b(401|403|unauthori[sz]ed|forbidden|permission denied|access denied|not permitted|EACCES|EPERM|"
            r"outside (of )?(the )?allowed|not (in|on) (the |an? )?(allowed|allow) ?list|"
            r"(path|directory|file|host|domain|url|command|operation|action|access|writes?|method) (is |are )?not allowed|"
            r"read[- ]only (transaction|mode|database|connection|file ?system|session|replica|access)|"
            r"in read[- ]only mode|insufficient (permission|privilege|scope|access)|bad credentials|"
            r"requires authentication)",
            re.I,
        ),
        "PERMISSION_DENIED",
    ),
    (
        re.compile(
            r"\b(404|not found|no such|does not exist|doesn't exist|do not exist|could not find|"
            r"can ?not find|unable to find|ENOENT|unknown (repository|issue|file|entity|node|user|project|table|"
            r"database|resource|document|sheet|worksheet))",
            re.I,
        ),
        "NOT_FOUND_RESOURCE",
    ),
    (re.compile(r"\b(409|already exists|EEXIST|conflict)", re.I), "CONFLICT_ALREADY_EXISTS"),
    (
        re.compile(r"\b(missing required|required (parameter|argument|property|field)|is required)", re.I),
        "VALIDATION_MISSING_PARAM",
    ),
    (
        re.compile(
            r"\b(additional propert(y|ies)|unexpected (keyword )?(argument|parameter|field|property)|"
            r"unknown (parameter|argument|field|property|option)|unrecogni[sz]ed (key|field|argument|parameter|option)|"
            r"extra (fields?|inputs?) (are )?not permitted)",
            re.I,
        ),
        "VALIDATION_UNKNOWN_PARAM",
    ),
    (
        re.compile(
            r"\b((must|should) be (a |an )?(valid )?(string|number|integer|int|float|boolean|bool|array|list|object|"
            r"dict|mapping)\b|expected .* (got|received)|wrong type|invalid type|TypeError)",
            re.I,
        ),
        "VALIDATION_INVALID_TYPE",
    ),
    (
        re.compile(
            r"\b(must (point to|refer to|reference|match|be (one of|between|at (least|most)|less|greater|"
            r"positive|negative|non-?empty|an? \w+ (file|path|url|id|name|value|range|address)))|is not one of|"
            r"not an? valid|out of (range|bounds)|unsupported (file )?(type|format|extension|value)|"
            r"invalid (value|format|range|path|url|uri|date|time|email|extension|cell|reference|name|id)|"
            r"too (long|short|large|small|many|few)|exceeds (the )?(maximum|limit))",
            re.I,
        ),
        "VALIDATION_INVALID_VALUE",
    ),
    (
        re.compile(r"\b(400|422|invalid|validation|must be|expected .* (got|received)|malformed|bad request)", re.I),
        "VALIDATION_INVALID_TYPE",
    ),
)
_MISSING = next(p for p, code in _RULES if code == "VALIDATION_MISSING_PARAM")
_UNKNOWN = next(p for p, code in _RULES if code == "VALIDATION_UNKNOWN_PARAM")


def code_for_message(message: str, status: int | None = None) -> str:
    """REQ-ERR-007: HTTP status when known, else the message's wording (the rules above);
    unknown → INTERNAL_ERROR."""
    if status is not None:
        if status in (400, 422):  # REQ-ERR-008: the body tells a missing or unknown parameter from a bad one
            if _MISSING.search(message):
                return "VALIDATION_MISSING_PARAM"
            return "VALIDATION_UNKNOWN_PARAM" if _UNKNOWN.search(message) else "VALIDATION_INVALID_TYPE"
        if status in (401, 403):
            return "PERMISSION_DENIED"
        if status == 404:
            return "NOT_FOUND_RESOURCE"
        if status == 409:
            return "CONFLICT_ALREADY_EXISTS"
        if status == 429:
            return "RATE_LIMIT_EXCEEDED"
        if status >= 500:
            return "INTERNAL_ERROR"
        if 400 <= status < 500:
            return "VALIDATION_INVALID_TYPE"
    for pattern, code in _RULES:
        if pattern.search(message):
            return code
    return "INTERNAL_ERROR"


def upstream_error(
    message: str,
    *,
    tool: str = "",
    status: int | None = None,
    rpc_code: int | None = None,
    redact: Redactor | None = None,
    keep: Iterable[str] = (),
    lead: str = "",
    origin: str | None = None,
) -> MCPAQLError:
    """An upstream failure as an MCPAQLError named after operation ``tool`` (the exposed name).

    The upstream's own words are kept — they name the bad argument or the missing file — but as
    a safe preview (:func:`~.messages.summarise`: secrets in ``redact`` removed, traces, HTML and
    file paths other than those in ``keep`` dropped, clipped); ``lead`` (``HTTP 502 Bad Gateway``)
    goes first; ``origin`` (the upstream's own name for it) goes in ``details``. The code comes
    from ``status``, else from the words (traces removed first, so a frame's file name cannot
    decide it)."""
    code = code_for_message(strip_traces((redact or Redactor())(message[:MAX_INPUT])), status)
    if rpc_code == -32602 and code == "INTERNAL_ERROR":
        code = "VALIDATION_INVALID_TYPE"
    if rpc_code == -32601:
        code = "NOT_FOUND_OPERATION"
    details: dict[str, Any] = {"upstream_tool": origin or tool} if origin or tool else {}
    if rpc_code is not None:
        details["upstream_code"] = rpc_code
    if status is not None:
        details["http_status"] = status
    preview = summarise(message, redact=redact, keep=keep)
    msg = f"{lead}: {preview}" if lead and preview else (lead or preview or "no details given")
    if code == "INTERNAL_ERROR":
        msg = f"Internal error: 'upstream tool {tool or '(unknown)'} failed: {msg}'"
    elif tool:
        msg = f"{tool}: {msg}"
    return MCPAQLError(code, msg, details or None)
