"""Relationship queries (REL; CHECKLIST REQ-REL-*): ``query_relationships`` over any graph
an adapter can describe with a ``neighbors(node, direction)`` function.

Traversal is breadth-first to the requested depth (bounded by the declared ``max_depth``),
visited nodes are deduplicated and never expanded twice, and an edge that closes a cycle is
still emitted (REL §5) — so cycles can never cause unbounded expansion (REQ-REL-009). A
node budget caps pathological fan-out with a ``VALIDATION_TRUNCATED_WARNING``.
"""

from __future__ import annotations

import inspect
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..categories import Category
from ..context import Context
from ..errors import not_found_resource
from ..operations import OperationSpec, ParamSpec, TypeRef
from ..session import Session
from ..warnings import truncated
from .pagination import codec_for, invalid_cursor, page_info

PORTABLE_TYPES = ("uses", "extends", "references", "triggers", "composes")
DIRECTIONS = ("incoming", "outgoing", "both")
SECTIONS = ("root", "relationships", "graph.nodes", "graph.edges")
CTX_KEY = "_mcpaql_ctx"

Neighbors = Callable[[dict[str, Any], str], Any]  # -> Iterable[(type, target_ref)] (or awaitable of it)


@dataclass(frozen=True)
class Relationships:
    """``neighbors(node, "outgoing"|"incoming")`` yields ``(relationship_type, target_node)``
    pairs, nodes being ``{element_type, element_name, ...}``; ``exists(node)`` (optional)
    turns an unknown root into ``NOT_FOUND_RESOURCE``."""

    neighbors: Neighbors
    types: Sequence[str] = PORTABLE_TYPES
    max_depth: int = 3
    exists: Callable[[dict[str, Any]], Any] | None = None
    max_nodes: int = 1000
    page_size: int = 100

    def capabilities(self) -> dict[str, Any]:
        return {
            "supported": True,
            "directions": list(DIRECTIONS),
            "relationship_types": list(self.types),
            "max_depth": self.max_depth,
        }


def node_id(node: Mapping[str, Any]) -> str:
    return f"{node.get('element_type')}:{node.get('element_name')}"


def _ref(node: Mapping[str, Any]) -> dict[str, Any]:
    return {"element_type": node.get("element_type"), "element_name": node.get("element_name")}


async def _maybe(v: Any) -> Any:
    return await v if inspect.isawaitable(v) else v


async def traverse(
    rel: Relationships,
    root: dict[str, Any],
    direction: str,
    relationship: str | None = None,
    depth: int = 1,
) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]], bool]:
    """BFS: returns ``(relationships, nodes, edges, truncated)``."""
    dirs = ("outgoing", "incoming") if direction == "both" else (direction,)
    root_id = node_id(root)
    visited = {root_id}
    nodes = [{"id": root_id, **_ref(root)}]
    relationships: list[dict[str, Any]] = []
    edges: list[dict[str, Any]] = []
    seen_edges: set[tuple[str, str, str]] = set()
    frontier: deque[tuple[dict[str, Any], int]] = deque([(root, 0)])
    cut = False
    while frontier:
        node, d = frontier.popleft()
        if d >= depth:
            continue
        nid = node_id(node)
        for dr in dirs:
            for rtype, target in await _maybe(rel.neighbors(node, dr)) or ():
                if relationship is not None and rtype != relationship:
                    continue
                tid = node_id(target)
                src, dst = (nid, tid) if dr == "outgoing" else (tid, nid)
                key = (src, dst, rtype)
                if key not in seen_edges:  # a cycle's closing edge is still emitted once
                    seen_edges.add(key)
                    edges.append({"source": src, "target": dst, "type": rtype})
                    relationships.append({"type": rtype, "direction": dr, "target": _ref(target), "depth": d + 1})
                if tid in visited:
                    continue
                if len(visited) >= rel.max_nodes:
                    cut = True
                    continue
                visited.add(tid)
                nodes.append({"id": tid, **_ref(target)})
                frontier.append((target, d + 1))
    return relationships, nodes, edges, cut


def query_relationships(
    rel: Relationships,
    *,
    name: str = "query_relationships",
    description: str | None = None,
    endpoint: str | None = None,
) -> OperationSpec:
    """A READ operation implementing the REL request/response shapes on top of ``rel``."""
    if rel.max_depth < 1:
        raise ValueError("max_depth must be >= 1")

    async def handler(
        root: dict[str, Any],
        direction: str,
        relationship: str | None = None,
        depth: int = 1,
        include: list[str] | None = None,
        first: int | None = None,
        after: str | None = None,
        **kw: Any,
    ) -> dict[str, Any]:
        ctx: Context = kw.get(CTX_KEY) or Context(Session())
        if rel.exists is not None and not await _maybe(rel.exists(root)):
            raise not_found_resource(str(root.get("element_type")), root.get("element_name"))
        codec = codec_for(ctx)
        start = 0
        if after is not None:
            payload = codec.decode(after, "after")
            k = payload.get("k")
            if payload.get("o") != name or not isinstance(k, list) or len(k) != 1 or not isinstance(k[0], int):
                raise invalid_cursor("after", "issued for a different query")
            start = k[0] + 1
        rels, nodes, edges, cut = await traverse(rel, root, direction, relationship, depth)
        if cut:
            ctx.warnings.append(truncated("graph.nodes", len(nodes) + 1, len(nodes), rel.max_nodes))
        sections = set(include) if include else set(SECTIONS)
        data: dict[str, Any] = {}
        if "root" in sections:
            data["root"] = _ref(root)
        if "relationships" in sections:
            if first is not None or after is not None:
                size = min(first if first is not None else rel.page_size, rel.page_size)
                window = rels[start : start + size]
                data["relationships"] = window
                cursors = (
                    [codec.encode({"o": name, "s": "rel", "k": [start + i]}) for i in (0, len(window) - 1)] if window else []
                )
                data["pageInfo"] = page_info(
                    start + size < len(rels),
                    start > 0,
                    cursors[0] if cursors else None,
                    cursors[-1] if cursors else None,
                    len(rels),
                )
            else:
                data["relationships"] = rels
        graph: dict[str, Any] = {}
        if "graph.nodes" in sections:
            graph["nodes"] = nodes
        if "graph.edges" in sections:
            graph["edges"] = edges
        if graph:
            data["graph"] = graph
        return data

    types_desc = ", ".join(rel.types)
    params = (
        ParamSpec(
            "root",
            {
                "type": "object",
                "properties": {
                    "element_type": {"type": "string", "minLength": 1},
                    "element_name": {"type": "string", "minLength": 1},
                },
                "required": ["element_type", "element_name"],
                "additionalProperties": True,
                "x-mcpaql-type": "RelationshipRoot",
            },
            required=True,
            description="Starting resource {element_type, element_name}",
        ),
        ParamSpec(
            "direction",
            {"type": "string", "enum": list(DIRECTIONS)},
            required=True,
            description="Which edges to follow: incoming, outgoing or both",
        ),
        ParamSpec(
            "relationship",
            {"type": "string", "enum": list(rel.types)},
            description=f"Only follow this relationship type ({types_desc})",
        ),
        ParamSpec(
            "depth",
            {"type": "integer", "minimum": 1, "maximum": rel.max_depth, "default": 1},
            description=f"Traversal depth (max {rel.max_depth})",
        ),
        ParamSpec(
            "include",
            {"type": "array", "items": {"type": "string", "enum": list(SECTIONS)}, "uniqueItems": True, "minItems": 1},
            description="Response sections to return (all when omitted): root, relationships, graph.nodes, graph.edges",
        ),
        ParamSpec(
            "first",
            {"type": "integer", "minimum": 0, "maximum": rel.page_size},
            description=f"Page the relationships list (max {rel.page_size})",
        ),
        ParamSpec("after", {"type": "string", "maxLength": 4096}, description="Opaque cursor from pageInfo.endCursor"),
    )
    return OperationSpec(
        name=name,
        category=Category.READ,
        endpoint=endpoint,
        description=description
        or f"Traverse relationships from a root resource (types: {types_desc}; max depth {rel.max_depth}; "
        "cycles are deduplicated). Returns root, relationships and graph {nodes, edges}.",
        handler=handler,
        params=params,
        returns=TypeRef("RelationshipResult", "object", "{root, relationships[], graph{nodes, edges}}"),
        examples=(
            {
                "description": "Outgoing 'uses' edges two levels deep",
                "request": {
                    "operation": name,
                    "params": {
                        "root": {"element_type": "agent", "element_name": "code_reviewer"},
                        "direction": "outgoing",
                        "relationship": rel.types[0] if rel.types else "uses",
                        "depth": min(2, rel.max_depth),
                    },
                },
            },
        ),
        relationship_capabilities=rel.capabilities(),
        context_param=CTX_KEY,
        is_async=True,
    )
