"""Check an adapter file as the spec and its examples write it: lenient on input, strict on output.

Three sources describe the format and they disagree (CHECKLIST Part F #11/#12; the decisions
are listed in docs/conformance.md, "Adapter files"): the JSON schema is closed, while the
element-type document (ELEM) adds optional metadata (``author``, ``tags``, ``triggers``,
``created``, ``modified``) and the danger-levels, trust-levels and rate-limiting documents add
richer ``danger``, ``trust`` and ``rate_limits`` blocks. The normative text wins, so every key any
of them defines is accepted and *used*; a key none of them defines is a warning, never a
refusal (the spec's own examples carry such keys).

What is refused is what mcpaql cannot honour or cannot make sense of: a wrong type, a missing
required key, an unknown enum value, or a declared transport/protocol/serialization/auth that is
not implemented — refused at start with one line naming the key (its field path) and what is
supported, rather than served as something else.

:func:`check_adapter_schema` raises :class:`SchemaError` (``"<field path>: <problem>"``) for the
first refusal and returns the warnings.
"""

from __future__ import annotations

import fnmatch
import json
import math
import re
from typing import Any

from ...protocol.registry import NAME_RE, SchemaError
from ...safety.ratelimit import METRICS, WINDOWS

MCP_RE = re.compile(r"^(?:MCP\s+tools/call\s+|tool:)(\S+)$")
HTTP_RE = re.compile(r"^(GET|POST|PUT|PATCH|DELETE)\s+(/\S*)$")
URI_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:\S+$")

REQUIRED_TOP = ("name", "type", "version", "description", "target", "operations")
METADATA_KEYS = ("author", "tags", "triggers", "created", "modified")  # ELEM §2.1 "optional metadata"
TOP_KEYS = {*REQUIRED_TOP, "auth", "trust", "rate_limits", *METADATA_KEYS}
OP_KEYS = {
    "name",
    "maps_to",
    "description",
    "params",
    "response",
    "pagination",
    "supports_fields",
    "danger_level",
    "requires_confirmation",
    "non_idempotent",
    "danger",
    "default_fields",
}
PARAM_KEYS = {"type", "required", "description", "default", "enum", "minimum", "maximum", "pattern", "format"}
CATEGORIES = ("create", "read", "update", "delete", "execute")
PARAM_TYPES = ("string", "integer", "number", "boolean", "array", "object")
DANGER_LEVELS = ("safe", "reversible", "destructive", "dangerous", "forbidden")
PAGINATION_STYLES = ("offset", "cursor", "page", "link_header")
PAGINATION_KEYS = {"style", "default_limit", "max_limit", "param_name", "per_page_param"}

# Every value any document enumerates, and the subset this implementation runs.
TRANSPORTS = {"all": ("http", "websocket", "serial", "native"), "supported": ("http", "native")}
PROTOCOLS = {"all": ("rest", "graphql", "grpc", "custom"), "supported": ("rest", "custom")}
SERIALIZATIONS = {"all": ("json", "xml", "protobuf", "msgpack", "form"), "supported": ("json", "form")}
AUTH_TYPES = {"all": ("none", "api_key", "bearer", "basic", "oauth2"), "supported": ("none", "api_key", "bearer", "basic")}

# Trust vocabularies (Part F #11): adapter-schema's, TRUST §2.1's and ELEM §10.1's, each mapped to
# TRUST's (the one the gating matrix and the error codes use).
TRUST_LEVELS = {
    "untested": "untested",
    "generated": "generated",
    "validated": "validated",
    "community_reviewed": "community_reviewed",
    "certified": "certified",
    "untrusted": "untested",
    "low": "generated",
    "medium": "validated",
    "high": "community_reviewed",
    "verified": "certified",
    "community": "community_reviewed",
    "official": "certified",
}
TRUST_KEYS = {
    "level",
    "verified_by",
    "verification_date",
    "verified_at",
    "generated_at",
    "generated_by",
    "validated_at",
    "validated_by",
    "validation_report",
    "promoted_from",
    "promotion_history",
    "certification",
}
DANGER_KEYS = {"level", "reasons", "confirmation_message", "cooldown_seconds", "requires_reauth", "audit_context"}
RATE_KEYS = {"requests_per_minute": "minute", "requests_per_hour": "hour", "requests_per_day": "day", "burst_limit": "second"}
RATE_DOC_KEYS = {"concurrent_requests", "api_limits", "quotas", "cost"}


def _is_int(v: Any, minimum: int = 1) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= minimum


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def sub(path: str, key: Any) -> str:
    """``path.key``, or ``path["key"]`` when the key is not a plain name (any text can be a YAML key)."""
    k = str(key)
    if re.fullmatch(r"[A-Za-z_][\w-]*", k):
        return f"{path}.{k}" if path else k
    return f"{path}[{json.dumps(k[:40])}]"


def _fmt(v: Any) -> str:
    s = v if isinstance(v, str) else repr(v)
    return s if len(s) <= 60 else s[:57] + "..."


class Checker:
    """Collects warnings; raises on the first refusal (the error names its field path)."""

    def __init__(self) -> None:
        self.warnings: list[str] = []

    def need(self, cond: bool, code: str, path: str, message: str) -> None:
        if not cond:
            raise SchemaError(code, f"{path}: {message}")

    def type_(self, value: Any, kind: type | tuple[type, ...], path: str, what: str) -> None:
        self.need(isinstance(value, kind), "SCHEMA_INVALID_TYPE", path, f"must be {what}")

    def warn(self, path: str, message: str) -> None:
        self.warnings.append(f"{path}: {message}")

    def unknown(self, block: dict[str, Any], known: set[str], path: str) -> None:
        for k in sorted(set(block) - known, key=str):
            self.warn(sub(path, k), "unknown key, ignored")

    def one_of(self, value: Any, allowed: tuple[str, ...], path: str) -> None:
        self.need(
            isinstance(value, str) and value in allowed,
            "SCHEMA_INVALID_TYPE",
            path,
            f"'{_fmt(value)}' is not one of {', '.join(allowed)}",
        )

    def supported(self, value: Any, table: dict[str, tuple[str, ...]], path: str, extra: str = "") -> None:
        """Refuse what no document defines as well as what is defined but not implemented."""
        ok = isinstance(value, str) and value in table["supported"]
        known = isinstance(value, str) and value in table["all"]
        why = "is not supported by mcpaql" if known else "is not a known value"
        self.need(ok, "SCHEMA_INVALID_TYPE", path, f"'{_fmt(value)}' {why} (supported: {', '.join(table['supported'])}{extra})")


def check_adapter_schema(data: dict[str, Any]) -> list[str]:
    """Check ``data``; return the warnings, raise :class:`SchemaError` on a refusal."""
    c = Checker()
    for k in REQUIRED_TOP:
        c.need(k in data, "SCHEMA_MISSING_FIELD", k, "is required")
    c.unknown(data, TOP_KEYS, "")
    c.need(
        isinstance(data["name"], str)
        and re.fullmatch(r"[a-z][a-z0-9-]*[a-z0-9]", data["name"]) is not None
        and len(data["name"]) <= 64,
        "SCHEMA_INVALID_NAME",
        "name",
        "must match ^[a-z][a-z0-9-]*[a-z0-9]$ (2-64 characters)",
    )
    c.type_(data["description"], str, "description", "a string")
    c.need(data["type"] == "adapter", "SCHEMA_INVALID_TYPE", "type", "must be 'adapter'")
    c.need(
        isinstance(data["version"], str) and re.fullmatch(r"\d+\.\d+\.\d+(-[a-z0-9.]+)?", data["version"]) is not None,
        "SCHEMA_INVALID_TYPE",
        "version",
        "must be SemVer, e.g. '1.0.0'",
    )
    _check_metadata(c, data)
    _check_target(c, data["target"])
    _check_auth(c, data.get("auth"))
    _check_trust(c, data.get("trust"))
    _check_rate_limits(c, data.get("rate_limits"))
    _check_operations(c, data)
    return c.warnings


def _check_metadata(c: Checker, data: dict[str, Any]) -> None:
    if "author" in data:
        c.type_(data["author"], str, "author", "a string")
    for k in ("tags", "triggers"):
        if k in data:
            c.need(
                isinstance(data[k], list) and all(isinstance(v, str) for v in data[k]),
                "SCHEMA_INVALID_TYPE",
                k,
                "must be a list of strings",
            )
    for k in ("created", "modified"):
        if k in data:  # YAML reads an unquoted timestamp as a datetime: accept it as written
            c.need(
                isinstance(data[k], str) or hasattr(data[k], "isoformat"),
                "SCHEMA_INVALID_TYPE",
                k,
                "must be an ISO 8601 timestamp",
            )


def _check_target(c: Checker, t: Any) -> None:
    c.type_(t, dict, "target", "an object")
    for k in ("base_url", "transport", "protocol", "serialization"):
        c.need(k in t, "SCHEMA_MISSING_FIELD", f"target.{k}", "is required")
    c.unknown(t, {"base_url", "transport", "protocol", "serialization"}, "target")
    c.need(
        isinstance(t["base_url"], str) and URI_RE.match(t["base_url"]) is not None,
        "SCHEMA_INVALID_TYPE",
        "target.base_url",
        "must be a URI, e.g. 'https://api.example.com/v1'",
    )
    c.supported(t["transport"], TRANSPORTS, "target.transport", "; native only with a stdio: MCP upstream")
    c.supported(t["protocol"], PROTOCOLS, "target.protocol", "; custom only for MCP upstreams")
    c.supported(t["serialization"], SERIALIZATIONS, "target.serialization")


def _check_auth(c: Checker, a: Any) -> None:
    if a is None:
        return
    c.type_(a, dict, "auth", "an object")
    c.need("type" in a, "SCHEMA_MISSING_FIELD", "auth.type", "is required")
    c.supported(a["type"], AUTH_TYPES, "auth.type")
    for k, v in a.items():
        if k != "type":
            c.type_(v, str, sub("auth", k), "a string")
    kind = a["type"]
    if kind == "bearer" and not a.get("token_env"):
        # The schema's own example has none (its AuthConfig is open and names only header/prefix)
        c.warn("auth.token_env", "not set: no bearer token is sent (name the environment variable holding it)")
    if kind == "api_key":
        c.need(
            bool(a.get("key_env") or a.get("token_env")),
            "SCHEMA_MISSING_FIELD",
            "auth.key_env",
            "is required for api_key auth (the environment variable holding the key)",
        )
        if not (a.get("header_name") or a.get("header")):
            c.warn("auth.header_name", "not set: the key is sent in 'X-API-Key'")
    if kind == "basic":
        for k in ("username_env", "password_env"):
            c.need(
                bool(a.get(k)),
                "SCHEMA_MISSING_FIELD",
                f"auth.{k}",
                "is required for basic auth (the environment variable holding it)",
            )


def trust_level(block: Any) -> str | None:
    """The file's trust level in TRUST's vocabulary (None: no trust block)."""
    if not isinstance(block, dict) or not isinstance(block.get("level"), str):
        return None
    return TRUST_LEVELS.get(block["level"])


def _check_trust(c: Checker, t: Any) -> None:
    if t is None:
        return
    c.type_(t, dict, "trust", "an object")
    c.need("level" in t, "SCHEMA_MISSING_FIELD", "trust.level", "is required")
    c.one_of(t["level"], tuple(TRUST_LEVELS), "trust.level")
    c.unknown(t, TRUST_KEYS, "trust")
    if "verification_date" in t:
        v = t["verification_date"]
        c.need(
            (isinstance(v, str) and re.fullmatch(r"\d{4}-\d{2}-\d{2}", v) is not None) or hasattr(v, "isoformat"),
            "SCHEMA_INVALID_TYPE",
            "trust.verification_date",
            "must be a date, e.g. '2026-01-31'",
        )
    for k in ("verified_by", "generated_by", "validated_by"):
        if k in t:
            c.type_(t[k], str, f"trust.{k}", "a string")
    if "promoted_from" in t:
        c.one_of(t["promoted_from"], tuple(TRUST_LEVELS), "trust.promoted_from")
    if "validation_report" in t:
        c.type_(t["validation_report"], dict, "trust.validation_report", "an object")
    if "promotion_history" in t:
        c.type_(t["promotion_history"], list, "trust.promotion_history", "a list")
        for i, rec in enumerate(t["promotion_history"]):
            c.type_(rec, dict, f"trust.promotion_history[{i}]", "an object")
    if t.get("certification") is not None:
        c.type_(t["certification"], dict, "trust.certification", "an object or null")


def _check_rate_limits(c: Checker, r: Any) -> None:
    if r is None:
        return
    c.type_(r, dict, "rate_limits", "an object")
    c.unknown(r, set(RATE_KEYS) | RATE_DOC_KEYS, "rate_limits")
    for k in (*RATE_KEYS, "concurrent_requests"):
        if k in r:
            c.need(_is_int(r[k]), "SCHEMA_INVALID_TYPE", f"rate_limits.{k}", "must be an integer >= 1")
    for i, lim in enumerate(_list(c, r, "api_limits", "rate_limits.api_limits")):
        where = f"rate_limits.api_limits[{i}]"
        c.type_(lim, dict, where, "an object")
        c.need(_is_int(lim.get("limit")), "SCHEMA_INVALID_TYPE", f"{where}.limit", "must be an integer >= 1")
        c.one_of(lim.get("window", "minute"), tuple(WINDOWS), f"{where}.window")
        c.one_of(lim.get("scope", "global"), ("global", "endpoint"), f"{where}.scope")
        if lim.get("scope") == "endpoint":
            c.need(
                isinstance(lim.get("endpoint"), str),
                "SCHEMA_MISSING_FIELD",
                f"{where}.endpoint",
                "is required for an endpoint limit (e.g. 'POST /search')",
            )
    if "quotas" in r:
        q = r["quotas"]
        c.type_(q, dict, "rate_limits.quotas", "an object")
        for i, lim in enumerate(_list(c, q, "limits", "rate_limits.quotas.limits")):
            where = f"rate_limits.quotas.limits[{i}]"
            c.type_(lim, dict, where, "an object")
            if not (isinstance(lim.get("metric"), str) and lim["metric"] in METRICS):
                c.warn(f"{where}.metric", f"'{_fmt(lim.get('metric'))}' is not enforced (enforced: {', '.join(METRICS)})")
                continue
            for k in ("warn", "pause"):
                c.need(_is_number(lim.get(k)), "SCHEMA_INVALID_TYPE", f"{where}.{k}", "must be a number")
            if lim.get("hard_stop") is not None:
                c.need(_is_number(lim["hard_stop"]), "SCHEMA_INVALID_TYPE", f"{where}.hard_stop", "must be a number")
            levels = [int(lim[k]) for k in ("warn", "pause", "hard_stop") if lim.get(k) is not None]
            c.need(levels == sorted(levels), "SCHEMA_INVALID_TYPE", where, "must satisfy warn <= pause <= hard_stop")
    if "cost" in r:
        c.type_(r["cost"], dict, "rate_limits.cost", "an object")
        c.warn("rate_limits.cost", "cost estimation is not enforced (request-count limits and quotas are)")


def _list(c: Checker, block: dict[str, Any], key: str, path: str) -> list[Any]:
    if key not in block:
        return []
    c.type_(block[key], list, path, "a list")
    return list(block[key])


def _check_operations(c: Checker, data: dict[str, Any]) -> None:
    ops = data["operations"]
    c.type_(ops, dict, "operations", "an object")
    seen: set[str] = set()
    protocol = data["target"]["protocol"]
    for group, items in ops.items():
        c.one_of(group, CATEGORIES, sub("operations", group))
        c.type_(items, list, f"operations.{group}", "a list")
        for i, op in enumerate(items):
            where = f"operations.{group}[{i}]"
            c.type_(op, dict, where, "an object")
            for k in ("name", "maps_to"):
                c.need(k in op, "SCHEMA_MISSING_FIELD", f"{where}.{k}", "is required")
            c.unknown(op, OP_KEYS, where)
            c.type_(op["name"], str, f"{where}.name", "a string")
            c.need(bool(NAME_RE.match(op["name"])), "SCHEMA_INVALID_NAME", f"{where}.name", "must be snake_case")
            c.need(op["name"] not in seen, "SCHEMA_DUPLICATE_NAME", f"{where}.name", f"'{op['name']}' is defined twice")
            seen.add(op["name"])
            _check_operation_values(c, op, where)
            params = op.get("params") or {}
            for pname, pd in params.items():
                c.need(
                    isinstance(pname, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_.-]*", pname) is not None,
                    "SCHEMA_INVALID_NAME",
                    sub(f"{where}.params", pname),
                    "must be a parameter name",
                )
                _check_param(c, pd, f"{where}.params.{pname}")
            c.type_(op["maps_to"], str, f"{where}.maps_to", "a string")
            m = HTTP_RE.match(op["maps_to"])
            c.need(
                m is not None or MCP_RE.match(op["maps_to"]) is not None,
                "SCHEMA_INVALID_TYPE",
                f"{where}.maps_to",
                f"'{_fmt(op['maps_to'])}' is not a mapping mcpaql runs "
                "(supported: 'METHOD /path', 'MCP tools/call TOOL', 'tool:TOOL')",
            )
            if m:
                c.need(
                    protocol == "rest",
                    "SCHEMA_INVALID_TYPE",
                    "target.protocol",
                    f"'{protocol}' cannot carry the HTTP mapping of {where} (use 'rest')",
                )
                for ph in re.findall(r"{([^}]+)}", m.group(2)):
                    c.need(ph in params, "SCHEMA_UNRESOLVED_REF", f"{where}.maps_to", f"placeholder '{{{ph}}}' has no param")
            elif data["target"]["serialization"] != "json":
                c.need(False, "SCHEMA_INVALID_TYPE", "target.serialization", "an MCP upstream speaks JSON-RPC: use 'json'")


def _check_operation_values(c: Checker, op: dict[str, Any], where: str) -> None:
    for k in ("supports_fields", "requires_confirmation", "non_idempotent"):
        if k in op:
            c.type_(op[k], bool, f"{where}.{k}", "true or false")
    if "danger_level" in op:
        c.one_of(op["danger_level"], DANGER_LEVELS, f"{where}.danger_level")
    if "description" in op:
        c.type_(op["description"], str, f"{where}.description", "a string")
    if "response" in op:
        c.type_(op["response"], dict, f"{where}.response", "an object")
    if "params" in op:
        c.type_(op["params"], dict, f"{where}.params", "an object")
    if "default_fields" in op:
        c.need(
            isinstance(op["default_fields"], list)
            and bool(op["default_fields"])
            and all(isinstance(f, str) and f for f in op["default_fields"]),
            "SCHEMA_INVALID_TYPE",
            f"{where}.default_fields",
            "must be a non-empty list of field paths",
        )
    if "danger" in op:
        d = op["danger"]
        c.type_(d, dict, f"{where}.danger", "an object")
        c.need("level" in d, "SCHEMA_MISSING_FIELD", f"{where}.danger.level", "is required")
        c.one_of(d["level"], DANGER_LEVELS, f"{where}.danger.level")
        c.unknown(d, DANGER_KEYS, f"{where}.danger")
        for k, check, what in (
            ("reasons", _strings, "a list of strings"),
            ("audit_context", _strings, "a list of strings"),
            ("confirmation_message", _str, "a string"),
            ("requires_reauth", _bool, "true or false"),
            ("cooldown_seconds", _nonneg, "a number >= 0"),
        ):
            if k in d:
                c.need(check(d[k]), "SCHEMA_INVALID_TYPE", f"{where}.danger.{k}", f"must be {what}")
        if "danger_level" in op and op["danger_level"] != d["level"]:
            c.warn(f"{where}.danger_level", f"differs from danger.level; '{d['level']}' (the danger block) applies")
        for k in ("cooldown_seconds", "requires_reauth"):
            if d.get(k):
                c.warn(f"{where}.danger.{k}", "is not enforced (confirmation is)")
    if "pagination" in op:
        pg = op["pagination"]
        c.type_(pg, dict, f"{where}.pagination", "an object")
        c.unknown(pg, PAGINATION_KEYS, f"{where}.pagination")
        if "style" in pg:
            c.one_of(pg["style"], PAGINATION_STYLES, f"{where}.pagination.style")
        for k in ("default_limit", "max_limit"):
            if k in pg:
                c.need(_is_int(pg[k]), "SCHEMA_INVALID_TYPE", f"{where}.pagination.{k}", "must be an integer >= 1")
        for k in ("param_name", "per_page_param"):
            if k in pg:
                c.need(
                    isinstance(pg[k], str) and NAME_RE.match(pg[k]) is not None,
                    "SCHEMA_INVALID_TYPE",
                    f"{where}.pagination.{k}",
                    "must be a snake_case parameter name",
                )
        if _is_int(pg.get("default_limit")) and _is_int(pg.get("max_limit")):
            c.need(
                pg["default_limit"] <= pg["max_limit"],
                "SCHEMA_INVALID_TYPE",
                f"{where}.pagination.default_limit",
                "must not exceed max_limit",
            )


def _strings(v: Any) -> bool:
    return isinstance(v, list) and all(isinstance(x, str) for x in v)


def _str(v: Any) -> bool:
    return isinstance(v, str)


def _bool(v: Any) -> bool:
    return isinstance(v, bool)


def _nonneg(v: Any) -> bool:
    return _is_number(v) and v >= 0


def _check_param(c: Checker, pd: Any, where: str) -> None:
    c.type_(pd, dict, where, "an object")
    c.need("type" in pd, "SCHEMA_MISSING_FIELD", f"{where}.type", "is required")
    c.unknown(pd, PARAM_KEYS, where)
    c.one_of(pd["type"], PARAM_TYPES, f"{where}.type")
    if "required" in pd:
        c.type_(pd["required"], bool, f"{where}.required", "true or false")
    if "enum" in pd:  # ELEM §8.1 says any[], the schema string[]: any JSON scalar (lenient on input)
        c.need(
            isinstance(pd["enum"], list)
            and bool(pd["enum"])
            and all(isinstance(v, str | int | float | bool) or v is None for v in pd["enum"]),
            "SCHEMA_INVALID_TYPE",
            f"{where}.enum",
            "must be a non-empty list of values",
        )
    for k in ("minimum", "maximum"):
        if k in pd:
            c.need(_is_number(pd[k]), "SCHEMA_INVALID_TYPE", f"{where}.{k}", "must be a number")
    for k in ("description", "format", "pattern"):
        if k in pd:
            c.type_(pd[k], str, f"{where}.{k}", "a string")
    if "pattern" in pd:
        try:
            re.compile(pd["pattern"])
        except (re.error, RecursionError, OverflowError) as e:
            raise SchemaError("SCHEMA_INVALID_TYPE", f"{where}.pattern: is not a valid regular expression ({e})") from None


def endpoint_operations(data: dict[str, Any], endpoint: str) -> list[str]:
    """Operations whose ``maps_to`` matches an API endpoint of RATE's ``api_limits`` (a glob, e.g.
    ``POST /search`` or ``POST /premium/*``)."""
    return [
        str(op["name"])
        for items in data["operations"].values()
        for op in items
        if fnmatch.fnmatchcase(str(op["maps_to"]), endpoint)
    ]
