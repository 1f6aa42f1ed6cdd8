"""The HTTP transport of deliveries: httpx whose every connection goes to a checked address.

httpx hands the host of the URL to httpcore, which asks its network backend for a TCP
connection to it. :class:`CheckedBackend` is that backend: it resolves the host itself, checks
every address (:class:`~services.runtime.webhook_addresses.AddressPolicy`) and connects to a checked
one, so the address connected to is the address that was checked (no second lookup in between
that DNS could answer differently). TLS still verifies the certificate against the host name,
and sends it as SNI. A kept-alive connection goes on to the address it was opened to; each new
one is checked again.

No proxy from the environment is used (it would connect to somewhere else than the address
checked), and redirects are never followed (httpx does not by default; a 3xx is a failure).
"""

from __future__ import annotations

from collections.abc import Iterable

import httpcore
import httpx

from services.runtime.webhook_addresses import AddressPolicy, AddressRefused


class CheckedBackend(httpcore.AsyncNetworkBackend):
    """Opens TCP connections only to addresses the policy lets through."""

    def __init__(self, policy: AddressPolicy) -> None:
        self._policy = policy
        self._network = httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        local_address: str | None = None,
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self._policy.addresses(host, port)
        failure: Exception | None = None
        for address in addresses:
            try:
                return await self._network.connect_tcp(
                    str(address),
                    port,
                    timeout=timeout,
                    local_address=local_address,
                    socket_options=socket_options,
                )
            except (httpcore.ConnectError, httpcore.ConnectTimeout) as error:
                failure = error
        assert failure is not None  # addresses() never returns an empty list
        raise failure

    async def connect_unix_socket(
        self,
        path: str,
        timeout: float | None = None,  # noqa: ASYNC109 (httpcore's interface)
        socket_options: Iterable[httpcore.SOCKET_OPTION] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        raise AddressRefused("webhooks are sent over TCP only")

    async def sleep(self, seconds: float) -> None:
        await self._network.sleep(seconds)


class CheckedTransport(httpx.AsyncHTTPTransport):
    """httpx's transport over :class:`CheckedBackend`."""

    def __init__(self, policy: AddressPolicy, limits: httpx.Limits) -> None:
        super().__init__(limits=limits, trust_env=False)
        # httpx builds its pool without a way to name the network backend: build it again, as
        # httpx does, with ours.
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=httpx.create_ssl_context(trust_env=False),
            max_connections=limits.max_connections,
            max_keepalive_connections=limits.max_keepalive_connections,
            keepalive_expiry=limits.keepalive_expiry,
            network_backend=CheckedBackend(policy),
        )


def delivery_client(
    policy: AddressPolicy, *, connections: int, timeout_s: float
) -> httpx.AsyncClient:
    """The client every delivery of a process is sent with: checked connections, at most
    ``connections`` open, a connect, write and read timeout of ``timeout_s`` each (the
    delivery loop also bounds the whole try), redirects not followed."""
    limits = httpx.Limits(max_connections=connections, max_keepalive_connections=connections)
    return httpx.AsyncClient(
        transport=CheckedTransport(policy, limits),
        timeout=httpx.Timeout(timeout_s),
        follow_redirects=False,
        trust_env=False,
        headers={"user-agent": "spades-webhooks/1"},
    )
