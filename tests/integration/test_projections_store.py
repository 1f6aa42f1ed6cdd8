"""The read-model database: migrations, the gateway's queries, the operator's commands."""

from __future__ import annotations

import asyncio
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext
from sqlalchemy.ext.asyncio import AsyncEngine
from typer.testing import CliRunner

from benchmarks.projections import GameLog, GameWriter, measure, random_games
from contracts.wire import GAMES_STREAM
from domain.commands import CreateGame, TakeSeat
from domain.game import decide
from domain.shuffle import SeededDeal
from services.cli.projections import app as projections_cli
from services.projections.model import Delivered
from services.projections.parking import parked_messages
from services.projections.rebuild import rebuild
from services.projections.registry import READ_MODELS
from services.runtime.game_stream import GameStream
from services.runtime.nats_server import EmbeddedNats
from services.runtime.stream_identity import StreamIdentity, message_digest
from services.store import queries
from services.store.database import Store, open_store
from services.store.migrations import LATEST, MIGRATIONS, SchemaTooNew, migrate
from services.store.schema import log_leaves, metadata, schema_version
from tests.integration.support import broker_credentials

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    TESTS_KEY,
    append_games,
    final_state,
    positions_in,
    publish_raw,
    random_logs,
    snapshot,
    wait_for_position,
    workers,
)

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration


async def test_processes_starting_at_once_migrate_once(database_url: str) -> None:
    stores = [open_store(database_url) for _ in range(3)]
    try:
        before = await asyncio.gather(*(migrate(store, secret=TESTS_KEY) for store in stores))
        # Each step is its own transaction: a process may start between two steps of another,
        # and then finds the first steps done. Someone started from nothing; nobody went back.
        assert 0 in before
        assert set(before) <= set(range(LATEST + 1))
        assert await migrate(stores[0], secret=TESTS_KEY) == LATEST
        async with stores[0].reading() as conn:
            applied = (await conn.execute(sa.select(schema_version.c.version))).scalars().all()
            tables = await conn.run_sync(_columns_by_table)
        assert applied == list(range(1, LATEST + 1))
        assert tables == {
            table.name: ({c.name for c in table.columns}, {c.name for c in table.primary_key})
            for table in metadata.tables.values()
        }
    finally:
        for store in stores:
            await store.close()


async def test_without_the_key_the_log_tables_come_and_the_sealing_steps_wait(
    database_url: str,
) -> None:
    """A projection worker started without the service's key migrates all it can: the audit
    log's tables (a step ``apart``) come at once, the sealing step and those after it wait, and
    the first process with the key applies them in order."""
    store = open_store(database_url)
    sealing = next(m.version for m in MIGRATIONS if m.sealing is not None)

    async def applied() -> list[int]:
        async with store.reading() as conn:
            query = sa.select(schema_version.c.version).order_by(schema_version.c.version)
            return list((await conn.execute(query)).scalars().all())

    try:
        assert await migrate(store) == 0
        assert await applied() == [m.version for m in MIGRATIONS if m.version < sealing or m.apart]
        async with store.reading() as conn:  # the log model's tables are there to write
            assert await conn.scalar(sa.select(sa.func.count()).select_from(log_leaves)) == 0
        assert await migrate(store) == sealing - 1  # still no key: still waiting
        assert await migrate(store, secret=TESTS_KEY) == sealing - 1
        assert await applied() == list(range(1, LATEST + 1))
        assert await migrate(store) == LATEST
    finally:
        await store.close()


async def test_a_database_an_earlier_version_made_keeps_its_positions(
    database_url: str, js: JetStreamContext, nats_client: Client
) -> None:
    """A deployment of one partition made before partitions (schema 6): its positions become
    partition 0's, and the workers go on from them (what they parked stays parked once); the
    standings, whose order of rating changed, replay. The result is a replay's."""
    store = open_store(database_url)
    try:
        assert await migrate(store, up_to=6) == 0
        logs = random_logs(6, seed=41)
        junk = await publish_raw(js, "junk", b"not a commit")
        first = await append_games(js, logs[:3])
        stream = GameStream(js)
        stored = [one for log in logs[:3] for one in await stream.read(log.game_id)]
        delivered = [Delivered(one.sequence, one.commit) for one in stored]
        delivered.sort(key=lambda one: one.sequence)
        identity = StreamIdentity.of(await js.stream_info(GAMES_STREAM))
        digest = message_digest((await js.get_msg(GAMES_STREAM, first)).data or b"")
        kept = ["games", "scoreboard", "hands", "players"]
        earlier = [*kept, "standings"]  # the models of schema 6 (the log, integrity came later)
        async with store.writing() as conn:  # what the workers of schema 6 left
            for name in kept:
                assert await READ_MODELS[name].apply(conn, delivered) == {}
            await conn.execute(
                sa.text(
                    "INSERT INTO projection_positions (model, position, generation, updated_at,"
                    " stream, stream_created, digest) VALUES (:model, :at, 0, '', :name,"
                    " :created, :digest)"
                ),
                [
                    {"model": name, "at": first, "digest": digest, **identity_row(identity)}
                    for name in earlier
                ],
            )
            await conn.execute(
                sa.text(
                    "INSERT INTO parked (model, sequence, subject, reason, payload, attempts,"
                    " parked_at) VALUES (:model, :sequence, 'spades.games.junk', 'not a commit',"
                    " :payload, 1, '')"
                ),
                [{"model": n, "sequence": junk, "payload": b"not a commit"} for n in earlier],
            )
            await conn.execute(
                sa.text(
                    "INSERT INTO league_standings (league, player, points, wins, games, mu,"
                    " sigma, ordinal, forfeits) VALUES ('old', 'ann', 1, 1, 1, 25, 8, 1, 0)"
                )
            )

        assert await migrate(store, secret=TESTS_KEY) == 6  # as the service, with its key
        upgraded = await positions_in(store)
        assert {
            name: (p.position, p.generation, p.stream, p.digest)
            for name, p in upgraded.items()
            if name in earlier
        } == {
            **dict.fromkeys(kept, (first, 0, identity, digest)),
            "standings": (0, 1, None, None),
        }
        assert {(m.model, m.partition, m.sequence) for m in await parked_messages(store)} == {
            (name, 0, junk) for name in kept
        }
        assert await queries.league_standings(store.engine, "old") == (0, [], set())

        last = await append_games(js, logs[3:])
        async with workers(store, nats_client):
            await wait_for_position(store, last)
        parked = await parked_messages(store)
        assert {(m.model, m.partition, m.sequence, m.attempts) for m in parked} == {
            (name, 0, junk, 1) for name in READ_MODELS
        }, "parked once each: the four went on from their positions, the others replayed"
        went_on = await snapshot(store)
        await rebuild(store)
        async with workers(store, nats_client):
            await wait_for_position(store, last)
        assert await snapshot(store) == went_on
    finally:
        await store.close()


def identity_row(identity: StreamIdentity) -> dict[str, str]:
    return {"name": identity.name, "created": identity.created}


async def test_a_new_sqlite_database_is_opened_while_another_process_holds_its_lock(
    tmp_path: Path,
) -> None:
    """Switching a new file to WAL while another connection holds a lock fails at once, without
    SQLite's busy handler: the store tries again until the other lets go."""
    path = tmp_path / "read_models.db"
    other = sqlite3.connect(path, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    other.execute("CREATE TABLE elsewhere (x INTEGER)")
    asyncio.get_running_loop().call_later(0.3, other.execute, "COMMIT")
    store = open_store(f"sqlite:///{path}")
    try:
        assert await migrate(store) == 0
        async with store.reading() as conn:
            mode = await conn.scalar(sa.text("PRAGMA journal_mode"))
        assert mode == "wal"
    finally:
        await store.close()
        other.close()


def _columns_by_table(connection: sa.Connection) -> dict[str, tuple[set[str], set[str]]]:
    inspector = sa.inspect(connection)
    return {
        name: (
            {column["name"] for column in inspector.get_columns(name)},
            set(inspector.get_pk_constraint(name)["constrained_columns"]),
        )
        for name in inspector.get_table_names()
    }


async def test_a_database_from_a_newer_version_is_refused(store: Store) -> None:
    async with store.writing() as conn:
        await conn.execute(
            schema_version.insert().values(version=LATEST + 1, description="future", applied_at="")
        )
    with pytest.raises(SchemaTooNew):
        await migrate(store)


async def test_the_game_list_filters_and_pages(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    logs = random_logs(11, seed=17)
    waiting = GameWriter("waiting-game")
    game = waiting.commit(decide(None, CreateGame("waiting-game", {"preset": "solo"})))
    waiting.commit(decide(game, TakeSeat("zed"), deal=SeededDeal(bytes(32))))
    last = await append_games(js, [*logs, waiting.log])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    engine = store.engine

    everything, cursor = await queries.list_games(engine, limit=100)
    assert cursor is None
    newest_first = sorted(
        [*logs, waiting.log], key=lambda log: (log.commits[0].time, log.game_id), reverse=True
    )
    assert [g["game_id"] for g in everything] == [log.game_id for log in newest_first]

    paged: list[dict[str, Any]] = []
    cursor = None
    while True:
        page, cursor = await queries.list_games(engine, cursor=cursor, limit=4)
        paged.extend(page)
        if cursor is None:
            break
    assert paged == everything

    assert [g["game_id"] for g in await _all(engine, status="waiting")] == ["waiting-game"]
    assert len(await _all(engine, status="finished")) == len(logs)
    north = {log.game_id for n, log in enumerate(logs) if n % 2}
    assert {g["game_id"] for g in await _all(engine, league="north")} == north
    name = final_state(logs[0].events).players[0]
    assert name is not None
    with_player = {
        log.game_id
        for log in logs
        if name.name in [p.name for p in final_state(log.events).players if p is not None]
    }
    assert {g["game_id"] for g in await _all(engine, player=name.name)} == with_player
    assert {g["game_id"] for g in await _all(engine, player=name.name, league="north")} == (
        with_player & north
    )
    with pytest.raises(queries.InvalidCursor):
        await queries.list_games(engine, cursor="not-a-cursor")
    with pytest.raises(ValueError, match="limit"):
        await queries.list_games(engine, limit=0)


async def _all(engine: AsyncEngine, **filters: Any) -> list[dict[str, Any]]:
    games, cursor = await queries.list_games(engine, limit=queries.MAX_LIMIT, **filters)
    assert cursor is None
    return games


async def test_waiting_for_a_version_to_be_read(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    (log,) = random_logs(1, seed=18)
    first = await append_games(js, [_prefix(log, 1)])
    async with workers(store, nats_client):
        assert await queries.wait_for_version(store.engine, log.game_id, 1, timeout=30)
        await wait_for_position(store, first)
        assert await queries.model_version(store.engine, log.game_id) == 1
        assert not await queries.wait_for_version(store.engine, log.game_id, 2, timeout=0.1)

        final = final_state(log.events).version
        waiting = asyncio.create_task(
            queries.wait_for_version(store.engine, log.game_id, final, timeout=60)
        )
        await _append_rest(js, log)
        assert await waiting
        for model in ("games", "scoreboard", "hands", "players"):
            assert await queries.model_version(store.engine, log.game_id, model) == final


async def test_reads_in_the_loops_thread_are_the_reads_through_the_engine(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    (log,) = random_logs(1, seed=19)
    first = await append_games(js, [_prefix(log, 1)])
    engine, in_loop = store.engine, store.reading_in_loop
    assert (in_loop() is None) == store.is_postgres  # PostgreSQL reads through its engine
    async with workers(store, nats_client):
        await wait_for_position(store, first)
        assert await queries.wait_for_version(engine, log.game_id, 1, timeout=1, in_loop=in_loop)
        assert not await queries.wait_for_version(
            engine, log.game_id, 2, timeout=0.1, in_loop=in_loop
        )
        waiting = asyncio.create_task(
            queries.wait_for_version(
                engine, log.game_id, final_state(log.events).version, timeout=60, in_loop=in_loop
            )
        )
        await _append_rest(js, log)
        assert await waiting
    for game_id in (log.game_id, "no-such-game"):
        board = await queries.scoreboard(engine, game_id)
        assert await queries.scoreboard(engine, game_id, in_loop=in_loop) == board
        records = await queries.hand_records(engine, game_id)
        assert await queries.hand_records(engine, game_id, in_loop=in_loop) == records
        for hand in range(1, len(records) + 2):
            record = await queries.hand_record(engine, game_id, hand)
            assert await queries.hand_record(engine, game_id, hand, in_loop=in_loop) == record
        for model in (None, "games", "scoreboard", "hands", "players"):
            version = await queries.model_version(engine, game_id, model)
            assert await queries.model_version(engine, game_id, model, in_loop=in_loop) == version
    assert (await queries.scoreboard(engine, log.game_id, in_loop=in_loop)) is not None
    assert await queries.hand_records(engine, log.game_id, in_loop=in_loop)


def _prefix(log: GameLog, count: int) -> GameLog:
    return GameLog(log.game_id, log.commits[:count], log.payloads[:count])


async def _append_rest(js: JetStreamContext, log: GameLog) -> None:
    stream = GameStream(js)
    expected = await stream.last_sequence(log.game_id)
    for commit, data in zip(log.commits[1:], log.payloads[1:], strict=True):
        expected = await stream.append(
            log.game_id, data, expected=expected, command_id=commit.command_id
        )


async def test_the_operator_commands(
    store: Store,
    database_url: str,
    js: JetStreamContext,
    nats_client: Client,
    nats_server: EmbeddedNats,
) -> None:
    await append_games(js, random_logs(2, seed=19))
    garbage = await publish_raw(js, "junk", b"{not json")
    environment = {
        "SPADES_DATABASE_URL": database_url,
        "SPADES_NATS_URL": nats_server.url,
        # A directory of credentials, one per user: the commands take the admin's.
        "SPADES_NATS_CREDS": str(broker_credentials().directory),
    }

    def spades_projections(*args: str) -> Any:
        return CliRunner().invoke(projections_cli, list(args), env=environment)

    async with workers(store, nats_client, models=["games"]):
        await wait_for_position(store, garbage, ["games"])
        listed = await asyncio.to_thread(spades_projections, "parked", "--json")
        assert listed.exit_code == 0, listed.output
        (line,) = listed.stdout.splitlines()
        assert json.loads(line)["sequence"] == garbage
        assert json.loads(line)["reason"].startswith("not a commit")
        table = await asyncio.to_thread(spades_projections, "parked")
        assert "1 parked message(s)" in table.stdout

        replayed = await asyncio.to_thread(spades_projections, "replay-parked", "-m", "games")
        assert replayed.exit_code == 1
        assert "0 applied, 1 still parked" in replayed.stdout

        lag = await asyncio.to_thread(spades_projections, "lag", "--json")
        assert lag.exit_code == 0, lag.output
        assert json.loads(lag.stdout) == {
            "games": 0,
            "scoreboard": garbage,
            "hands": garbage,
            "players": garbage,
            "standings": garbage,
            "log": garbage,
            "integrity": garbage,
        }

        rebuilt = await asyncio.to_thread(spades_projections, "rebuild", "games", "--wait")
        assert rebuilt.exit_code == 0, rebuilt.output
        assert f"games at {garbage}" in rebuilt.stdout
        games, _ = await queries.list_games(store.engine)
        assert len(games) == 2

        in_0 = await asyncio.to_thread(spades_projections, "rebuild", "games", "-p", "0", "--wait")
        assert in_0.exit_code == 0, in_0.output
        assert "reset games in partition 0" in in_0.stdout
        assert len((await queries.list_games(store.engine))[0]) == 2

    across = await asyncio.to_thread(spades_projections, "rebuild", "--all", "--partition", "0")
    assert across.exit_code == 2
    assert "players, standings cannot be rebuilt in some partitions alone" in said(across.output)
    beyond = await asyncio.to_thread(spades_projections, "rebuild", "hands", "--partition", "1")
    assert beyond.exit_code == 2
    assert "no partition 1" in said(beyond.output)
    unknown = await asyncio.to_thread(spades_projections, "rebuild", "nonsense")
    assert unknown.exit_code == 2
    unnamed = await asyncio.to_thread(spades_projections, "rebuild")
    assert unnamed.exit_code == 2
    assert "give --all" in unnamed.output


def said(output: str) -> str:
    """A command's message without the box and line breaks its error is printed in."""
    return " ".join(output.replace("│", " ").split())


@pytest.mark.soak
async def test_the_benchmark_measures_what_it_published() -> None:
    """``spades bench projections`` on a small stream: the counts are those of the games."""
    games = list(random_games(12, seed=1))
    figures = await measure(len(games), seed=1, postgres_url=None)
    assert figures.commits == sum(len(log.commits) for log in games)
    assert figures.events == sum(len(log.events) for log in games)
    assert [store.store for store in figures.stores] == ["sqlite"]
    assert figures.postgres.startswith("no SPADES_TEST_POSTGRES_URL")
    assert 0 < figures.stores[0].ratio < 1
    assert figures.delivery_events_per_s > 0
    assert figures.faststream_delivery_events_per_s > 0
