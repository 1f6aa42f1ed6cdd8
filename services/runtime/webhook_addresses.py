"""Where a webhook may be sent: the URL's shape, and the addresses its host resolves to.

Only ``http`` and ``https`` URLs, without credentials in them. The host is resolved and every
address it gives is checked: loopback, link-local, private, multicast, unspecified, reserved
and other non-global addresses are refused (an IPv4 address mapped into IPv6 is checked as the
IPv4 one), unless the deployment allows private addresses (``SPADES_WEBHOOK_ALLOW_PRIVATE=1``,
for tests and receivers on the same machine). The check is made when an endpoint is registered
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
    """The host resolves to an address webhooks may not reach (or to none)."""


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


def refusal(address: IPAddress) -> str | None:
    """Why webhooks may not reach ``address`` (None when they may)."""
    checked: IPAddress = address
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        checked = address.ipv4_mapped
    kinds = (  # the most telling first: 0.0.0.0 is "private" too, but above all unspecified
        ("unspecified", checked.is_unspecified),
        ("loopback", checked.is_loopback),
        ("link-local", checked.is_link_local),
        ("multicast", checked.is_multicast),
        ("reserved", checked.is_reserved),
        ("private", checked.is_private),
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
                        f"{host} resolves to {reason} (SPADES_WEBHOOK_ALLOW_PRIVATE=1 allows it)"
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
