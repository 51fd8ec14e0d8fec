"""The ``introspect`` operation (CORE §7; CHECKLIST Part C).

Everything is rendered once when the engine is built, from the operation specs (the single
source of truth, INTRO §6.1); a call only picks a precomputed payload and, for the
operations list, adds ``_protocol`` with this session's id. Responses are therefore
consistent within a session and across sessions until the configuration changes.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ..config import INTROSPECT_PAGE_MAX, INTROSPECT_PAGE_SIZE
from .categories import Category
from .errors import MCPAQLError, invalid_type, invalid_value
from .listing import element_type
from .operations import OperationSpec, ParamSpec, TypeRef, TypeSpec
from .schema import json_type_of

SPEC_VERSION = "1.0.0-draft"
QUERY_TYPES = ("operations", "types")

PROTOCOL_TYPES: tuple[TypeSpec, ...] = (
    TypeSpec("SemanticCategory", "enum", "Effect of an operation on state", tuple(c.value for c in Category)),
    TypeSpec(
        "OperationInput",
        "object",
        "The request every MCP-AQL tool takes",
        fields=(
            {"name": "operation", "type": "string", "required": True, "description": "The operation to perform"},
            {"name": "params", "type": "object", "required": False, "description": "Operation-specific parameters"},
        ),
    ),
    TypeSpec(
        "OperationSuccess",
        "object",
        "Successful result",
        fields=(
            {"name": "success", "type": "boolean", "required": True, "description": "Always true"},
            {"name": "data", "type": "any", "required": True, "description": "Operation result"},
            {"name": "warnings", "type": "Warning[]", "required": False, "description": "Non-fatal notices"},
        ),
    ),
    TypeSpec(
        "OperationFailure",
        "object",
        "Failed result",
        fields=(
            {"name": "success", "type": "boolean", "required": True, "description": "Always false"},
            {"name": "error", "type": "ErrorInfo", "required": True, "description": "{code, message, details?}"},
        ),
    ),
    TypeSpec(
        "ErrorInfo",
        "object",
        "Structured error",
        fields=(
            {"name": "code", "type": "string", "required": True, "description": "CATEGORY_SPECIFIC_CONDITION"},
            {"name": "message", "type": "string", "required": True, "description": "Human-readable message"},
            {"name": "details", "type": "object", "required": False, "description": "Machine-readable context"},
        ),
    ),
    TypeSpec(
        "Warning",
        "object",
        "Non-fatal notice on a success response (WARN §3)",
        fields=(
            {"name": "code", "type": "string", "required": True, "description": "CATEGORY_SPECIFIC_CONDITION"},
            {"name": "message", "type": "string", "required": True, "description": "Human-readable message"},
            {"name": "details", "type": "object", "required": False, "description": "Machine-readable context"},
            {"name": "severity", "type": "string", "required": False, "enum": ["low", "medium", "high"]},
        ),
    ),
    TypeSpec(
        "EndpointPermissions",
        "object",
        "Permission characteristics of an operation's category",
        fields=(
            {"name": "readOnly", "type": "boolean", "required": True},
            {"name": "destructive", "type": "boolean", "required": True},
        ),
    ),
    TypeSpec(
        "BatchRequest",
        "object",
        "Several operations in one call, run in order; send through any tool",
        fields=(
            {
                "name": "operation",
                "type": "string",
                "required": False,
                "enum": ["batch"],
                "description": "'batch' (optional; lets schema-validating clients send a batch)",
            },
            {"name": "operations", "type": "OperationInput[]", "required": True, "description": "1-100 requests"},
            {
                "name": "_stop_on_failure",
                "type": "boolean",
                "required": False,
                "default": False,
                "description": "Stop at the first failed item",
            },
        ),
    ),
    TypeSpec("OperationResult", "union", "Any operation's response", members=("OperationSuccess", "OperationFailure")),
    TypeSpec("DateTime", "scalar", "ISO 8601 date-time string, UTC with 'Z' suffix in responses"),
)


def check_query(value: Any, path: str) -> Any:
    """Checker for the built-in ``query`` parameter: type only. The ``enum`` stays in the
    documented schema, but an unsupported string must reach :meth:`Introspector.run` so the
    client gets ``INVALID_QUERY_TYPE`` (CHECKLIST C.10), not ``VALIDATION_INVALID_VALUE``."""
    if not isinstance(value, str):
        raise invalid_type(path, "string", json_type_of(value))
    return value


# Listing filters and paging: spec extensions (INTRO §8.3(4) "filtering/pagination for large
# operation lists"), documented in docs/listings.md. The page's totalCount and pageInfo ride in
# ``_protocol.page``: OperationsListData is closed, ProtocolMetadata is open (INTRO §8.3(2)).
FILTER_PARAMS = ("category", "endpoint", "element_type", "prefix", "search")
PAGE_PARAMS = ("first", "after")
LISTING_PARAMS = (*FILTER_PARAMS, *PAGE_PARAMS)
_TEXT = {"type": "string", "minLength": 1, "maxLength": 200}
_CURSOR_TAG = "op:"


def _listing_params() -> tuple[ParamSpec, ...]:
    return (
        ParamSpec("category", dict(_TEXT), description="Operations filter: semantic category (CREATE, READ, ...)"),
        ParamSpec("endpoint", dict(_TEXT), description="Operations filter: endpoint family or its tool name"),
        ParamSpec("element_type", dict(_TEXT), description="Operations filter: element type, e.g. pull_request"),
        ParamSpec("prefix", dict(_TEXT), description="Operations filter: name prefix"),
        ParamSpec("search", dict(_TEXT), description="Operations filter: words all found in name or description"),
        ParamSpec(
            "first",
            {"type": "integer", "minimum": 1, "maximum": INTROSPECT_PAGE_MAX},
            description=f"Page size (default {INTROSPECT_PAGE_SIZE}); _protocol.page has totalCount and pageInfo",
        ),
        ParamSpec(
            "after", {"type": "string", "minLength": 1, "maxLength": 400}, description="pageInfo.endCursor of the previous page"
        ),
    )


def encode_cursor(name: str) -> str:
    """Keyset cursor: the last operation name shown. No secret is needed (the listing is public
    and a forged cursor can only name a place in it), and the same page gives the same cursor in
    every build of the same registry."""
    return base64.urlsafe_b64encode((_CURSOR_TAG + name).encode()).rstrip(b"=").decode("ascii")


def decode_cursor(cursor: str) -> str | None:
    """The operation name inside a cursor, or None when it is not one of ours."""
    try:
        raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode("utf-8")
    except (binascii.Error, ValueError):
        return None
    return raw[len(_CURSOR_TAG) :] if raw.startswith(_CURSOR_TAG) else None


def bad_cursor(reason: str) -> MCPAQLError:
    return invalid_value(
        "after",
        "cursor",
        f"is not a cursor of this listing ({reason}). Use _protocol.page.pageInfo.endCursor from the "
        "previous page, or omit 'after' to start from the first page",
        hint="Omit 'after' to start from the first page",
    )


def refuse_listing(what: str, listing: dict[str, Any]) -> None:
    """Listing filters and paging apply to the operations list only; elsewhere they are refused,
    not ignored (INTRO §8.2.1: parameters are never silently dropped)."""
    given = sorted(k for k, v in listing.items() if v is not None)
    if given:
        raise invalid_value(
            given[0],
            "listing",
            f"filters and pages the operations list; it cannot be used with {what}",
            hint="Send listing filters with {query: 'operations'} and no 'name'",
        )


def introspect_spec(family: str) -> OperationSpec:
    """The built-in ``introspect`` operation on ``family``; its handler is bound by the engine."""
    return OperationSpec(
        name="introspect",
        category=Category.READ,
        endpoint=family,
        description="Discover available operations and types. Unknown names return null, not an error.",
        params=(
            ParamSpec(
                "query",
                {"type": "string", "enum": list(QUERY_TYPES)},
                required=True,
                description="What to list: 'operations' or 'types'",
            ),
            ParamSpec("name", {"type": "string"}, description="An operation or type name for its full detail"),
            *_listing_params(),
        ),
        returns=TypeRef("IntrospectionResult", "object", "operations/types list or one detail"),
        examples=(
            {"description": "List operations", "request": {"operation": "introspect", "params": {"query": "operations"}}},
            {
                "description": "Types list",
                "request": {"operation": "introspect", "params": {"query": "types"}},
            },
            {
                "description": "Operations matching words, 20 per page (extension)",
                "request": {"operation": "introspect", "params": {"query": "operations", "search": "pull request", "first": 20}},
            },
        ),
        context_param="ctx",
        is_async=True,
    )


class Introspector:
    """Precomputed introspection payloads for one engine."""

    def __init__(
        self,
        ops: list[OperationSpec],
        details: dict[str, dict[str, Any]],
        types: list[TypeSpec],
        protocol: dict[str, Any],
        page_size: int = INTROSPECT_PAGE_SIZE,
    ) -> None:
        self._ops_list = [op.list_info() for op in ops]
        # Filter keys per operation, computed once: a filtered page scans these, never the specs.
        self._keys = [
            (info["semantic_category"], info["endpoint"], element_type(op), op.name, f"{op.name} {op.description}".lower())
            for op, info in zip(ops, self._ops_list, strict=True)
        ]
        self._position = {op.name: i for i, op in enumerate(ops)}
        self._page_size = page_size
        endpoints = protocol.get("endpoints") or {}
        self._families = {info["endpoint"] for info in self._ops_list}
        # An endpoint filter may name the family or its tool (what a model sees in tools/list).
        self._tool_family = {tool: fam for fam, tool in endpoints.items() if fam in self._families}
        self._details = details
        all_types: dict[str, TypeSpec] = {}
        for t in (*PROTOCOL_TYPES, *types):
            all_types.setdefault(t.name, t)
        self._types_list = [t.info() for t in all_types.values()]
        self._type_details = {name: t.detail() for name, t in all_types.items()}
        self._protocol = protocol

    def protocol(self, session_id: str) -> dict[str, Any]:
        return {**self._protocol, "session_id": session_id}

    def run(
        self, query: Any, name: Any, session_id: str, extra: tuple[str, ...] = (), listing: dict[str, Any] | None = None
    ) -> dict[str, Any]:
        if query not in QUERY_TYPES:
            raise MCPAQLError(
                "INVALID_QUERY_TYPE",
                f"Unknown query type: '{query}'. Supported types: {', '.join((*QUERY_TYPES, *extra))}",
            )
        given = {k: v for k, v in (listing or {}).items() if v is not None}
        if query != "operations":
            refuse_listing(f"query '{query}'", given)
        elif name is not None:
            refuse_listing("'name' (one operation's detail)", given)
        if query == "operations":
            if name is None:
                return self.operations_page(session_id, given)
            return {"operation": self._details.get(name)}
        if name is None:
            return {"types": self._types_list}
        return {"type": self._type_details.get(name)}

    # ---- the operations list: filters and pages (extensions, docs/listings.md) -----------------

    def _matcher(self, given: dict[str, Any]) -> list[tuple[int, Any]]:
        """(key index, test) pairs for the filters given; bad values are refused, unknown ones match nothing."""
        tests: list[tuple[int, Any]] = []
        if "category" in given:
            cat = str(given["category"]).upper()
            if cat not in {c.value for c in Category}:
                raise invalid_value(
                    "category",
                    "enum",
                    f"must be one of {', '.join(c.value for c in Category)}",
                    valid_values=[c.value for c in Category],
                )
            tests.append((0, cat.__eq__))
        if "endpoint" in given:
            fam = self._tool_family.get(given["endpoint"], given["endpoint"])
            if fam not in self._families:
                valid = sorted(self._families)
                msg = f"must be one of {', '.join(valid)} (or their tool names)"
                raise invalid_value("endpoint", "enum", msg, valid_values=valid)
            tests.append((1, fam.__eq__))
        if "element_type" in given:
            tests.append((2, str(given["element_type"]).lower().__eq__))
        if "prefix" in given:
            prefix = str(given["prefix"]).lower()
            tests.append((3, lambda n: n.startswith(prefix)))
        if "search" in given:
            words = str(given["search"]).lower().split()
            tests.append((4, lambda text: all(w in text for w in words)))
        return tests

    def operations_page(self, session_id: str, given: dict[str, Any]) -> dict[str, Any]:
        """One page of the (filtered) operations list. Without filters or paging and with the whole
        list fitting the default page, the answer is exactly the spec's: no ``_protocol.page``."""
        size = given.get("first", self._page_size)
        start = 0
        if "after" in given:
            last = decode_cursor(given["after"])
            if last is None:
                raise bad_cursor("malformed")
            pos = self._position.get(last)
            if pos is None:
                raise bad_cursor("it names an operation this server does not list")
            start = pos + 1
        tests = self._matcher(given)
        hits = [i for i, key in enumerate(self._keys) if all(t(key[k]) for k, t in tests)]
        total = len(hits)
        if start:
            hits = [i for i in hits if i >= start]
        page = [self._ops_list[i] for i in hits[:size]]
        more = len(hits) > size
        protocol = self.protocol(session_id)
        if given or more:
            protocol["page"] = {
                "totalCount": total,
                "pageInfo": {"hasNextPage": more, "endCursor": encode_cursor(page[-1]["name"]) if page else None},
            }
        return {"_protocol": protocol, "operations": page}
