"""The services a gateway test module runs against, once per module, on the session's server:
an engine and the projection workers with their SQLite read models. A module takes them with
``engine = stack.engine`` (and so on), which overrides the per-test ``engine`` of the conftest,
and serves its own gateway with the options it needs."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest
from nats.aio.client import Client

from services.runtime.nats_server import EmbeddedNats
from services.transparency.note import Signer
from tests.integration.support import EngineProcess, ProjectionsProcess, connected, ready_client


async def until_an_engine_answers(nats_url: str) -> None:
    connection = await connected(nats_url)
    try:
        await ready_client(connection, timeout_s=2.0)
    finally:
        await connection.close()


@pytest.fixture(scope="module")
def engine(
    shared_nats: EmbeddedNats, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[EngineProcess]:
    process = EngineProcess(shared_nats.url, tmp_path_factory.mktemp("engine"))
    process.start()
    asyncio.run(until_an_engine_answers(shared_nats.url))
    yield process
    process.stop()


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the gateway and the projection workers share their SQLite read models."""
    return tmp_path_factory.mktemp("gateway")


@pytest.fixture(scope="module")
def projections(shared_nats: EmbeddedNats, data_dir: Path) -> Iterator[ProjectionsProcess]:
    process = ProjectionsProcess(shared_nats.url, data_dir, env={"SPADES_DATA_DIR": str(data_dir)})
    process.start()
    yield process
    process.stop()


@contextmanager
def keeping_the_log(
    nats_url: str, data_dir: Path, key: Signer, origin: str
) -> Iterator[ProjectionsProcess]:
    """A projections process whose audit log signs its checkpoints with ``key`` as ``origin``."""
    env = {"SPADES_DATA_DIR": str(data_dir), "SPADES_LOG_KEY": key.text()}
    process = ProjectionsProcess(nats_url, data_dir, env={**env, "SPADES_LOG_ORIGIN": origin})
    process.start()
    try:
        yield process
    finally:
        process.stop()


def projections_keeping_the_log(key: Signer, origin: str) -> Any:
    """A module's ``projections`` fixture: the projection workers of :func:`keeping_the_log`,
    once per module. A module takes it with ``projections = stack.projections_keeping_the_log(
    KEY, ORIGIN)``."""

    @pytest.fixture(scope="module")
    def projections(shared_nats: EmbeddedNats, data_dir: Path) -> Iterator[ProjectionsProcess]:
        with keeping_the_log(shared_nats.url, data_dir, key, origin) as process:
            yield process

    return projections


@pytest.fixture
async def house(shared_nats: EmbeddedNats) -> AsyncIterator[Client]:
    """A NATS connection of the test's own: the truth of every game, and a watch on commands."""
    connection = await connected(shared_nats.url)
    yield connection
    await connection.close()


def served_gateway(app: dict[str, float] | None = None, **settings: Any) -> Any:
    """A module's ``gateway`` fixture: a gateway served over the module's engine, projection
    workers and read models, its URL. ``settings`` are changes to
    :func:`~tests.integration.test_gateway.gateway_settings`, ``app`` the app's own options
    (``min_version_wait_s``, ``keep_alive_s``). A module takes it with
    ``gateway = stack.served_gateway(...)``."""

    @pytest.fixture(scope="module")
    def gateway(
        shared_nats: EmbeddedNats,
        engine: EngineProcess,
        projections: ProjectionsProcess,
        data_dir: Path,
    ) -> Iterator[str]:
        from tests.integration.test_gateway import ServedGateway, gateway_settings

        served_settings = gateway_settings(shared_nats.url, data_dir, **settings)
        with ServedGateway(served_settings, **(app or {})) as served:
            yield served.url

    return gateway


@pytest.fixture
async def http(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    """An HTTP client of the module's gateway."""
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as client:
        yield client


def ok(response: httpx.Response, status: int = 200) -> dict[str, Any]:
    """The answer's JSON body, once its status is ``status``."""
    assert response.status_code == status, response.text
    body: dict[str, Any] = response.json()
    return body


async def play_tables(
    gateway: str,
    tables: Sequence[Mapping[str, Any]],
    tokens: Mapping[tuple[str, int], str] | None = None,
    api_key: str | None = None,
) -> list[Any]:
    """Bots in every seat of ``tables`` (a round's, as ``POST …/rounds`` answered), each with
    its seat's token (``tokens`` replaces some: a substitute's), read as the platform of
    ``api_key``; the games' outcomes."""
    from services.bots.runner import play_game
    from services.bots.strategy import Bot
    from services.client import SpadesClient

    replaced = tokens or {}
    async with SpadesClient(gateway, api_key=api_key) as client:
        return list(
            await asyncio.gather(
                *(
                    play_game(
                        client,
                        table["game_id"],
                        {
                            seat["seat"]: replaced.get(
                                (table["game_id"], seat["seat"]), seat["token"]
                            )
                            for seat in table["seats"]
                        },
                        Bot,
                    )
                    for table in tables
                )
            )
        )
