"""Where an OpenAPI runtime may send requests (server-side request forgery guard).

A document fetched by URL chooses its own ``servers``; without a rule it could aim the configured
``Authorization`` header at a cloud metadata service or at hosts inside the operator's network.
The rule, applied to every address a target host resolves to:

* **never** (unless ``--allow-private-targets``): link-local addresses (``169.254.0.0/16``,
  ``fe80::/10``) and the cloud metadata endpoints (``169.254.169.254``, ``fd00:ec2::254``,
  ``100.100.100.200``, ``metadata.google.internal``…), unspecified, multicast and reserved
  addresses — including IPv4 addresses embedded in IPv6 (mapped, NAT64, 6to4);
* **private** — loopback, RFC 1918, unique-local IPv6, carrier-grade NAT and every other
  non-global range (``localhost`` by name too): allowed when the operator chose the target
  locally — the document came from a file (or an in-process mapping), from a URL on a private
  or loopback host, or ``--base-url`` was given — and refused otherwise;
* everything else (global addresses) is allowed.

The check runs at start on the base URL (one line saying what and why) and again at connect time
on the address actually dialled (:class:`GuardedTransport`), so a name that resolves elsewhere
later (DNS rebinding) is still refused. Requests go only to the base URL's origin; redirects are
followed only within it (see :mod:`mcpaql.adapters.openapi`), so credentials never leave it.
"""

from __future__ import annotations

import ipaddress
import socket
import ssl
import typing
import urllib.parse
import urllib.request
from dataclasses import dataclass

import anyio
import httpcore
import httpx

Address = ipaddress.IPv4Address | ipaddress.IPv6Address

METADATA_HOSTS = frozenset(
    {
        "metadata.google.internal",
        "metadata.goog",
        "metadata",
        "instance-data",
        "instance-data.ec2.internal",
        "metadata.azure.internal",
        "metadata.platformequinix.com",
    }
)
_METADATA_IPS = frozenset(
    ipaddress.ip_address(a)
    for a in (
        "169.254.169.254",
        "169.254.170.2",
        "169.254.169.123",
        "fd00:ec2::254",
        "fd00:ec2::23",
        "100.100.100.200",
        "192.0.0.192",
    )
)
_NAT64 = ipaddress.ip_network("64:ff9b::/96")
_SHARED = ipaddress.ip_network("100.64.0.0/10")


class TargetRefused(httpcore.ConnectError):
    """A connection the target policy does not allow (raised at connect time)."""


def _embedded(ip: Address) -> Address:
    """The IPv4 address an IPv6 one carries (mapped, NAT64, 6to4), else ``ip``."""
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped:
            return ip.ipv4_mapped
        if ip in _NAT64:
            return ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
        if ip.sixtofour:
            return ip.sixtofour
    return ip


def address_class(ip: Address) -> str:
    """``forbidden`` (link-local, metadata, unspecified, multicast, reserved), ``private`` or ``public``."""
    a = _embedded(ip)
    if ip in _METADATA_IPS or a in _METADATA_IPS or a.is_link_local or a.is_unspecified or a.is_multicast:
        return "forbidden"
    if a.is_loopback:
        return "private"
    if a.is_reserved:
        return "forbidden"
    if a.is_private or a in _SHARED or not a.is_global:
        return "private"
    return "public"


def host_class(host: str) -> str | None:
    """The class a host name or literal has by itself; None when only resolving it can tell."""
    name = host.strip("[]").rstrip(".").lower()
    try:
        return address_class(ipaddress.ip_address(name.split("%", 1)[0]))
    except ValueError:
        pass
    if name in METADATA_HOSTS:
        return "forbidden"
    if name == "localhost" or name.endswith(".localhost"):
        return "private"
    return None


@dataclass(frozen=True)
class TargetPolicy:
    """What the runtime may connect to: ``private`` allows the private class, ``anything`` all."""

    private: bool = False
    anything: bool = False

    def refusal(self, host: str, klass: str) -> str | None:
        """Why ``host`` (of class ``klass``) is refused, or None."""
        if self.anything or klass == "public" or (klass == "private" and self.private):
            return None
        if klass == "forbidden":
            return f"'{host}' is a link-local or cloud-metadata address"
        return f"'{host}' is a private or loopback address and the document did not come from this machine or network"

    def check_host(self, host: str, port: int | None = None) -> str | None:
        """Start-time check: the host by itself, then what it resolves to now (a failed lookup
        is not a refusal; the connect-time check still applies)."""
        klass = host_class(host)
        if klass is not None:
            return self.refusal(host, klass)
        try:
            infos = socket.getaddrinfo(host, port or 443, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError):
            return None
        for info in infos:
            ip = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
            why = self.refusal(host, address_class(ip))
            if why:
                return f"{why} (it resolves to {ip})"
        return None


def is_local_source(origin: str | None) -> bool:
    """True when a document came from this machine (a file, a mapping) or a private/loopback URL."""
    if not origin or not origin.lower().startswith(("http://", "https://")):
        return True
    host = urllib.parse.urlsplit(origin).hostname or ""
    klass = host_class(host)
    if klass is None:
        try:
            klass = max(
                (
                    address_class(ipaddress.ip_address(str(i[4][0]).split("%", 1)[0]))
                    for i in socket.getaddrinfo(host, 443, type=socket.SOCK_STREAM)
                ),
                key=("public", "private", "forbidden").index,
            )
        except (OSError, UnicodeError, ValueError):
            return False
    return klass == "private"


def proxied(url: str) -> bool:
    """True when the environment routes ``url`` through a proxy (then the proxy connects, not us)."""
    proxies = urllib.request.getproxies()
    parts = urllib.parse.urlsplit(url)
    return bool(proxies.get(parts.scheme) or proxies.get("all")) and not urllib.request.proxy_bypass(parts.hostname or "")


class _GuardedBackend(httpcore.AsyncNetworkBackend):
    """Resolves the host itself, refuses it if any address is outside the policy, then dials the
    checked address (TLS still verifies the name: httpcore passes it separately)."""

    def __init__(self, policy: TargetPolicy) -> None:
        self.policy = policy
        self.inner = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: typing.Iterable[typing.Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        try:
            with anyio.fail_after(timeout):
                infos = await anyio.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except (OSError, UnicodeError) as e:
            raise httpcore.ConnectError(f"cannot resolve the API host: {e}") from None
        except TimeoutError:
            raise httpcore.ConnectTimeout("resolving the API host timed out") from None
        addresses = list(dict.fromkeys(str(i[4][0]) for i in infos))
        for a in addresses:
            why = self.policy.refusal(host, address_class(ipaddress.ip_address(a.split("%", 1)[0])))
            if why:
                raise TargetRefused(f"{why} (it resolves to {a})")
        last: Exception = httpcore.ConnectError("no address to connect to")
        for a in addresses:
            try:
                return await self.inner.connect_tcp(
                    a, port, timeout=timeout, local_address=local_address, socket_options=socket_options
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as e:
                last = e
        raise last

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: typing.Iterable[typing.Any] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise TargetRefused("unix sockets are not API targets")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class GuardedTransport(httpx.AsyncHTTPTransport):
    """An httpx transport whose every new connection goes through the target policy."""

    def __init__(
        self,
        policy: TargetPolicy,
        *,
        ssl_context: ssl.SSLContext | None = None,
        limits: httpx.Limits = httpx.Limits(max_connections=100, max_keepalive_connections=20),
    ) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context or httpx.create_ssl_context(),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=_GuardedBackend(policy),
        )


def refused_by(exc: BaseException) -> str | None:
    """The policy's reason when ``exc`` (an httpx error) came from :class:`TargetRefused`."""
    cause: BaseException | None = exc
    while cause is not None:
        if isinstance(cause, TargetRefused):
            return str(cause)
        cause = cause.__cause__ or cause.__context__
    return None


__all__ = [
    "GuardedTransport",
    "TargetPolicy",
    "TargetRefused",
    "address_class",
    "host_class",
    "is_local_source",
    "proxied",
    "refused_by",
]
