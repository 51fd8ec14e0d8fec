"""Relationship queries (REQ-REL-*): BFS with depth limits, dedup, cycles never unbounded."""

from __future__ import annotations

from typing import Any

import pytest
from widgets_support import WHarness, err, ok

from mcpaql import Adapter
from mcpaql.protocol.collections import Relationships, query_relationships

EDGES = [
    ("agent:reviewer", "uses", "skill:ts"),
    ("agent:reviewer", "uses", "skill:lint"),
    ("skill:ts", "extends", "skill:lint"),
    ("skill:lint", "references", "agent:reviewer"),  # cycle back to the root
    ("skill:lint", "uses", "tool:eslint"),
    ("tool:eslint", "uses", "tool:node"),
]
NODES = {n for a, _, b in EDGES for n in (a, b)}


def ref(nid: str) -> dict[str, str]:
    t, n = nid.split(":")
    return {"element_type": t, "element_name": n}


def neighbors(node: dict, direction: str) -> list[tuple[str, dict]]:
    nid = f"{node['element_type']}:{node['element_name']}"
    if direction == "outgoing":
        return [(t, ref(b)) for a, t, b in EDGES if a == nid]
    return [(t, ref(a)) for a, t, b in EDGES if b == nid]


def make(**kw: Any) -> WHarness:
    app = Adapter("widgets")
    rel = Relationships(
        neighbors, max_depth=kw.pop("max_depth", 3), exists=lambda n: f"{n['element_type']}:{n['element_name']}" in NODES, **kw
    )
    app.add(query_relationships(rel))
    return WHarness(app.engine())


def q(h: WHarness, **params: Any) -> dict:
    return h.op("query_relationships", **params)


ROOT = {"element_type": "agent", "element_name": "reviewer"}


def test_req_rel_001_002_004_shape_depth_1() -> None:
    data = ok(q(make(), root=ROOT, direction="outgoing"))
    assert data["root"] == ROOT
    assert data["relationships"] == [
        {"type": "uses", "direction": "outgoing", "target": ref("skill:ts"), "depth": 1},
        {"type": "uses", "direction": "outgoing", "target": ref("skill:lint"), "depth": 1},
    ]
    assert data["graph"]["nodes"][0] == {"id": "agent:reviewer", **ROOT}
    assert {"source": "agent:reviewer", "target": "skill:ts", "type": "uses"} in data["graph"]["edges"]


def test_req_rel_008_009_cycle_edge_emitted_nodes_deduplicated() -> None:
    data = ok(q(make(), root=ROOT, direction="outgoing", depth=3))
    ids = [n["id"] for n in data["graph"]["nodes"]]
    assert len(ids) == len(set(ids)) == 5
    assert {"source": "skill:lint", "target": "agent:reviewer", "type": "references"} in data["graph"]["edges"]
    edges = [(e["source"], e["target"], e["type"]) for e in data["graph"]["edges"]]
    assert len(edges) == len(set(edges))


def test_req_rel_009_cycles_bounded_even_at_max_depth_both_directions() -> None:
    h = make(max_depth=50)
    data = ok(q(h, root=ROOT, direction="both", depth=50))
    assert len(data["graph"]["nodes"]) == len(NODES)
    assert len(data["graph"]["edges"]) == len(EDGES)


def test_req_rel_002_relationship_filter_and_incoming() -> None:
    data = ok(q(make(), root={"element_type": "skill", "element_name": "lint"}, direction="incoming", relationship="uses"))
    assert [r["target"] for r in data["relationships"]] == [ROOT]


def test_req_rel_005_include_limits_sections() -> None:
    data = ok(q(make(), root=ROOT, direction="outgoing", include=["graph.edges"]))
    assert set(data) == {"graph"} and set(data["graph"]) == {"edges"}
    data = ok(q(make(), root=ROOT, direction="outgoing", include=["root", "relationships"]))
    assert set(data) == {"root", "relationships"}


def test_req_rel_008_depth_over_max_rejected() -> None:
    e = err(q(make(), root=ROOT, direction="outgoing", depth=4), "VALIDATION_INVALID_VALUE")
    assert e["details"]["maximum"] == 3


@pytest.mark.parametrize(
    ("params", "code"),
    [
        ({"direction": "outgoing"}, "VALIDATION_MISSING_PARAM"),
        ({"root": ROOT}, "VALIDATION_MISSING_PARAM"),
        ({"root": ROOT, "direction": "sideways"}, "VALIDATION_INVALID_VALUE"),
        ({"root": {"element_type": "agent"}, "direction": "both"}, "VALIDATION_MISSING_PARAM"),
        ({"root": ROOT, "direction": "both", "relationship": "likes"}, "VALIDATION_INVALID_VALUE"),
        ({"root": ROOT, "direction": "both", "include": ["graph"]}, "VALIDATION_INVALID_VALUE"),
        ({"root": ROOT, "direction": "both", "depth": 0}, "VALIDATION_INVALID_VALUE"),
        ({"root": {"element_type": "agent", "element_name": "ghost"}, "direction": "both"}, "NOT_FOUND_RESOURCE"),
    ],
)
def test_req_rel_002_bad_inputs(params: dict, code: str) -> None:
    err(q(make(), **params), code)


def test_req_rel_002_pagination_of_relationships() -> None:
    h = make()
    full = ok(q(h, root=ROOT, direction="both", depth=3))["relationships"]
    first = ok(q(h, root=ROOT, direction="both", depth=3, first=2))
    assert first["relationships"] == full[:2] and first["pageInfo"]["hasNextPage"] is True
    nxt = ok(q(h, root=ROOT, direction="both", depth=3, first=2, after=first["pageInfo"]["endCursor"]))
    assert nxt["relationships"] == full[2:4]
    err(q(h, root=ROOT, direction="both", first=2, after="bogus.cursor"), "VALIDATION_INVALID_VALUE")


def test_req_rel_010_capabilities_advertised_and_flag_set() -> None:
    h = make()
    assert h.detail("query_relationships")["relationship_capabilities"] == {
        "supported": True,
        "directions": ["incoming", "outgoing", "both"],
        "relationship_types": ["uses", "extends", "references", "triggers", "composes"],
        "max_depth": 3,
    }
    env = h.call("widgets_mcpaql_read", {"operation": "introspect", "params": {"query": "operations"}})
    assert env["data"]["_protocol"]["capabilities"]["relationship_queries"] is True


def test_req_rel_node_budget_truncates_with_warning() -> None:
    def fan(node: dict, direction: str) -> list[tuple[str, dict]]:
        n = int(node["element_name"])
        return [("uses", {"element_type": "n", "element_name": str(n * 10 + i)}) for i in range(10)]

    app = Adapter("widgets")
    app.add(query_relationships(Relationships(fan, max_depth=5, max_nodes=50)))
    h = WHarness(app.engine())
    env = q(h, root={"element_type": "n", "element_name": "1"}, direction="outgoing", depth=5)
    assert len(ok(env)["graph"]["nodes"]) == 50
    assert env["warnings"][0]["code"] == "VALIDATION_TRUNCATED_WARNING"
