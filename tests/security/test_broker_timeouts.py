"""The timers fire timeouts and nothing else, tried with their own credentials on a real
nats-server: a bid, a play or a seat sent as the timers is refused by the server (their user may
publish on the timeout subjects alone), and the engine answers nothing but a timeout there. The
gateway, which sends every other command, can fire no timeout: the server refuses it the timeout
subjects, and the engine a timeout on a command subject."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import msgspec
import nats.errors
import pytest

from contracts.partitions import ONE, Partitions
from contracts.wire import (
    ActRequest,
    CommandReply,
    CommandRequest,
    CreateGameRequest,
    RequestBody,
    TakeSeatRequest,
    TimeOutRequest,
    reply_decoder,
)
from domain.clock import Clock
from domain.events import TimedOut
from services.runtime.engine_client import EngineClient, EngineUnavailable
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess, history
from tests.security.test_broker import Attempt, attempt_as

pytestmark = pytest.mark.integration

RULES = {"preset": "partnership", "max_hands": 1}
TURN_S = 0.05
K3 = Partitions(3)


@pytest.fixture
def server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    with EmbeddedNats(tmp_path / "nats") as running:
        yield running


@pytest.fixture
def engine(server: EmbeddedNats, tmp_path: Path) -> Iterator[EngineProcess]:
    credentials = {"SPADES_NATS_CREDS": str(server.credentials_for("engine"))}
    process = EngineProcess(server.url, tmp_path, env=credentials)
    process.start()
    process.wait_ready()
    yield process
    process.stop()


@pytest.fixture
async def gateway(server: EmbeddedNats) -> AsyncIterator[Attempt]:
    attempt = await attempt_as(server, "gateway")
    yield attempt
    await attempt.client.close()


@pytest.fixture
async def timers(server: EmbeddedNats) -> AsyncIterator[Attempt]:
    attempt = await attempt_as(server, "timers")
    yield attempt
    await attempt.client.close()


async def clocked_table(gateway: Attempt, game_id: str) -> int:
    """A table of four on a short clock, opened through the gateway's connection; its
    version once seated (seat 0 is to bid)."""
    client = EngineClient(gateway.client, timeout_s=5.0)
    clock = Clock(turn_s=TURN_S, on_timeout="auto")
    created = await client.send(game_id, CreateGameRequest(rules=RULES, dealer=3, clock=clock))
    assert created.ok, created
    version = created.version
    for seat in range(4):
        taken = await client.send(game_id, TakeSeatRequest(player=f"p{seat}", seat=seat))
        assert taken.ok, taken
        version = taken.version
    return version


async def raw_request(
    attempt: Attempt, subject: str, game_id: str, body: RequestBody
) -> CommandReply:
    """A command request sent by hand on ``subject``, the engine's reply decoded."""
    command_id = "raw-" + subject.replace(".", "-")
    request = CommandRequest(command_id=command_id, game_id=game_id, body=body)
    message = await attempt.client.request(subject, msgspec.json.encode(request), timeout=5)
    return reply_decoder.decode(message.data)


async def test_the_timers_may_fire_a_timeout_and_send_no_other_command(
    engine: EngineProcess, gateway: Attempt, timers: Attempt
) -> None:
    game = "timed-1"
    version = await clocked_table(gateway, game)
    before = await history(gateway.client, game)
    client = EngineClient(timers.client, timeout_s=1.0)

    # A bid as the timers, through the engine's own client: the server refuses the subject.
    bid = ActRequest(seat=0, action={"type": "bid", "bid": 3})
    sent = asyncio.create_task(client.send(game, bid))
    await timers.refusal(ONE.command_subject(game))
    with pytest.raises(EngineUnavailable):
        await sent
    # The any-engine subject, which the engine client falls back on, is refused as well.
    await timers.client.publish(Partitions.any_engine_subject(game), b"{}")
    await timers.client.flush()
    await timers.refusal(Partitions.any_engine_subject(game))
    # A bid on the timeout subject, which the timers may send to, is answered and not run.
    for subject in (ONE.timeout_subject(game), Partitions.any_engine_timeout_subject(game)):
        refused = await raw_request(timers, subject, game, bid)
        assert refused.code == "unauthorized", refused
    assert await history(gateway.client, game) == before

    # A timeout goes through.
    await asyncio.sleep(TURN_S * 2)  # seat 0's clock runs out
    fired = await client.send(game, TimeOutRequest(seat=0, expected_version=version))
    assert fired.ok, fired
    assert isinstance(fired.events[0].event, TimedOut)


async def test_the_gateway_cannot_fire_a_timeout(engine: EngineProcess, gateway: Attempt) -> None:
    game = "timed-2"
    version = await clocked_table(gateway, game)
    await asyncio.sleep(TURN_S * 2)
    before = await history(gateway.client, game)
    timeout = TimeOutRequest(seat=0, expected_version=version)

    client = EngineClient(gateway.client, timeout_s=1.0)
    sent = asyncio.create_task(client.send(game, timeout))
    await gateway.refusal(ONE.timeout_subject(game))
    with pytest.raises(EngineUnavailable):
        await sent
    # By hand on the command subjects, which the gateway may send to: answered, not run.
    for subject in (ONE.command_subject(game), Partitions.any_engine_subject(game)):
        refused = await raw_request(gateway, subject, game, timeout)
        assert refused.code == "unauthorized", refused
    assert await history(gateway.client, game) == before


async def test_with_partitions_the_timers_may_send_to_each_partitions_timeouts_alone(
    tmp_path: Path,
) -> None:
    """No engine: the server lets a timeout through to nobody (no responders), and refuses
    a command to any partition."""
    with EmbeddedNats(tmp_path / "nats-k3", partitions=K3) as server:
        timers = await attempt_as(server, "timers")
        try:
            for partition in K3.indexes:
                game = next(g for g in (f"g{n}" for n in range(100)) if K3.of(g) == partition)
                with pytest.raises(nats.errors.NoRespondersError):
                    await timers.client.request(K3.timeout_subject(game), b"{}", timeout=2)
                await timers.client.publish(K3.command_subject(game), b"{}")
                await timers.client.flush()
                await timers.refusal(K3.command_subject(game))
        finally:
            await timers.client.close()
