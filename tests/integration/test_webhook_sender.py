"""One try of a delivery against receivers that misbehave: a redirect is not followed, an
endless answer is read no further than 4 KiB, a receiver that never answers is given up on at
the timeout, and the headers are those of Standard Webhooks."""

from __future__ import annotations

import contextlib
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from benchmarks.webhook_receiver import Receiver
from services.client import verify_webhook
from services.runtime.webhook_addresses import AddressPolicy
from services.runtime.webhook_signing import new_secret
from services.webhooks.delivery import Outcome, Sender
from services.webhooks.outbox import Due
from services.webhooks.transport import delivery_client

pytestmark = pytest.mark.integration

TIMEOUT_S = 2.0


def due(url: str, secret: str = "") -> Due:
    return Due(
        id=1,
        endpoint_id="ep_1",
        message_id="msg_1",
        chain="game:g",
        body=b'{"type":"game.turn"}',
        attempts=0,
        created_at=time.time(),
        url=url,
        secret=secret or new_secret(),
    )


@contextlib.contextmanager
def raw_server(answer: Callable[[socket.socket], None]) -> Iterator[str]:
    """A TCP server on 127.0.0.1 that reads a request and lets ``answer`` write to the socket;
    yields its URL."""
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                connection, _ = listener.accept()
            except TimeoutError:
                continue
            with connection:
                connection.recv(65536)
                with contextlib.suppress(OSError):  # the client went away
                    answer(connection)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{port}/hooks"
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


async def send(url: str, secret: str = "") -> tuple[Outcome, float]:
    async with delivery_client(
        AddressPolicy(allow_private=True), connections=4, timeout_s=TIMEOUT_S
    ) as client:
        started = time.monotonic()
        outcome = await Sender(client, TIMEOUT_S).send(due(url, secret))
        return outcome, time.monotonic() - started


async def test_a_try_carries_the_standard_webhooks_headers_and_the_body() -> None:
    secret = new_secret()
    with Receiver() as receiver:
        outcome, _ = await send(receiver.url, secret)
    [request] = receiver.received
    assert outcome.acknowledged is True
    assert request.id == "msg_1"
    assert request.body == b'{"type":"game.turn"}'
    assert verify_webhook(secret, request.headers, request.body) == {"type": "game.turn"}


async def test_a_redirect_is_a_failed_try_and_is_not_followed() -> None:
    with Receiver() as target:

        def redirect(connection: socket.socket) -> None:
            connection.sendall(
                b"HTTP/1.1 307 Temporary Redirect\r\nLocation: "
                + target.url.encode()
                + b"\r\nContent-Length: 0\r\n\r\n"
            )

        with raw_server(redirect) as url:
            outcome, _ = await send(url)
    assert (outcome.status, outcome.error) == (307, "answered 307")
    assert target.received == []


async def test_an_endless_answer_is_read_no_further_than_the_limit() -> None:
    chunk = b"x" * 65536

    def endless(connection: socket.socket) -> None:
        connection.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: 1000000000\r\n\r\n")
        for _ in range(20000):  # 1.3 GB, were it all read
            connection.sendall(chunk)

    with raw_server(endless) as url:
        outcome, took = await send(url)
    assert outcome.acknowledged is True
    assert took < TIMEOUT_S, "the rest of the answer was left unread"


async def test_a_receiver_that_never_answers_is_given_up_at_the_timeout() -> None:
    held = threading.Event()

    def silent(_connection: socket.socket) -> None:
        held.wait(TIMEOUT_S * 3)

    with raw_server(silent) as url:
        outcome, took = await send(url)
        held.set()
    assert outcome.status is None
    assert f"no answer within {TIMEOUT_S:g} s" == outcome.error
    assert TIMEOUT_S * 0.9 <= took < TIMEOUT_S * 2


async def test_a_port_with_nothing_listening_fails_at_once() -> None:
    with socket.create_server(("127.0.0.1", 0)) as probe:
        port = probe.getsockname()[1]
    outcome, took = await send(f"http://127.0.0.1:{port}/hooks")
    assert outcome.status is None
    assert "ConnectError" in str(outcome.error)
    assert took < TIMEOUT_S


async def test_loopback_is_refused_at_connection_unless_allowed() -> None:
    with Receiver() as receiver:
        async with delivery_client(
            AddressPolicy(allow_private=False), connections=1, timeout_s=TIMEOUT_S
        ) as client:
            outcome = await Sender(client, TIMEOUT_S).send(due(receiver.url))
    assert outcome.status is None
    assert "refused" in str(outcome.error)
    assert "not a public one" in str(outcome.error)  # the log the platform reads tells no address
    assert receiver.received == []
