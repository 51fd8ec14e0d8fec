"""Building one HTTP request from an operation's arguments so that no argument can change its shape.

An OpenAPI path template (``/users/{user_id}/profile``) fixes which route an operation reaches;
``--include`` and ``--read-only`` select operations by that route. So a path argument must only
ever fill its one segment:

* it is percent-encoded with nothing left safe: ``/ \\ ? # ; %`` and every non-ASCII byte become
  ``%XX``, so a separator or a pre-encoded value (``%2e%2e``, ``..%2f``) arrives as literal text;
* a value that *is* a dot segment in any spelling a server might decode — ``.``/``..``, their
  percent-encodings (to any depth), Unicode full-stop lookalikes after NFKC (``．．``, ``‥``), with
  a matrix parameter (``..;x``, read as ``..`` by Tomcat), or a ``..`` component between
  separators (``../admin``, ``..\\x``, ``..%2f``) — is refused with
  ``VALIDATION_INVALID_VALUE``, as are the empty string (``/users/`` is another route) and
  control characters. Percent-encoding ``.`` instead would not help: RFC 3986 lets any
  normaliser turn ``%2E`` back into ``.``;
* the finished URL is checked once more: same origin as the base URL, the base path as its
  prefix and the template's segment count (a defence against a template that is not a path).

Header arguments with CR, LF or any other control character are refused (no header injection, and
no retryable transport error for what is a bad value); so are non-ASCII header values (HTTP
header values are bytes, and their encoding is not agreed) and header names that would re-frame
the request (``Host``, ``Content-Length``…). Query values need no such rule: they are
percent-encoded whole.
"""

from __future__ import annotations

import json
import re
import unicodedata
import urllib.parse
from collections.abc import Mapping
from typing import Any

import httpx

from ..protocol.errors import MCPAQLError, invalid_value

# Characters NFKC leaves alone that some servers (best-fit code pages, ICU folding) still read
# as a full stop or a slash.
_LOOKALIKES = str.maketrans(
    {"\u3002": ".", "\uff61": ".", "\u2215": "/", "\u2044": "/", "\u29f8": "/", "\u29f9": "\\", "\u2216": "\\", "\ufe68": "\\"}
)
_SEPARATORS = re.compile(r"[/\\]")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_HEADER_BAD = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # HTAB is allowed in a field value (RFC 9110 §5.5)
_HEADER_NAME = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]+$")
# Headers an argument may not set: they frame or route the request, or belong to the runtime.
RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "te",
        "trailer",
        "upgrade",
        "keep-alive",
        "proxy-authorization",
        "proxy-connection",
        "expect",
    }
)
_DECODE_ROUNDS = 4


def _decodings(value: str) -> list[str]:
    """``value`` and what it becomes under repeated percent-decoding and Unicode folding."""
    out = [value]
    current = value
    for _ in range(_DECODE_ROUNDS):
        nxt = urllib.parse.unquote(current, errors="replace")
        if nxt == current:
            break
        out.append(nxt)
        current = nxt
    return [v for s in out for v in (s, unicodedata.normalize("NFKC", s).translate(_LOOKALIKES))]


def _dot_segment(value: str) -> bool:
    for form in _decodings(value):
        for part in _SEPARATORS.split(form):
            if part.split(";", 1)[0].strip(" \t") in (".", ".."):  # '..;x' is '..' to Tomcat/Spring
                return True
    return False


def path_text(value: Any) -> str:
    """A path argument as text (OpenAPI ``style: simple``: arrays comma-joined, booleans lower-case)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return ",".join(path_text(v) for v in value)
    if isinstance(value, dict):
        return ",".join(f"{k},{path_text(v)}" for k, v in value.items())
    return str(value)


def path_segment(name: str, value: Any) -> str:
    """The encoded segment for path argument ``name``; refuses values that could leave it."""
    text = path_text(value)
    if text == "":
        raise invalid_value(name, "path_segment", "must not be empty: it fills one segment of the URL path")
    if _CONTROL.search(text):
        raise invalid_value(name, "path_segment", "must not contain control characters")
    if _dot_segment(text):
        raise invalid_value(
            name, "path_segment", "must not be '.' or '..' (in any encoding): a path value cannot move to another route"
        )
    return urllib.parse.quote(text, safe="")


def fill_template(template: str, values: Mapping[str, str]) -> str:
    """``/users/{id}`` with already-encoded ``values``; a placeholder without a value stays as is."""
    return re.sub(r"{([^}]+)}", lambda m: values.get(m.group(1), m.group(0)), template)


def build_url(base: httpx.URL, template: str, values: Mapping[str, str], operation: str) -> httpx.URL:
    """``base`` + the filled template, checked to be exactly the templated route on ``base``'s origin."""
    if not template.startswith("/"):
        template = "/" + template
    route, _, literal_query = template.partition("?")
    base_path = base.raw_path.decode("ascii").split("?", 1)[0].rstrip("/")
    origin = f"{base.scheme}://{base.netloc.decode('ascii')}"
    url = httpx.URL(origin + base_path + fill_template(template, values))
    want = len(route.split("/")) + len(base_path.split("/")) - 1
    got = url.raw_path.decode("ascii").split("?", 1)[0]
    if (
        (url.scheme, url.host, url.port) != (base.scheme, base.host, base.port)
        or not got.startswith(base_path + "/")
        or len(got.split("/")) != want
        or (url.query and not literal_query)
    ):
        raise MCPAQLError(
            "VALIDATION_INVALID_VALUE",
            f"The arguments of '{operation}' would not reach its route; nothing was sent",
            {"operation": operation, "constraint": "path_segment"},
        )
    return url


def header_problem(name: str, text: str) -> str | None:
    """Why ``name: text`` cannot be sent as a header field (None when it can)."""
    if not _HEADER_NAME.match(name):
        return f"'{name}' is not a valid header name"
    if _HEADER_BAD.search(text):
        return f"header '{name}' holds CR, LF or other control characters"
    if not text.isascii():
        return f"header '{name}' holds non-ASCII characters"
    return None


def header_value(name: str, value: Any, label: str | None = None) -> str:
    """A header argument (HTTP name ``name``, parameter ``label``) as a field value; refuses what
    could split or re-frame the request."""
    text = value if isinstance(value, str) else json.dumps(value) if isinstance(value, dict | list) else path_text(value)
    label = label or name
    if name.lower() in RESERVED_HEADERS or not _HEADER_NAME.match(name):
        raise invalid_value(label, "header", f"cannot be sent: header '{name}' is reserved for the HTTP connection")
    if _HEADER_BAD.search(text):
        raise invalid_value(label, "header_value", f"must not contain CR, LF or other control characters (header '{name}')")
    if not text.isascii():
        raise invalid_value(label, "header_value", f"must be ASCII text (header '{name}'): HTTP header values are bytes")
    return text.strip(" \t")  # surrounding blanks are not part of a field value (RFC 9110 §5.5)


__all__ = ["RESERVED_HEADERS", "build_url", "fill_template", "header_problem", "header_value", "path_segment", "path_text"]
