"""Batch operations (OPS §7; CHECKLIST REQ-BATCH-*).

A batch is ``{operations: [{operation, params?}, ...]}`` (or, for clients that follow the tool
input schema, ``{operation: "batch", operations: [...]}``) sent through any tool. Items run in
order, each through the full pipeline — including the gatekeeper for *its own* endpoint, so
a batch on the read tool cannot smuggle a delete. A failure does not stop later items unless
``_stop_on_failure: true`` is given (OVW: MAY). ``CONFIRMATION_REQUIRED`` halts the batch and
is not counted as a failure (OPS §7.5). The envelope is ``{success: true, data: null,
results, summary}`` — ``data: null`` keeps it valid against operation-result (Part F #9).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .envelope import failure, success
from .errors import MCPAQLError, internal_error
from .schema import json_type_of

if TYPE_CHECKING:
    from .context import Context
    from .dispatch import Engine

MAX_BATCH = 100
# The tool input schema requires ``operation`` (MCPI §3.1), so a schema-following client sends
# a batch as ``{operation: "batch", operations: [...]}``; the spec's bare ``{operations: [...]}``
# is accepted too. ``batch`` is therefore reserved as an operation name in this implementation.
BATCH_OPERATION = "batch"


def _batch_error(message: str, **details: Any) -> MCPAQLError:
    return MCPAQLError("BATCH_VALIDATION_ERROR", message, details or None)


async def run_batch(engine: Engine, request: dict[str, Any], ctx: Context, family: Any, tool: str) -> dict[str, Any]:
    items = request["operations"]
    extra = [k for k in request if k not in ("operations", "operation") and not k.startswith("_")]
    if extra:
        raise _batch_error(
            f"A batch request takes only 'operations'; unexpected: {', '.join(repr(k) for k in extra)}",
            unknown_params=extra,
        )
    if not isinstance(items, list):
        raise _batch_error(f"'operations' must be an array, got '{json_type_of(items)}'")
    if not items:
        raise _batch_error("'operations' must contain at least one operation")
    if len(items) > MAX_BATCH:
        raise _batch_error(f"A batch holds at most {MAX_BATCH} operations, got {len(items)}", limit=MAX_BATCH)
    stop_on_failure = request.get("_stop_on_failure") is True
    results: list[dict[str, Any]] = []
    succeeded = failed = 0
    halted = False
    pending = 0
    warnings: list[dict[str, Any]] = []
    for index, item in enumerate(items):
        name = item.get("operation") if isinstance(item, dict) else None
        item_ctx = engine.context(
            ctx.session, progress_sink=ctx.progress_sink, extensions=ctx.extensions, logger=ctx.logger
        )
        if not isinstance(item, dict) or not isinstance(name, str):
            result = failure(
                _batch_error(f"operations[{index}] must be an object with a string 'operation'", index=index)
            )
        elif "operations" in item:
            result = failure(_batch_error(f"operations[{index}]: batches cannot be nested", index=index))
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
        results.append({"index": index, "operation": name if isinstance(name, str) else "", "result": result})
        if result["success"]:
            succeeded += 1
            warnings.extend(result.get("warnings", ()))
            continue
        if result["error"]["code"] == "CONFIRMATION_REQUIRED":
            halted = True
            pending = len(items) - index - 1
            break
        failed += 1
        if stop_on_failure:
            halted = True
            pending = len(items) - index - 1
            break
    summary: dict[str, Any] = {"total": len(items), "succeeded": succeeded, "failed": failed}
    if halted:
        summary["halted"] = True
        summary["pending"] = pending
    # Per-item warnings stay on their items; the batch carries them collapsed once (WARN §6.5).
    env = success(None, warnings or None)
    env["results"] = results
    env["summary"] = summary
    return env


def engine_log_exception(name: str) -> None:
    import logging

    logging.getLogger("mcpaql.batch").exception("batch item %r failed", name)
