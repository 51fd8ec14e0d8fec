"""What an HTTP server was asked to authenticate with, and the start-up checks on it.

:class:`AuthOptions` is a field of :class:`mcpaql.serving.ServeOptions` (the serving flags
``--auth-issuer``, ``--auth-audience``, ``--auth-jwks-url``, ``--api-keys-file``,
``--resource-url``, ``--insecure-no-auth``; environment equivalents read by
:func:`mcpaql.config.auth_env`). :func:`check_exposure` is the secure default: an HTTP server
bound beyond loopback without authentication does not start.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .scopes import Caller

if TYPE_CHECKING:  # imported when a server is built: the CLI does not pay for PyJWT otherwise
    from .apikeys import ApiKeys
    from .jwks import JwtVerifier

LOOPBACK = ("127.0.0.1", "localhost", "::1")


class AuthConfigError(ValueError):
    """An authentication setting the server cannot honour; the message is one line."""


@dataclass(frozen=True)
class AuthOptions:
    issuer: str | None = None
    audience: tuple[str, ...] = ()
    jwks_url: str | None = None
    api_keys_file: str | None = None
    api_keys: str | None = field(default=None, repr=False)  # inline keys (MCPAQL_API_KEYS): never printed
    resource_url: str | None = None
    insecure_no_auth: bool = False
    leeway: float = 30.0

    @property
    def configured(self) -> bool:
        return bool(self.issuer or self.api_keys_file or self.api_keys)

    @classmethod
    def from_settings(cls, settings: Mapping[str, Any]) -> AuthOptions:
        """From flag/env values (``None`` = not given); ``audience`` may be comma-separated."""
        audience = settings.get("auth_audience") or ()
        if isinstance(audience, str):
            audience = tuple(a.strip() for a in audience.split(",") if a.strip())
        return cls(
            issuer=settings.get("auth_issuer") or None,
            audience=tuple(audience),
            jwks_url=settings.get("auth_jwks_url") or None,
            api_keys_file=settings.get("api_keys_file") or None,
            api_keys=settings.get("api_keys") or None,
            resource_url=settings.get("resource_url") or None,
            insecure_no_auth=bool(settings.get("insecure_no_auth")),
        )

    def __post_init__(self) -> None:
        for name in ("issuer", "jwks_url", "resource_url"):
            value = getattr(self, name)
            if value is not None and not _is_http_url(value):
                raise AuthConfigError(f"{_flag(name)} must be an http(s) URL")
        if (self.audience or self.jwks_url) and not self.issuer:
            raise AuthConfigError("--auth-audience and --auth-jwks-url need --auth-issuer (the token issuer to trust)")
        if self.insecure_no_auth and self.configured:
            raise AuthConfigError("--insecure-no-auth contradicts the authentication configured (drop one of them)")

    def summary(self) -> str:
        """What the "serving on" line says about authentication (never a secret)."""
        kinds = [f"JWTs from {self.issuer}"] if self.issuer else []
        if self.api_keys_file or self.api_keys:
            kinds.append("API keys")
        if kinds:
            return " with auth: " + " and ".join(kinds)
        return " WITHOUT authentication (--insecure-no-auth)" if self.insecure_no_auth else ""

    def load_keys(self) -> ApiKeys | None:
        """The configured API keys (read now: a bad file fails at start, naming the line)."""
        from .apikeys import ApiKeyError, ApiKeys

        if not (self.api_keys_file or self.api_keys):
            return None
        try:
            return ApiKeys.load(self.api_keys_file, self.api_keys)
        except ApiKeyError as e:
            raise AuthConfigError(str(e)) from None


def _flag(name: str) -> str:
    return {"issuer": "--auth-issuer", "jwks_url": "--auth-jwks-url", "resource_url": "--resource-url"}[name]


def _is_http_url(value: str) -> bool:
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


def check_exposure(host: str, auth: AuthOptions) -> None:
    """Refuse an HTTP server reachable beyond this machine that nobody has to log in to."""
    if host in LOOPBACK or auth.configured or auth.insecure_no_auth:
        return
    raise AuthConfigError(
        f"refusing to serve HTTP on {host} without authentication (anyone who can reach the port could call "
        "every operation): configure --auth-issuer or --api-keys-file, or pass --insecure-no-auth"
    )


def resource_url(auth: AuthOptions, host: str, port: int, path: str) -> str:
    """This server's resource identifier (RFC 8707/9728): ``--resource-url``, else the loopback
    URL it serves on. Beyond loopback the public URL must be given (clients use it as audience)."""
    if auth.resource_url:
        return auth.resource_url
    if host not in LOOPBACK:
        raise AuthConfigError(
            f"serving on {host} with authentication needs --resource-url (the public URL clients reach this server at)"
        )
    shown = f"[{host}]" if ":" in host else host
    return f"http://{shown}:{port}{path}"


class Authenticator:
    """Turns a presented bearer credential into a :class:`Caller` (API keys first: no I/O)."""

    def __init__(self, jwt_verifier: JwtVerifier | None, api_keys: ApiKeys | None) -> None:
        self.jwt = jwt_verifier
        self.api_keys = api_keys

    async def authenticate(self, credential: str) -> Caller:
        from .jwks import TokenRejected

        if self.api_keys:
            caller = self.api_keys.match(credential)
            if caller is not None:
                return caller
        if self.jwt is not None and credential.count(".") == 2:
            return await self.jwt.verify(credential)
        raise TokenRejected("the access token is invalid")


def build_authenticator(auth: AuthOptions, resource: str | None) -> Authenticator:
    """The authenticator for ``auth``; the audience defaults to this resource's URL."""
    from .jwks import JwksCache, JwtVerifier

    keys = auth.load_keys()
    verifier = None
    if auth.issuer:
        jwks = JwksCache(auth.jwks_url, auth.issuer)
        audience = auth.audience or ((resource,) if resource else ())
        if not audience:
            raise AuthConfigError("--auth-issuer needs --auth-audience or --resource-url (the audience tokens must name)")
        verifier = JwtVerifier(auth.issuer, audience, jwks, leeway=auth.leeway)
    return Authenticator(verifier, keys)
