"""Secrets at rest (issue 11): out-of-band codes and confirmation tokens are stored only as a
salted SHA-256, never as the value.

Why a salted hash and not an HMAC under a server key: both secrets are ≥160 bits from
:mod:`secrets`, so a hash of them cannot be inverted or brute-forced, and a salted hash needs
no key — nothing to distribute to every process sharing a Redis store, nothing to lose or
leak beside the store. The salt makes each record's hash unique even for equal inputs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from typing import Any

SALT_BYTES = 16


def seal(secret: str) -> dict[str, str]:
    """``{"salt", "hash"}`` to store in place of ``secret``."""
    salt = secrets.token_hex(SALT_BYTES)
    return {"salt": salt, "hash": _digest(salt, secret)}


def opens(sealed: Any, secret: Any) -> bool:
    """Whether ``secret`` is the value ``sealed`` was made from (constant-time compare)."""
    if not isinstance(sealed, dict) or not isinstance(secret, str):
        return False
    salt, want = sealed.get("salt"), sealed.get("hash")
    if not isinstance(salt, str) or not isinstance(want, str):
        return False
    return hmac.compare_digest(_digest(salt, secret), want)


def _digest(salt: str, secret: str) -> str:
    return hashlib.sha256(salt.encode("ascii") + b"\0" + secret.encode("utf-8")).hexdigest()
