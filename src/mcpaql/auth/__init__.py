"""Who may call an HTTP server, and what they may do (issue 15; docs/auth.md).

The non-SDK half: parsing the ``Authorization`` header (:mod:`.header`), static API keys
(:mod:`.apikeys`), JWTs verified against the issuer's JWKS (:mod:`.jwks`), scopes mapped to
semantic categories (:mod:`.scopes`) and the serving options with the secure-by-default check
(:mod:`.options`). The SDK glue — protected-resource metadata (RFC 9728), the bearer gate in
front of the MCP endpoint, the caller of a request — is ``mcpaql.mcp.auth``.
"""

from __future__ import annotations

from .options import AuthConfigError, AuthOptions, check_exposure
from .scopes import ADMIN, FULL, READ, SCOPES, Caller

__all__ = ["ADMIN", "FULL", "READ", "SCOPES", "AuthConfigError", "AuthOptions", "Caller", "check_exposure"]
