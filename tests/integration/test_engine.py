"""The engine service against a real nats-server: whole games, races, crashes, restarts."""

from __future__ import annotations

import asyncio
import random
from typing import Any

import msgspec
import nats.errors
import pytest
from nats.aio.client import Client

from benchmarks.nats_table import RandomTable
from contracts.partitions import Partitions
from contracts.wire import (
    MAX_COMMAND_BYTES,
    ActRequest,
    CommandReply,
    CreateGameRequest,
    TakeSeatRequest,
    command_subject,
    reply_decoder,
)
from domain.events import HandDealt, HandScored
from domain.game import fold
from services.audit.history import chain_problems, deal_checks
from services.runtime.engine_client import EngineUnavailable, new_command_id
from services.runtime.game_stream import GameStream
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess, history, holder_pid, ready_client

pytestmark = pytest.mark.integration

PRESETS = ["partnership", "solo", "cutthroat", "three-player-house", "two-player"]


def assert_record_sound(commits: list, game_id: str) -> None:  # type: ignore[type-arg]
    """Chain intact, versions contiguous, no command twice, every deal keeps its promise."""
    assert commits, f"no history for {game_id}"
    assert chain_problems(commits) == []
    assert deal_checks(commits) == []


@pytest.mark.parametrize("preset", PRESETS)
async def test_a_whole_game_of_every_preset_over_nats(
    preset: str, engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    table = RandomTable(
        client, GameStream(connection.jetstream()), f"whole-{preset}", random.Random(7)
    )
    await table.open({"preset": preset, "max_hands": 2, "target": 150})
    await table.play_out()
    assert table.finished
    commits = await history(connection, table.game_id)
    assert_record_sound(commits, table.game_id)
    events = [event for stored in commits for event in stored.commit.events]
    replayed = fold(events)
    assert replayed == table.state
    scored = [event for event in events if isinstance(event, HandScored)]
    assert table.state is not None
    assert len(scored) == table.state.hands_played
    # two hands (more while the leaders were level: a tie on top plays on), or fewer when a
    # side reached the target (a made nil beside a made bid passes 150 in one partnership hand)
    assert len(scored) >= 2 or max(table.state.scores) >= 150, table.state.scores
    assert all(event.seed for event in scored)


async def test_two_engines_racing_for_the_same_games(
    engine: EngineProcess, second_engine: EngineProcess, connection: Client
) -> None:
    """Several senders race for each game; every accepted command lands exactly once."""
    client = await ready_client(connection)
    stream = GameStream(connection.jetstream())
    tables = [
        RandomTable(client, stream, f"race-{n}", random.Random(n), avoid_blind_nil=True)
        for n in range(6)
    ]
    await asyncio.gather(
        *(table.open({"preset": "partnership", "target": 10**6}) for table in tables)
    )
    accepted: dict[str, set[str]] = {table.game_id: set() for table in tables}

    async def race(table: RandomTable) -> None:
        for _ in range(60):
            seat, action = table.next_action()
            ids = [new_command_id() for _ in range(3)]
            # the same action three times under different ids, plus one id sent twice at once
            bodies = [ActRequest(seat=seat, action=action) for _ in ids]
            replies = await asyncio.gather(
                *(
                    client.send(table.game_id, body, cid)
                    for body, cid in zip(bodies, ids, strict=True)
                ),
                client.send(table.game_id, bodies[0], ids[0]),
            )
            assert replies[0] == replies[3], "one command id, two different answers"
            # one of them changes the game; the others are refused (or, for a look at cards
            # already seen, accepted with nothing to record)
            winners = [reply for reply in replies[:3] if reply.ok and reply.events]
            assert len(winners) == 1, [(reply.code, len(reply.events)) for reply in replies]
            accepted[table.game_id].add(winners[0].command_id)
            await table.apply(winners[0])

    await asyncio.gather(*(race(table) for table in tables))
    for table in tables:
        commits = await history(connection, table.game_id)
        assert_record_sound(commits, table.game_id)
        with_events = {stored.commit.command_id for stored in commits if stored.commit.events}
        assert accepted[table.game_id] <= with_events
        replayed = fold(event for stored in commits for event in stored.commit.events)
        assert replayed == table.state


async def test_killing_an_engine_mid_game_loses_and_repeats_nothing(
    engine: EngineProcess, second_engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection, timeout_s=2.0)
    stream = GameStream(connection.jetstream())
    tables = [
        RandomTable(client, stream, f"kill-{n}", random.Random(100 + n), avoid_blind_nil=True)
        for n in range(8)
    ]
    await asyncio.gather(*(table.open({"preset": "solo", "target": 10**6}) for table in tables))

    async def answered(table: RandomTable, body: ActRequest, command_id: str) -> CommandReply:
        """Send until an engine answers (a dead engine's requests time out)."""
        for _attempt in range(30):
            try:
                reply = await client.send(table.game_id, body, command_id)
            except EngineUnavailable:
                unanswered.append(command_id)
                went_unanswered.set()
                continue
            if reply.code != "unavailable":
                return reply
        raise AssertionError("no engine answered")

    unanswered: list[str] = []
    went_unanswered = asyncio.Event()

    async def play_with_retries(table: RandomTable, steps: int) -> None:
        for _ in range(steps):
            seat, action = table.next_action()
            command_id = new_command_id()
            body = ActRequest(seat=seat, action=action)
            first = await answered(table, body, command_id)
            assert first.ok, first
            again = await answered(table, body, command_id)
            assert again == first, "a retry with the same id got another answer"
            await table.apply(first)

    for process in (engine, second_engine):
        process.wait_ready()
    holding = await holder_pid(connection, "engine", 0)
    engine = engine if engine.pid == holding else second_engine
    playing = asyncio.gather(*(play_with_retries(table, 40) for table in tables))
    # Freeze the engine that serves the game stream's partition, so that the commands NATS
    # hands it stay in flight, until one of them has gone unanswered; then kill it with them in
    # hand. The other takes the partition over once the frozen one's lease runs out.
    engine.pause()
    waiting = asyncio.ensure_future(went_unanswered.wait())
    pending: set[asyncio.Future[Any]] = {waiting, playing}
    await asyncio.wait(pending, timeout=30, return_when=asyncio.FIRST_COMPLETED)
    waiting.cancel()
    engine.kill()
    await playing
    assert not engine.alive
    for table in tables:
        commits = await history(connection, table.game_id)
        assert_record_sound(commits, table.game_id)
        assert fold(e for stored in commits for e in stored.commit.events) == table.state
    # the commands that were in flight when the engine died were answered on retry, once
    assert unanswered, "no command was in flight when the engine was killed"


async def test_a_nats_restart_loses_nothing_acknowledged(
    nats_server: EmbeddedNats, engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    table = RandomTable(client, GameStream(connection.jetstream()), "restart", random.Random(3))
    await table.open({"preset": "cutthroat", "target": 10**6})
    for _ in range(30):
        await table.step()
    acknowledged = table.state
    nats_server.restart()
    await ready_client(connection, timeout_s=5.0)
    commits = await history(connection, table.game_id)
    assert fold(e for stored in commits for e in stored.commit.events) == acknowledged
    for _ in range(30):
        await table.step()
    commits = await history(connection, table.game_id)
    assert_record_sound(commits, table.game_id)
    assert fold(e for stored in commits for e in stored.commit.events) == table.state


@pytest.mark.parametrize(
    "payload",
    [
        b"not json at all",
        b"\xff\xfe\x00",
        b"[]",
        b'{"command_id": 7, "game_id": "g", "body": {"type": "act"}}',
        b'{"command_id": "c", "game_id": "has space", "body": {"type": "look"}}',
        b'{"command_id": "c", "game_id": "g", "body": {"type": "explode"}}',
        b'{"command_id": "c", "game_id": "g", "body": {"type": "act", "seat": "x", "action": {}}}',
        b"x" * (MAX_COMMAND_BYTES + 1),
    ],
)
async def test_malformed_messages_are_refused_and_the_engine_serves_on(
    payload: bytes, engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    try:
        message = await connection.request(command_subject("g"), payload, timeout=5)
    except nats.errors.NoRespondersError:
        # the engine answers on the fallback subject before it has claimed the partition,
        # and the client asks there as well, as EngineClient.send does
        message = await connection.request(Partitions.any_engine_subject("g"), payload, timeout=5)
    reply = reply_decoder.decode(message.data)
    assert not reply.ok
    assert reply.code == "malformed"
    assert reply.detail
    created = await client.send(
        "after-malformed", CreateGameRequest(rules={"preset": "partnership"})
    )
    assert created.ok


async def test_refusals_are_kept_and_a_reused_id_with_another_body_is_told_apart(
    engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    game = "refusals"
    assert (await client.send(game, CreateGameRequest(rules={"preset": "solo"}, dealer=0))).ok
    for seat in range(4):
        assert (await client.send(game, TakeSeatRequest(player=f"p{seat}"))).ok
    command_id = new_command_id()
    out_of_turn = ActRequest(seat=3, action={"type": "bid", "bid": 2})
    refused = await client.send(game, out_of_turn, command_id)
    assert refused.code == "not_your_turn"
    for seat in (1, 2):
        assert (await client.send(game, ActRequest(seat=seat, action={"type": "bid", "bid": 2}))).ok
    # seat 3 is now on turn, but this command id already got its answer
    assert await client.send(game, out_of_turn, command_id) == refused
    other = await client.send(
        game, ActRequest(seat=3, action={"type": "bid", "bid": 5}), command_id
    )
    assert other.code == "idempotency_key_reused"
    stale = await client.send(
        game, ActRequest(seat=3, action={"type": "bid", "bid": 1}, expected_version=3)
    )
    assert stale.code == "conflict"
    missing = await client.send("no-such-game", ActRequest(seat=0, action={"type": "look"}))
    assert missing.code == "game_not_found"
    commits = await history(connection, game)
    assert_record_sound(commits, game)


async def test_replies_never_show_another_seats_cards(
    engine: EngineProcess, connection: Client
) -> None:
    client = await ready_client(connection)
    table = RandomTable(client, GameStream(connection.jetstream()), "secrets", random.Random(5))
    await table.open({"preset": "partnership", "target": 10**6})
    replies: list[CommandReply] = []
    for _ in range(70):
        seat, action = table.next_action()
        reply = await client.send(table.game_id, ActRequest(seat=seat, action=action))
        replies.append(reply)
        await table.apply(reply)
    for reply in replies:
        for record in reply.events:
            event = record.event
            if isinstance(event, HandDealt):
                assert event.hands == ()
                assert event.deck is None
                assert event.seed is None
            encoded = msgspec.to_builtins(event)
            if "cards" in encoded and encoded["cards"] is not None:
                assert encoded.get("seat") == reply.seat or encoded.get("giver") == reply.seat
