"""Which probe values would send the server under test to the network, and which stay on this host.

The suite's promise (``--allow-network`` lifts it): no call it makes carries an address that is not
loopback, and no call it expects to *execute* on an open-world tool carries an address at all.
A value is an address when it is a URL (``scheme://host…``, ``mailto:`` excepted) or when its
parameter is documented as one (formats ``uri``/``url``/``iri``/``hostname``/``ipv4``/``ipv6``…,
or a name such as ``url``, ``endpoint``, ``webhook``). Loopback is ``localhost`` (and its
subdomains), ``127.0.0.0/8`` and ``::1``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

LOOPBACK_URL = "http://127.0.0.1:9/mcpaql-conformance"  # port 9 (discard): nothing answers
PUBLIC_URL = "https://example.com/mcpaql-conformance"  # RFC 2606 reserved domain
ADDRESS_FORMATS = frozenset(
    {"uri", "url", "iri", "uri-reference", "iri-reference", "uri-template", "hostname", "idn-hostname", "ipv4", "ipv6"}
)
_URL_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")
_HOSTLIKE = re.compile(r"\[?[0-9A-Fa-f:]*:[0-9A-Fa-f:.]*\]?|[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+\.?(?::\d+)?(?:/\S*)?")
_ADDRESS_NAME = re.compile(r"(^|_)(url|uri|urls|uris|href|link|endpoint|webhook|website|homepage|host|hostname)($|_)")


def is_address_param(p: dict[str, Any]) -> bool:
    """A ParameterInfo documented as a network address (by format, else by its name)."""
    if str(p.get("format") or "").lower() in ADDRESS_FORMATS:
        return True
    items = p.get("items")
    if isinstance(items, dict) and str(items.get("format") or "").lower() in ADDRESS_FORMATS:
        return True
    return bool(_ADDRESS_NAME.search(str(p.get("name") or "").lower()))


def host_of(value: str) -> str | None:
    """The host a URL-looking string names (None when it is not a URL)."""
    if not _URL_RE.match(value):
        return None
    try:
        return (urlsplit(value).hostname or "").lower()
    except ValueError:
        return ""


def is_loopback_host(host: str) -> bool:
    host = host.strip("[]").rstrip(".").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def strings_in(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 32:
        return
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield from strings_in(k, depth + 1)
            yield from strings_in(v, depth + 1)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v, depth + 1)


def urls_in(value: Any) -> list[str]:
    """Every URL-looking string inside a JSON value."""
    return [s for s in strings_in(value) if host_of(s) is not None]


def remote_urls(value: Any) -> list[str]:
    """URLs inside ``value`` whose host is not loopback (an empty host counts as remote)."""
    return [u for u in urls_in(value) if not is_loopback_host(host_of(u) or "")]


def is_remote_value(value: Any, p: dict[str, Any] | None = None) -> bool:
    """True if ``value`` names a non-loopback address: a remote URL, or, for a parameter
    documented as an address, a host name with a dot or an IP address that is not loopback."""
    if remote_urls(value):
        return True
    if p is not None and isinstance(value, str) and is_address_param(p) and host_of(value) is None:
        return _HOSTLIKE.fullmatch(value) is not None and not is_loopback_host(value)
    return False
