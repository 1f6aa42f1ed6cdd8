"""What the HTTP gateway reads: JSON-ready dicts in docs/api.md's field names.

Every function takes the read-model engine (``open_store(url).engine``, one per gateway
process). The models are eventually consistent with the stream; a client that must see its own
write passes the version its command returned, and the gateway waits with
:func:`wait_for_version` before reading.
"""

from __future__ import annotations

import asyncio
import functools
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from services.store import schema as tables

MAX_LIMIT = 200
GAME_VERSIONS: dict[str, sa.Column[int]] = {
    "games": tables.games.c.version,
    "scoreboard": tables.scoreboards.c.version,
    "hands": tables.hand_progress.c.version,
    "players": tables.player_games.c.version,
}
"""Per model, the column holding the last game version it applied."""


@dataclass(frozen=True, slots=True)
class _Steps:
    """The first and the longest step between two looks of a read waiting for its
    ``min_version``: the longest is at most what the wait adds to the projection's own lag."""

    first_s: float
    longest_s: float


_STEPS = _Steps(0.005, 0.02)
"""Through the engine, where a look costs about half a millisecond of CPU (aiosqlite's thread
hand-offs, or PostgreSQL's round trip)."""
_STEPS_IN_LOOP = _Steps(0.001, 0.005)
"""On SQLite in the loop's thread, where a look costs a tenth of that: shorter steps, and a
read sees its version sooner."""


class InvalidCursor(ValueError):
    """A ``cursor`` that no page of :func:`list_games` handed out."""


async def list_games(
    engine: AsyncEngine,
    status: str | None = None,
    player: str | None = None,
    league: str | None = None,
    cursor: str | None = None,
    limit: int = 50,
    *,
    platform: str | None = None,
    visibility: str | None = None,
) -> tuple[list[dict[str, Any]], str | None]:
    """Game summaries, newest first, and the cursor of the next page (None on the last).

    Filters combine (and); ``player`` matches a name at any seat; ``platform`` and
    ``visibility`` keep the games of that platform, or of that visibility (what the gateway
    shows a platform, and an anonymous caller). A summary's ``players`` holds the name at each
    seat (null while the seat is free).
    """
    if not 1 <= limit <= MAX_LIMIT:
        raise ValueError(f"limit must be 1 to {MAX_LIMIT}, not {limit}")
    games, seats = tables.games, tables.game_players
    query = sa.select(games).order_by(games.c.created_at.desc(), games.c.game_id.desc())
    if platform is not None:
        query = query.where(games.c.platform == platform)
    if visibility is not None:
        query = query.where(games.c.visibility == visibility)
    if status is not None:
        query = query.where(games.c.status == status)
    if league is not None:
        query = query.where(games.c.league == league)
    if player is not None:
        seated = sa.select(seats.c.game_id).where(seats.c.player == player)
        query = query.where(games.c.game_id.in_(seated))
    if cursor is not None:
        query = query.where(sa.tuple_(games.c.created_at, games.c.game_id) < _read_cursor(cursor))
    async with engine.connect() as conn:
        rows = (await conn.execute(query.limit(limit + 1))).all()
    page = [_summary(row) for row in rows[:limit]]
    next_cursor = _cursor(rows[limit - 1]) if len(rows) > limit else None
    return page, next_cursor


InLoop = Callable[[], sa.Connection | None]
"""Where a small read can run in the event loop's thread: ``Store.reading_in_loop`` (a
connection on SQLite, None on PostgreSQL)."""


async def _rows(
    engine: AsyncEngine, in_loop: InLoop | None, statement: sa.Select[Any], parameters: Any
) -> Sequence[sa.Row[Any]]:
    """The rows of a small read: in the loop's thread where ``in_loop`` gives a connection
    (each statement through aiosqlite's thread is several hand-offs there and back, which cost
    more than SQLite's work), else (or when SQLite would have made it wait) through
    ``engine``."""
    conn = in_loop() if in_loop is not None else None
    if conn is not None:
        try:
            with conn:
                rows: Sequence[sa.Row[Any]] = conn.execute(statement, parameters).all()
            return rows
        except sa.exc.OperationalError as error:
            if "locked" not in str(error) and "busy" not in str(error):
                raise
    async with engine.connect() as reading:
        read: Sequence[sa.Row[Any]] = (await reading.execute(statement, parameters)).all()
    return read


async def scoreboard(
    engine: AsyncEngine, game_id: str, *, in_loop: InLoop | None = None
) -> dict[str, Any] | None:
    """docs/api.md's scoreboard (with ``game_id`` and ``version``), or None for an unknown game."""
    rows = await _rows(engine, in_loop, _scoreboard_query(), {"game_id": game_id})
    return rows[0]._asdict() if rows else None


@functools.cache
def _scoreboard_query() -> sa.Select[Any]:
    boards = tables.scoreboards
    return sa.select(boards).where(boards.c.game_id == sa.bindparam("game_id", type_=sa.String))


async def hand_records(
    engine: AsyncEngine, game_id: str, *, in_loop: InLoop | None = None
) -> list[dict[str, Any]]:
    """The records of the game's finished hands, in order (none for an unknown game)."""
    records = tables.hand_records
    query = sa.select(records.c.record).where(records.c.game_id == game_id).order_by(records.c.hand)
    return [row[0] for row in await _rows(engine, in_loop, query, None)]


HANDS_BATCH = 500
"""Games a read of many games' hands names at once (SQLite binds at most 999 values in older
builds)."""


async def hands_of(engine: AsyncEngine, game_ids: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    """The records of the finished hands of each of ``game_ids`` (a duplicate league's tables),
    in hand order, by game: one read per :data:`HANDS_BATCH` games, not one per game; a game
    with no finished hand has none."""
    records = tables.hand_records
    found: dict[str, list[dict[str, Any]]] = {game_id: [] for game_id in game_ids}
    async with engine.connect() as conn:
        for start in range(0, len(game_ids), HANDS_BATCH):
            batch = list(game_ids[start : start + HANDS_BATCH])
            query = (
                sa.select(records.c.game_id, records.c.record)
                .where(records.c.game_id.in_(batch))
                .order_by(records.c.game_id, records.c.hand)
            )
            for game_id, record in await conn.execute(query):
                found[game_id].append(record)
    return found


async def hand_record(
    engine: AsyncEngine, game_id: str, n: int, *, in_loop: InLoop | None = None
) -> dict[str, Any] | None:
    """The record of hand ``n`` (1-based) once it is finished; None before, or never."""
    records = tables.hand_records
    query = sa.select(records.c.record).where(
        (records.c.game_id == game_id) & (records.c.hand == n)
    )
    rows = await _rows(engine, in_loop, query, None)  # one at most: the primary key
    record: dict[str, Any] | None = rows[0][0] if rows else None
    return record


async def player_stats(engine: AsyncEngine, name: str) -> dict[str, Any] | None:
    """A player's counters over every game they sat in, or None for a name never seated."""
    counters = tables.players
    async with engine.connect() as conn:
        result = await conn.execute(sa.select(counters).where(counters.c.player == name))
        row = result.one_or_none()
    return None if row is None else row._asdict()


async def model_version(
    engine: AsyncEngine, game_id: str, model: str | None = None, *, in_loop: InLoop | None = None
) -> int:
    """The game version that ``model`` has applied (with None: that every model has applied,
    the least of them); 0 when the game is not there yet."""
    (versions,) = await _rows(engine, in_loop, _version_query(model), {"game_id": game_id})
    return min(int(version) for version in versions)


@functools.cache
def _version_query(model: str | None) -> sa.Select[Any]:
    """:func:`model_version`'s query, built once per model (``?min_version=`` polls it)."""
    columns = GAME_VERSIONS if model is None else {model: GAME_VERSIONS[model]}
    game_id = sa.bindparam("game_id", type_=sa.String)
    return sa.select(
        *(
            sa.func.coalesce(
                sa.select(column).where(column.table.c.game_id == game_id).scalar_subquery(), 0
            )
            for column in columns.values()
        )
    )


async def wait_for_version(
    engine: AsyncEngine,
    game_id: str,
    version: int,
    timeout: float,  # noqa: ASYNC109 (the gateway's contract: seconds, and a bool back)
    model: str | None = None,
    *,
    in_loop: InLoop | None = None,
) -> bool:
    """Wait until :func:`model_version` reaches ``version``; False if ``timeout`` (seconds)
    passes first. For ``?min_version=``: a client reads its own writes."""
    steps = _STEPS_IN_LOOP if in_loop is not None and engine.dialect.name == "sqlite" else _STEPS
    return await _wait_until(
        lambda: model_version(engine, game_id, model, in_loop=in_loop), version, timeout, steps
    )


async def _wait_until(
    reached: Callable[[], Awaitable[int]],
    version: int,
    timeout: float,  # noqa: ASYNC109 (seconds, as the callers take it)
    steps: _Steps = _STEPS,
) -> bool:
    """Poll ``reached`` (backing off) until it is at least ``version``; False on timeout."""
    deadline = time.monotonic() + timeout
    pause = steps.first_s
    while await reached() < version:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        await asyncio.sleep(min(pause, left))
        pause = min(pause * 2, steps.longest_s)
    return True


async def league_standings(
    engine: AsyncEngine, league: str, among: Sequence[str] = ()
) -> tuple[int, list[dict[str, Any]], set[str]]:
    """How many of the league's games the standings count, the rows of its players that
    have played (``points``, ``wins``, ``games``, ``mu``, ``sigma``, ``ordinal``; unordered),
    and which of the games ``among`` they count (a voided table's, say).

    The count and the rows are one statement, so they are of the same moment on either
    database; a league none of whose games has ended has no rows, and counts 0.
    """
    standings, games = tables.league_standings, tables.standing_games
    counted = (
        sa.select(sa.func.count())
        .where((games.c.league == league) & games.c.ended)
        .scalar_subquery()
    )
    query = sa.select(standings, counted.label("counted")).where(standings.c.league == league)
    async with engine.connect() as conn:
        rows = [row._asdict() for row in await conn.execute(query)]
        ended: set[str] = set()
        if among:
            found = await conn.execute(
                sa.select(games.c.game_id).where(games.c.game_id.in_(list(among)) & games.c.ended)
            )
            ended = set(found.scalars())
    counts = [int(row.pop("counted")) for row in rows]
    return (counts[0] if counts else 0), rows, ended


async def league_hand_facts(engine: AsyncEngine, league: str) -> list[Any]:
    """The integrity model's facts of every finished hand of the league's tables (as stored:
    JSON, no card), in game and hand order."""
    hands = tables.integrity_hands
    query = (
        sa.select(hands.c.facts)
        .where(hands.c.league == league)
        .order_by(hands.c.game_id, hands.c.hand)
    )
    async with engine.connect() as conn:
        return list((await conn.execute(query)).scalars())


async def league_version(engine: AsyncEngine, league: str) -> int:
    """How many of the league's games the standings count (its version for ``min_version``)."""
    games = tables.standing_games
    query = sa.select(sa.func.count()).where((games.c.league == league) & games.c.ended)
    async with engine.connect() as conn:
        return int(await conn.scalar(query) or 0)


async def wait_for_league_version(
    engine: AsyncEngine,
    league: str,
    version: int,
    timeout: float,  # noqa: ASYNC109 (the gateway's contract: seconds, and a bool back)
) -> bool:
    """Wait until the standings count ``version`` of the league's games; False on timeout."""
    return await _wait_until(lambda: league_version(engine, league), version, timeout)


GOING_ON = ("waiting", "playing")
"""The statuses of a game not finished."""


async def games_going_on(engine: AsyncEngine, platform: str | None) -> int:
    """How many of the platform's games are not finished (``None``: those of no platform),
    as far as the game list has heard (through its status index: the games going on, not the
    history)."""
    games = tables.games
    owner = games.c.platform.is_(None) if platform is None else games.c.platform == platform
    query = sa.select(sa.func.count()).select_from(games).where(games.c.status.in_(GOING_ON), owner)
    async with engine.connect() as conn:
        return int(await conn.scalar(query) or 0)


async def game_summaries(engine: AsyncEngine, game_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The game list's summaries of those of ``game_ids`` it has, by game id."""
    games = tables.games
    query = sa.select(games).where(games.c.game_id.in_(game_ids))
    async with engine.connect() as conn:
        return {row.game_id: _summary(row) for row in await conn.execute(query)}


def _summary(row: sa.Row[Any]) -> dict[str, Any]:
    return {
        "game_id": row.game_id,
        "status": row.status,
        "preset": row.preset,
        "league": row.league,
        "players": row.players,
        "scores": row.scores,
        "bags": row.bags,
        "winners": row.winners,
        "hands_played": row.hands_played,
        "version": row.version,
        "created_at": row.created_at,
        "updated_at": row.updated_at,
    }


GAME_CURSOR_PATTERN = (
    r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}(?:\.[0-9]{1,6})?Z"
    r"~[A-Za-z0-9_-]{1,64}$"
)
"""A page's cursor: the creation time and id of the last game it showed (``TIME~ID``). Any
such text is a place in the list (the games created before it), so the API's schema states
exactly which cursors are answered."""
_GAME_CURSOR = re.compile(GAME_CURSOR_PATTERN)


def _cursor(row: sa.Row[Any]) -> str:
    return f"{row.created_at}~{row.game_id}"


def _read_cursor(cursor: str) -> tuple[str, str]:
    if _GAME_CURSOR.fullmatch(cursor) is None:
        raise InvalidCursor(f"cursor {cursor[:80]!r} was not handed out by this list")
    created_at, _, game_id = cursor.partition("~")
    return created_at, game_id
