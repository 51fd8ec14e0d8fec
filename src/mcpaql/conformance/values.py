"""Building parameter values from introspection alone (ParameterInfo + type details).

A probe value has to get past the server's *own* validation — and, for a wrapped server, past
the upstream's — or the probe tests nothing. So every value comes from what the parameter's
documentation says, most specific first:

1. ``enum`` (first value), an optional parameter's ``default``;
2. the documented facets: ``format`` (a well-formed sample per format), ``minimum``/``maximum``
   (a value strictly inside the bounds, since exclusive bounds are shown as inclusive ones),
   ``minLength``/``maxLength``, ``pattern`` (a matching string, :mod:`.patterns`);
3. examples written in the description (``e.g. 'America/New_York'``, quoted values);
4. when no facet says: the parameter's name (``path`` → ``.``, ``url`` → a loopback URL,
   ``range`` → ``A1:B2``, ``timezone`` → ``UTC``, ``revision`` → ``HEAD`` …);
5. the run's tag (``mcpaql-conformance-<run>``), padded or cut to the length bounds.

Every candidate is checked against the pattern and length bounds before it is used. Addresses
are loopback unless the run allows the network (:mod:`.network`). When no value satisfying the
documentation can be built the caller is told (:class:`CannotBuild`) and SKIPs.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Any, cast

from . import network
from .patterns import MAX_OUTPUT, Unsupported, compile_safe, matching

UNKNOWN_PARAM = "mcpaql_conformance_probe"
MISSING_ID = "mcpaql-conformance-missing-0"
TAG = "mcpaql-conformance"

# Parameters that collection operations commonly accept (INTRO §8.1.2, CQ): probed for completeness.
CROSS_CUTTING = (
    "fields",
    "limit",
    "offset",
    "first",
    "after",
    "last",
    "before",
    "cursor",
    "page",
    "page_size",
    "sort",
    "sort_by",
    "order",
    "filter",
    "query",
    "include_deleted",
)

# A well-formed sample for each string format (JSON Schema 2020-12 §7.3, plus OpenAPI's).
FORMAT_SAMPLES: dict[str, str] = {
    "date-time": "2026-01-02T03:04:05Z",
    "date": "2026-01-02",
    "time": "03:04:05Z",
    "duration": "P1D",
    "email": "conformance@example.com",
    "idn-email": "conformance@example.com",
    "hostname": "localhost",
    "idn-hostname": "localhost",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
    "uuid": "00000000-0000-4000-8000-000000000000",
    "json-pointer": "/mcpaql-conformance",
    "relative-json-pointer": "0",
    "regex": "^mcpaql-conformance$",
    "byte": "bWNwYXFs",
    "binary": "mcpaql",
    "password": "mcpaql-conformance",
    "int32": "1",
    "int64": "1",
    "float": "1.5",
    "double": "1.5",
    "decimal": "1.5",
}
URL_FORMATS = frozenset({"uri", "url", "iri", "uri-reference", "iri-reference", "uri-template"})

# Name hints, used only when no facet of the parameter says what it holds: (token regex, value).
# Tokens are the snake_case words of the name; the first rule that matches wins.
_NAME_HINTS: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(rf"(^|_)(?:{words})($|_)"), value)
    for words, value in (
        ("cell_range|range|ranges|cells|a1_range|a1_notation", "A1:B2"),
        ("cell|start_cell|end_cell", "A1"),
        ("sheet|sheet_name|worksheet|tab", "Sheet1"),
        ("timezone|time_zone|tz|tzname", "UTC"),
        ("email|email_address", FORMAT_SAMPLES["email"]),
        ("datetime|date_time|timestamp|since|until", FORMAT_SAMPLES["date-time"]),
        ("date|day", FORMAT_SAMPLES["date"]),
        ("time", "12:00"),
        ("revision|rev|ref|commit|sha|commit_sha|treeish", "HEAD"),
        ("branch|branch_name|base_branch", "main"),
        ("lang|language|locale", "en"),
        ("country|country_code", "US"),
        ("currency", "USD"),
        ("uuid|guid", FORMAT_SAMPLES["uuid"]),
        ("sql", "SELECT 1"),
        ("file|filename|file_name", "mcpaql-conformance.txt"),
        ("path|paths|filepath|file_path|dir|directory|folder|cwd|root|repo_path|dirpath", "."),
    )
)
_EXAMPLE_MARKER = re.compile(r"\b(?:e\.\s?g\.?|eg\.|for example|for instance|such as|examples?:|like)\s*", re.I)
_QUOTED = re.compile(r"'([^'\n]{1,80})'|\"([^\"\n]{1,80})\"|`([^`\n]{1,80})`")


class CannotBuild(Exception):
    """No value satisfying the documented constraints could be built."""


def is_id_like(name: str) -> bool:
    return name == "id" or name.endswith("_id") or name.endswith("_ids")


def base_type(t: str) -> str:
    t = (t or "").strip()
    if "|" in t:
        t = t.split("|")[0].strip()
    return t


def description_examples(description: Any) -> list[str]:
    """Values a description offers: quoted ones after "e.g."/"for example"/"such as" first,
    then any other quoted value (``'local'``, ``'remote'``)."""
    if not isinstance(description, str) or not description:
        return []
    text = description[:2000]
    after: list[str] = []
    for m in _EXAMPLE_MARKER.finditer(text):
        window = text[m.end() : m.end() + 160]
        after += [next(g for g in q.groups() if g is not None) for q in _QUOTED.finditer(window)]
    anywhere = [next(g for g in q.groups() if g is not None) for q in _QUOTED.finditer(text)]
    return list(dict.fromkeys(v.strip() for v in after + anywhere if v.strip()))


def name_hint(name: str, description: Any = None) -> str | None:
    low = re.sub(r"[^a-z0-9]+", "_", re.sub(r"([a-z0-9])([A-Z])", r"\1_\2", name).lower()).strip("_")
    if network.is_address_param({"name": low}):
        return network.LOOPBACK_URL
    if low in ("query", "statement", "q") and isinstance(description, str) and re.search(r"\bSQL\b", description):
        return "SELECT 1"
    for rx, value in _NAME_HINTS:
        if rx.search(low):
            return value
    return None


def _url(allow_network: bool) -> str:
    return network.PUBLIC_URL if allow_network else network.LOOPBACK_URL


def _fits(v: str, p: dict[str, Any], compiled: re.Pattern[str] | None, allow_network: bool) -> bool:
    lo, hi = p.get("minLength"), p.get("maxLength")
    if isinstance(lo, int) and len(v) < lo:
        return False
    if (isinstance(hi, int) and len(v) > hi) or (len(v) > MAX_OUTPUT and compiled is not None):
        return False
    if compiled is not None and not compiled.search(v):
        return False
    return allow_network or not network.is_remote_value(v, p)


def _fit_string(p: dict[str, Any], seed: str, allow_network: bool = False) -> str:
    name = str(p.get("name") or "")
    fmt = str(p.get("format") or "").lower()
    pattern = p.get("pattern")
    compiled: re.Pattern[str] | None = None
    if isinstance(pattern, str):
        try:
            compiled, _ = compile_safe(pattern)
        except Unsupported as e:
            raise CannotBuild(f"the pattern of '{name}' is not used for probes ({e})") from None
    candidates: list[str] = []
    if fmt in URL_FORMATS:
        candidates += [_url(allow_network), network.LOOPBACK_URL.replace("http://", "https://")]
    elif fmt in FORMAT_SAMPLES:
        candidates.append(FORMAT_SAMPLES[fmt])
    examples = description_examples(p.get("description"))
    hint = name_hint(name, p.get("description"))
    if hint == network.LOOPBACK_URL:
        hint = _url(allow_network)
    candidates += examples[:6] if not fmt else [e for e in examples[:6] if fmt not in URL_FORMATS or "://" in e]
    if hint is not None and fmt not in FORMAT_SAMPLES and fmt not in URL_FORMATS:
        candidates.append(hint)
    lo = cast(int, p.get("minLength")) if isinstance(p.get("minLength"), int) else 0  # int: checked just before
    hi = p.get("maxLength") if isinstance(p.get("maxLength"), int) else None
    padded = seed + "x" * max(0, lo - len(seed))
    candidates.append(padded[:hi] if hi is not None else padded)
    for c in candidates:
        if _fits(c, p, compiled, allow_network):
            return c
    if isinstance(pattern, str):
        try:
            v = matching(pattern, lo, hi)
        except (Unsupported, ValueError):
            v = None
        if v is not None and _fits(v, p, compiled, allow_network):
            return v
        raise CannotBuild(f"no value built for '{name}' matches its pattern '{pattern}' and length bounds")
    raise CannotBuild(f"no value built for '{name}' fits its documented length bounds")


def _number(p: dict[str, Any], integer: bool) -> int | float:
    """A value strictly inside the documented bounds when there is room (ParameterInfo shows an
    exclusive bound as ``minimum``/``maximum``), else on the bound."""
    lo, hi = (
        v if isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) else None
        for v in (p.get("minimum"), p.get("maximum"))
    )
    if integer:
        lo = math.ceil(lo) if lo is not None else None
        hi = math.floor(hi) if hi is not None else None
    if lo is not None and hi is not None and hi < lo:
        raise CannotBuild(f"no {'integer' if integer else 'number'} lies within the bounds of '{p.get('name')}'")
    cands: list[float] = [1]
    if lo is not None:
        cands.append(lo + 1)
    if hi is not None:
        cands.append(hi - 1)
    if lo is not None and hi is not None:
        cands.append((lo + hi) // 2 if integer else (lo + hi) / 2)
    inside = [v for v in cands if (lo is None or v > lo) and (hi is None or v < hi)]
    v = inside[0] if inside else (lo if lo is not None else hi)
    assert v is not None
    return int(v) if integer else float(v)


TypeLookup = Callable[[str], dict[str, Any] | None]


def _server_value(value: Any, p: dict[str, Any], allow_network: bool) -> bool:
    """A server-documented value (enum, default) is used unless it names a remote address."""
    return allow_network or not network.is_remote_value(value, p)


def build_value(
    p: dict[str, Any],
    lookup: TypeLookup,
    *,
    seed: str = TAG,
    depth: int = 0,
    optional: bool = False,
    allow_network: bool = False,
) -> Any:
    """A value satisfying ParameterInfo ``p``. ``lookup(name)`` returns a TypeDetails or None."""
    if depth > 4:
        raise CannotBuild("type nesting too deep")
    if isinstance(p.get("enum"), list) and p["enum"]:
        usable = [e for e in p["enum"] if _server_value(e, p, allow_network)]
        if not usable:
            raise CannotBuild(f"every documented value of '{p.get('name')}' is a remote address (see --allow-network)")
        return usable[0]
    if "default" in p and p["default"] is not None and not p.get("required") and _server_value(p["default"], p, allow_network):
        return p["default"]
    t = base_type(str(p.get("type", "")))
    low = t.lower()
    if low.endswith("[]") or low == "array":
        items = p.get("items")
        if optional:
            return []
        item = dict(items) if isinstance(items, dict) else {}
        if low.endswith("[]"):
            item.setdefault("type", t[:-2])
        item.setdefault("name", str(p.get("name") or ""))  # name hints (`paths`) apply to the items
        item["required"] = True
        if not item.get("type"):
            return []
        return [build_value(item, lookup, seed=seed, depth=depth + 1, allow_network=allow_network)]
    if low in ("string", "str", "text"):
        return _fit_string(p, seed, allow_network)
    if low in ("integer", "int"):
        return _number(p, True)
    if low in ("number", "float", "double"):
        return _number(p, False)
    if low in ("boolean", "bool"):
        return False
    if low in ("object", "dict", "map", "record"):
        return {}
    if low in ("any", "json", "unknown", ""):
        return seed
    if low == "null":
        return None
    detail = lookup(t)
    if detail is None:
        raise CannotBuild(f"type '{t}' of parameter '{p.get('name')}' is not described by introspect types")
    return build_from_type(detail, lookup, seed=seed, depth=depth + 1, allow_network=allow_network)


def build_from_type(
    detail: dict[str, Any],
    lookup: TypeLookup,
    *,
    seed: str = TAG,
    depth: int = 0,
    with_optional: bool = False,
    allow_network: bool = False,
) -> Any:
    kind = detail.get("kind")
    if kind == "enum":
        values = detail.get("values") or []
        if not values:
            raise CannotBuild(f"enum type '{detail.get('name')}' has no values")
        return values[0]
    if kind == "object":
        out: dict[str, Any] = {}
        for f in detail.get("fields") or []:
            if not isinstance(f, dict) or not f.get("name"):
                continue
            if f.get("required") or (with_optional and not is_id_like(f["name"])):
                try:
                    out[f["name"]] = build_value(
                        f,
                        lookup,
                        seed=f"{seed}-{f['name']}",
                        depth=depth + 1,
                        optional=not f.get("required"),
                        allow_network=allow_network,
                    )
                except CannotBuild:
                    if f.get("required"):
                        raise
        return out
    if kind == "union":
        for m in detail.get("members") or []:
            sub = lookup(m)
            if sub is not None:
                try:
                    return build_from_type(sub, lookup, seed=seed, depth=depth + 1, allow_network=allow_network)
                except CannotBuild:
                    continue
        raise CannotBuild(f"no member of union '{detail.get('name')}' can be built")
    if kind == "scalar":
        name = str(detail.get("name", "")).lower()
        if "date" in name and "time" in name:
            return FORMAT_SAMPLES["date-time"]
        if "date" in name:
            return FORMAT_SAMPLES["date"]
        return seed
    raise CannotBuild(f"type '{detail.get('name')}' has an unknown kind")


def wrong_value(p: dict[str, Any]) -> Any:
    """A value of the wrong JSON type for ``p`` (or None when the type accepts anything)."""
    low = base_type(str(p.get("type", ""))).lower()
    if low in ("string", "str", "text") or p.get("enum"):
        return 12345
    if low in ("integer", "int", "number", "float", "double"):
        return "not-a-number"
    if low in ("boolean", "bool"):
        return "not-a-boolean"
    if low == "array" or low.endswith("[]"):
        return 42
    if low in ("any", "json", "unknown", ""):
        return None
    return 42  # objects and named types
