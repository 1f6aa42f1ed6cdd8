"""Connecting to NATS and declaring JetStream streams."""

from __future__ import annotations

import asyncio
from pathlib import Path
from urllib.parse import urlsplit

from nats.aio.client import Client
from nats.errors import AuthorizationError
from nats.js.api import StreamConfig, StreamInfo
from nats.js.errors import BadRequestError
from nats.js.manager import JetStreamManager

from services.runtime.broker_users import inbox_prefix
from services.runtime.credentials import connect_options
from services.runtime.logging import get_logger

# JetStream API error "stream name already in use with a different configuration".
STREAM_NAME_IN_USE = 10058
# Short waits so a restarted server is found again quickly; attempts never run out, so a
# process outlives any outage of its server.
RECONNECT_TIME_WAIT_S = 1
CONNECT_TIMEOUT_S = 2

log = get_logger(__name__)


def servers_of(url: str) -> list[str]:
    """The servers of a URL list: ``nats://a:4222,nats://b:4222`` names a cluster's nodes, any
    of which will do (the client moves to another when one goes)."""
    return [part.strip() for part in url.split(",") if part.strip()]


async def connect(
    url: str,
    name: str,
    *,
    user: str | None = None,
    credentials: Path | None = None,
    first_connect_timeout_s: float = 10.0,
) -> Client:
    """Connect as `name` (shown in the server's monitoring), reconnecting forever after.

    ``user`` is the broker user the process acts as (:mod:`services.runtime.broker_users`): its
    inbox prefix is that user's own. ``credentials`` is the file that proves it (an nkey seed
    or a ``.creds`` file); a server that requires credentials refuses a client without them.

    With unlimited attempts nats-py would also retry the first connection forever; a wrong
    URL should fail instead, so the first connection is bounded by `first_connect_timeout_s`.
    """
    client = Client()
    server = _address(url)
    options = connect_options(credentials)
    if user is not None:
        options["inbox_prefix"] = inbox_prefix(user)
    first_attempts: asyncio.Timeout | None = None
    refused = False

    async def on_error(error: Exception) -> None:
        nonlocal refused
        if first_attempts is not None and _is_refusal(error):
            # Retrying will not help: give up on the first connection now.
            refused = True
            first_attempts.reschedule(asyncio.get_running_loop().time())
        log.warning("nats error", server=server, connection=name, error=repr(error))

    async def on_disconnected() -> None:
        if client.is_closed:  # closed on purpose, not lost
            log.info("nats connection closed", server=server, connection=name)
        else:
            log.warning("nats disconnected", server=server, connection=name)

    async def on_reconnected() -> None:
        log.info("nats reconnected", server=_connected_to(client), connection=name)

    try:
        async with asyncio.timeout(first_connect_timeout_s) as first_attempts:
            await client.connect(
                servers=servers_of(url),
                name=name,
                max_reconnect_attempts=-1,
                reconnect_time_wait=RECONNECT_TIME_WAIT_S,
                connect_timeout=CONNECT_TIMEOUT_S,
                error_cb=on_error,
                disconnected_cb=on_disconnected,
                reconnected_cb=on_reconnected,
                **options,
            )
        first_attempts = None
    except TimeoutError:
        await client.close()
        if refused:
            shown = str(credentials) if credentials is not None else "no credentials"
            raise PermissionError(
                f"the NATS server at {server} refused the connection ({shown}); "
                "see SPADES_NATS_CREDS"
            ) from None
        raise ConnectionError(
            f"no NATS server answered at {server} within {first_connect_timeout_s}s"
        ) from None
    return client


async def ensure_stream(js: JetStreamManager, config: StreamConfig) -> StreamInfo:
    """Create the stream, or bring an existing one of that name to `config`. A stream that
    denies deletes or purges keeps denying them (JetStream refuses to lift either)."""
    try:
        # Adding a stream that exists with the same configuration succeeds unchanged.
        return await js.add_stream(config)
    except BadRequestError as error:
        if error.err_code != STREAM_NAME_IN_USE:
            raise
    found = (await js.stream_info(str(config.name))).config
    kept = config.evolve(
        deny_delete=bool(config.deny_delete or found.deny_delete),
        deny_purge=bool(config.deny_purge or found.deny_purge),
    )
    log.info("updating stream configuration", stream=config.name)
    return await js.update_stream(kept)


def _is_refusal(error: Exception) -> bool:
    """The server refused the credentials (or their absence)."""
    return isinstance(error, AuthorizationError) or "authorization violation" in str(error).lower()


def _address(url: str) -> str:
    """The servers of ``url`` as host:port only: a URL may carry a user and password, which
    must not be logged."""
    return ",".join(_host_port(server) for server in servers_of(url))


def _connected_to(client: Client) -> str:
    """The server the client is connected to now (one of a cluster's)."""
    url = client.connected_url
    return f"{url.hostname}:{url.port}" if url is not None else "(none)"


def _host_port(server: str) -> str:
    try:
        parts = urlsplit(server)
        return f"{parts.hostname}:{parts.port}" if parts.hostname else "(unparsable url)"
    except ValueError:  # a port that is not a number
        return "(unparsable url)"
