"""Bearer JWTs verified against the issuer's JWKS (RFC 7517/7519, RFC 9068 access tokens).

Everything cryptographic is PyJWT's (``pyjwt[crypto]``, which the ``mcp`` SDK already depends
on); this module only decides *which* key and *which* algorithm a token may use:

* asymmetric algorithms only (RS*, PS*, ES*, EdDSA): ``alg: none`` and every HS* algorithm are
  refused before any key is looked at, so a public key can never be used as an HMAC secret
  (algorithm confusion); the key's own ``alg``/``kty``/``use`` must agree with the token's;
* the key comes from the issuer's JWKS, fetched with httpx and cached (``ttl``); a token naming
  an unknown ``kid`` refreshes the set, at most once per ``min_refresh`` seconds, so a flood of
  made-up kids cannot turn the server into a JWKS-fetching amplifier;
* issuer, audience, expiry and not-before are checked (``leeway`` seconds of clock skew), and
  ``exp``, ``iss``, ``aud`` and ``sub`` are required.

A rejection is a :class:`TokenRejected` whose ``description`` is safe to send (RFC 6750
``error_description``): it never contains the token, a key or a claim value.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import anyio
import httpx
import jwt

from .scopes import Caller, identity_for, parse_scopes

log = logging.getLogger("mcpaql.auth")

ALGORITHMS: frozenset[str] = frozenset({"RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"})
_KTY = {"RS": "RSA", "PS": "RSA", "ES": "EC", "Ed": "OKP"}
MAX_JWKS_BYTES = 256 * 1024


class TokenRejected(Exception):
    """A bearer token is not acceptable. ``description`` is safe for the client."""

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


@dataclass
class JwksCache:
    """The issuer's signing keys by ``kid``, fetched lazily and refreshed (see module doc).

    ``url`` may be ``None``: it is then discovered from the issuer's metadata (RFC 8414
    ``/.well-known/oauth-authorization-server``, then OpenID ``/.well-known/openid-configuration``).
    """

    url: str | None
    issuer: str
    ttl: float = 600.0
    min_refresh: float = 30.0
    timeout: float = 5.0
    clock: Callable[[], float] = time.monotonic
    keys: dict[str, dict[str, Any]] = field(default_factory=dict)
    fetched_at: float | None = None
    fetches: int = 0
    _lock: anyio.Lock = field(default_factory=anyio.Lock)

    async def key(self, kid: str | None) -> dict[str, Any] | None:
        """The JWK for ``kid`` (``None``: the only key of a one-key set)."""
        now = self.clock()
        if self.fetched_at is None or now - self.fetched_at >= self.ttl:
            await self._refresh(now)
        found = self._lookup(kid)
        if found is None and (self.fetched_at is None or self.clock() - self.fetched_at >= self.min_refresh):
            await self._refresh(self.clock())  # a rotated key: look again, rate-limited
            found = self._lookup(kid)
        return found

    def _lookup(self, kid: str | None) -> dict[str, Any] | None:
        if kid is None:
            return next(iter(self.keys.values())) if len(self.keys) == 1 else None
        return self.keys.get(kid)

    async def _refresh(self, started: float) -> None:
        async with self._lock:
            if self.fetched_at is not None and self.fetched_at > started:
                return  # another request refreshed while this one waited
            self.fetched_at = self.clock()
            try:
                async with httpx.AsyncClient(timeout=self.timeout, follow_redirects=False) as client:
                    url = self.url or await self._discover(client)
                    data = await _get_json(client, url)
                self.fetches += 1
            except (httpx.HTTPError, ValueError) as e:
                # keep the keys we had: an issuer hiccup must not lock every caller out
                log.warning("could not fetch the issuer's JWKS (%s); keeping %d cached key(s)", type(e).__name__, len(self.keys))
                return
            keys: dict[str, dict[str, Any]] = {}
            for i, jwk_data in enumerate(data.get("keys") or []):
                if isinstance(jwk_data, dict) and jwk_data.get("use", "sig") == "sig":
                    keys[str(jwk_data.get("kid", f"#{i}"))] = jwk_data
            self.keys = keys

    async def _discover(self, client: httpx.AsyncClient) -> str:
        parts = urlsplit(self.issuer)
        path = parts.path.rstrip("/")
        for well_known in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
            url = urlunsplit((parts.scheme, parts.netloc, well_known + path, "", ""))
            try:
                meta = await _get_json(client, url)
            except (httpx.HTTPError, ValueError):
                continue
            if meta.get("issuer") == self.issuer and isinstance(meta.get("jwks_uri"), str):
                self.url = meta["jwks_uri"]
                return self.url
        raise ValueError("the issuer publishes no metadata with a jwks_uri")


async def _get_json(client: httpx.AsyncClient, url: str) -> dict[str, Any]:
    response = await client.get(url, headers={"Accept": "application/json"})
    response.raise_for_status()
    if len(response.content) > MAX_JWKS_BYTES:
        raise ValueError("response too large")
    data = response.json()
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data


@dataclass
class JwtVerifier:
    """Verifies access tokens of one issuer for one audience (this resource)."""

    issuer: str
    audience: tuple[str, ...]
    jwks: JwksCache
    leeway: float = 30.0
    # parsed public keys by (alg, JWK): parsing a JWK costs more than verifying a signature
    _parsed: dict[tuple[str, str], Any] = field(default_factory=dict, repr=False)

    def _public_key(self, jwk_data: dict[str, Any], alg: str) -> Any:
        cache_key = (alg, json.dumps(jwk_data, sort_keys=True))
        key = self._parsed.get(cache_key)
        if key is None:
            if len(self._parsed) > 64:  # keys rotate; never grow without bound
                self._parsed.clear()
            key = self._parsed[cache_key] = jwt.PyJWK(jwk_data, algorithm=alg).key
        return key

    async def verify(self, token: str) -> Caller:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("the access token is not a JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in ALGORITHMS:
            raise TokenRejected("the access token's signing algorithm is not accepted")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise TokenRejected("the access token's key id is invalid")
        jwk_data = await self.jwks.key(kid)
        if jwk_data is None:
            raise TokenRejected("the access token was signed with an unknown key")
        if jwk_data.get("alg", alg) != alg or jwk_data.get("kty") != _KTY[alg[:2]]:
            raise TokenRejected("the access token's algorithm does not match its key")
        try:
            key = self._public_key(jwk_data, alg)
            claims = jwt.decode(
                token,
                key,
                algorithms=[alg],
                audience=list(self.audience),
                issuer=self.issuer,
                leeway=self.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRejected("the access token has expired") from None
        except jwt.ImmatureSignatureError:
            raise TokenRejected("the access token is not valid yet") from None
        except jwt.InvalidAudienceError:
            raise TokenRejected("the access token was not issued for this resource") from None
        except jwt.InvalidIssuerError:
            raise TokenRejected("the access token comes from an untrusted issuer") from None
        except jwt.InvalidSignatureError:
            raise TokenRejected("the access token's signature is invalid") from None
        except jwt.MissingRequiredClaimError:
            raise TokenRejected("the access token lacks a required claim") from None
        except (jwt.PyJWTError, ValueError, TypeError):
            raise TokenRejected("the access token is invalid") from None
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise TokenRejected("the access token lacks a required claim")
        scopes = parse_scopes(claims.get("scope", claims.get("scp")))
        client_id = claims.get("client_id") or claims.get("azp") or subject
        exp = claims.get("exp")
        return Caller(
            identity_for(subject),
            scopes,
            "jwt",
            client_id=str(client_id),
            expires_at=int(exp) if isinstance(exp, int | float) else None,
        )
