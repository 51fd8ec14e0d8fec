"""Discovery bundles and adapter-schema files: capture → build → load/serve."""

from .build import build_schema, format_report, write_schema
from .bundle import capture, capture_fixture, capture_live
from .load import AdapterRuntime, AdapterSchema, load_adapter_schema, serve_adapter

__all__ = [
    "AdapterRuntime",
    "AdapterSchema",
    "build_schema",
    "capture",
    "capture_fixture",
    "capture_live",
    "format_report",
    "load_adapter_schema",
    "serve_adapter",
    "write_schema",
]
