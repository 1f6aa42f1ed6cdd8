"""League commands through real engine processes and a real nats-server: one commit per command
on the league's own subject, optimistic concurrency between engines, first answers kept, and
rounds scheduled from the games' own results."""

from __future__ import annotations

import asyncio
import hashlib
import random
from pathlib import Path

import pytest
from nats.aio.client import Client
from nats.aio.msg import Msg

from benchmarks.nats_table import RandomTable
from contracts.wire import (
    GENESIS,
    LEAGUES_STREAM,
    CreateGameRequest,
    CreateLeagueRequest,
    LeagueCommandReply,
    ScheduleRoundRequest,
    TakeSeatRequest,
    game_subject,
    league_command_subject,
    league_reply_decoder,
    league_subject,
    read_league_commit,
)
from domain.league import (
    LeagueTable,
    RoundCompleted,
    RoundScheduled,
    fold,
    table_result,
)
from services.runtime.engine_client import EngineClient, new_command_id
from services.runtime.game_stream import GameStream
from services.runtime.league_stream import LeagueStream, StoredLeagueCommit
from tests.integration.support import EngineProcess, forfeit_on_time, ready_client

pytestmark = pytest.mark.integration

QUICK_TWO_PLAYER = {"preset": "two-player", "max_hands": 1}


async def league_history(connection: Client, league_id: str) -> list[StoredLeagueCommit]:
    return await LeagueStream(connection.jetstream()).read(league_id)


def assert_chained(commits: list[StoredLeagueCommit]) -> None:
    """Each commit names the one before; versions follow on without a gap; ids once each."""
    previous, version = GENESIS, 0
    for stored in commits:
        commit = stored.commit
        assert commit.previous == previous
        assert commit.version - len(commit.events) == version
        previous, version = hashlib.sha256(stored.data).hexdigest(), commit.version
    ids = [stored.commit.command_id for stored in commits]
    assert len(ids) == len(set(ids))


def created_league(players: list[str], rounds: int | None = None) -> CreateLeagueRequest:
    return CreateLeagueRequest(name="North", rules=QUICK_TWO_PLAYER, players=players, rounds=rounds)


async def play_table(
    client: EngineClient, connection: Client, league_id: str, table: LeagueTable, seed: int
) -> RandomTable:
    """Start a table's game as the gateway does (game commands, ``league`` set) and play it to
    the end at random."""
    game = RandomTable(
        client, GameStream(connection.jetstream()), table.game_id, random.Random(seed)
    )
    create = CreateGameRequest(rules=QUICK_TWO_PLAYER, league=league_id)
    await game.apply(await client.send(table.game_id, create))
    for seat, player in enumerate(table.players):
        await game.apply(
            await client.send(table.game_id, TakeSeatRequest(player=player, seat=seat))
        )
    await game.play_out()
    assert game.finished
    return game


async def test_a_league_is_created_and_its_rounds_follow_the_games(
    engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    created = await client.send_league("north", created_league(["ann", "bob", "cat", "dan"], 3))
    assert created.ok, created
    league = fold(created.events)
    assert league is not None
    assert (league.pairing, league.planned) == ("round_robin", 3)

    first = await client.send_league("north", ScheduleRoundRequest())
    assert first.ok, first
    (scheduled,) = first.events
    assert isinstance(scheduled, RoundScheduled)
    assert [table.game_id for table in scheduled.tables] == ["north-1-1", "north-1-2"]

    early = await client.send_league("north", ScheduleRoundRequest())
    assert (early.code, early.detail) == ("wrong_phase", "round 1 is still being played: north-1-1")

    recorded: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def appended(message: Msg) -> None:
        if b'"round_completed"' in message.data and not recorded.done():
            recorded.set_result(None)

    watching = await connection.subscribe(league_subject("north"), cb=appended)
    games = [
        await play_table(client, connection, "north", table, seed)
        for seed, table in enumerate(scheduled.tables)
    ]
    # the engines' round watch records the round over as its last game ends, by itself
    await asyncio.wait_for(recorded, 30)
    await watching.unsubscribe()
    second = await client.send_league("north", ScheduleRoundRequest(round=2))
    assert second.ok, second
    (next_round,) = second.events
    assert isinstance(next_round, RoundScheduled)
    first_pairs = {frozenset(table.players) for table in scheduled.tables}
    assert not first_pairs & {frozenset(table.players) for table in next_round.tables}

    commits = await league_history(connection, "north")
    assert_chained(commits)
    assert [len(stored.commit.events) for stored in commits] == [1, 1, 0, 1, 1]
    assert commits[2].commit.refusal is not None
    (completed,) = commits[3].commit.events
    assert isinstance(completed, RoundCompleted)
    assert list(completed.results) == [table_result(game.state) for game in games if game.state]
    assert commits[3].commit.command_id == f"round-end-{scheduled.tables[-1].game_id}"
    replayed = fold(event for stored in commits for event in stored.commit.events)
    assert replayed is not None
    assert replayed.version == second.version == 4


async def test_two_engines_racing_schedule_each_round_once(
    engine: EngineProcess, second_engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    players = [f"p{n}" for n in range(10)]
    assert (await client.send_league("race", created_league(players))).ok

    replies = await asyncio.gather(
        *(client.send_league("race", ScheduleRoundRequest()) for _ in range(12))
    )
    accepted = [reply for reply in replies if reply.ok]
    assert len(accepted) == 1
    assert {(reply.code, reply.detail) for reply in replies if not reply.ok} == {
        ("wrong_phase", "round 1 is still being played: race-1-1")
    }
    commits = await league_history(connection, "race")
    assert_chained(commits)
    scheduled = [e for s in commits for e in s.commit.events if isinstance(e, RoundScheduled)]
    assert [event.round for event in scheduled] == [1]
    assert len(commits) == 1 + 12


async def test_a_command_id_gets_its_first_answer_on_any_engine(
    engine: EngineProcess, second_engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    body = created_league(["ann", "bob", "cat"])
    command_id = new_command_id()
    answers = await asyncio.gather(
        *(client.send_league("again", body, command_id) for _ in range(6))
    )
    assert all(answer == answers[0] for answer in answers)
    assert answers[0].ok
    other = await client.send_league("again", created_league(["ann", "bob"]), command_id)
    assert other.code == "idempotency_key_reused"
    twice = await client.send_league("again", body)
    assert twice.code == "conflict"
    assert len(await league_history(connection, "again")) == 2


async def test_refusals_name_the_league_and_the_stream_holds_only_leagues(
    engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    missing = await client.send_league("nowhere", ScheduleRoundRequest())
    assert missing.code == "league_not_found"
    unplayable = await client.send_league("bad", created_league(["solo player"]))
    assert unplayable.code == "invalid_rules"  # too few players for the tables its rules set
    rules = await client.send_league(
        "bad-rules",
        CreateLeagueRequest(name="N", rules={"preset": "whist"}, players=["a", "b"]),
    )
    assert rules.code == "invalid_rules"
    info = await connection.jetstream().stream_info(LEAGUES_STREAM)
    assert info.config.subjects == ["spades.leagues.>"]
    assert info.config.deny_delete
    assert info.config.deny_purge


@pytest.mark.parametrize(
    "payload",
    [
        b"not json",
        b'{"command_id": "c", "league_id": "has space", "body": {"type": "schedule_round"}}',
        b'{"command_id": "c", "league_id": "x" , "body": {"type": "explode"}}',
        b'{"command_id": "c", "league_id": "'
        + b"x" * 41
        + b'", "body": {"type": "schedule_round"}}',
    ],
)
async def test_malformed_league_commands_are_refused(
    payload: bytes, engine: EngineProcess, connection: Client
) -> None:
    await ready_client(connection)
    message = await connection.request(league_command_subject("x"), payload, timeout=5)
    reply: LeagueCommandReply = league_reply_decoder.decode(message.data)
    assert (reply.ok, reply.code) == (False, "malformed")


async def test_a_round_whose_last_game_ends_while_no_engine_runs_finishes_when_one_does(
    engine: EngineProcess, connection: Client, nats_url: str, tmp_path: Path
) -> None:
    client = await ready_client(connection)
    assert (await client.send_league("late", created_league(["ann", "bob"], 2))).ok
    (scheduled,) = (await client.send_league("late", ScheduleRoundRequest())).events
    assert isinstance(scheduled, RoundScheduled)
    (table,) = scheduled.tables
    await client.send(table.game_id, CreateGameRequest(rules=QUICK_TWO_PLAYER, league="late"))
    for seat, player in enumerate(table.players):
        await client.send(table.game_id, TakeSeatRequest(player=player, seat=seat))

    engine.kill()  # kill -9: no engine runs while the table ends
    # a commit nobody can read on a table's subject first: the watch logs it and goes on
    await connection.jetstream().publish(game_subject("late-1-9"), b'{"game_ended" garbage')
    await forfeit_on_time(connection, table.game_id, unit=1)
    recorded: asyncio.Future[bytes] = asyncio.get_running_loop().create_future()

    async def appended(message: Msg) -> None:
        if not recorded.done():
            recorded.set_result(message.data)

    watching = await connection.subscribe(league_subject("late"), cb=appended)
    restarted = EngineProcess(nats_url, tmp_path, "engine-restarted")
    restarted.start()
    try:
        data = await asyncio.wait_for(recorded, 30)
    finally:
        await watching.unsubscribe()
        restarted.stop()
    (completed,) = read_league_commit(data).events
    assert isinstance(completed, RoundCompleted)
    (result,) = completed.results
    assert (result.won, result.forfeited) == ((True, False), (False, True))
    commits = await league_history(connection, "late")
    assert sum(isinstance(e, RoundCompleted) for s in commits for e in s.commit.events) == 1
    log = (tmp_path / "engine-restarted.log").read_text()
    assert "round watch cannot read a commit" in log


async def test_two_engines_watching_record_a_round_over_once(
    engine: EngineProcess, second_engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    players = [f"p{n}" for n in range(8)]
    assert (await client.send_league("pair", created_league(players, 3))).ok
    (scheduled,) = (await client.send_league("pair", ScheduleRoundRequest())).events
    assert isinstance(scheduled, RoundScheduled)
    completed: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    async def appended(message: Msg) -> None:
        if b'"round_completed"' in message.data and not completed.done():
            completed.set_result(None)

    watching = await connection.subscribe(league_subject("pair"), cb=appended)
    try:
        # the four tables end at once, their ends shared out between the two engines' watches
        await asyncio.gather(
            *(
                play_table(client, connection, "pair", table, seed)
                for seed, table in enumerate(scheduled.tables)
            )
        )
        await asyncio.wait_for(completed, 30)
    finally:
        await watching.unsubscribe()
    second = await client.send_league("pair", ScheduleRoundRequest(round=2))
    assert second.ok, second
    commits = await league_history(connection, "pair")
    assert_chained(commits)
    ended = [e for s in commits for e in s.commit.events if isinstance(e, RoundCompleted)]
    assert [event.round for event in ended] == [1]
    assert [table.game_id for table in scheduled.tables] == [r.game_id for r in ended[0].results]
