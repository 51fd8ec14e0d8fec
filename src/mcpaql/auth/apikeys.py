"""Static API keys for simple deployments: one shared secret per client, each with its own
subject and scopes, sent as ``Authorization: Bearer <key>``.

Sources (``--api-keys-file`` / ``MCPAQL_API_KEYS_FILE``, or inline ``MCPAQL_API_KEYS``): one
key per line, ``<subject> <scope>[,<scope>…] <key>``; ``#`` starts a comment. ``<key>`` is the
key itself (at least 24 characters of ``b64token``) or ``sha256:<64 hex digits>``, its SHA-256,
so the file need not hold the secrets at all. Only digests are kept in memory; a presented key
is hashed (SHA-256) and looked up by its digest, then confirmed with :func:`hmac.compare_digest`.
Why a lookup is safe: its timing can only depend on the digest of what the client sent, and
nobody can choose an input whose SHA-256 lands near a stored one, so it tells an attacker
nothing about any key — and it keeps a thousand keys as cheap as one (an earlier version compared
every digest on every request: 141 µs at 1,000 keys).
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from .scopes import SCOPES, Caller, identity_for

MIN_KEY_LENGTH = 24
_HASHED = re.compile(r"^sha256:([0-9a-fA-F]{64})$")
_KEY = re.compile(r"^[A-Za-z0-9\-._~+/]+=*$")
_SUBJECT = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


class ApiKeyError(ValueError):
    """An API key entry cannot be used; the message names the line, never the key."""


@dataclass(frozen=True, slots=True)
class ApiKey:
    subject: str
    scopes: frozenset[str]
    digest: bytes  # SHA-256 of the key


def digest(key: str) -> bytes:
    return hashlib.sha256(key.encode("utf-8", "surrogatepass")).digest()


def parse_line(line: str, where: str) -> ApiKey | None:
    """One entry, or ``None`` for a blank/comment line."""
    text = line.split("#", 1)[0].strip()  # '#' is never part of a key (not a b64token character)
    if not text:
        return None
    parts = text.split()
    if len(parts) != 3:
        raise ApiKeyError(f"{where}: expected '<subject> <scope>[,<scope>...] <key>'")
    subject, scopes_text, key = parts
    if not _SUBJECT.match(subject):
        raise ApiKeyError(f"{where}: the subject must be 1-64 letters, digits and . _ @ -")
    scopes = frozenset(s for s in scopes_text.split(",") if s)
    unknown = sorted(scopes - set(SCOPES))
    if unknown or not scopes:
        raise ApiKeyError(f"{where}: unknown scope(s) {', '.join(unknown) or '(none)'}; known: {', '.join(SCOPES)}")
    hashed = _HASHED.match(key)
    if hashed:
        return ApiKey(subject, scopes, bytes.fromhex(hashed.group(1)))
    if len(key) < MIN_KEY_LENGTH or not _KEY.match(key):
        raise ApiKeyError(
            f"{where}: the key must be at least {MIN_KEY_LENGTH} characters of A-Z a-z 0-9 - . _ ~ + / (or sha256:<hex>)"
        )
    return ApiKey(subject, scopes, digest(key))


class ApiKeys:
    """The configured keys (digests only) and the constant-time lookup."""

    def __init__(self, keys: Iterable[ApiKey]) -> None:
        self.keys: tuple[ApiKey, ...] = tuple(keys)
        seen: set[str] = set()
        for k in self.keys:
            if k.subject in seen:
                raise ApiKeyError(f"API key subject '{k.subject}' appears twice")
            seen.add(k.subject)
        self._by_digest: dict[bytes, ApiKey] = {}
        for k in self.keys:
            if k.digest in self._by_digest:
                raise ApiKeyError(f"API key subjects '{self._by_digest[k.digest].subject}' and '{k.subject}' share one key")
            self._by_digest[k.digest] = k

    @classmethod
    def parse(cls, text: str, source: str) -> ApiKeys:
        lines = text.replace(";", "\n").splitlines() if source == "MCPAQL_API_KEYS" else text.splitlines()
        parsed = (parse_line(line, f"{source} line {n}") for n, line in enumerate(lines, 1))
        return cls(k for k in parsed if k is not None)

    @classmethod
    def load(cls, file: str | Path | None, inline: str | None) -> ApiKeys:
        """Keys from a file and/or the inline environment value (both may be given)."""
        keys: list[ApiKey] = []
        if file:
            path = Path(file)
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                raise ApiKeyError(f"cannot read the API keys file '{path.name}'") from None
            keys.extend(cls.parse(text, f"API keys file '{path.name}'").keys)
        if inline:
            keys.extend(cls.parse(inline, "MCPAQL_API_KEYS").keys)
        return cls(keys)

    def __bool__(self) -> bool:
        return bool(self.keys)

    def match(self, presented: str) -> Caller | None:
        """The caller a presented key belongs to (looked up by its SHA-256; see the module doc)."""
        d = digest(presented)
        found = self._by_digest.get(d)
        if found is None or not hmac.compare_digest(d, found.digest):
            return None
        return Caller(identity_for(found.subject, "key"), found.scopes, "api_key", client_id=found.subject)
