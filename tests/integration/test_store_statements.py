"""The projection batches' statements (``database.fetch``, ``run``, ``upsert``): on SQLite's
in-loop connection they run on sqlite3 directly, and must store and read exactly what
SQLAlchemy's execution does (PostgreSQL takes SQLAlchemy's path)."""

from __future__ import annotations

from dataclasses import fields

import pytest
import sqlalchemy as sa

from services.projections.games import COLUMNS as GAME_COLUMNS
from services.projections.games import GameSummary
from services.projections.scoreboard import COLUMNS as SCOREBOARD_COLUMNS
from services.projections.scoreboard import Scoreboard
from services.store.database import Statements, Store, fetch, upsert, where_in
from services.store.schema import game_players, hand_progress, scoreboards

pytest_plugins = ["tests.integration.conftest_projections"]


def _board(game_id: str, over: bool) -> dict[str, object]:
    return {
        "game_id": game_id,
        "units": [[0, 2], [1, 3]],
        "hands": [{"hand": 1, "points": [61, -40], "scores": [61, -40], "bags": [1, 0]}],
        "scores": [61, -40],
        "bags": [1, 0],
        "game_over": over,
        "winners": [0] if over else [],
        "version": 7,
    }


async def _store(conn: Statements, boards: list[dict[str, object]], progress_of: str) -> None:
    """Scoreboards, and one game's hand in progress."""
    await upsert(conn, scoreboards, boards, keys=["game_id"])
    progress = {"game_id": progress_of, "version": 3, "pending": b"[]"}
    await upsert(conn, hand_progress, [progress], keys=["game_id"])


async def test_a_batch_stores_and_reads_what_sqlalchemy_does(store: Store) -> None:
    async with store.applying() as conn:  # sqlite3 directly, on SQLite
        await _store(conn, [_board("a", True), _board("b", False)], "a")
    async with store.writing() as conn:  # SQLAlchemy's execution
        await _store(conn, [_board("c", True)], "c")
    async with store.applying() as conn:
        in_batch = await fetch(conn, *where_in(scoreboards, "game_id", ["a", "b", "c"]))
        progress = await fetch(conn, *where_in(hand_progress, "game_id", ["a", "c"]))
    async with store.reading() as conn:
        read = (await conn.execute(sa.select(scoreboards).order_by(scoreboards.c.game_id))).all()
    rows = sorted(tuple(row) for row in in_batch)
    assert rows == [tuple(row) for row in read]
    assert [row[:-1] for row in rows] == [tuple(_board(g, g != "b").values())[:-1] for g in "abc"]
    assert [row[5] for row in rows] == [True, False, True]
    assert sorted(tuple(row) for row in progress) == [("a", 3, b"[]"), ("c", 3, b"[]")]
    if not store.is_postgres:
        async with store.reading() as conn:
            kinds = await conn.execute(
                sa.text("select distinct typeof(units), typeof(game_over) from scoreboards")
            )
            assert kinds.all() == [("text", "integer")]


async def test_a_failing_statement_raises_sqlalchemys_error(store: Store) -> None:
    """The worker tells a database in trouble from a bad row by SQLAlchemy's error classes."""
    row = {"game_id": "a", "seat": 0, "player": None}
    async with store.applying() as conn:
        with pytest.raises(sa.exc.IntegrityError):
            await upsert(conn, game_players, [row], keys=["game_id", "seat"])


def test_the_models_states_take_their_rows_in_column_order() -> None:
    """``load`` builds them from the rows' values by position."""
    assert tuple(f.name for f in fields(GameSummary))[: len(GAME_COLUMNS)] == GAME_COLUMNS
    assert tuple(f.name for f in fields(Scoreboard)) == SCOREBOARD_COLUMNS
