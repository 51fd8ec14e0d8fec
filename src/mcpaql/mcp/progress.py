"""The progress bridge: ``ctx.report_progress`` → MCP ``notifications/progress`` (MCPI §5).

A sink is only installed when the client sent ``_meta.progressToken``; without one,
``Context.wants_progress`` is false and handlers can skip the work of measuring progress.
"""

from __future__ import annotations

import logging
from typing import Any

from ..protocol.context import ProgressSink

log = logging.getLogger("mcpaql.mcp.progress")


def progress_token(ctx: Any, params: Any) -> Any:
    """The request's progress token, or None (typed ``_meta`` keys are snake_case in the SDK)."""
    meta = getattr(params, "meta", None) or getattr(ctx, "meta", None) or {}
    return meta.get("progress_token") if hasattr(meta, "get") else None


def progress_sink(ctx: Any, params: Any) -> ProgressSink | None:
    """A sink that reports on the originating request's stream (stdio and HTTP, both eras)."""
    if progress_token(ctx, params) is None:
        return None
    session = ctx.session

    async def sink(progress: float, total: float | None = None, message: str | None = None) -> None:
        try:
            await session.report_progress(progress, total, message)
        except Exception:  # progress is advisory: a lost notification must not fail the operation
            log.debug("progress notification dropped", exc_info=True)

    return sink
