"""mcpaql — MCP-AQL for Python.

Public API (stable names; internals may move)::

    from mcpaql import Adapter, Context, MCPAQLError, Config
    from mcpaql import install_safety, install_jobs, wrap, UpstreamSpec, serve, ServeOptions, Extension

The safety, jobs, wrapping and serving names are imported on first use (PEP 562): ``import mcpaql``
stays cheap for a Python adapter, and ``wrap`` does not load the MCP client SDK until it is asked for.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from .adapters.python import Adapter, Sensitive
from .config import Config, ConfigError, Limits
from .protocol import (
    Category,
    Context,
    EndpointFamily,
    Engine,
    MCPAQLError,
    OperationSpec,
    ParamSpec,
    Registry,
    SchemaError,
    Session,
    TypeRef,
    TypeSpec,
)
from .protocol.collections import Collection, Computed, Item
from .protocol.extension import Extension

if TYPE_CHECKING:
    from .adapters.upstream.runtime import UpstreamSpec
    from .adapters.upstream.wrap import wrap
    from .safety.install import SafetyConfig, install_safety
    from .safety.jobs import install_jobs
    from .serving import ServeOptions, serve

__version__ = "0.1.0"

_LAZY = {
    "install_safety": ".safety.install",
    "SafetyConfig": ".safety.install",
    "install_jobs": ".safety.jobs",
    "wrap": ".adapters.upstream.wrap",
    "UpstreamSpec": ".adapters.upstream.runtime",
    "serve": ".serving",
    "ServeOptions": ".serving",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'mcpaql' has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value  # later lookups skip this hook
    return value


__all__ = [
    "Adapter",
    "Category",
    "Collection",
    "Computed",
    "Config",
    "ConfigError",
    "Context",
    "EndpointFamily",
    "Engine",
    "Extension",
    "Item",
    "Limits",
    "MCPAQLError",
    "OperationSpec",
    "ParamSpec",
    "Registry",
    "SafetyConfig",
    "SchemaError",
    "Sensitive",
    "ServeOptions",
    "Session",
    "TypeRef",
    "TypeSpec",
    "UpstreamSpec",
    "__version__",
    "install_jobs",
    "install_safety",
    "serve",
    "wrap",
]
