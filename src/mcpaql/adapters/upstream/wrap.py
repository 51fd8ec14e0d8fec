"""Wrap one or more upstream MCP servers behind a single MCP-AQL adapter.

``wrap(upstreams, …)`` returns a :class:`Wrapper`, an async context manager that connects
every upstream, turns their tools into operations (classification, snake_case names with
``origin`` = tool name, ``map_to`` for parameters) and builds an :class:`Engine`. Operation
names are prefixed with the upstream's name only where two upstreams would collide.
``read_only`` is a guarantee, not a filter on a guess: it keeps only operations that are READ
by annotation (``readOnlyHint: true``), by a manual override or by an unambiguous read verb
(:meth:`.Classification.read_only_exclusion`); everything else is left out of the registry,
so no endpoint, batch, alias or introspection call can reach it, and each left-out operation
is listed with its reason (``Wrapper.excluded``, logged at start). ``include``/``exclude`` are globs matched against
both the tool name and the operation name (``upstream:glob`` limits a glob to one upstream).
READ operations take ``fields`` (see :mod:`.fields`), which makes ``_protocol.capabilities``
report ``field_selection: true``.

When an upstream sends ``tools/list_changed`` the wrapper rebuilds its engine and calls the
``on_change`` listeners (the MCP server uses that to send its own ``list_changed``).
"""

from __future__ import annotations

import contextlib
import fnmatch
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import Any

from ...config import Config
from ...protocol.categories import Category
from ...protocol.dispatch import Engine
from ...protocol.operations import OperationSpec
from ...protocol.registry import RESERVED, Registry, SchemaError
from ...protocol.schema import SchemaContext, SchemaTooComplex
from ..holder import EngineHolderBase
from .classify import Classification, classify, snake_name
from .ops import CallFn, spec_from_tool
from .runtime import Upstream, UpstreamSpec

log = logging.getLogger("mcpaql.wrap")
Listener = Callable[[Engine], Awaitable[None] | None]
log = logging.getLogger("mcpaql.wrap")


def _matches(globs: Iterable[str], upstream: str, tool: str, op: str) -> bool:
    for g in globs:
        scope, _, pattern = g.rpartition(":")
        if scope and scope != upstream:
            continue
        if fnmatch.fnmatchcase(tool, pattern) or fnmatch.fnmatchcase(op, pattern):
            return True
    return False


def select_tools(
    sources: Mapping[str, list[dict[str, Any]]],
    *,
    read_only: bool = False,
    include: Iterable[str] = (),
    exclude: Iterable[str] = (),
    per_upstream: Mapping[str, tuple[tuple[str, ...], tuple[str, ...]]] | None = None,
    overrides: Mapping[str, Mapping[str, Any]] | None = None,
    excluded: list[dict[str, str]] | None = None,
) -> list[tuple[str, dict[str, Any], str, Classification]]:
    """Decide which tools become operations and under which names.

    Returns ``(upstream, tool, operation name, classification)`` in upstream order. ``overrides``
    maps a tool or operation name to ``{"category": …, "danger_level": …, "name": …}``.
    ``excluded``, if given, receives one ``{upstream, tool, operation, category, reason}`` per
    tool that ``read_only`` left out (include/exclude globs are the user's choice, not listed).
    """
    include, exclude = tuple(include), tuple(exclude)
    picked: list[tuple[str, dict[str, Any], str, Classification]] = []
    for up, tools in sources.items():
        inc_u, exc_u = (per_upstream or {}).get(up, ((), ()))
        for tool in tools:
            tname = str(tool["name"])
            op = snake_name(tname)
            c = classify(tool)
            ov = (overrides or {}).get(tname) or (overrides or {}).get(op)
            if ov:
                c = _override(c, ov)
                op = ov.get("name", op)
            if include and not _matches(include, up, tname, op):
                continue
            if inc_u and not _matches(inc_u, up, tname, op):
                continue
            if _matches(exclude, up, tname, op) or _matches(exc_u, up, tname, op):
                continue
            reason = c.read_only_exclusion() if read_only else None
            if reason is not None:
                if excluded is not None:
                    excluded.append(
                        {"upstream": up, "tool": tname, "operation": op, "category": c.category.value, "reason": reason}
                    )
                continue
            picked.append((up, tool, op, c))
    owners: dict[str, set[str]] = {}
    for up, _, op, _ in picked:
        owners.setdefault(op, set()).add(up)
    out: list[tuple[str, dict[str, Any], str, Classification]] = []
    used: set[str] = set()
    for up, tool, op, c in picked:
        name = op
        if len(owners[op]) > 1 or name in RESERVED:  # prefix only where two upstreams collide
            name = f"{snake_name(up)}_{op}"
        base, i = name, 2
        while name in used:
            name = f"{base}_{i}"
            i += 1
        used.add(name)
        out.append((up, tool, name, c))
    return out


def _override(c: Classification, ov: Mapping[str, Any]) -> Classification:
    from dataclasses import replace

    changes: dict[str, Any] = {}
    if "category" in ov:
        changes["category"] = Category(str(ov["category"]).upper())
        changes["source"] = "manual_override"
        changes["confidence"] = "high"
        changes["needs_review"] = False
        changes["review_reasons"] = ()
        changes["why"] = (*c.why, f"manual override → {changes['category'].value}")
        changes["read_basis"] = "override" if changes["category"] is Category.READ else ""
    if "danger_level" in ov:
        changes["danger_level"] = str(ov["danger_level"])
        changes["danger_source"] = "manual_override"
    return replace(c, **changes) if changes else c


def build_registry(
    name: str,
    sources: Mapping[str, list[dict[str, Any]]],
    call_for: Callable[[str], CallFn],
    *,
    display_name: str | None = None,
    version: str = "0.1.0",
    description: str | None = None,
    open_world: bool | None = None,
    schemas: SchemaContext | None = None,
    **select: Any,
) -> Registry:
    """A registry of operations for the given tools; ``call_for(upstream)`` makes each handler.

    ``open_world`` defaults to what the tools declare (``openWorldHint``, true when absent, as in MCP).
    ``schemas`` (one per registry unless given) keeps type names distinct across the tools and
    resolves shared ``$ref`` targets once. A tool whose schema cannot be served (past the depth or
    size budget, or an unusable shape) is skipped with a warning: never the whole server.
    """
    schemas = (schemas if schemas is not None else SchemaContext()).fork()
    if open_world is None:
        open_world = any((t.get("annotations") or {}).get("openWorldHint", True) for ts in sources.values() for t in ts)
    reg = Registry(name, display_name=display_name, version=version, open_world=open_world, description=description)
    for up, tool, op, c in select_tools(sources, **select):
        try:
            reg.add(
                spec_from_tool(tool, call_for(up), name=op, classification=c, upstream=up, field_selection=True, schemas=schemas)
            )
        except SchemaTooComplex as e:
            log.warning("operation %s skipped: %s", op, e)
        except SchemaError as e:  # a type clash the naming could not avoid (types named by hand)
            if e.code != "SCHEMA_DUPLICATE_NAME":
                raise
            log.warning("operation %s skipped: %s", op, e.message)
    return reg


class Wrapper(EngineHolderBase):
    """Connected upstreams plus the engine built from their tools."""

    not_open_message = "the wrapper is not connected (use 'async with wrap(...)')"

    def __init__(
        self,
        upstreams: Iterable[UpstreamSpec],
        *,
        name: str | None = None,
        display_name: str | None = None,
        config: Config | None = None,
        read_only: bool = False,
        include: Iterable[str] = (),
        exclude: Iterable[str] = (),
        overrides: Mapping[str, Mapping[str, Any]] | None = None,
        engine_kwargs: Mapping[str, Any] | None = None,
        safety: Any = None,
    ) -> None:
        """``safety``: a :class:`~mcpaql.safety.SafetyConfig` (or its dict form) to put the safety
        layer on every engine this wrapper builds (one store for the wrapper's lifetime)."""
        super().__init__(safety=safety, engine_kwargs=engine_kwargs)
        self.specs = list(upstreams)
        if not self.specs:
            raise ValueError("wrap needs at least one upstream")
        names = [s.name for s in self.specs]
        if len(set(names)) != len(names):
            raise ValueError(f"upstream names must be unique: {names}")
        self.name = name or (self.specs[0].name if len(self.specs) == 1 else "wrapped")
        self.display_name = display_name
        self.config = config
        self.read_only = read_only
        self.include = tuple(include)
        self.exclude = tuple(exclude)
        self.overrides = dict(overrides or {})
        self.upstreams: dict[str, Upstream] = {}
        self.excluded: list[dict[str, str]] = []  # what --read-only left out, and why

    async def _open(self, stack: contextlib.AsyncExitStack) -> None:
        for spec in self.specs:
            up = Upstream(spec, on_tools_changed=self._tools_changed)
            self.upstreams[spec.name] = await stack.enter_async_context(up)

    def registry(self) -> Registry:
        per = {s.name: (s.include, s.exclude) for s in self.specs}
        excluded: list[dict[str, str]] = []
        reg = build_registry(
            self.name,
            {n: u.tools for n, u in self.upstreams.items()},
            lambda up: self.upstreams[up].call,
            display_name=self.display_name,
            read_only=self.read_only,
            include=self.include,
            exclude=self.exclude,
            per_upstream=per,
            overrides=self.overrides,
            excluded=excluded,
        )
        if excluded and excluded != self.excluded:
            log.warning("%s", format_exclusions(excluded, len(reg.operations)))
        self.excluded = excluded
        return reg

    @property
    def operations(self) -> list[OperationSpec]:
        return self.engine.registry.operations

    async def _tools_changed(self, _up: Upstream) -> None:
        await self.rebuild()


def format_exclusions(excluded: list[dict[str, str]], served: int) -> str:
    """What ``--read-only`` left out, one line each, for stderr and the docs."""
    head = (
        f"--read-only: serving {served} guaranteed read operation(s); left out {len(excluded)} "
        "that are not READ by annotation or an unambiguous read verb:"
    )
    return "\n".join([head, *(f"  {e['operation']} ({e['upstream']}): {e['reason']}" for e in excluded)])


def wrap(upstreams: Iterable[UpstreamSpec] | UpstreamSpec, **kw: Any) -> Wrapper:
    """``async with wrap([UpstreamSpec.from_argv([...])]) as w: w.engine`` (see :class:`Wrapper`)."""
    if isinstance(upstreams, UpstreamSpec):
        upstreams = [upstreams]
    return Wrapper(upstreams, **kw)
