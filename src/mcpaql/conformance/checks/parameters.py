"""Parameters: missing, unknown and wrong-typed parameters, completeness and defaults (§3 PARAMETERS)."""

from __future__ import annotations

import contextlib
import json
from typing import TYPE_CHECKING, Any

from ..model import INTROSPECTION, PARAMETERS, Exchange
from ..support import FAIL, PASS, SKIP, SNAKE_RE, WARN, _find_value_path, _mentions, _strip_volatile
from ..values import CROSS_CUTTING, MISSING_ID, UNKNOWN_PARAM, CannotBuild, build_value, is_id_like, wrong_value

if TYPE_CHECKING:
    from ..suite import Suite


def probe_kind(suite: Suite, op: str) -> str:
    cat = suite.category(op)
    if cat == "READ":
        return "read"
    if suite.read_only and cat in ("CREATE", "EXECUTE"):
        return "untargeted"  # an id might be the new record's own key: send nothing that could act
    if any(is_id_like(p["name"]) and p.get("required") for p in suite.params_of(op)):
        return "targeted"  # nonexistent ids: nothing to act on even if the server misbehaves
    return "untargeted"  # nothing that could act: no ids to make the probe inert


async def check_parameters(suite: Suite) -> None:
    ops = [o["name"] for o in suite.ops if isinstance(o.get("name"), str) and o["name"] in suite.details]
    # PH-4 snake_case
    bad = [f"{op}.{p['name']}" for op in ops for p in suite.params_of(op) if not SNAKE_RE.match(p["name"])]
    bad += [op for op in ops if not SNAKE_RE.match(op)]
    suite.add(
        "PH-4",
        "Operation and parameter names are snake_case",
        PARAMETERS,
        FAIL if bad else PASS,
        ["REQ-VAL-001", "REQ-CLS-005"],
        f"not snake_case: {', '.join(bad)}" if bad else "all names snake_case",
    )

    missing_fail, missing_evid, missing_skip = [], [], []
    unknown_fail: list[str] = []
    unknown_warn: list[str] = []
    unknown_evid: list[Exchange] = []
    unknown_skip: list[str] = []
    wrong_fail: list[str] = []
    wrong_warn: list[str] = []
    wrong_evid: list[Exchange] = []
    accuracy_fail, accuracy_evid, accuracy_ok, accuracy_upstream = [], [], [], []
    for op in ops:
        params = suite.params_of(op)
        kind = probe_kind(suite, op)
        try:
            base = await suite.build_params(op, probe=True) if kind != "untargeted" else None
        except CannotBuild as e:
            base = None
            missing_skip.append(f"{op} ({e})")
        # IF-5 parameter accuracy: READ requests built from introspection alone
        reason = suite.network_reason(op, base) if kind == "read" and base is not None else None
        if reason:
            suite.hold(reason)
        elif kind == "read" and base is not None:
            ex = await suite.op(op, base)
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
            elif suite.category(op) == "CREATE" and not suite.read_only and op in suite.cleanable():
                # the other required params valid: a conformant server still refuses; anything a
                # misbehaving one creates is deleted again (cleanup_accidental)
                try:
                    probe = await suite.build_params(op)
                except CannotBuild:
                    probe = {}
            # EXECUTE (and CREATE under --read-only): only the empty request is safe; it still
            # names one missing parameter
            probe.pop(p["name"], None)
            ex = await suite.op(op, probe)
            if ex.kind == "held_back":
                continue
            suite.bundle["parameter_tests"]["missing_required"].append(
                {"operation": op, "parameter": p["name"], "response": ex.envelope}
            )
            if ex.ok:
                missing_fail.append(f"{op} succeeded without '{p['name']}'")
                missing_evid.append(ex)
                await suite.cleanup_accidental(op, ex)
            elif ex.envelope is None:
                missing_fail.append(f"{op} without '{p['name']}': no envelope ({ex.kind})")
                missing_evid.append(ex)
            elif not _mentions(ex.message, p["name"]):
                if probe == {} and any(_mentions(ex.message, q["name"]) for q in params if q.get("required")):
                    continue  # the empty probe names another missing parameter first
                missing_fail.append(f"{op} without '{p['name']}': message does not name it ({ex.message[:100]!r})")
                missing_evid.append(ex)
        # PH-2 unknown parameter + IF-4 accepted parameters
        await probe_unknown(suite, op, kind, base, unknown_fail, unknown_warn, unknown_evid, unknown_skip)
        # PH-5 wrong type
        await probe_wrong_type(suite, op, kind, base, wrong_fail, wrong_warn, wrong_evid)

    suite.add(
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
    suite.add(
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
    suite.add(
        "PH-5",
        "Wrong-typed parameters are rejected",
        PARAMETERS,
        FAIL if wrong_fail else WARN if wrong_warn else PASS,
        ["REQ-VAL-006", "REQ-RSP-015"],
        "; ".join((wrong_fail + wrong_warn)[:6]) or "wrong types rejected with the parameter named",
        wrong_evid,
    )
    held = [h for h in suite.held_back if h.split(":")[0] in ops]
    suite.add(
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
    await check_completeness(suite, ops)
    await check_defaults(suite, ops)


async def probe_unknown(
    suite: Suite,
    op: str,
    kind: str,
    base: dict[str, Any] | None,
    fails: list[str],
    warns: list[str],
    evid: list[Exchange],
    skipped: list[str],
) -> None:
    params = suite.params_of(op)
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
                    probe[p["name"]] = build_value(p, suite.lookup, optional=True)
        probe[UNKNOWN_PARAM] = 1
    ex = await suite.op(op, probe)
    if ex.kind == "held_back":
        skipped.append(f"{op} ({ex.rpc_message})")
        return
    suite.bundle["parameter_tests"]["unknown_parameter"].append(
        {"operation": op, "parameter": UNKNOWN_PARAM, "response": ex.envelope}
    )
    unknown_listed = unknown_list(ex)
    if ex.ok:
        if ex.envelope and ex.envelope.get("warnings"):
            fails.append(f"{op}: unknown parameter accepted with a warning (CORE §4.6 requires rejection; Part F #1)")
        else:
            fails.append(f"{op}: unknown parameter silently ignored")
        evid.append(ex)
        await suite.cleanup_accidental(op, ex)
        return
    if ex.envelope is None:
        fails.append(f"{op}: no envelope for an unknown parameter ({ex.kind})")
        evid.append(ex)
        return
    if UNKNOWN_PARAM in unknown_listed or _mentions(ex.message, UNKNOWN_PARAM):
        acc = suite.accepted.setdefault(op, set())
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
            cex = await suite.op(op, cprobe)
            listed = unknown_list(cex)
            if cex.envelope and cex.envelope.get("success") is False and UNKNOWN_PARAM in listed:
                sneaky = [c for c in extra if c not in listed]
                if sneaky:  # rejected only the probe name: the undocumented names were taken
                    suite.accepted.setdefault(op, set()).update(sneaky)
        if kind == "untargeted":
            suite.accepted.setdefault(op, set())
            # documented names: a second rejected probe carrying them, all at null (cannot act)
            dprobe = {p["name"]: None for p in params} | {UNKNOWN_PARAM: 1}
            dex = await suite.op(op, dprobe)
            listed = unknown_list(dex)
            if dex.envelope and dex.envelope.get("success") is False and UNKNOWN_PARAM in listed:
                suite.accepted[op].update(n for n in documented if n not in listed)
            elif dex.ok:
                await suite.cleanup_accidental(op, dex)
        return
    # rejected, but not for the unknown parameter (e.g. a missing-parameter error first)
    if kind == "untargeted" and ex.code == "VALIDATION_MISSING_PARAM":
        if suite.read_only or suite.category(op) != "CREATE" or op not in suite.cleanable():
            skipped.append(f"{op} (rejected for a missing parameter first; probing further could act)")
            return
        try:
            valid = await suite.build_params(op, optional=False)
        except CannotBuild as e:
            skipped.append(f"{op} ({e})")
            return
        ex2 = await suite.op(op, {**valid, UNKNOWN_PARAM: 1})
        if ex2.ok:
            fails.append(f"{op}: unknown parameter silently ignored (the create succeeded)")
            evid.append(ex2)
            await suite.cleanup_accidental(op, ex2)
        elif UNKNOWN_PARAM in unknown_list(ex2) or _mentions(ex2.message, UNKNOWN_PARAM):
            warns.append(f"{op}: required parameters are checked before unknown ones (REQ-VAL-012 order)")
            evid.append(ex)
        else:
            fails.append(f"{op}: unknown parameter not named in the error ({ex2.code}: {ex2.message[:100]!r})")
            evid.append(ex2)
        return
    fails.append(f"{op}: unknown parameter not named in the error ({ex.code}: {ex.message[:100]!r})")
    evid.append(ex)


def unknown_list(ex: Exchange) -> list[str]:
    d = ex.error.get("details")
    lst = d.get("unknown_params") if isinstance(d, dict) else None
    return [str(x) for x in lst] if isinstance(lst, list) else []


async def probe_wrong_type(
    suite: Suite, op: str, kind: str, base: dict[str, Any] | None, fails: list[str], warns: list[str], evid: list[Exchange]
) -> None:
    params = suite.params_of(op)
    if kind == "untargeted" or base is None:
        return  # a valid base would act (create/execute): covered by the round trip's own record
    for p in params:
        if is_id_like(p["name"]) and kind == "targeted":
            continue
        bad = wrong_value(p)
        if bad is None:
            continue
        ex = await suite.op(op, {**base, p["name"]: bad})
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
            suite.bundle["error_tests"].append(
                {"name": f"{op}-wrong-type-{p['name']}", "must_mention": [p["name"]], "response": ex.envelope}
            )
        break  # one wrong-typed parameter per operation


async def check_completeness(suite: Suite, ops: list[str]) -> None:
    fails, warns = [], []
    for op in ops:
        documented = {p["name"] for p in suite.params_of(op)}
        acc = suite.accepted.get(op)
        if acc is None:
            continue
        undocumented = sorted(acc - documented)
        if undocumented:
            fails.append(f"{op} accepts undocumented {', '.join(undocumented)}")
        not_acc = sorted(documented - acc)
        if not_acc:
            warns.append(f"{op} documents {', '.join(not_acc)} but rejected it as unknown")
    probed = len(suite.accepted)
    suite.add(
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


async def check_defaults(suite: Suite, ops: list[str]) -> None:
    checked, fails, evid, upstream = 0, [], [], []
    for op in ops:
        if probe_kind(suite, op) != "read":
            continue
        defaults = [p for p in suite.params_of(op) if not p.get("required") and "default" in p]
        if not defaults:
            continue
        try:
            base = await suite.build_params(op)
        except CannotBuild:
            continue
        for p in defaults[:3]:
            reason = suite.network_reason(op, {**base, p["name"]: p["default"]})
            if reason:
                suite.hold(reason)
                break
            a = await suite.op(op, {k: v for k, v in base.items() if k != p["name"]})
            b = await suite.op(op, {**base, p["name"]: p["default"]})
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
                suite.bundle["parameter_tests"]["optional_defaults"].append(
                    {
                        "operation": op,
                        "parameter": p["name"],
                        "expected_value_path": path,
                        "expected_value": p["default"],
                        "response": a.envelope,
                    }
                )
    suite.add(
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
