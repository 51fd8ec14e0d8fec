"""JSON Schema helpers: resolve ``$ref``s, name nested types, and render ``ParameterInfo``.

Parameter schemas come from pydantic (Python adapters), from upstream ``inputSchema``s
(wrapped servers), from OpenAPI documents or from adapter-schema files. They are normalized
once, at registration: every object or enum shape gets a *type name* (its ``$defs`` name, its
title, or a name derived from where it sits) so introspection can show the whole shape through
``introspect types`` instead of flattening it to ``"object"``.

Resolution is *shared*, not copied (:class:`SchemaContext`): each ``$ref`` target is resolved
once per context and every reference to it gets the same resolved object, so a document whose
references fan out (3 ways, 12 deep) or a large API whose 1,000 operations all reach the same
components costs what its distinct shapes cost, not the size of their expansion. The result is a
DAG (recursion is cut where a reference comes back to a shape still being resolved: the inner
occurrence keeps only its type name), so anything that walks it must not assume a tree
(:func:`walk_named` keeps a seen-set; the validator compiles each shared node once).

Expansion is bounded: a resolved shape deeper than :data:`MAX_DEPTH` levels, or a context that
would build more than :data:`MAX_NODES` schema nodes, raises :class:`SchemaTooComplex` with a
one-line reason. Callers skip the one operation whose schema that is, never the whole server.

Names are distinct per distinct shape and deterministic (document order): the context keeps one
name table, and a shape that wants a name already given to a *different* shape gets the next free
``Name2``, ``Name3`` … (two union variants, an enum and an object both called ``…Source``, get
``…SourceEnum`` and ``…SourceObject``).
"""

from __future__ import annotations

import copy
import functools
import json
import re
from collections.abc import Callable
from typing import Any

TYPE_NAME_KEY = "x-mcpaql-type"
RECURSIVE_KEY = "x-mcpaql-recursive"  # a recursion cut: the named type, shown by name

MAX_DEPTH = 64
"""Deepest resolved schema served (levels of properties/items/variants, references followed).
Real API descriptions stay well under 30; Python's own recursion limit is the reason for a bound."""
MAX_NODES = 400_000
"""Most schema nodes one context builds: a size budget for a whole document (GitHub's REST
description needs a small fraction of it)."""

# Keys that are annotations for people or code generators, never constraints: not carried over.
_DROPPED = frozenset(("$defs", "definitions", "$schema", "$id", "$comment", "components", "xml", "externalDocs", "nullable"))
# Keys whose value is one subschema / a list of subschemas / a name → subschema map.
_COMBINATORS = ("anyOf", "oneOf", "allOf")


class SchemaTooComplex(ValueError):
    """A schema past the depth or size budget; the message is one line, safe to show."""


@functools.lru_cache(maxsize=1 << 16)  # the same parameter and property names recur across a document
def pascal(*parts: str) -> str:
    words: list[str] = []
    for p in parts:
        words.extend(w for w in re.split(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])", p) if w)
    return "".join(w[:1].upper() + w[1:] for w in words) or "Value"


def _unescape(part: str) -> str:
    return part.replace("~1", "/").replace("~0", "~")


class SchemaContext:
    """Resolution state shared by the schemas of one registry or one document.

    ``memo`` maps a ``$ref`` target (by identity; the raw target is kept alive beside it) to its
    resolved form; ``names`` maps each given type name to the fingerprint of the shape that owns
    it. ``cache`` is free for consumers that derive something per resolved node (type entries).
    """

    def __init__(self, *, root: dict[str, Any] | None = None, max_depth: int = MAX_DEPTH, max_nodes: int = MAX_NODES) -> None:
        """``root``: the document references are looked up in when the schema itself does not
        hold their target (an OpenAPI document, for response schemas that name components)."""
        self.root = root
        self.max_depth = max_depth
        self.ref_depth = max_depth // 2
        self.max_nodes = max_nodes
        self.nodes = 0
        self.memo: dict[int, tuple[Any, dict[str, Any], int]] = {}
        self.names: dict[str, str] = {}
        self.cache: dict[Any, Any] = {}
        self.by_name: dict[str, dict[str, Any]] = {}  # a referenced shape's name → its resolved form
        self._by_fingerprint: dict[tuple[str, str], str] = {}
        self._next_suffix: dict[str, int] = {}
        self._in_progress: dict[int, str] = {}
        self._ref_names: dict[int, str] = {}
        self._pending: list[tuple[dict[str, Any], str, dict[str, Any]]] = []
        # Nodes whose types one registry already lists (see fork); None: list everything each time.
        self.listed: set[int] | None = None

    def fork(self) -> SchemaContext:
        """The same resolved shapes and names, with its own record of the types already listed:
        one per registry build, so each shared shape's types are walked once per registry, not
        once per operation that reaches it."""
        child = copy.copy(self)
        child.listed = set()
        return child

    # ---- naming ----------------------------------------------------------------------------

    def name(self, preferred: str, fingerprint: str) -> str:
        """The type name for a shape that would like ``preferred``: the same shape always gets the
        same name, a different shape a numbered one."""
        key = (preferred, fingerprint)
        got = self._by_fingerprint.get(key)
        if got is not None:
            return got
        name, i = preferred, self._next_suffix.get(preferred, 2)
        if name in self.names and self.names[name] != fingerprint:
            while f"{preferred}{i}" in self.names:
                i += 1
            name = f"{preferred}{i}"
            self._next_suffix[preferred] = i + 1
        self.names[name] = fingerprint
        self._by_fingerprint[key] = name
        return name

    # ---- resolution ------------------------------------------------------------------------

    def resolve(self, schema: dict[str, Any], name_hint: str) -> dict[str, Any]:
        """``schema`` with local ``$ref``s resolved (shared) and object/enum shapes named."""
        try:
            out, _ = self._walk(schema, schema, name_hint, 0)
            while self._pending:  # shapes cut from long chains, each resolved once from the top
                root, ref, target = self._pending.pop()
                if id(target) not in self.memo:
                    self._ref({"$ref": ref}, ref, root, 0)
        except RecursionError:  # pragma: no cover - the depth bounds keep well below the limit
            raise SchemaTooComplex(f"schema nested more than {self.max_depth} levels deep") from None
        finally:
            self._pending.clear()
        return out if isinstance(out, dict) else {}

    def _target(self, root: dict[str, Any], ref: str) -> Any:
        node = self._pointer(root, ref)
        if node is None and self.root is not None and self.root is not root:
            node = self._pointer(self.root, ref)
        return node

    @staticmethod
    def _pointer(root: dict[str, Any], ref: str) -> Any:
        if not ref.startswith("#"):
            return None  # external references are not fetched
        node: Any = root
        for part in ref[1:].split("/")[1:] if ref != "#" else []:
            part = _unescape(part)
            if isinstance(node, dict):
                node = node.get(part)
            elif isinstance(node, list) and part.isdigit() and int(part) < len(node):
                node = node[int(part)]
            else:
                return None
        if node is None and ref.count("/") >= 1:  # "#/$defs/X" written for "#/definitions/X" and vice versa
            last = _unescape(ref.rsplit("/", 1)[-1])
            for key in ("$defs", "definitions"):
                cand = (root.get(key) or {}).get(last) if isinstance(root.get(key), dict) else None
                if cand is not None:
                    return cand
        return node

    def _walk(self, node: Any, root: dict[str, Any], hint: str, depth: int) -> tuple[Any, int]:
        """(resolved node, its height). Heights bound the depth of what is built."""
        if not isinstance(node, dict):
            return node, 0
        if depth > self.max_depth:
            raise SchemaTooComplex(f"schema nested more than {self.max_depth} levels deep")
        ref = node.get("$ref")
        if isinstance(ref, str):
            return self._ref(node, ref, root, depth)
        self.nodes += 1
        if self.nodes > self.max_nodes:
            raise SchemaTooComplex(f"schemas too large to serve (more than {self.max_nodes} schema nodes)")
        out: dict[str, Any] = {}
        height = 0

        def sub(value: Any, sub_hint: str) -> Any:
            nonlocal height
            if not isinstance(value, dict):  # boolean schemas (true: anything, false: nothing) and junk
                value = {"not": {}} if value is False else {}
            r, h = self._walk(value, root, sub_hint, depth + 1)
            height = max(height, h + 1)
            return r

        for k, v in node.items():
            if k in _DROPPED or k == "$ref":
                continue
            if k in ("properties", "patternProperties") and isinstance(v, dict):
                out[k] = {pk: sub(pv, pascal(hint, pk) if k == "properties" else pascal(hint, "value")) for pk, pv in v.items()}
            elif k == "items" and isinstance(v, dict):
                out[k] = sub(v, pascal(hint, "item"))
            elif k in ("items", "prefixItems") and isinstance(v, list):
                out[k] = [sub(x, pascal(hint, "item", str(i + 1))) for i, x in enumerate(v)]
            elif k in _COMBINATORS and isinstance(v, list):
                kinds = [_kind_word(x) for x in v]
                named = [x for x in v if isinstance(x, dict) and "$ref" not in x and _kind_word(x)]
                out[k] = [sub(x, pascal(hint, kinds[i]) if len(named) > 1 and kinds[i] else hint) for i, x in enumerate(v)]
            elif k == "additionalProperties" and isinstance(v, dict):
                out[k] = sub(v, pascal(hint, "value"))
            else:
                out[k] = v  # constraints and annotations: shared, never copied
        nullable = node.get("nullable") is True  # OpenAPI 3.0's spelling of "or null"
        t = out.get("type")
        if nullable and isinstance(t, str):
            out["type"] = [t, "null"]
        elif nullable and isinstance(t, list) and "null" not in t:
            out["type"] = [*t, "null"]
        if TYPE_NAME_KEY not in out and ((_is_object(out) and out.get("properties")) or "enum" in out):
            title = out.get("title")
            preferred = (
                title
                if isinstance(title, str) and title.isidentifier() and title[:1].isupper() and hint.endswith(title)
                else hint
            )
            out[TYPE_NAME_KEY] = self.name(preferred, "shape:" + _fingerprint(out))
        if nullable and not isinstance(t, str | list) and "enum" not in out:
            out = {"anyOf": [out, {"type": "null"}]}
        return out, height

    def _ref(self, node: dict[str, Any], ref: str, root: dict[str, Any], depth: int) -> tuple[Any, int]:
        target = self._target(root, ref)
        if not isinstance(target, dict):
            return ({"description": node["description"]} if isinstance(node.get("description"), str) else {}), 0
        key = id(target)
        if key in self._in_progress:  # a cycle: the inner occurrence is shown by name
            return _cut(target, self._in_progress[key]), 0
        hit = self.memo.get(key)
        if hit is None and depth >= self.ref_depth:
            # A long chain of distinct shapes: shown by name here, resolved on its own (from depth
            # 0, after this schema) so its type is still listed and checked where it starts.
            self._pending.append((root, ref, target))
            return _cut(target, self._ref_name(key, ref, target)), 0
        if hit is None:
            name = self._ref_name(key, ref, target)
            self._in_progress[key] = name
            try:
                resolved, h = self._walk({**target, TYPE_NAME_KEY: name}, root, name, depth + 1)
            finally:
                del self._in_progress[key]
            hit = (target, resolved, h + 1)
            self.memo[key] = hit
            if isinstance(resolved, dict):
                self.by_name.setdefault(str(resolved.get(TYPE_NAME_KEY, name)), resolved)
        _, resolved, height = hit
        if depth + height > self.max_depth:
            return _cut(target, str(resolved.get(TYPE_NAME_KEY)) if isinstance(resolved, dict) else "Value"), 0
        siblings = {k: v for k, v in node.items() if k not in ("$ref", "$comment")}
        if siblings and isinstance(resolved, dict):  # "$ref" beside a description/nullable: a shallow variant
            extra, _ = self._walk({k: v for k, v in siblings.items() if k != "nullable"}, root, "Value", depth + 1)
            merged = {**resolved, **{k: v for k, v in extra.items() if k != TYPE_NAME_KEY}}
            if siblings.get("nullable") is True:
                return {"anyOf": [merged, {"type": "null"}]}, height + 1
            return merged, height
        return resolved, height

    def _ref_name(self, key: int, ref: str, target: dict[str, Any]) -> str:
        name = self._ref_names.get(key)
        if name is None:
            preferred = pascal(_unescape(ref.rsplit("/", 1)[-1])) if "/" in ref else "Value"
            if not preferred[:1].isalpha():
                preferred = pascal("type", preferred)
            name = self._ref_names[key] = self.name(preferred, "ref:" + _raw_fingerprint(target))
        return name


def _cut(target: dict[str, Any], name: str) -> dict[str, Any]:
    """A named shape shown by name only (a cycle, or a chain too long to nest further)."""
    t = target.get("type")
    return {"type": t if isinstance(t, str | list) else "object", TYPE_NAME_KEY: name, RECURSIVE_KEY: True}


def _kind_word(s: Any) -> str:
    """How a union variant is told apart in its type name (``…Enum``, ``…Object``)."""
    if not isinstance(s, dict):
        return ""
    if "enum" in s:
        return "enum"
    if s.get("type") == "object" or "properties" in s:
        return "object"
    if s.get("type") == "array":
        return "list"
    return ""


def _light(v: Any) -> Any:
    """A value with every named (already fingerprinted) sub-shape replaced by its name."""
    if isinstance(v, dict):
        name = v.get(TYPE_NAME_KEY)
        if name is not None:
            return {"$type": name}
        return {k: _light(x) for k, x in v.items()}
    if isinstance(v, list):
        return [_light(x) for x in v]
    return v


def _fingerprint(out: dict[str, Any]) -> str:
    return json.dumps({k: _light(v) for k, v in out.items() if k != TYPE_NAME_KEY}, sort_keys=True, default=str)


def _raw_fingerprint(target: dict[str, Any]) -> str:
    try:
        return json.dumps(target, sort_keys=True, default=str)
    except (ValueError, RecursionError):  # a cyclic or absurdly deep mapping: identity is all we can say
        return f"id:{id(target)}"


def resolve(schema: dict[str, Any], name_hint: str, context: SchemaContext | None = None) -> dict[str, Any]:
    """Return ``schema`` with local ``$ref``s resolved and object/enum shapes named (see the module
    docstring); ``context`` shares resolved references and the name table between schemas."""
    return (context or SchemaContext()).resolve(schema, name_hint)


def _is_object(s: dict[str, Any]) -> bool:
    t = s.get("type")
    return t == "object" or (isinstance(t, list) and "object" in t) or ("properties" in s and t is None)


def strip_null(s: dict[str, Any]) -> dict[str, Any]:
    """``Optional[X]`` arrives as ``anyOf: [X, {type: null}]``; introspection shows ``X``."""
    variants = s.get("anyOf")
    if isinstance(variants, list):
        non_null = [v for v in variants if not isinstance(v, dict) or v.get("type") != "null"]
        if len(non_null) == 1 and len(non_null) != len(variants) and isinstance(non_null[0], dict):
            merged = {**non_null[0], **{k: v for k, v in s.items() if k != "anyOf"}}
            return merged
    return s


def type_label(s: dict[str, Any], _depth: int = 0) -> str:
    """Human-readable type for ``ParameterInfo.type`` (free text per the schema). Named shapes are
    shown by name, so the label stays short; unions nested past a few levels read ``any``."""
    if _depth > 4 or not isinstance(s, dict):
        return "any"
    s = strip_null(s)
    name = s.get(TYPE_NAME_KEY)
    if name and (_is_object(s) and (s.get("properties") or s.get(RECURSIVE_KEY))):
        return str(name)
    for key in ("anyOf", "oneOf"):
        if isinstance(s.get(key), list):
            labels = []
            for v in s[key]:
                lab = type_label(v, _depth + 1)
                if lab not in labels:
                    labels.append(lab)
            return " | ".join(labels)
    t = s.get("type")
    if isinstance(t, list):
        return " | ".join(str(x) for x in t)
    if t == "array":
        items = s.get("items")
        if isinstance(items, dict) and items:
            inner = type_label(items, _depth + 1)
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


def walk_named(s: dict[str, Any], visit: Callable[[str, dict[str, Any]], None], context: SchemaContext | None = None) -> None:
    """Call ``visit(type_name, schema)`` for every named object/enum shape inside ``s``; with the
    ``context`` it was resolved in, shapes shown only by name (cycles, long chains) are visited too,
    and a forked context's shapes already visited for its registry are not visited again.
    Iterative: a resolved schema may be a deep DAG."""
    seen: set[int] = context.listed if context is not None and context.listed is not None else set()
    stack: list[Any] = [s]
    while stack:
        node = stack.pop()
        if not isinstance(node, dict) or id(node) in seen:
            continue
        seen.add(id(node))
        name = node.get(TYPE_NAME_KEY)
        if node.get(RECURSIVE_KEY) and context is not None and name in context.by_name:
            stack.append(context.by_name[str(name)])
            continue
        if name and ((_is_object(node) and node.get("properties")) or "enum" in node):
            visit(str(name), node)
        children: list[Any] = []
        for key in ("properties", "patternProperties"):
            sub = node.get(key)
            children.extend(sub.values() if isinstance(sub, dict) else ())
        for key in ("items", "additionalProperties"):
            children.append(node.get(key))
        for key in ("anyOf", "oneOf", "allOf", "prefixItems", "items"):
            sub = node.get(key)
            children.extend(sub if isinstance(sub, list) else ())
        stack.extend(reversed(children))  # visit in document order


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
