"""Where the gateway reads hands, scoreboards and game lists: the :class:`ReadModels` interface,
answered by the projection workers' read models (:class:`ProjectionReadModels`).

They are eventually consistent: a client that needs its own write reads with
``?min_version=`` (the version its action returned), which waits until the models have it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import msgspec

from contracts.answers import GameList, GameSummary, Scoreboard
from domain.records import HandRecord
from domain.state import Status
from services.integrity.signals import HandFacts
from services.store import queries
from services.store.database import Store

GAME_CURSOR_PATTERN = queries.GAME_CURSOR_PATTERN
"""What a cursor of the game list looks like; any such text is a place in the list."""


class GameQuery(msgspec.Struct, frozen=True, kw_only=True):
    status: Status | None = None
    player: str | None = None
    league: str | None = None
    cursor: str | None = None
    """The last game id of the previous page."""
    limit: int = 50
    platform: str | None = None
    """Only this platform's games."""
    visibility: str | None = None
    """Only games of this visibility."""


class PlayerRecord(msgspec.Struct, frozen=True, kw_only=True):
    """A player's row of a league's standings (:mod:`services.store.ratings`)."""

    player: str
    points: int
    wins: int
    games: int
    forfeits: int = 0
    mu: float
    sigma: float
    ordinal: float


class LeagueStandings(msgspec.Struct, frozen=True):
    version: int
    """How many of the league's games the rows count."""
    players: list[PlayerRecord]
    counted: frozenset[str] = frozenset()
    """Which of the games asked about the rows count (a voided table's, say)."""


class InvalidCursor(ValueError):
    """A ``cursor`` that no page of the list handed out."""


class ReadModels(Protocol):
    """What the gateway asks of the read side. ``None`` means there is no such game."""

    async def list_games(self, query: GameQuery) -> GameList:
        """One page of summaries; raises :class:`InvalidCursor` for a cursor it never gave."""
        ...

    async def scoreboard(self, game_id: str) -> Scoreboard | None: ...

    async def hand_records(self, game_id: str) -> list[HandRecord] | None: ...

    async def hand_record(self, game_id: str, hand: int) -> HandRecord | None: ...

    async def hands_of(self, game_ids: Sequence[str]) -> dict[str, list[HandRecord]]:
        """The finished hands of each of ``game_ids``, by game, in one read (none for a game
        with none)."""
        ...

    async def wait_for_version(self, game_id: str, version: int, timeout_s: float) -> bool:
        """Wait until the game's version ``version`` is visible; False if it was not in time."""
        ...

    async def game_summaries(self, game_ids: list[str]) -> dict[str, GameSummary]:
        """The summaries of those of ``game_ids`` the game list has, by id."""
        ...

    async def league_standings(self, league_id: str, among: Sequence[str] = ()) -> LeagueStandings:
        """What the standings hold of a league (nothing for a league no game of which ended),
        and which of the games ``among`` they count."""
        ...

    async def wait_for_league_version(self, league_id: str, version: int, timeout_s: float) -> bool:
        """Wait until the standings count ``version`` of the league's games."""
        ...

    async def games_going_on(self, platform: str | None) -> int:
        """How many of the platform's games are not finished, as the game list knows."""
        ...

    async def league_hand_facts(self, league_id: str) -> list[HandFacts]:
        """What the integrity model holds of the league's finished hands (no card)."""
        ...


def _plain(row: Mapping[str, Any]) -> dict[str, Any]:
    """A database row's mapping with plain ``str`` keys (SQLAlchemy hands out ``quoted_name``)."""
    return {str(key): value for key, value in row.items()}


class ProjectionReadModels:
    """The read models the projection workers keep (:mod:`services.store.queries`)."""

    def __init__(self, store: Store) -> None:
        self._engine = store.engine
        self._in_loop = store.reading_in_loop

    async def list_games(self, query: GameQuery) -> GameList:
        try:
            rows, cursor = await queries.list_games(
                self._engine,
                query.status,
                query.player,
                query.league,
                query.cursor,
                query.limit,
                platform=query.platform,
                visibility=query.visibility,
            )
        except queries.InvalidCursor:
            raise InvalidCursor("not a cursor this list gave") from None
        return GameList([msgspec.convert(_plain(row), GameSummary) for row in rows], cursor)

    async def scoreboard(self, game_id: str) -> Scoreboard | None:
        board = await queries.scoreboard(self._engine, game_id, in_loop=self._in_loop)
        return msgspec.convert(_plain(board), Scoreboard) if board is not None else None

    async def hand_records(self, game_id: str) -> list[HandRecord] | None:
        if await queries.scoreboard(self._engine, game_id, in_loop=self._in_loop) is None:
            return None
        records = await queries.hand_records(self._engine, game_id, in_loop=self._in_loop)
        return [msgspec.convert(record, HandRecord) for record in records]

    async def hand_record(self, game_id: str, hand: int) -> HandRecord | None:
        record = await queries.hand_record(self._engine, game_id, hand, in_loop=self._in_loop)
        return msgspec.convert(record, HandRecord) if record is not None else None

    async def hands_of(self, game_ids: Sequence[str]) -> dict[str, list[HandRecord]]:
        found = await queries.hands_of(self._engine, game_ids)
        return {game_id: msgspec.convert(r, list[HandRecord]) for game_id, r in found.items()}

    async def wait_for_version(self, game_id: str, version: int, timeout_s: float) -> bool:
        return await queries.wait_for_version(
            self._engine, game_id, version, timeout_s, in_loop=self._in_loop
        )

    async def game_summaries(self, game_ids: list[str]) -> dict[str, GameSummary]:
        found = await queries.game_summaries(self._engine, game_ids)
        return {game_id: msgspec.convert(row, GameSummary) for game_id, row in found.items()}

    async def league_standings(self, league_id: str, among: Sequence[str] = ()) -> LeagueStandings:
        version, rows, counted = await queries.league_standings(self._engine, league_id, among)
        records = [msgspec.convert(_plain(r), PlayerRecord) for r in rows]
        return LeagueStandings(version, records, frozenset(counted))

    async def wait_for_league_version(self, league_id: str, version: int, timeout_s: float) -> bool:
        return await queries.wait_for_league_version(self._engine, league_id, version, timeout_s)

    async def games_going_on(self, platform: str | None) -> int:
        return await queries.games_going_on(self._engine, platform)

    async def league_hand_facts(self, league_id: str) -> list[HandFacts]:
        stored = await queries.league_hand_facts(self._engine, league_id)
        return msgspec.convert(stored, list[HandFacts])
