"""Result model of the live conformance suite: exchanges (what was sent, what came back),
check results (PASS/FAIL/WARN/SKIP with a CHECKLIST ID and evidence) and the report.

Level rules (CONF §2, CORE §10.1, CHECKLIST Part F #23): Level 1 is met when no check of a
MUST category failed; Level 2 additionally needs every Level 2 feature check (both endpoint
modes, field selection, batch) to pass. SHOULD categories only ever WARN.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class Status(StrEnum):
    PASS = "PASS"
    FAIL = "FAIL"
    WARN = "WARN"
    SKIP = "SKIP"


@dataclass(frozen=True, slots=True)
class Category:
    key: str
    name: str
    required: bool  # MUST PASS (Level 1) vs SHOULD PASS (Level 2)
    level: int


MCP = Category("mcp", "MCP Integration", True, 1)
INTROSPECTION = Category("introspection", "Introspection Fidelity", True, 1)
ROUTING = Category("routing", "Endpoint Routing", True, 1)
PARAMETERS = Category("parameters", "Parameter Handling", True, 1)
ERRORS = Category("errors", "Error Quality", True, 1)
ROUND_TRIP = Category("round_trip", "Round-Trip Integrity", True, 1)
LEVEL2 = Category("level2", "Level 2 Features", False, 2)
CONSTRAINTS = Category("constraints", "Constraint Documentation", False, 2)
SEMANTIC = Category("semantic", "Semantic Evaluation", False, 2)
CATEGORIES: tuple[Category, ...] = (MCP, INTROSPECTION, ROUTING, PARAMETERS, ERRORS, ROUND_TRIP, LEVEL2, CONSTRAINTS, SEMANTIC)

# ``error.details`` keys that say a failure came from behind the server: the spec's own
# (error-codes.md §4.11 ``http_status``/``upstream_error``) and those wrappers add.
UPSTREAM_DETAIL_KEYS = ("upstream_tool", "upstream_error", "upstream_code", "upstream_status", "http_status")


@dataclass(slots=True)
class Exchange:
    """One ``tools/call``: the request and exactly what came back."""

    tool: str
    arguments: Any
    kind: str = "result"  # result | jsonrpc_error | transport_error | held_back (never sent)
    is_error: bool | None = None
    envelope: dict[str, Any] | None = None  # parsed JSON text content, when it is an object
    text: str | None = None  # raw text content when not JSON
    rpc_code: int | None = None
    rpc_message: str | None = None

    @property
    def ok(self) -> bool:
        return self.envelope is not None and self.envelope.get("success") is True

    @property
    def error(self) -> dict[str, Any]:
        err = (self.envelope or {}).get("error")
        return err if isinstance(err, dict) else {}

    @property
    def code(self) -> str | None:
        c = self.error.get("code")
        return c if isinstance(c, str) else None

    @property
    def message(self) -> str:
        m = self.error.get("message")
        if isinstance(m, str):
            return m
        e = (self.envelope or {}).get("error")
        return e if isinstance(e, str) else ""

    @property
    def data(self) -> Any:
        return (self.envelope or {}).get("data")

    @property
    def upstream_rejected(self) -> bool:
        """A failure the server passed on from what it wraps (an upstream tool or API), as its
        ``error.details`` say — not one of its own protocol errors. A temporarily unavailable
        upstream (``retryable``) is the server's condition, not a verdict on the probe."""
        if self.envelope is None or self.envelope.get("success") is not False:
            return False
        details = self.error.get("details")
        if not isinstance(details, dict) or details.get("retryable") is True:
            return False
        return any(details.get(k) not in (None, "") for k in UPSTREAM_DETAIL_KEYS)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {"tool": self.tool, "arguments": self.arguments}
        if self.kind == "held_back":
            d["response"] = {"held_back": self.rpc_message}
        elif self.kind == "result":
            d["response"] = (
                {"isError": self.is_error, "envelope": self.envelope}
                if self.envelope is not None
                else {
                    "isError": self.is_error,
                    "text": self.text,
                }
            )
        else:
            d["response"] = {"jsonrpc_error": {"code": self.rpc_code, "message": self.rpc_message}, "kind": self.kind}
        return d


@dataclass(slots=True)
class CheckResult:
    id: str
    name: str
    category: Category
    status: Status
    checklist: tuple[str, ...]
    message: str
    evidence: list[Exchange] = field(default_factory=list)
    # probes the upstream behind a wrapping server rejected for its own reasons: neither PASS nor FAIL
    upstream_rejected: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        d: dict[str, Any] = {
            "id": self.id,
            "name": self.name,
            "category": self.category.name,
            "result": self.status.value,
            "checklist": list(self.checklist),
            "detail": self.message,
        }
        if self.status is not Status.PASS and self.evidence:
            d["evidence"] = [e.to_dict() for e in self.evidence[:5]]
        if self.upstream_rejected:
            d["upstreamRejected"] = list(self.upstream_rejected)
        return d


@dataclass(slots=True)
class Report:
    target: str
    requested_level: int
    implementation: str = "unknown"
    version: str | None = None
    spec_version: str = "1.0.0-draft"
    read_only: bool = False
    allow_network: bool = False
    modes: list[str] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)
    results: list[CheckResult] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    evidence_bundle: dict[str, Any] = field(default_factory=dict)
    exchanges: list[Exchange] = field(default_factory=list)  # every call made, in order (not serialized)
    fatal: str | None = None  # connection/discovery failure: nothing could be tested
    # the spec runner's grade of evidence_bundle (mcpaql.conformance.grade.Grade), when schemas were found
    runner: Any = None
    # why a MUST check could not run (a read-only run, records already present): never "MET" then
    unverified: list[str] = field(default_factory=list)

    # ---- aggregation -------------------------------------------------------------------

    def category_status(self, cat: Category) -> Status | None:
        rs = [r.status for r in self.results if r.category is cat]
        if not rs:
            return None
        if Status.FAIL in rs:
            return Status.FAIL if cat.required else Status.WARN
        if Status.WARN in rs:
            return Status.WARN
        if all(s is Status.SKIP for s in rs):
            return Status.SKIP
        return Status.PASS

    @property
    def level1_met(self) -> bool:
        if self.fatal:
            return False
        return not any(r.status is Status.FAIL and r.category.required for r in self.results)

    @property
    def level2_met(self) -> bool:
        l2 = [r for r in self.results if r.category is LEVEL2]
        return self.level1_met and bool(l2) and all(r.status is Status.PASS for r in l2)

    @property
    def achieved_level(self) -> int:
        if not self.level1_met:
            return 0
        return 2 if self.requested_level >= 2 and self.level2_met else 1

    @property
    def met(self) -> bool:
        return self.achieved_level >= self.requested_level

    @property
    def exit_code(self) -> int:
        """0 requested level met; 1 a MUST check failed; 2 Level 1 met but Level 2 not; 3 no connection."""
        if self.fatal:
            return 3
        if self.met:
            return 0
        return 1 if not self.level1_met else 2

    def summary(self) -> dict[str, int]:
        s = {"total": len(self.results), "passed": 0, "warned": 0, "failed": 0, "skipped": 0}
        key = {Status.PASS: "passed", Status.WARN: "warned", Status.FAIL: "failed", Status.SKIP: "skipped"}
        for r in self.results:
            s[key[r.status]] += 1
        return s

    @property
    def upstream_rejections(self) -> int:
        """Calls the wrapped upstream rejected for its own reasons (neutral), each counted once."""
        if self.exchanges:
            return sum(1 for ex in self.exchanges if ex.upstream_rejected)
        return len({line for r in self.results for line in r.upstream_rejected})

    def claim(self) -> str:
        if self.achieved_level == 0:
            return f"Not MCP-AQL conformant (spec {self.spec_version})"
        unverified = ", round trip not verified" if self.unverified else ""
        return f"MCP-AQL Level {self.achieved_level} Conformant (spec {self.spec_version}{unverified})"

    def summary_line(self) -> str:
        s = self.summary()
        verdict = "NOT MET" if not self.met else f"UNVERIFIED ({'; '.join(self.unverified)})" if self.unverified else "MET"
        return (
            f"Level {self.requested_level} {verdict}: {s['passed']} passed, {s['warned']} warned, "
            f"{s['failed']} failed, {s['skipped']} skipped"
            + (f", {self.upstream_rejections} upstream-rejected probe(s) (neutral)" if self.upstream_rejections else "")
            + f" — {self.claim()}"
        )

    def to_dict(self) -> dict[str, Any]:
        """CONF §6.1 report shape, plus the check IDs, checklist references and evidence."""
        cats = []
        for cat in CATEGORIES:
            tests = [r for r in self.results if r.category is cat]
            if not tests:
                continue
            st = self.category_status(cat)
            cats.append(
                {
                    "name": cat.name,
                    "required": cat.required,
                    "result": st.value if st else "SKIP",
                    "tests": [r.to_dict() for r in tests],
                }
            )
        d: dict[str, Any] = {
            "implementation": self.implementation,
            "version": self.version,
            "specVersion": self.spec_version,
            "target": self.target,
            "requestedLevel": self.requested_level,
            "conformanceLevel": self.achieved_level,
            "met": self.met,
            "verified": not self.unverified,
            "unverified": self.unverified,
            "runner": self.runner.to_dict() if self.runner is not None else None,
            "claim": self.claim(),
            "readOnly": self.read_only,
            "allowNetwork": self.allow_network,
            "modes": self.modes,
            "tools": self.tools,
            "summary": self.summary(),
            "upstreamRejections": self.upstream_rejections,
            "categories": cats,
            "notes": self.notes,
            "exitCode": self.exit_code,
        }
        if self.fatal:
            d["fatal"] = self.fatal
        if d["version"] is None:
            del d["version"]
        return d
