"""Where the webhooks worker follows a stream from: its position while the stream is the one it
followed, or where every endpoint's interest begins if that is later; where the endpoints'
interest begins on a first start; the stream's end (never its history again) when the stream is
another one, as after a NATS reset or a restore. And what it maps by: the endpoints it last
read, checked against those it holds when it records, so that an endpoint it had not seen yet
misses nothing. The ingest is a handler on the shared follower, one follower per stream: each
partition of the games has its own position, and each endpoint its own starting point in it."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext
from structlog.testing import capture_logs

from benchmarks.projections import GameWriter
from contracts.partitions import ONE, Partitions
from contracts.wire import GAMES_STREAM
from domain.commands import CreateGame
from domain.game import decide
from services.runtime.follower import Follower, Opened, Pace, Partition
from services.runtime.game_stream import GameStream, ensure_partitions, game_partitions
from services.runtime.stream_identity import StreamIdentity
from services.runtime.webhook_signing import new_secret
from services.store import webhook_endpoints as endpoints
from services.store.database import Store
from services.store.schema import webhook_deliveries, webhook_positions
from services.store.webhook_endpoints import LOCAL_PLATFORM, Endpoint
from services.webhooks import outbox
from services.webhooks.ingest import GAMES_KIND, Ingest, game_folds
from services.webhooks.interest import EndpointWatch

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    append_games,
    publish_raw,
    random_logs,
)

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.integration.conftest_projections"]

WAIT_S = 30.0
[GAMES] = game_partitions(ONE)
QUICK = Pace(batch_size=500, idle_s=0.2, gather_s=0.0, ack_wait_s=30.0)


def ingest(store: Store, client: Client, partitions: Partitions = ONE, **options: Any) -> Ingest:
    folds = game_folds(client, partitions)
    watch = EndpointWatch(store)
    return Ingest(GAMES_KIND, client.jetstream(), store, folds, watch, lambda: None, **options)


def endpoint(name: str, after: int, platform: str = "acme", stream: str = GAMES_STREAM) -> Endpoint:
    return Endpoint(
        id=f"ep_{name:0>24}",
        platform=platform,
        url="https://hooks.example/",
        events=("game.created",),
        secret=new_secret(),
        created_at=time.time(),
        starts={stream: after},
    )


async def opened(js: JetStreamContext, partition: Partition = GAMES) -> Opened:
    """The stream as a follower finds it when it opens the partition."""
    info = await js.stream_info(partition.stream)
    return Opened(partition, StreamIdentity.of(info), int(info.state.last_seq or 0))


async def start(store: Store, client: Client) -> int:
    """Where a new ingest of the games (one partition) follows them from."""
    return await ingest(store, client).start_position(await opened(client.jetstream()))


async def test_a_first_start_begins_where_the_oldest_endpoint_asks_or_at_the_end(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    last = await append_games(js, random_logs(2, seed=71))
    assert await start(store, nats_client) == last, "no endpoint: the end"

    async with store.writing() as conn:
        await conn.execute(webhook_positions.delete())  # as if the worker never ran
        await endpoints.add(conn, endpoint("late", last - 3))
        await endpoints.add(conn, endpoint("early", last - 10))
    assert await start(store, nats_client) == last - 10


async def test_a_position_is_kept_while_the_stream_is_the_one_it_belongs_to(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    last = await append_games(js, random_logs(2, seed=72))
    assert await start(store, nats_client) == last
    async with store.writing() as conn:
        await endpoints.add(conn, endpoint("early", last - 10))
        held = await outbox.lock_position(conn, GAMES_STREAM)
        await outbox.set_position(conn, GAMES_STREAM, last - 5, held.stream_created or "")
    assert await start(store, nats_client) == last - 5


async def test_a_position_behind_every_endpoints_interest_moves_to_where_it_begins(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    last = await append_games(js, random_logs(2, seed=74))
    assert await start(store, nats_client) == last
    async with store.writing() as conn:
        held = await outbox.lock_position(conn, GAMES_STREAM)
        await outbox.set_position(conn, GAMES_STREAM, last - 20, held.stream_created or "")
        await endpoints.add(conn, endpoint("late", last - 3))
    assert await start(store, nats_client) == last - 3
    async with store.reading() as conn:
        assert (await outbox.lock_position(conn, GAMES_STREAM)).position == last - 3
    async with store.writing() as conn:
        await endpoints.remove(conn, "acme", endpoint("late", 0).id)
    assert await start(store, nats_client) == last, "none: the stream's end"


async def test_another_stream_is_followed_from_its_end_and_endpoints_asking_beyond_it_are_moved(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    last = await append_games(js, random_logs(2, seed=73))
    async with store.writing() as conn:
        await outbox.set_position(conn, GAMES_STREAM, 5, "2001-01-01T00:00:00.000000+00:00")
        await endpoints.add(conn, endpoint("beyond", last + 1000))
    assert await start(store, nats_client) == last
    async with store.reading() as conn:
        [moved] = await endpoints.every_endpoint(conn)
        assert moved.after(GAMES_STREAM) == last
        position = await outbox.lock_position(conn, GAMES_STREAM)
    assert position.position == last
    assert position.stream_created != "2001-01-01T00:00:00.000000+00:00"


# --------------------------------------------------------------------------- following


async def created(js: JetStreamContext, game_id: str, platform: str | None) -> int:
    """Append a game's first commit, created for ``platform`` (None: the local one); its
    sequence."""
    writer = GameWriter(game_id)
    writer.commit(decide(None, CreateGame(game_id, {"preset": "two-player"}, platform=platform)))
    [data] = writer.log.payloads
    return await GameStream(js).append(game_id, data, expected=0, command_id=f"{game_id}:1")


async def sent_to(store: Store, endpoint_id: str) -> list[str]:
    """The chains of the deliveries recorded for the endpoint, in order."""
    table = webhook_deliveries
    async with store.reading() as conn:
        found = await conn.execute(
            sa.select(table.c.chain).where(table.c.endpoint_id == endpoint_id).order_by(table.c.id)
        )
        return list(found.scalars())


async def until(done: Callable[[], bool]) -> None:
    """Return once ``done()`` holds: the ingest's progress, which it signals to no one."""
    async with asyncio.timeout(WAIT_S):
        while not done():  # noqa: ASYNC110
            await asyncio.sleep(0.01)


@contextlib.asynccontextmanager
async def following(
    ingest: Ingest, client: Client, partition: Partition = GAMES, pace: Pace = QUICK
) -> AsyncIterator[Ingest]:
    """The ingest on a follower of the partition, as a webhooks process that holds it runs it."""
    task = asyncio.create_task(Follower(client, ingest, partition, pace).run())
    try:
        yield ingest
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


def position(ingest: Ingest, stream: str = GAMES_STREAM) -> int:
    place = ingest.places.get(stream)
    return place.position if place else -1


def stored(ingest: Ingest, stream: str = GAMES_STREAM) -> int:
    place = ingest.places.get(stream)
    return place.stored if place else -1


async def test_an_endpoint_the_ingest_had_not_seen_gets_what_was_mapped_without_it(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    """The commits mapped while only another platform had an endpoint made nothing and moved
    the position only in memory; the transaction that records the next delivery finds the
    endpoint, and the ingest maps them again from the stored position."""
    rival = endpoint("rival", 0, platform="rival")
    async with store.writing() as conn:
        await endpoints.add(conn, rival)
    logs = random_logs(2, seed=75)
    last = await append_games(js, logs)
    recorded = asyncio.Event()
    follower = Ingest(
        GAMES_KIND,
        nats_client.jetstream(),
        store,
        game_folds(nats_client, ONE),
        EndpointWatch(store),  # never reads by itself: only what the ingest holds
        recorded.set,
        position_every_s=3600.0,
    )
    async with following(follower, nats_client, pace=Pace(idle_s=3600.0)):
        await until(lambda: position(follower) == last)
        assert stored(follower) == 0, "nothing made: the position moved only in memory"
        local = endpoint("local", 0, platform=LOCAL_PLATFORM)
        async with store.writing() as conn:
            await endpoints.add(conn, local)  # as a restore could: asking for the whole stream
        rival_game = await created(js, "rival-game", "rival")
        await asyncio.wait_for(recorded.wait(), WAIT_S)
        await until(lambda: stored(follower) == rival_game)

    assert await sent_to(store, rival.id) == ["game:rival-game"]
    assert sorted(await sent_to(store, local.id)) == [f"game:{log.game_id}" for log in logs]


async def test_no_endpoint_no_following_and_the_first_one_hears_from_its_registration(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    before = await append_games(js, random_logs(1, seed=76))
    recorded = asyncio.Event()
    watch = EndpointWatch(store, every_s=0.05)
    folds = game_folds(nats_client, ONE)
    follower = Ingest(GAMES_KIND, js, store, folds, watch, recorded.set)
    watching = asyncio.create_task(watch.run())
    try:
        async with following(follower, nats_client):
            async with asyncio.timeout(WAIT_S):
                while await stored_position(store) != before:  # noqa: ASYNC110
                    await asyncio.sleep(0.01)  # the ingest's progress, signalled to no one
            assert follower.places == {}, "nothing followed while no endpoint exists"
            unheard = await created(js, "unheard", None)
            first = endpoint("first", unheard, LOCAL_PLATFORM)
            async with store.writing() as conn:
                await endpoints.add(conn, first)
            await created(js, "heard", None)
            await asyncio.wait_for(recorded.wait(), WAIT_S)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
    assert await sent_to(store, first.id) == ["game:heard"]


async def stored_position(store: Store, stream: str = GAMES_STREAM) -> int:
    async with store.reading() as conn:
        return (await outbox.lock_position(conn, stream)).position


async def test_a_commit_of_a_game_whose_platform_no_endpoint_wants_is_not_even_decoded(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    """Once a game's platform is known, its commits are skipped by their subject: bytes that
    are no commit at all, on such a game's subject, are not looked at."""
    async with store.writing() as conn:
        await endpoints.add(conn, endpoint("rival", 0, platform="rival"))
    [log] = random_logs(1, seed=77)
    await append_games(js, [log])
    last = await publish_raw(js, log.game_id, b"not a commit")
    follower = ingest(store, nats_client)
    with capture_logs() as logged:
        async with following(follower, nats_client):
            await until(lambda: position(follower) == last)
    assert [entry for entry in logged if entry["log_level"] == "error"] == []


# --------------------------------------------------------------------------- partitions


async def created_in(js: JetStreamContext, partitions: Partitions, game_id: str) -> int:
    """Append a game's first commit (local platform) to its partition; its sequence there."""
    writer = GameWriter(game_id)
    writer.commit(decide(None, CreateGame(game_id, {"preset": "two-player"})))
    [data] = writer.log.payloads
    stream = GameStream(js, partitions)
    return await stream.append(game_id, data, expected=0, command_id=f"{game_id}:1")


def spread(partitions: Partitions, per_partition: int, prefix: str) -> dict[int, list[str]]:
    """Game ids, ``per_partition`` in each partition."""
    found: dict[int, list[str]] = {p: [] for p in partitions.indexes}
    for n in range(10_000):
        game_id = f"{prefix}{n}"
        games = found[partitions.of(game_id)]
        if len(games) < per_partition:
            games.append(game_id)
        if all(len(games) == per_partition for games in found.values()):
            return found
    raise AssertionError("ids do not spread over the partitions")


async def test_each_partition_is_followed_from_its_own_position_and_each_endpoints_start_in_it(
    nats_client: Client, store: Store
) -> None:
    """Three partitions: an endpoint hears of each partition's games committed after its own
    starting point there, and each stream's position is its own row."""
    layout = Partitions(3)
    js = nats_client.jetstream()
    await ensure_partitions(js, layout)
    games = spread(layout, 2, "p")
    for p in layout.indexes:
        await created_in(js, layout, games[p][0])  # before the endpoint: not its
    starts = {
        stream: int((await js.stream_info(stream)).state.last_seq or 0) for stream in layout.streams
    }
    listener = Endpoint(
        id=f"ep_{'parts':0>24}",
        platform=LOCAL_PLATFORM,
        url="https://hooks.example/",
        events=("game.created",),
        secret=new_secret(),
        created_at=time.time(),
        starts=starts,
    )
    async with store.writing() as conn:
        await endpoints.add(conn, listener)
    lasts = {p: await created_in(js, layout, games[p][1]) for p in layout.indexes}
    follower = ingest(store, nats_client, layout)
    async with contextlib.AsyncExitStack() as running:
        for partition in game_partitions(layout):
            await running.enter_async_context(following(follower, nats_client, partition))
        await until(
            lambda: all(stored(follower, layout.stream(p)) == lasts[p] for p in layout.indexes)
        )
    assert sorted(await sent_to(store, listener.id)) == sorted(
        f"game:{games[p][1]}" for p in layout.indexes
    )
    for p, stream in enumerate(layout.streams):
        assert await stored_position(store, stream) == lasts[p]


async def test_an_endpoint_without_a_starting_point_in_a_stream_hears_of_it_from_its_end(
    nats_client: Client, store: Store
) -> None:
    """An endpoint registered before the games were split into partitions has a starting point
    in SPADES_GAMES only: in a partition's stream it hears of what comes after the stream's end
    when the worker first finds it, never of the history moved there."""
    layout = Partitions(2)
    js = nats_client.jetstream()
    await ensure_partitions(js, layout)
    games = spread(layout, 2, "m")
    moved = await created_in(js, layout, games[0][0])  # history, moved into partition 0
    old = endpoint("old", 5, platform=LOCAL_PLATFORM, stream=GAMES_STREAM)
    async with store.writing() as conn:
        await endpoints.add(conn, old)
    [zero, _] = game_partitions(layout)
    follower = ingest(store, nats_client, layout)
    assert await follower.start_position(await opened(js, zero)) == moved
    async with store.reading() as conn:
        [placed] = await endpoints.every_endpoint(conn)
    assert placed.starts == {GAMES_STREAM: 5, zero.stream: moved}
    async with following(follower, nats_client, zero):
        after = await created_in(js, layout, games[0][1])
        await until(lambda: stored(follower, zero.stream) == after)
    assert await sent_to(store, old.id) == [f"game:{games[0][1]}"]
