"""Structured logs: one JSON object per line (``--log-format json``).

Each line has ``timestamp`` (UTC, ISO 8601, milliseconds), ``level``, ``logger`` and ``message``,
``exception`` when a traceback is attached, and ``trace_id`` / ``span_id`` when the line is
written inside an active span — so a log line can be found from its trace and the other way round.
"""

from __future__ import annotations

import datetime as dt
import json
import logging
import sys
from typing import Any


class JsonFormatter(logging.Formatter):
    """A log record as one line of JSON (newlines inside messages are escaped by JSON itself)."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = dt.datetime.fromtimestamp(record.created, dt.UTC)
        out: dict[str, Any] = {
            "timestamp": stamp.strftime("%Y-%m-%dT%H:%M:%S.") + f"{stamp.microsecond // 1000:03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        out.update(trace_ids())
        if record.exc_info:
            out["exception"] = self.formatException(record.exc_info)
        elif record.exc_text:
            out["exception"] = record.exc_text
        return json.dumps(out, default=str)


def trace_ids() -> dict[str, str]:
    """The active span's ids, if OpenTelemetry is loaded (it is never imported for this) and a
    valid span is current."""
    otel_trace = sys.modules.get("opentelemetry.trace")
    if otel_trace is None:
        return {}
    ctx = otel_trace.get_current_span().get_span_context()
    if not ctx.is_valid:
        return {}
    return {"trace_id": format(ctx.trace_id, "032x"), "span_id": format(ctx.span_id, "016x")}


def formatter(log_format: str, text_format: str) -> logging.Formatter:
    """The formatter for ``log_format`` (``json`` or ``text`` with ``text_format``)."""
    return JsonFormatter() if log_format == "json" else logging.Formatter(text_format)
