"""MCP results: every tool result is graded against the MCP integration rules (MCPI §7)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..model import MCP
from ..support import FAIL, PASS, RECOVERABLE, UNRECOVERABLE, WARN, _op_of

if TYPE_CHECKING:
    from ..suite import Suite


def check_mcp_results(suite: Suite) -> None:
    rpc = [ex for ex in suite.exchanges if ex.kind == "jsonrpc_error"]
    suite.add(
        "MCP-5",
        "Domain errors come back as CallToolResult, never JSON-RPC errors",
        MCP,
        FAIL if rpc else PASS,
        ["REQ-MCP-013", "REQ-MCP-014", "REQ-VAL-013"],
        f"{len(rpc)} call(s) answered with a JSON-RPC error instead of an envelope: "
        + ", ".join(sorted({f"{_op_of(e)} → {e.rpc_code} {e.rpc_message!r}"[:90] for e in rpc})[:4])
        if rpc
        else f"{len(suite.exchanges)} calls, deliberately invalid ones included, all returned CallToolResult",
        rpc,
    )

    wrong, soft, evid = [], [], []
    for ex in suite.exchanges:
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
    suite.add(
        "MCP-6",
        "isError follows the recoverability rule",
        MCP,
        FAIL if wrong else WARN if soft else PASS,
        ["REQ-MCP-015", "Part F #18"],
        msg or "success → false, recoverable → false, unrecoverable → true",
        evid,
    )
    nonjson = [ex for ex in suite.exchanges if ex.kind == "result" and ex.envelope is None]
    shape = [
        ex
        for ex in suite.exchanges
        if ex.envelope is not None and ex.envelope.get("success") is True and suite.v.problems("operation_result", ex.envelope)
    ]
    details = [f"{_op_of(ex)}: text is not a JSON envelope ({(ex.text or '')[:60]!r})" for ex in nonjson[:3]]
    details += [f"{_op_of(ex)}: {'; '.join(suite.v.problems('operation_result', ex.envelope)[:2])}" for ex in shape[:3]]
    suite.add(
        "MCP-7",
        "Results carry the MCP-AQL envelope as JSON text content",
        MCP,
        FAIL if details else PASS,
        ["REQ-MCP-013", "REQ-RSP-001", "REQ-RSP-005", "REQ-RSP-011"],
        " | ".join(details) or "every result's text content is a valid envelope",
        nonjson[:3] + shape[:3],
    )
