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

This module holds :class:`Suite`, the run's shared state and the probe plumbing; the checks are
functions in :mod:`.checks`, one module per phase, run in the order of :data:`.checks.PHASES`.
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
from .checks import PHASES
from .checks.discovery import discover
from .model import Category, CheckResult, Exchange, Report, Status
from .schemas import Validators
from .support import CALL_TIMEOUT, _loopback, _op_of, _record, _resource, _singular
from .values import MISSING_ID, TAG, CannotBuild, build_from_type, build_value, is_id_like


class Suite:
    """One run against one server: what it found and observed (tools, introspection, exchanges,
    records it created, the evidence bundle) and how it probes (``call``, ``op``, ``build_params``,
    the network and clean-up rules). The checks in :mod:`.checks` read and extend this state."""

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
        self.declared_both_modes = False  # one mode served, both declared in _protocol (set by L2-1)
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
        """Discover the MCP-AQL tools, then run every phase of :data:`.checks.PHASES` in order
        (later phases grade what earlier ones observed), and always clean up what the run created."""
        try:
            if not await discover(self):
                return
            for phase in PHASES:
                done = phase(self)
                if done is not None:
                    await done
        finally:
            await self.cleanup()
            self.finish_bundle()

    def cleanable(self) -> set[str]:
        """Operations of element types the suite can clean up after: create, read and delete all exist."""
        if self._cleanable is None:
            self._cleanable = {e[k] for e in self.element_types() if e["delete"] for k in ("create", "update", "delete") if e[k]}
        return self._cleanable

    # ---- records the run creates and must clean up -----------------------------------------------------------------------------

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

    def id_param(self, op: str) -> str | None:
        req = [p["name"] for p in self.params_of(op) if p.get("required")]
        ids = [n for n in req if is_id_like(n)]
        return ids[0] if ids else (req[0] if len(req) == 1 else None)

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
        if self.declared_both_modes:  # one mode served, both declared (L2-1 PASS)
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
