"""The MCP surface: tool names, descriptions, annotations and input schemas (MCPI §7)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import MCP
from ..support import FAIL, PASS, TOOL_NAME_RE, WARN

if TYPE_CHECKING:
    from ..suite import Suite


async def check_mcp_surface(suite: Suite) -> None:
    bad = [t.get("name") for t in suite.tools if not TOOL_NAME_RE.match(str(t.get("name", "")))]
    names: list[Any] = [t.get("name") for t in suite.tools]  # as the server sent them
    dup = sorted({n for n in names if names.count(n) > 1})
    if bad or dup:
        msg = "; ".join(
            filter(
                None,
                [
                    f"names outside [a-z0-9_]{{1,64}}: {', '.join(map(repr, bad))}" if bad else "",
                    f"duplicate names: {', '.join(map(str, dup))}" if dup else "",
                ],
            )
        )
        suite.add(
            "MCP-1",
            "Tool names are [a-z0-9_], at most 64 characters, unique",
            MCP,
            FAIL,
            ["REQ-MCP-008", "REQ-MCP-022", "seed 003"],
            msg,
        )
    else:
        suite.add(
            "MCP-1",
            "Tool names are [a-z0-9_], at most 64 characters, unique",
            MCP,
            PASS,
            ["REQ-MCP-008", "REQ-MCP-022", "seed 003"],
            f"{len(names)} tool(s) named correctly",
        )

    problems = []
    for t in suite.aql_tools:
        s = t.get("inputSchema") or {}
        props = s.get("properties") or {}
        opp, pp = props.get("operation") or {}, props.get("params") or {}
        if s.get("type") != "object" or opp.get("type") != "string" or "operation" not in (s.get("required") or []):
            problems.append(f"{t['name']}: needs type object, properties.operation string, required [operation]")
        elif pp.get("type") != "object" or pp.get("additionalProperties") is False:
            problems.append(f"{t['name']}: params must be an open object")
    suite.add(
        "MCP-2",
        "Input schemas follow the base {operation, params} shape",
        MCP,
        FAIL if problems else PASS,
        ["REQ-MCP-010"],
        "; ".join(problems) or "all MCP-AQL tools use the base input schema",
    )

    missing = [t["name"] for t in suite.aql_tools if "introspect" not in str(t.get("description") or "")]
    suite.add(
        "MCP-3",
        "Every tool description references introspect",
        MCP,
        FAIL if missing else PASS,
        ["REQ-MCP-001"],
        f"no 'introspect' in the description of: {', '.join(missing)}"
        if missing
        else "every MCP-AQL tool description shows how to call introspect",
    )

    fails, warns = [], []
    for t in suite.aql_tools:
        ann = t.get("annotations") or {}
        ops = ops_on_tool(suite, t["name"])
        perms = [(suite.details.get(o) or {}).get("permissions") or {} for o in ops]
        cats = {suite.category(o) for o in ops}
        read_only = bool(ops) and all(c == "READ" for c in cats)
        destructive = any(p.get("destructive") is True for p in perms) or bool(cats & {"UPDATE", "DELETE", "EXECUTE"})
        ro, de = ann.get("readOnlyHint"), ann.get("destructiveHint")
        if ro is None or de is None:
            fails.append(f"{t['name']}: readOnlyHint/destructiveHint missing")
            continue
        if ro is True and not read_only:
            fails.append(f"{t['name']}: readOnlyHint true but it carries {', '.join(sorted(cats - {'READ'}))} operations")
        if ro is False and read_only:
            warns.append(f"{t['name']}: readOnlyHint false on a READ-only tool")
        if destructive and de is not True:
            fails.append(f"{t['name']}: destructiveHint must be true (carries {', '.join(sorted(cats))} operations)")
        if not destructive and de is True and ops:
            warns.append(f"{t['name']}: destructiveHint true on a tool without destructive operations")
        if not ann.get("title") and not t.get("title"):
            warns.append(f"{t['name']}: no title annotation")
    st = FAIL if fails else WARN if warns else PASS
    suite.add(
        "MCP-4",
        "Tool annotations present and conservative for their operations",
        MCP,
        st,
        ["REQ-MCP-009", "seed 003"],
        "; ".join(fails + warns) or "annotations match the operations on each tool",
    )


def ops_on_tool(suite: Suite, tool: str) -> list[str]:
    if tool == suite.single_tool or (not suite.family_tools and tool == suite.intro_tool):
        return [o["name"] for o in suite.ops if isinstance(o.get("name"), str)]
    fam = next((f for f, t in suite.family_tools.items() if t == tool), None)
    return [o["name"] for o in suite.ops if o.get("endpoint") == fam and isinstance(o.get("name"), str)]
