"""Where a webhook may be sent: the URL's shape, and the addresses its host resolves to.

Only ``http`` and ``https`` URLs, without credentials in them. The host is resolved and every
address it gives is checked: loopback, link-local, private, multicast, unspecified, reserved,
every block of IANA's special-purpose registries (the ``ipaddress`` module of Python 3.11 calls
some of them global: 192.0.0.0/24, 192.88.99.0/24, 64:ff9b:1::/48, ...) and other non-global
addresses are refused. An IPv6 address that carries an IPv4 one (mapped, 6to4 in 2002::/16,
NAT64 in 64:ff9b::/96) is checked as that IPv4 address; Teredo (2001::/32) is refused outright,
its tunnel reaching whatever its relay does. All this unless the deployment allows private
addresses (``SPADES_WEBHOOK_ALLOW_PRIVATE=1``, for tests and receivers on the same machine).
A refusal names the host as given, never what it resolved to: a caller learns nothing of the
network's names from it. The check is made when an endpoint is registered
and again whenever a delivery connects (:mod:`.transport`), because DNS can change: a name that
was public may later point inside the network.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from dataclasses import dataclass

import httpx

MAX_URL_LENGTH = 2048
RESOLVE_TIMEOUT_S = 5.0

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


class InvalidUrl(ValueError):
    """A URL no webhook may have, whatever it resolves to."""


class AddressRefused(Exception):
    """The host resolves to an address webhooks may not reach (or to none). The message names
    no address; ``reason`` says which one and why, for the server's own log."""

    def __init__(self, message: str, reason: str = "") -> None:
        super().__init__(message)
        self.reason = reason or message


class Unresolvable(AddressRefused):
    """The host resolves to no address at all."""


def checked_url(text: str) -> httpx.URL:
    """``text`` as a webhook URL; raise :class:`InvalidUrl` saying what is wrong with it."""
    if len(text) > MAX_URL_LENGTH:
        raise InvalidUrl(f"a webhook URL has at most {MAX_URL_LENGTH} characters")
    try:
        url = httpx.URL(text)
    except (httpx.InvalidURL, ValueError, TypeError):
        raise InvalidUrl("not a URL") from None
    if url.scheme not in ("http", "https"):
        raise InvalidUrl("a webhook URL is http:// or https://")
    if not url.host:
        raise InvalidUrl("a webhook URL names a host")
    if url.userinfo:
        raise InvalidUrl("a webhook URL carries no user or password: deliveries are signed")
    return url


SPECIAL_PURPOSE: tuple[ipaddress.IPv4Network | ipaddress.IPv6Network, ...] = tuple(
    ipaddress.ip_network(block)
    for block in (
        # IANA IPv4 Special-Purpose Address Registry
        "0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16",
        "172.16.0.0/12", "192.0.0.0/24", "192.0.2.0/24", "192.31.196.0/24", "192.52.193.0/24",
        "192.88.99.0/24", "192.168.0.0/16", "192.175.48.0/24", "198.18.0.0/15",
        "198.51.100.0/24", "203.0.113.0/24", "224.0.0.0/4", "240.0.0.0/4",
        # IANA IPv6 Special-Purpose Address Registry (2002::/16 and 64:ff9b::/96 are checked
        # by the IPv4 address they carry)
        "::/8", "64:ff9b:1::/48", "100::/64", "2001::/23", "2001:db8::/32", "2620:4f:8000::/48",
        "3fff::/20", "5f00::/16", "fc00::/7", "fe80::/10", "fec0::/10", "ff00::/8",
    )
)  # fmt: skip
"""Every block IANA lists as special-purpose: none is a webhook receiver's address."""

_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_TEREDO = ipaddress.IPv6Network("2001::/32")


def carried_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one reaches: mapped, 6to4 or NAT64 (None for any other)."""
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def refusal(address: IPAddress) -> str | None:
    """Why webhooks may not reach ``address`` (None when they may)."""
    checked: IPAddress = address
    if isinstance(address, ipaddress.IPv6Address):
        if address in _TEREDO:
            return f"{address} is a Teredo address"
        checked = carried_ipv4(address) or address
    kinds = (  # the most telling first: 0.0.0.0 is "private" too, but above all unspecified
        ("unspecified", checked.is_unspecified),
        ("loopback", checked.is_loopback),
        ("link-local", checked.is_link_local),
        ("multicast", checked.is_multicast),
        ("reserved", checked.is_reserved),
        ("private", checked.is_private),
        ("special-purpose", any(checked in block for block in SPECIAL_PURPOSE)),
    )
    for kind, matches in kinds:
        if matches:
            return f"{address} is a {kind} address"
    if not checked.is_global:
        return f"{address} is not a public address"
    return None


@dataclass(frozen=True, slots=True)
class AddressPolicy:
    """Resolves a host and checks every address it gives."""

    allow_private: bool = False
    resolve_timeout_s: float = RESOLVE_TIMEOUT_S

    async def addresses(self, host: str, port: int) -> list[IPAddress]:
        """The addresses to connect to for ``host``, each checked; raise
        :class:`AddressRefused` if any one is refused, or there is none."""
        found = await self._resolve(host.strip("[]"), port)
        if not self.allow_private:
            for address in found:
                reason = refusal(address)
                if reason is not None:
                    raise AddressRefused(
                        f"{host} is or resolves to an address webhooks may not reach: not a "
                        "public one (SPADES_WEBHOOK_ALLOW_PRIVATE=1 allows it)",
                        reason,
                    )
        return found

    async def _resolve(self, host: str, port: int) -> list[IPAddress]:
        try:
            return [ipaddress.ip_address(host)]
        except ValueError:
            pass
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.resolve_timeout_s):
                answers = await loop.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except TimeoutError:
            raise Unresolvable(
                f"{host} did not resolve within {self.resolve_timeout_s} s"
            ) from None
        except (socket.gaierror, UnicodeError, OSError) as error:
            raise Unresolvable(f"{host} does not resolve ({error})") from None
        unique: list[IPAddress] = []
        for *_, sockaddr in answers:
            address = ipaddress.ip_address(str(sockaddr[0]).split("%", 1)[0])
            if address not in unique:
                unique.append(address)
        if not unique:
            raise Unresolvable(f"{host} resolves to no address")
        return unique
