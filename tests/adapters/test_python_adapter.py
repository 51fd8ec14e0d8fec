"""The Python adapter API (src/mcpaql/adapters/python.py): schemas, descriptions, defaults and
types derived from typed functions."""

from __future__ import annotations

import enum
from datetime import datetime
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field

from aql_support import Harness, assert_valid_introspection, run
from mcpaql import Adapter, Category, Config, Context, SchemaError, Sensitive, TypeRef


class Colour(enum.Enum):
    """A colour."""

    RED = "red"
    BLUE = "blue"


class Dimensions(BaseModel):
    """Size of a widget."""

    width: Annotated[float, Field(gt=0)]
    height: float = 1.0


class Widget(BaseModel):
    """A widget."""

    widget_name: str
    colour: Colour = Colour.RED
    size: Dimensions | None = None


class Node(BaseModel):
    """A tree node (recursive)."""

    label: str
    children: list[Node] = []


SEEN: dict[str, Any] = {}


def build() -> Adapter:
    app = Adapter("widgets", display_name="Widget Shop", description="Widgets")

    @app.create
    def create_widget(
        widget: Widget,
        note: Annotated[str, "A free-text note"] = "",
        token: Annotated[str, Sensitive] = "",
        when: datetime | None = None,
    ) -> Widget:
        """Create a widget.

        Args:
            widget: The widget to create
            when: When it was made (ISO 8601)
        """
        SEEN["widget"] = widget
        SEEN["when"] = when
        return widget

    @app.read(name="list_widgets", description="List all widgets")
    async def whatever(colour: Colour | None = None, limit: int = 20) -> list[Widget]:
        return [Widget(widget_name="w", colour=colour or Colour.RED)]

    @app.operation(category="delete")
    def delete_widget(widget_name: str, ctx) -> None:
        """Delete a widget.

        :param widget_name: Name of the widget
        """
        SEEN["ctx"] = ctx

    @app.read
    def get_colour() -> Colour:
        """The favourite colour."""
        return Colour.BLUE

    @app.update
    def update_tree(root: Node) -> Node:
        """Replace the tree."""
        return root

    @app.execute(examples=[{"seconds": 1}])
    def run_job(context: Context, seconds: int = 0) -> dict:
        """Run a job."""
        return {"seconds": seconds}

    return app


@pytest.fixture
def hw() -> Harness:
    return Harness(build().engine(Config()))


def detail(h: Harness, name: str) -> dict:
    env = h.introspect("widgets_mcpaql_read", query="operations", name=name)
    assert_valid_introspection(env)
    return env["data"]["operation"]


def params(h: Harness, name: str) -> dict[str, dict]:
    return {p["name"]: p for p in detail(h, name)["parameters"]}


def test_descriptions_from_docstrings_and_options_REQ_VAL_005(hw):
    assert detail(hw, "create_widget")["description"] == "Create a widget."
    assert detail(hw, "list_widgets")["description"] == "List all widgets"  # name/description override
    assert detail(hw, "delete_widget")["description"] == "Delete a widget."
    ps = params(hw, "create_widget")
    assert ps["widget"]["description"] == "The widget to create"  # Google-style Args
    assert ps["when"]["description"] == "When it was made (ISO 8601)"
    assert ps["note"]["description"] == "A free-text note"  # Annotated string metadata
    assert params(hw, "delete_widget")["widget_name"]["description"] == "Name of the widget"  # Sphinx style


def test_categories_and_families(hw):
    cats = {
        o["name"]: (o["semantic_category"], o["endpoint"])
        for o in hw.introspect("widgets_mcpaql_read", query="operations")["data"]["operations"]
    }
    assert cats["delete_widget"] == ("DELETE", "delete")
    assert cats["list_widgets"] == ("READ", "read")
    assert cats["run_job"] == ("EXECUTE", "execute")


def test_parameter_types_and_defaults_REQ_VAL_006_REQ_INTRO_024(hw):
    ps = params(hw, "list_widgets")
    assert ps["colour"]["type"] == "string" and ps["colour"]["enum"] == ["red", "blue"]
    assert ps["limit"] == {"name": "limit", "type": "integer", "required": False, "default": 20}
    cw = params(hw, "create_widget")
    assert cw["widget"]["type"] == "Widget" and cw["widget"]["required"] is True
    assert cw["token"]["sensitive"] is True
    assert cw["when"]["format"] == "date-time"


def test_nested_models_in_types_REQ_INTRO_019(hw):
    types = {t["name"]: t["kind"] for t in hw.introspect("widgets_mcpaql_read", query="types")["data"]["types"]}
    assert {"Widget": "object", "Dimensions": "object", "Colour": "enum", "Node": "object"}.items() <= types.items()
    widget = hw.introspect("widgets_mcpaql_read", query="types", name="Widget")["data"]["type"]
    fields = {f["name"]: f for f in widget["fields"]}
    assert fields["size"]["type"] == "Dimensions"
    assert fields["colour"]["default"] == "red"
    dims = hw.introspect("widgets_mcpaql_read", query="types", name="Dimensions")["data"]["type"]
    assert {f["name"]: f.get("minimum") for f in dims["fields"]} == {"width": 0, "height": None}


def test_returns_type_info_REQ_INTRO_014(hw):
    assert detail(hw, "create_widget")["returns"] == {"name": "Widget", "kind": "object", "description": "A widget."}
    assert detail(hw, "list_widgets")["returns"]["name"] == "Widget[]"
    assert detail(hw, "get_colour")["returns"]["kind"] == "enum"
    assert detail(hw, "delete_widget")["returns"] == {"name": "Null", "kind": "scalar", "description": "No data"}


def test_handler_receives_models_and_enums(hw):
    env = hw.call(
        "widgets_mcpaql_create",
        {
            "operation": "create_widget",
            "params": {
                "widget": {"widget_name": "w1", "colour": "blue", "size": {"width": 2}},
                "when": "2026-02-04T10:30:00Z",
            },
        },
    )
    assert env["success"] is True
    assert isinstance(SEEN["widget"], Widget) and SEEN["widget"].colour is Colour.BLUE
    assert SEEN["widget"].size == Dimensions(width=2, height=1.0)
    assert isinstance(SEEN["when"], datetime) and SEEN["when"].tzinfo is not None
    assert env["data"] == {"widget_name": "w1", "colour": "blue", "size": {"width": 2.0, "height": 1.0}}


def test_nested_constraint_and_date_validation_REQ_VAL_010_REQ_VAL_025(hw):
    bad = hw.call(
        "widgets_mcpaql_create", {"operation": "create_widget", "params": {"widget": {"widget_name": "w", "size": {"width": 0}}}}
    )
    assert bad["error"]["code"] == "VALIDATION_INVALID_VALUE"
    assert bad["error"]["details"]["param_name"] == "widget.size.width"
    bad = hw.call(
        "widgets_mcpaql_create",
        {"operation": "create_widget", "params": {"widget": {"widget_name": "w"}, "when": "next tuesday"}},
    )
    assert bad["error"]["code"] == "VALIDATION_INVALID_VALUE"


def test_recursive_model_REQ_INTRO_019(hw):
    tree = {"label": "a", "children": [{"label": "b", "children": [{"label": "c"}]}]}
    env = hw.call("widgets_mcpaql_update", {"operation": "update_tree", "params": {"root": tree}})
    assert env["data"]["children"][0]["children"][0] == {"label": "c", "children": []}
    node = hw.introspect("widgets_mcpaql_read", query="types", name="Node")["data"]["type"]
    assert {f["name"]: f["type"] for f in node["fields"]} == {"label": "string", "children": "Node[]"}


def test_context_injection_by_name_and_type(hw):
    env = hw.call("widgets_mcpaql_delete", {"operation": "delete_widget", "params": {"widget_name": "w"}})
    assert env == {"success": True, "data": None}
    assert isinstance(SEEN["ctx"], Context) and SEEN["ctx"].operation == "delete_widget"
    assert [p["name"] for p in detail(hw, "run_job")["parameters"]] == ["seconds"]


def test_async_handler_detected(hw):
    compiled = hw.engine.compiled("list_widgets")
    assert compiled.spec.is_async is True
    assert hw.call("widgets_mcpaql_read", {"operation": "list_widgets", "params": {"colour": "blue"}})["data"] == [
        {"widget_name": "w", "colour": "blue", "size": None}
    ]


def test_examples_become_requests_REQ_INTRO_024(hw):
    assert detail(hw, "run_job")["examples"] == [{"request": {"operation": "run_job", "params": {"seconds": 1}}}]


def test_adapter_type_registration():
    app = build()

    class Extra(BaseModel):
        """Only mentioned here."""

        x: int

    app.type(Extra)
    names = {t.name for t in app.registry().types}
    assert "Extra" in names


def test_optional_context_annotation_is_the_context():
    app = Adapter("ctxopt")

    @app.read
    def get_session(context: Context | None = None) -> str:
        """Session id."""
        return context.session.id if context else ""

    h = Harness(app.engine(Config()))
    d = h.introspect("ctxopt_mcpaql_read", query="operations", name="get_session")["data"]["operation"]
    assert d["parameters"] == []
    assert h.call("ctxopt_mcpaql_read", {"operation": "get_session"})["data"] == h.session.id


def test_var_args_rejected():
    app = Adapter("bad")
    with pytest.raises(SchemaError, match="kwargs"):

        @app.read
        def list_things(**kw: Any) -> list:
            """List."""
            return []


def test_alternate_families_and_endpoint_option_REQ_MODE_018():
    app = Adapter("shop", families={"query": "Query the shop.", "manage": "Manage the shop."})

    @app.read(endpoint="query")
    def list_products() -> list:
        """List products."""
        return []

    @app.execute(endpoint="manage")
    def restock_products(count: int) -> dict:
        """Restock."""
        return {"count": count}

    eng = app.engine(Config())
    assert [t.name for t in eng.tools] == ["shop_mcpaql_query", "shop_mcpaql_manage"]
    h = Harness(eng)
    assert h.call("shop_mcpaql_manage", {"operation": "restock_products", "params": {"count": 2}})["success"] is True
    d = h.introspect("shop_mcpaql_query", query="operations", name="restock_products")["data"]["operation"]
    assert (d["endpoint"], d["semantic_category"], d["mcpTool"]) == ("manage", "EXECUTE", "shop_mcpaql_manage")


def test_returns_override_and_category_enum():
    app = Adapter("ov")

    @app.operation(category=Category.READ, returns=TypeRef("Thing", "object", "A thing"))
    def get_thing() -> dict:
        """Get."""
        return {}

    spec = app.registry().get("get_thing")
    assert spec.returns.name == "Thing" and spec.category is Category.READ


def test_engine_is_independent_per_config():
    app = build()
    e1, e2 = app.engine(Config()), app.engine(Config(mode="single"))
    assert e1.registry is not e2.registry
    env = run(e2.call_tool("widgets_mcpaql", {"operation": "get_colour"}, e2.context(e2.new_session())))
    assert env == {"success": True, "data": "blue"}
