"""What upstream call sites read to join a trace, without importing OpenTelemetry.

Why a context variable: the instrumentation of a ``tools/call`` (:meth:`.telemetry.Telemetry.observe_call`)
sets :data:`CURRENT` for the length of the call, so an upstream request made on its behalf (a
wrapped MCP server over the lanes, an OpenAPI target) finds it and opens its child span — and a
server built without telemetry, or a call made outside a served request, finds None and pays one
lookup. No global switch, no plumbing through the adapters.
"""

from __future__ import annotations

from contextvars import ContextVar
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .telemetry import Telemetry

CURRENT: ContextVar[Telemetry | None] = ContextVar("mcpaql_telemetry", default=None)


def current_telemetry() -> Telemetry | None:
    """The telemetry of the call in progress, or None (telemetry off, or no served call)."""
    return CURRENT.get()
