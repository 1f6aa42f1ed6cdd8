"""Projection workers when things go wrong: poison messages, kills, rebuilds, redeliveries."""

from __future__ import annotations

import asyncio
import hashlib
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.js import JetStreamContext
from prometheus_client import REGISTRY

from benchmarks.projections import GameWriter
from contracts.wire import GAMES_STREAM, Commit, encode_commit, game_subject
from domain.commands import CreateGame
from domain.events import TrickWon
from domain.game import decide
from services.projections.model import ReadModel
from services.projections.parking import parked_messages, replay_parked
from services.projections.rebuild import rebuild
from services.projections.registry import READ_MODELS
from services.projections.scoreboard import Scoreboard, ScoreboardModel
from services.projections.service import Projections
from services.runtime.broker_users import EARLIER_MODELS
from services.runtime.consumer import consumer_config
from services.runtime.follower import Opened
from services.runtime.nats_server import EmbeddedNats
from services.store import queries
from services.store.database import Store
from services.store.lag import caught_up, lag_by_model, projection_lag
from services.store.schema import positions as positions_table
from tests.integration.support import credentials_of

pytest.register_assert_rewrite("tests.integration.conftest_projections")
from tests.integration.conftest_projections import (  # noqa: E402
    CATCH_UP_S,
    QUICK_RETRY,
    TESTS_KEY,
    append_games,
    expected_scoreboard,
    positions_in,
    publish_raw,
    random_logs,
    snapshot,
    wait_for_position,
    workers,
)

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration


def parked_total(model: str) -> float:
    return REGISTRY.get_sample_value("spades_projection_parked_total", {"model": model}) or 0.0


def model_breaker() -> list[bytes]:
    """A game whose second commit wins a trick nobody played to: the hands model cannot make a
    record of it (the other models have no use for tricks and take it)."""
    writer = GameWriter("breaker")
    writer.commit(decide(None, CreateGame("breaker", {"preset": "solo"})))
    (created,) = writer.log.payloads
    trick = Commit(
        game_id="breaker",
        version=2,
        command_id="breaker-2",
        time="2025-01-01T00:00:03.000Z",
        previous=hashlib.sha256(created).hexdigest(),
        events=[TrickWon(1, 0)],
    )
    return [created, encode_commit(trick)]


async def test_poison_messages_are_parked_and_the_workers_go_on(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    logs = random_logs(4, seed=11)
    await append_games(js, logs[:2])
    garbage = await publish_raw(js, "junk", b"\x00 this is no commit")
    misplaced = await publish_raw(js, "elsewhere", logs[0].payloads[0])
    orphan_writer = GameWriter("orphan")
    orphan_writer.commit(decide(None, CreateGame("orphan", {"preset": "solo"})))
    orphan = await publish_raw(js, "orphan", encode_commit(_renumbered(orphan_writer, 6)))
    breaker = [await publish_raw(js, "breaker", data) for data in model_breaker()]
    last = await append_games(js, logs[2:])
    before = {model: parked_total(model) for model in READ_MODELS}

    async with workers(store, nats_client):
        reached = await wait_for_position(store, last)
    assert set(reached.values()) == {last}

    parked = await parked_messages(store)
    reasons = {(message.model, message.sequence): message.reason for message in parked}
    for model in READ_MODELS:
        assert reasons[model, garbage].startswith("not a commit")
        assert reasons[model, misplaced] == (
            f"a commit of game 'g0' on subject {game_subject('elsewhere')}"
        )
        assert reasons[model, orphan].startswith(f"out of order: {model} holds game orphan at")
    (broken,) = [m for m in parked if m.model == "hands" and m.sequence == breaker[1]]
    assert broken.reason.startswith("IndexError")
    assert broken.attempts == QUICK_RETRY.attempts
    assert broken.payload == model_breaker()[1]
    assert len(parked) == 3 * len(READ_MODELS) + 1
    assert parked_total("hands") - before["hands"] == 4
    assert parked_total("games") - before["games"] == 3
    for log in logs:
        scoreboard = await queries.scoreboard(store.engine, log.game_id)
        assert scoreboard == expected_scoreboard(log.events)

    outcome = await replay_parked(store)
    assert outcome.applied == []
    assert {(m.model, m.sequence) for m in outcome.still_parked} == set(reasons)
    again = await parked_messages(store)
    assert {(m.model, m.sequence): m.reason for m in again} == reasons


def _renumbered(writer: GameWriter, version: int) -> Commit:
    """The writer's last commit, claiming to come later in its game than it does."""
    commit = writer.log.commits[-1]
    return Commit(
        game_id=commit.game_id,
        version=version,
        command_id="stray",
        time=commit.time,
        previous=commit.previous,
        events=commit.events,
    )


async def test_parked_messages_apply_once_the_fault_is_gone(
    store: Store, js: JetStreamContext, nats_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    logs = random_logs(3, seed=12)
    victim = logs[1].game_id
    fold = ScoreboardModel.fold

    def faulty(self: ScoreboardModel, state: Scoreboard | None, commit: Commit) -> Scoreboard:
        if commit.game_id == victim:
            raise RuntimeError("scoreboard bug")
        return fold(self, state, commit)

    monkeypatch.setattr(ScoreboardModel, "fold", faulty)
    last = await append_games(js, logs)
    async with workers(store, nats_client, models=["scoreboard"]):
        await wait_for_position(store, last, ["scoreboard"])
    parked = await parked_messages(store, "scoreboard")
    assert [m.subject for m in parked] == [game_subject(victim)] * len(logs[1].commits)
    assert parked[0].reason == "RuntimeError: scoreboard bug"
    assert all(m.reason.startswith("out of order") for m in parked[1:])
    assert await queries.scoreboard(store.engine, victim) is None

    monkeypatch.undo()
    outcome = await replay_parked(store, "scoreboard")
    assert [m.sequence for m in outcome.applied] == [m.sequence for m in parked]
    assert outcome.still_parked == []
    assert await parked_messages(store) == []
    for log in logs:
        assert await queries.scoreboard(store.engine, log.game_id) == expected_scoreboard(
            log.events
        )


async def test_a_worker_killed_mid_stream_catches_up_to_a_rebuild(
    store: Store,
    database_url: str,
    js: JetStreamContext,
    nats_client: Client,
    nats_server: EmbeddedNats,
    tmp_path: Path,
) -> None:
    last = await append_games(js, random_logs(25, seed=13))
    environment = {
        **os.environ,
        "SPADES_NATS_URL": nats_server.url,
        "SPADES_NATS_CREDS": str(credentials_of("projections")),
        "SPADES_DATABASE_URL": database_url,
        "SPADES_DATA_DIR": str(tmp_path),
        "SPADES_LOG_FORMAT": "json",
        "SPADES_SECRET_KEY": TESTS_KEY.decode(),  # the hands in progress are sealed with it
    }
    argv = [sys.executable, "-m", "services.cli.projections", "--batch-size", "20"]
    with (tmp_path / "workers.log").open("wb") as output:

        async def start() -> asyncio.subprocess.Process:
            return await asyncio.create_subprocess_exec(
                *argv, env=environment, stdout=output, stderr=output
            )

        first = await start()
        try:
            await wait_for_position(store, last // 3)
        finally:
            first.kill()
            await first.wait()
        at_kill = await positions_in(store)
        assert min(p.position for p in at_kill.values()) < last, "killed before the end"

        second = await start()
        try:
            await wait_for_position(store, last)
        finally:
            second.send_signal(signal.SIGTERM)
            assert await asyncio.wait_for(second.wait(), timeout=30) == 0
    after_restart = await snapshot(store)

    await rebuild(store)
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    assert await snapshot(store) == after_restart


async def test_replaying_the_stream_changes_nothing(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    last = await append_games(js, random_logs(8, seed=15))
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    first = await snapshot(store)

    # Everything delivered again onto the rows it already made (positions back at 0).
    async with store.writing() as conn:
        await conn.execute(positions_table.update().values(position=0))
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    assert await snapshot(store) == first
    assert await parked_messages(store) == [], "a redelivery is skipped, not refused"

    for _ in range(2):
        await rebuild(store)
        async with workers(store, nats_client):
            await wait_for_position(store, last)
        assert await snapshot(store) == first
    assert await parked_messages(store) == []


async def test_rebuilding_one_model_while_the_others_serve(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    logs = random_logs(6, seed=14)
    last = await append_games(js, logs[:4])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
        before = await snapshot(store)
        assert await rebuild(store, ["scoreboard"]) == ["scoreboard"]
        stored = await positions_in(store)
        assert stored["scoreboard"].generation == 1
        assert {name: p.position for name, p in stored.items() if name != "scoreboard"} == {
            "games": last,
            "hands": last,
            "players": last,
            "standings": last,
            "log": last,
            "integrity": last,
        }
        last = await append_games(js, logs[4:])
        await wait_for_position(store, last)
    after = await snapshot(store)
    old_games = {log.game_id for log in logs[:4]}
    assert [row for row in after["scoreboards"] if row[0] in old_games] == before["scoreboards"]
    for log in logs:
        assert await queries.scoreboard(store.engine, log.game_id) == expected_scoreboard(
            log.events
        )
        assert await queries.hand_records(store.engine, log.game_id)


async def consumers_become(js: JetStreamContext, names: set[str]) -> None:
    """Poll until the game stream's consumers are exactly ``names``."""
    deadline = time.monotonic() + CATCH_UP_S
    while (found := {c.name for c in await js.consumers_info(GAMES_STREAM)}) != names:
        assert time.monotonic() < deadline, f"consumers {found}, not {names}"
        await asyncio.sleep(0.05)


async def taken_back(crew: Projections, name: str) -> None:
    """Poll until the first worker follows the partition for ``name`` again, knowing its
    generation: a rebuild from then on is one it sees while it runs. (A rebuild in between,
    while the caught up model waits to be taken back, is read as the partition is opened
    again, and the model replays with the others instead of on its own.)"""
    deadline = time.monotonic() + CATCH_UP_S
    while (group := crew.steady.groups.get(0)) is None or name not in group.generations:
        assert time.monotonic() < deadline, f"{name} not taken back by the first worker"
        await asyncio.sleep(0.02)


async def test_a_model_behind_catches_up_on_a_consumer_of_its_own_then_joins_the_others(
    store: Store, js: JetStreamContext, nats_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One consumer feeds every model that stands with the others; a model rebuilt (before
    the workers start, or while they run) replays on its own, and rejoins them once caught
    up, its consumer gone. The rows are those of a replay of every model."""
    logs = random_logs(6, seed=17)
    every = {"spades-projections"}
    # Consumers of an earlier version's workers: one per model, then one for all of them.
    await js.add_consumer(GAMES_STREAM, consumer_config("games", 0, 4000))
    everyone = "-".join(sorted(EARLIER_MODELS))  # the models of then (log, integrity came later)
    await js.add_consumer(GAMES_STREAM, consumer_config(everyone, 0, 4000))
    detached: list[tuple[int, list[str]]] = []
    detach = Projections.detach

    async def recorded(self: Projections, partition: int, models: Sequence[ReadModel]) -> None:
        detached.append((partition, [model.name for model in models]))
        await detach(self, partition, models)

    monkeypatch.setattr(Projections, "detach", recorded)
    last = await append_games(js, logs[:3])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
        await consumers_become(js, every)
    await rebuild(store, ["hands"])
    last = await append_games(js, logs[3:5])
    async with workers(store, nats_client) as crew:
        await wait_for_position(store, last)
        await consumers_become(js, every)
        await taken_back(crew, "hands")
        await rebuild(store, ["scoreboard"])
        last = await append_games(js, logs[5:])
        await wait_for_position(store, last)
        await consumers_become(js, every)
    assert detached == [(0, ["hands"]), (0, ["scoreboard"])]
    stored = await positions_in(store)
    assert {name: p.generation for name, p in stored.items()} == {
        **dict.fromkeys(READ_MODELS, 0),
        "hands": 1,
        "scoreboard": 1,
    }
    kept = await snapshot(store)

    await rebuild(store)
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    assert await snapshot(store) == kept
    assert await parked_messages(store) == []


async def test_a_model_refusing_the_stream_waits_aside_while_a_rebuilt_one_replays(
    store: Store, js: JetStreamContext, nats_client: Client
) -> None:
    """Two models behind the others at once: one rebuilt, one whose position belongs to
    another stream. The rebuilt one replays and rejoins the others; the refusing one waits
    aside, its refusal recorded, and the replay follows the partition once rather than opening
    it again at every batch for the one that cannot follow it."""
    logs = random_logs(6, seed=61)
    last = await append_games(js, logs[:3])
    async with workers(store, nats_client):
        await wait_for_position(store, last)
    elsewhere = "2000-01-01T00:00:00.000000+00:00"
    async with store.writing() as conn:
        await conn.execute(
            positions_table.update()
            .where(positions_table.c.model == "hands")
            .values(stream_created=elsewhere)
        )
    await rebuild(store, ["scoreboard"])
    last = await append_games(js, logs[3:])
    others = [name for name in READ_MODELS if name != "hands"]
    async with workers(store, nats_client, batch_size=5) as crew:
        followed: list[int] = []
        open_partition = crew.replay.open

        async def counted(opened: Opened) -> int | None:
            after = await open_partition(opened)
            if after is not None:
                followed.append(after)
            return after

        crew.replay.open = counted  # type: ignore[method-assign]
        await wait_for_position(store, last, others)
        await taken_back(crew, "scoreboard")
        stored = await positions_in(store)
        assert stored["hands"].refusal is not None
        assert f"created {elsewhere}" in stored["hands"].refusal
        assert crew.replay.busy(0), "the refusing model is looked at again"
    assert len(followed) <= 2, followed
    for log in logs:
        assert await queries.scoreboard(store.engine, log.game_id) == expected_scoreboard(
            log.events
        )


async def test_lag_is_reported(store: Store, js: JetStreamContext, nats_client: Client) -> None:
    last = await append_games(js, random_logs(3, seed=16))
    report = await projection_lag(store.engine, js)
    assert lag_by_model(report) == dict.fromkeys(READ_MODELS, last)
    assert not caught_up(report, bound=10)
    hands = {"model": "hands", "partition": "0"}
    assert REGISTRY.get_sample_value("spades_projection_lag", hands) == last

    async with workers(store, nats_client):
        await wait_for_position(store, last)
        report = await projection_lag(store.engine, js)
    assert lag_by_model(report) == dict.fromkeys(READ_MODELS, 0)
    assert caught_up(report, bound=0)
    games = {"model": "games", "partition": "0"}
    assert REGISTRY.get_sample_value("spades_projection_position", games) == last
