"""Read models follow one stream: a store kept while NATS is reset, rewound or swapped refuses
the stream it finds (nothing applied, nothing skipped) until it is rebuilt."""

from __future__ import annotations

import asyncio
import shutil
import time
from pathlib import Path

import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext
from typer.testing import CliRunner

from contracts.wire import GAMES_STREAM
from services.cli.projections import app as projections_cli
from services.engine.service import ensure_streams
from services.projections.rebuild import rebuild
from services.projections.registry import READ_MODELS
from services.runtime.nats_server import EmbeddedNats
from services.runtime.stream_identity import REBUILD_COMMAND, StreamIdentity
from services.store import positions, queries
from services.store.database import Store
from services.store.lag import projection_lag, refusals
from services.store.schema import positions as positions_table

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    CATCH_UP_S,
    append_games,
    expected_scoreboard,
    positions_in,
    random_logs,
    snapshot,
    wait_for_position,
    workers,
)

pytestmark = pytest.mark.integration
pytest_plugins = ["tests.integration.conftest_projections"]


def jetstream_dir(server: EmbeddedNats) -> Path:
    return server.store_dir / "jetstream"


async def replace_store(server: EmbeddedNats, by: Path | None = None) -> None:
    """Stop the server, put a fresh JetStream store (or a copy of ``by``) in place of its
    own, and start it again on the same port."""
    await asyncio.to_thread(server.stop)
    shutil.rmtree(jetstream_dir(server))
    if by is not None:
        shutil.copytree(by, jetstream_dir(server))
    await asyncio.to_thread(server.start)


async def identity(js: JetStreamContext) -> StreamIdentity:
    return StreamIdentity.of(await js.stream_info(GAMES_STREAM))


async def wait_for_refusals(
    store: Store, containing: str, within_s: float = CATCH_UP_S
) -> dict[str, positions.Position]:
    """Poll until every model's worker has recorded a refusal containing ``containing``."""
    deadline = time.monotonic() + within_s
    while True:
        stored = await positions_in(store)
        refused = {name: p for name, p in stored.items() if p.refusal and containing in p.refusal}
        if set(refused) == set(READ_MODELS):
            return refused
        if time.monotonic() > deadline:
            found = {name: p.refusal for name, p in stored.items()}
            raise AssertionError(f"refusals {found}, not {containing!r}, after {within_s} s")
        await asyncio.sleep(0.02)


async def game_ids(store: Store) -> set[str]:
    games, _ = await queries.list_games(store.engine, limit=queries.MAX_LIMIT)
    return {game["game_id"] for game in games}


async def test_a_store_kept_across_a_new_stream_refuses_it_until_rebuilt(
    store: Store,
    database_url: str,
    js: JetStreamContext,
    nats_client: Client,
    nats_server: EmbeddedNats,
) -> None:
    first = random_logs(4, seed=31, prefix="first")
    last = await append_games(js, first)
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    kept = await snapshot(store)
    old = await identity(js)

    await replace_store(nats_server)
    await ensure_streams(js)
    new = await identity(js)
    assert new != old
    # A longer history than the first: a worker trusting the old positions would skip its
    # first `last` messages and apply the rest onto games it never saw created.
    second = random_logs(8, seed=32, prefix="second")
    new_last = await append_games(js, second)
    assert new_last > last

    async with workers(store, nats_client):
        refused = await wait_for_refusals(store, f"belong to stream {old}, not to {new}")
        assert {p.position for p in refused.values()} == {last}
        report = await projection_lag(store.engine, js)
        cause = refusals(report)
        assert cause is not None
        assert f"belong to stream {old}" in cause
        assert f"Run `{REBUILD_COMMAND}`" in cause
        assert await snapshot(store) == kept, "nothing applied"
        environment = {
            "SPADES_DATABASE_URL": database_url,
            "SPADES_NATS_URL": nats_server.url,
            "SPADES_NATS_CREDS": str(nats_server.credentials.directory),
        }
        lag = await asyncio.to_thread(CliRunner().invoke, projections_cli, ["lag"], env=environment)
        assert lag.exit_code == 1, lag.output
        assert cause in lag.stderr

        assert await rebuild(store) == list(READ_MODELS)
        await wait_for_position(store, new_last)
        report = await projection_lag(store.engine, js)
        assert refusals(report) is None

    assert await game_ids(store) == {log.game_id for log in second}
    for log in second:
        scoreboard = await queries.scoreboard(store.engine, log.game_id)
        assert scoreboard == expected_scoreboard(log.events), "nothing skipped"
    stored = await positions_in(store)
    assert {p.stream for p in stored.values()} == {new}
    assert {p.refusal for p in stored.values()} == {None}


async def test_a_running_worker_checks_the_stream_again_when_it_reconnects(
    store: Store, js: JetStreamContext, nats_client: Client, nats_server: EmbeddedNats
) -> None:
    first = random_logs(3, seed=33, prefix="first")
    last = await append_games(js, first)
    async with workers(store, nats_client):
        await wait_for_position(store, last)
        old = await identity(js)
        await replace_store(nats_server)
        await ensure_streams(js)
        second = random_logs(6, seed=34, prefix="second")
        await append_games(js, second)
        refused = await wait_for_refusals(store, f"belong to stream {old}")
        assert {p.position for p in refused.values()} == {last}
        assert await game_ids(store) == {log.game_id for log in first}


async def test_a_position_beyond_the_end_of_the_stream_is_refused(
    store: Store,
    js: JetStreamContext,
    nats_client: Client,
    nats_server: EmbeddedNats,
    tmp_path: Path,
) -> None:
    """The stream's files put back from an earlier copy: the same stream (its creation time
    too), rewound. Then written again past the position: still not the history applied."""
    logs = random_logs(6, seed=35)
    await append_games(js, logs[:2])
    await asyncio.to_thread(nats_server.stop)
    earlier = tmp_path / "earlier-jetstream"
    shutil.copytree(jetstream_dir(nats_server), earlier)
    await asyncio.to_thread(nats_server.start)
    last = await append_games(js, logs[2:])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    kept = await snapshot(store)
    before = await identity(js)

    await replace_store(nats_server, by=earlier)
    assert await identity(js) == before
    rewound_last = int((await js.stream_info(GAMES_STREAM)).state.last_seq or 0)
    assert rewound_last < last

    async with workers(store, nats_client):
        await wait_for_refusals(store, f"position {last} is beyond the last message")
        report = await projection_lag(store.engine, js)
        cause = refusals(report)
        assert cause is not None
        assert f"beyond the last message of stream {GAMES_STREAM}, {rewound_last}" in cause

        again = random_logs(6, seed=36, prefix="again")
        written_again = await append_games(js, again)
        assert written_again > last
        await wait_for_refusals(store, f"the message at position {last} of stream")
        assert await snapshot(store) == kept, "nothing applied"

        await rebuild(store)
        await wait_for_position(store, written_again)
    assert await game_ids(store) == {log.game_id for log in [*logs[:2], *again]}


async def test_with_auto_rebuild_the_workers_rebuild_by_themselves(
    store: Store, js: JetStreamContext, nats_client: Client, nats_server: EmbeddedNats
) -> None:
    last = await append_games(js, random_logs(3, seed=37, prefix="first"))
    async with workers(store, nats_client):
        await wait_for_position(store, last)

    await replace_store(nats_server)
    await ensure_streams(js)
    second = random_logs(2, seed=38, prefix="second")
    new_last = await append_games(js, second)
    assert new_last < last
    async with workers(store, nats_client, auto_rebuild=True):
        deadline = time.monotonic() + CATCH_UP_S
        while await rebuilt_positions(store) != {(new_last, 1)}:
            assert time.monotonic() < deadline, await rebuilt_positions(store)
            await asyncio.sleep(0.02)
    assert await game_ids(store) == {log.game_id for log in second}


async def rebuilt_positions(store: Store) -> set[tuple[int, int]]:
    stored = await positions_in(store)
    return {(p.position, p.generation) for p in stored.values()}


async def test_positions_stored_before_streams_were_recorded_are_adopted(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    logs = random_logs(4, seed=39)
    last = await append_games(js, logs[:2])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    async with store.writing() as conn:
        await conn.execute(
            positions_table.update().values(stream=None, stream_created=None, digest=None)
        )

    last = await append_games(js, logs[2:])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    stored = await positions_in(store)
    async with store.reading() as conn:
        columns = await conn.execute(sa.select(positions_table.c.digest))
    assert {p.stream for p in stored.values()} == {await identity(js)}
    assert None not in set(columns.scalars())
    assert await game_ids(store) == {log.game_id for log in logs}
