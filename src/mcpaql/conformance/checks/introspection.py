"""Introspection: the operation list, each operation's detail and the type details (§3 INTROSPECTION)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import INTROSPECTION, Exchange
from ..schemas import VERSION_RE
from ..support import FAIL, PASS, SKIP, WARN

if TYPE_CHECKING:
    from ..suite import Suite


async def check_introspection(suite: Suite) -> None:
    v = suite.v
    env = suite.ops_env or {}
    probs = v.problems("OperationsListData", env.get("data"))
    suite.add(
        "IF-1",
        "Operations list is implemented and schema-valid",
        INTROSPECTION,
        FAIL if probs else PASS,
        ["REQ-INTRO-005", "REQ-INTRO-006", "REQ-INTRO-007"],
        "; ".join(probs) or f"{len(suite.ops)} operations listed",
        [find_exchange(suite, "introspect", {"query": "operations"})],
    )
    tenv = suite.types_env or {}
    tprobs = ["types query failed"] if tenv.get("success") is not True else v.problems("TypesListData", tenv.get("data"))
    types = [t for t in ((tenv.get("data") or {}).get("types") or []) if isinstance(t, dict)] if tprobs == [] else []
    suite.add(
        "IF-2",
        "Types list is implemented and schema-valid",
        INTROSPECTION,
        FAIL if tprobs else PASS,
        ["REQ-INTRO-017", "REQ-INTRO-019"],
        "; ".join(tprobs) or f"{len(types)} types listed",
        [find_exchange(suite, "introspect", {"query": "types"})],
    )

    # reused by the loops below: name is later an untrusted types-list entry, d a detail that may be null
    name: Any
    d: dict[str, Any] | None
    bad, missing = [], [o.get("name") for o in suite.ops if o.get("name") not in suite.details]
    for name, d in suite.details.items():
        p = v.problems("OperationDetails", d)
        if p:
            bad.append(f"{name}: {'; '.join(p[:3])}")
    env_bad = []
    for name, e in suite.detail_envs.items():
        p = v.problems("introspection_response", e)
        if p:
            env_bad.append(f"{name}: {'; '.join(p[:2])}")
    msg = []
    if missing:
        msg.append(f"no detail for: {', '.join(map(str, missing))}")
    msg += bad
    if env_bad and not bad:
        msg.append("envelope: " + " | ".join(env_bad))
    suite.add(
        "IF-3",
        "Operation details are complete and schema-valid (no extra keys)",
        INTROSPECTION,
        FAIL if msg else PASS,
        ["REQ-INTRO-013", "REQ-INTRO-014", "REQ-INTRO-015", "REQ-INTRO-020"],
        " | ".join(msg) or f"{len(suite.details)} operation details validate",
        [find_exchange(suite, "introspect", {"query": "operations", "name": n.split(":")[0]}) for n in (bad or env_bad)[:3]],
    )

    proto = (env.get("data") or {}).get("_protocol") if isinstance(env.get("data"), dict) else None
    if not isinstance(proto, dict) or not isinstance(proto.get("version"), str) or not VERSION_RE.match(proto["version"]):
        suite.add(
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
        suite.add(
            "IF-6",
            "_protocol metadata with a semver version",
            INTROSPECTION,
            WARN if w else PASS,
            ["REQ-INTRO-008", "REQ-INTRO-009", "REQ-INTRO-010"],
            f"_protocol.version {proto['version']}" + (f"; missing/invalid SHOULD keys: {', '.join(w)}" if w else ""),
        )

    nx_op = await suite.op(
        "introspect", {"query": "operations", "name": "mcpaql_conformance_no_such_operation"}, tool=suite.intro_tool
    )
    nx_ty = await suite.op("introspect", {"query": "types", "name": "McpaqlConformanceNoSuchType"}, tool=suite.intro_tool)
    ok = (nx_op.ok and nx_op.data == {"operation": None}) and (nx_ty.ok and nx_ty.data == {"type": None})
    suite.add(
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
        d = await suite.type_detail(name)
        if d is None:
            type_bad.append(f"{name}: listed but its detail is null")
            continue
        p = v.problems("TypeDetails", d)
        if p:
            type_bad.append(f"{name}: {'; '.join(p[:2])}")
        elif d.get("name") != name or d.get("kind") != t.get("kind"):
            type_bad.append(f"{name}: detail name/kind differ from the list")
    suite.add(
        "IF-8",
        "Type details validate and agree with the types list",
        INTROSPECTION,
        FAIL if type_bad else (PASS if types else SKIP),
        ["REQ-INTRO-018", "REQ-INTRO-023"],
        " | ".join(type_bad[:6]) or (f"{len(types)} type details validate" if types else "no types listed"),
    )

    intro = next((o for o in suite.ops if o.get("name") == "introspect"), None)
    if intro is None:
        suite.add(
            "IF-9",
            "introspect is listed as a READ operation",
            INTROSPECTION,
            WARN,
            ["REQ-INTRO-002", "REQ-INTRO-025"],
            "introspect answers but does not appear in its own operations list (INTRO §8.2(7) SHOULD)",
        )
    else:
        ok = intro.get("semantic_category") == "READ"
        suite.add(
            "IF-9",
            "introspect is listed as a READ operation",
            INTROSPECTION,
            PASS if ok else FAIL,
            ["REQ-INTRO-002", "REQ-INTRO-025"],
            f"introspect is {intro.get('semantic_category')} on '{intro.get('endpoint')}'",
        )

    tool_names = {t["name"] for t in suite.aql_tools}
    incons = []
    for o in suite.ops:
        d = suite.details.get(str(o.get("name")))
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
    suite.add(
        "IF-10",
        "List, detail, mcpTool and permissions agree",
        INTROSPECTION,
        FAIL if incons else PASS,
        ["REQ-MODE-008", "REQ-MODE-027", "REQ-MCP-007", "REQ-INTRO-023"],
        " | ".join(incons[:6]) or "every operation's category, endpoint, tool and permissions are consistent",
    )

    if suite.v.available:
        envs = [e for e in (suite.ops_env, suite.types_env) if e] + list(suite.detail_envs.values())
        bad_envs = [p for e in envs for p in suite.v.problems("introspection_response", e)]
        suite.add(
            "IF-0",
            "Introspection envelopes validate against introspection-response.schema.json",
            INTROSPECTION,
            FAIL if bad_envs else PASS,
            ["REQ-RSP-011", "REQ-INTRO-020"],
            "; ".join(bad_envs[:4]) or f"{len(envs)} introspection responses validate (schemas from {suite.v.directory})",
        )
    else:
        suite.add(
            "IF-0",
            "Introspection envelopes validate against introspection-response.schema.json",
            INTROSPECTION,
            SKIP,
            ["REQ-RSP-011"],
            "spec schemas not found (set MCPAQL_SPEC_SCHEMAS); structural models from CHECKLIST Part C were used instead",
        )


def find_exchange(suite: Suite, op: str, params: dict[str, Any]) -> Exchange:
    for ex in suite.exchanges:
        a = ex.arguments if isinstance(ex.arguments, dict) else {}
        if a.get("operation") == op and a.get("params") == params:
            return ex
    return Exchange("", {"operation": op, "params": params}, kind="transport_error", rpc_message="not sent")
