"""What the zero-code adapters share: an *engine holder* (the ``EngineHolder`` protocol of
:mod:`mcpaql.mcp.server`) that owns resources for its lifetime and rebuilds its engine on change.

A wrapped MCP server, an adapter file's runtime and an OpenAPI runtime all open the same kind of
things when entered — the safety layer's store, upstream connections, an HTTP client — and must
close them in reverse order whatever fails; they all keep a current engine that the MCP server
reads per request and rebuild it (telling listeners, which send ``tools/list_changed``) when their
tools change. Subclasses say what to open (:meth:`_open`) and how an engine is made from their
registry (:meth:`registry`); the safety layer, when configured, goes on every engine built.
"""

from __future__ import annotations

import contextlib
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from ..config import Config
from ..protocol.dispatch import Engine
from ..protocol.registry import Registry
from ..safety.install import Safety, SafetyConfig, open_safety

Listener = Callable[[Engine], Awaitable[None] | None]


class EngineHolderBase(ABC):
    """Lifecycle shared by :class:`~mcpaql.adapters.upstream.wrap.Wrapper`,
    :class:`~mcpaql.adapters.schema.load.AdapterRuntime` and
    :class:`~mcpaql.adapters.openapi.OpenAPIRuntime` (``async with holder: holder.engine``)."""

    name: str
    config: Config | None
    not_open_message = "use 'async with' before reading the engine"

    def __init__(
        self, *, safety: SafetyConfig | Mapping[str, Any] | None = None, engine_kwargs: Mapping[str, Any] | None = None
    ) -> None:
        self.safety_config = safety
        self.safety: Safety | None = None
        self.engine_kwargs = dict(engine_kwargs or {})
        self._stack: contextlib.AsyncExitStack | None = None
        self._engine: Engine | None = None
        self._listeners: list[Listener] = []

    # ---- what subclasses provide -------------------------------------------------------------

    @abstractmethod
    async def _open(self, stack: contextlib.AsyncExitStack) -> None:
        """Open this holder's resources, registering their cleanup on ``stack``."""

    @abstractmethod
    def registry(self) -> Registry:
        """The registry of the current tools (called for every engine built)."""

    # ---- shared ------------------------------------------------------------------------------

    async def __aenter__(self) -> Any:
        self._stack = contextlib.AsyncExitStack()
        try:
            self.safety = await open_safety(self.safety_config, self.name, self._stack)
            await self._open(self._stack)
            self._engine = self.build_engine()
        except BaseException:
            await self._stack.aclose()
            self._stack = None
            raise
        return self

    async def __aexit__(self, *exc: Any) -> None:
        if self._stack is not None:
            stack, self._stack = self._stack, None
            await stack.aclose()

    def build_engine(self) -> Engine:
        if self.safety is not None:
            return self.safety.engine(self.registry(), self.config, **self.engine_kwargs)
        # Config.load() here, not inside Engine: the sans-IO core never reads the environment.
        return Engine(self.registry(), self.config if self.config is not None else Config.load(), **self.engine_kwargs)

    @property
    def engine(self) -> Engine:
        if self._engine is None:
            raise RuntimeError(self.not_open_message)
        return self._engine

    def on_change(self, listener: Listener) -> None:
        self._listeners.append(listener)

    async def rebuild(self) -> None:
        """Build a new engine from the current tools and tell every listener."""
        self._engine = self.build_engine()
        for listener in self._listeners:
            r = listener(self._engine)
            if r is not None:
                await r
