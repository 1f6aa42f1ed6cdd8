"""Rebuilds on a game stream of three partitions: one model in one partition alone, a model in
every partition with the gateway ready throughout and the partitions replayed at once by two
workers, and a worker killed mid-rebuild. Whatever happened, every read model ends as it was."""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext

from benchmarks.timers import fill, finished_histories
from contracts.partitions import Partitions
from services.engine.service import ensure_streams
from services.projections.parking import parked_messages
from services.projections.rebuild import AcrossPartitions, rebuild
from services.projections.registry import READ_MODELS
from services.runtime.nats_server import EmbeddedNats
from services.store import positions
from services.store.database import Store, open_store
from services.store.lag import behind, projection_lag, rebuilds, stalled_rebuilds
from services.store.schema import positions as position_rows
from tests.integration.support import ProjectionsProcess, broker_credentials, connected

pytest.register_assert_rewrite("tests.integration.conftest_projections")
pytest.register_assert_rewrite("tests.integration.test_gateway")
from tests.integration.conftest_projections import (  # noqa: E402
    snapshot,
    wait_for_positions,
    workers,
)
from tests.integration.test_gateway import ServedGateway, gateway_settings  # noqa: E402

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration

LAYOUT = Partitions(3)
WITHIN_S = 60.0
HANDS_TABLES = ("hand_records", "hand_progress")


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A server of this test's own whose users are those of a deployment of three partitions."""
    with EmbeddedNats(
        tmp_path / "nats", credentials=broker_credentials(), partitions=LAYOUT
    ) as started:
        yield started


@pytest.fixture
async def admin(server: EmbeddedNats) -> AsyncIterator[Client]:
    client = await connected(server.url)
    yield client
    await client.close()


async def filled(connection: Client, games: int) -> dict[int, int]:
    """The three partitions' streams holding ``games`` finished games (121 commits each);
    each partition's last sequence."""
    js = connection.jetstream()
    await ensure_streams(js, partitions=LAYOUT)
    await fill(connection, LAYOUT, finished_histories(games, prefix="rebuilt"))
    return await last_sequences(js)


async def last_sequences(js: JetStreamContext) -> dict[int, int]:
    return {
        p: int((await js.stream_info(LAYOUT.stream(p))).state.last_seq or 0) for p in LAYOUT.indexes
    }


async def stored(store: Store) -> dict[str, dict[int, positions.Position]]:
    async with store.reading() as conn:
        return await positions.all_positions(conn)


async def until_rebuilt(store: Store, within_s: float = WITHIN_S) -> None:
    """Poll until no rebuild is under way in any partition (the workers have said so)."""
    deadline = time.monotonic() + within_s
    while under_way := {
        (name, p)
        for name, by in (await stored(store)).items()
        for p, at in by.items()
        if at.rebuilding_since is not None
    }:
        assert time.monotonic() < deadline, f"still rebuilding after {within_s} s: {under_way}"
        await asyncio.sleep(0.02)


def games_in(rows: list[tuple[Any, ...]]) -> set[str]:
    """The games of a table's rows (``game_id`` first in every read-model table that has it)."""
    return {row[0] for row in rows}


async def test_one_model_is_rebuilt_in_one_partition_alone(store: Store, admin: Client) -> None:
    """The hands of partition 1 are rebuilt: only the rows of that partition's games are
    emptied, only that position goes back to 0 (as rebuilding), only the hands' parked message
    of partition 1 is forgotten; the players and standings are refused and nothing is reset.
    The replay brings back exactly what was there."""
    ends = await filled(admin, 120)
    js = admin.jetstream()
    junk = {}
    for p in (1, 2):
        game_id = next(f"junk-{n}" for n in range(100) if LAYOUT.of(f"junk-{n}") == p)
        ack = await js.publish(LAYOUT.game_subject(game_id), b"not a commit")
        junk[p] = ack.seq
        ends[p] = ack.seq
    async with workers(store, admin, partitions=LAYOUT):
        await wait_for_positions(store, ends)
    before = await snapshot(store)
    parked_before = {(m.model, m.partition, m.sequence) for m in await parked_messages(store)}
    assert parked_before == {(name, p, junk[p]) for name in READ_MODELS for p in (1, 2)}
    at_start = await stored(store)
    generations = {p: at.generation for p, at in at_start["hands"].items()}

    with pytest.raises(AcrossPartitions, match="players, standings cannot be rebuilt"):
        await rebuild(store, ["hands", "players", "standings"], LAYOUT, only=[1])
    with pytest.raises(ValueError, match="no partition 3"):
        await rebuild(store, ["hands"], LAYOUT, only=[3])
    assert await stored(store) == at_start

    assert await rebuild(store, ["hands"], LAYOUT, only=[1]) == ["hands"]
    emptied = await snapshot(store)
    of_1 = {game for game in games_in(before["hand_records"]) if LAYOUT.of(game) == 1}
    assert of_1
    assert of_1 != games_in(before["hand_records"])
    for table in HANDS_TABLES:
        assert games_in(emptied[table]) == games_in(before[table]) - of_1
        kept = [row for row in before[table] if LAYOUT.of(row[0]) != 1]
        assert emptied[table] == kept
    assert {t: rows for t, rows in emptied.items() if t not in HANDS_TABLES} == {
        t: rows for t, rows in before.items() if t not in HANDS_TABLES
    }
    reset = await stored(store)
    hands_1 = reset["hands"][1]
    assert (hands_1.position, hands_1.generation) == (0, at_start["hands"][1].generation + 1)
    assert hands_1.rebuilding_since is not None
    reset["hands"].pop(1)
    at_start["hands"].pop(1)
    assert reset == at_start, "no other position moved"
    parked_now = {(m.model, m.partition, m.sequence) for m in await parked_messages(store)}
    assert parked_now == parked_before - {("hands", 1, junk[1])}

    async with workers(store, admin, partitions=LAYOUT):
        await wait_for_positions(store, ends)
        await until_rebuilt(store)
    assert await snapshot(store) == before
    replayed = {p: at.generation for p, at in (await stored(store))["hands"].items()}
    assert replayed == {p: generation + (p == 1) for p, generation in generations.items()}
    assert {(m.model, m.partition, m.sequence) for m in await parked_messages(store)} == (
        parked_before
    )


async def test_a_model_rebuilt_in_every_partition_keeps_the_gateway_ready(
    database_url: str, server: EmbeddedNats, admin: Client, tmp_path: Path
) -> None:
    """The hands are rebuilt in every partition while the gateway serves. Before any worker
    replays, ``/readyz`` is 200 naming what each partition has left, the game list (another
    model) answers every game, and a rebuild that had stood still for longer than a replay ever
    does is 503, naming it. Two workers, one holding partitions 0 and 1 and the other 2,
    replay them at once: at some moment partition 2 and another are both half replayed, and
    ``/readyz`` is 200 throughout. The rows are then what they were."""
    ends = await filled(admin, 150)
    stores = [open_store(database_url), open_store(database_url)]
    first, second = (workers(s, admin, partitions=LAYOUT, batch_size=50) for s in stores)
    settings = gateway_settings(
        server.url, tmp_path, database_url=database_url, partitions=LAYOUT.count
    )
    store = stores[0]
    try:
        await first.start()
        for p in (0, 1):
            await first.gain(p)
        await second.gain(2)
        await wait_for_positions(store, ends)
        await until_rebuilt(store)
        before = await snapshot(store)
        with ServedGateway(settings) as served:
            async with httpx.AsyncClient(base_url=served.url, timeout=10) as http:
                ready = await http.get("/readyz")
                assert ready.status_code == 200, ready.text
                assert ready.json()["rebuilding"] == {}

                await first.stop()
                await second.stop()
                await rebuild(store, ["hands"], LAYOUT)
                ready = await http.get("/readyz")
                assert ready.status_code == 200, ready.text
                assert ready.json()["rebuilding"] == {
                    "hands": {str(p): end for p, end in ends.items()}
                }
                listed = (await http.get("/v1/games", params={"limit": 200})).json()
                assert len(listed["games"]) == 150

                report = await projection_lag(
                    store.engine, admin.jetstream(), partitions=LAYOUT, stalled_after_s=0.0
                )
                assert stalled_rebuilds(report) == {"hands": [0, 1, 2]}
                assert rebuilds(report) == {}
                assert behind(report, 0) == {"hands": sum(ends.values())}
                await stand_still(store, "hands", timedelta(seconds=31))
                stalled = await http.get("/readyz")
                assert stalled.status_code == 503
                assert "hands" in stalled.json()["detail"]
                assert "not moved for 30 s in partitions 0, 1, 2" in stalled.json()["detail"]
                await stand_still(store, "hands", timedelta(0))  # as if it had just begun

                for p in (0, 1):
                    await first.gain(p)
                await second.gain(2)
                answers, halfway = await watch_replay(http, store, ends)
        assert answers
        assert all(status == 200 for status, _ in answers), answers
        assert any(body["rebuilding"].get("hands") for _, body in answers)
        assert any(2 in replaying and len(replaying) > 1 for replaying in halfway), halfway
        assert await snapshot(store) == before
    finally:
        await first.stop()
        await second.stop()
        for opened in stores:
            await opened.close()


async def stand_still(store: Store, model: str, for_: timedelta) -> None:
    """Make the model's positions look unmoved for ``for_``, as a rebuild no worker replays
    leaves them."""
    then = (datetime.now(UTC) - for_).isoformat(timespec="milliseconds")
    async with store.writing() as conn:
        await conn.execute(
            position_rows.update().where(position_rows.c.model == model).values(updated_at=then)
        )


async def watch_replay(
    http: httpx.AsyncClient, store: Store, ends: dict[int, int]
) -> tuple[list[tuple[int, dict[str, Any]]], list[set[int]]]:
    """Until no rebuild is under way: every ``/readyz`` answer, and at each look at the hands'
    positions, the partitions half replayed (past 0, short of the end)."""
    answers: list[tuple[int, dict[str, Any]]] = []
    halfway: list[set[int]] = []

    async def ask() -> None:
        while True:
            answer = await http.get("/readyz")
            answers.append((answer.status_code, answer.json()))
            if answer.status_code == 200 and not answer.json()["rebuilding"]:
                return
            await asyncio.sleep(0.02)

    async def look() -> None:
        while True:
            at = (await stored(store))["hands"]
            halfway.append({p for p in LAYOUT.indexes if 0 < at[p].position < ends[p]})
            if all(at[p].rebuilding_since is None for p in LAYOUT.indexes):
                return
            await asyncio.sleep(0.005)

    async with asyncio.timeout(WITHIN_S):
        await asyncio.gather(ask(), look())
    return answers, halfway


async def test_a_worker_killed_mid_rebuild_leaves_it_to_resume(
    database_url: str, server: EmbeddedNats, admin: Client, tmp_path: Path
) -> None:
    """Every model is rebuilt while ``spades serve projections`` runs, and the process is
    killed (SIGKILL) halfway through the replay: what it replayed stays, and the rebuild is
    still under way where it had not finished. Workers started next go on from there, and the
    rows end as they were."""
    ends = await filled(admin, 150)
    store = open_store(database_url)
    env = {
        "SPADES_PARTITIONS": str(LAYOUT.count),
        "SPADES_DATABASE_URL": database_url,
        "SPADES_DATA_DIR": str(tmp_path),
    }
    process = ProjectionsProcess(server.url, tmp_path, "projections", env)
    try:
        process.start()
        await asyncio.to_thread(process.wait_ready, "projections ready")
        await wait_for_positions(store, ends)
        await until_rebuilt(store)
        before = await snapshot(store)

        await rebuild(store, None, LAYOUT)
        deadline = time.monotonic() + WITHIN_S
        while not await half_replayed(store, ends):
            assert time.monotonic() < deadline, "the replay was never seen halfway"
            await asyncio.sleep(0.005)
        process.kill()
        halfway = await half_replayed(store, ends)
        assert halfway, "killed halfway through the replay"
        left = await stored(store)
        report = await projection_lag(store.engine, admin.jetstream(), partitions=LAYOUT)
        assert rebuilds(report), "still under way, not stalled: it has just moved"

        async with workers(store, admin, partitions=LAYOUT):
            await wait_for_positions(store, ends)
            await until_rebuilt(store)
        resumed = await stored(store)
        for model, p in halfway:  # gone on from where it was, not rebuilt again
            assert resumed[model][p].generation == left[model][p].generation
        assert await snapshot(store) == before
    finally:
        process.stop()
        await store.close()


async def half_replayed(store: Store, ends: dict[int, int]) -> set[tuple[str, int]]:
    """The (model, partition) a replay has taken past 0 and not yet to the end."""
    return {
        (name, p)
        for name, by in (await stored(store)).items()
        for p, at in by.items()
        if 0 < at.position < ends[p] and at.rebuilding_since is not None
    }
