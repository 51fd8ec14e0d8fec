"""A real token issuer for the auth tests: an OAuth authorization server's metadata (RFC 8414)
and JWKS served by uvicorn on 127.0.0.1 in a thread, with PyJWT signing the tokens.

It has two signing keys in its JWKS (RSA ``rsa-1``, EC P-256 ``ec-1``) plus keys it never
publishes, for the attacks: a rogue RSA key that claims the kid ``rsa-1`` (bad signature) and
one with a kid nobody knows; :meth:`Issuer.rotate` publishes a new key while running.
"""

from __future__ import annotations

import base64
import json
import socket
import threading
import time
from typing import Any

import jwt
import uvicorn
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def public_jwk(key: Any, kid: str, alg: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(key.public_key()))
    return {**data, "kid": kid, "alg": alg, "use": "sig"}


class Issuer:
    def __init__(self) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec = ec.generate_private_key(ec.SECP256R1())
        self.rogue = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.published: list[dict[str, Any]] = [public_jwk(self.rsa, "rsa-1", "RS256"), public_jwk(self.ec, "ec-1", "ES256")]
        self.jwks_hits = 0
        app = Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self._metadata),
                Route("/jwks", self._jwks),
            ]
        )
        config = uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning", lifespan="off")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 20
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test issuer did not start")
            time.sleep(0.02)

    @property
    def jwks_url(self) -> str:
        return f"{self.url}/jwks"

    async def _metadata(self, request: Request) -> JSONResponse:
        return JSONResponse(
            {
                "issuer": self.url,
                "jwks_uri": self.jwks_url,
                "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token",
                "response_types_supported": ["code"],
            }
        )

    async def _jwks(self, request: Request) -> JSONResponse:
        self.jwks_hits += 1
        return JSONResponse({"keys": self.published})

    def rotate(self, kid: str) -> Any:
        key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.published.append(public_jwk(key, kid, "RS256"))
        return key

    def token(
        self,
        audience: str | list[str],
        *,
        sub: str = "alice",
        scope: str | None = "mcpaql:full",
        key: Any = None,
        kid: str | None = "rsa-1",
        alg: str = "RS256",
        lifetime: int = 300,
        nbf: int | None = None,
        issuer: str | None = None,
        **claims: Any,
    ) -> str:
        now = int(time.time())
        payload: dict[str, Any] = {"iss": issuer or self.url, "sub": sub, "aud": audience, "iat": now, "exp": now + lifetime}
        if scope is not None:
            payload["scope"] = scope
        if nbf is not None:
            payload["nbf"] = nbf
        payload.update(claims)
        headers = {"kid": kid} if kid is not None else {}
        return jwt.encode(payload, key if key is not None else self.rsa, algorithm=alg, headers=headers)

    def unsigned(self, audience: str, **claims: Any) -> str:
        """``alg: none`` (PyJWT refuses to make one with a key, so by hand: header.payload.)"""
        now = int(time.time())
        payload = {"iss": self.url, "sub": "mallory", "aud": audience, "iat": now, "exp": now + 300, "scope": "mcpaql:full"}
        payload.update(claims)
        part = [
            base64.urlsafe_b64encode(json.dumps(x).encode()).rstrip(b"=").decode()
            for x in ({"alg": "none", "kid": "rsa-1"}, payload)
        ]
        return f"{part[0]}.{part[1]}."

    def hmac_confusion(self, audience: str) -> str:
        """HS256 signed with the issuer's *public* RSA key as the secret (algorithm confusion)."""
        pem = self.rsa.public_key().public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        now = int(time.time())
        payload = {"iss": self.url, "sub": "mallory", "aud": audience, "iat": now, "exp": now + 300, "scope": "mcpaql:full"}
        header = base64.urlsafe_b64encode(json.dumps({"alg": "HS256", "kid": "rsa-1", "typ": "JWT"}).encode()).rstrip(b"=")
        body = base64.urlsafe_b64encode(json.dumps(payload).encode()).rstrip(b"=")
        import hashlib
        import hmac

        sig = base64.urlsafe_b64encode(hmac.new(pem, header + b"." + body, hashlib.sha256).digest()).rstrip(b"=")
        return (header + b"." + body + b"." + sig).decode()

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(10)
