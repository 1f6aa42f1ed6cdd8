"""A broker user against another's durable consumer, and a follower whose consumer vanishes.

The projections user could delete the engine's round watch consumer, and every user could
change it through a create request naming it (a millisecond's ``inactive_threshold``: the server
deleted it soon after), on the unnamed create subject as well as the named one; the engine then
asked the missing consumer for messages thousands of times a second and never made it again.
Now no user deletes, makes, changes or pulls from a consumer of another's (the unnamed create
subject is no one's: readers name their consumers, services/runtime/ordered.py), and a
follower whose consumer is gone makes it again after a backoff."""

from __future__ import annotations

import asyncio
import json
import urllib.request
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence
from pathlib import Path

import nats
import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client
from nats.js import api

from contracts.partitions import ONE
from services.runtime.broker_users import ADMIN, inbox_prefix
from services.runtime.credentials import connect_options
from services.runtime.follower import Follower, Message, Opened, Pace, Partition
from services.runtime.nats_server import EmbeddedNats

pytestmark = pytest.mark.integration

STREAM, SUBJECTS = ONE.stream(0), ONE.subjects(0)
WATCH = "spades-round-watch"
ATTACKERS = ("projections", "timers", "webhooks", "gateway")


class Counting:
    """A handler of the round watch's kind that only counts what it is given."""

    kind = "round-watch"

    def __init__(self) -> None:
        self.applied = 0
        self.when_idle: Callable[[], Awaitable[object]] | None = None
        """Done once, when a pull has expired with nothing (no pull is open then)."""
        self.changed = asyncio.Event()

    async def until(self, done: Callable[[], bool], timeout_s: float = 10.0) -> None:
        async with asyncio.timeout(timeout_s):
            while not done():
                self.changed.clear()
                await self.changed.wait()

    async def open(self, opened: Opened) -> int | None:
        return self.applied

    async def apply(self, opened: Opened, batch: Sequence[Message]) -> bool:
        self.applied = batch[-1].sequence
        self.changed.set()
        return True

    async def idle(self, opened: Opened) -> bool:
        if self.when_idle is not None:
            done, self.when_idle = self.when_idle, None
            await done()
        self.changed.set()
        return True

    def transient(self, error: BaseException) -> bool:
        return False


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    with EmbeddedNats(tmp_path / "nats") as running:
        yield running


async def connect_as(server: EmbeddedNats, user: str) -> Client:
    async def quiet(_error: Exception) -> None:
        """Permission violations are expected here; the answers tell what happened."""

    return await nats.connect(
        server.url,
        error_cb=quiet,
        allow_reconnect=False,
        inbox_prefix=inbox_prefix(user),
        **connect_options(server.credentials_for(user)),
    )


@pytest.fixture
async def admin(server: EmbeddedNats) -> AsyncIterator[Client]:
    client = await connect_as(server, ADMIN)
    await client.jetstream().add_stream(name=STREAM, subjects=[SUBJECTS])
    yield client
    await client.close()


@pytest.fixture
async def following(server: EmbeddedNats, admin: Client) -> AsyncIterator[Counting]:
    """The engine's connection following the stream with a round watch's consumer."""
    engine = await connect_as(server, "engine")
    handler = Counting()
    partition = Partition(0, STREAM, SUBJECTS)
    follower = Follower(engine, handler, partition, Pace(idle_s=0.5, gather_s=0.0))
    task = asyncio.create_task(follower.run())
    await until_consumer(admin)
    yield handler
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await engine.close()


async def until_consumer(admin: Client, timeout_s: float = 10.0) -> api.ConsumerInfo:
    async with asyncio.timeout(timeout_s):
        while True:
            try:
                info: api.ConsumerInfo = await admin.jetstream().consumer_info(STREAM, WATCH)
                return info
            except nats.js.errors.NotFoundError:
                await asyncio.sleep(0.05)


def messages_in(server: EmbeddedNats) -> int:
    """What the server has received from clients, in messages (its monitoring, ``/varz``)."""
    url = f"http://127.0.0.1:{server.http_port}/varz"
    with urllib.request.urlopen(url, timeout=5) as answer:
        return int(json.load(answer)["in_msgs"])


async def refused(client: Client, subject: str, body: bytes) -> bool:
    try:
        await client.request(subject, body, timeout=1.0)
    except nats.errors.TimeoutError:
        return True  # no answer comes: the server dropped it
    return False


async def test_no_user_deletes_the_engines_consumer(
    server: EmbeddedNats, admin: Client, following: Counting
) -> None:
    created = (await until_consumer(admin)).created
    for user in ATTACKERS:
        client = await connect_as(server, user)
        config = {
            "name": WATCH,
            "ack_policy": "all",
            "filter_subject": SUBJECTS,
            "inactive_threshold": 1_000_000,
        }
        change = json.dumps(
            {"stream_name": STREAM, "config": {**config, "durable_name": WATCH}}
        ).encode()
        # the unnamed subject, the consumer named in the body only: the server updates it
        unnamed = json.dumps({"stream_name": STREAM, "config": config}).encode()
        attacks = {
            f"$JS.API.CONSUMER.DELETE.{STREAM}.{WATCH}": b"",
            f"$JS.API.CONSUMER.DURABLE.CREATE.{STREAM}.{WATCH}": change,
            f"$JS.API.CONSUMER.CREATE.{STREAM}.{WATCH}": change,
            f"$JS.API.CONSUMER.CREATE.{STREAM}.{WATCH}.{SUBJECTS}": change,
            f"$JS.API.CONSUMER.CREATE.{STREAM}": unnamed,
            f"$JS.API.CONSUMER.MSG.NEXT.{STREAM}.{WATCH}": b'{"batch": 1, "no_wait": true}',
        }
        answered = await asyncio.gather(
            *(refused(client, subject, body) for subject, body in attacks.items())
        )
        allowed = [subject for subject, no in zip(attacks, answered, strict=True) if not no]
        assert not allowed, f"{user} was answered on {allowed}"
        await client.close()
    info = await until_consumer(admin)
    assert info.created == created, "the consumer was made again: someone deleted it"
    assert not info.config.inactive_threshold


async def test_a_consumer_that_vanishes_under_a_follower_is_made_again_without_spinning(
    server: EmbeddedNats, admin: Client, following: Counting
) -> None:
    """Deleted between two pulls (another user's delete, or the server's own once someone
    set a millisecond's ``inactive_threshold`` on it): the next pull finds no consumer at all
    (no responders), which the follower asked again about at once, thousands of times a
    second, and never made it again."""
    js = admin.jetstream()
    following.when_idle = lambda: js.delete_consumer(STREAM, WATCH)
    await following.until(lambda: following.when_idle is None)
    before = messages_in(server)
    await asyncio.sleep(2.0)
    asked = messages_in(server) - before
    assert asked < 100, f"{asked} messages in 2 s: the follower spins on a missing consumer"
    await until_consumer(admin, timeout_s=10.0)  # made again, after its backoff
    await js.publish(SUBJECTS.replace("*", "g1"), b"one")
    await following.until(lambda: following.applied >= 1)
