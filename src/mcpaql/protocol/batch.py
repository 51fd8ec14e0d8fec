"""Batch operations (OPS §7; CHECKLIST REQ-BATCH-*).

A batch is ``{operations: [{operation, params?}, ...]}`` (or, for clients that follow the tool
input schema, ``{operation: "batch", operations: [...]}``) sent through any tool. Items run in
order, each through the full pipeline — including the gatekeeper for *its own* endpoint, so
a batch on the read tool cannot smuggle a delete. A failure does not stop later items unless
``_stop_on_failure: true`` is given (OVW: MAY). ``CONFIRMATION_REQUIRED`` halts the batch and
is not counted as a failure (OPS §7.5).

The response follows ``batch-operation.schema.json`` (docs/conformance.md, decisions B1–B3):
``{success: true, data: null, results, summary}``, each item's ``result`` trimmed to the
schema's ``{success, data}`` / ``{success, error}`` (a confirmation travels in
``error.details``, item warnings are collapsed once onto the batch, WARN §6.5). A batch halted
for confirmation adds ``halted_at`` (the gated item), ``pending_operations`` (what did not run,
with params, for continuation) and integer ``summary.halted``/``summary.pending`` — a shape
operation-result.schema.json cannot express, so only the halted case is invalid against it.
Batch-level errors carry no ``details`` (the schema's failure response forbids them).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .envelope import failure, success
from .errors import MCPAQLError, internal_error, repr_list
from .schema import json_type_of

if TYPE_CHECKING:
    from .context import Context
    from .dispatch import Engine

MAX_BATCH = 100
# The tool input schema requires ``operation`` (MCPI §3.1), so a schema-following client sends
# a batch as ``{operation: "batch", operations: [...]}``; the spec's bare ``{operations: [...]}``
# is accepted too. ``batch`` is therefore reserved as an operation name in this implementation.
BATCH_OPERATION = "batch"


def _batch_error(message: str) -> MCPAQLError:
    """A batch-level error: batch-operation.schema.json's failure response allows no ``details``."""
    return MCPAQLError("BATCH_VALIDATION_ERROR", message)


def _item_error(message: str, index: int) -> MCPAQLError:
    return MCPAQLError("BATCH_VALIDATION_ERROR", message, {"index": index})


def item_result(result: dict[str, Any]) -> dict[str, Any]:
    """``result`` as batch-operation's per-item OperationResult allows it: ``{success, data}`` or
    ``{success, error}`` — the top-level ``confirmation`` mirror (its token is already in
    ``error.details``), ``warnings`` and ``_meta`` are not allowed there."""
    if result.get("success") is True:
        return {"success": True, "data": result.get("data")}
    return {"success": False, "error": result["error"]}


async def run_batch(engine: Engine, request: dict[str, Any], ctx: Context, family: Any, tool: str) -> dict[str, Any]:
    items = request["operations"]
    extra = [k for k in request if k not in ("operations", "operation") and not k.startswith("_")]
    if extra:
        raise _batch_error(f"A batch request takes only 'operations'; unexpected: {repr_list(extra)}")
    if not isinstance(items, list):
        raise _batch_error(f"'operations' must be an array, got '{json_type_of(items)}'")
    if not items:
        raise _batch_error("'operations' must contain one or more operations")
    if len(items) > MAX_BATCH:
        raise _batch_error(f"A batch holds up to '{MAX_BATCH}' operations, got '{len(items)}'")
    stop_on_failure = request.get("_stop_on_failure") is True
    results: list[dict[str, Any]] = []
    succeeded = failed = 0
    halted_at: dict[str, Any] | None = None
    stopped_after: int | None = None
    warnings: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        name = item.get("operation") if isinstance(item, dict) else None
        item_ctx = engine.context(ctx.session, progress_sink=ctx.progress_sink, extensions=ctx.extensions, logger=ctx.logger)
        if not isinstance(item, dict) or not isinstance(name, str):
            result = failure(_item_error(f"'operations[{index}]' must be an object with a string 'operation'", index))
        elif "operations" in item:
            result = failure(_item_error(f"'operations[{index}]': batches cannot be nested", index))
        else:
            try:
                # has_nul=True: scan item params for U+0000 (the top-level scan result is not
                # passed down here, and False would let NUL through, REQ-VAL-024).
                result = await engine.run_one(name, item, item_ctx, family, tool, True)
            except MCPAQLError as e:
                result = failure(e)
            except Exception:
                engine_log_exception(name)
                result = failure(internal_error())
        entry = {"index": index, "operation": name if isinstance(name, str) else "", "result": item_result(result)}
        if result["success"]:
            succeeded += 1
            warnings.extend(result.get("warnings", ()))
            results.append(entry)
            continue
        if result["error"]["code"] == "CONFIRMATION_REQUIRED":
            halted_at = entry  # OPS §7.5.2: the gated item is reported as halted_at, not in results
            stopped_after = index
            break
        failed += 1
        results.append(entry)
        if stop_on_failure:
            stopped_after = index
            break
    summary: dict[str, Any] = {"total": len(items), "succeeded": succeeded, "failed": failed}
    # Item warnings are collapsed once onto the batch (WARN §6.5; decision B2).
    env = success(None, warnings or None)
    env["results"] = results
    if halted_at is not None:
        env["halted_at"] = halted_at
        summary["halted"] = 1
    if stopped_after is not None:
        env["pending_operations"] = [_pending(i, items[i]) for i in range(stopped_after + 1, len(items))]
        summary["pending"] = len(items) - stopped_after - 1
    env["summary"] = summary
    return env


def _pending(index: int, item: Any) -> dict[str, Any]:
    """A not-run item as batch-operation's PendingOperationItem (params kept for continuation)."""
    out: dict[str, Any] = {"index": index, "operation": ""}
    if isinstance(item, dict):
        if isinstance(item.get("operation"), str):
            out["operation"] = item["operation"]
        if isinstance(item.get("params"), dict):
            out["params"] = item["params"]
    return out


def engine_log_exception(name: str) -> None:
    import logging

    logging.getLogger("mcpaql.batch").exception("batch item %r failed", name)
