"""UPDATE semantics (CORE §4.5; CHECKLIST REQ-UPD-*): a nested ``input`` patch, deep-merged.

:func:`deep_merge` is the one merge rule: top-level keys replace, nested objects merge
recursively (absent keys kept), arrays replace entirely, explicit ``null`` removes the field.
:func:`update_semantics` makes an UPDATE operation's ``input`` parameter required (missing →
``VALIDATION_MISSING_PARAM``) and closed (unknown keys → ``VALIDATION_UNKNOWN_FIELD``) and
refuses, at registration, an input schema that contains identifier parameters; identifiers
stay at ``params`` level. Never mutates the objects it is given.
"""

from __future__ import annotations

import copy
import dataclasses
from collections.abc import Callable, Mapping
from typing import Any

from .errors import MCPAQLError
from .operations import OperationSpec, ParamSpec
from .registry import SchemaError

INPUT = "input"
# Parameters that sit beside identifiers but are not identifiers themselves.
NOT_IDENTIFIERS = frozenset({INPUT, "if_match", "fields"})


def deep_merge(base: Mapping[str, Any], patch: Mapping[str, Any]) -> dict[str, Any]:
    """Apply ``patch`` to ``base`` (REQ-UPD-002/003); returns a new dict."""
    out = dict(base)
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        elif isinstance(value, Mapping):
            current = out.get(key)
            out[key] = deep_merge(current if isinstance(current, Mapping) else {}, value)
        else:
            out[key] = copy.deepcopy(value) if isinstance(value, list) else value
    return out


def patch_of(input: Any) -> dict[str, Any]:
    """The patch a client sent: a dict as is, a pydantic model as only its *set* fields (so an
    explicit ``null`` still removes and an absent field is untouched)."""
    if isinstance(input, Mapping):
        return dict(input)
    dump = getattr(input, "model_dump", None)
    if dump is not None:
        patch: dict[str, Any] = dump(exclude_unset=True)  # pydantic's model_dump returns a dict
        return patch
    raise TypeError("input must be an object")


def apply_patch(existing: Any, input: Any) -> dict[str, Any]:
    """``existing`` (dict or model) with ``input`` deep-merged in."""
    base = existing if isinstance(existing, Mapping) else existing.model_dump()
    return deep_merge(base, patch_of(input))


def identifiers_in_input(value: Mapping[str, Any], identifiers: frozenset[str] | set[str]) -> list[str]:
    return [k for k in value if k in identifiers]


def identifier_error(found: list[str], valid: list[str] | None = None) -> MCPAQLError:
    listed = ", ".join(repr(f) for f in found)
    details: dict[str, Any] = {"param_name": INPUT, "unknown_fields": found, "identifiers": found}
    if valid is not None:
        details["valid_fields"] = valid
    return MCPAQLError(
        "VALIDATION_UNKNOWN_FIELD",
        f"Identifier(s) {listed} must be given in params, not inside 'input'",
        details,
    )


def update_semantics(spec: OperationSpec, identifiers: set[str] | None = None) -> OperationSpec:
    """Enforce the CORE §4.5 contract on ``spec``'s ``input`` parameter (no-op without one)."""
    param = next((p for p in spec.params if p.name == INPUT), None)
    if param is None:
        return spec
    ids = frozenset(identifiers if identifiers is not None else {p.name for p in spec.params if p.name not in NOT_IDENTIFIERS})
    props = set((param.schema.get("properties") or {}).keys())
    inside = sorted(ids & props)
    if inside:
        raise SchemaError(
            "SCHEMA_INVALID_TYPE",
            f"operation '{spec.name}': identifier(s) {inside} must not be fields of 'input' (CORE §4.5.3(5))",
        )
    convert = _guard_identifiers(ids, param.convert, sorted(props) if props else None)
    new = dataclasses.replace(param, required=True, closed=True, default=..., convert=convert)
    return dataclasses.replace(spec, params=tuple(new if p is param else p for p in spec.params))


def _guard_identifiers(ids: frozenset[str], inner: Callable[[Any], Any] | None, valid: list[str] | None) -> Callable[[Any], Any]:
    # A closed input schema already rejects identifiers as unknown fields; an open one
    # (``dict``) reaches here, where identifiers get their own clear message.
    def convert(value: Any) -> Any:
        if isinstance(value, Mapping):
            found = identifiers_in_input(value, ids)
            if found:
                raise identifier_error(found, valid)
        return inner(value) if inner is not None else value

    return convert


def input_param(schema: Mapping[str, Any], description: str | None = None) -> ParamSpec:
    """A ready ``input`` ParamSpec for backends that build specs by hand."""
    return ParamSpec(
        INPUT,
        dict(schema),
        required=True,
        closed=True,
        description=description or "Fields to change (deep-merged; null removes a field)",
    )


__all__ = ["apply_patch", "deep_merge", "identifier_error", "input_param", "patch_of", "update_semantics"]
