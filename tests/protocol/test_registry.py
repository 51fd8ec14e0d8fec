"""Registration-time checks (src/mcpaql/protocol/registry.py; CORE §8.5, CHECKLIST B.5)."""

from __future__ import annotations

import pytest

from mcpaql import Adapter, Category, Config, OperationSpec, ParamSpec, Registry, SchemaError
from mcpaql.protocol.categories import EndpointFamily
from mcpaql.protocol.registry import RESERVED


def op(name: str = "list_things", category: Category = Category.READ, **kw) -> OperationSpec:
    return OperationSpec(name, category, "Does things", handler=lambda **_: None, **kw)


def code_of(fn) -> str:
    with pytest.raises(SchemaError) as exc:
        fn()
    assert exc.value.message and exc.value.code in str(exc.value)
    return exc.value.code


@pytest.mark.parametrize("name", ["ListThings", "list-things", "1list", "_list", "list things", "", "listThings", "é"])
def test_bad_operation_names_rejected_REQ_CLS_005(name):
    assert code_of(lambda: Registry("x").add(op(name))) == "SCHEMA_INVALID_NAME"


@pytest.mark.parametrize(
    "name",
    [
        "introspect",
        "execute_agent",
        "record_execution_step",
        "complete_execution",
        "abort_execution",
        "confirm_operation",
        "verify_challenge",
    ],
)
def test_reserved_names_rejected_REQ_CLS_010(name):
    assert name in RESERVED
    assert code_of(lambda: Registry("x").add(op(name, RESERVED[name]))) == "SCHEMA_INVALID_NAME"


def test_batch_is_reserved_by_the_implementation_REQ_CLS_011():
    assert code_of(lambda: Registry("x").add(op("batch"))) == "SCHEMA_INVALID_NAME"


def test_reserved_name_must_keep_its_category_REQ_CLS_010():
    reg = Registry("x")
    assert code_of(lambda: reg.add(op("introspect", Category.CREATE), reserved_ok=True)) == "SCHEMA_INVALID_TYPE"
    reg.add(op("confirm_operation", Category.EXECUTE), reserved_ok=True)


def test_reserved_names_via_adapter_decorator_REQ_CLS_010():
    app = Adapter("x")
    with pytest.raises(SchemaError):

        @app.read
        def introspect(query: str) -> dict:
            """Shadow the built-in."""
            return {}


def test_duplicate_operation_rejected():
    reg = Registry("x")
    reg.add(op())
    assert code_of(lambda: reg.add(op())) == "SCHEMA_DUPLICATE_NAME"


def test_duplicate_via_adapter():
    app = Adapter("x")

    @app.read
    def list_things() -> list:
        """List."""
        return []

    with pytest.raises(SchemaError, match="twice"):
        app.read(list_things)
    assert len(app.registry().operations) == 1  # the failed add left no trace


def test_unknown_family_rejected_REQ_MODE_004():
    assert code_of(lambda: Registry("x").add(op(endpoint="query"))) == "SCHEMA_UNRESOLVED_REF"
    with pytest.raises(SchemaError, match="query"):
        app = Adapter("x", families={"manage": "Manage."})

        @app.read(endpoint="query")
        def list_things() -> list:
            """List."""
            return []


def test_operation_without_endpoint_needs_crude_family_REQ_VAL_005():
    app = Adapter("x", families={"query": "Query."})
    with pytest.raises(SchemaError, match="read"):

        @app.read
        def list_things() -> list:
            """List."""
            return []


@pytest.mark.parametrize("pname", ["itemId", "Item", "item-id", "1item", "_item"])
def test_non_snake_param_rejected_REQ_VAL_001(pname):
    spec = op(params=(ParamSpec(pname, {"type": "string"}),))
    assert code_of(lambda: Registry("x").add(spec)) == "SCHEMA_INVALID_NAME"


def test_non_snake_param_via_adapter_REQ_VAL_001():
    app = Adapter("x")
    with pytest.raises(SchemaError, match="snake_case"):

        @app.read
        def get_thing(thingId: str) -> dict:
            """Get."""
            return {}


def test_duplicate_param_rejected():
    spec = op(params=(ParamSpec("a"), ParamSpec("a")))
    assert code_of(lambda: Registry("x").add(spec)) == "SCHEMA_DUPLICATE_NAME"


@pytest.mark.parametrize("adapter", ["Tasks", "my tasks", "1tasks", "", "tâches"])
def test_bad_adapter_names_rejected(adapter):
    with pytest.raises(SchemaError):
        Registry(adapter)


def test_bad_family_names_rejected():
    with pytest.raises(SchemaError):
        Registry("x", families={"Query": EndpointFamily("Query", "Query.")})
    with pytest.raises(SchemaError):
        Adapter("x", families={"my-family": "Bad."})


def test_frozen_registry_is_read_only():
    reg = Registry("x")
    reg.add(op())
    reg.freeze()
    assert code_of(lambda: reg.add(op("get_thing"))) == "SCHEMA_FROZEN"


def test_empty_registry_cannot_freeze():
    assert code_of(lambda: Registry("x").freeze()) == "SCHEMA_MISSING_FIELD"


def test_engine_adds_introspect_on_the_read_family_REQ_INTRO_001():
    reg = Registry("x")
    reg.add(op())
    from mcpaql import Engine

    eng = Engine(reg, Config())
    assert eng.registry.get("introspect").family == "read"
    assert eng.registry.get("introspect").category is Category.READ


def test_introspect_family_for_alternate_profiles_REQ_INTRO_002():
    app = Adapter("x", families={"manage": "Manage.", "query": "Query."})

    @app.create(endpoint="manage")
    def create_thing() -> None:
        """Create."""

    @app.read(endpoint="query")
    def list_things() -> list:
        """List."""
        return []

    assert app.registry().default_introspect_family() == "query"
    assert Adapter("y", families={"a": "A.", "b": "B."}, introspect_family="b").registry().default_introspect_family() == "b"


def test_every_operation_has_exactly_one_category_REQ_MODE_003():
    from aql_support import make_app

    for spec in make_app().registry().operations:
        assert isinstance(spec.category, Category)
        assert spec.family in ("create", "read", "update", "delete", "execute")
