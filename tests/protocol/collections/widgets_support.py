"""Support for the collection tests: a widgets adapter exercising every switch, and a harness
whose responses are validated against the spec schemas (``aql_support.Harness``)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel

from aql_support import Harness
from mcpaql import Adapter, Config
from mcpaql.protocol.collections import Collection, Computed, Item

WREAD = "widgets_mcpaql_read"


class Widget(BaseModel):
    widget_id: str
    name: str
    status: str
    category: str
    size: int
    score: float | None = None
    tags: list[str] = []
    settings: dict[str, Any] = {}
    created_at: str


def widget(i: int) -> Widget:
    return Widget(
        widget_id=f"w{i:03}",
        name=f"{['alpha', 'beta', 'gamma', 'delta'][i % 4]} widget {i}",
        status=["active", "paused", "retired"][i % 3],
        category=["tools", "toys"][i % 2],
        size=(i * 37) % 50,
        score=None if i % 5 == 0 else i / 2,
        tags=["red"] if i % 2 == 0 else ["blue", "green"],
        settings={"theme": "dark" if i % 2 else "light", "lang": "en", "layout": {"cols": i % 3}},
        created_at=f"2026-01-{(i % 28) + 1:02}T00:00:00Z",
    )


WIDGETS = [widget(i) for i in range(30)]


def make_widgets_app(records: list[Any] | None = None, **overrides: Any) -> Adapter:
    app = Adapter("widgets")
    data = WIDGETS if records is None else records
    options: dict[str, Any] = {
        "presets": {"minimal": ["widget_id", "name"], "contact": ["widget_id", "status", "settings.theme"]},
        "key": "widget_id",
        "searchable": ["name", "tags"],
        "filterable": ["status", "category", "size", "score", "tags", "name", "created_at"],
        "sortable": ["size", "name", "created_at", "score", "status"],
        "aggregate": True,
        "computed": {
            "age_days": Computed(
                lambda r: 31 - int(r["created_at"][8:10]), "number", "Days since creation", filterable=True, sortable=True
            ),
            "size_label": Computed(lambda r: "big" if r["size"] >= 25 else "small", "string", "big or small"),
        },
        "page_size": 10,
        "max_page_size": 20,
    }
    options.update(overrides)

    @app.read(collection=Collection(**options))
    def list_widgets() -> list[Widget]:
        """List widgets."""
        return list(data)

    @app.read(collection=Collection(presets={"minimal": ["widget_id", "name"]}, searchable=["name"], filterable=["status"]))
    def search_widgets() -> list[Widget]:
        """Search widgets."""
        return list(data)

    @app.read(
        collection=Item(presets={"minimal": ["widget_id", "name"]}, computed={"double_size": Computed(lambda r: r["size"] * 2)})
    )
    def get_widget(widget_id: str) -> Widget | None:
        """Get one widget."""
        return next((w for w in data if w.widget_id == widget_id), None)

    return app


class WHarness(Harness):
    def list(self, **params: Any) -> dict[str, Any]:
        return self.call(WREAD, {"operation": "list_widgets", "params": params})

    def op(self, operation: str, **params: Any) -> dict[str, Any]:
        return self.call(WREAD, {"operation": operation, "params": params})

    def detail(self, operation: str) -> dict[str, Any]:
        env = self.call(WREAD, {"operation": "introspect", "params": {"query": "operations", "name": operation}})
        return env["data"]["operation"]


def wharness(app: Adapter | None = None, config: Config | None = None) -> WHarness:
    return WHarness((app or make_widgets_app()).engine(config or Config()))


def ok(env: dict[str, Any]) -> Any:
    assert env["success"] is True, env
    return env["data"]


def err(env: dict[str, Any], code: str) -> dict[str, Any]:
    assert env["success"] is False, env
    assert env["error"]["code"] == code, env
    return env["error"]
