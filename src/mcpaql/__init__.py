"""mcpaql — MCP-AQL for Python.

Public API (stable names; internals may move)::

    from mcpaql import Adapter, Context, MCPAQLError, Config
"""

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

__version__ = "0.1.0"

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
    "SchemaError",
    "Sensitive",
    "Session",
    "TypeRef",
    "TypeSpec",
    "__version__",
]
