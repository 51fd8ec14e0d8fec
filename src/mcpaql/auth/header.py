"""Parsing the ``Authorization`` request header (RFC 6750 §2.1, RFC 9110 §11.6.2).

Only the header method is supported (the MCP authorization spec forbids tokens in the query
string). ``Bearer`` is matched case-insensitively; the credential must be a ``b64token``
(``1*( ALPHA / DIGIT / "-" / "." / "_" / "~" / "+" / "/" ) *"="``), which is what both JWTs
and our API keys are. Anything else is a malformed request (400 ``invalid_request``), told
apart from a missing header (401 without an error code, RFC 6750 §3.1).
"""

from __future__ import annotations

import re

MAX_HEADER = 8192  # far above any real JWT; a bigger header is refused before any parsing
_B64TOKEN = re.compile(r"[A-Za-z0-9\-._~+/]+=*")


class MalformedAuthorization(ValueError):
    """The header is present but is not ``Bearer <b64token>``; the message is safe to show."""


def bearer_token(values: list[str]) -> str | None:
    """The bearer credential of a request's ``Authorization`` header values, ``None`` when the
    request has none. Raises :class:`MalformedAuthorization` for anything else: several
    headers, another scheme, an empty or non-``b64token`` credential, or an oversized header."""
    if not values:
        return None
    if len(values) > 1:
        raise MalformedAuthorization("more than one Authorization header")
    value = values[0]
    if len(value) > MAX_HEADER:
        raise MalformedAuthorization("Authorization header too long")
    scheme, sep, rest = value.partition(" ")
    if scheme.lower() != "bearer":
        raise MalformedAuthorization("the Authorization scheme must be Bearer")
    credential = rest.strip(" ")
    if not sep or not credential:
        raise MalformedAuthorization("the Bearer credential is empty")
    if not _B64TOKEN.fullmatch(credential):
        raise MalformedAuthorization("the Bearer credential is not a valid token")
    return credential
