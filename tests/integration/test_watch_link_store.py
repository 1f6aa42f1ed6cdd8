"""Watch links' revocations in the read-model database, on SQLite and PostgreSQL: each game's
and league's generation starts at 0 and moves on by one per revocation, even two at once."""

from __future__ import annotations

import asyncio

import pytest

from services.store import watch_links
from services.store.database import Store

pytest_plugins = ["tests.integration.conftest_projections"]
pytestmark = pytest.mark.integration


async def test_each_revocation_moves_its_games_generation_on_and_no_others(store: Store) -> None:
    async with store.reading() as conn:
        assert await watch_links.generation(conn, "game", "g1") == 0
    async with store.writing() as conn:
        assert await watch_links.revoke(conn, "game", "g1", 1.0) == 1
    async with store.writing() as conn:
        assert await watch_links.revoke(conn, "game", "g1", 2.0) == 2
    async with store.reading() as conn:
        assert await watch_links.generation(conn, "game", "g1") == 2
        assert await watch_links.generation(conn, "league", "g1") == 0  # a league of that id
        assert await watch_links.generation(conn, "game", "g2") == 0


async def test_two_revocations_at_once_both_count(store: Store) -> None:
    async def revoke() -> None:
        async with store.writing() as conn:
            await watch_links.revoke(conn, "league", "l1", 1.0)

    await asyncio.gather(revoke(), revoke())
    async with store.reading() as conn:
        assert await watch_links.generation(conn, "league", "l1") == 2
