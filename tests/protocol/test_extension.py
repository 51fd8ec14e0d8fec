"""Extensions are given at build time (issue 12 §1): the order they apply in, early refusal,
an immutable Engine, and lifespans entered in order and left in reverse."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import AsyncIterator
from typing import Any

import pytest

from mcpaql import Adapter, Config
from mcpaql.protocol.categories import Category
from mcpaql.protocol.extension import Extension, combine_lifespans
from mcpaql.protocol.operations import OperationSpec

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def _app() -> Adapter:
    app = Adapter("ext")

    @app.read
    def get_thing(thing_id: str) -> dict:
        """Get a thing."""
        return {"thing_id": thing_id}

    return app


def _op(name: str) -> OperationSpec:
    async def handler() -> dict[str, Any]:
        return {"from": name}

    return OperationSpec(name, Category.READ, f"{name} op.", handler=handler, is_async=True)


def _suffix(tag: str) -> Any:
    return lambda spec: dataclasses.replace(spec, description=spec.description + f" [{tag}]")


async def _run(engine: Any, op: str, **params: Any) -> dict[str, Any]:
    return await engine.execute({"operation": op, "params": params}, engine.context(engine.new_session()))


def test_each_extension_rewrites_what_exists_then_adds_its_own() -> None:
    app = _app()
    app.use(Extension("a", operations=(_op("get_a"),), rewrite=_suffix("a"), capabilities={"x": "a"}))
    app.use(Extension("b", operations=(_op("get_b"),), rewrite=_suffix("b"), capabilities={"x": "b"}))
    eng = app.engine(Config())
    desc = {op.name: op.description for op in eng.registry.operations}
    assert desc["get_thing"].endswith("[a] [b]")
    assert desc["get_a"].endswith("[b]") and "[a]" not in desc["get_a"]  # a's rewrite ran before a's ops joined
    assert "[" not in desc["get_b"]
    assert eng.capabilities["x"] == "b"  # later wins

    # operations defined after use() are rewritten too: the rewrite runs at build time
    @app.read
    def get_late() -> dict:
        """Late."""
        return {}

    late = app.engine(Config()).registry.get("get_late")
    assert late is not None and late.description.endswith("[a] [b]")


def test_an_extension_refusing_a_spec_refuses_it_at_definition() -> None:
    app = _app()

    def picky(spec: OperationSpec) -> OperationSpec:
        if spec.name.startswith("bad"):
            raise ValueError(f"operation '{spec.name}': refused")
        return spec

    app.use(Extension("picky", rewrite=picky))
    with pytest.raises(ValueError, match="refused"):

        @app.read
        def bad_thing() -> dict:
            """Bad."""
            return {}

    assert app.registry().get("bad_thing") is None
    other = _app()
    with pytest.raises(ValueError, match="refused"):  # use() checks the operations defined so far
        other.use(Extension("q", rewrite=lambda s: picky(dataclasses.replace(s, name="bad_" + s.name))))
    assert other.extensions == ()


async def test_engine_is_immutable_and_extend_builds_a_new_one() -> None:
    eng = _app().engine(Config())
    assert isinstance(eng.guards, tuple)
    with pytest.raises(TypeError):
        eng.capabilities["confirmation"] = True  # type: ignore[index]
    with pytest.raises(TypeError):
        eng.introspect_queries["mine"] = None  # type: ignore[index]
    seen: list[str] = []

    async def guard(compiled: Any, values: dict[str, Any], ctx: Any) -> None:
        seen.append(compiled.spec.name)

    async def mine(ctx: Any, name: Any) -> dict[str, Any]:
        return {"mine": True}

    more = eng.extend(Extension("g", guards=(guard,), introspect_queries={"mine": mine}, capabilities={"y": 1}))
    assert (await _run(more, "get_thing", thing_id="1"))["success"]
    assert seen == ["get_thing"]
    seen.clear()
    assert more.capabilities["y"] == 1 and "y" not in eng.capabilities
    assert (await _run(more, "introspect", query="mine"))["data"] == {"mine": True}
    seen.clear()
    assert (await _run(eng, "get_thing", thing_id="1"))["success"] and seen == []  # the original is unchanged
    with pytest.raises(ValueError, match="frozen"):
        eng.extend(Extension("ops", operations=(_op("get_new"),)))


async def test_lifespans_enter_in_order_and_leave_in_reverse() -> None:
    log: list[str] = []

    def ls(tag: str) -> Any:
        @contextlib.asynccontextmanager
        async def cm() -> AsyncIterator[None]:
            log.append(f"open {tag}")
            try:
                yield
            finally:
                log.append(f"close {tag}")

        return cm

    app = Adapter("ext", lifespan=ls("backend"), extensions=[Extension("e", lifespan=ls("ext"))])

    @app.read
    def get_thing() -> dict:
        """Get."""
        return {}

    eng = app.engine(Config())
    async with eng.lifespan():
        assert log == ["open backend", "open ext"]
    assert log == ["open backend", "open ext", "close ext", "close backend"]
    log.clear()
    async with combine_lifespans([None, None])():
        pass
    assert log == []


async def test_demo_store_closes_with_its_lifespan(tmp_path: Any) -> None:
    from mcpaql.demo import make_adapter

    app = make_adapter(tmp_path / "demo.db")
    eng = app.engine(Config())
    async with eng.lifespan():
        assert (await _run(eng, "list_projects"))["success"]
    assert app.db.closed
    async with eng.lifespan():  # served again in the same process: reopened
        assert (await _run(eng, "list_projects"))["success"]
    assert app.db.closed


def test_extension_containers_are_frozen() -> None:
    caps = {"a": 1}
    ext = Extension("e", capabilities=caps, guards=[])  # type: ignore[arg-type]
    caps["a"] = 2
    assert ext.capabilities["a"] == 1 and isinstance(ext.guards, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        ext.name = "f"  # type: ignore[misc]
