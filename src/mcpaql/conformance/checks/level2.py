"""Level 2: both endpoint modes, field selection and batch operations."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import LEVEL2
from ..support import PASS, WARN, _records, _records_at
from ..values import CannotBuild, is_id_like

if TYPE_CHECKING:
    from ..suite import Suite


async def check_level2(suite: Suite) -> None:
    modes = suite.report.modes
    both = "semantic" in modes and "single" in modes
    proto = ((suite.ops_env or {}).get("data") or {}).get("_protocol") or {}
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
        suite.declared_both_modes = True  # the evidence documents both (EVIDENCE-FORMAT: endpoint_modes)
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
    suite.add(
        "L2-1",
        "Both endpoint modes (semantic and single) are supported",
        LEVEL2,
        status,
        ["REQ-CONF-002", "REQ-MODE-002", "Part F #10", "Part F #23"],
        msg,
    )
    await check_field_selection(suite, proto)
    await check_batch(suite, proto)


async def check_field_selection(suite: Suite, proto: dict[str, Any]) -> None:
    reads = [
        o["name"]
        for o in suite.ops
        if o.get("semantic_category") == "READ"
        and o.get("name") in suite.details
        and any(p["name"] == "fields" for p in suite.params_of(o["name"]))
    ]
    reads.sort(key=lambda n: sum(1 for p in suite.params_of(n) if p.get("required")))  # collections first
    cap = (proto.get("capabilities") or {}).get("field_selection")
    if not reads:
        suite.add(
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
            base = await suite.build_params(op, ids={suite.fixture["id_param"]: suite.fixture["id"]} if suite.fixture else None)
        except CannotBuild:
            continue
        reason = suite.network_reason(op, base)
        if reason:
            suite.hold(reason)
            tried.append(f"{reason} (not called without --allow-network)")
            continue
        full = await suite.op(op, base)
        if full.upstream_rejected:
            upstream.append(f"{op}: {full.code}: {full.message[:120]}")
            continue
        recs, under = _records_at(full.data) if full.ok else ([], None)
        keys = [k for k in (recs[0] if recs else {}) if not k.startswith("_") and not is_id_like(k)]
        if not keys:
            tried.append(f"{op}: no records to select from")
            continue
        pick = path = keys[0]
        sel = await suite.op(op, {**base, "fields": [path]})
        if under is not None and sel.code == "VALIDATION_INVALID_VALUE":
            # Records found inside a container object (``{"entities": [...]}``): a server whose
            # paths are relative to the whole result (wrapped READ operations) names the field
            # through its container, as FS dot notation does.
            path = f"{under}.{pick}"
            sel = await suite.op(op, {**base, "fields": [path]})
        if sel.upstream_rejected:
            upstream.append(f"{op} with fields=[{path!r}]: {sel.code}: {sel.message[:120]}")
            continue
        srecs = _records(sel.data) if sel.ok else []
        extra = sorted({k for r in srecs for k in r if k != pick and not is_id_like(k) and not k.startswith("_")})
        if not sel.ok:
            suite.add(
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
            suite.add(
                "L2-2",
                "Field selection (`fields`) on READ operations",
                LEVEL2,
                WARN,
                ["REQ-FSEL-011"],
                f"{op} with fields=[{path!r}] returned other fields too: {', '.join(extra[:8])}",
                [sel],
            )
            return
        suite.bundle.setdefault("capabilities", {})["field_selection"] = True
        suite.add(
            "L2-2",
            "Field selection (`fields`) on READ operations",
            LEVEL2,
            PASS,
            ["REQ-FSEL-002", "REQ-FSEL-011"],
            f"{op} with fields=[{path!r}] returned only that field ({len(srecs)} record(s))",
            upstream_rejected=upstream,
        )
        return
    suite.add(
        "L2-2",
        "Field selection (`fields`) on READ operations",
        LEVEL2,
        WARN,
        ["REQ-FSEL-002"],
        "could not observe field selection: "
        + ("; ".join(tried + [f"{u.split(':')[0]}: rejected by the upstream" for u in upstream]) or "no request could be built"),
        upstream_rejected=upstream,
    )


async def check_batch(suite: Suite, proto: dict[str, Any]) -> None:
    tool = suite.intro_tool or ""
    req = {
        "operations": [
            {"operation": "introspect", "params": {"query": "types"}},
            {"operation": "mcpaql_conformance_no_such_operation", "params": {}},
        ]
    }
    ex = await suite.call(tool, req)
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
        probs += suite.v.problems("operation_result", env)
    if not probs:
        suite.bundle["batch_example"] = ex.envelope
        suite.bundle.setdefault("capabilities", {})["batch_operations"] = True
    suite.add(
        "L2-3",
        "Batch operations run in order with individual results",
        LEVEL2,
        WARN if probs else PASS,
        ["REQ-BATCH-002", "REQ-BATCH-004", "REQ-BATCH-005", "REQ-BATCH-006", "REQ-BATCH-007"],
        "; ".join(probs[:5]) or "a two-item batch (one failing) returned both results and a correct summary",
        [ex] if probs else [],
    )
