"""Fixtures and helpers of the projection tests: every store they run against, games to write.

Loaded by the projection test modules with ``pytest_plugins``. The ``store`` fixture runs each
test against SQLite (a file under ``tmp_path``) and PostgreSQL (``SPADES_TEST_POSTGRES_URL``,
each test in a schema of its own, dropped afterwards); PostgreSQL is skipped, with the reason,
when the variable is unset or the server does not answer.
"""

from __future__ import annotations

import asyncio
import os
import random
import secrets
import time
from collections.abc import AsyncIterator, Iterable, Sequence
from datetime import timedelta
from pathlib import Path
from typing import Any

import msgspec
import pytest
import sqlalchemy as sa
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.projections import EPOCH, GameLog, interleaved, play_game
from contracts.partitions import ONE, Partitions
from contracts.wire import GAMES_STREAM, game_subject
from domain.events import AnyEvent, GameEnded, HandScored
from domain.game import fold
from domain.state import Game
from domain.table import table_for
from services.engine.service import ensure_streams
from services.projections.registry import READ_MODELS, opened_rows
from services.projections.service import Projections
from services.projections.worker import PACE, RetryPolicy
from services.runtime.follower import Pace
from services.runtime.game_stream import GameStream
from services.store import positions
from services.store.database import Store, open_store
from services.store.migrations import migrate

POSTGRES_VARIABLE = "SPADES_TEST_POSTGRES_URL"
QUICK_RETRY = RetryPolicy(attempts=3, first_delay_s=0.01, factor=2.0)
"""Retries short enough for a test (the worker's backoff, not its logic, is shortened)."""
CATCH_UP_S = 120.0
TESTS_KEY = b"the tests' service key"
"""The key the tests' own processes seal with (``tests/conftest.py``)."""


# --------------------------------------------------------------------------- stores


@pytest.fixture(params=["sqlite", pytest.param("postgres", marks=pytest.mark.postgres)])
async def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """The plain ``SPADES_DATABASE_URL`` of a fresh, empty read-model database."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'read_models.db'}"
        return
    base = os.environ.get(POSTGRES_VARIABLE)
    if not base:
        pytest.skip(f"{POSTGRES_VARIABLE} is not set: no PostgreSQL to test against")
    schema = f"test_{secrets.token_hex(6)}"
    url = f"{base}{'&' if '?' in base else '?'}schema={schema}"
    probe = open_store(url)
    try:
        async with asyncio.timeout(5), probe.reading() as conn:
            await conn.execute(sa.text("select 1"))
    except Exception as error:
        pytest.skip(f"PostgreSQL at {POSTGRES_VARIABLE} does not answer: {error!r}")
    finally:
        await probe.close()
    yield url
    dropper = open_store(url)
    try:
        async with dropper.writing() as conn:
            await conn.execute(sa.schema.DropSchema(schema, cascade=True, if_exists=True))
    finally:
        await dropper.close()


@pytest.fixture
async def store(database_url: str) -> AsyncIterator[Store]:
    """The read-model database, migrated (its sealing steps too, with the tests' key)."""
    opened = open_store(database_url)
    await migrate(opened, secret=TESTS_KEY)
    yield opened
    await opened.close()


# --------------------------------------------------------------------------- the stream


@pytest.fixture
async def js(nats_client: Client) -> JetStreamContext:
    """JetStream with the game stream declared as the engine declares it."""
    context = nats_client.jetstream()
    await ensure_streams(context)
    return context


def random_logs(count: int, seed: int, prefix: str = "g") -> list[GameLog]:
    """Finished games of every preset, 1 to 3 hands each; every other one in league
    ``north``; created in four distinct minutes, so that several share a creation time."""
    rng = random.Random(seed)
    presets = (
        "partnership",
        "solo",
        "cutthroat",
        "three-player-house",
        "two-player",
        "six-player",
        "jokers-54",
    )
    return [
        play_game(
            rng,
            f"{prefix}{n}",
            preset=presets[n % len(presets)],
            max_hands=1 + n % 3,
            league="north" if n % 2 else None,
            start=EPOCH + timedelta(minutes=n % 4),
        )
        for n in range(count)
    ]


async def append_games(
    js: JetStreamContext, logs: Sequence[GameLog], partitions: Partitions = ONE
) -> int:
    """Append the games' commits through :class:`GameStream` (optimistic concurrency and
    deduplication as the engine appends), interleaved; return the last sequence appended (in
    the last game's partition)."""
    stream = GameStream(js, partitions)
    last_of: dict[str, int] = {}
    payloads = {log.game_id: iter(log.commits) for log in logs}
    sequence = 0
    for subject, data in interleaved(list(logs)):
        game_id = subject.removeprefix("spades.games.")
        commit = next(payloads[game_id])
        sequence = await stream.append(
            game_id,
            data,
            expected=last_of.get(game_id, 0),
            command_id=f"{game_id}:{commit.command_id}",
        )
        last_of[game_id] = sequence
    return sequence


async def publish_raw(js: JetStreamContext, game_id: str, data: bytes) -> int:
    """Put any bytes on a game's subject, as a buggy or hostile writer could."""
    ack = await js.publish(game_subject(game_id), data, stream=GAMES_STREAM)
    return ack.seq


async def last_sequence(js: JetStreamContext) -> int:
    return int((await js.stream_info(GAMES_STREAM)).state.last_seq or 0)


# --------------------------------------------------------------------------- read models


def workers(
    store: Store, client: Client, *, batch_size: int = PACE.batch_size, **options: Any
) -> Projections:
    """The read models of a process that holds every partition itself (with the tests' key,
    as a service has its own: its start takes every migration)."""
    pace = Pace(batch_size, 0.2, PACE.gather_s, PACE.ack_wait_s)
    return Projections(store, client, retry=QUICK_RETRY, pace=pace, secret=TESTS_KEY, **options)


async def positions_in(store: Store, partition: int = 0) -> dict[str, positions.Position]:
    """Every model's stored position in one partition."""
    async with store.reading() as conn:
        stored = await positions.all_positions(conn)
    return {name: by[partition] for name, by in stored.items() if partition in by}


async def wait_for_position(
    store: Store, sequence: int, models: Iterable[str] | None = None, within_s: float = CATCH_UP_S
) -> dict[str, int]:
    """Poll until every model (or those named) stands at ``sequence`` in a deployment of one
    partition; return the positions."""
    reached = await wait_for_positions(store, {0: sequence}, models, within_s)
    return {name: at[0] for name, at in reached.items()}


async def wait_for_positions(
    store: Store,
    sequences: dict[int, int],
    models: Iterable[str] | None = None,
    within_s: float = CATCH_UP_S,
) -> dict[str, dict[int, int]]:
    """Poll until every model (or those named) stands at ``sequences[p]`` in each partition
    ``p``; return the positions."""
    names = list(models if models is not None else READ_MODELS)
    deadline = time.monotonic() + within_s
    while True:
        async with store.reading() as conn:
            stored = await positions.all_positions(conn)
        reached = {
            name: {
                p: stored.get(name, {}).get(p, positions.Position(0, 0)).position for p in sequences
            }
            for name in names
        }
        if all(at[p] >= sequences[p] for at in reached.values() for p in sequences):
            return reached
        if time.monotonic() > deadline:
            raise AssertionError(f"read models at {reached}, not {sequences}, after {within_s} s")
        await asyncio.sleep(0.02)


async def snapshot(store: Store, key: bytes = TESTS_KEY) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every read model's tables, in key order (hands in progress, of the hands
    and the integrity models, opened with the service's ``key``: each sealing draws its own
    nonce)."""
    rows: dict[str, list[tuple[Any, ...]]] = {}
    async with store.reading() as conn:
        for model in READ_MODELS.values():
            for table in model.tables:
                query = sa.select(table).order_by(*table.primary_key.columns)
                rows[table.name] = opened_rows(table, await conn.execute(query), key)
    return rows


def final_state(events: list[AnyEvent]) -> Game:
    game = fold(events)
    assert game is not None
    return game


def expected_scoreboard(events: list[AnyEvent]) -> dict[str, Any]:
    """docs/api.md's scoreboard, straight from the events and the folded state."""
    game = final_state(events)
    return {
        "game_id": game.game_id,
        "units": [list(unit) for unit in table_for(game.rules).units],
        "hands": [
            {"hand": e.hand, "points": [*e.points], "scores": [*e.scores], "bags": [*e.bags]}
            for e in events
            if isinstance(e, HandScored)
        ],
        "scores": list(game.scores),
        "bags": list(game.bags),
        "game_over": any(isinstance(event, GameEnded) for event in events),
        "winners": list(game.winners),
        "version": game.version,
    }


def as_json(value: Any) -> Any:
    """What the read models return for a domain value: its JSON form."""
    return msgspec.json.decode(msgspec.json.encode(value))
