"""Installing the OpenTelemetry SDK for a serving process, the standard way.

Exporters follow ``OTEL_TRACES_EXPORTER`` / ``OTEL_METRICS_EXPORTER`` (``otlp``, the default, over
HTTP/protobuf; ``console``, to stderr — never stdout, which is the wire in stdio mode; ``none``);
the OTLP exporter reads its endpoint, headers and timeouts from the ``OTEL_EXPORTER_OTLP_*``
variables itself. The resource is ``service.name`` (``OTEL_SERVICE_NAME`` or ``mcpaql``) plus
``OTEL_RESOURCE_ATTRIBUTES``.

An application that already installed SDK providers (an embedding program, a test) keeps them:
we add nothing to them and do not shut them down.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from opentelemetry import metrics, trace
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import ConsoleMetricExporter, MetricReader, PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter

from .. import __version__
from ..config import TelemetrySettings
from .telemetry import Telemetry


def start_telemetry(settings: TelemetrySettings) -> tuple[Telemetry, Callable[[], None]]:
    """Install the global providers (unless SDK ones are installed already) and return the
    instrumentation and the function that flushes and shuts down what was installed here."""
    stops: list[Callable[[], object]] = []
    resource = Resource.create({"service.name": settings.service_name, "service.version": __version__})
    if not isinstance(trace.get_tracer_provider(), TracerProvider):
        tracer_provider = TracerProvider(resource=resource)
        for name in settings.traces_exporter:
            if name == "otlp":
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

                tracer_provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
            elif name == "console":
                tracer_provider.add_span_processor(BatchSpanProcessor(ConsoleSpanExporter(out=sys.stderr)))
        trace.set_tracer_provider(tracer_provider)
        stops.append(tracer_provider.shutdown)
    if not isinstance(metrics.get_meter_provider(), MeterProvider):
        readers: list[MetricReader] = []
        for name in settings.metrics_exporter:
            if name == "otlp":
                from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter

                readers.append(PeriodicExportingMetricReader(OTLPMetricExporter()))
            elif name == "console":
                readers.append(PeriodicExportingMetricReader(ConsoleMetricExporter(out=sys.stderr)))
        meter_provider = MeterProvider(resource=resource, metric_readers=readers)
        metrics.set_meter_provider(meter_provider)
        stops.append(meter_provider.shutdown)

    def stop() -> None:
        for fn in stops:
            fn()

    return Telemetry(), stop
