"""The stack every attack is tried on: the session's nats-server, an engine process and the
projection workers (once per module), and a gateway under uvicorn with two platforms' keys,
``acme`` (two keys, as in a rotation) and ``rival``. Tests that need other settings (tight rate
limits, short caps, a second gateway) serve their own on the same engine."""

from __future__ import annotations

from collections.abc import AsyncIterator

import httpx
import pytest

from tests.integration import stack
from tests.integration.conftest import shared_nats
from tests.security.tenants import KEYS

__all__ = ["shared_nats"]

engine = stack.engine
data_dir = stack.data_dir
projections = stack.projections
house = stack.house


gateway = stack.served_gateway({"min_version_wait_s": 5.0}, api_keys=KEYS)


@pytest.fixture
async def http(gateway: str) -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(base_url=gateway, timeout=30) as client:
        yield client
