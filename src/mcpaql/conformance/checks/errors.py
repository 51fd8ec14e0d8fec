"""Errors: every error envelope seen so far is graded (codes, messages, no leaks) (§3 ERRORS)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from ..evidence import without_error_details
from ..model import ERRORS, Exchange
from ..schemas import CODE_RE
from ..support import CODE_PREFIXES, FAIL, LEAK_PATTERNS, PASS, RUNNER_LEAK, SKIP, WARN, _op_of

if TYPE_CHECKING:
    from ..suite import Suite


def check_errors(suite: Suite) -> None:
    ex: Exchange | None  # None below for messages of nested batch results, which have no exchange of their own
    errs = [ex for ex in suite.exchanges if ex.envelope is not None and ex.envelope.get("success") is False]
    nested: list[Any] = [  # result envelopes (dicts, per the filter) nested in batch responses
        r.get("result")
        for ex in suite.exchanges
        if ex.ok
        for r in (ex.envelope or {}).get("results") or []
        if isinstance(r, dict) and isinstance(r.get("result"), dict) and r["result"].get("success") is False
    ]
    shape_bad, evid = [], []
    for ex in errs:
        intro = isinstance(ex.arguments, dict) and ex.arguments.get("operation") == "introspect"
        p = suite.v.problems("operation_result", ex.envelope)
        if p:
            shape_bad.append(f"{_op_of(ex)}: {'; '.join(p[:2])}")
            evid.append(ex)
        elif intro and (ip := suite.v.problems("introspection_response", without_error_details(ex.envelope))):
            # error.details is allowed on introspect failures (decision E2); the rest must fit the schema
            shape_bad.append(f"introspect failure: {'; '.join(ip[:2])}")
            evid.append(ex)
    suite.add(
        "EQ-1",
        "Error responses are {success:false, error:{code, message}} envelopes",
        ERRORS,
        FAIL if shape_bad else PASS if errs else SKIP,
        ["REQ-RSP-001", "REQ-RSP-003", "REQ-RSP-006", "REQ-RSP-007"],
        " | ".join(shape_bad[:5]) or f"{len(errs)} error envelopes validate",
        evid,
    )

    leaks, runner_hits, levid = [], [], []
    messages: list[tuple[Exchange | None, str]] = [(ex, ex.message) for ex in errs] + [
        (None, str((r.get("error") or {}).get("message", ""))) for r in nested
    ]
    texts = [(ex, ex.text or "") for ex in suite.exchanges if ex.kind == "result" and ex.envelope is None and ex.text]
    texts += [(ex, ex.rpc_message or "") for ex in suite.exchanges if ex.kind == "jsonrpc_error"]
    for ex, msg in messages + texts:
        for label, pat in LEAK_PATTERNS:
            m = pat.search(msg)
            if m:
                leaks.append(f"{label} ({m.group(0)!r}) in: {msg[:120]!r}")
                if ex is not None:
                    levid.append(ex)
                break
    for t in suite.bundle["error_tests"]:
        m = RUNNER_LEAK.search(str(((t.get("response") or {}).get("error") or {}).get("message", "")))
        if m:
            runner_hits.append(f"{t['name']} ({m.group(0)!r})")
    suite.add(
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
    suite.add(
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
    suite.add(
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
        suite.add(
            "EQ-5",
            "Evidence messages survive the spec fixture runner's leak regex",
            ERRORS,
            WARN,
            ["Part F #23"],
            "the spec runner's /at\\s+\\S+/i would misreport these as leakage: "
            + ", ".join(runner_hits[:6])
            + " — rephrase or expect its 'Error messages do not leak' test to fail on the evidence bundle",
        )
