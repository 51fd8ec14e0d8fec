"""Background executions as MCP Tasks (the ``io.modelcontextprotocol/tasks`` extension, SEP-2663).

Why: an operation marked ``background=True`` (``mcpaql.safety.jobs``) already answers at once
with an execution the agent must poll through ``get_execution_state``. A client that speaks the
Tasks extension can do that polling itself, outside the model's context: when a 2026-07-28
request declares the extension in its per-request capabilities and calls a background
operation, the answer is a task handle (``resultType: "task"``) instead of the state envelope,
and ``tasks/get`` / ``tasks/cancel`` / ``tasks/update`` follow it. A client that does not
declare the extension (every 2025-11-25 client, and modern clients without it) gets today's
state envelope, unchanged.

The bridge is thin on purpose: the task id *is* the execution id (an unguessable token, valid in
every process sharing the store), and each ``tasks/*`` request runs the generated
``get_execution_state`` / ``cancel_execution`` operations through the engine, in the caller's
own session, with the safety layer, rate limits and audit in between, exactly as if the agent
had called them. Mapping (extension spec "Task Status"): ``pending``/``running`` → ``working``;
``completed`` → ``completed`` with ``result`` = the ``CallToolResult`` a synchronous call would
have returned; ``failed`` → ``completed`` with an ``isError`` result (a domain error is a tool
result, and the extension reserves ``failed`` for JSON-RPC errors); ``cancelled`` → ``cancelled``.

Left out: the 2025-11-25 task-augmented ``tools/call`` (``params.task``): SDK 2.3 ships its types
only and sends 2025-11-25 results through that revision's wire models, which have no place for a
task handle; ``notifications/tasks`` pushes (clients poll, as the extension requires them to
support anyway).
"""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from ..protocol.dispatch import Engine
from ..protocol.envelope import success
from .results import envelope_result

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
POLL_INTERVAL_MS = 250
_STATUS = {"pending": "working", "running": "working", "completed": "completed", "failed": "completed", "cancelled": "cancelled"}


class UpdateTaskRequestParams(types.RequestParams):
    """``tasks/update`` params (no mcpaql task ever asks for input, so nothing is outstanding)."""

    task_id: str
    input_responses: dict[str, Any] | None = None


def client_declares_tasks(ctx: Any) -> bool:
    """Whether *this request* declared the Tasks extension (2026-07-28 per-request capabilities)."""
    if getattr(ctx, "protocol_version", None) not in MODERN_PROTOCOL_VERSIONS:
        return False
    caps = getattr(getattr(ctx, "session", None), "client_capabilities", None)
    extensions = getattr(caps, "extensions", None)
    return isinstance(extensions, dict) and TASKS_EXTENSION in extensions


def background_operations(engine: Engine) -> frozenset[str]:
    return frozenset(op.name for op in engine.operations if op.extensions.get("background"))


def requested_operation(arguments: Any) -> str | None:
    op = arguments.get("operation") if isinstance(arguments, dict) else None
    return op if isinstance(op, str) else None


def tool_for(engine: Engine, operation: str) -> str | None:
    """The tool that serves ``operation`` in this engine's mode (its CRUDE tool, or the single tool)."""
    compiled = engine.compiled(operation)
    if compiled is None:
        return None
    name = engine.tool_for_family.get(compiled.spec.family)
    return name or next((t.name for t in engine.tools if t.family is None), None)


def task_of(engine: Engine, state: dict[str, Any]) -> dict[str, Any]:
    """A ``DetailedTask`` (wire form) for an execution's state response."""
    status = _STATUS.get(str(state.get("status")), "working")
    raw_progress = state.get("progress")
    progress: dict[str, Any] = raw_progress if isinstance(raw_progress, dict) else {}
    message = progress.get("message") or state.get("reason")
    created = str(state.get("created_at") or "")
    task: dict[str, Any] = {
        "taskId": state["execution_id"],
        "status": status,
        "createdAt": created,
        "lastUpdatedAt": str(state.get("finished_at") or state.get("started_at") or created),
        "ttlMs": None,  # kept as long as the store keeps the execution record
        "pollIntervalMs": POLL_INTERVAL_MS,
    }
    if isinstance(message, str) and message:
        task["statusMessage"] = message
    if status == "completed":
        envelope = (
            success(state.get("result"))
            if state.get("status") == "completed"
            else {"success": False, "error": state.get("error") or {"code": "INTERNAL_ERROR", "message": "failed"}}
        )
        task["result"] = envelope_result(engine, envelope).model_dump(by_alias=True, mode="json", exclude_none=True)
    return task


def create_task_result(engine: Engine, envelope: dict[str, Any]) -> dict[str, Any] | None:
    """The ``CreateTaskResult`` for a background operation's start envelope (None if it did not start)."""
    data = envelope.get("data") if envelope.get("success") is True else None
    if not isinstance(data, dict) or not isinstance(data.get("execution_id"), str):
        return None
    task = task_of(engine, data)
    task.pop("result", None)  # CreateTaskResult is the Task shape only; tasks/get carries the result
    return {"resultType": "task", **task}


def unknown_task(task_id: str) -> MCPError:
    return MCPError(code=types.INVALID_PARAMS, message="Unknown task", data={"taskId": task_id[:100]})


def cancel_refused(task_id: str, envelope: dict[str, Any]) -> MCPError | None:
    """The error for a ``tasks/cancel`` whose ``cancel_execution`` the caller may not run (its
    scopes, the gatekeeper, a block) — never a silent ``{}`` for a cancel that did not happen.
    A task that already finished is not an error (cancelling it is a no-op, as the extension says)."""
    if envelope.get("success") is True:
        return None
    error = envelope.get("error")
    error = error if isinstance(error, dict) else {}
    code = str(error.get("code", ""))
    details = error.get("details")
    if isinstance(details, dict) and details.get("constraint") == "lifecycle":
        return None  # already finished (safety/lifecycle.illegal_now): nothing to cancel
    return MCPError(
        code=types.INVALID_REQUEST,
        message="Task cannot be cancelled by this caller",
        data={"taskId": task_id[:100], "code": code},
    )
