"""The engine a caller sees: the server's engine narrowed to what the caller's scopes grant.

A read-only caller gets exactly the surface ``--read-only`` would give (tools, ``introspect``
listing, the gatekeeper's ``PERMISSION_DENIED`` for every other category, in every mode and
inside batches); the safety loop's human-facing operations additionally need ``mcpaql:admin``.
Narrowed engines are built once per (engine, grant) and shared by every caller with that grant.
"""

from __future__ import annotations

import weakref
from typing import Any

from ..protocol.compile import CompiledOperation
from ..protocol.context import Context
from ..protocol.dispatch import Engine
from ..protocol.errors import MCPAQLError
from .scopes import ADMIN, Caller, human_facing

_cache: weakref.WeakKeyDictionary[Engine, dict[tuple[frozenset[str], bool], Engine]] = weakref.WeakKeyDictionary()


async def require_admin(compiled: CompiledOperation, values: dict[str, Any], ctx: Context) -> None:
    """Guard of a non-admin caller's engine: the human-facing operations are refused."""
    spec = compiled.spec
    if human_facing(spec.name, spec.origin):
        raise MCPAQLError(
            "PERMISSION_DENIED",
            f"Permission denied: '{spec.name}' is a human-facing operation and needs the '{ADMIN}' scope",
            {"reason": "insufficient_scope", "operation": spec.name, "required_scope": ADMIN},
        )


def engine_for(engine: Engine, caller: Caller | None) -> Engine:
    """``engine`` as ``caller`` may use it (``None``: no authentication, the engine itself)."""
    if caller is None:
        return engine
    key = caller.grant_key
    per_engine = _cache.setdefault(engine, {})
    narrowed = per_engine.get(key)
    if narrowed is None:
        categories, admin = key
        narrowed = engine.restricted(categories) if admin else engine.restricted(categories, require_admin)
        per_engine[key] = narrowed
    return narrowed
