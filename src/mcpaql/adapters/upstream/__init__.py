"""Wrap existing MCP servers: classification, operation specs, supervised connections, token reports."""

from .classify import Classification, classify
from .report import token_report
from .runtime import Upstream, UpstreamSpec
from .wrap import Wrapper, build_registry, wrap

__all__ = ["Classification", "Upstream", "UpstreamSpec", "Wrapper", "build_registry", "classify", "token_report", "wrap"]
