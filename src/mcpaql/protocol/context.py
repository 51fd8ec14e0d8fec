"""The context object a handler receives: its session, a progress reporter, a logger, and a
place to add warnings to the success response."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from .session import Session

ProgressSink = Callable[[float, float | None, str | None], Awaitable[None]]


@dataclass(eq=False)
class Context:
    session: Session
    operation: str = ""
    endpoint: str | None = None
    request_meta: dict[str, Any] = field(default_factory=dict)
    progress_sink: ProgressSink | None = None
    warnings: list[dict[str, Any]] = field(default_factory=list)
    extensions: dict[str, Any] = field(default_factory=dict)
    logger: logging.Logger = field(default_factory=lambda: logging.getLogger("mcpaql.handler"))

    @property
    def state(self) -> dict[str, Any]:
        """Session-scoped storage: gone when the client disconnects."""
        return self.session.state

    @property
    def wants_progress(self) -> bool:
        return self.progress_sink is not None

    async def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Send ``notifications/progress`` if the client asked for it (a no-op otherwise)."""
        if self.progress_sink is not None:
            await self.progress_sink(progress, total, message)

    def warn(self, code: str, message: str, details: dict[str, Any] | None = None, severity: str | None = None) -> None:
        """Attach a warning (WARN §3) to the success response of this call."""
        w: dict[str, Any] = {"code": code, "message": message}
        if details:
            w["details"] = details
        if severity:
            w["severity"] = severity
        self.warnings.append(w)
