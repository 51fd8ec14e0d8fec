"""Routing: each operation answers on its own endpoint and is refused on the wrong one (§3 ROUTING)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import ROUTING
from ..support import FAIL, PASS, SKIP, WARN

if TYPE_CHECKING:
    from ..suite import Suite


async def check_routing(suite: Suite) -> None:
    ex = await suite.op("mcpaql_conformance_no_such_operation", {}, tool=suite.intro_tool)
    ok = ex.code == "NOT_FOUND_OPERATION" and ex.is_error is False
    st = PASS if ok else (WARN if ex.envelope and ex.envelope.get("success") is False and ex.code else FAIL)
    suite.add(
        "EP-3",
        "Unknown operation → NOT_FOUND_OPERATION (isError false)",
        ROUTING,
        st,
        ["REQ-MODE-011", "Part F #4"],
        "unknown operation rejected with NOT_FOUND_OPERATION"
        if ok
        else f"got code {ex.code!r}, isError {ex.is_error}"
        if ex.envelope
        else "no envelope returned",
        [] if ok else [ex],
    )

    if len(suite.family_tools) < 2:
        suite.add(
            "EP-1",
            "Wrong-endpoint calls are rejected (semantic mode)",
            ROUTING,
            SKIP,
            ["REQ-MODE-005", "REQ-CONF-001"],
            "no semantic endpoint families exposed (single mode): nothing to cross-route",
        )
        suite.add(
            "EP-2", "Wrong-endpoint errors name the right tool", ROUTING, SKIP, ["REQ-MODE-006", "Part F #3"], "single mode"
        )
        return
    probes: list[tuple[str, dict[str, Any], str]] = []
    read_tool = suite.family_tools.get(str((suite.details.get("introspect") or {}).get("endpoint", "read")))
    for tool in suite.family_tools.values():
        if tool != read_tool and any(o.get("name") == "introspect" for o in suite.ops):
            probes.append((tool, {"query": "operations"}, "introspect"))
            break
    # A mutating op with its required params omitted, sent to the READ tool: rejected by the
    # gatekeeper (conformant) or by validation (misrouted) — never executed either way.
    for o in suite.ops:
        n = str(o.get("name"))
        if (
            o.get("semantic_category") != "READ"
            and read_tool
            and suite.tool_for(n) != read_tool
            and any(p.get("required") for p in suite.params_of(n))
        ):
            probes.append((read_tool, {}, n))
            break
    fails, names_bad, evid = [], [], []
    for tool, params, name in probes:
        ex = await suite.op(name, params, tool=tool)
        right = suite.tool_for(name) or ""
        if ex.ok or (
            ex.code != "VALIDATION_ENDPOINT_MISMATCH"
            and not (ex.envelope and ex.envelope.get("success") is False and right in ex.message)
        ):
            fails.append(f"'{name}' via {tool}: " + ("executed" if ex.ok else f"not rejected as a wrong endpoint ({ex.code})"))
            evid.append(ex)
        elif right not in ex.message:
            names_bad.append(f"'{name}' via {tool}: message does not name {right}")
            evid.append(ex)
        elif ex.code != "VALIDATION_ENDPOINT_MISMATCH":
            names_bad.append(f"'{name}' via {tool}: code {ex.code}, expected VALIDATION_ENDPOINT_MISMATCH")
            evid.append(ex)
    if not probes:
        suite.add(
            "EP-1",
            "Wrong-endpoint calls are rejected (semantic mode)",
            ROUTING,
            SKIP,
            ["REQ-MODE-005"],
            "no operation could be cross-routed safely",
        )
        return
    suite.add(
        "EP-1",
        "Wrong-endpoint calls are rejected (semantic mode)",
        ROUTING,
        FAIL if fails else PASS,
        ["REQ-MODE-005", "REQ-CONF-001"],
        "; ".join(fails) or f"{len(probes)} cross-routed call(s) rejected",
        evid,
    )
    suite.add(
        "EP-2",
        "Wrong-endpoint errors name the right tool",
        ROUTING,
        (WARN if names_bad else PASS) if not fails else SKIP,
        ["REQ-MODE-006", "REQ-MODE-007", "Part F #3"],
        "; ".join(names_bad) or ("VALIDATION_ENDPOINT_MISMATCH naming the right tool" if not fails else "see EP-1"),
        evid,
    )
