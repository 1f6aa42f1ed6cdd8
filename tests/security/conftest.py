"""The stack every attack is tried on: the session's nats-server, an engine process and the
projection workers (once per module), and a gateway under uvicorn with two platforms' keys,
``acme`` (two keys, as in a rotation) and ``rival``. Tests that need other settings (tight rate
limits, short caps, a second gateway) serve their own on the same engine."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx
import pytest

from services.runtime.nats_server import EmbeddedNats
from tests.integration import stack
from tests.integration.conftest import shared_nats
from tests.integration.support import EngineProcess, ProjectionsProcess
from tests.integration.test_gateway import ServedGateway, gateway_settings
from tests.security.tenants import KEYS

__all__ = ["shared_nats"]

engine = stack.engine
data_dir = stack.data_dir
projections = stack.projections
house = stack.house


@pytest.fixture(scope="module")
def gateway(
    shared_nats: EmbeddedNats,
    engine: EngineProcess,
    projections: ProjectionsProcess,
    data_dir: Path,
) -> Iterator[str]:
    settings = gateway_settings(shared_nats.url, data_dir, api_keys=KEYS)
    with ServedGateway(settings, min_version_wait_s=5.0) as served:
        yield served.url


@pytest.fixture
async def http(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as client:
        yield client
