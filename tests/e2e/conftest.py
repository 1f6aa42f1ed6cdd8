"""One real stack for the session (``spades up`` on a free port, data in a temporary directory);
tests reach it only over HTTP."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from services.client import SpadesClient
from tests.e2e.stack import Stack

PLATFORM_KEY = "e2e-platform-key"


@pytest.fixture(scope="session")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    """The running stack; stopping it must leave no child process behind."""
    running = Stack(tmp_path_factory.mktemp("stack"), api_keys=PLATFORM_KEY)
    running.start()
    yield running
    status, left = running.terminate()
    assert status == 0, f"`spades up` exited with {status}:\n{running.log_tail()}"
    assert not left, f"still running after SIGTERM: {left}"


@pytest.fixture
async def client(stack: Stack) -> AsyncIterator[SpadesClient]:
    """A client holding the platform key."""
    async with SpadesClient(stack.base_url, api_key=stack.api_key) as spades:
        yield spades


@pytest.fixture
def data_dir(tmp_path: Path) -> Path:
    return tmp_path / "data"
