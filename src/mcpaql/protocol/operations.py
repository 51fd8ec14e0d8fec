"""Operation specs: every operation is data, and everything else is derived from it.

An :class:`OperationSpec` is what every backend (Python functions, adapter-schema files,
wrapped MCP servers) produces. The registry compiles it once; the tool surface, request
validation, routing, gatekeeping and introspection are all read from it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .categories import CRUDE_ENDPOINT_FOR, Category
from .schema import SchemaContext, parameter_info, walk_named

NO_DEFAULT: Any = ...


_DESTRUCTIVE_DANGER = ("destructive", "dangerous", "forbidden")


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """One request parameter. ``schema`` is a resolved JSON Schema for its value.

    ``map_to`` is the name the handler (or upstream) receives when it differs from the public
    snake_case name; ``convert`` turns the checked JSON value into the handler's Python value
    (e.g. a pydantic model); ``closed`` rejects unknown keys inside nested objects.
    """

    name: str
    schema: dict[str, Any] = field(default_factory=dict)
    required: bool = False
    description: str | None = None
    default: Any = NO_DEFAULT
    sensitive: bool = False
    map_to: str | None = None
    convert: Callable[[Any], Any] | None = None
    allow_nul: bool = False
    closed: bool = False
    # Explicit ``null`` is accepted and means "absent" (the handler's default applies).
    nullable: bool = False

    @property
    def target(self) -> str:
        return self.map_to or self.name

    def info(self) -> dict[str, Any]:
        return parameter_info(self.name, self.schema, self.required, self.description, self.default, self.sensitive)


@dataclass(frozen=True, slots=True)
class TypeRef:
    """``returns`` in operation detail: a TypeInfo ``{name, kind, description?}``."""

    name: str
    kind: str = "object"
    description: str | None = None

    def info(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.description:
            d["description"] = self.description
        return d


@dataclass(frozen=True, slots=True)
class TypeSpec:
    """A type in the ``introspect types`` registry (exactly one TypeDetails variant)."""

    name: str
    kind: str  # enum | object | scalar | union
    description: str | None = None
    values: tuple[str, ...] = ()
    fields: tuple[dict[str, Any], ...] = ()
    members: tuple[str, ...] = ()

    def info(self) -> dict[str, Any]:
        d: dict[str, Any] = {"name": self.name, "kind": self.kind}
        if self.description:
            d["description"] = self.description
        return d

    def detail(self) -> dict[str, Any]:
        d = self.info()
        if self.kind == "enum":
            d["values"] = list(self.values)
        elif self.kind == "object":
            d["fields"] = [dict(f) for f in self.fields]
        elif self.kind == "union":
            d["members"] = list(self.members)
        return d


@dataclass(frozen=True, slots=True)
class OperationSpec:
    """A single MCP-AQL operation. ``endpoint`` defaults to the CRUDE family of ``category``."""

    name: str
    category: Category
    description: str
    handler: Callable[..., Any] | None = None
    endpoint: str | None = None
    params: tuple[ParamSpec, ...] = ()
    returns: TypeRef = TypeRef("object", "scalar", "Any JSON value")
    examples: tuple[dict[str, Any], ...] = ()
    types: tuple[TypeSpec, ...] = ()
    lifecycle: dict[str, Any] | None = None
    computed_fields: tuple[dict[str, Any], ...] | None = None
    aggregation_support: dict[str, Any] | None = None
    relationship_capabilities: dict[str, Any] | None = None
    danger_level: str | None = None
    dangerous: bool = False
    context_param: str | None = None
    is_async: bool = False
    origin: str | None = None
    extensions: dict[str, Any] = field(default_factory=dict)

    @property
    def family(self) -> str:
        return self.endpoint or CRUDE_ENDPOINT_FOR[self.category]

    @property
    def destructive(self) -> bool:
        """Destructive by category (UPDATE/DELETE/EXECUTE), by danger level, or because the
        upstream it forwards to says so (``destructiveHint: true`` on a wrapped tool): a CREATE
        that overwrites (excel's ``write_range``) is destructive too."""
        upstream = self.extensions.get("annotations") or {}
        return self.category.destructive or self.danger_level in _DESTRUCTIVE_DANGER or upstream.get("destructiveHint") is True

    @property
    def idempotent(self) -> bool:
        """READ, or what a wrapped upstream declares (``idempotentHint: true``)."""
        upstream = self.extensions.get("annotations") or {}
        return self.category.idempotent or upstream.get("idempotentHint") is True

    def open_world(self, default: bool) -> bool:
        """A wrapped tool's own ``openWorldHint`` (absent means true, as in MCP); else ``default``."""
        upstream = self.extensions.get("annotations")
        if not isinstance(upstream, dict):
            return default
        return upstream.get("openWorldHint", True) is not False

    def list_info(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "semantic_category": self.category.value,
            "endpoint": self.family,
            "description": self.description,
        }

    def detail(self, mcp_tool: str) -> dict[str, Any]:
        """OperationDetails (CHECKLIST C.4): only the keys the closed schema allows."""
        d: dict[str, Any] = {
            "name": self.name,
            "semantic_category": self.category.value,
            "endpoint": self.family,
            "mcpTool": mcp_tool,
            "description": self.description,
            "permissions": {"readOnly": self.category.read_only, "destructive": self.destructive},
            "parameters": [p.info() for p in self.params],
            "returns": self.returns.info(),
        }
        if self.examples:
            d["examples"] = [dict(e) for e in self.examples]
        if self.computed_fields:
            d["computed_fields"] = [dict(c) for c in self.computed_fields]
        if self.aggregation_support:
            d["aggregation_support"] = dict(self.aggregation_support)
        if self.relationship_capabilities:
            d["relationship_capabilities"] = dict(self.relationship_capabilities)
        if self.lifecycle:
            d["lifecycle"] = dict(self.lifecycle)
        return d


def type_specs(schema: dict[str, Any], context: SchemaContext | None = None) -> list[TypeSpec]:
    """Every named object/enum shape inside a resolved schema, as ``introspect types`` entries
    (so nested models and enums are listed, not flattened). With the ``context`` the schema was
    resolved in, each shared shape's entry is built once for all the operations that use it."""
    found: list[TypeSpec] = []
    cache: dict[Any, TypeSpec] = context.cache if context is not None else {}

    def visit(name: str, node: dict[str, Any]) -> None:
        # A "$ref" beside a description is a shallow variant sharing the target's properties.
        key = ("type", name, id(node.get("properties") or node.get("enum") or node))
        hit = cache.get(key)
        if hit is None:
            hit = cache[key] = _type_spec(name, node)
            if context is not None:
                context.cache[("keep", key)] = node  # keeps the ids in the key alive with the cache
        found.append(hit)

    walk_named(schema, visit, context)
    return found


def _type_spec(name: str, node: dict[str, Any]) -> TypeSpec:
    if "enum" in node:
        return TypeSpec(name, "enum", node.get("description"), tuple(str(v) for v in node["enum"]))
    req = set(node.get("required") or [])
    fields = tuple(parameter_info(k, v, k in req) for k, v in (node.get("properties") or {}).items())
    return TypeSpec(name, "object", node.get("description"), fields=fields)
