"""How the gateway is served: uvicorn with a guarded HTTP protocol.

uvicorn bounds neither the bytes of a request's head nor the time a client takes to send it
(httptools accumulates an endless header line in memory), nor the connections one address
holds. :class:`GuardedProtocol` does, before the application sees anything: a head over
``max_header_bytes`` is answered 431, one not complete ``header_timeout_s`` after its first
byte (or after the connection opened) is answered 408 (both ``malformed``, and the connection
closed), and an address past ``max_connections`` open connections is answered 429
``rate_limited`` as it connects. Addresses named in ``SPADES_TRUSTED_PROXIES`` are not capped:
a proxy carries many clients' connections, and caps them itself (``deploy/nginx``).
"""

from __future__ import annotations

import asyncio
import json
from collections import Counter
from dataclasses import dataclass
from http import HTTPStatus
from ipaddress import IPv4Network, IPv6Network, ip_address, ip_network
from typing import Any, ClassVar

import uvicorn
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from services.gateway.problems import PROBLEM_JSON, RETRY_AFTER_S
from services.runtime.settings import Settings

GRACEFUL_SHUTDOWN_S = 3
"""How long open event streams may hold a stopping gateway."""

UVICORN_OPTIONS: dict[str, Any] = {
    "log_config": None,  # our logging, configured before the server starts
    "access_log": False,  # it prints query strings; the gateway logs requests by path
    "timeout_graceful_shutdown": GRACEFUL_SHUTDOWN_S,
    # The C event loop and HTTP parser (uvicorn's pure-Python h11 costs far more per request).
    "loop": "uvloop",
    "http": "httptools",
}
"""How the gateway runs under uvicorn (``spades bench http`` runs its bare peer the same way);
:func:`gateway_config` guards the protocol (httptools still)."""


@dataclass(frozen=True, slots=True)
class HeadLimits:
    """What one request's head, and one address's connections, may take."""

    max_header_bytes: int
    header_timeout_s: float
    max_connections: int
    """Open connections per client address (0: no cap)."""
    exempt: tuple[IPv4Network | IPv6Network, ...] = ()
    """Addresses not capped: the trusted proxies (addresses or networks)."""

    def capped(self, address: str) -> bool:
        """Whether connections from ``address`` count against the cap."""
        if not self.max_connections:
            return False
        try:
            ip = ip_address(address)
        except ValueError:
            return True
        return not any(ip in network for network in self.exempt)

    @classmethod
    def of(cls, settings: Settings) -> HeadLimits:
        return cls(
            settings.max_header_bytes,
            settings.header_timeout_s,
            settings.max_connections_per_address,
            tuple(_network(proxy) for proxy in trusted_proxies(settings) if proxy != "*"),
        )


def _network(proxy: str) -> IPv4Network | IPv6Network:
    try:
        return ip_network(proxy, strict=False)
    except ValueError:
        return ip_network("0.0.0.0/32")  # a name, not an address: uvicorn ignores it too


def trusted_proxies(settings: Settings) -> list[str]:
    return [address.strip() for address in settings.trusted_proxies.split(",") if address.strip()]


def _refusal(status: int, code: str, detail: str) -> bytes:
    """A whole HTTP/1.1 answer, a problem document, that closes the connection (written
    before any application could answer: the request was never read). A 429 says when to try
    again, as every other 429 does: a client that honours ``Retry-After`` has nothing else
    to go by."""
    body = json.dumps(
        {
            "type": f"urn:spades:problem:{code}",
            "title": HTTPStatus(status).phrase,
            "status": status,
            "detail": detail,
            "code": code,
        }
    ).encode()
    retry_after = f"retry-after: {RETRY_AFTER_S}\r\n" if status == 429 else ""
    head = (
        f"HTTP/1.1 {status} {HTTPStatus(status).phrase}\r\n"
        f"content-type: {PROBLEM_JSON}\r\n"
        f"content-length: {len(body)}\r\n"
        f"{retry_after}"
        "connection: close\r\n\r\n"
    )
    return head.encode() + body


LINGER_S = 1.0
"""How long a refused connection is held open, reading and dropping, after its answer."""


class GuardedProtocol(HttpToolsProtocol):
    """uvicorn's httptools protocol with a cap on the head's bytes and time, and on the
    connections of one address. ``limits`` and the count of open connections belong to the
    subclass :func:`guarded_protocol` makes (one per server)."""

    limits: ClassVar[HeadLimits]
    open_by_address: ClassVar[Counter[str]]

    _in_head = True
    _head_bytes = 0
    _head_timer: asyncio.TimerHandle | None = None
    _address: str | None = None
    _refused = False

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        address = self.client[0] if self.client else None
        cap = self.limits.max_connections
        if address is not None and self.limits.capped(address):
            if self.open_by_address[address] >= cap:
                detail = f"at most {cap} open connections per address"
                self._refuse(429, "rate_limited", detail)
                return
            self.open_by_address[address] += 1
            self._address = address
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        if self._address is not None:
            self.open_by_address[self._address] -= 1
            if self.open_by_address[self._address] <= 0:
                del self.open_by_address[self._address]
            self._address = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._refused:
            return
        if self._in_head:
            self._head_bytes += len(data)
            if self._head_bytes > self.limits.max_header_bytes:
                detail = f"a request's head is at most {self.limits.max_header_bytes} bytes"
                self._refuse(431, "malformed", detail)
                return
        super().data_received(data)

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._in_head = True
        self._head_bytes = 0
        self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self._in_head = False
        self._disarm_head_timer()
        super().on_headers_complete()

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self.loop.call_later(self.limits.header_timeout_s, self._head_too_slow)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_too_slow(self) -> None:
        self._head_timer = None
        if not self._in_head or self.transport.is_closing():
            return
        detail = f"a request's head must arrive within {self.limits.header_timeout_s:g} s"
        self._refuse(408, "malformed", detail)

    def _refuse(self, status: int, code: str, detail: str) -> None:
        """Answer and close; what the client goes on sending meanwhile is read and dropped for
        :data:`LINGER_S` (closing on unread bytes would reset the connection, and the client
        might never read the answer)."""
        self._in_head = False
        self._disarm_head_timer()
        self._refused = True
        if self.transport.is_closing():
            return
        self.transport.write(_refusal(status, code, detail))
        if self.transport.can_write_eof():
            self.transport.write_eof()
        self.loop.call_later(LINGER_S, self.transport.close)


def guarded_protocol(limits: HeadLimits) -> type[GuardedProtocol]:
    """A protocol class for one server: its limits, and its own count of connections."""
    return type(
        "Guarded",
        (GuardedProtocol,),
        {"limits": limits, "open_by_address": Counter[str]()},
    )


def gateway_config(
    app: Any, settings: Settings, host: str, port: int, **options: Any
) -> uvicorn.Config:
    """The gateway's uvicorn configuration: the guarded protocol, and ``X-Forwarded-For``
    believed from the trusted proxies only (anyone else could set it)."""
    proxies = trusted_proxies(settings)
    chosen: dict[str, Any] = {
        **UVICORN_OPTIONS,
        "proxy_headers": bool(proxies),
        "forwarded_allow_ips": proxies or None,
        **options,
    }
    chosen["http"] = guarded_protocol(HeadLimits.of(settings))
    return uvicorn.Config(app, host=host, port=port, **chosen)
