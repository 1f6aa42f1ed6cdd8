"""The broker is closed, tried as an attacker would: with no credentials, with a key of their own,
and with the credentials of a service that should not be able to do what they try. Each attack
must fail and leave the streams as they were."""

from __future__ import annotations

import asyncio
import random
import stat
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import nats
import nats.errors
import nats.js.errors
import pytest
from nats.aio.client import Client

from benchmarks.nats_table import RandomTable
from contracts.wire import (
    GAMES_STREAM,
    LEAGUES_STREAM,
    ActRequest,
    command_subject,
    game_subject,
    league_command_subject,
    league_subject,
)
from services.runtime.broker_users import ADMIN, BROKER_USERS, inbox_prefix
from services.runtime.credentials import connect_options, new_seed
from services.runtime.engine_client import EngineClient, EngineUnavailable
from services.runtime.game_stream import GameStream
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess, ready_client

pytestmark = pytest.mark.integration

REFUSAL_WAIT_S = 5.0


@dataclass
class Attempt:
    """A raw nats-py connection as one broker user, keeping the errors the server sends."""

    client: Client
    errors: list[str] = field(default_factory=list)
    arrived: asyncio.Event = field(default_factory=asyncio.Event)

    async def refusal(self, subject: str) -> str:
        """Wait for the server's permissions violation naming ``subject``."""
        async with asyncio.timeout(REFUSAL_WAIT_S):
            while True:
                for error in self.errors:  # nats-py gives the server's words in lower case
                    if "permissions violation" in error.lower() and subject.lower() in error:
                        return error
                self.arrived.clear()
                await self.arrived.wait()


async def attempt_as(server: EmbeddedNats, user: str) -> Attempt:
    attempt: Attempt | None = None

    async def on_error(error: Exception) -> None:
        assert attempt is not None
        attempt.errors.append(str(error))
        attempt.arrived.set()

    client = await nats.connect(
        server.url,
        error_cb=on_error,
        allow_reconnect=False,
        inbox_prefix=inbox_prefix(user),
        **connect_options(server.credentials_for(user)),
    )
    attempt = Attempt(client)
    return attempt


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A server of the test's own, with the credentials it made in its own store."""
    with EmbeddedNats(tmp_path / "nats") as running:
        yield running


@pytest.fixture
def engine(server: EmbeddedNats, tmp_path: Path) -> Iterator[EngineProcess]:
    """``spades serve engine`` with the engine's credentials only."""
    credentials = {"SPADES_NATS_CREDS": str(server.credentials_for("engine"))}
    process = EngineProcess(server.url, tmp_path, env=credentials)
    process.start()
    process.wait_ready()
    yield process
    process.stop()


@pytest.fixture
async def admin(server: EmbeddedNats) -> AsyncIterator[Client]:
    client = await connect(server.url, "pytest", credentials=server.credentials_for(ADMIN))
    yield client
    await client.close()


@pytest.fixture
async def gateway(server: EmbeddedNats) -> AsyncIterator[Attempt]:
    attempt = await attempt_as(server, "gateway")
    yield attempt
    await attempt.client.close()


@pytest.fixture
async def projections(server: EmbeddedNats) -> AsyncIterator[Attempt]:
    attempt = await attempt_as(server, "projections")
    yield attempt
    await attempt.client.close()


async def played_game(gateway: Client, game_id: str) -> RandomTable:
    """A game started and played a little, through the gateway's own connection: sending
    commands and reading the stream is the gateway's job."""
    client = await ready_client(gateway)
    table = RandomTable(client, GameStream(gateway.jetstream()), game_id, random.Random(3))
    await table.open({"preset": "two-player", "max_hands": 1})
    for _ in range(4):
        await table.step()
    return table


async def stream_state(admin: Client, stream: str) -> tuple[int, int, bool, bool]:
    info = await admin.jetstream().stream_info(stream)
    return (
        info.state.messages,
        info.state.last_seq,
        bool(info.config.deny_delete),
        bool(info.config.deny_purge),
    )


async def test_a_client_without_credentials_is_refused(server: EmbeddedNats) -> None:
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await nats.connect(server.url, allow_reconnect=False)
    with pytest.raises(PermissionError, match="refused the connection"):
        await connect(server.url, "anonymous", first_connect_timeout_s=30)


async def test_a_client_with_a_key_of_its_own_making_is_refused(
    server: EmbeddedNats, tmp_path: Path
) -> None:
    stranger = tmp_path / "stranger.nk"
    stranger.write_bytes(new_seed())
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await nats.connect(server.url, allow_reconnect=False, **connect_options(stranger))


async def test_a_client_with_a_password_is_refused(server: EmbeddedNats) -> None:
    url = server.url.replace("nats://", "nats://admin:admin@")
    with pytest.raises(nats.errors.Error, match="Authorization Violation"):
        await nats.connect(url, allow_reconnect=False)


async def test_the_gateway_cannot_write_a_commit_into_a_game_or_a_league(
    engine: EngineProcess, admin: Client, gateway: Attempt
) -> None:
    table = await played_game(gateway.client, "attacked-1")
    before = await stream_state(admin, GAMES_STREAM)
    history = await GameStream(admin.jetstream()).read(table.game_id)
    forged = history[-1].data  # a real commit, appended again as if it were new

    # Through JetStream, with the optimistic check the engine would use...
    js = gateway.client.jetstream(timeout=1.0)
    with pytest.raises(nats.errors.TimeoutError):
        await js.publish(game_subject(table.game_id), forged, stream=GAMES_STREAM)
    await gateway.refusal(game_subject(table.game_id))
    # ... and as a plain publish, which JetStream would store without any check.
    for subject in (game_subject(table.game_id), league_subject("league-1")):
        await gateway.client.publish(subject, forged)
        await gateway.client.flush()
        await gateway.refusal(subject)

    assert await stream_state(admin, GAMES_STREAM) == before
    assert await GameStream(admin.jetstream()).read(table.game_id) == history


async def test_the_gateway_cannot_delete_purge_or_loosen_a_stream(
    engine: EngineProcess, admin: Client, gateway: Attempt
) -> None:
    table = await played_game(gateway.client, "attacked-2")
    assert table.state is not None
    admin_js = admin.jetstream()
    durable = "spades-projections-games"
    await admin_js.add_consumer(GAMES_STREAM, durable_name=durable, ack_policy="all")
    streams = (GAMES_STREAM, LEAGUES_STREAM)
    before = {stream: await stream_state(admin, stream) for stream in streams}
    config = (await admin_js.stream_info(GAMES_STREAM)).config
    js = gateway.client.jetstream(timeout=1.0)

    attacks: dict[str, Callable[[], Awaitable[object]]] = {
        "$JS.API.STREAM.DELETE.SPADES_GAMES": lambda: js.delete_stream(GAMES_STREAM),
        "$JS.API.STREAM.PURGE.SPADES_GAMES": lambda: js.purge_stream(GAMES_STREAM),
        "$JS.API.STREAM.MSG.DELETE.SPADES_GAMES": lambda: js.delete_msg(GAMES_STREAM, 1),
        "$JS.API.STREAM.DELETE.SPADES_LEAGUES": lambda: js.delete_stream(LEAGUES_STREAM),
        # Loosening the stream first (allowing purges) is refused as well.
        "$JS.API.STREAM.UPDATE.SPADES_GAMES": lambda: js.update_stream(
            config.evolve(deny_purge=False, deny_delete=False)
        ),
        # The projection workers' position is theirs.
        f"$JS.API.CONSUMER.DELETE.SPADES_GAMES.{durable}": lambda: js.delete_consumer(
            GAMES_STREAM, durable
        ),
    }
    for subject, attack in attacks.items():
        with pytest.raises(nats.errors.TimeoutError):
            await attack()
        await gateway.refusal(subject)

    after = {stream: await stream_state(admin, stream) for stream in streams}
    assert after == before
    # Still deny_delete; a game stream allows purges, but to the operator's archiving only.
    assert after[GAMES_STREAM][2:] == (True, False)
    assert after[LEAGUES_STREAM][2:] == (True, True)
    assert (await admin_js.consumer_info(GAMES_STREAM, durable)).name == durable
    assert len(await GameStream(admin_js).read(table.game_id)) > 0


async def test_the_projections_cannot_send_a_command(
    engine: EngineProcess, admin: Client, gateway: Attempt, projections: Attempt
) -> None:
    table = await played_game(gateway.client, "attacked-3")
    assert table.state is not None
    before = await GameStream(admin.jetstream()).read(table.game_id)
    turn = table.state.hand.turn if table.state.hand is not None else 0
    command = ActRequest(seat=turn, action={"type": "look"})

    # The engine's own client, on the projections' connection: the request never reaches it.
    client = EngineClient(projections.client, timeout_s=1.0)
    reply = asyncio.create_task(client.send(table.game_id, command))
    await projections.refusal(command_subject(table.game_id))
    with pytest.raises(EngineUnavailable):
        await reply
    await projections.client.publish(league_command_subject("league-1"), b"{}")
    await projections.client.flush()
    await projections.refusal(league_command_subject("league-1"))

    assert await GameStream(admin.jetstream()).read(table.game_id) == before


async def test_direct_gets_read_only_the_streams_a_user_may_read(
    engine: EngineProcess, admin: Client, gateway: Attempt, server: EmbeddedNats
) -> None:
    """The streams allow direct gets (one replica): the gateway's reads of a game take them,
    and a user who may not read a stream is refused its direct gets as its leader's gets."""
    table = await played_game(gateway.client, "attacked-4")
    assert (await admin.jetstream().stream_info(LEAGUES_STREAM)).config.allow_direct
    history = await GameStream(admin.jetstream()).read(table.game_id)
    assert await GameStream(gateway.client.jetstream()).read(table.game_id) == history

    timers = await attempt_as(server, "timers")  # it reads the game stream, not the leagues'
    try:
        question = b'{"last_by_subj":"%b"}' % league_subject("league-1").encode()
        for subject in (
            f"$JS.API.DIRECT.GET.{LEAGUES_STREAM}",
            f"$JS.API.DIRECT.GET.{LEAGUES_STREAM}.{league_subject('league-1')}",
            f"$JS.API.STREAM.MSG.GET.{LEAGUES_STREAM}",
        ):
            with pytest.raises(nats.errors.TimeoutError):
                await timers.client.request(subject, question, timeout=1.0)
            await timers.refusal(subject)
    finally:
        await timers.client.close()


async def test_no_service_can_listen_to_another_services_answers_or_to_the_commands(
    server: EmbeddedNats, projections: Attempt
) -> None:
    for subject in (f"{inbox_prefix('gateway')}.>", "_INBOX.>", "spades.commands.*"):
        await projections.client.subscribe(subject)
        await projections.client.flush()
        await projections.refusal(subject)


async def test_every_user_of_the_table_is_admitted_with_its_own_seed(
    server: EmbeddedNats,
) -> None:
    for user in BROKER_USERS:
        client = await connect(
            server.url, f"pytest-{user}", user=user, credentials=server.credentials_for(user)
        )
        assert client.is_connected
        await client.close()


def test_the_seeds_and_the_server_config_are_private_and_made_once(tmp_path: Path) -> None:
    server = EmbeddedNats(tmp_path / "nats")
    with server:
        seeds = {user: server.credentials_for(user).read_bytes() for user in BROKER_USERS}
        config = server.config_path.read_text()
    with server:  # a restart on the same directory
        assert {u: server.credentials_for(u).read_bytes() for u in BROKER_USERS} == seeds

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    assert mode(server.credentials.directory) == 0o700
    assert mode(server.config_path) == 0o600
    for user in BROKER_USERS:
        assert mode(server.credentials_for(user)) == 0o600
        assert server.credentials.public_key(user) in config  # the server knows the public key
        assert seeds[user].strip().decode() not in config  # and never the seed
