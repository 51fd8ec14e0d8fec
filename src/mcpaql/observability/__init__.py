"""Observability: OpenTelemetry traces and metrics, and the log format (docs/observability.md).

Off by default, and then free: nothing here imports OpenTelemetry until telemetry is turned on
(``--otel`` on a serving command, or the standard ``OTEL_*`` variables). What stays on the hot
path when it is off is one :data:`~.hooks.CURRENT` lookup at each upstream call site.

- :func:`decide` says whether a serving process turns telemetry on (and refuses, with one line,
  a configuration it cannot honour);
- :func:`serving_telemetry` starts it for the length of serving (providers, exporters) and
  flushes it at the end;
- :mod:`.telemetry` is the instrumentation itself (imported only when on);
- :mod:`.hooks` is what upstream call sites read (no OpenTelemetry import);
- :mod:`.logs` is the JSON log formatter.
"""

from __future__ import annotations

import contextlib
import importlib.util
import logging
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from ..config import ConfigError, TelemetrySettings, telemetry_settings

if TYPE_CHECKING:
    from .telemetry import Telemetry

log = logging.getLogger("mcpaql.observability")

MISSING = "--otel needs the optional 'otel' dependencies: pip install 'mcpaql[otel]'"
_SUPPORTED_PROTOCOL = "http/protobuf"
_GROUP = ("opentelemetry.sdk", "opentelemetry.exporter.otlp.proto.http")


def installed() -> bool:
    """Whether the ``otel`` dependency group (SDK and OTLP/HTTP exporter) is installed."""
    try:
        return all(importlib.util.find_spec(m) is not None for m in _GROUP)
    except (ImportError, ValueError):
        return False


def decide(flag: bool | None, settings: TelemetrySettings | None = None) -> bool:
    """Whether serving turns telemetry on: ``flag`` (``--otel`` / ``--no-otel``) when given, else
    the environment. Raises :class:`ConfigError` (one line) for what cannot be honoured: ``--otel``
    without the ``otel`` group, ``--otel`` with ``OTEL_SDK_DISABLED=true``, an OTLP protocol other
    than http/protobuf. The environment asking for telemetry without the group installed is a
    warning, not a refusal: an ``OTEL_*`` variable may be set machine-wide for other programs."""
    if flag is False:
        return False
    settings = settings or telemetry_settings()
    if flag is None:
        if not settings.requested or settings.sdk_disabled:
            return False
        if not installed():
            log.warning("OTEL_* variables ask for telemetry but the 'otel' extra is not installed: no telemetry")
            return False
    elif settings.sdk_disabled:
        raise ConfigError("--otel contradicts OTEL_SDK_DISABLED=true in the environment: drop one of them")
    elif not installed():
        raise ConfigError(MISSING)
    for protocol in settings.protocols:
        if protocol != _SUPPORTED_PROTOCOL:
            raise ConfigError(
                f"OTLP protocol '{protocol}' is not supported: mcpaql exports OTLP over HTTP "
                "(set OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf)"
            )
    return True


@contextlib.asynccontextmanager
async def serving_telemetry(flag: bool | None) -> AsyncIterator[Telemetry | None]:
    """Telemetry for one serving run: None when off; else the instrumentation, with the global
    providers installed (or the application's own, when it already installed SDK providers) and
    flushed when serving ends."""
    if not decide(flag):
        yield None
        return
    import anyio

    from .setup import start_telemetry

    telemetry, stop = start_telemetry(telemetry_settings())
    try:
        yield telemetry
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(stop)


__all__ = ["MISSING", "ConfigError", "decide", "installed", "serving_telemetry"]
