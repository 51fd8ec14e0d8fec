"""Shared test support (imported by tests/conftest.py and by test modules as ``aql_support``):
spec-schema validators, a leak check, the sample adapter and a harness.

Fixtures (defined in tests/conftest.py) other tests can reuse:

* ``assert_valid_envelope(env)`` — validates against ``operation-result.schema.json``.
* ``assert_valid_introspection(env)`` — validates against ``introspection-response.schema.json``
  (and operation-result, which every introspection response must also satisfy).
* ``assert_no_leak(text)`` — no traceback, exception class name, source path or line ref.
* ``make_app()`` / ``app`` — the sample adapter used throughout ``tests/protocol``.
* ``harness(config=None)`` — an engine plus a session; ``h.call(tool, request)`` runs the
  request and validates the envelope (and, for ``introspect``, the introspection shape).

Schemas are read from ``../shared/spec/schemas`` relative to the repository root.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import json
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from functools import cache
from pathlib import Path
from typing import Annotated, Any

from jsonschema import Draft202012Validator
from pydantic import BaseModel, Field
from referencing import Registry, Resource

from mcpaql import Adapter, Context, Sensitive
from mcpaql.protocol.dispatch import Engine

REPO_ROOT = Path(__file__).resolve().parents[1]
SCHEMA_DIR = (REPO_ROOT / ".." / "shared" / "spec" / "schemas").resolve()
SCHEMA_NAMES = ("operation-result", "introspection-response", "operation-input", "batch-operation")


# ---- schema validation ------------------------------------------------------------------


@cache
def _schemas() -> tuple[Registry, dict[str, dict[str, Any]]]:
    schemas: dict[str, dict[str, Any]] = {}
    registry: Registry = Registry()
    for name in SCHEMA_NAMES:
        doc = json.loads((SCHEMA_DIR / f"{name}.schema.json").read_text(encoding="utf-8"))
        schemas[name] = doc
        resource = Resource.from_contents(doc)
        registry = registry.with_resource(doc["$id"], resource)
        registry = registry.with_resource(f"{name}.schema.json", resource)
    return registry, schemas


@cache
def validator(name: str) -> Draft202012Validator:
    registry, schemas = _schemas()
    return Draft202012Validator(schemas[name], registry=registry, format_checker=Draft202012Validator.FORMAT_CHECKER)


def _check(name: str, instance: Any) -> None:
    errors = sorted(validator(name).iter_errors(instance), key=lambda e: list(e.absolute_path))
    if errors:
        shown = json.dumps(instance, ensure_ascii=True, default=str)[:1500]
        msgs = "\n".join(f"- {list(e.absolute_path)}: {e.message[:300]}" for e in errors[:5])
        raise AssertionError(f"{name}.schema.json rejects the response:\n{msgs}\n{shown}")


def is_batch_response(env: Any) -> bool:
    return isinstance(env, dict) and env.get("success") is True and "results" in env and "summary" in env


def assert_valid_batch(env: Any) -> None:
    """A batch response against batch-operation.schema.json and, unless it halted for
    confirmation (``halted_at``/``pending_operations``, which operation-result cannot express:
    docs/conformance.md decision B1), operation-result.schema.json too. Top-level ``warnings``
    (WARN §6.5, decision B2) is the one key batch-operation lacks; it is checked by operation-result."""
    _check("batch-operation", {k: v for k, v in env.items() if k != "warnings"})
    if "halted_at" not in env and "pending_operations" not in env:
        _check("operation-result", env)


def assert_valid_envelope(env: Any) -> None:
    """Validate one response envelope against operation-result.schema.json (REQ-RSP-011);
    batch responses against batch-operation.schema.json as well (:func:`assert_valid_batch`)."""
    if is_batch_response(env):
        assert_valid_batch(env)
        return
    _check("operation-result", env)


def assert_valid_introspection(env: Any) -> None:
    """Validate an introspection response against introspection-response.schema.json — a failure
    without its ``error.details``, which that schema forbids but mcpaql keeps on every
    operation's errors, introspect's too (docs/conformance.md decision E2) — and operation-result."""
    from mcpaql.conformance.evidence import without_error_details

    _check("introspection-response", without_error_details(env))
    _check("operation-result", env)


def assert_valid_input(request: Any) -> None:
    _check("operation-input", request)


LEAK_PATTERNS = (
    re.compile(r"Traceback"),
    re.compile(r"\b[A-Z][A-Za-z]*(Error|Exception)\b(?!_)"),  # Python exception class names
    re.compile(r"\.py\b"),
    re.compile(r"/src/"),
    re.compile(r"site-packages|node_modules"),
    re.compile(r"File \""),
    re.compile(r"line \d+"),
    re.compile(r"<[a-zA-Z_.]+ object at 0x"),
)
# The spec's conformance runner's own forbidden-message patterns (mcpaql.conformance.grade).
RUNNER_LEAK_PATTERNS = tuple(
    re.compile(p, re.I)
    for p in (r"typeerror", r"referenceerror", r"syntaxerror", r"at\s+\S+", r"/src/", r"/node_modules/", r"\.ts:\d+", r"\.js:\d+")
)


def assert_no_leak(text: str) -> None:
    """Error messages never leak internals (REQ-RSP-013)."""
    for rx in LEAK_PATTERNS + RUNNER_LEAK_PATTERNS:
        assert not rx.search(text), f"message leaks internals ({rx.pattern!r}): {text[:300]!r}"


def assert_envelope_safe(env: dict[str, Any]) -> None:
    """Leak check over a failure envelope's message (and every batch item's message)."""
    if env.get("success") is False:
        assert_no_leak(env["error"]["message"])
    for item in env.get("results") or ():
        assert_envelope_safe(item["result"])


# ---- the sample adapter -----------------------------------------------------------------


class Priority(enum.Enum):
    """How urgent a task is."""

    LOW = "low"
    HIGH = "high"


class Address(BaseModel):
    """A postal address."""

    street: str
    city: str = "Paris"


class Owner(BaseModel):
    """Who owns a task."""

    name: str = Field(min_length=1, description="Owner's display name")
    address: Address


class Task(BaseModel):
    """A task."""

    task_id: str
    title: str
    priority: Priority = Priority.LOW
    owner: Owner | None = None


SECRET_PATH = "/srv/app/src/mcpaql/store/secret_db.py"


def make_app(**adapter_kw: Any) -> Adapter:
    """A small adapter exercising the features the protocol core has to handle."""
    app = Adapter("tasks", display_name="Task Tracker", **adapter_kw)

    @app.read
    def list_tasks(
        limit: Annotated[int, Field(ge=1, le=100, description="Maximum number of tasks")] = 10,
        priority: Priority | None = None,
        query: str | None = None,
        tags: list[str] | None = None,
    ) -> list[dict[str, Any]]:
        """List tasks.

        Args:
            query: Text search over titles
        """
        return [
            {
                "limit": limit,
                "priority": priority.value if priority else None,
                "query": query,
                "tags": tags,
            }
        ]

    @app.read
    async def get_task(
        task_id: Annotated[str, Field(pattern=r"^t[0-9]+$", min_length=2, max_length=8, description="Task id")],
        ctx: Context,
    ) -> Task:
        """Get one task by id."""
        return Task(task_id=task_id, title=f"Task {task_id}", owner=Owner(name="Ada", address=Address(street="1 Rue")))

    @app.read
    def echo(text: str = "", size: Annotated[int, Field(ge=0)] = 0, ratio: float = 0.5, flag: bool = False) -> dict[str, Any]:
        """Echo the inputs; ``size`` > 0 returns a string of that many characters."""
        return {"text": text, "blob": "x" * size, "ratio": ratio, "flag": flag}

    @app.read
    def whoami(ctx: Context) -> dict[str, Any]:
        """Report the session id and the request metadata the handler saw."""
        return {"session_id": ctx.session.id, "meta": ctx.request_meta, "state": dict(ctx.state)}

    @app.create
    def create_task(
        title: Annotated[str, Field(min_length=1, max_length=200)],
        owner: Owner,
        priority: Priority = Priority.LOW,
        tags: list[str] = [],  # noqa: B006 - default must be copied per call by the core
        api_key: Annotated[str, Sensitive] = "",
    ) -> Task:
        """Create a task."""
        tags.append("seen")
        return Task(task_id="t1", title=title, priority=priority, owner=owner)

    @app.create
    def remember(ctx: Context, key: str, value: str) -> dict[str, Any]:
        """Store a value in session-scoped state."""
        ctx.state[key] = value
        return {"stored": key}

    @app.update
    def update_task(task_id: str, done: bool = False) -> dict[str, Any]:
        """Update a task."""
        return {"task_id": task_id, "done": done}

    @app.delete
    def delete_task(task_id: str) -> dict[str, Any]:
        """Delete a task."""
        return {"deleted": task_id}

    @app.execute
    def run_export(ctx: Context) -> dict[str, Any]:
        """Start an export job (always fails: used for internal-error tests)."""
        raise RuntimeError(f"cannot open {SECRET_PATH}, line 42 in Traceback (most recent call last)")

    @app.execute
    async def start_job(seconds: float = 0) -> dict[str, Any]:
        """Start a job (async handler)."""
        await asyncio.sleep(seconds)
        return {"started": True}

    return app


def make_alt_app() -> Adapter:
    """An adapter with an alternate endpoint-family profile (MODES §4.4)."""
    app = Adapter(
        "inventory",
        display_name="Inventory",
        families={"query": "Query inventory data.", "manage": "Change inventory data."},
    )

    @app.read(endpoint="query")
    def list_items(query: str = "") -> list[str]:
        """List items."""
        return [query]

    @app.create(endpoint="manage")
    def create_item(item_name: str) -> dict[str, str]:
        """Create an item."""
        return {"item_name": item_name}

    @app.delete(endpoint="manage")
    def delete_item(item_name: str) -> dict[str, str]:
        """Delete an item."""
        return {"deleted": item_name}

    return app


# Tool names of the sample adapter in the default (semantic, CRUDE) configuration.
READ = "tasks_mcpaql_read"
CREATE = "tasks_mcpaql_create"
UPDATE = "tasks_mcpaql_update"
DELETE = "tasks_mcpaql_delete"
EXECUTE = "tasks_mcpaql_execute"
SINGLE = "tasks_mcpaql"


def run(coro: Any) -> Any:
    return asyncio.run(coro)


class Harness:
    """An engine and one session; every response it returns has been schema-validated."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.session = engine.new_session()

    def call(self, tool: str, request: Any, session: Any = None) -> dict[str, Any]:
        ctx = self.engine.context(session or self.session)
        env = run(self.engine.call_tool(tool, request, ctx))
        self.check(env, tool, request)
        return env

    def raw(self, raw: bytes | str, tool: str | None = None) -> dict[str, Any]:
        env = run(self.engine.call_raw(raw, self.engine.context(self.session), tool))
        assert_valid_envelope(env)
        return env

    def check(self, env: dict[str, Any], tool: str, request: Any) -> None:
        assert_valid_envelope(env)
        assert_envelope_safe(env)
        if tool in self.engine.tools_by_name and isinstance(request, dict) and request.get("operation") == "introspect":
            assert_valid_introspection(env)

    def introspect(self, tool: str = READ, **params: Any) -> dict[str, Any]:
        return self.call(tool, {"operation": "introspect", "params": params})


async def open_test_store(kind: str, request: Any, tmp_path: Any) -> AsyncIterator[Any]:
    """A real store of ``kind`` ("sqlite" file in tmp, or "redis" with a private key prefix)."""
    from mcpaql.store.redis import RedisStore
    from mcpaql.store.sqlite import SQLiteStore

    if kind == "sqlite":
        store: Any = SQLiteStore(tmp_path / "state.db")
    else:
        srv = request.getfixturevalue("redis_server")
        store = RedisStore.from_url(srv.url, prefix="t" + uuid.uuid4().hex[:8])
    try:
        yield store
    finally:
        await store.close()


# ---- real HTTP servers for tests ------------------------------------------------------------------


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def serve_in_thread(app: Any) -> Iterator[str]:
    """Run an ASGI ``app`` under a real uvicorn server on 127.0.0.1; yields its base URL."""
    import threading
    import time

    import uvicorn

    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning"))
    t = threading.Thread(target=server.run, daemon=True)
    t.start()
    while not server.started:
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        t.join(5)
