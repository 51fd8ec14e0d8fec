"""What an authenticated caller may do: OAuth scopes mapped to MCP-AQL's semantic categories.

The scope table (docs/auth.md "Scopes"):

=================== ============================================================
``mcpaql:read``     READ operations (and ``introspect``, which every caller has)
``mcpaql:create``   CREATE operations
``mcpaql:update``   UPDATE operations
``mcpaql:delete``   DELETE operations
``mcpaql:execute``  EXECUTE operations
``mcpaql:full``     all five categories (not ``mcpaql:admin``)
``mcpaql:admin``    the safety loop's human-facing operations (``confirm_operation``,
                    ``verify_challenge``): the approval a model must not give itself
=================== ============================================================

A caller sees and calls the intersection of what the server allows (``--allow``,
``--read-only``) and what its scopes grant; a token without any of these scopes is refused at
the HTTP layer (403 ``insufficient_scope``). Pure data, no I/O: the transport (``mcp/auth.py``)
turns a verified token into a :class:`Caller`, the MCP server narrows the engine with
:func:`categories_of` and :func:`human_facing`.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import Any

CATEGORIES = ("CREATE", "READ", "UPDATE", "DELETE", "EXECUTE")
PREFIX = "mcpaql:"
READ = "mcpaql:read"
FULL = "mcpaql:full"
ADMIN = "mcpaql:admin"
CATEGORY_SCOPES: dict[str, str] = {f"{PREFIX}{c.lower()}": c for c in CATEGORIES}
SCOPES: tuple[str, ...] = (*CATEGORY_SCOPES, FULL, ADMIN)
# The safety loop's operations a human answers (the code is shown to the operator, never the
# agent): with auth on, only a caller holding ``mcpaql:admin`` may call them.
HUMAN_FACING: frozenset[str] = frozenset({"confirm_operation", "verify_challenge"})
HUMAN_FACING_ORIGIN = "mcpaql.safety"

_IDENTITY = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@:/-]{0,127}$")


@dataclass(frozen=True, slots=True)
class Caller:
    """Who an HTTP request was authenticated as. ``identity`` is what the safety layer, rate
    limits and the audit log key on; ``via`` says how (``jwt`` or ``api_key``)."""

    identity: str
    scopes: frozenset[str]
    via: str
    client_id: str = ""
    expires_at: int | None = None

    @property
    def categories(self) -> frozenset[str]:
        return categories_of(self.scopes)

    @property
    def admin(self) -> bool:
        return ADMIN in self.scopes

    @property
    def grant_key(self) -> tuple[frozenset[str], bool]:
        """What decides the caller's surface: callers with the same key see the same tools."""
        return self.categories, self.admin


def categories_of(scopes: frozenset[str] | set[str]) -> frozenset[str]:
    """The semantic categories ``scopes`` grant."""
    if FULL in scopes:
        return frozenset(CATEGORIES)
    return frozenset(CATEGORY_SCOPES[s] for s in scopes if s in CATEGORY_SCOPES)


def grants_anything(scopes: frozenset[str] | set[str]) -> bool:
    """Whether a token carries at least one of our scopes (else: 403 insufficient_scope)."""
    return any(s in SCOPES for s in scopes)


def human_facing(name: str, origin: str | None) -> bool:
    return name in HUMAN_FACING and origin == HUMAN_FACING_ORIGIN


def parse_scopes(value: Any) -> frozenset[str]:
    """Scopes from a token claim: RFC 8693/9068 ``scope`` (space-separated) or an ``scp`` list."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list | tuple):
        return frozenset(s for v in value if isinstance(v, str) for s in v.split())
    return frozenset()


def identity_for(subject: str, kind: str = "") -> str:
    """A store-safe identity for ``subject``: the subject itself where it is a plain id,
    else a stable digest of it (a subject may be any string; keys and log lines must not be)."""
    value = f"{kind}:{subject}" if kind else subject
    # a token's subject may not pose as an API key's identity ("key:…"): that one is digested
    if _IDENTITY.match(value) and (kind or not value.startswith("key:")):
        return value
    digest = hashlib.sha256(value.encode("utf-8", "surrogatepass")).hexdigest()[:32]
    return f"{kind or 'sub'}-sha256:{digest}"
