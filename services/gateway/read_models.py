"""Where the gateway reads hands, scoreboards and game lists: the :class:`ReadModels` interface.

The projection workers (``services/projections``) will keep these as read models; until they
do, :class:`StreamReadModels` answers from the event stream itself, folding each game's events
on demand. Switching is one change in :func:`services.gateway.app.create_app`.
"""

from __future__ import annotations

import asyncio
from typing import Protocol

import msgspec
from nats.aio.client import Client
from nats.js import JetStreamContext

from contracts.wire import GAME_ID, GAME_SUBJECTS, GAMES_STREAM, game_subject
from domain.events import AnyEvent, GameCreated, HandScored
from domain.game import fold
from domain.records import HandRecord, hand_records
from domain.state import Game, Status
from domain.table import table_for
from services.runtime.game_cache import GameCache
from services.runtime.game_stream import GameStream


class HandScore(msgspec.Struct, frozen=True):
    hand: int
    points: list[int]
    scores: list[int]
    bags: list[int]


class Scoreboard(msgspec.Struct, frozen=True, kw_only=True):
    units: list[list[int]]
    hands: list[HandScore]
    scores: list[int]
    bags: list[int]
    game_over: bool
    winners: list[int]


class GameSummary(msgspec.Struct, frozen=True, kw_only=True):
    game_id: str
    version: int
    status: Status
    preset: str
    league: str | None
    players: list[str | None]
    hand_number: int
    scores: list[int]
    winners: list[int]


class GameQuery(msgspec.Struct, frozen=True, kw_only=True):
    status: Status | None = None
    player: str | None = None
    league: str | None = None
    cursor: str | None = None
    """The last game id of the previous page."""
    limit: int = 50


class GamePage(msgspec.Struct, frozen=True):
    games: list[GameSummary]
    next_cursor: str | None


class InvalidCursor(ValueError):
    """A ``cursor`` that no page of the list handed out."""


class ReadModels(Protocol):
    """What the gateway asks of the read side. ``None`` means there is no such game."""

    async def list_games(self, query: GameQuery) -> GamePage:
        """One page of summaries; raises :class:`InvalidCursor` for a cursor it never gave."""
        ...

    async def scoreboard(self, game_id: str) -> Scoreboard | None: ...

    async def hand_records(self, game_id: str) -> list[HandRecord] | None: ...

    async def hand_record(self, game_id: str, hand: int) -> HandRecord | None: ...

    async def wait_for_version(self, game_id: str, version: int, timeout_s: float) -> bool:
        """Wait until the game's version ``version`` is visible; False if it was not in time."""
        ...


def scoreboard_of(state: Game, events: list[AnyEvent]) -> Scoreboard:
    scored = [event for event in events if isinstance(event, HandScored)]
    return Scoreboard(
        units=[list(unit) for unit in table_for(state.rules).units],
        hands=[HandScore(e.hand, list(e.points), list(e.scores), list(e.bags)) for e in scored],
        scores=list(state.scores),
        bags=list(state.bags),
        game_over=state.status == "finished",
        winners=list(state.winners),
    )


def summary_of(state: Game, league: str | None) -> GameSummary:
    hand = state.hand
    return GameSummary(
        game_id=state.game_id,
        version=state.version,
        status=state.status,
        preset=state.rules.preset,
        league=league,
        players=[player.name if player else None for player in state.players],
        hand_number=hand.number if hand else state.hands_played,
        scores=list(state.scores),
        winners=list(state.winners),
    )


def _matches(query: GameQuery, summary: GameSummary) -> bool:
    return (
        (query.status is None or summary.status == query.status)
        and (query.player is None or query.player in summary.players)
        and (query.league is None or summary.league == query.league)
    )


class StreamReadModels:
    """The read models answered from the event stream (until the projections take over)."""

    def __init__(
        self, connection: Client, js: JetStreamContext, stream: GameStream, games: GameCache
    ) -> None:
        self._connection = connection
        self._js = js
        self._stream = stream
        self._games = games
        self._leagues: dict[str, str | None] = {}

    async def _events(self, game_id: str) -> list[AnyEvent]:
        commits = await self._stream.read(game_id)
        return [event for stored in commits for event in stored.commit.events]

    async def hand_records(self, game_id: str) -> list[HandRecord] | None:
        events = await self._events(game_id)
        return hand_records(events) if events else None

    async def hand_record(self, game_id: str, hand: int) -> HandRecord | None:
        records = await self.hand_records(game_id) or []
        return next((record for record in records if record.hand == hand), None)

    async def scoreboard(self, game_id: str) -> Scoreboard | None:
        events = await self._events(game_id)
        state = fold(events)
        return scoreboard_of(state, events) if state is not None else None

    async def wait_for_version(self, game_id: str, version: int, timeout_s: float) -> bool:
        """The stream is always current: wait only for a version not committed yet, woken by
        each commit published on the game's subject."""
        commits = await self._connection.subscribe(game_subject(game_id))
        try:
            async with asyncio.timeout(timeout_s):
                while (await self._games.latest(game_id)).version < version:
                    await commits.next_msg(timeout=timeout_s)
        except TimeoutError:
            return False
        finally:
            await commits.unsubscribe()
        return True

    async def list_games(self, query: GameQuery) -> GamePage:
        """Scans the games in id order from the cursor (the last id of the page before): fine
        for now, and the projection's job later."""
        if query.cursor is not None and not GAME_ID.match(query.cursor):
            raise InvalidCursor("not a cursor this list gave")
        ids = await self._game_ids()
        found: list[GameSummary] = []
        for game_id in ids:
            if query.cursor is not None and game_id <= query.cursor:
                continue
            state = (await self._games.latest(game_id)).state
            if state is None:
                continue
            summary = summary_of(state, await self._league(game_id))
            if _matches(query, summary):
                found.append(summary)
                if len(found) == query.limit:
                    more = game_id != ids[-1]
                    return GamePage(found, game_id if more else None)
        return GamePage(found, None)

    async def _game_ids(self) -> list[str]:
        info = await self._js.stream_info(GAMES_STREAM, subjects_filter=GAME_SUBJECTS)
        prefix = game_subject("")
        return sorted(subject.removeprefix(prefix) for subject in info.state.subjects or {})

    async def _league(self, game_id: str) -> str | None:
        """The league named at creation (not part of the folded state); kept once read."""
        if game_id not in self._leagues:
            for event in await self._events(game_id):
                if isinstance(event, GameCreated):
                    self._leagues[game_id] = event.league
                    break
        return self._leagues.get(game_id)
