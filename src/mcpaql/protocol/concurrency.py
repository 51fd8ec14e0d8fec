"""Optimistic concurrency (CORE §9.3.2; CHECKLIST REQ-CONC-*): ``_etag`` / ``_version`` on
mutable resources and the ``if_match`` precondition.

An etag is a weak validator over the resource's canonical JSON (``W/"<16 hex>"``), so any
change to a stored field changes it and no server state is needed. :func:`check_if_match`
raises ``CONFLICT_VERSION_MISMATCH`` with both values, so a client can re-read and retry.
The compare-and-set itself belongs to the store: check and write without an ``await``
between them (or under the store's lock).
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

from .errors import MCPAQLError
from .operations import ParamSpec

META_KEYS = frozenset({"_etag", "_version"})

IF_MATCH = ParamSpec(
    "if_match",
    {"type": ["string", "integer"]},
    description="Only apply if the resource still has this _etag (or _version); else CONFLICT_VERSION_MISMATCH",
)


def etag_of(resource: Mapping[str, Any]) -> str:
    body = {k: v for k, v in resource.items() if k not in META_KEYS}
    digest = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":"), default=str).encode()).hexdigest()
    return f'W/"{digest[:16]}"'


def with_etag(resource: Mapping[str, Any]) -> dict[str, Any]:
    """A copy of ``resource`` carrying its current ``_etag``."""
    return {**{k: v for k, v in resource.items() if k != "_etag"}, "_etag": etag_of(resource)}


def next_version(resource: Mapping[str, Any]) -> int:
    v = resource.get("_version")
    return v + 1 if isinstance(v, int) and not isinstance(v, bool) else 1


def _norm(tag: Any) -> str:
    s = str(tag).strip()
    if s.startswith("W/"):
        s = s[2:]
    return s.strip('"')


def current_tag(resource: Mapping[str, Any] | str | int, prefer_version: bool = False) -> str | int:
    if isinstance(resource, Mapping):
        if prefer_version or ("_version" in resource and "_etag" not in resource):
            version: str | int = resource.get("_version", 0)  # stored versions are ints (next_version)
            return version
        return etag_of(resource)
    return resource


def matches(current: str | int, if_match: str | int) -> bool:
    if isinstance(if_match, str) and _norm(if_match) == "*":  # also '"*"' and surrounding blanks
        return True
    if isinstance(current, int) and not isinstance(current, bool):
        try:
            return int(_norm(if_match)) == current
        except ValueError:
            return False
    return _norm(current) == _norm(if_match)


def version_mismatch(expected: Any, actual: Any, resource_type: str | None = None, resource_id: Any = None) -> MCPAQLError:
    details: dict[str, Any] = {"param_name": "if_match", "expected": expected, "actual": actual}
    if resource_type:
        details["resource_type"] = resource_type
    if resource_id is not None:
        details["resource_id"] = str(resource_id)
    what = f"{resource_type} '{resource_id}'" if resource_type and resource_id is not None else "the resource"
    return MCPAQLError(
        "CONFLICT_VERSION_MISMATCH",
        f"Precondition failed: {what} has changed (if_match {expected!s}, current {actual!s}). "
        "Read it again and retry with its current _etag",
        details,
    )


def check_if_match(
    resource: Mapping[str, Any] | str | int,
    if_match: str | int | None,
    *,
    resource_type: str | None = None,
    resource_id: Any = None,
) -> None:
    """No-op without ``if_match``; else raise ``CONFLICT_VERSION_MISMATCH`` unless it matches
    the resource's ``_version`` (when it has one and no ``_etag``) or its computed etag.
    A string of digits (``"3"``, from a string-typed parameter) also matches a ``_version``."""
    if if_match is None:
        return
    if isinstance(resource, Mapping) and isinstance(if_match, str) and _norm(if_match).isdigit():
        version = resource.get("_version")
        if isinstance(version, int) and not isinstance(version, bool) and int(_norm(if_match)) == version:
            return
    current = current_tag(resource, prefer_version=isinstance(if_match, int) and not isinstance(if_match, bool))
    if not matches(current, if_match):
        raise version_mismatch(if_match, current, resource_type, resource_id)


__all__ = ["IF_MATCH", "check_if_match", "etag_of", "matches", "next_version", "version_mismatch", "with_etag"]
