"""Extensions: what a cross-cutting layer (safety, background jobs, a backend's resources) adds
to an adapter, given at build time instead of patched into built objects.

An :class:`Extension` is plain data — the operations it adds, a rewrite applied to every
operation spec, the guards every call runs, the ``_protocol.capabilities`` it advertises, the
extension ``introspect`` queries it answers, and a lifespan. ``Adapter(extensions=...)`` /
``Adapter.use(ext)`` collect them; ``Engine(registry, config, extensions=...)`` applies them
once, in order, while it builds, and the built engine holds them in immutable containers
(tuples and read-only mappings). Nothing reaches into a built engine afterwards: to change what
an engine does, build another one (what the wrapped-upstream holders already do on a tools
change).

Order of application (so two extensions compose predictably): each extension's ``rewrite`` runs
over the adapter's own operations in the order the extensions were given, then every
extension's ``operations`` are added (reserved names allowed: they are the extension's own);
guards run in the order given, after the engine's own endpoint and category checks;
capabilities and introspect queries are merged left to right (a later extension wins).

A *lifespan* is what Starlette and the MCP SDK call one: a function returning an async context
manager, entered when serving starts and left when it stops (stdio EOF, HTTP shutdown). A
backend opens its connections before ``yield`` and closes them after. The engine's
:meth:`~mcpaql.protocol.dispatch.Engine.lifespan` enters the adapter's own lifespan first and the
extensions' after it (closing in reverse), so an extension may use what the backend opened.
"""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from .operations import OperationSpec

# A lifespan: called once per serve, returns the async context manager that brackets it.
Lifespan = Callable[[], contextlib.AbstractAsyncContextManager[Any]]
Rewrite = Callable[[OperationSpec], OperationSpec]
Guard = Callable[..., Awaitable[None]]  # (CompiledOperation, values, Context) -> None; raises to refuse
IntrospectQuery = Callable[..., Awaitable[Any]]  # (Context, name) -> result


@dataclass(frozen=True)
class Extension:
    """What one layer adds to an adapter (see the module doc for the order of application)."""

    name: str
    operations: tuple[OperationSpec, ...] = ()
    rewrite: Rewrite | None = None
    guards: tuple[Guard, ...] = ()
    capabilities: Mapping[str, Any] = field(default_factory=dict)
    introspect_queries: Mapping[str, IntrospectQuery] = field(default_factory=dict)
    lifespan: Lifespan | None = None

    def __post_init__(self) -> None:
        # Frozen all the way down: a caller's list or dict cannot change the extension later.
        object.__setattr__(self, "operations", tuple(self.operations))
        object.__setattr__(self, "guards", tuple(self.guards))
        object.__setattr__(self, "capabilities", MappingProxyType(dict(self.capabilities)))
        object.__setattr__(self, "introspect_queries", MappingProxyType(dict(self.introspect_queries)))


@contextlib.asynccontextmanager
async def _nothing() -> AsyncIterator[None]:
    yield None


def combine_lifespans(lifespans: Iterable[Lifespan | None]) -> Lifespan:
    """One lifespan entering ``lifespans`` in order and leaving them in reverse (None skipped)."""
    given = tuple(ls for ls in lifespans if ls is not None)
    if not given:
        return _nothing
    if len(given) == 1:
        return given[0]

    @contextlib.asynccontextmanager
    async def combined() -> AsyncIterator[None]:
        async with contextlib.AsyncExitStack() as stack:
            for ls in given:
                await stack.enter_async_context(ls())
            yield None

    return combined
