"""Round trip: create, read back, update (keeping what was not sent) and delete a record of each
element type (§3 ROUND_TRIP)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..model import CONSTRAINTS, ROUND_TRIP, Category, Exchange, Status
from ..support import (
    _MISSING,
    FAIL,
    PASS,
    READ_ONLY_FIELD_CANDIDATES,
    SKIP,
    WARN,
    _flatten_submitted,
    _get,
    _record,
    _record_path,
)
from ..values import TAG, CannotBuild, is_id_like

if TYPE_CHECKING:
    from ..suite import Suite

# (status, message, evidence) rows per element type; emit() turns each list into one check result
_Rows = list[tuple[Status, str, list[Exchange]]]


async def check_round_trip(suite: Suite) -> None:
    names = (
        ("RT-1", "Create → read returns the submitted fields"),
        ("RT-2", "Update preserves non-targeted fields"),
        ("RT-3", "Delete removes the record it created"),
    )
    if suite.read_only:
        for cid, n in names:
            suite.add(cid, n, ROUND_TRIP, SKIP, ["REQ-CONF-013"], "--read-only: mutating tests skipped")
        suite.add("CD-1", "Read-only fields are protected and documented", CONSTRAINTS, SKIP, ["REQ-CONF-014"], "--read-only")
        suite.add("CD-2", "Append-only data is protected and documented", CONSTRAINTS, SKIP, ["REQ-CONF-014"], "--read-only")
        return
    all_elems = suite.element_types()
    elems = [e for e in all_elems if e["delete"]]  # create only what the suite can delete again
    if not elems:
        why = (
            "no element type with a create_X, get_X and delete_X operation: the suite creates only what it can delete"
            if all_elems
            else "no element type with both a CREATE (create_X) and a READ (get_X) operation was found"
        )
        for cid, n in names:
            suite.add(
                cid,
                n,
                ROUND_TRIP,
                SKIP,
                ["REQ-CONF-013"],
                why,
            )
        suite.add("CD-1", "Read-only fields are protected and documented", CONSTRAINTS, SKIP, ["REQ-CONF-014"], "no element type")
        suite.add("CD-2", "Append-only data is protected and documented", CONSTRAINTS, SKIP, ["REQ-CONF-014"], "no element type")
        return
    rt1: _Rows = []
    rt2: _Rows = []
    rt3: _Rows = []
    cd1: _Rows = []
    # independent element types first, so dependents can reference a record this run created
    elems.sort(key=lambda e: sum(1 for p in suite.params_of(e["create"]) if p.get("required") and is_id_like(p["name"])))
    done: list[tuple[dict[str, str], str, Any]] = []
    for el in elems[:4]:
        made = await round_trip(suite, el, rt1, rt2, cd1)
        if made is not None:
            done.append((el, *made))
    for el, id_param, rid in reversed(done):  # children before parents
        await delete_created(suite, el, id_param, rid, rt3)

    def emit(cid: str, name: str, cat: Category, rs: _Rows, checklist: list[str]) -> None:
        if not rs:
            suite.add(cid, name, cat, SKIP, checklist, "not reached")
            return
        order = [FAIL, WARN, PASS, SKIP]
        st = min((r[0] for r in rs), key=order.index)
        upstream = [r[1] for r in rs if any(e.upstream_rejected for e in r[2])]
        evidence = [e for r in rs for e in r[2] if not e.upstream_rejected]
        suite.add(cid, name, cat, st, checklist, "; ".join(r[1] for r in rs), evidence, upstream)

    emit("RT-1", names[0][1], ROUND_TRIP, rt1, ["REQ-CONF-013", "CONF §3.4"])
    emit("RT-2", names[1][1], ROUND_TRIP, rt2, ["REQ-UPD-001", "CONF §3.4"])
    emit("RT-3", names[2][1], ROUND_TRIP, rt3, ["CONF §3.4"])
    emit("CD-1", "Read-only fields are protected and documented", CONSTRAINTS, cd1, ["REQ-CONF-014", "REQ-INTRO-029"])
    suite.add(
        "CD-2",
        "Append-only data is protected and documented",
        CONSTRAINTS,
        SKIP,
        ["REQ-CONF-014"],
        "no operation documents append-only data"
        if not any("append-only" in str(d.get("description", "")).lower() for d in suite.details.values())
        else "append-only data is documented, but a generic probe cannot tell which update would violate it",
    )


async def round_trip(suite: Suite, el: dict[str, str], rt1: _Rows, rt2: _Rows, cd1: _Rows) -> tuple[str, Any] | None:
    res, create, get = el["res"], el["create"], el["get"]
    id_param = suite.id_param(get)
    if id_param is None:
        rt1.append((SKIP, f"{get}: cannot tell which parameter identifies the record", []))
        return None
    seed = f"{TAG}-{suite.run_id}"
    attempts = []
    for optional in (True, False):
        try:
            attempts.append(await suite.build_params(create, optional=optional, seed=seed))
        except CannotBuild as e:
            if not optional:
                rt1.append((SKIP, f"{create}: cannot build a valid create request from introspection ({e})", []))
                return None
    ex = None
    params: dict[str, Any] = {}
    for params in attempts:
        reason = suite.network_reason(create, params)
        if reason:
            suite.hold(reason)
            rt1.append((SKIP, f"{reason}; not called without --allow-network", []))
            return None
        ex = await suite.op(create, params)
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
                f"{create}: the created record does not return '{id_param}', so it cannot be read back (and was not cleaned up)",
                [ex],
            )
        )
        return None
    if el["delete"]:
        dparam = suite.id_param(el["delete"]) or id_param
        suite.created.append((el["delete"], {dparam: rid}))
    suite.live_ids[id_param] = rid
    rd = await suite.op(get, {id_param: rid})
    record = _record(rd.data, res) if rd.ok else None
    if record is None:
        rt1.append((FAIL, f"{get}({id_param}={rid!r}) failed after {create}: {rd.code}: {rd.message[:120]}", [ex, rd]))
        return None
    submitted = _flatten_submitted(params, suite.params_of(create))
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
    suite.bundle["round_trip_tests"].append(
        {"name": f"{res}-create-read", "expected_fields": expected, "read_response": rd.envelope}
    )
    if changed:
        rt1.append((FAIL, f"{res}: values changed on the way through: {'; '.join(changed)}", [ex, rd]))
    elif dropped:
        rt1.append((WARN, f"{res}: submitted but not visible on read: {', '.join(dropped)}", [ex, rd]))
    else:
        rt1.append((PASS, f"{res}: {len(expected)} submitted field(s) read back unchanged", []))
    suite.fixture = suite.fixture or {"res": res, "get": get, "id_param": id_param, "id": rid, "record": record}

    # RT-2: update one field, read back, compare the rest
    upd = el["update"]
    if not upd:
        rt2.append((SKIP, f"{res}: no update operation", []))
    else:
        await update_preservation(suite, res, upd, get, id_param, rid, record, rt2, cd1)
    return id_param, rid


async def delete_created(suite: Suite, el: dict[str, str], id_param: str, rid: Any, rt3: _Rows) -> None:
    res, get = el["res"], el["get"]
    suite.live_ids = {k: v for k, v in suite.live_ids.items() if v != rid}
    if el["delete"]:
        dparam = suite.id_param(el["delete"]) or id_param
        dex = await suite.delete(el["delete"], {dparam: rid})
        after = await suite.op(get, {id_param: rid})
        suite.created = [c for c in suite.created if c != (el["delete"], {dparam: rid})]
        if dex.upstream_rejected:
            rt3.append((SKIP, f"{el['delete']}: upstream rejected probe ({dex.code}: {dex.message[:100]})", [dex]))
            suite.created.append((el["delete"], {dparam: rid}))
        elif not dex.ok:
            rt3.append((FAIL, f"{el['delete']} of the record this run created failed: {dex.code}: {dex.message[:100]}", [dex]))
            suite.created.append((el["delete"], {dparam: rid}))
        elif after.ok:
            rt3.append((FAIL, f"{get} still returns the record after {el['delete']}", [dex, after]))
        elif after.code != "NOT_FOUND_RESOURCE":
            rt3.append((WARN, f"read after delete returned {after.code}, expected NOT_FOUND_RESOURCE", [after]))
        else:
            rt3.append((PASS, f"{res}: deleted; reading it back gives NOT_FOUND_RESOURCE", []))
            suite.bundle["error_tests"].append(
                {"name": f"{res}-read-after-delete", "must_mention": [], "response": after.envelope}
            )
    else:
        rt3.append((WARN, f"{res}: no delete operation, the record created by this run remains ({id_param}={rid!r})", []))


async def update_preservation(
    suite: Suite, res: str, upd: str, get: str, id_param: str, rid: Any, record: dict[Any, Any], rt2: _Rows, cd1: _Rows
) -> None:
    uparams = suite.params_of(upd)
    uid = suite.id_param(upd) or id_param
    input_p = next((p for p in uparams if p["name"] == "input"), None)
    await suite.prefetch_types(uparams)
    fields: list[dict[str, Any]] = []
    if input_p is not None:
        d = suite.lookup(str(input_p.get("type")))
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
    new_value = f"{TAG}-{suite.run_id}-updated"
    if target.get("maxLength") is not None:
        new_value = new_value[: int(target["maxLength"])]
    change = {target["name"]: new_value}
    uex = await suite.op(upd, {uid: rid, "input": change} if input_p is not None else {uid: rid, **change})
    if uex.upstream_rejected:
        rt2.append((SKIP, f"{upd}: upstream rejected probe ({uex.code}: {uex.message[:120]})", [uex]))
        return
    if not uex.ok:
        rt2.append((FAIL, f"{upd} of one field failed: {uex.code}: {uex.message[:120]}", [uex]))
        return
    rd = await suite.op(get, {id_param: rid})
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
    suite.bundle["update_preservation_tests"].append(
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
    cex = await suite.op(upd, {uid: rid, "input": {k: attempt}})
    rd2 = await suite.op(get, {id_param: rid})
    after2 = _record(rd2.data, res) if rd2.ok else {}
    documented = k not in field_names  # the update input type does not offer it
    suite.bundle["constraint_tests"].append({"name": f"{res}-read-only-{k}", "documented": documented, "response": cex.envelope})
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
