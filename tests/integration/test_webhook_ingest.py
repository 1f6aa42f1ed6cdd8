"""Where the webhooks worker follows a stream from: its position while the stream is the one it
followed; where the endpoints' interest begins on a first start; the stream's end (never its
history again) when the stream is another one, as after a NATS reset or a restore."""

from __future__ import annotations

import time

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from services.runtime.webhook_signing import new_secret
from services.store import webhook_endpoints as endpoints
from services.store.database import Store
from services.store.schema import webhook_positions
from services.store.webhook_endpoints import Endpoint
from services.webhooks import outbox
from services.webhooks.ingest import GAMES, Ingest, game_folds

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import append_games, random_logs  # noqa: E402

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.integration.conftest_projections"]


def ingest(store: Store, client: Client) -> Ingest:
    return Ingest(GAMES, store, client, game_folds(client), lambda: None)


def endpoint(name: str, games_after: int) -> Endpoint:
    return Endpoint(
        id=f"ep_{name:0>24}",
        platform="acme",
        url="https://hooks.example/",
        events=("game.turn",),
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
        held = await outbox.lock_position(conn, "games")
        await outbox.set_position(conn, "games", last - 5, held.stream_created or "")
    assert await ingest(store, nats_client).start_position() == last - 5


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
