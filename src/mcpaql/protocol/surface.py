"""The tool surface, derived from the registry and the config: names, titles, descriptions,
annotations and input schemas of the MCP tools.

It is sans-IO data (no ``mcp`` import) because three consumers need it: the MCP server,
introspection (``mcpTool``, wrong-endpoint errors that name the right tool) and the token
report. Descriptions follow the MCPI §2.1 templates; names follow seed 003's
``{adapter}_mcpaql_{endpoint}`` with an optional ``MCP_AQL_TOOL_PREFIX``.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from dataclasses import dataclass
from typing import Any

from ..config import TOOL_NAME_RE, Config, ConfigError
from .categories import CRUDE_FAMILIES, Category
from .listing import BRACE_LEGEND, GROUPS_SHOWN, braces_pay, grouped_names, is_grouped, render_names
from .operations import OperationSpec
from .registry import Registry

SINGLE = None  # the family of the unified tool


@dataclass(frozen=True, slots=True)
class ToolDef:
    name: str
    title: str
    description: str
    input_schema: dict[str, Any]
    annotations: dict[str, Any]
    family: str | None
    operations: tuple[str, ...]


def snake(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def tool_name(config: Config, adapter: str, family: str | None) -> str:
    if family is None:
        base = config.single_pattern.format(adapter=snake(adapter))
    else:
        base = config.tool_pattern.format(adapter=snake(adapter), endpoint=family)
    return config.prefix + base


def _compact(obj: Any) -> str:
    # No spaces: tool descriptions are paid for in tokens by every conversation.
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


LIST_ALL = _compact({"operation": "introspect", "params": {"query": "operations"}})
# Past the listing threshold a full list is thousands of operations: point at a filtered one.
FIND = _compact({"operation": "introspect", "params": {"query": "operations", "search": "<words>"}})
DETAIL = _compact({"operation": "introspect", "params": {"query": "operations", "name": "<operation>"}})


def _names(ops: list[OperationSpec], grouped: bool, groups_shown: int = GROUPS_SHOWN, braces: bool = False) -> str:
    """The operation list of a description: every name (space separated, shared verbs in braces
    where they pay), or past the threshold the bounded grouped form (``mcpaql.protocol.listing``);
    ``introspect`` is always named."""
    if not grouped:
        return render_names([op.name for op in ops], braces)
    others = [op for op in ops if op.name != "introspect"]
    text = grouped_names(others, groups_shown)
    return text + ("; introspect" if len(others) < len(ops) else "")


def _placeholder(schema: dict[str, Any], name: str) -> Any:
    if isinstance(schema.get("enum"), list) and schema["enum"]:
        return schema["enum"][0]
    t = schema.get("type")
    samples: dict[str, Any] = {"integer": 1, "number": 1, "boolean": True, "array": [], "object": {}}
    return samples.get(t if isinstance(t, str) else "", f"<{name}>")


def _legend(braces: bool) -> str:
    """Said once in a description whose lists use braces, so a model reads them exactly."""
    return f" ({BRACE_LEGEND})" if braces else ""


def _example_line(op: OperationSpec) -> str:
    """The operation's first example, else a request built from its required parameters, so
    the quick start is always a call that passes validation once placeholders are filled."""
    if op.examples:
        return _compact(op.examples[0]["request"])
    req: dict[str, Any] = {"operation": op.name}
    required = {p.name: _placeholder(p.schema, p.name) for p in op.params if p.required}
    if required:
        req["params"] = required
    return _compact(req)


# MCP's ToolAnnotations defaults (schema 2025-06-18 and later) for the two hints MCPI §2.3 does not
# ask for: a hint equal to its default is left out, which means the same to every client.
MCP_HINT_DEFAULTS = {"idempotentHint": False, "openWorldHint": True}


def hint(annotations: dict[str, Any], key: str) -> Any:
    """A hint's effective value: as sent, else MCP's default."""
    return annotations.get(key, MCP_HINT_DEFAULTS.get(key))


def _annotations(title: str, ops: list[OperationSpec], open_world: bool, world_fixed: bool) -> dict[str, Any]:
    """Derived from the operations the tool actually hosts, conservatively: read-only and
    idempotent only if every hosted operation is; destructive if any is (by category, danger
    level or the wrapped upstream's own ``destructiveHint``); open-world if any hosted
    wrapped tool is (unless the configuration fixes it).

    ``readOnlyHint`` and ``destructiveHint`` are always sent (MCPI §2.3, REQ-MCP-009); the other
    two only when they differ from MCP's defaults (``MCP_HINT_DEFAULTS``): every tools/list pays
    for them (58 of GitHub-89's o200k tokens in semantic mode) and an absent hint means its default."""
    hints: dict[str, Any] = {
        "title": title,
        "readOnlyHint": all(op.category is Category.READ for op in ops),
        "destructiveHint": any(op.destructive for op in ops),
        "idempotentHint": all(op.idempotent for op in ops),
        "openWorldHint": open_world if world_fixed else any(op.open_world(open_world) for op in ops),
    }
    return {k: v for k, v in hints.items() if k not in MCP_HINT_DEFAULTS or v != MCP_HINT_DEFAULTS[k]}


def _input_schema(ops: list[OperationSpec], config: Config) -> dict[str, Any]:
    # The base schema of MCPI §3.1 / REQ-MCP-010; property descriptions are left out because the
    # tool description already says what to send, and every token here is paid per conversation.
    op_prop: dict[str, Any] = {"type": "string"}
    if config.enumerate_operations:
        op_prop["enum"] = [op.name for op in ops]
    return {
        "type": "object",
        "properties": {
            "operation": op_prop,
            "params": {"type": "object"},
        },
        "required": ["operation"],
    }


def _family_description(registry: Registry, family: str, ops: list[OperationSpec], introspect_tool: str, threshold: int) -> str:
    """MCPI §2.1.1's template, one line per element (blank lines and the separate safety note
    cost tokens in every conversation; the note is folded into the purpose sentence). Past
    ``threshold`` operations the list is grouped by element type and the discovery line points
    at a filtered listing instead of the whole one."""
    fam = registry.families[family]
    grouped = is_grouped(len(ops), threshold)
    # The template's [example_op] is free: show the authored example with the shortest call. An
    # operation without one would only get a call made of placeholders, which says less than its
    # detail (which a model asks for anyway before the call) and costs every conversation ~20
    # tokens per tool (87 of GitHub-89's 1,017): such a tool shows no example line.
    authored = [op for op in ops if op.examples and op.name != "introspect"]
    example_op = min(authored, key=lambda op: len(_example_line(op)), default=None)
    crude = family in CRUDE_FAMILIES and registry.profile == "crude"
    lines = [f"{fam.purpose} {fam.note}".strip()]
    if not crude:
        cats = []
        for op in ops:
            if op.category.value not in cats:
                cats.append(op.category.value)
        lines.append("Primary semantic categories: " + ", ".join(cats))
    if grouped:
        lines.append(f"Supported operations ({len(ops)}, by element type, verb_element): " + _names(ops, True))
    else:
        braces = braces_pay([[op.name for op in ops]])
        lines.append(f"Supported operations{_legend(braces)}: " + _names(ops, False, braces=braces))
    if example_op is not None:
        lines.append("Example: " + _example_line(example_op))
    if grouped:
        where = "" if any(op.name == "introspect" for op in ops) else f" on {introspect_tool}"
        lines.append(f"Find operations{where}: {FIND} (or category, endpoint, element_type, prefix); detail: {DETAIL}")
    elif any(op.name == "introspect" for op in ops):
        # The bootstrap (MCPI §2.1, REQ-MCP-001) as the cheapest correct path: every name is listed
        # above, so the call to show is one operation's detail, not the whole list again.
        lines.append("Parameters: " + DETAIL)
    else:
        # introspect is a READ operation: it must be sent to the tool that carries it, whose
        # description shows the whole call.
        lines.append(f"Parameters: introspect on {introspect_tool}")
    return "\n".join(lines)


def _single_description(registry: Registry, ops: list[OperationSpec], threshold: int) -> str:
    """MCPI §2.1.2's template; past ``threshold`` operations each category line is grouped by
    element type (a share of the grouped budget each) and the quick start finds, not lists."""
    grouped = is_grouped(len(ops), threshold)
    present = {op.category for op in ops}
    share = max(2, GROUPS_SHOWN // max(1, len(present)))
    # The template's routing sentence ("Operations are automatically routed ...") is left out: it
    # tells a model nothing it can act on and costs 16 tokens in every conversation.
    lines = [f"MCP-AQL {registry.display_name} adapter. All operations through unified entry point."]
    by_cat = [(cat, [op for op in ops if op.category is cat]) for cat in Category]
    by_cat = [(cat, members) for cat, members in by_cat if members]
    braces = not grouped and braces_pay([[op.name for op in members] for _, members in by_cat])
    cat_lines = [f"Supported operation categories{_legend(braces)}:"]
    for cat, members in by_cat:
        cat_lines.append(f"- {cat.value.title()}: {_names(members, grouped, share, braces)}")
    lines.append("\n".join(cat_lines))
    if grouped:
        lines.append(f"Quick start: {FIND} (or category, element_type, prefix); detail: {DETAIL}")
        lines.append(f"{len(ops)} operations, grouped by element type (verb_element); introspection finds the rest.")
    else:
        # The cheapest correct path (issue 14): names are listed above, so the quick start asks
        # for one operation's parameters rather than for the whole list again (the template's
        # closing "Use introspection to discover all ..." sentence pointed at the list: left out).
        lines.append("Quick start: " + DETAIL)
    return "\n\n".join(lines)


def server_instructions(tools: list[ToolDef], introspect_tool: str) -> str:
    """The MCP ``instructions``: the cheapest correct path (issue 14). Operation names are already
    in the tool descriptions, so a model calls one directly and asks introspection for that one
    operation's parameters, never for the whole list first."""
    where = "" if len(tools) == 1 else f" on {introspect_tool}"
    return f'Call operations by name; parameters: introspect {{query:"operations",name}}{where}.'


log = logging.getLogger("mcpaql.surface")
PREFIX_ADVISED_MAX = 19  # MCPI §6.4 (REQ-MCP-023): a prefix SHOULD be short, under 20 characters


@functools.cache
def _warn_long_prefix(prefix: str) -> None:
    """Once per prefix: every tool name (and so every description that names a tool) pays for it."""
    log.warning(
        "tool prefix '%s' is %d characters; MCPI §6.4 advises a short prefix (under 20) naming the domain", prefix, len(prefix)
    )


def build_surface(registry: Registry, config: Config, ops: list[OperationSpec]) -> list[ToolDef]:
    """The tools to register, in a stable order. Families with no operations get no tool."""
    if len(config.prefix) > PREFIX_ADVISED_MAX:
        _warn_long_prefix(config.prefix)
    open_world = registry.open_world if config.open_world is None else config.open_world
    world_fixed = config.open_world is not None
    display = registry.display_name or registry.adapter
    tools: list[ToolDef] = []
    introspect_tool = tool_name(config, registry.adapter, registry.default_introspect_family())
    if config.mode in ("semantic", "all"):
        for family in registry.families:
            fops = [op for op in ops if op.family == family]
            if not fops:
                continue
            title = f"{display} — {registry.families[family].title}"
            tools.append(
                ToolDef(
                    name=tool_name(config, registry.adapter, family),
                    title=title,
                    description=_family_description(registry, family, fops, introspect_tool, config.listing_threshold),
                    input_schema=_input_schema(fops, config),
                    annotations=_annotations(title, fops, open_world, world_fixed),
                    family=family,
                    operations=tuple(op.name for op in fops),
                )
            )
    if config.mode in ("single", "all"):
        title = f"{display} — All operations"
        tools.append(
            ToolDef(
                name=tool_name(config, registry.adapter, None),
                title=title,
                description=_single_description(registry, ops, config.listing_threshold),
                input_schema=_input_schema(ops, config),
                annotations=_annotations(title, ops, open_world, world_fixed),
                family=None,
                operations=tuple(op.name for op in ops),
            )
        )
    seen: set[str] = set()
    for t in tools:
        if not TOOL_NAME_RE.match(t.name):
            raise ConfigError(
                f"tool name '{t.name}' is invalid: names must be 1-64 characters of [a-z0-9_] "
                "(shorten the adapter name, the prefix or the tool pattern)"
            )
        if t.name in seen:
            raise ConfigError(f"tool name '{t.name}' is used twice; check the tool patterns")
        seen.add(t.name)
    return tools
