"""The JWKS cache against the real test issuer: discovery from the issuer's metadata, key
rotation picked up on an unknown kid, a flood of made-up kids costing at most one refetch per
``min_refresh``, and an issuer outage keeping the keys already known."""

from __future__ import annotations

import secrets

import pytest
from cryptography.hazmat.primitives.asymmetric import rsa
from issuer import Issuer

from mcpaql.auth.jwks import JwksCache, JwtVerifier, TokenRejected

pytestmark = pytest.mark.anyio
AUD = "http://127.0.0.1:1/mcp"


def verifier(issuer: Issuer, **kw: float) -> JwtVerifier:
    return JwtVerifier(issuer.url, (AUD,), JwksCache(issuer.jwks_url, issuer.url, **kw))


async def test_the_jwks_url_is_discovered_from_the_issuer(issuer: Issuer) -> None:
    v = JwtVerifier(issuer.url, (AUD,), JwksCache(None, issuer.url))
    caller = await v.verify(issuer.token(AUD, sub="dora", scope="mcpaql:read mcpaql:create"))
    assert (caller.identity, caller.scopes) == ("dora", {"mcpaql:read", "mcpaql:create"})
    assert v.jwks.url == issuer.jwks_url


async def test_a_flood_of_unknown_kids_fetches_once(issuer: Issuer) -> None:
    v = verifier(issuer, min_refresh=60)
    await v.verify(issuer.token(AUD))
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    for _ in range(40):
        with pytest.raises(TokenRejected, match="unknown key"):
            await v.verify(issuer.token(AUD, key=stranger, kid=secrets.token_hex(4)))
    assert v.jwks.fetches == 1


async def test_a_rotated_key_is_picked_up(issuer: Issuer) -> None:
    v = verifier(issuer, min_refresh=0)
    await v.verify(issuer.token(AUD))
    new = issuer.rotate("rsa-2")
    caller = await v.verify(issuer.token(AUD, key=new, kid="rsa-2", sub="rotated"))
    assert caller.identity == "rotated" and v.jwks.fetches == 2


async def test_an_issuer_outage_keeps_the_known_keys(issuer: Issuer) -> None:
    v = verifier(issuer, ttl=0, min_refresh=0)
    await v.verify(issuer.token(AUD))
    v.jwks.url = "http://127.0.0.1:9/jwks"  # nothing listens there
    assert (await v.verify(issuer.token(AUD, sub="still"))).identity == "still"


async def test_a_key_whose_type_does_not_fit_the_algorithm_is_refused(issuer: Issuer) -> None:
    v = verifier(issuer)
    # an ES256 token naming the RSA key's kid
    with pytest.raises(TokenRejected, match="does not match its key"):
        await v.verify(issuer.token(AUD, key=issuer.ec, kid="rsa-1", alg="ES256"))
