"""Where the webhooks worker follows a stream from: its position while the stream is the one it
followed, or where every endpoint's interest begins if that is later; where the endpoints'
interest begins on a first start; the stream's end (never its history again) when the stream is
another one, as after a NATS reset or a restore. And what it maps by: the endpoints it last
read, checked against those it holds when it records, so that an endpoint it had not seen yet
misses nothing."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable

import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext
from structlog.testing import capture_logs

from benchmarks.projections import GameWriter
from domain.commands import CreateGame
from domain.game import decide
from services.runtime.game_stream import GameStream
from services.runtime.webhook_signing import new_secret
from services.store import webhook_endpoints as endpoints
from services.store.database import Store
from services.store.schema import webhook_deliveries, webhook_positions
from services.store.webhook_endpoints import LOCAL_PLATFORM, Endpoint
from services.webhooks import outbox
from services.webhooks.ingest import GAMES, Ingest, game_folds
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


def ingest(store: Store, client: Client) -> Ingest:
    return Ingest(GAMES, store, client, game_folds(client), EndpointWatch(store), lambda: None)


def endpoint(name: str, games_after: int, platform: str = "acme") -> Endpoint:
    return Endpoint(
        id=f"ep_{name:0>24}",
        platform=platform,
        url="https://hooks.example/",
        events=("game.created",),
        secret=new_secret(),
        created_at=time.time(),
        games_after=games_after,
        leagues_after=0,
    )


async def test_a_first_start_begins_where_the_oldest_endpoint_asks_or_at_the_end(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    last = await append_games(js, random_logs(2, seed=71))
    assert await ingest(store, nats_client).start_position() == last, "no endpoint: the end"

    async with store.writing() as conn:
        await conn.execute(webhook_positions.delete())  # as if the worker never ran
        await endpoints.add(conn, endpoint("late", last - 3))
        await endpoints.add(conn, endpoint("early", last - 10))
    assert await ingest(store, nats_client).start_position() == last - 10


async def test_a_position_is_kept_while_the_stream_is_the_one_it_belongs_to(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    last = await append_games(js, random_logs(2, seed=72))
    first = ingest(store, nats_client)
    assert await first.start_position() == last
    async with store.writing() as conn:
        await endpoints.add(conn, endpoint("early", last - 10))
        held = await outbox.lock_position(conn, "games")
        await outbox.set_position(conn, "games", last - 5, held.stream_created or "")
    assert await ingest(store, nats_client).start_position() == last - 5


async def test_a_position_behind_every_endpoints_interest_moves_to_where_it_begins(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    last = await append_games(js, random_logs(2, seed=74))
    assert await ingest(store, nats_client).start_position() == last
    async with store.writing() as conn:
        held = await outbox.lock_position(conn, "games")
        await outbox.set_position(conn, "games", last - 20, held.stream_created or "")
        await endpoints.add(conn, endpoint("late", last - 3))
    assert await ingest(store, nats_client).start_position() == last - 3
    async with store.reading() as conn:
        assert (await outbox.lock_position(conn, "games")).position == last - 3
    async with store.writing() as conn:
        await endpoints.remove(conn, "acme", endpoint("late", 0).id)
    assert await ingest(store, nats_client).start_position() == last, "none: the stream's end"


async def test_another_stream_is_followed_from_its_end_and_endpoints_asking_beyond_it_are_moved(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    last = await append_games(js, random_logs(2, seed=73))
    async with store.writing() as conn:
        await outbox.set_position(conn, "games", 5, "2001-01-01T00:00:00.000000+00:00")
        await endpoints.add(conn, endpoint("beyond", last + 1000))
    assert await ingest(store, nats_client).start_position() == last
    async with store.reading() as conn:
        [moved] = await endpoints.every_endpoint(conn)
        assert moved.games_after == last
        position = await outbox.lock_position(conn, "games")
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
async def following(ingest: Ingest) -> AsyncIterator[Ingest]:
    task = asyncio.create_task(ingest.run())
    try:
        yield ingest
    finally:
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task


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
        GAMES,
        store,
        nats_client,
        game_folds(nats_client),
        EndpointWatch(store),  # never reads by itself: only what the ingest holds
        recorded.set,
        idle_s=3600.0,
        position_every_s=3600.0,
    )
    async with following(follower):
        await until(lambda: follower.position == last)
        assert follower.stored == 0, "nothing made: the position moved only in memory"
        local = endpoint("local", 0, platform=LOCAL_PLATFORM)
        async with store.writing() as conn:
            await endpoints.add(conn, local)  # as a restore could: asking for the whole stream
        rival_game = await created(js, "rival-game", "rival")
        await asyncio.wait_for(recorded.wait(), WAIT_S)
        await until(lambda: follower.stored == rival_game)

    assert await sent_to(store, rival.id) == ["game:rival-game"]
    assert sorted(await sent_to(store, local.id)) == [f"game:{log.game_id}" for log in logs]


async def test_no_endpoint_no_following_and_the_first_one_hears_from_its_registration(
    js: JetStreamContext, nats_client: Client, store: Store
) -> None:
    before = await append_games(js, random_logs(1, seed=76))
    recorded = asyncio.Event()
    watch = EndpointWatch(store, every_s=0.05)
    follower = Ingest(GAMES, store, nats_client, game_folds(nats_client), watch, recorded.set)
    watching = asyncio.create_task(watch.run())
    try:
        async with following(follower):
            await until(lambda: follower.stored == before)
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
        async with following(follower):
            await until(lambda: follower.position == last)
    assert [entry for entry in logged if entry["log_level"] == "error"] == []
