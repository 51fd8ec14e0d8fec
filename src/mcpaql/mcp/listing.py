"""The ``tools/list`` listing as a cacheable, stable artefact (2026-07-28 caching hints, SEP-2549).

Why: clients, gateways and model providers cache a server's tool list (prompt caching keys on
the exact bytes of the tools block). So the listing is built once per engine and is a pure
function of the registry and the configuration: byte-identical between calls, between
sessions and across restarts, and different only when the registry changed (a wrapped
upstream's ``tools/list_changed`` rebuilds the engine; clients are told, in both eras).

On the 2026-07-28 wire the result carries ``ttlMs``/``cacheScope`` (the only caching fields
the protocol defines); ``_meta[LISTING_VERSION_KEY]`` is a digest of the registry behind the
listing, so a cache or a gateway can tell "same surface" from "changed" without diffing the
tools (the digest changes when an operation changes even if the five CRUDE tools do not).
Scope is ``private``: once callers authenticate, what they may see can depend on who they are.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

import mcp_types as types
from mcp.server.caching import CacheHint

from ..protocol.dispatch import Engine
from ..protocol.surface import ToolDef
from .results import ENVELOPE_OUTPUT_SCHEMA

LISTING_VERSION_KEY = "mcpaql/listing-version"
STATIC_TTL_MS = 300_000  # an engine that cannot change while serving: 5 minutes
CHANGING_TTL_MS = 30_000  # a holder that rebuilds on upstream changes: stale for at most 30 s


def cache_hints(*, changes: bool) -> dict[Any, CacheHint]:
    """``Server(cache_hints=...)`` for the listing and ``server/discover``."""
    ttl = CHANGING_TTL_MS if changes else STATIC_TTL_MS
    hint = CacheHint(ttl_ms=ttl, scope="private")
    return {"tools/list": hint, "server/discover": hint}


def to_mcp_tool(tool: ToolDef, *, output_schema: bool = False) -> types.Tool:
    """One ``ToolDef`` as an SDK ``Tool`` (``outputSchema`` only when configured on)."""
    a = tool.annotations
    return types.Tool(
        name=tool.name,
        # No top-level title: clients fall back to annotations.title (MCP display precedence),
        # which seed 003 requires anyway; sending both costs tokens in every conversation.
        description=tool.description,
        input_schema=tool.input_schema,
        output_schema=ENVELOPE_OUTPUT_SCHEMA if output_schema else None,
        annotations=types.ToolAnnotations(
            title=a.get("title"),
            read_only_hint=a.get("readOnlyHint"),
            destructive_hint=a.get("destructiveHint"),
            idempotent_hint=a.get("idempotentHint"),
            open_world_hint=a.get("openWorldHint"),
        ),
    )


def listing_version(engine: Engine, tools: list[types.Tool]) -> str:
    """A digest of what the listing stands for: the tools as sent plus every operation's
    detail (names, categories, parameters, return types) — stable across processes because it
    is computed from the registry only, never from ids, times or memory addresses."""
    h = hashlib.sha256()
    for t in tools:
        h.update(json.dumps(t.model_dump(by_alias=True, mode="json", exclude_none=True), sort_keys=True).encode())
    for op in sorted(engine.operations, key=lambda o: o.name):
        h.update(json.dumps(op.detail(""), sort_keys=True, default=str).encode())
    return h.hexdigest()[:32]


def listing(engine: Engine, *, output_schema: bool | None = None) -> types.ListToolsResult:
    """The listing of ``engine`` (build once per engine and reuse: it never changes).
    ``output_schema`` defaults to the engine's ``Config.output_schema``."""
    with_schema = engine.config.output_schema if output_schema is None else output_schema
    tools = [to_mcp_tool(t, output_schema=with_schema) for t in engine.tools]
    return types.ListToolsResult(tools=tools, _meta={LISTING_VERSION_KEY: listing_version(engine, tools)})
