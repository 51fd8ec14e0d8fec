"""JSON Schema helpers: resolve ``$ref``s, name nested types, and render ``ParameterInfo``.

Parameter schemas come from pydantic (Python adapters), from upstream ``inputSchema``s
(wrapped servers) or from adapter-schema files. They are normalized once, at registration,
into self-contained schemas; every object or enum shape gets a *type name* (its ``$defs``
name, its title, or a name derived from where it sits) so introspection can show the
whole shape through ``introspect types`` instead of flattening it to ``"object"``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

TYPE_NAME_KEY = "x-mcpaql-type"
RECURSIVE_KEY = "x-mcpaql-recursive"  # a recursion cut: the named type, shown by name
_JSON_TYPES = ("string", "integer", "number", "boolean", "object", "array", "null")


def pascal(*parts: str) -> str:
    words: list[str] = []
    for p in parts:
        words.extend(w for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", p) if w)
    return "".join(w[:1].upper() + w[1:] for w in words) or "Value"


def resolve(schema: dict[str, Any], name_hint: str) -> dict[str, Any]:
    """Return a copy of ``schema`` with local ``$ref``s inlined and object/enum shapes named.

    Recursive references are cut at the second visit (the nested occurrence keeps only its
    type name), so a self-referencing model cannot make resolution loop forever.
    """
    defs: dict[str, Any] = {}
    for key in ("$defs", "definitions"):
        defs.update(schema.get(key) or {})

    def walk(node: Any, hint: str, stack: tuple[str, ...]) -> Any:
        if not isinstance(node, dict):
            return node
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/"):
            ref_name = ref.rsplit("/", 1)[-1]
            target = defs.get(ref_name)
            if target is None:
                return {"description": node.get("description", "")}
            if ref_name in stack:
                return {"type": target.get("type", "object"), TYPE_NAME_KEY: ref_name, RECURSIVE_KEY: True}
            merged = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
            merged[TYPE_NAME_KEY] = ref_name
            return walk(merged, ref_name, (*stack, ref_name))
        out: dict[str, Any] = {}
        for k, v in node.items():
            if k in ("$defs", "definitions", "$schema", "$id"):
                continue
            if k == "properties" and isinstance(v, dict):
                out[k] = {pk: walk(pv, pascal(hint, pk), stack) for pk, pv in v.items()}
            elif k == "items" and isinstance(v, dict):
                out[k] = walk(v, pascal(hint, "item"), stack)
            elif k in ("anyOf", "oneOf", "allOf") and isinstance(v, list):
                out[k] = [walk(x, hint, stack) for x in v]
            elif k == "additionalProperties" and isinstance(v, dict):
                out[k] = walk(v, pascal(hint, "value"), stack)
            else:
                out[k] = v
        if TYPE_NAME_KEY not in out and ((_is_object(out) and out.get("properties")) or "enum" in out):
            title = out.get("title")
            out[TYPE_NAME_KEY] = title if isinstance(title, str) and title.isidentifier() and title[
                :1
            ].isupper() and hint.endswith(title) else hint
        return out

    return walk(copy.deepcopy(schema), name_hint, ())


def _is_object(s: dict[str, Any]) -> bool:
    t = s.get("type")
    return t == "object" or (isinstance(t, list) and "object" in t) or ("properties" in s and t is None)


def strip_null(s: dict[str, Any]) -> dict[str, Any]:
    """``Optional[X]`` arrives as ``anyOf: [X, {type: null}]``; introspection shows ``X``."""
    variants = s.get("anyOf")
    if isinstance(variants, list):
        non_null = [v for v in variants if v.get("type") != "null"]
        if len(non_null) == 1 and len(non_null) != len(variants):
            merged = {**non_null[0], **{k: v for k, v in s.items() if k != "anyOf"}}
            return merged
    return s


def type_label(s: dict[str, Any]) -> str:
    """Human-readable type for ``ParameterInfo.type`` (free text per the schema)."""
    s = strip_null(s)
    name = s.get(TYPE_NAME_KEY)
    if name and (_is_object(s) and (s.get("properties") or s.get(RECURSIVE_KEY))):
        return str(name)
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list):
            labels = []
            for v in s[key]:
                lab = type_label(v)
                if lab not in labels:
                    labels.append(lab)
            return " | ".join(labels)
    t = s.get("type")
    if isinstance(t, list):
        return " | ".join(str(x) for x in t)
    if t == "array":
        items = s.get("items")
        if isinstance(items, dict) and items:
            inner = type_label(items)
            return "array" if inner in ("any",) else f"{inner}[]" if " " not in inner else "array"
        return "array"
    if t:
        return str(t)
    if "enum" in s:
        return "string"
    if "properties" in s:
        return "object"
    return "any"


_INFO_KEYS = ("minimum", "maximum", "minLength", "maxLength", "pattern", "format")


def parameter_info(
    name: str,
    s: dict[str, Any],
    required: bool,
    description: str | None = None,
    default: Any = ...,
    sensitive: bool = False,
) -> dict[str, Any]:
    """Render a ParameterInfo (CHECKLIST C.4): only the keys the closed schema allows."""
    s = strip_null(s)
    info: dict[str, Any] = {"name": name, "type": type_label(s), "required": required}
    desc = description if description is not None else s.get("description")
    if desc:
        info["description"] = desc
    if default is not ...:
        info["default"] = default
    elif "default" in s:
        info["default"] = s["default"]
    if isinstance(s.get("enum"), list):
        info["enum"] = list(s["enum"])
    for key in _INFO_KEYS:
        if key in s:
            info[key] = s[key]
    if "exclusiveMinimum" in s and "minimum" not in s and isinstance(s["exclusiveMinimum"], int | float):
        info["minimum"] = s["exclusiveMinimum"]
    if "exclusiveMaximum" in s and "maximum" not in s and isinstance(s["exclusiveMaximum"], int | float):
        info["maximum"] = s["exclusiveMaximum"]
    if s.get("type") == "array" and isinstance(s.get("items"), dict) and s["items"]:
        item = item_info(s["items"])
        if item != {"type": type_label(s)[:-2]}:  # "string[]" already says all of {"type":"string"}
            info["items"] = item
    if sensitive or s.get("writeOnly") or s.get("format") == "password":
        info["sensitive"] = True
    return info


def item_info(s: dict[str, Any]) -> dict[str, Any]:
    """``ParameterInfo.items``: the element's facets. The schema leaves ``items`` unchecked
    ("nested ParameterInfo by convention"), and an element has no name and no required flag,
    so those keys, which cost every array parameter tokens in every detail, are left out."""
    info = parameter_info("item", s, True)
    del info["name"], info["required"]
    return info


def walk_named(s: dict[str, Any], visit: Callable[[str, dict[str, Any]], None]) -> None:
    """Call ``visit(type_name, schema)`` for every named object/enum shape inside ``s``."""
    seen: set[int] = set()

    def go(node: Any) -> None:
        if not isinstance(node, dict) or id(node) in seen:
            return
        seen.add(id(node))
        name = node.get(TYPE_NAME_KEY)
        if name and ((_is_object(node) and node.get("properties")) or "enum" in node):
            visit(str(name), node)
        for key in ("properties",):
            for v in (node.get(key) or {}).values():
                go(v)
        for key in ("items", "additionalProperties"):
            go(node.get(key))
        for key in ("anyOf", "oneOf", "allOf"):
            for v in node.get(key) or []:
                go(v)

    go(s)


def json_type_of(value: Any) -> str:
    """The JSON type name of a Python value decoded from JSON (for error details)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, dict):
        return "object"
    return "unknown"


def is_json_type(t: str) -> bool:
    return t in _JSON_TYPES
