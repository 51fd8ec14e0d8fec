"""The sans-IO MCP-AQL core: specs, registry, validation, gatekeeper, dispatch, envelopes,
introspection. Never imports the ``mcp`` SDK, opens sockets or keeps global state."""

from .categories import CRUDE_FAMILIES, Category, EndpointFamily
from .context import Context
from .dispatch import ANY_FAMILY, Engine
from .envelope import failure, is_error, success
from .errors import REGISTRY as ERROR_CODES
from .errors import MCPAQLError
from .operations import NO_DEFAULT, OperationSpec, ParamSpec, TypeRef, TypeSpec
from .registry import Registry, SchemaError
from .session import Session
from .surface import ToolDef

__all__ = [
    "ANY_FAMILY",
    "CRUDE_FAMILIES",
    "ERROR_CODES",
    "NO_DEFAULT",
    "Category",
    "Context",
    "EndpointFamily",
    "Engine",
    "MCPAQLError",
    "OperationSpec",
    "ParamSpec",
    "Registry",
    "SchemaError",
    "Session",
    "ToolDef",
    "TypeRef",
    "TypeSpec",
    "failure",
    "is_error",
    "success",
]
