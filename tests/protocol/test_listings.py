"""Bounded listings (issue 14): grouped tool descriptions past the threshold, ``introspect
operations`` filters and pages (extensions, docs/listings.md), and exact names that need no listing.

Every introspect response goes through ``Harness``, which validates it against the spec's
introspection-response.schema.json and operation-result.schema.json.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from aql_support import Harness, assert_no_leak
from mcpaql import Config, tokens
from mcpaql.config import ConfigError
from mcpaql.protocol.categories import Category
from mcpaql.protocol.dispatch import Engine
from mcpaql.protocol.introspect import decode_cursor, encode_cursor
from mcpaql.protocol.listing import GROUPS_SHOWN, element_type, expand_names, verb_and_element
from mcpaql.protocol.operations import OperationSpec, ParamSpec
from mcpaql.protocol.registry import Registry
from mcpaql.protocol.surface import server_instructions

VERBS = (
    ("create", Category.CREATE),
    ("get", Category.READ),
    ("list", Category.READ),
    ("update", Category.UPDATE),
    ("delete", Category.DELETE),
)


def registry(n: int) -> Registry:
    """``n`` operations, five per element type (``get_item7``, ``list_item7s``...), echoing their params."""
    reg = Registry("big")
    ident = (ParamSpec("id", {"type": "integer"}, required=True, description="Identifier"),)
    for i in range(n):
        verb, cat = VERBS[i % 5]
        elem = f"item{i // 5}"
        reg.add(
            OperationSpec(
                name=f"{verb}_{elem}s" if verb == "list" else f"{verb}_{elem}",
                category=cat,
                description=f"{verb.title()} {elem} of the {'blue' if i % 2 else 'red'} shelf",
                params=ident if verb in ("get", "update", "delete") else (),
                handler=lambda **kw: {"echo": kw},
            )
        )
    return reg


def engine(n: int, **config: Any) -> Engine:
    return Engine(registry(n), Config(**config))


@pytest.fixture(scope="module")
def big() -> Harness:
    return Harness(engine(1000))


READ_TOOL = "big_mcpaql_read"


def page(h: Harness, **params: Any) -> dict[str, Any]:
    env = h.introspect(READ_TOOL, query="operations", **params)
    assert env["success"] is True, env
    return env["data"]


# ---- element types ----------------------------------------------------------------------------


def test_element_type_reads_the_naming_grammar() -> None:
    assert verb_and_element("create_pull_request") == ("create", "pull_request")
    assert verb_and_element("list_pull_requests") == ("list", "pull_request")
    assert verb_and_element("list_repositories") == ("list", "repository")
    assert verb_and_element("get_address") == ("get", "address")
    assert verb_and_element("introspect") == ("", "introspect")
    declared = OperationSpec("fetch_x", Category.READ, "d", extensions={"element_type": "widget"})
    assert element_type(declared) == "widget"


@settings(max_examples=200, deadline=None)
@given(st.from_regex(r"[a-z][a-z0-9_]{0,40}", fullmatch=True))
def test_element_type_of_any_valid_name(name: str) -> None:
    verb, elem = verb_and_element(name)
    assert elem and (not verb or name.startswith(verb + "_"))


# ---- grouping threshold -------------------------------------------------------------------------


def test_under_the_threshold_every_name_is_listed() -> None:
    e = engine(100)
    text = " ".join(t.description for t in e.tools)
    assert {op.name for op in e.operations} <= set(expand_names(text))
    assert "element type" not in text
    # The threshold is per tool: 100 operations in single mode (one tool) are still flat.
    single = engine(100, mode="single").tools[0].description
    assert {op.name for op in registry(100).operations} <= set(expand_names(single))


def test_past_the_threshold_descriptions_are_grouped_and_bounded() -> None:
    sizes = {}
    for n in (1000, 5000):
        e = engine(n)
        sizes[n] = tokens.count_tools(e.tools)
        read = e.tools_by_name[READ_TOOL].description
        assert "by element type" in read and "more element types" in read
        assert "introspect" in read and '"search":"<words>"' in read
    assert sizes[5000] < sizes[1000] * 1.1  # bounded: five times the operations, the same listing
    assert sizes[5000] < 1500


def test_grouped_names_are_real_operation_names() -> None:
    e = engine(1000, listing_threshold=10)
    names = {op.name for op in e.operations}
    read = e.tools_by_name[READ_TOOL].description
    listed = read.split("verb_element): ", 1)[1].split("\n", 1)[0]
    shown = 0
    for part in listed.split("; "):
        if ": " not in part:
            continue
        elem, members = part.split(": ", 1)
        for m in members.split(" (+")[0].split("/"):
            assert (f"{m}_{elem}" in names) or (m in names), (m, elem)
            shown += 1
    assert shown >= GROUPS_SHOWN


def test_threshold_is_configurable_and_exact() -> None:
    e = Engine(registry(20), Config(mode="single", listing_threshold=21))
    assert "element type" not in e.tools[0].description
    e = Engine(registry(20), Config(mode="single", listing_threshold=20))
    assert "element type" in e.tools[0].description  # 21 operations with introspect
    for bad in (0, -1, True, "5", 10**7):
        with pytest.raises(ConfigError, match="listing_threshold"):
            Config(listing_threshold=bad)
    assert Config.load(env={"MCPAQL_LISTING_THRESHOLD": "40"}).listing_threshold == 40
    with pytest.raises(ConfigError, match="MCPAQL_LISTING_THRESHOLD must be an integer"):
        Config.load(env={"MCPAQL_LISTING_THRESHOLD": "many"})


@pytest.mark.parametrize("mode", ["semantic", "single", "all"])
def test_listing_is_byte_identical_across_builds(mode: str) -> None:
    def build() -> list[tuple[str, str]]:
        return [(t.name, t.description) for t in engine(3000, mode=mode).tools]

    assert build() == build()


def test_listing_is_byte_identical_across_processes() -> None:
    """Across interpreter runs with different hash seeds: no set or dict-of-hash order leaks in."""
    here = Path(__file__).resolve()
    code = (
        "import sys, hashlib; sys.path[:0] = [sys.argv[1], sys.argv[2]]; import test_listings as t; "
        "e = t.engine(3000, mode='all'); "
        "print(hashlib.sha256('\\0'.join(x.description for x in e.tools).encode()).hexdigest())"
    )
    digests = set()
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", code, str(here.parent), str(here.parents[1])],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr[-2000:]
        digests.add(done.stdout.strip())
    local = hashlib.sha256("\0".join(x.description for x in engine(3000, mode="all").tools).encode()).hexdigest()
    assert digests == {local}


# ---- filters ---------------------------------------------------------------------------------


def test_filters_select_what_they_say(big: Harness) -> None:
    data = page(big, category="delete", first=500)
    assert data["_protocol"]["page"]["totalCount"] == 200
    assert {o["semantic_category"] for o in data["operations"]} == {"DELETE"}
    assert {o["endpoint"] for o in page(big, endpoint="update")["operations"]} == {"update"}
    by_tool = page(big, endpoint="big_mcpaql_update")  # the tool name a model sees works too
    assert by_tool["_protocol"]["page"]["totalCount"] == 200
    names = [o["name"] for o in page(big, element_type="item42")["operations"]]
    assert names == ["create_item42", "get_item42", "list_item42s", "update_item42", "delete_item42"]
    assert all(o["name"].startswith("get_item1") for o in page(big, prefix="get_item1")["operations"])
    hits = page(big, search="Blue ITEM7 shelf")["operations"]
    assert hits and all("blue" in o["description"] and "item7" in o["name"] for o in hits)
    both = page(big, category="READ", prefix="list_")
    assert both["_protocol"]["page"]["totalCount"] == 200
    nothing = page(big, element_type="no_such_thing")  # a filter that matches nothing is not an error
    assert nothing["operations"] == [] and nothing["_protocol"]["page"]["totalCount"] == 0
    assert nothing["_protocol"]["page"]["pageInfo"] == {"hasNextPage": False, "endCursor": None}


def test_paging_walks_the_filtered_list_exactly_once(big: Harness) -> None:
    want = [o["name"] for o in page(big, category="READ", first=500)["operations"]]
    got: list[str] = []
    after = None
    while True:
        params: dict[str, Any] = {"category": "READ", "first": 37}
        if after is not None:
            params["after"] = after
        data = page(big, **params)
        info = data["_protocol"]["page"]
        assert info["totalCount"] == len(want)
        got += [o["name"] for o in data["operations"]]
        if not info["pageInfo"]["hasNextPage"]:
            break
        after = info["pageInfo"]["endCursor"]
    assert got == want and len(want) == 401  # get + list of 200 elements, and introspect


def test_default_page_is_bounded(big: Harness) -> None:
    data = page(big)
    assert len(data["operations"]) == Config().introspect_page_size
    info = data["_protocol"]["page"]
    assert info["totalCount"] == 1001 and info["pageInfo"]["hasNextPage"] is True
    h = Harness(engine(1000, introspect_page_size=10))
    assert len(h.introspect(READ_TOOL, query="operations")["data"]["operations"]) == 10


def test_a_small_registry_answers_as_the_spec_shows() -> None:
    """Under the default page size and without parameters: no ``_protocol.page``, every operation."""
    h = Harness(engine(40))
    data = h.introspect(READ_TOOL, query="operations")["data"]
    assert "page" not in data["_protocol"] and len(data["operations"]) == 41


def test_cursor_round_trip() -> None:
    assert decode_cursor(encode_cursor("get_item3")) == "get_item3"
    assert decode_cursor("%%%") is None and decode_cursor("bm90IG91cnM") is None  # base64 of "not ours"
    assert encode_cursor("get_item3") == encode_cursor("get_item3")  # deterministic: no secret, no clock


@pytest.mark.parametrize(
    ("params", "param", "fragment"),
    [
        ({"category": "SOMETIMES"}, "category", "CREATE, READ, UPDATE, DELETE, EXECUTE"),
        ({"endpoint": "elsewhere"}, "endpoint", "create, delete, read, update"),
        ({"first": 0}, "first", ">= '1'"),
        ({"first": 501}, "first", "<= '500'"),
        ({"first": "ten"}, "first", "integer"),
        ({"after": "bm90IG91cnM"}, "after", "not a cursor of this listing"),
        ({"after": encode_cursor("gone_away")}, "after", "does not list"),
        ({"prefix": ""}, "prefix", "or more characters"),
        ({"search": "x" * 201}, "search", "up to '200' characters"),
        ({"name": "get_item1", "first": 5}, "first", "one operation's detail"),
    ],
)
def test_bad_filters_and_cursors_are_clear_errors(big: Harness, params: dict[str, Any], param: str, fragment: str) -> None:
    env = big.introspect(READ_TOOL, query="operations", **params)
    assert env["success"] is False
    err = env["error"]
    assert err["code"].startswith("VALIDATION_") and err["details"]["param_name"] == param
    assert fragment in err["message"], err["message"]


def test_filters_are_refused_with_types(big: Harness) -> None:
    env = big.introspect(READ_TOOL, query="types", prefix="Op")
    assert env["success"] is False and "query 'types'" in env["error"]["message"]


JSONISH = st.recursive(
    st.none() | st.booleans() | st.integers(-(10**12), 10**12) | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=6,
)
LISTING_KEYS = st.sampled_from(["category", "endpoint", "element_type", "prefix", "search", "first", "after", "name"])
CURSORISH = st.one_of(
    st.text(max_size=60),
    st.builds(encode_cursor, st.text(max_size=30)),
    st.sampled_from([encode_cursor("get_item5"), encode_cursor("introspect")]),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    st.dictionaries(LISTING_KEYS, JSONISH | CURSORISH | st.integers(-5, 600), max_size=4),
    st.sampled_from(["operations", "types"]),
)
def test_any_listing_input_is_answered_never_crashes(big: Harness, params: dict[str, Any], query: str) -> None:
    """Property: every combination of filters and cursors gets a schema-valid success or a
    structured validation error, never INTERNAL_ERROR, a traceback or a class name."""
    env = big.introspect(READ_TOOL, query=query, **params)  # Harness validates both schemas
    if env["success"]:
        return
    assert env["error"]["code"] != "INTERNAL_ERROR", env
    assert env["error"]["code"].startswith("VALIDATION_"), env
    assert_no_leak(env["error"]["message"])


# ---- exact names need no listing --------------------------------------------------------------


def test_an_exact_name_is_called_directly_at_5000_operations() -> None:
    h = Harness(engine(5000))
    name = "update_item987"
    assert name not in h.engine.tools_by_name["big_mcpaql_update"].description  # not listed by name
    env = h.call("big_mcpaql_update", {"operation": name, "params": {"id": 7}})
    assert env == {"success": True, "data": {"echo": {"id": 7}}}
    detail = h.introspect(READ_TOOL, query="operations", name=name)["data"]["operation"]
    assert detail["mcpTool"] == "big_mcpaql_update" and detail["parameters"][0]["name"] == "id"
    wrong = h.call("big_mcpaql_create", {"operation": name, "params": {"id": 7}})
    assert wrong["error"]["code"] == "VALIDATION_ENDPOINT_MISMATCH" and "big_mcpaql_update" in wrong["error"]["message"]
    found = h.introspect(READ_TOOL, query="operations", element_type="item987")["data"]["operations"]
    assert [o["name"] for o in found] == ["create_item987", "get_item987", "list_item987s", "update_item987", "delete_item987"]


# ---- instructions -------------------------------------------------------------------------------


@pytest.mark.parametrize(("mode", "where"), [("semantic", " on big_mcpaql_read"), ("single", ""), ("all", " on big_mcpaql_read")])
def test_instructions_point_at_one_operations_detail(mode: str, where: str) -> None:
    e = engine(10, mode=mode)
    text = server_instructions(e.tools, e.introspect_tool)
    assert "Call operations by name" in text and f'introspect {{query:"operations",name}}{where}.' in text
    assert tokens.count_text(text) <= 32
    single = e.tools_by_name.get("big_mcpaql")
    if single is not None:  # the single description's quick start asks for one detail too
        assert '"name":"<operation>"' in single.description
