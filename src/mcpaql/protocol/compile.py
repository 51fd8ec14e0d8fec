"""Turn an :class:`OperationSpec` into a :class:`CompiledOperation`: lookup tables and
checkers built once, so binding a request is a handful of dictionary operations.

Binding order follows OPS §5.4: unknown parameters are rejected first (before defaults,
REQ-VAL-012), then required ones, then types and constraints, then defaults, then the
conversion into the handler's Python types.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from .errors import MCPAQLError, invalid_type, invalid_value, missing_param, repr_list
from .limits import encoding_error
from .operations import NO_DEFAULT, OperationSpec, ParamSpec
from .schema import type_label
from .validate import Checker, Memo, checker_for

_RESERVED_KEYS = frozenset({"operation", "params"})


def _contains_nul(value: Any) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if isinstance(value, dict):
        return any(_contains_nul(k) or _contains_nul(v) for k, v in value.items())
    if isinstance(value, list):
        return any(_contains_nul(v) for v in value)
    return False


def _pydantic_problem(e: ValidationError, name: str) -> MCPAQLError:
    first = e.errors(include_url=False)[0]
    loc = ".".join(str(p) for p in first.get("loc", ()) if p != "__root__")
    path = f"{name}.{loc}" if loc else name
    msg = str(first.get("msg", "is invalid"))
    if msg.startswith("Value error, "):
        msg = msg[len("Value error, ") :]
    return invalid_value(path, str(first.get("type", "value")), f"is invalid: {msg}")


@dataclass(slots=True)
class Bound:
    kwargs: dict[str, Any]
    meta: dict[str, Any]
    values: dict[str, Any]


class CompiledOperation:
    __slots__ = (
        "aliases",
        "checkers",
        "defaults",
        "handler",
        "params",
        "required",
        "spec",
        "valid_params",
    )

    def __init__(self, spec: OperationSpec, memo: Memo | None = None) -> None:
        """``memo``: one per engine build, so operations sharing resolved sub-schemas compile
        them once; checkers for whole parameter shapes are shared anyway (``checker_for``)."""
        self.spec = spec
        self.handler: Callable[..., Any] | None = spec.handler
        self.params: dict[str, ParamSpec] = {p.name: p for p in spec.params}
        self.checkers: dict[str, Checker] = {p.name: checker_for(p.schema, p.closed, memo) for p in spec.params}
        self.required = tuple(p for p in spec.params if p.required)
        self.defaults = tuple(p for p in spec.params if p.default is not NO_DEFAULT and not p.required)
        self.valid_params = sorted(self.params)
        self.aliases: dict[str, str] = {}
        for p in spec.params:
            # camelCase spellings are accepted and normalised (REQ-VAL-002); the canonical
            # name stays snake_case in introspection.
            camel = re.sub(r"_([a-z0-9])", lambda m: m.group(1).upper(), p.name)
            if camel != p.name:
                self.aliases[camel] = p.name
            if p.map_to and p.map_to != p.name and NAME_OK(p.map_to) is False:
                self.aliases.setdefault(p.map_to, p.name)

    def bind(self, request: dict[str, Any], strict: bool, has_nul: bool, warnings: list[dict[str, Any]]) -> Bound:
        op = self.spec.name
        raw_params = request.get("params")
        if raw_params is None:
            raw_params = {}
        elif not isinstance(raw_params, dict):
            raise invalid_type("params", "object", _jt(raw_params))
        values: dict[str, Any] = {}
        meta: dict[str, Any] = {}
        unknown: list[str] = []
        params = self.params
        for k, v in raw_params.items():
            if k in params:
                values[k] = v
            elif k.startswith("_"):
                meta[k] = v
            else:
                alias = self.aliases.get(k)
                if alias is not None and alias not in raw_params:
                    values[alias] = v
                else:
                    unknown.append(k)
        if len(request) > 2 or (len(request) == 2 and "params" not in request):
            for k, v in request.items():
                if k in _RESERVED_KEYS:
                    continue
                if k.startswith("_"):
                    meta.setdefault(k, v)
                elif k in params:
                    values.setdefault(k, v)  # params.<name> wins (REQ-RQF-006)
                elif self.aliases.get(k) in params:
                    values.setdefault(self.aliases[k], v)
                else:
                    unknown.append(k)
        if unknown:
            if strict:
                listed = repr_list(unknown)
                raise MCPAQLError(
                    "VALIDATION_UNKNOWN_PARAM",
                    f"Unknown parameter(s) for operation '{op}': {listed}. "
                    f"Valid parameters: {repr_list(self.valid_params) or '(none)'}",
                    {"operation": op, "unknown_params": unknown, "valid_params": self.valid_params},
                )
            warnings.append(
                {
                    "code": "VALIDATION_UNKNOWN_PARAM_WARNING",
                    "message": f"Ignored unknown parameter(s) for operation '{op}'",
                    "details": {"unknown_params": unknown, "valid_params": self.valid_params},
                }
            )
        for p in self.required:
            if p.name not in values:
                missing = [q.name for q in self.required if q.name not in values]
                raise missing_param(p.name, op, type_label(p.schema), description=p.description or None, missing=missing)
        checkers = self.checkers
        for k, v in values.items():
            p = params[k]
            if has_nul and not p.allow_nul and _contains_nul(v):
                raise encoding_error(k)
            if v is None and not p.required and (p.nullable or _nullable(p)):
                continue
            values[k] = checkers[k](v, k)
        for p in self.defaults:
            if p.name not in values:
                d = p.default
                values[p.name] = copy.deepcopy(d) if isinstance(d, dict | list) else d
        kwargs: dict[str, Any] = {}
        for k, v in values.items():
            p = params[k]
            if p.convert is not None:
                try:
                    v = p.convert(v)
                except ValidationError as e:
                    raise _pydantic_problem(e, k) from None
                except (ValueError, TypeError) as e:
                    raise invalid_value(k, "value", f"is invalid: {e}") from None
            kwargs[p.target] = v
        return Bound(kwargs, meta, values)


def NAME_OK(name: str) -> bool:
    return re.fullmatch(r"[a-z][a-z0-9_]*", name) is not None


def _jt(v: Any) -> str:
    from .schema import json_type_of

    return json_type_of(v)


def _nullable(p: ParamSpec) -> bool:
    s = p.schema
    t = s.get("type")
    if t == "null" or (isinstance(t, list) and "null" in t):
        return True
    return any(isinstance(v, dict) and v.get("type") == "null" for v in s.get("anyOf") or ())
