"""What the conformance checks share: the statuses, the naming and error-code rules they grade
against, and small helpers that find records and values in a server's responses."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from . import network
from .model import Exchange, Status

PASS, FAIL, WARN, SKIP = Status.PASS, Status.FAIL, Status.WARN, Status.SKIP

TOOL_RE = re.compile(r"^(?:(?P<prefix>[a-z0-9_]*?)_)?(?P<brand>mcp_aql|mcpaql)(?:_(?P<family>[a-z0-9_]+))?$")
TOOL_NAME_RE = re.compile(r"^[a-z0-9_]{1,64}$")
SNAKE_RE = re.compile(r"^[a-z][a-z0-9_]*$")

# MCPI §4.1.2 + §4.1.3 reference function (CHECKLIST Part F #18): these are isError:false.
RECOVERABLE = frozenset(
    {
        "NOT_FOUND_RESOURCE",
        "NOT_FOUND_OPERATION",
        "VALIDATION_MISSING_PARAM",
        "VALIDATION_INVALID_TYPE",
        "PERMISSION_DENIED",
        "RATE_LIMIT_EXCEEDED",
        "CONFIRMATION_REQUIRED",
        "VALIDATION_INVALID_VALUE",
        "RATE_LIMIT_QUOTA_PAUSE",
    }
)
# Registry codes (error-codes.md §4–5, CHECKLIST B.1) that the reference function makes isError:true.
UNRECOVERABLE = frozenset(
    {
        "VALIDATION_UNKNOWN_PARAM",
        "VALIDATION_INVALID_ENCODING",
        "VALIDATION_PAYLOAD_TOO_LARGE",
        "INTERNAL_ERROR",
        "PERMISSION_TRUST_LEVEL_INSUFFICIENT",
        "PERMISSION_DANGER_LEVEL_DENIED",
        "RATE_LIMIT_QUOTA_EXHAUSTED",
        "TOKEN_INVALID",
        "TOKEN_EXPIRED",
        "TOKEN_ALREADY_USED",
        "TOKEN_SCOPE_MISMATCH",
    }
)
CODE_PREFIXES = (
    "VALIDATION_",
    "NOT_FOUND_",
    "PERMISSION_",
    "CONFLICT_",
    "RATE_LIMIT_",
    "TOKEN_",
    "INTERNAL_",
    "CONFIRMATION_",
    "BATCH_",
    "INTROSPECTION_",
    "INVALID_QUERY",
)

# Implementation leakage (CONF §3.3, REQ-RSP-013): language artifacts, stack traces, internal paths.
LEAK_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("Python traceback", re.compile(r"Traceback \(most recent call last\)")),
    (
        "source file reference",
        re.compile(r"File \"[^\"]+\", line \d+|\.(?:py|js|ts|mjs|cjs|rb|java|go|rs)[:\"(, ]+(?:line )?\d+"),
    ),
    (
        "exception class name",
        re.compile(
            r"\b(?:TypeError|ReferenceError|SyntaxError|KeyError|ValueError|AttributeError|IndexError|RuntimeError|NameError|"
            r"AssertionError|ZeroDivisionError|NullPointerException|IllegalArgumentException|ValidationError|"
            r"[A-Z][A-Za-z]+(?:Error|Exception)(?=:))\b"
        ),
    ),
    ("JavaScript object dump", re.compile(r"#<\w+>|\[object Object\]")),
    ("stack frame", re.compile(r"\bat (?:Function|Module|Object|async|new)\b|\bat \S+ \(\S+:\d+:\d+\)")),
    ("internal path", re.compile(r"/src/|/node_modules/|site-packages|dist-packages|/lib/python\d")),
    ("object repr", re.compile(r"<[\w.]+ object at 0x[0-9a-fA-F]+>|\bobject at 0x[0-9a-fA-F]+")),
)
# What the spec's fixture runner flags (CHECKLIST Part F #23): its bare /at\s+\S+/i also hits ordinary words.
RUNNER_LEAK = re.compile(r"typeerror|referenceerror|syntaxerror|at\s+\S+|/src/|/node_modules/|\.ts:\d+|\.js:\d+", re.I)

RESOURCE_VERBS = {
    "CREATE": ("create_", "add_", "new_", "insert_"),
    "READ": ("get_", "read_", "fetch_", "show_", "describe_"),
    "UPDATE": ("update_", "edit_", "modify_", "patch_", "set_"),
    "DELETE": ("delete_", "remove_", "destroy_"),
}
READ_ONLY_FIELD_CANDIDATES = ("created_at", "createdAt", "created", "id")
CALL_TIMEOUT = 30.0


def _resource(op: str, category: str) -> str | None:
    for prefix in RESOURCE_VERBS.get(category, ()):
        if op.startswith(prefix) and len(op) > len(prefix):
            return op[len(prefix) :]
    return None


def _singular(s: str) -> str:
    return s[:-1] if s.endswith("s") and not s.endswith("ss") else s


def _records(data: Any) -> list[dict[str, Any]]:
    """The records inside a READ result: a list, ``items``/``results``-like lists, or one object."""
    return _records_at(data)[0]


def _records_at(data: Any) -> tuple[list[dict[str, Any]], str | None]:
    """:func:`_records` plus the key of ``data`` they were found under (None: the data itself).

    Text that is a JSON object or array (what many MCP tools return, and wrapped ones pass on
    as-is) is read as that JSON."""
    if isinstance(data, str) and data.lstrip()[:1] in ("{", "["):
        try:
            data = json.loads(data)
        except ValueError:
            return [], None
    if isinstance(data, list):
        return [d for d in data if isinstance(d, dict)], None
    if isinstance(data, dict):
        for key in ("items", "results", "records", "data", "nodes", "edges"):
            v = data.get(key)
            if isinstance(v, list):
                return [d for d in v if isinstance(d, dict)], key
        lists = [(k, v) for k, v in data.items() if isinstance(v, list) and v and all(isinstance(x, dict) for x in v)]
        if len(lists) == 1:
            return lists[0][1], lists[0][0]
        return [data], None
    return [], None


def _record(data: Any, hint: str | None = None) -> dict[str, Any] | None:
    """The single record of a get/create result (possibly wrapped as ``{task: {...}}``)."""
    if not isinstance(data, dict):
        return None
    if hint and isinstance(data.get(hint), dict):
        return data[hint]
    if len(data) == 1:
        only = next(iter(data.values()))
        if isinstance(only, dict):
            return only
    return data


def _dot(path: Iterable[str]) -> str:
    return ".".join(path)


def _mentions(message: str, name: str) -> bool:
    return name in message


_MISSING = object()


def _get(record: dict[str, Any], dotted: str) -> Any:
    cur: Any = record
    for part in dotted.split("."):
        if not isinstance(cur, dict) or part not in cur:
            return _MISSING
        cur = cur[part]
    return cur


def _flatten_submitted(params: dict[str, Any], pinfo: list[dict[str, Any]]) -> dict[str, Any]:
    """Fields a create submitted, as dot paths into the record: scalars, and the keys of `input`."""
    out: dict[str, Any] = {}
    for k, v in params.items():
        if k.startswith("_"):
            continue
        if k == "input" and isinstance(v, dict):
            for ik, iv in v.items():
                if not isinstance(iv, dict):
                    out[ik] = iv
        elif not isinstance(v, dict):
            out[k] = v
    return out


def _record_path(data: Any, hint: str | None) -> list[str]:
    if isinstance(data, dict):
        if hint and isinstance(data.get(hint), dict):
            return [hint]
        if len(data) == 1 and isinstance(next(iter(data.values())), dict):
            return [next(iter(data))]
    return []


def _strip_volatile(data: Any) -> Any:
    if isinstance(data, dict):
        return {
            k: _strip_volatile(v)
            for k, v in data.items()
            if k not in ("_meta", "request_id", "duration_ms", "generated_at", "session_id")
        }
    if isinstance(data, list):
        return [_strip_volatile(v) for v in data]
    return data


def _find_value_path(env: Any, name: str, value: Any, path: tuple[str, ...] = ()) -> str | None:
    """A dot path in ``env`` whose last segment is ``name`` and whose value is ``value`` (outside item lists)."""
    if isinstance(env, dict):
        for k, v in env.items():
            if k == name and v == value and not isinstance(v, dict | list):
                return _dot((*path, k))
            if isinstance(v, dict):
                found = _find_value_path(v, name, value, (*path, k))
                if found:
                    return found
    return None


def _loopback(value: Any) -> Any:
    """``value`` with every non-loopback URL replaced by the loopback one (server-supplied examples)."""
    if isinstance(value, str):
        return network.LOOPBACK_URL if network.remote_urls(value) else value
    if isinstance(value, dict):
        return {k: _loopback(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_loopback(v) for v in value]
    return value


def _op_of(ex: Exchange) -> str:
    a = ex.arguments if isinstance(ex.arguments, dict) else {}
    return str(a.get("operation") or ("batch" if "operations" in a else "?")) + f"@{ex.tool}"
