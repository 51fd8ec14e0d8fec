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

__version__ = "0.1.0"

__all__ = [
    "Adapter",
    "Category",
    "Config",
    "ConfigError",
    "Context",
    "EndpointFamily",
    "Engine",
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
