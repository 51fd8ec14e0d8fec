"""Discovery: list the tools, find the MCP-AQL ones and read their introspection."""

from __future__ import annotations

from typing import TYPE_CHECKING

import anyio

from ..model import INTROSPECTION
from ..support import CALL_TIMEOUT, FAIL, TOOL_RE

if TYPE_CHECKING:
    from ..suite import Suite


async def discover(suite: Suite) -> bool:
    try:
        with anyio.fail_after(CALL_TIMEOUT):
            suite.tools = await suite.conn.list_tools_raw()
    except Exception as e:
        suite.report.fatal = f"tools/list failed: {type(e).__name__}: {e}"
        return False
    suite.report.tools = [str(t.get("name")) for t in suite.tools]
    cands = [t for t in suite.tools if TOOL_RE.match(str(t.get("name", "")))]
    cands += [t for t in suite.tools if t not in cands and "operation" in ((t.get("inputSchema") or {}).get("properties") or {})]
    capable: list[str] = []
    for t in cands:
        ex = await suite.call(t["name"], {"operation": "introspect", "params": {"query": "operations"}})
        if ex.ok and isinstance(ex.data, dict) and isinstance(ex.data.get("operations"), list):
            capable.append(t["name"])
            if suite.ops_env is None:
                suite.ops_env = ex.envelope
    if not capable:
        suite.report.fatal = (
            'no MCP-AQL tool answered {"operation": "introspect", "params": {"query": "operations"}} '
            f"(tools seen: {', '.join(suite.report.tools) or 'none'})"
        )
        suite.add(
            "IF-1",
            "Operations introspection is implemented",
            INTROSPECTION,
            FAIL,
            ["REQ-INTRO-001", "REQ-INTRO-004"],
            suite.report.fatal,
            suite.exchanges[-3:],
        )
        return False
    assert suite.ops_env is not None
    suite.ops = [o for o in suite.ops_env["data"]["operations"] if isinstance(o, dict)]
    all_cands = cands
    # MCP-AQL tools: named like one, or answering introspect (custom names); tools named by an
    # operation's mcpTool are added once the details are known
    cands = [t for t in cands if TOOL_RE.match(str(t.get("name", ""))) or t["name"] in capable]
    suite.aql_tools = cands
    for t in cands:
        m = TOOL_RE.match(t["name"])
        fam = m.group("family") if m else None
        if m and fam is None:
            suite.single_tool = suite.single_tool or t["name"]
        elif fam is not None:
            suite.family_tools[fam] = t["name"]
    # Families named differently from their endpoint: trust the details' mcpTool later.
    suite.intro_tool = suite.family_tools.get("read") if suite.family_tools.get("read") in capable else None
    suite.intro_tool = suite.intro_tool or (suite.single_tool if suite.single_tool in capable else capable[0])
    modes = []
    if suite.family_tools:
        modes.append("semantic")
    if suite.single_tool:
        modes.append("single")
    suite.report.modes = modes
    proto = suite.ops_env["data"].get("_protocol") if isinstance(suite.ops_env.get("data"), dict) else None
    if isinstance(proto, dict):
        if isinstance(proto.get("version"), str):
            suite.report.spec_version = proto["version"]
        suite.report.implementation = str(proto.get("adapter") or suite.report.implementation)
    # details for every listed operation
    for o in suite.ops:
        name = o.get("name")
        if not isinstance(name, str):
            continue
        ex = await suite.op("introspect", {"query": "operations", "name": name}, tool=suite.intro_tool)
        if ex.envelope is not None:
            suite.detail_envs[name] = ex.envelope
        d = (ex.data or {}).get("operation") if ex.ok and isinstance(ex.data, dict) else None
        if isinstance(d, dict):
            suite.details[name] = d
    named = {d.get("mcpTool") for d in suite.details.values()}
    suite.aql_tools += [t for t in all_cands if t not in suite.aql_tools and t["name"] in named]
    # custom tool names (e.g. `tasks_read`, `tasks_all`) that the name regex cannot classify:
    # a tool that introspection names for several endpoint families is the single tool
    exposed = {t["name"] for t in suite.aql_tools}
    by_tool: dict[str, set[str]] = {}
    for d in suite.details.values():
        tool = d.get("mcpTool")
        if isinstance(tool, str) and tool in exposed and not TOOL_RE.match(tool):
            by_tool.setdefault(tool, set()).add(str(d.get("endpoint")))
    for tool, eps in by_tool.items():
        if len(eps) > 1:
            suite.single_tool = suite.single_tool or tool
        elif tool != suite.single_tool:
            suite.family_tools.setdefault(next(iter(eps)), tool)
    if suite.single_tool is None:
        others = [n for n in capable if n not in suite.family_tools.values()]
        suite.single_tool = others[0] if others else None
    suite.report.modes = (["semantic"] if suite.family_tools else []) + (["single"] if suite.single_tool else [])
    ex = await suite.op("introspect", {"query": "types"}, tool=suite.intro_tool)
    suite.types_env = ex.envelope
    return True
