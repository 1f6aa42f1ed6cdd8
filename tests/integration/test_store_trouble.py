"""What the stores' callers wait out: PostgreSQL rolling a transaction back for a deadlock with
another is store trouble, tried again (two webhooks processes' recorders met one, and the
deliveries whose outcomes were dropped were sent again); a statement that fails on its data is
not."""

from __future__ import annotations

import os

import pytest
import sqlalchemy as sa
from sqlalchemy.ext.asyncio import create_async_engine

from services.store.database import is_store_trouble

pytestmark = [pytest.mark.integration, pytest.mark.postgres]


async def _raised(sqlstate: str) -> BaseException:
    base = os.environ.get("SPADES_TEST_POSTGRES_URL")
    if not base:
        pytest.skip("SPADES_TEST_POSTGRES_URL is not set: no PostgreSQL to raise its errors")
    engine = create_async_engine(base.replace("postgresql://", "postgresql+asyncpg://", 1))
    statement = f"DO $$ BEGIN RAISE EXCEPTION USING ERRCODE = '{sqlstate}'; END $$"
    try:
        async with engine.connect() as conn:
            await conn.execute(sa.text(statement))
    except sa.exc.DBAPIError as error:
        return error
    finally:
        await engine.dispose()
    raise AssertionError(f"PostgreSQL raised nothing for {sqlstate}")


@pytest.mark.parametrize("sqlstate", ["40P01", "40001"])
async def test_a_transaction_rolled_back_for_the_others_is_store_trouble(sqlstate: str) -> None:
    assert is_store_trouble(await _raised(sqlstate))


@pytest.mark.parametrize("sqlstate", ["23505", "22P02"])
async def test_a_statement_failing_on_its_data_is_not(sqlstate: str) -> None:
    assert not is_store_trouble(await _raised(sqlstate))
