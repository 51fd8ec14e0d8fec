"""The live conformance suite: drive an MCP-AQL server over MCP using only what its tool
list and its introspection say, and grade it against conformance-testing.md §3, the MCP
integration rules (MCPI §7, seed 003) and the project's decisions (CHECKLIST Part F).

Safety contract: the suite never changes data it did not create. Probes that are meant to be
rejected (unknown/missing/wrong-typed parameters, wrong endpoints) target nonexistent ids or
carry too little to act on; tests that are meant to mutate create their own record first and
delete it afterwards. ``read_only=True`` skips every test meant to mutate.

Wrapped servers (MCP servers or APIs behind an MCP-AQL wrapper) add two rules:

* Probes that could act (valid values, no nonexistent id to make them inert) go only to
  operations the suite can clean up after: an element type with create, read *and* delete
  operations. Every other CREATE/UPDATE/DELETE/EXECUTE operation gets only probes that cannot
  act: nothing, nulls and an unknown name, or a nonexistent id with a parameter missing.
* No call carries a non-loopback address, and no call meant to execute gives an open-world
  tool an address at all, unless ``allow_network`` (see :mod:`.network`). A probe the wrapped
  upstream rejected for its own reasons is reported as such, neutral (:attr:`Exchange.upstream_rejected`).
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import json
import re
import uuid
from collections.abc import Iterable
from typing import Any

import anyio

from . import network
from .evidence import without_error_details
from .model import (
    CONSTRAINTS,
    ERRORS,
    INTROSPECTION,
    LEVEL2,
    MCP,
    PARAMETERS,
    ROUND_TRIP,
    ROUTING,
    SEMANTIC,
    Category,
    CheckResult,
    Exchange,
    Report,
    Status,
)
from .schemas import CODE_RE, VERSION_RE, Validators
from .values import (
    CROSS_CUTTING,
    MISSING_ID,
    TAG,
    UNKNOWN_PARAM,
    CannotBuild,
    build_from_type,
    build_value,
    is_id_like,
    wrong_value,
)

PASS, FAIL, WARN, SKIP = Status.PASS, Status.FAIL, Status.WARN, Status.SKIP

TOOL_RE = re.compile(r"^(?:(?P<prefix>[a-z0-9_]*?)_)?(?P<brand>mcp_aql|mcpaql)(?:_(?P<family>[a-z0-9_]+))?$")
TOOL_NAME_RE = re.compile(r"^[a-z0-9_]{1,64}$")
SNAKE_RE = re.compile(r"^[a-z][a-z0-9_]*$")

# MCPI §4.1.2 + §4.1.3 reference function (CHECKLIST Part F #18): these are isError:false.
RECOVERABLE = frozenset(
    {
        "NOT_FOUND_RESOURCE",
        "NOT_FOUND_OPERATION",
        "VALIDATION_MISSING_PARAM",
        "VALIDATION_INVALID_TYPE",
        "PERMISSION_DENIED",
        "RATE_LIMIT_EXCEEDED",
        "CONFIRMATION_REQUIRED",
        "VALIDATION_INVALID_VALUE",
        "RATE_LIMIT_QUOTA_PAUSE",
    }
)
# Registry codes (error-codes.md §4–5, CHECKLIST B.1) that the reference function makes isError:true.
UNRECOVERABLE = frozenset(
    {
        "VALIDATION_UNKNOWN_PARAM",
        "VALIDATION_INVALID_ENCODING",
        "VALIDATION_PAYLOAD_TOO_LARGE",
        "INTERNAL_ERROR",
        "PERMISSION_TRUST_LEVEL_INSUFFICIENT",
        "PERMISSION_DANGER_LEVEL_DENIED",
        "RATE_LIMIT_QUOTA_EXHAUSTED",
        "TOKEN_INVALID",
        "TOKEN_EXPIRED",
        "TOKEN_ALREADY_USED",
        "TOKEN_SCOPE_MISMATCH",
    }
)
CODE_PREFIXES = (
    "VALIDATION_",
    "NOT_FOUND_",
    "PERMISSION_",
    "CONFLICT_",
    "RATE_LIMIT_",
    "TOKEN_",
    "INTERNAL_",
    "CONFIRMATION_",
    "BATCH_",
    "INTROSPECTION_",
    "INVALID_QUERY",
)

# Implementation leakage (CONF §3.3, REQ-RSP-013): language artifacts, stack traces, internal paths.
LEAK_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Python traceback", re.compile(r"Traceback \(most recent call last\)")),
    (
        "source file reference",
        re.compile(r"File \"[^\"]+\", line \d+|\.(?:py|js|ts|mjs|cjs|rb|java|go|rs)[:\"(, ]+(?:line )?\d+"),
    ),
    (
        "exception class name",
        re.compile(
            r"\b(?:TypeError|ReferenceError|SyntaxError|KeyError|ValueError|AttributeError|IndexError|RuntimeError|NameError|"
            r"AssertionError|ZeroDivisionError|NullPointerException|IllegalArgumentException|ValidationError|"
            r"[A-Z][A-Za-z]+(?:Error|Exception)(?=:))\b"
        ),
    ),
    ("JavaScript object dump", re.compile(r"#<\w+>|\[object Object\]")),
    ("stack frame", re.compile(r"\bat (?:Function|Module|Object|async|new)\b|\bat \S+ \(\S+:\d+:\d+\)")),
    ("internal path", re.compile(r"/src/|/node_modules/|site-packages|dist-packages|/lib/python\d")),
    ("object repr", re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>|\bobject at 0x[0-9a-fA-F]+")),
)
# What the spec's fixture runner flags (CHECKLIST Part F #23): its bare /at\s+\S+/i also hits ordinary words.
RUNNER_LEAK = re.compile(r"typeerror|referenceerror|syntaxerror|at\s+\S+|/src/|/node_modules/|\.ts:\d+|\.js:\d+", re.I)

RESOURCE_VERBS = {
    "CREATE": ("create_", "add_", "new_", "insert_"),
    "READ": ("get_", "read_", "fetch_", "show_", "describe_"),
    "UPDATE": ("update_", "edit_", "modify_", "patch_", "set_"),
    "DELETE": ("delete_", "remove_", "destroy_"),
}
READ_ONLY_FIELD_CANDIDATES = ("created_at", "createdAt", "created", "id")
CALL_TIMEOUT = 30.0


def _resource(op: str, category: str) -> str | None:
    for prefix in RESOURCE_VERBS.get(category, ()):
        if op.startswith(prefix) and len(op) > len(prefix):
            return op[len(prefix) :]
    return None


def _singular(s: str) -> str:
    return s[:-1] if s.endswith("s") and not s.endswith("ss") else s


def _records(data: Any) -> list[dict[str, Any]]:
    """The records inside a READ result: a list, ``items``/``results``-like lists, or one object."""
    return _records_at(data)[0]


def _records_at(data: Any) -> tuple[list[dict[str, Any]], str | None]:
    """:func:`_records` plus the key of ``data`` they were found under (None: the data itself).

    Text that is a JSON object or array (what many MCP tools return, and wrapped ones pass on
    as-is) is read as that JSON."""
    if isinstance(data, str) and data.lstrip()[:1] in ("{", "["):
        try:
            data = json.loads(data)
        except ValueError:
            return [], None
    if isinstance(data, list):
        return [d for d in data if isinstance(d, dict)], None
    if isinstance(data, dict):
        for key in ("items", "results", "records", "data", "nodes", "edges"):
            v = data.get(key)
            if isinstance(v, list):
                return [d for d in v if isinstance(d, dict)], key
        lists = [(k, v) for k, v in data.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        if len(lists) == 1:
            return lists[0][1], lists[0][0]
        return [data], None
    return [], None


def _record(data: Any, hint: str | None = None) -> dict[str, Any] | None:
    """The single record of a get/create result (possibly wrapped as ``{task: {...}}``)."""
    if not isinstance(data, dict):
        return None
    if hint and isinstance(data.get(hint), dict):
        return data[hint]
    if len(data) == 1:
        only = next(iter(data.values()))
        if isinstance(only, dict):
            return only
    return data


def _dot(path: Iterable[str]) -> str:
    return ".".join(path)


def _mentions(message: str, name: str) -> bool:
    return name in message


class Suite:
    def __init__(
        self,
        conn: Any,
        report: Report,
        *,
        level: int,
        read_only: bool,
        validators: Validators,
        allow_network: bool = False,
    ) -> None:
        self.conn = conn
        self.allow_network = allow_network
        self.held_back: list[str] = []  # calls not made because they would reach the network
        self._cleanable: set[str] | None = None
        self.report = report
        self.level = level
        self.read_only = read_only
        self.v = validators
        self.exchanges: list[Exchange] = []
        self.tools: list[dict[str, Any]] = []
        self.aql_tools: list[dict[str, Any]] = []
        self.family_tools: dict[str, str] = {}  # endpoint family -> tool name
        self.single_tool: str | None = None
        self.intro_tool: str | None = None
        self.ops_env: dict[str, Any] | None = None
        self.types_env: dict[str, Any] | None = None
        self.ops: list[dict[str, Any]] = []
        self.details: dict[str, dict[str, Any]] = {}
        self.detail_envs: dict[str, dict[str, Any]] = {}
        self.type_details: dict[str, dict[str, Any] | None] = {}
        self.accepted: dict[str, set[str]] = {}
        self.bundle: dict[str, Any] = {
            "parameter_tests": {"missing_required": [], "unknown_parameter": [], "optional_defaults": []},
            "error_tests": [],
            "round_trip_tests": [],
            "update_preservation_tests": [],
            "constraint_tests": [],
            "semantic_tests": [],
        }
        self.created: list[tuple[str, dict[str, Any]]] = []  # (delete op, params) still to clean up
        self.fixture: dict[str, Any] | None = None  # a record this run created: {res, id_param, id, record, ...}
        self.run_id = uuid.uuid4().hex[:8]
        self.live_ids: dict[str, Any] = {}  # id param name -> id of a record this run created and still holds

    # ---- plumbing ------------------------------------------------------------------------

    def add(
        self,
        cid: str,
        name: str,
        cat: Category,
        status: Status,
        checklist: Iterable[str],
        message: str,
        evidence: Iterable[Exchange] = (),
        upstream_rejected: Iterable[str] = (),
    ) -> None:
        self.report.results.append(
            CheckResult(cid, name, cat, status, tuple(checklist), message, list(evidence), list(upstream_rejected))
        )

    async def call(self, tool: str, arguments: Any) -> Exchange:
        ex = Exchange(tool, copy.deepcopy(arguments))
        remote = [] if self.allow_network else network.remote_urls(arguments)
        if remote:  # the last line of the network promise: such a call is never sent
            ex.kind, ex.rpc_message = "held_back", f"would reach '{remote[0]}' (not loopback; --allow-network)"
            self.held_back.append(f"{_op_of(ex)}: {ex.rpc_message}")
            return ex
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                body, is_error, _raw = await self.conn.call_tool(tool, arguments)
        except TimeoutError:
            ex.kind, ex.rpc_message = "transport_error", f"no answer within {CALL_TIMEOUT:.0f}s"
        except Exception as e:  # JSON-RPC errors arrive as the SDK's MCPError (code + error.message)
            code = getattr(e, "code", None)
            err = getattr(e, "error", None)
            if isinstance(code, int):
                ex.kind, ex.rpc_code = "jsonrpc_error", code
                ex.rpc_message = getattr(err, "message", None) or str(e)
            else:
                ex.kind, ex.rpc_message = "transport_error", f"{type(e).__name__}: {e}"
        else:
            ex.is_error = is_error
            if isinstance(body, dict):
                ex.envelope = body
            else:
                ex.text = body if isinstance(body, str) else json.dumps(body)
        self.exchanges.append(ex)
        return ex

    def tool_for(self, op: str) -> str | None:
        d = self.details.get(op)
        info = next((o for o in self.ops if o.get("name") == op), None)
        family = (d or info or {}).get("endpoint")
        if family in self.family_tools:
            return self.family_tools[family]
        if d and d.get("mcpTool") in {t["name"] for t in self.aql_tools}:
            return d["mcpTool"]
        return self.single_tool or self.intro_tool

    async def op(self, name: str, params: dict[str, Any] | None = None, *, tool: str | None = None) -> Exchange:
        args: dict[str, Any] = {"operation": name}
        if params is not None:
            args["params"] = params
        return await self.call(tool or self.tool_for(name) or "", args)

    def category(self, op: str) -> str:
        d = self.details.get(op) or next((o for o in self.ops if o.get("name") == op), {})
        return str(d.get("semantic_category", "")).upper()

    def params_of(self, op: str) -> list[dict[str, Any]]:
        d = self.details.get(op) or {}
        ps = d.get("parameters")
        return [p for p in ps if isinstance(p, dict) and isinstance(p.get("name"), str)] if isinstance(ps, list) else []

    def open_world(self, op: str) -> bool:
        """The tool serving ``op`` may reach the outside world (``openWorldHint``; true when absent, as in MCP)."""
        tool = next((t for t in self.tools if t.get("name") == self.tool_for(op)), None)
        ann = (tool or {}).get("annotations")
        return not isinstance(ann, dict) or ann.get("openWorldHint", True) is not False

    def network_reason(self, op: str, params: dict[str, Any]) -> str | None:
        """Why a call of ``op`` meant to *execute* must not be made without ``allow_network``:
        its arguments, documented defaults included (the server applies them), name a
        non-loopback address, or the operation's tool is open-world and is given an address."""
        if self.allow_network:
            return None
        pinfo = {p["name"]: p for p in self.params_of(op)}
        effective = {**{n: p["default"] for n, p in pinfo.items() if "default" in p and n not in params}, **params}
        for name, value in effective.items():
            if network.is_remote_value(value, pinfo.get(name)):
                return f"{op}: '{name}' would reach a non-loopback address"
        if self.open_world(op):
            for name, value in effective.items():
                p = pinfo.get(name)
                if value not in (None, "", [], {}) and (network.urls_in(value) or (p and network.is_address_param(p))):
                    return f"{op}: an open-world tool would be given the address in '{name}'"
        return None

    def hold(self, reason: str) -> None:
        if reason not in self.held_back:
            self.held_back.append(reason)

    async def type_detail(self, name: str) -> dict[str, Any] | None:
        if name not in self.type_details:
            ex = await self.op("introspect", {"query": "types", "name": name}, tool=self.intro_tool)
            t = (ex.data or {}).get("type") if ex.ok and isinstance(ex.data, dict) else None
            self.type_details[name] = t if isinstance(t, dict) else None
        return self.type_details[name]

    def lookup(self, name: str) -> dict[str, Any] | None:
        return self.type_details.get(name)

    async def prefetch_types(self, params: list[dict[str, Any]]) -> None:
        """Load the type details a value builder may need (named types, recursively)."""
        todo = [p for p in params]
        seen: set[str] = set()
        while todo:
            p = todo.pop()
            for t in re.split(r"[|\s]+", str(p.get("type", ""))):
                t = t.strip().removesuffix("[]")
                if (
                    not t
                    or t.lower()
                    in (
                        "string",
                        "integer",
                        "number",
                        "boolean",
                        "object",
                        "array",
                        "any",
                        "null",
                        "int",
                        "float",
                        "bool",
                        "str",
                        "json",
                    )
                    or t in seen
                ):
                    continue
                seen.add(t)
                d = await self.type_detail(t)
                if d and d.get("kind") == "object":
                    todo.extend(f for f in d.get("fields") or [] if isinstance(f, dict))
                elif d and d.get("kind") == "union":
                    for m in d.get("members") or []:
                        todo.append({"type": m})
            if isinstance(p.get("items"), dict):
                todo.append(p["items"])

    def example_params(self, op: str) -> dict[str, Any] | None:
        for e in (self.details.get(op) or {}).get("examples") or []:
            req = e.get("request") if isinstance(e, dict) else None
            if isinstance(req, dict) and req.get("operation") == op and isinstance(req.get("params", {}), dict):
                params = copy.deepcopy(req.get("params", {}))
                return params if self.allow_network else _loopback(params)
        return None

    async def build_params(
        self,
        op: str,
        *,
        optional: bool = False,
        ids: dict[str, Any] | None = None,
        seed: str | None = None,
        probe: bool = False,
    ) -> dict[str, Any]:
        """Valid params from introspection only: the op's example, else the documented types.
        ``ids`` overrides id-like params; other id-like params get a nonexistent id."""
        params = self.params_of(op)
        await self.prefetch_types(params)
        example = self.example_params(op)
        seed = seed or f"{TAG}-{self.run_id}"
        out = example if example is not None else {}
        for p in params:
            name = p["name"]
            if name in out or not (p.get("required") or (optional and not is_id_like(name))):
                continue
            try:
                out[name] = build_value(
                    p, self.lookup, seed=seed, optional=not p.get("required"), allow_network=self.allow_network
                )
            except CannotBuild:
                if p.get("required"):
                    raise
        if not self.allow_network:  # a default naming a remote address would be applied by the server: override it
            for p in params:
                if p["name"] not in out and "default" in p and network.is_remote_value(p["default"], p):
                    with contextlib.suppress(CannotBuild):
                        out[p["name"]] = build_value(
                            {k: v for k, v in p.items() if k != "default"} | {"required": True}, self.lookup, seed=seed
                        )
        if optional:  # object params (e.g. `input`) get their documented optional fields too
            for p in params:
                d = self.lookup(str(p.get("type")))
                if isinstance(out.get(p["name"]), dict) and d and d.get("kind") == "object":
                    try:
                        full = build_from_type(d, self.lookup, seed=seed, with_optional=True, allow_network=self.allow_network)
                    except CannotBuild:
                        continue
                    out[p["name"]] = {**full, **out[p["name"]]}
        mutating = self.category(op) != "READ"
        for p in params:
            name = p["name"]
            if is_id_like(name) and p.get("required"):
                if ids and name in ids:
                    out[name] = ids[name]
                elif self.category(op) == "CREATE" and name in self.live_ids and not probe:
                    out[name] = self.live_ids[name]  # a parent record this run created
                elif mutating or name not in out:
                    # never aim a mutating probe at a record this run did not create
                    many = name.endswith("_ids") or str(p.get("type", "")).strip().endswith("[]") or p.get("type") == "array"
                    out[name] = [MISSING_ID] if many else MISSING_ID
        return out

    # ---- run -------------------------------------------------------------------------------

    async def run(self) -> None:
        try:
            if not await self.discover():
                return
            await self.check_mcp_surface()
            await self.check_introspection()
            await self.check_routing()
            await self.check_parameters()
            await self.check_round_trip()
            await self.check_level2()
            await self.jsonrpc_probes()
            self.check_errors()
            self.check_mcp_results()
            self.check_claim()
            self.add(
                "SE-1",
                "Semantic (LLM) discoverability evaluation",
                SEMANTIC,
                SKIP,
                ["REQ-CONF-015"],
                "Tier 2 semantic evaluation needs an LLM episode; this live suite runs Tier 1 (structural) checks only.",
            )
        finally:
            await self.cleanup()
            self.finish_bundle()

    # ---- discovery -----------------------------------------------------------------------------

    async def discover(self) -> bool:
        try:
            with anyio.fail_after(CALL_TIMEOUT):
                self.tools = await self.conn.list_tools_raw()
        except Exception as e:
            self.report.fatal = f"tools/list failed: {type(e).__name__}: {e}"
            return False
        self.report.tools = [str(t.get("name")) for t in self.tools]
        cands = [t for t in self.tools if TOOL_RE.match(str(t.get("name", "")))]
        cands += [
            t for t in self.tools if t not in cands and "operation" in ((t.get("inputSchema") or {}).get("properties") or {})
        ]
        capable: list[str] = []
        for t in cands:
            ex = await self.call(t["name"], {"operation": "introspect", "params": {"query": "operations"}})
            if ex.ok and isinstance(ex.data, dict) and isinstance(ex.data.get("operations"), list):
                capable.append(t["name"])
                if self.ops_env is None:
                    self.ops_env = ex.envelope
        if not capable:
            self.report.fatal = (
                'no MCP-AQL tool answered {"operation": "introspect", "params": {"query": "operations"}} '
                f"(tools seen: {', '.join(self.report.tools) or 'none'})"
            )
            self.add(
                "IF-1",
                "Operations introspection is implemented",
                INTROSPECTION,
                FAIL,
                ["REQ-INTRO-001", "REQ-INTRO-004"],
                self.report.fatal,
                self.exchanges[-3:],
            )
            return False
        assert self.ops_env is not None
        self.ops = [o for o in self.ops_env["data"]["operations"] if isinstance(o, dict)]
        all_cands = cands
        # MCP-AQL tools: named like one, or answering introspect (custom names); tools named by an
        # operation's mcpTool are added once the details are known
        cands = [t for t in cands if TOOL_RE.match(str(t.get("name", ""))) or t["name"] in capable]
        self.aql_tools = cands
        for t in cands:
            m = TOOL_RE.match(t["name"])
            fam = m.group("family") if m else None
            if m and fam is None:
                self.single_tool = self.single_tool or t["name"]
            elif fam is not None:
                self.family_tools[fam] = t["name"]
        # Families named differently from their endpoint: trust the details' mcpTool later.
        self.intro_tool = self.family_tools.get("read") if self.family_tools.get("read") in capable else None
        self.intro_tool = self.intro_tool or (self.single_tool if self.single_tool in capable else capable[0])
        modes = []
        if self.family_tools:
            modes.append("semantic")
        if self.single_tool:
            modes.append("single")
        self.report.modes = modes
        proto = self.ops_env["data"].get("_protocol") if isinstance(self.ops_env.get("data"), dict) else None
        if isinstance(proto, dict):
            if isinstance(proto.get("version"), str):
                self.report.spec_version = proto["version"]
            self.report.implementation = str(proto.get("adapter") or self.report.implementation)
        # details for every listed operation
        for o in self.ops:
            name = o.get("name")
            if not isinstance(name, str):
                continue
            ex = await self.op("introspect", {"query": "operations", "name": name}, tool=self.intro_tool)
            if ex.envelope is not None:
                self.detail_envs[name] = ex.envelope
            d = (ex.data or {}).get("operation") if ex.ok and isinstance(ex.data, dict) else None
            if isinstance(d, dict):
                self.details[name] = d
        named = {d.get("mcpTool") for d in self.details.values()}
        self.aql_tools += [t for t in all_cands if t not in self.aql_tools and t["name"] in named]
        # custom tool names (e.g. `tasks_read`, `tasks_all`) that the name regex cannot classify:
        # a tool that introspection names for several endpoint families is the single tool
        exposed = {t["name"] for t in self.aql_tools}
        by_tool: dict[str, set[str]] = {}
        for d in self.details.values():
            tool = d.get("mcpTool")
            if isinstance(tool, str) and tool in exposed and not TOOL_RE.match(tool):
                by_tool.setdefault(tool, set()).add(str(d.get("endpoint")))
        for tool, eps in by_tool.items():
            if len(eps) > 1:
                self.single_tool = self.single_tool or tool
            elif tool != self.single_tool:
                self.family_tools.setdefault(next(iter(eps)), tool)
        if self.single_tool is None:
            others = [n for n in capable if n not in self.family_tools.values()]
            self.single_tool = others[0] if others else None
        self.report.modes = (["semantic"] if self.family_tools else []) + (["single"] if self.single_tool else [])
        ex = await self.op("introspect", {"query": "types"}, tool=self.intro_tool)
        self.types_env = ex.envelope
        return True

    # ---- MCP surface -------------------------------------------------------------------------

    async def check_mcp_surface(self) -> None:
        bad = [t.get("name") for t in self.tools if not TOOL_NAME_RE.match(str(t.get("name", "")))]
        names = [t.get("name") for t in self.tools]
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
            self.add(
                "MCP-1",
                "Tool names are [a-z0-9_], at most 64 characters, unique",
                MCP,
                FAIL,
                ["REQ-MCP-008", "REQ-MCP-022", "seed 003"],
                msg,
            )
        else:
            self.add(
                "MCP-1",
                "Tool names are [a-z0-9_], at most 64 characters, unique",
                MCP,
                PASS,
                ["REQ-MCP-008", "REQ-MCP-022", "seed 003"],
                f"{len(names)} tool(s) named correctly",
            )

        problems = []
        for t in self.aql_tools:
            s = t.get("inputSchema") or {}
            props = s.get("properties") or {}
            opp, pp = props.get("operation") or {}, props.get("params") or {}
            if s.get("type") != "object" or opp.get("type") != "string" or "operation" not in (s.get("required") or []):
                problems.append(f"{t['name']}: needs type object, properties.operation string, required [operation]")
            elif pp.get("type") != "object" or pp.get("additionalProperties") is False:
                problems.append(f"{t['name']}: params must be an open object")
        self.add(
            "MCP-2",
            "Input schemas follow the base {operation, params} shape",
            MCP,
            FAIL if problems else PASS,
            ["REQ-MCP-010"],
            "; ".join(problems) or "all MCP-AQL tools use the base input schema",
        )

        missing = [t["name"] for t in self.aql_tools if "introspect" not in str(t.get("description") or "")]
        self.add(
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
        for t in self.aql_tools:
            ann = t.get("annotations") or {}
            ops = self.ops_on_tool(t["name"])
            perms = [(self.details.get(o) or {}).get("permissions") or {} for o in ops]
            cats = {self.category(o) for o in ops}
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
        self.add(
            "MCP-4",
            "Tool annotations present and conservative for their operations",
            MCP,
            st,
            ["REQ-MCP-009", "seed 003"],
            "; ".join(fails + warns) or "annotations match the operations on each tool",
        )

    def ops_on_tool(self, tool: str) -> list[str]:
        if tool == self.single_tool or (not self.family_tools and tool == self.intro_tool):
            return [o["name"] for o in self.ops if isinstance(o.get("name"), str)]
        fam = next((f for f, t in self.family_tools.items() if t == tool), None)
        return [o["name"] for o in self.ops if o.get("endpoint") == fam and isinstance(o.get("name"), str)]

    # ---- introspection ------------------------------------------------------------------------

    async def check_introspection(self) -> None:
        v = self.v
        env = self.ops_env or {}
        probs = v.problems("OperationsListData", env.get("data"))
        self.add(
            "IF-1",
            "Operations list is implemented and schema-valid",
            INTROSPECTION,
            FAIL if probs else PASS,
            ["REQ-INTRO-005", "REQ-INTRO-006", "REQ-INTRO-007"],
            "; ".join(probs) or f"{len(self.ops)} operations listed",
            [self.find_exchange("introspect", {"query": "operations"})],
        )
        tenv = self.types_env or {}
        tprobs = ["types query failed"] if tenv.get("success") is not True else v.problems("TypesListData", tenv.get("data"))
        types = [t for t in ((tenv.get("data") or {}).get("types") or []) if isinstance(t, dict)] if tprobs == [] else []
        self.add(
            "IF-2",
            "Types list is implemented and schema-valid",
            INTROSPECTION,
            FAIL if tprobs else PASS,
            ["REQ-INTRO-017", "REQ-INTRO-019"],
            "; ".join(tprobs) or f"{len(types)} types listed",
            [self.find_exchange("introspect", {"query": "types"})],
        )

        bad, missing = [], [o.get("name") for o in self.ops if o.get("name") not in self.details]
        for name, d in self.details.items():
            p = v.problems("OperationDetails", d)
            if p:
                bad.append(f"{name}: {'; '.join(p[:3])}")
        env_bad = []
        for name, e in self.detail_envs.items():
            p = v.problems("introspection_response", e)
            if p:
                env_bad.append(f"{name}: {'; '.join(p[:2])}")
        msg = []
        if missing:
            msg.append(f"no detail for: {', '.join(map(str, missing))}")
        msg += bad
        if env_bad and not bad:
            msg.append("envelope: " + " | ".join(env_bad))
        self.add(
            "IF-3",
            "Operation details are complete and schema-valid (no extra keys)",
            INTROSPECTION,
            FAIL if msg else PASS,
            ["REQ-INTRO-013", "REQ-INTRO-014", "REQ-INTRO-015", "REQ-INTRO-020"],
            " | ".join(msg) or f"{len(self.details)} operation details validate",
            [self.find_exchange("introspect", {"query": "operations", "name": n.split(":")[0]}) for n in (bad or env_bad)[:3]],
        )

        proto = (env.get("data") or {}).get("_protocol") if isinstance(env.get("data"), dict) else None
        if not isinstance(proto, dict) or not isinstance(proto.get("version"), str) or not VERSION_RE.match(proto["version"]):
            self.add(
                "IF-6",
                "_protocol metadata with a semver version",
                INTROSPECTION,
                FAIL,
                ["REQ-INTRO-008", "REQ-INTRO-009"],
                "the operations list carries no _protocol.version (INTRO §8.1(11); CHECKLIST Part F #21)",
            )
        else:
            w = [
                k
                for k, ok in (
                    ("conformance", proto.get("conformance") in ("level-1", "level-2")),
                    ("mode", proto.get("mode") in ("semantic", "single", "all")),
                )
                if not ok
            ]
            self.add(
                "IF-6",
                "_protocol metadata with a semver version",
                INTROSPECTION,
                WARN if w else PASS,
                ["REQ-INTRO-008", "REQ-INTRO-009", "REQ-INTRO-010"],
                f"_protocol.version {proto['version']}" + (f"; missing/invalid SHOULD keys: {', '.join(w)}" if w else ""),
            )

        nx_op = await self.op(
            "introspect", {"query": "operations", "name": "mcpaql_conformance_no_such_operation"}, tool=self.intro_tool
        )
        nx_ty = await self.op("introspect", {"query": "types", "name": "McpaqlConformanceNoSuchType"}, tool=self.intro_tool)
        ok = (nx_op.ok and nx_op.data == {"operation": None}) and (nx_ty.ok and nx_ty.data == {"type": None})
        self.add(
            "IF-7",
            "Unknown operation/type names return null, not an error",
            INTROSPECTION,
            PASS if ok else FAIL,
            ["REQ-INTRO-016"],
            "data.operation / data.type are null" if ok else "expected {success:true, data:{operation:null}}",
            [] if ok else [nx_op, nx_ty],
        )

        type_bad = []
        for t in types[:60]:
            name = t.get("name")
            if not isinstance(name, str):
                continue
            d = await self.type_detail(name)
            if d is None:
                type_bad.append(f"{name}: listed but its detail is null")
                continue
            p = v.problems("TypeDetails", d)
            if p:
                type_bad.append(f"{name}: {'; '.join(p[:2])}")
            elif d.get("name") != name or d.get("kind") != t.get("kind"):
                type_bad.append(f"{name}: detail name/kind differ from the list")
        self.add(
            "IF-8",
            "Type details validate and agree with the types list",
            INTROSPECTION,
            FAIL if type_bad else (PASS if types else SKIP),
            ["REQ-INTRO-018", "REQ-INTRO-023"],
            " | ".join(type_bad[:6]) or (f"{len(types)} type details validate" if types else "no types listed"),
        )

        intro = next((o for o in self.ops if o.get("name") == "introspect"), None)
        if intro is None:
            self.add(
                "IF-9",
                "introspect is listed as a READ operation",
                INTROSPECTION,
                WARN,
                ["REQ-INTRO-002", "REQ-INTRO-025"],
                "introspect answers but does not appear in its own operations list (INTRO §8.2(7) SHOULD)",
            )
        else:
            ok = intro.get("semantic_category") == "READ"
            self.add(
                "IF-9",
                "introspect is listed as a READ operation",
                INTROSPECTION,
                PASS if ok else FAIL,
                ["REQ-INTRO-002", "REQ-INTRO-025"],
                f"introspect is {intro.get('semantic_category')} on '{intro.get('endpoint')}'",
            )

        tool_names = {t["name"] for t in self.aql_tools}
        incons = []
        for o in self.ops:
            d = self.details.get(str(o.get("name")))
            if not d:
                continue
            for k in ("semantic_category", "endpoint"):
                if d.get(k) != o.get(k):
                    incons.append(f"{o['name']}: {k} is '{o.get(k)}' in the list but '{d.get(k)}' in the detail")
            if d.get("mcpTool") not in tool_names:
                incons.append(f"{o['name']}: mcpTool '{d.get('mcpTool')}' is not an exposed tool")
            cat = str(d.get("semantic_category"))
            perms = d.get("permissions") or {}
            # A CREATE is additive by default, but one that overwrites (the upstream says destructiveHint,
            # or its danger level is destructive) may honestly say destructive: both agree with CREATE.
            want = {"READ": {(True, False)}, "CREATE": {(False, False), (False, True)}}.get(cat, {(False, True)})
            if (perms.get("readOnly"), perms.get("destructive")) not in want:
                incons.append(f"{o['name']}: permissions {perms} do not match category {cat}")
        self.add(
            "IF-10",
            "List, detail, mcpTool and permissions agree",
            INTROSPECTION,
            FAIL if incons else PASS,
            ["REQ-MODE-008", "REQ-MODE-027", "REQ-MCP-007", "REQ-INTRO-023"],
            " | ".join(incons[:6]) or "every operation's category, endpoint, tool and permissions are consistent",
        )

        if self.v.available:
            envs = [e for e in (self.ops_env, self.types_env) if e] + list(self.detail_envs.values())
            bad_envs = [p for e in envs for p in self.v.problems("introspection_response", e)]
            self.add(
                "IF-0",
                "Introspection envelopes validate against introspection-response.schema.json",
                INTROSPECTION,
                FAIL if bad_envs else PASS,
                ["REQ-RSP-011", "REQ-INTRO-020"],
                "; ".join(bad_envs[:4]) or f"{len(envs)} introspection responses validate (schemas from {self.v.directory})",
            )
        else:
            self.add(
                "IF-0",
                "Introspection envelopes validate against introspection-response.schema.json",
                INTROSPECTION,
                SKIP,
                ["REQ-RSP-011"],
                "spec schemas not found (set MCPAQL_SPEC_SCHEMAS); structural models from CHECKLIST Part C were used instead",
            )

    def find_exchange(self, op: str, params: dict[str, Any]) -> Exchange:
        for ex in self.exchanges:
            a = ex.arguments if isinstance(ex.arguments, dict) else {}
            if a.get("operation") == op and a.get("params") == params:
                return ex
        return Exchange("", {"operation": op, "params": params}, kind="transport_error", rpc_message="not sent")

    # ---- routing --------------------------------------------------------------------------------

    async def check_routing(self) -> None:
        ex = await self.op("mcpaql_conformance_no_such_operation", {}, tool=self.intro_tool)
        ok = ex.code == "NOT_FOUND_OPERATION" and ex.is_error is False
        st = PASS if ok else (WARN if ex.envelope and ex.envelope.get("success") is False and ex.code else FAIL)
        self.add(
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

        if len(self.family_tools) < 2:
            self.add(
                "EP-1",
                "Wrong-endpoint calls are rejected (semantic mode)",
                ROUTING,
                SKIP,
                ["REQ-MODE-005", "REQ-CONF-001"],
                "no semantic endpoint families exposed (single mode): nothing to cross-route",
            )
            self.add(
                "EP-2", "Wrong-endpoint errors name the right tool", ROUTING, SKIP, ["REQ-MODE-006", "Part F #3"], "single mode"
            )
            return
        probes: list[tuple[str, dict[str, Any], str]] = []
        read_tool = self.family_tools.get(str((self.details.get("introspect") or {}).get("endpoint", "read")))
        for tool in self.family_tools.values():
            if tool != read_tool and any(o.get("name") == "introspect" for o in self.ops):
                probes.append((tool, {"query": "operations"}, "introspect"))
                break
        # A mutating op with its required params omitted, sent to the READ tool: rejected by the
        # gatekeeper (conformant) or by validation (misrouted) — never executed either way.
        for o in self.ops:
            n = str(o.get("name"))
            if (
                o.get("semantic_category") != "READ"
                and read_tool
                and self.tool_for(n) != read_tool
                and any(p.get("required") for p in self.params_of(n))
            ):
                probes.append((read_tool, {}, n))
                break
        fails, names_bad, evid = [], [], []
        for tool, params, name in probes:
            ex = await self.op(name, params, tool=tool)
            right = self.tool_for(name) or ""
            if ex.ok or (
                ex.code != "VALIDATION_ENDPOINT_MISMATCH"
                and not (ex.envelope and ex.envelope.get("success") is False and right in ex.message)
            ):
                fails.append(
                    f"'{name}' via {tool}: " + ("executed" if ex.ok else f"not rejected as a wrong endpoint ({ex.code})")
                )
                evid.append(ex)
            elif right not in ex.message:
                names_bad.append(f"'{name}' via {tool}: message does not name {right}")
                evid.append(ex)
            elif ex.code != "VALIDATION_ENDPOINT_MISMATCH":
                names_bad.append(f"'{name}' via {tool}: code {ex.code}, expected VALIDATION_ENDPOINT_MISMATCH")
                evid.append(ex)
        if not probes:
            self.add(
                "EP-1",
                "Wrong-endpoint calls are rejected (semantic mode)",
                ROUTING,
                SKIP,
                ["REQ-MODE-005"],
                "no operation could be cross-routed safely",
            )
            return
        self.add(
            "EP-1",
            "Wrong-endpoint calls are rejected (semantic mode)",
            ROUTING,
            FAIL if fails else PASS,
            ["REQ-MODE-005", "REQ-CONF-001"],
            "; ".join(fails) or f"{len(probes)} cross-routed call(s) rejected",
            evid,
        )
        self.add(
            "EP-2",
            "Wrong-endpoint errors name the right tool",
            ROUTING,
            (WARN if names_bad else PASS) if not fails else SKIP,
            ["REQ-MODE-006", "REQ-MODE-007", "Part F #3"],
            "; ".join(names_bad) or ("VALIDATION_ENDPOINT_MISMATCH naming the right tool" if not fails else "see EP-1"),
            evid,
        )

    # ---- parameters ------------------------------------------------------------------------------

    def cleanable(self) -> set[str]:
        """Operations of element types the suite can clean up after: create, read and delete all exist."""
        if self._cleanable is None:
            self._cleanable = {e[k] for e in self.element_types() if e["delete"] for k in ("create", "update", "delete") if e[k]}
        return self._cleanable

    def probe_kind(self, op: str) -> str:
        cat = self.category(op)
        if cat == "READ":
            return "read"
        if self.read_only and cat in ("CREATE", "EXECUTE"):
            return "untargeted"  # an id might be the new record's own key: send nothing that could act
        if any(is_id_like(p["name"]) and p.get("required") for p in self.params_of(op)):
            return "targeted"  # nonexistent ids: nothing to act on even if the server misbehaves
        return "untargeted"  # nothing that could act: no ids to make the probe inert

    async def check_parameters(self) -> None:
        ops = [o["name"] for o in self.ops if isinstance(o.get("name"), str) and o["name"] in self.details]
        # PH-4 snake_case
        bad = [f"{op}.{p['name']}" for op in ops for p in self.params_of(op) if not SNAKE_RE.match(p["name"])]
        bad += [op for op in ops if not SNAKE_RE.match(op)]
        self.add(
            "PH-4",
            "Operation and parameter names are snake_case",
            PARAMETERS,
            FAIL if bad else PASS,
            ["REQ-VAL-001", "REQ-CLS-005"],
            f"not snake_case: {', '.join(bad)}" if bad else "all names snake_case",
        )

        missing_fail, missing_evid, missing_skip = [], [], []
        unknown_fail, unknown_warn, unknown_evid, unknown_skip = [], [], [], []
        wrong_fail, wrong_warn, wrong_evid = [], [], []
        accuracy_fail, accuracy_evid, accuracy_ok, accuracy_upstream = [], [], [], []
        for op in ops:
            params = self.params_of(op)
            kind = self.probe_kind(op)
            try:
                base = await self.build_params(op, probe=True) if kind != "untargeted" else None
            except CannotBuild as e:
                base = None
                missing_skip.append(f"{op} ({e})")
            # IF-5 parameter accuracy: READ requests built from introspection alone
            reason = self.network_reason(op, base) if kind == "read" and base is not None else None
            if reason:
                self.hold(reason)
            elif kind == "read" and base is not None:
                ex = await self.op(op, base)
                if ex.upstream_rejected:
                    accuracy_upstream.append(f"{op}: {ex.code}: {ex.message[:160]}")
                elif not ex.ok and (ex.envelope is None or str(ex.code).startswith("VALIDATION_")):
                    accuracy_fail.append(f"{op}: {ex.code or ex.kind}: {ex.message[:120]}")
                    accuracy_evid.append(ex)
                elif ex.ok:
                    accuracy_ok.append(op)
            # PH-1 missing required
            for p in [p for p in params if p.get("required")]:
                probe: dict[str, Any] = {}
                if kind != "untargeted":
                    probe = dict(base or {})
                elif self.category(op) == "CREATE" and not self.read_only and op in self.cleanable():
                    # the other required params valid: a conformant server still refuses; anything a
                    # misbehaving one creates is deleted again (cleanup_accidental)
                    try:
                        probe = await self.build_params(op)
                    except CannotBuild:
                        probe = {}
                # EXECUTE (and CREATE under --read-only): only the empty request is safe; it still
                # names one missing parameter
                probe.pop(p["name"], None)
                ex = await self.op(op, probe)
                if ex.kind == "held_back":
                    continue
                self.bundle["parameter_tests"]["missing_required"].append(
                    {"operation": op, "parameter": p["name"], "response": ex.envelope}
                )
                if ex.ok:
                    missing_fail.append(f"{op} succeeded without '{p['name']}'")
                    missing_evid.append(ex)
                    await self.cleanup_accidental(op, ex)
                elif ex.envelope is None:
                    missing_fail.append(f"{op} without '{p['name']}': no envelope ({ex.kind})")
                    missing_evid.append(ex)
                elif not _mentions(ex.message, p["name"]):
                    if probe == {} and any(_mentions(ex.message, q["name"]) for q in params if q.get("required")):
                        continue  # the empty probe names another missing parameter first
                    missing_fail.append(f"{op} without '{p['name']}': message does not name it ({ex.message[:100]!r})")
                    missing_evid.append(ex)
            # PH-2 unknown parameter + IF-4 accepted parameters
            await self.probe_unknown(op, kind, base, unknown_fail, unknown_warn, unknown_evid, unknown_skip)
            # PH-5 wrong type
            await self.probe_wrong_type(op, kind, base, wrong_fail, wrong_warn, wrong_evid)

        self.add(
            "PH-1",
            "Missing required parameters are rejected and named",
            PARAMETERS,
            FAIL if missing_fail else PASS,
            ["REQ-VAL-005", "REQ-CONF-009", "CONF §3.2"],
            "; ".join(missing_fail[:6])
            or "every omitted required parameter was rejected by name"
            + (f" (value building skipped: {', '.join(missing_skip)})" if missing_skip else ""),
            missing_evid,
        )
        st = FAIL if unknown_fail else WARN if unknown_warn else PASS
        self.add(
            "PH-2",
            "Unknown parameters are rejected (VALIDATION_UNKNOWN_PARAM)",
            PARAMETERS,
            st,
            ["REQ-VAL-014", "REQ-CONF-009", "Part F #1"],
            "; ".join((unknown_fail + unknown_warn)[:6])
            or "unknown parameters rejected by name on every probed operation"
            + (f" (not probed: {', '.join(unknown_skip)})" if unknown_skip else ""),
            unknown_evid,
        )
        self.add(
            "PH-5",
            "Wrong-typed parameters are rejected",
            PARAMETERS,
            FAIL if wrong_fail else WARN if wrong_warn else PASS,
            ["REQ-VAL-006", "REQ-RSP-015"],
            "; ".join((wrong_fail + wrong_warn)[:6]) or "wrong types rejected with the parameter named",
            wrong_evid,
        )
        held = [h for h in self.held_back if h.split(":")[0] in ops]
        self.add(
            "IF-5",
            "Requests built only from introspection are accepted",
            INTROSPECTION,
            FAIL if accuracy_fail else PASS if accuracy_ok else SKIP,
            ["REQ-CONF-011", "REQ-INTRO-021"],
            "; ".join(accuracy_fail[:6])
            or (
                f"{len(accuracy_ok)} READ operation(s) accepted a request built from their introspection"
                if accuracy_ok
                else "no READ request built from introspection could be observed"
            )
            + (f"; {len(accuracy_upstream)} rejected by the upstream (neutral)" if accuracy_upstream else "")
            + (f"; not called without --allow-network: {'; '.join(held[:4])}" if held else ""),
            accuracy_evid,
            accuracy_upstream,
        )
        await self.check_completeness(ops)
        await self.check_defaults(ops)

    async def probe_unknown(
        self,
        op: str,
        kind: str,
        base: dict[str, Any] | None,
        fails: list[str],
        warns: list[str],
        evid: list[Exchange],
        skipped: list[str],
    ) -> None:
        params = self.params_of(op)
        documented = {p["name"] for p in params}
        if kind == "untargeted":
            # Documented params whose value is safe to send (no required param given → cannot act),
            # plus the unknown one: a conformant server rejects the unknown name first (REQ-VAL-012).
            probe: dict[str, Any] = {UNKNOWN_PARAM: 1}
        else:
            # every documented parameter (ids nonexistent): the request is refused for the probe name,
            # so the values never act — and the refusal shows which names the server knows
            probe = dict(base or {})
            for p in params:
                if p["name"] not in probe:
                    if is_id_like(p["name"]):
                        probe[p["name"]] = MISSING_ID
                        continue
                    with contextlib.suppress(CannotBuild):
                        probe[p["name"]] = build_value(p, self.lookup, optional=True)
            probe[UNKNOWN_PARAM] = 1
        ex = await self.op(op, probe)
        if ex.kind == "held_back":
            skipped.append(f"{op} ({ex.rpc_message})")
            return
        self.bundle["parameter_tests"]["unknown_parameter"].append(
            {"operation": op, "parameter": UNKNOWN_PARAM, "response": ex.envelope}
        )
        unknown_listed = self.unknown_list(ex)
        if ex.ok:
            if ex.envelope and ex.envelope.get("warnings"):
                fails.append(f"{op}: unknown parameter accepted with a warning (CORE §4.6 requires rejection; Part F #1)")
            else:
                fails.append(f"{op}: unknown parameter silently ignored")
            evid.append(ex)
            await self.cleanup_accidental(op, ex)
            return
        if ex.envelope is None:
            fails.append(f"{op}: no envelope for an unknown parameter ({ex.kind})")
            evid.append(ex)
            return
        if UNKNOWN_PARAM in unknown_listed or _mentions(ex.message, UNKNOWN_PARAM):
            acc = self.accepted.setdefault(op, set())
            acc.update(n for n in probe if n != UNKNOWN_PARAM and n not in unknown_listed)
            if ex.code != "VALIDATION_UNKNOWN_PARAM":
                warns.append(f"{op}: unknown parameter rejected with code {ex.code}")
                evid.append(ex)
            if kind != "untargeted" or len(probe) > 1:
                pass
            # cross-cutting names nobody documented: does the server accept them silently?
            extra = [c for c in CROSS_CUTTING if c not in documented]
            if extra:
                cprobe = {**({} if kind == "untargeted" else dict(base or {})), **{c: None for c in extra}, UNKNOWN_PARAM: 1}
                cex = await self.op(op, cprobe)
                listed = self.unknown_list(cex)
                if cex.envelope and cex.envelope.get("success") is False and UNKNOWN_PARAM in listed:
                    sneaky = [c for c in extra if c not in listed]
                    if sneaky:  # rejected only the probe name: the undocumented names were taken
                        self.accepted.setdefault(op, set()).update(sneaky)
            if kind == "untargeted":
                self.accepted.setdefault(op, set())
                # documented names: a second rejected probe carrying them, all at null (cannot act)
                dprobe = {p["name"]: None for p in params} | {UNKNOWN_PARAM: 1}
                dex = await self.op(op, dprobe)
                listed = self.unknown_list(dex)
                if dex.envelope and dex.envelope.get("success") is False and UNKNOWN_PARAM in listed:
                    self.accepted[op].update(n for n in documented if n not in listed)
                elif dex.ok:
                    await self.cleanup_accidental(op, dex)
            return
        # rejected, but not for the unknown parameter (e.g. a missing-parameter error first)
        if kind == "untargeted" and ex.code == "VALIDATION_MISSING_PARAM":
            if self.read_only or self.category(op) != "CREATE" or op not in self.cleanable():
                skipped.append(f"{op} (rejected for a missing parameter first; probing further could act)")
                return
            try:
                valid = await self.build_params(op, optional=False)
            except CannotBuild as e:
                skipped.append(f"{op} ({e})")
                return
            ex2 = await self.op(op, {**valid, UNKNOWN_PARAM: 1})
            if ex2.ok:
                fails.append(f"{op}: unknown parameter silently ignored (the create succeeded)")
                evid.append(ex2)
                await self.cleanup_accidental(op, ex2)
            elif UNKNOWN_PARAM in self.unknown_list(ex2) or _mentions(ex2.message, UNKNOWN_PARAM):
                warns.append(f"{op}: required parameters are checked before unknown ones (REQ-VAL-012 order)")
                evid.append(ex)
            else:
                fails.append(f"{op}: unknown parameter not named in the error ({ex2.code}: {ex2.message[:100]!r})")
                evid.append(ex2)
            return
        fails.append(f"{op}: unknown parameter not named in the error ({ex.code}: {ex.message[:100]!r})")
        evid.append(ex)

    @staticmethod
    def unknown_list(ex: Exchange) -> list[str]:
        d = ex.error.get("details")
        lst = d.get("unknown_params") if isinstance(d, dict) else None
        return [str(x) for x in lst] if isinstance(lst, list) else []

    async def probe_wrong_type(
        self, op: str, kind: str, base: dict[str, Any] | None, fails: list[str], warns: list[str], evid: list[Exchange]
    ) -> None:
        params = self.params_of(op)
        if kind == "untargeted" or base is None:
            return  # a valid base would act (create/execute): covered by the round trip's own record
        for p in params:
            if is_id_like(p["name"]) and kind == "targeted":
                continue
            bad = wrong_value(p)
            if bad is None:
                continue
            ex = await self.op(op, {**base, p["name"]: bad})
            if ex.kind == "held_back":
                return
            if ex.ok:
                fails.append(f"{op}.{p['name']}: {json.dumps(bad)} accepted for type '{p.get('type')}'")
                evid.append(ex)
            elif ex.envelope is None:
                fails.append(f"{op}.{p['name']}: no envelope ({ex.kind})")
                evid.append(ex)
            elif not _mentions(ex.message, p["name"]):
                warns.append(f"{op}.{p['name']}: error does not name the parameter ({ex.message[:100]!r})")
                evid.append(ex)
            elif ex.code not in ("VALIDATION_INVALID_TYPE", "VALIDATION_INVALID_VALUE", "VALIDATION_ERROR"):
                warns.append(f"{op}.{p['name']}: rejected with {ex.code}, expected VALIDATION_INVALID_TYPE")
                evid.append(ex)
            else:
                self.bundle["error_tests"].append(
                    {"name": f"{op}-wrong-type-{p['name']}", "must_mention": [p["name"]], "response": ex.envelope}
                )
            break  # one wrong-typed parameter per operation

    async def check_completeness(self, ops: list[str]) -> None:
        fails, warns = [], []
        for op in ops:
            documented = {p["name"] for p in self.params_of(op)}
            acc = self.accepted.get(op)
            if acc is None:
                continue
            undocumented = sorted(acc - documented)
            if undocumented:
                fails.append(f"{op} accepts undocumented {', '.join(undocumented)}")
            not_acc = sorted(documented - acc)
            if not_acc:
                warns.append(f"{op} documents {', '.join(not_acc)} but rejected it as unknown")
        probed = len(self.accepted)
        self.add(
            "IF-4",
            "Accepted parameters are exactly the documented ones",
            INTROSPECTION,
            FAIL if fails else WARN if warns else PASS if probed else SKIP,
            ["REQ-INTRO-022", "REQ-CONF-012"],
            "; ".join((fails + warns)[:6])
            or (
                f"accepted parameters observed on {probed} operation(s) match introspection"
                if probed
                else "no operation rejected a probe, so acceptance was not observable"
            ),
        )

    async def check_defaults(self, ops: list[str]) -> None:
        checked, fails, evid, upstream = 0, [], [], []
        for op in ops:
            if self.probe_kind(op) != "read":
                continue
            defaults = [p for p in self.params_of(op) if not p.get("required") and "default" in p]
            if not defaults:
                continue
            try:
                base = await self.build_params(op)
            except CannotBuild:
                continue
            for p in defaults[:3]:
                reason = self.network_reason(op, {**base, p["name"]: p["default"]})
                if reason:
                    self.hold(reason)
                    break
                a = await self.op(op, {k: v for k, v in base.items() if k != p["name"]})
                b = await self.op(op, {**base, p["name"]: p["default"]})
                if a.upstream_rejected or b.upstream_rejected:
                    rej = a if a.upstream_rejected else b
                    upstream.append(f"{op}.{p['name']}: {rej.code}: {rej.message[:160]}")
                    continue
                if not a.ok or not b.ok:
                    if a.ok != b.ok:
                        fails.append(f"{op}.{p['name']}: omitting it and sending the documented default behave differently")
                        evid += [a, b]
                    continue
                checked += 1
                if _strip_volatile(a.data) != _strip_volatile(b.data):
                    fails.append(f"{op}.{p['name']}: result without it differs from the result with default {p['default']!r}")
                    evid += [a, b]
                    continue
                path = _find_value_path(a.envelope, p["name"], p["default"])
                if path:
                    self.bundle["parameter_tests"]["optional_defaults"].append(
                        {
                            "operation": op,
                            "parameter": p["name"],
                            "expected_value_path": path,
                            "expected_value": p["default"],
                            "response": a.envelope,
                        }
                    )
        self.add(
            "PH-3",
            "Documented defaults are applied",
            PARAMETERS,
            FAIL if fails else PASS if checked else SKIP,
            ["REQ-VAL-011", "REQ-INTRO-024"],
            "; ".join(fails[:5])
            or (
                f"{checked} documented default(s) behave like the explicit value"
                if checked
                else "no READ operation with documented defaults could be probed"
            )
            + (f"; {len(upstream)} probe(s) rejected by the upstream (neutral)" if upstream else ""),
            evid,
            upstream,
        )

    # ---- round trip -----------------------------------------------------------------------------

    def element_types(self) -> list[dict[str, str]]:
        by_cat: dict[str, dict[str, str]] = {}
        for o in self.ops:
            name, cat = str(o.get("name")), str(o.get("semantic_category"))
            res = _resource(name, cat)
            if res and name in self.details:
                by_cat.setdefault(cat, {})[_singular(res)] = name
        out = []
        for res, create in (by_cat.get("CREATE") or {}).items():
            get = (by_cat.get("READ") or {}).get(res)
            if get:
                out.append(
                    {
                        "res": res,
                        "create": create,
                        "get": get,
                        "update": (by_cat.get("UPDATE") or {}).get(res, ""),
                        "delete": (by_cat.get("DELETE") or {}).get(res, ""),
                    }
                )
        return out

    async def check_round_trip(self) -> None:
        names = (
            ("RT-1", "Create → read returns the submitted fields"),
            ("RT-2", "Update preserves non-targeted fields"),
            ("RT-3", "Delete removes the record it created"),
        )
        if self.read_only:
            for cid, n in names:
                self.add(cid, n, ROUND_TRIP, SKIP, ["REQ-CONF-013"], "--read-only: mutating tests skipped")
            self.add("CD-1", "Read-only fields are protected and documented", CONSTRAINTS, SKIP, ["REQ-CONF-014"], "--read-only")
            self.add("CD-2", "Append-only data is protected and documented", CONSTRAINTS, SKIP, ["REQ-CONF-014"], "--read-only")
            return
        all_elems = self.element_types()
        elems = [e for e in all_elems if e["delete"]]  # create only what the suite can delete again
        if not elems:
            why = (
                "no element type with a create_X, get_X and delete_X operation: the suite creates only what it can delete"
                if all_elems
                else "no element type with both a CREATE (create_X) and a READ (get_X) operation was found"
            )
            for cid, n in names:
                self.add(
                    cid,
                    n,
                    ROUND_TRIP,
                    SKIP,
                    ["REQ-CONF-013"],
                    why,
                )
            self.add(
                "CD-1", "Read-only fields are protected and documented", CONSTRAINTS, SKIP, ["REQ-CONF-014"], "no element type"
            )
            self.add(
                "CD-2", "Append-only data is protected and documented", CONSTRAINTS, SKIP, ["REQ-CONF-014"], "no element type"
            )
            return
        rt1, rt2, rt3, cd1 = [], [], [], []
        # independent element types first, so dependents can reference a record this run created
        elems.sort(key=lambda e: sum(1 for p in self.params_of(e["create"]) if p.get("required") and is_id_like(p["name"])))
        done: list[tuple[dict[str, str], str, Any]] = []
        for el in elems[:4]:
            made = await self.round_trip(el, rt1, rt2, cd1)
            if made is not None:
                done.append((el, *made))
        for el, id_param, rid in reversed(done):  # children before parents
            await self.delete_created(el, id_param, rid, rt3)

        def emit(cid: str, name: str, cat: Category, rs: list[tuple[Status, str, list[Exchange]]], checklist: list[str]) -> None:
            if not rs:
                self.add(cid, name, cat, SKIP, checklist, "not reached")
                return
            order = [FAIL, WARN, PASS, SKIP]
            st = min((r[0] for r in rs), key=order.index)
            upstream = [r[1] for r in rs if any(e.upstream_rejected for e in r[2])]
            evidence = [e for r in rs for e in r[2] if not e.upstream_rejected]
            self.add(cid, name, cat, st, checklist, "; ".join(r[1] for r in rs), evidence, upstream)

        emit("RT-1", names[0][1], ROUND_TRIP, rt1, ["REQ-CONF-013", "CONF §3.4"])
        emit("RT-2", names[1][1], ROUND_TRIP, rt2, ["REQ-UPD-001", "CONF §3.4"])
        emit("RT-3", names[2][1], ROUND_TRIP, rt3, ["CONF §3.4"])
        emit("CD-1", "Read-only fields are protected and documented", CONSTRAINTS, cd1, ["REQ-CONF-014", "REQ-INTRO-029"])
        self.add(
            "CD-2",
            "Append-only data is protected and documented",
            CONSTRAINTS,
            SKIP,
            ["REQ-CONF-014"],
            "no operation documents append-only data"
            if not any("append-only" in str(d.get("description", "")).lower() for d in self.details.values())
            else "append-only data is documented, but a generic probe cannot tell which update would violate it",
        )

    def id_param(self, op: str) -> str | None:
        req = [p["name"] for p in self.params_of(op) if p.get("required")]
        ids = [n for n in req if is_id_like(n)]
        return ids[0] if ids else (req[0] if len(req) == 1 else None)

    async def round_trip(self, el: dict[str, str], rt1: list, rt2: list, cd1: list) -> tuple[str, Any] | None:
        res, create, get = el["res"], el["create"], el["get"]
        id_param = self.id_param(get)
        if id_param is None:
            rt1.append((SKIP, f"{get}: cannot tell which parameter identifies the record", []))
            return None
        seed = f"{TAG}-{self.run_id}"
        attempts = []
        for optional in (True, False):
            try:
                attempts.append(await self.build_params(create, optional=optional, seed=seed))
            except CannotBuild as e:
                if not optional:
                    rt1.append((SKIP, f"{create}: cannot build a valid create request from introspection ({e})", []))
                    return None
        ex = None
        params: dict[str, Any] = {}
        for params in attempts:
            reason = self.network_reason(create, params)
            if reason:
                self.hold(reason)
                rt1.append((SKIP, f"{reason}; not called without --allow-network", []))
                return None
            ex = await self.op(create, params)
            if ex.ok or (ex.code or "").startswith("VALIDATION_") is False:
                break
        assert ex is not None
        if ex.upstream_rejected:
            rt1.append((SKIP, f"{create}: upstream rejected probe ({ex.code}: {ex.message[:120]})", [ex]))
            return None
        if not ex.ok:
            rt1.append(
                (
                    FAIL if ex.envelope is None or ex.code == "INTERNAL_ERROR" else SKIP,
                    f"{create}: a create built from introspection was refused ({ex.code}: {ex.message[:120]})",
                    [ex],
                )
            )
            return None
        created = _record(ex.data, res) or {}
        rid = created.get(id_param)
        if rid is None:
            rid = created.get("id")
        if rid is None:
            rt1.append(
                (
                    WARN,
                    f"{create}: the created record does not return '{id_param}', so it cannot be read back "
                    "(and was not cleaned up)",
                    [ex],
                )
            )
            return None
        if el["delete"]:
            dparam = self.id_param(el["delete"]) or id_param
            self.created.append((el["delete"], {dparam: rid}))
        self.live_ids[id_param] = rid
        rd = await self.op(get, {id_param: rid})
        record = _record(rd.data, res) if rd.ok else None
        if record is None:
            rt1.append((FAIL, f"{get}({id_param}={rid!r}) failed after {create}: {rd.code}: {rd.message[:120]}", [ex, rd]))
            return None
        submitted = _flatten_submitted(params, self.params_of(create))
        expected, dropped, changed = {}, [], []
        rec_path = _record_path(rd.data, res)
        for key, val in submitted.items():
            got = _get(record, key)
            if got is _MISSING:
                dropped.append(key)
            elif got != val:
                changed.append(f"{key}: sent {val!r}, read {got!r}")
            else:
                expected[".".join(["data", *rec_path, key])] = val
        self.bundle["round_trip_tests"].append(
            {"name": f"{res}-create-read", "expected_fields": expected, "read_response": rd.envelope}
        )
        if changed:
            rt1.append((FAIL, f"{res}: values changed on the way through: {'; '.join(changed)}", [ex, rd]))
        elif dropped:
            rt1.append((WARN, f"{res}: submitted but not visible on read: {', '.join(dropped)}", [ex, rd]))
        else:
            rt1.append((PASS, f"{res}: {len(expected)} submitted field(s) read back unchanged", []))
        self.fixture = self.fixture or {"res": res, "get": get, "id_param": id_param, "id": rid, "record": record}

        # RT-2: update one field, read back, compare the rest
        upd = el["update"]
        if not upd:
            rt2.append((SKIP, f"{res}: no update operation", []))
        else:
            await self.update_preservation(res, upd, get, id_param, rid, record, rt2, cd1)
        return id_param, rid

    async def delete_created(self, el: dict[str, str], id_param: str, rid: Any, rt3: list) -> None:
        res, get = el["res"], el["get"]
        self.live_ids = {k: v for k, v in self.live_ids.items() if v != rid}
        if el["delete"]:
            dparam = self.id_param(el["delete"]) or id_param
            dex = await self.delete(el["delete"], {dparam: rid})
            after = await self.op(get, {id_param: rid})
            self.created = [c for c in self.created if c != (el["delete"], {dparam: rid})]
            if dex.upstream_rejected:
                rt3.append((SKIP, f"{el['delete']}: upstream rejected probe ({dex.code}: {dex.message[:100]})", [dex]))
                self.created.append((el["delete"], {dparam: rid}))
            elif not dex.ok:
                rt3.append(
                    (FAIL, f"{el['delete']} of the record this run created failed: {dex.code}: {dex.message[:100]}", [dex])
                )
                self.created.append((el["delete"], {dparam: rid}))
            elif after.ok:
                rt3.append((FAIL, f"{get} still returns the record after {el['delete']}", [dex, after]))
            elif after.code != "NOT_FOUND_RESOURCE":
                rt3.append((WARN, f"read after delete returned {after.code}, expected NOT_FOUND_RESOURCE", [after]))
            else:
                rt3.append((PASS, f"{res}: deleted; reading it back gives NOT_FOUND_RESOURCE", []))
                self.bundle["error_tests"].append(
                    {"name": f"{res}-read-after-delete", "must_mention": [], "response": after.envelope}
                )
        else:
            rt3.append((WARN, f"{res}: no delete operation, the record created by this run remains ({id_param}={rid!r})", []))

    async def update_preservation(
        self, res: str, upd: str, get: str, id_param: str, rid: Any, record: dict[str, Any], rt2: list, cd1: list
    ) -> None:
        uparams = self.params_of(upd)
        uid = self.id_param(upd) or id_param
        input_p = next((p for p in uparams if p["name"] == "input"), None)
        await self.prefetch_types(uparams)
        fields: list[dict[str, Any]] = []
        if input_p is not None:
            d = self.lookup(str(input_p.get("type")))
            fields = [f for f in (d or {}).get("fields") or [] if isinstance(f, dict)]
        else:
            fields = [p for p in uparams if p["name"] != uid]
        target = next(
            (
                f
                for f in fields
                if str(f.get("type")).startswith("string")
                and not f.get("enum")
                and not f.get("format")
                and not f.get("pattern")
                and isinstance(record.get(f.get("name")), str)
            ),
            None,
        )
        if target is None:
            rt2.append((SKIP, f"{upd}: no plain string field to change", []))
            return
        new_value = f"{TAG}-{self.run_id}-updated"
        if target.get("maxLength") is not None:
            new_value = new_value[: int(target["maxLength"])]
        change = {target["name"]: new_value}
        uex = await self.op(upd, {uid: rid, "input": change} if input_p is not None else {uid: rid, **change})
        if uex.upstream_rejected:
            rt2.append((SKIP, f"{upd}: upstream rejected probe ({uex.code}: {uex.message[:120]})", [uex]))
            return
        if not uex.ok:
            rt2.append((FAIL, f"{upd} of one field failed: {uex.code}: {uex.message[:120]}", [uex]))
            return
        rd = await self.op(get, {id_param: rid})
        after = _record(rd.data, res) if rd.ok else None
        if after is None:
            rt2.append((FAIL, f"{get} failed after {upd}", [uex, rd]))
            return
        volatile = {"updated_at", "updatedAt", "modified_at", "modified", "version", "etag", "_etag", "_computed"}
        volatile |= {k for k in record if k.startswith("_")}  # metadata such as _etag/_version (REQ-RSP-010)
        lost = [k for k, v in record.items() if k not in volatile and k != target["name"] and after.get(k, _MISSING) != v]
        rec_path = _record_path(rd.data, res)
        preserved = {
            ".".join(["data", *rec_path, k]): v
            for k, v in record.items()
            if k not in volatile and k != target["name"] and not isinstance(v, dict | list) and after.get(k) == v
        }
        self.bundle["update_preservation_tests"].append(
            {"name": f"{res}-update-preserves-fields", "preserved_fields": preserved, "read_response": rd.envelope}
        )
        if after.get(target["name"]) != new_value:
            rt2.append((FAIL, f"{upd}: '{target['name']}' was not changed to the new value", [uex, rd]))
        elif lost:
            rt2.append((FAIL, f"{upd} of '{target['name']}' also changed: {', '.join(lost)}", [uex, rd]))
        else:
            rt2.append((PASS, f"{res}: updating '{target['name']}' kept {len(preserved)} other field(s)", []))
        # CD-1: read-only fields (present on the record, absent from the update input)
        field_names = {f.get("name") for f in fields}
        candidates = [k for k in READ_ONLY_FIELD_CANDIDATES if k in record and k not in field_names and k != uid]
        if input_p is None or not candidates:
            cd1.append((SKIP, f"{res}: no read-only field found to probe", []))
            return
        k = candidates[0]
        attempt = "2000-01-01T00:00:00Z" if "at" in k or "created" in k else f"{TAG}-readonly"
        cex = await self.op(upd, {uid: rid, "input": {k: attempt}})
        rd2 = await self.op(get, {id_param: rid})
        after2 = _record(rd2.data, res) if rd2.ok else {}
        documented = k not in field_names  # the update input type does not offer it
        self.bundle["constraint_tests"].append(
            {"name": f"{res}-read-only-{k}", "documented": documented, "response": cex.envelope}
        )
        if cex.ok and (after2 or {}).get(k) == attempt:
            cd1.append((FAIL, f"{res}.{k} is read-only by documentation but {upd} changed it", [cex, rd2]))
        elif cex.ok:
            cd1.append((WARN, f"{upd} accepted '{k}' silently without changing it (expected a constraint error)", [cex]))
        else:
            cd1.append(
                (
                    PASS if documented else WARN,
                    f"{res}.{k}: rejected with {cex.code}" + ("" if documented else " but not documented"),
                    [] if documented else [cex],
                )
            )

    async def delete(self, op: str, params: dict[str, Any]) -> Exchange:
        ex = await self.op(op, params)
        if not ex.ok and ex.code == "CONFIRMATION_REQUIRED":
            details = ex.error.get("details") or {}
            token = details.get("confirmation_token") or ((ex.envelope or {}).get("confirmation") or {}).get("token")
            if token:
                ex = await self.op(op, {**params, "_confirmation": token})
        return ex

    async def cleanup_accidental(self, op: str, ex: Exchange) -> None:
        """A probe that should have been rejected created something: delete it if we can tell what."""
        if self.category(op) != "CREATE":
            return
        res = _resource(op, "CREATE")
        if not res:
            return
        el = next((e for e in self.element_types() if e["create"] == op and e["delete"]), None)
        rec = _record(ex.data, _singular(res)) or {}
        if el is None:
            self.report.notes.append(f"a probe of {op} unexpectedly created a record that could not be deleted: {rec}")
            return
        dparam = self.id_param(el["delete"])
        if dparam and (rec.get(dparam) is not None or rec.get("id") is not None):
            await self.delete(el["delete"], {dparam: rec.get(dparam, rec.get("id"))})

    async def cleanup(self) -> None:
        for op, params in reversed(self.created):
            try:
                ex = await self.delete(op, params)
                if not ex.ok:
                    self.report.notes.append(f"cleanup: {op}({params}) failed: {ex.code}")
            except Exception as e:  # pragma: no cover - connection gone
                self.report.notes.append(f"cleanup: {op}({params}) failed: {e}")
        self.created.clear()

    # ---- Level 2 ---------------------------------------------------------------------------------

    async def check_level2(self) -> None:
        modes = self.report.modes
        both = "semantic" in modes and "single" in modes
        proto = ((self.ops_env or {}).get("data") or {}).get("_protocol") or {}
        # REQ-MODE-002 is about the implementation: a server configured for one mode may declare
        # the modes it can serve in _protocol.supported_modes ("all" implies both). The declaration
        # is accepted only if it agrees with what is served and with _protocol.mode.
        declared = proto.get("supported_modes") if isinstance(proto, dict) else None
        declared = {str(m) for m in declared} if isinstance(declared, list) else set()
        covers = {"semantic", "single"} <= (declared | ({"semantic", "single"} if "all" in declared else set()))
        consistent = bool(modes) and set(modes) <= declared | {"all"} and proto.get("mode") in declared
        if both:
            status, msg = PASS, "semantic family tools and the single tool are both exposed"
        elif covers and consistent:
            self.declared_both_modes = True  # the evidence documents both (EVIDENCE-FORMAT: endpoint_modes)
            other = "single" if "semantic" in modes else "semantic"
            status, msg = (
                PASS,
                (
                    f"this server exposes {modes[0]} mode and _protocol.supported_modes declares {', '.join(sorted(declared))}; "
                    f"{other} mode was not exercised here — serve mode 'all' to verify both live"
                ),
            )
        else:
            status, msg = (
                WARN,
                (
                    f"this server exposes only {' and '.join(modes) or 'no'} mode (reported mode: {proto.get('mode')!r}) "
                    "and does not declare both in _protocol.supported_modes; Level 2 requires both — serve them together "
                    "(mode 'all') to verify"
                ),
            )
        self.add(
            "L2-1",
            "Both endpoint modes (semantic and single) are supported",
            LEVEL2,
            status,
            ["REQ-CONF-002", "REQ-MODE-002", "Part F #10", "Part F #23"],
            msg,
        )
        await self.check_field_selection(proto)
        await self.check_batch(proto)

    async def check_field_selection(self, proto: dict[str, Any]) -> None:
        reads = [
            o["name"]
            for o in self.ops
            if o.get("semantic_category") == "READ"
            and o.get("name") in self.details
            and any(p["name"] == "fields" for p in self.params_of(o["name"]))
        ]
        reads.sort(key=lambda n: sum(1 for p in self.params_of(n) if p.get("required")))  # collections first
        cap = (proto.get("capabilities") or {}).get("field_selection")
        if not reads:
            self.add(
                "L2-2",
                "Field selection (`fields`) on READ operations",
                LEVEL2,
                WARN,
                ["REQ-FSEL-002", "REQ-CONF-003"],
                "no READ operation documents a `fields` parameter"
                + (" although _protocol says field_selection: true" if cap else ""),
            )
            return
        tried, upstream = [], []
        for op in reads:
            try:
                base = await self.build_params(op, ids={self.fixture["id_param"]: self.fixture["id"]} if self.fixture else None)
            except CannotBuild:
                continue
            reason = self.network_reason(op, base)
            if reason:
                self.hold(reason)
                tried.append(f"{reason} (not called without --allow-network)")
                continue
            full = await self.op(op, base)
            if full.upstream_rejected:
                upstream.append(f"{op}: {full.code}: {full.message[:120]}")
                continue
            recs, under = _records_at(full.data) if full.ok else ([], None)
            keys = [k for k in (recs[0] if recs else {}) if not k.startswith("_") and not is_id_like(k)]
            if not keys:
                tried.append(f"{op}: no records to select from")
                continue
            pick = path = keys[0]
            sel = await self.op(op, {**base, "fields": [path]})
            if under is not None and sel.code == "VALIDATION_INVALID_VALUE":
                # Records found inside a container object (``{"entities": [...]}``): a server whose
                # paths are relative to the whole result (wrapped READ operations) names the field
                # through its container, as FS dot notation does.
                path = f"{under}.{pick}"
                sel = await self.op(op, {**base, "fields": [path]})
            if sel.upstream_rejected:
                upstream.append(f"{op} with fields=[{path!r}]: {sel.code}: {sel.message[:120]}")
                continue
            srecs = _records(sel.data) if sel.ok else []
            extra = sorted({k for r in srecs for k in r if k != pick and not is_id_like(k) and not k.startswith("_")})
            if not sel.ok:
                self.add(
                    "L2-2",
                    "Field selection (`fields`) on READ operations",
                    LEVEL2,
                    WARN,
                    ["REQ-FSEL-002", "REQ-FSEL-003"],
                    f"{op} rejected fields=[{path!r}]: {sel.code}: {sel.message[:100]}",
                    [sel],
                )
                return
            if extra or not any(pick in r for r in srecs):
                self.add(
                    "L2-2",
                    "Field selection (`fields`) on READ operations",
                    LEVEL2,
                    WARN,
                    ["REQ-FSEL-011"],
                    f"{op} with fields=[{path!r}] returned other fields too: {', '.join(extra[:8])}",
                    [sel],
                )
                return
            self.bundle.setdefault("capabilities", {})["field_selection"] = True
            self.add(
                "L2-2",
                "Field selection (`fields`) on READ operations",
                LEVEL2,
                PASS,
                ["REQ-FSEL-002", "REQ-FSEL-011"],
                f"{op} with fields=[{path!r}] returned only that field ({len(srecs)} record(s))",
                upstream_rejected=upstream,
            )
            return
        self.add(
            "L2-2",
            "Field selection (`fields`) on READ operations",
            LEVEL2,
            WARN,
            ["REQ-FSEL-002"],
            "could not observe field selection: "
            + (
                "; ".join(tried + [f"{u.split(':')[0]}: rejected by the upstream" for u in upstream])
                or "no request could be built"
            ),
            upstream_rejected=upstream,
        )

    async def check_batch(self, proto: dict[str, Any]) -> None:
        tool = self.intro_tool or ""
        req = {
            "operations": [
                {"operation": "introspect", "params": {"query": "types"}},
                {"operation": "mcpaql_conformance_no_such_operation", "params": {}},
            ]
        }
        ex = await self.call(tool, req)
        env = ex.envelope or {}
        probs = []
        if ex.envelope is None:
            probs.append(f"no envelope ({ex.kind})")
        elif env.get("success") is not True:
            probs.append(f"batch refused: {ex.code}: {ex.message[:100]}")
        else:
            results = env.get("results")
            if not isinstance(results, list) or len(results) != 2:
                probs.append("results[] must hold one item per operation")
            else:
                for i, r in enumerate(results):
                    if not isinstance(r, dict) or r.get("index") != i or not isinstance(r.get("result"), dict):
                        probs.append(f"results[{i}] must be {{index: {i}, operation, result}}")
                if not probs and (
                    results[0]["result"].get("success") is not True or results[1]["result"].get("success") is not False
                ):
                    probs.append("item results must be the individual envelopes (first succeeds, second fails)")
            s = env.get("summary") or {}
            if (s.get("total"), s.get("succeeded"), s.get("failed")) != (2, 1, 1):
                probs.append(f"summary must be {{total: 2, succeeded: 1, failed: 1}}, got {s}")
            if "data" not in env:
                probs.append("batch envelope needs data (null) to validate operation-result (Part F #9)")
            probs += self.v.problems("operation_result", env)
        if not probs:
            self.bundle["batch_example"] = ex.envelope
            self.bundle.setdefault("capabilities", {})["batch_operations"] = True
        self.add(
            "L2-3",
            "Batch operations run in order with individual results",
            LEVEL2,
            WARN if probs else PASS,
            ["REQ-BATCH-002", "REQ-BATCH-004", "REQ-BATCH-005", "REQ-BATCH-006", "REQ-BATCH-007"],
            "; ".join(probs[:5]) or "a two-item batch (one failing) returned both results and a correct summary",
            [ex] if probs else [],
        )

    # ---- errors and MCP results (over everything observed) ------------------------------------------

    def check_errors(self) -> None:
        errs = [ex for ex in self.exchanges if ex.envelope is not None and ex.envelope.get("success") is False]
        nested = [
            r.get("result")
            for ex in self.exchanges
            if ex.ok
            for r in (ex.envelope or {}).get("results") or []
            if isinstance(r, dict) and isinstance(r.get("result"), dict) and r["result"].get("success") is False
        ]
        shape_bad, evid = [], []
        for ex in errs:
            intro = isinstance(ex.arguments, dict) and ex.arguments.get("operation") == "introspect"
            p = self.v.problems("operation_result", ex.envelope)
            if p:
                shape_bad.append(f"{_op_of(ex)}: {'; '.join(p[:2])}")
                evid.append(ex)
            elif intro and (ip := self.v.problems("introspection_response", without_error_details(ex.envelope))):
                # error.details is allowed on introspect failures (decision E2); the rest must fit the schema
                shape_bad.append(f"introspect failure: {'; '.join(ip[:2])}")
                evid.append(ex)
        self.add(
            "EQ-1",
            "Error responses are {success:false, error:{code, message}} envelopes",
            ERRORS,
            FAIL if shape_bad else PASS if errs else SKIP,
            ["REQ-RSP-001", "REQ-RSP-003", "REQ-RSP-006", "REQ-RSP-007"],
            " | ".join(shape_bad[:5]) or f"{len(errs)} error envelopes validate",
            evid,
        )

        leaks, runner_hits, levid = [], [], []
        messages = [(ex, ex.message) for ex in errs] + [(None, str((r.get("error") or {}).get("message", ""))) for r in nested]
        texts = [(ex, ex.text or "") for ex in self.exchanges if ex.kind == "result" and ex.envelope is None and ex.text]
        texts += [(ex, ex.rpc_message or "") for ex in self.exchanges if ex.kind == "jsonrpc_error"]
        for ex, msg in messages + texts:
            for label, pat in LEAK_PATTERNS:
                m = pat.search(msg)
                if m:
                    leaks.append(f"{label} ({m.group(0)!r}) in: {msg[:120]!r}")
                    if ex is not None:
                        levid.append(ex)
                    break
        for t in self.bundle["error_tests"]:
            m = RUNNER_LEAK.search(str(((t.get("response") or {}).get("error") or {}).get("message", "")))
            if m:
                runner_hits.append(f"{t['name']} ({m.group(0)!r})")
        self.add(
            "EQ-2",
            "Error messages leak no implementation details",
            ERRORS,
            FAIL if leaks else PASS,
            ["REQ-RSP-013", "CONF §3.3"],
            " | ".join(dict.fromkeys(leaks[:5]))
            or f"{len(messages) + len(texts)} error message(s) free of tracebacks, class names and internal paths",
            levid,
        )

        vague, vevid, upstream_msgs = [], [], []
        for ex in errs:
            if ex.upstream_rejected:  # the upstream's own wording, passed on as the spec asks (ERR §7.1)
                upstream_msgs.append(f"{_op_of(ex)}: {ex.code}: {ex.message[:120]}")
                continue
            code = ex.code or ""
            msg = ex.message
            if code in ("VALIDATION_MISSING_PARAM", "VALIDATION_UNKNOWN_PARAM", "VALIDATION_INVALID_TYPE"):
                names = [n for n in re.findall(r"'([^']+)'", msg)]
                if not names:
                    vague.append(f"{code}: {msg[:100]!r} quotes no parameter name")
                    vevid.append(ex)
                if code == "VALIDATION_INVALID_TYPE" and not re.search(
                    r"string|integer|number|boolean|object|array|expected", msg, re.I
                ):
                    vague.append(f"{code}: {msg[:100]!r} does not say the expected type")
                    vevid.append(ex)
            if len(msg.strip()) < 12:
                vague.append(f"{code}: message too terse ({msg!r})")
                vevid.append(ex)
        self.add(
            "EQ-3",
            "Validation errors are actionable (what, which parameter, expected type)",
            ERRORS,
            WARN if vague else PASS if errs else SKIP,
            ["REQ-RSP-014", "REQ-RSP-015", "REQ-ERR-005"],
            (" | ".join(vague[:5]) or "validation errors name the parameter and what was expected")
            + (
                f" ({len(set(upstream_msgs))} upstream message(s) passed on as the upstream wrote them, not graded)"
                if upstream_msgs
                else ""
            ),
            vevid,
        )

        badcodes, unusual = [], []
        for ex in errs:
            c = ex.code
            if not isinstance(c, str) or not CODE_RE.match(c):
                badcodes.append(repr(c))
            elif not c.startswith(CODE_PREFIXES):
                unusual.append(c)
        self.add(
            "EQ-4",
            "Error codes are CATEGORY_SPECIFIC_CONDITION",
            ERRORS,
            FAIL if badcodes else WARN if unusual else PASS if errs else SKIP,
            ["REQ-ERR-001", "REQ-ERR-002"],
            (f"malformed codes: {', '.join(sorted(set(badcodes)))}" if badcodes else "")
            + (f"codes outside the documented categories: {', '.join(sorted(set(unusual)))}" if unusual else "")
            or f"{len({ex.code for ex in errs})} distinct well-formed codes",
        )
        if runner_hits:
            self.add(
                "EQ-5",
                "Evidence messages survive the spec fixture runner's leak regex",
                ERRORS,
                WARN,
                ["Part F #23"],
                "the spec runner's /at\\s+\\S+/i would misreport these as leakage: "
                + ", ".join(runner_hits[:6])
                + " — rephrase or expect its 'Error messages do not leak' test to fail on the evidence bundle",
            )

    def check_mcp_results(self) -> None:
        rpc = [ex for ex in self.exchanges if ex.kind == "jsonrpc_error"]
        self.add(
            "MCP-5",
            "Domain errors come back as CallToolResult, never JSON-RPC errors",
            MCP,
            FAIL if rpc else PASS,
            ["REQ-MCP-013", "REQ-MCP-014", "REQ-VAL-013"],
            f"{len(rpc)} call(s) answered with a JSON-RPC error instead of an envelope: "
            + ", ".join(sorted({f"{_op_of(e)} → {e.rpc_code} {e.rpc_message!r}"[:90] for e in rpc})[:4])
            if rpc
            else f"{len(self.exchanges)} calls, deliberately invalid ones included, all returned CallToolResult",
            rpc,
        )

        wrong, soft, evid = [], [], []
        for ex in self.exchanges:
            if ex.kind != "result" or ex.envelope is None:
                continue
            if ex.envelope.get("success") is True:
                if ex.is_error:
                    wrong.append(f"{_op_of(ex)}: success with isError true")
                    evid.append(ex)
                continue
            code = ex.code or ""
            if code in RECOVERABLE and ex.is_error:
                wrong.append(f"{_op_of(ex)}: {code} is recoverable but isError is true")
                evid.append(ex)
            elif code in UNRECOVERABLE and not ex.is_error:
                wrong.append(f"{_op_of(ex)}: {code} is unrecoverable but isError is false")
                evid.append(ex)
            elif code not in RECOVERABLE and code not in UNRECOVERABLE and not ex.is_error:
                soft.append(code)
        msg = "; ".join(dict.fromkeys(wrong[:6]))
        if soft and not wrong:
            msg = (
                f"codes outside the MCPI §4.1.3 lists returned isError:false ({', '.join(sorted(set(soft)))}); "
                "the reference function treats every unlisted code as unrecoverable"
            )
        self.add(
            "MCP-6",
            "isError follows the recoverability rule",
            MCP,
            FAIL if wrong else WARN if soft else PASS,
            ["REQ-MCP-015", "Part F #18"],
            msg or "success → false, recoverable → false, unrecoverable → true",
            evid,
        )
        nonjson = [ex for ex in self.exchanges if ex.kind == "result" and ex.envelope is None]
        shape = [
            ex
            for ex in self.exchanges
            if ex.envelope is not None and ex.envelope.get("success") is True and self.v.problems("operation_result", ex.envelope)
        ]
        details = [f"{_op_of(ex)}: text is not a JSON envelope ({(ex.text or '')[:60]!r})" for ex in nonjson[:3]]
        details += [f"{_op_of(ex)}: {'; '.join(self.v.problems('operation_result', ex.envelope)[:2])}" for ex in shape[:3]]
        self.add(
            "MCP-7",
            "Results carry the MCP-AQL envelope as JSON text content",
            MCP,
            FAIL if details else PASS,
            ["REQ-MCP-013", "REQ-RSP-001", "REQ-RSP-005", "REQ-RSP-011"],
            " | ".join(details) or "every result's text content is a valid envelope",
            nonjson[:3] + shape[:3],
        )

    def check_claim(self) -> None:
        proto = ((self.ops_env or {}).get("data") or {}).get("_protocol") or {}
        claimed = proto.get("conformance") if isinstance(proto, dict) else None
        if claimed not in ("level-1", "level-2") or (claimed == "level-2" and self.level < 2):
            self.add(
                "IF-11",
                "The claimed _protocol.conformance level is what the suite measures",
                INTROSPECTION,
                SKIP,
                ["REQ-CONF-004", "REQ-INTRO-010"],
                "no claim to compare" if claimed is None else f"claim {claimed!r} needs a Level 2 run to verify",
            )
            return
        measured = 2 if self.report.level2_met else 1 if self.report.level1_met else 0
        want = int(claimed[-1])
        st = PASS if measured >= want else WARN
        self.add(
            "IF-11",
            "The claimed _protocol.conformance level is what the suite measures",
            INTROSPECTION,
            st,
            ["REQ-CONF-004", "REQ-INTRO-010"],
            f"the server claims {claimed}; measured Level {measured}" if self.level >= 2 or want == 1 else "",
        )

    def exchanges_by_args(self, args: list[dict[str, Any]]) -> list[Exchange]:
        return [ex for ex in self.exchanges if ex.arguments in args]

    async def jsonrpc_probes(self) -> None:
        tool = self.intro_tool or ""
        for args in (
            {},
            {"operation": 42},
            {"operation": "introspect", "params": "not-an-object"},
            {"operation": "introspect", "params": {"query": "mcpaql_conformance_bad_query"}},
        ):
            await self.call(tool, args)

    # ---- evidence ---------------------------------------------------------------------------------

    def finish_bundle(self) -> None:
        b = self.bundle
        b["accepted_parameters"] = {op: sorted(v) for op, v in self.accepted.items()}
        caps = b.setdefault("capabilities", {})
        caps.setdefault("field_selection", False)
        caps.setdefault("batch_operations", False)
        modes = []
        if "semantic" in self.report.modes:
            fams = set(self.family_tools)
            modes.append("crude" if fams <= {"create", "read", "update", "delete", "execute"} else "semantic")
        if "single" in self.report.modes:
            modes.append("single")
        if getattr(self, "declared_both_modes", False):  # one mode served, both declared (L2-1 PASS)
            if not {"crude", "semantic"} & set(modes):
                modes.insert(0, "crude")  # the semantic families mcpaql serves are the CRUDE ones
            if "single" not in modes:
                modes.append("single")
        b["endpoint_modes"] = modes
        b["introspection"] = {
            "operations_list": self.ops_env,
            "types_list": self.types_env,
            "operation_details": [self.details[o["name"]] for o in self.ops if o.get("name") in self.details],
        }
        # representative errors: the first missing/unknown rejection of each kind
        for case in itertools.islice(
            (
                c
                for c in b["parameter_tests"]["missing_required"]
                if c["response"] and c["response"].get("success") is False and c["operation"] != "introspect"
            ),
            2,
        ):
            b["error_tests"].append(
                {
                    "name": f"{case['operation']}-missing-{case['parameter']}",
                    "must_mention": [case["parameter"]],
                    "response": case["response"],
                }
            )
        for case in itertools.islice(
            (c for c in b["parameter_tests"]["unknown_parameter"] if c["response"] and c["response"].get("success") is False), 2
        ):
            b["error_tests"].append(
                {
                    "name": f"{case['operation']}-unknown-parameter",
                    "must_mention": [case["parameter"]],
                    "response": case["response"],
                }
            )
        nf = next((ex for ex in self.exchanges if ex.code == "NOT_FOUND_OPERATION"), None)
        if nf is not None:
            b["error_tests"].append(
                {"name": "unknown-operation", "must_mention": ["mcpaql_conformance_no_such_operation"], "response": nf.envelope}
            )


_MISSING = object()


def _get(record: dict[str, Any], dotted: str) -> Any:
    cur: Any = record
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _flatten_submitted(params: dict[str, Any], pinfo: list[dict[str, Any]]) -> dict[str, Any]:
    """Fields a create submitted, as dot paths into the record: scalars, and the keys of `input`."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if k.startswith("_"):
            continue
        if k == "input" and isinstance(v, dict):
            for ik, iv in v.items():
                if not isinstance(iv, dict):
                    out[ik] = iv
        elif not isinstance(v, dict):
            out[k] = v
    return out


def _record_path(data: Any, hint: str | None) -> list[str]:
    if isinstance(data, dict):
        if hint and isinstance(data.get(hint), dict):
            return [hint]
        if len(data) == 1 and isinstance(next(iter(data.values())), dict):
            return [next(iter(data))]
    return []


def _strip_volatile(data: Any) -> Any:
    if isinstance(data, dict):
        return {
            k: _strip_volatile(v)
            for k, v in data.items()
            if k not in ("_meta", "request_id", "duration_ms", "generated_at", "session_id")
        }
    if isinstance(data, list):
        return [_strip_volatile(v) for v in data]
    return data


def _find_value_path(env: Any, name: str, value: Any, path: tuple[str, ...] = ()) -> str | None:
    """A dot path in ``env`` whose last segment is ``name`` and whose value is ``value`` (outside item lists)."""
    if isinstance(env, dict):
        for k, v in env.items():
            if k == name and v == value and not isinstance(v, dict | list):
                return _dot((*path, k))
            if isinstance(v, dict):
                found = _find_value_path(v, name, value, (*path, k))
                if found:
                    return found
    return None


def _loopback(value: Any) -> Any:
    """``value`` with every non-loopback URL replaced by the loopback one (server-supplied examples)."""
    if isinstance(value, str):
        return network.LOOPBACK_URL if network.remote_urls(value) else value
    if isinstance(value, dict):
        return {k: _loopback(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_loopback(v) for v in value]
    return value


def _op_of(ex: Exchange) -> str:
    a = ex.arguments if isinstance(ex.arguments, dict) else {}
    return str(a.get("operation") or ("batch" if "operations" in a else "?")) + f"@{ex.tool}"
