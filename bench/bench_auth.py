"""What authenticating a request costs, side by side with the call it guards.

Per request, in process (no network: the JWKS is already cached, as it is after the first
request): matching an API key among 1 and 1,000 configured keys (SHA-256 + a constant-time
compare with every digest), verifying an RS256 and an ES256 JWT (PyJWT: header, key lookup,
signature, claims), and, for scale, one ``tools/call`` of a trivial READ operation through the
engine. The ratio column is each cost over that call's.

    .venv/bin/python bench/bench_auth.py [-n 2000]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from mcpaql import Adapter, Config
from mcpaql.auth.apikeys import ApiKeys
from mcpaql.auth.jwks import JwksCache, JwtVerifier
from mcpaql.protocol.context import Context
from mcpaql.protocol.session import Session

ISS = "https://issuer.example"
AUD = "https://mcp.example/mcp"


def jwk(key: Any, kid: str, alg: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(jwt.algorithms.get_default_algorithms()[alg].to_jwk(key.public_key()))
    return {**data, "kid": kid, "alg": alg, "use": "sig"}


async def per_call(fn: Callable[[], Awaitable[Any]], n: int) -> float:
    for _ in range(min(50, n)):
        await fn()
    t = time.perf_counter()
    for _ in range(n):
        await fn()
    return (time.perf_counter() - t) / n * 1e6


async def main(n: int) -> None:
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    cache = JwksCache(None, ISS)
    cache.keys = {"r": jwk(rsa_key, "r", "RS256"), "e": jwk(ec_key, "e", "ES256")}
    cache.fetched_at = cache.clock()
    verifier = JwtVerifier(ISS, (AUD,), cache)
    now = int(time.time())
    claims = {"iss": ISS, "aud": AUD, "sub": "alice", "exp": now + 3600, "iat": now, "scope": "mcpaql:read"}
    rs = jwt.encode(claims, rsa_key, "RS256", headers={"kid": "r"})
    es = jwt.encode(claims, ec_key, "ES256", headers={"kid": "e"})
    one_key = "k" * 32
    keys_1 = ApiKeys.parse(f"a mcpaql:read {one_key}", "bench")
    many = "\n".join(f"s{i} mcpaql:read {secrets.token_urlsafe(24)}" for i in range(999)) + f"\nlast mcpaql:read {one_key}"
    keys_1000 = ApiKeys.parse(many, "bench")

    app = Adapter("bench")

    @app.read
    def ping() -> dict[str, Any]:
        """Answer."""
        return {"ok": True}

    engine = app.engine(Config())
    ctx = Context(session=Session())
    tool = next(t.name for t in engine.tools if t.name.endswith("_read"))

    async def call() -> Any:
        return await engine.call_tool(tool, {"operation": "ping"}, ctx)

    async def key1() -> Any:
        return keys_1.match(one_key)

    async def key1000() -> Any:
        return keys_1000.match(one_key)

    base = await per_call(call, n)
    rows = [
        ("tools/call of a READ op (engine)", base),
        ("API key, 1 configured", await per_call(key1, n)),
        ("API key, 1,000 configured", await per_call(key1000, n)),
        ("JWT RS256 (2048-bit)", await per_call(lambda: verifier.verify(rs), n)),
        ("JWT ES256 (P-256)", await per_call(lambda: verifier.verify(es), n)),
    ]
    print(f"{'per request':36} {'µs':>9} {'× call':>8}")
    for name, us in rows:
        print(f"{name:36} {us:9.1f} {us / base:8.2f}")


if __name__ == "__main__":
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("-n", type=int, default=2000)
    asyncio.run(main(p.parse_args().n))
