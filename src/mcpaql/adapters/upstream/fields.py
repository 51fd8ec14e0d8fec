"""Field selection for wrapped READ operations (REQ-FSEL-*; docs/collections.md "Wrapped operations").

Every wrapped READ operation gets an optional ``fields`` parameter (unless the upstream tool
already has one). Without it the result is exactly what :func:`~.ops.result_data` makes of
the upstream's. With it, the JSON that result holds (paths are relative to ``data`` as returned
without ``fields``: the structured content, text that parses as JSON, or — when text and
structured content say different things — both, as ``structuredContent.…``) is projected with
the shared :class:`~mcpaql.protocol.collections.fields.FieldSelector`: an object is one record,
an array is projected item by item, and dotted paths reach into nested objects and arrays of
objects.

The upstream declares no field list, so the selector is built per call from what is known:
the tool's ``outputSchema`` and the fields present in the result. A path found in neither is
rejected with ``VALIDATION_INVALID_VALUE`` listing the valid fields (Part F #16); a result that
is not JSON (plain text, images) is rejected the same way instead of being returned unprojected
(CQ §5). Presets: ``full`` is everything; ``standard`` the scalar fields of each record;
``minimal`` its id/name-like fields. When a record has none, both look one level down into
its objects and arrays of objects (``{"entities": [...]}`` → ``entities.name``…).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from ...protocol.collections.fields import JSON_PATH, JSON_PATH_PATTERN, FieldSelector, fields_schema
from ...protocol.errors import invalid_value
from ...protocol.operations import ParamSpec
from ...protocol.schema import resolve

FIELDS = "fields"
DESCRIPTION = "Result fields to keep: dotted paths or minimal|standard|full"
_SEGMENT = re.compile(r"^[^.\s]+$")
_IDENT = {"id", "uuid", "key", "name", "title", "slug", "number", "uri"}
_KNOWN_DEPTH = 4  # deeper paths below a listed one are accepted too (FieldSelector.is_known)
_PRESET_DEPTH = 2  # how far presets look down for records that are only containers


def fields_param() -> ParamSpec:
    """The ``fields`` parameter (``string | string[]``: a preset name or dotted paths)."""
    return ParamSpec(FIELDS, fields_schema(FieldSelector(None), JSON_PATH_PATTERN), description=DESCRIPTION)


def wants_fields(params: Iterable[ParamSpec]) -> bool:
    """False when the upstream tool already has a ``fields`` parameter (then it is left alone)."""
    return not any(p.name == FIELDS or p.target == FIELDS for p in params)


def select(data: Any, fields: Any, tool: str, output_schema: Mapping[str, Any] | None = None) -> Any:
    """The projected JSON of ``data`` — what :func:`~.ops.result_data` made of the upstream's
    result, so paths are relative to what the model sees without ``fields``."""
    value, schema_prefix = json_value(data, tool)
    records = [value] if isinstance(value, dict) else value
    known = known_paths(records, output_schema, schema_prefix)
    selector = FieldSelector(known or None, presets=presets(records), default="full", path_pattern=JSON_PATH)
    apply = selector.resolve(fields).compile()
    projected = [apply(r, None) for r in records]
    return projected[0] if isinstance(value, dict) else projected


def json_value(data: Any, tool: str) -> tuple[dict[str, Any] | list[dict[str, Any]], str]:
    """The JSON that ``data`` holds — an object or an array of objects — and where the tool's
    ``outputSchema`` (which describes ``structuredContent``) sits in it.

    * structured content alone (its text only repeated it): that object, schema at the top;
    * text: the text parsed as JSON (one block, or an array of the blocks when several);
    * text *and* structured content that says something else: ``data`` is both, so paths start
      with ``structuredContent.`` (or ``content.``), as the model sees them;
    * images, audio, resources, plain text: refused (nothing to select from).
    """
    if data is None:
        raise _not_json(tool, "an empty result")
    if isinstance(data, str):
        return _records_or_raise(_parsed(data, tool), tool, "JSON"), ""
    if _is_content(data):
        if "structuredContent" in data:
            return dict(data), "structuredContent."
        content = data["content"]
        other = sorted({str(b.get("type")) for b in content if not isinstance(b, Mapping) or b.get("type") != "text"})
        if other:
            raise _not_json(tool, f"{', '.join(other)} content")
        if not content:
            raise _not_json(tool, "an empty result")
        values = [_parsed(str(b.get("text", "")), tool) for b in content]
        return _records_or_raise(values[0] if len(values) == 1 else values, tool, "JSON"), ""
    return _records_or_raise(data, tool, "structured content"), ""


def _is_content(data: Any) -> bool:
    """True for the MCP result shape :func:`~.ops.result_data` returns (content blocks, each with
    a ``type``), not for structured content that merely has a ``content`` key."""
    if not (
        isinstance(data, dict)
        and isinstance(data.get("content"), list)
        and set(data) <= {"content", "structuredContent", "_meta"}
    ):
        return False
    blocks = data["content"]
    return all(isinstance(b, Mapping) and isinstance(b.get("type"), str) for b in blocks) and bool(blocks or len(data) > 1)


def _parsed(text: str, tool: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise _not_json(tool, "plain text") from None


def _records_or_raise(value: Any, tool: str, what: str) -> dict[str, Any] | list[dict[str, Any]]:
    if isinstance(value, dict) or (isinstance(value, list) and all(isinstance(v, dict) for v in value)):
        return value
    kind = "an array of non-objects" if isinstance(value, list) else f"a JSON {type(value).__name__}"
    raise _not_json(tool, f"{what} that is {kind}")


def _not_json(tool: str, got: str) -> Exception:
    return invalid_value(
        FIELDS,
        "json_result",
        f"needs a JSON result (an object or an array of objects) to select from; {tool or 'the tool'} returned {got}. "
        "Call it without 'fields' to get the whole result",
    )


def known_paths(
    records: list[dict[str, Any]], output_schema: Mapping[str, Any] | None = None, schema_prefix: str = ""
) -> list[str]:
    """The leaf paths declared by ``output_schema`` (below ``schema_prefix``) or present in the
    records, first seen first.

    Only leaves are listed: :meth:`FieldSelector.is_known` accepts their parents and anything
    below a leaf (an empty array, a list of strings, the depth limit), so a misspelt name
    under an object whose fields are known (``entities.nme``) is still rejected.
    """
    out: dict[str, None] = {}
    if output_schema:
        _schema_paths(resolve(dict(output_schema), "Output"), schema_prefix, 1 + schema_prefix.count("."), out)
    for r in records:
        _record_paths(r, "", 1, out)
    parents = {p[:i] for p in out for i, ch in enumerate(p) if ch == "."}
    return [p for p in out if p not in parents]


def _record_paths(node: Mapping[str, Any], prefix: str, depth: int, out: dict[str, None]) -> None:
    for k, v in node.items():
        if not _SEGMENT.match(k):
            continue
        path = prefix + k
        out[path] = None
        if depth >= _KNOWN_DEPTH:
            continue
        for child in _children(v):
            _record_paths(child, path + ".", depth + 1, out)


def _schema_paths(s: Any, prefix: str, depth: int, out: dict[str, None]) -> None:
    if not isinstance(s, dict):
        return
    for key in ("anyOf", "oneOf", "allOf"):
        for sub in s.get(key) or ():
            _schema_paths(sub, prefix, depth, out)
    if isinstance(s.get("items"), dict):
        _schema_paths(s["items"], prefix, depth, out)
    for k, v in (s.get("properties") or {}).items():
        if not _SEGMENT.match(k):
            continue
        out[prefix + k] = None
        if depth < _KNOWN_DEPTH:
            _schema_paths(v, prefix + k + ".", depth + 1, out)


def _children(v: Any) -> list[Mapping[str, Any]]:
    if isinstance(v, Mapping):
        return [v]
    if isinstance(v, list):
        return [x for x in v if isinstance(x, Mapping)]
    return []


def presets(records: list[dict[str, Any]]) -> dict[str, list[str]]:
    """``minimal`` (id/name-like fields) and ``standard`` (scalar fields) for these records.

    A preset that finds nothing is left out, and the selector's own default applies
    (standard: the top-level fields; minimal: name/title or the first field).
    """
    standard = _pick(records, "", _PRESET_DEPTH, lambda k, v: not isinstance(v, dict | list))
    minimal = _pick(records, "", _PRESET_DEPTH, lambda k, v: _ident(k) and not isinstance(v, dict | list))
    out: dict[str, list[str]] = {}
    if standard:
        out["standard"] = standard
    if minimal or standard:
        out["minimal"] = minimal or standard
    return out


def _ident(key: str) -> bool:
    low = key.lower()
    return low in _IDENT or low.endswith("_id") or key.endswith(("Id", "ID"))


def _pick(records: Sequence[Mapping[str, Any]], prefix: str, depth: int, keep: Callable[[str, Any], bool]) -> list[str]:
    picked = dict.fromkeys(prefix + k for r in records for k, v in r.items() if _SEGMENT.match(k) and keep(k, v))
    if picked or depth == 0:
        return list(picked)
    found: dict[str, None] = {}
    containers: dict[str, list[Mapping[str, Any]]] = {}
    for r in records:
        for k, v in r.items():
            if _SEGMENT.match(k):
                containers.setdefault(k, []).extend(_children(v))
    for k, children in containers.items():
        found.update(dict.fromkeys(_pick(children, prefix + k + ".", depth - 1, keep)))
    return list(found)


__all__ = ["DESCRIPTION", "FIELDS", "fields_param", "json_value", "known_paths", "presets", "select", "wants_fields"]
