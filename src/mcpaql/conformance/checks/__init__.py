"""The conformance checks, one module per phase of :meth:`..suite.Suite.run`.

Each phase is a function taking the :class:`..suite.Suite` (the run's shared state and its
``call``/``op``/``build_params`` probe plumbing) and recording its :class:`..model.CheckResult` s
with ``suite.add``. :data:`PHASES` is the order they run in after :func:`.discovery.discover`; that
order is the report's order, and the last phases (errors, MCP results, claim) grade what the
earlier ones observed. To add a check, add a function to the module of its phase and call it from
that phase's entry point (or list it here); a new phase is a new module and an entry here.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from . import claim, errors, introspection, jsonrpc, level2, mcp_results, parameters, round_trip, routing, surface

if TYPE_CHECKING:
    from ..suite import Suite

Phase = Callable[["Suite"], Awaitable[None] | None]

PHASES: tuple[Phase, ...] = (
    surface.check_mcp_surface,
    introspection.check_introspection,
    routing.check_routing,
    parameters.check_parameters,
    round_trip.check_round_trip,
    level2.check_level2,
    jsonrpc.jsonrpc_probes,
    errors.check_errors,
    mcp_results.check_mcp_results,
    claim.check_claim,
    claim.check_semantic,
)
