"""The ``integrity`` read model: per finished hand of a league's table, what the collusion
signals read of it (:class:`services.integrity.signals.HandFacts`), so that a league's report
(``GET /v1/leagues/{id}/integrity``) is computed from stored facts, never from the stream.

The facts are made when a hand is scored, from its record (:func:`~services.integrity.signals.
hand_facts`): the chances to take are read from the cards each seat held, but what is stored
names no card. Making the record needs the hand's events from its deal on, which hold its
secret cards: they are kept as the hands model keeps them (:class:`~.hands.KeepsHandsSealed`:
sealed under the service's key, bound to the game), and only for a league's tables. Of every
other game only the version is kept, so that, as in every model, a commit out of order is
refused rather than folded.

Who sits where is followed from ``seat_taken`` alone, as the standings do: a substitute plays
for the seat's original player, whose record the hand counts in.

Decision times, for the ``decision_times`` signal, come from the commits' own times: a seat's
move (a bid, a pass, a discard, a draw, a card) took the time since the game's commit before
it. A move the service made (a timeout, a seat away) is no decision of the player's and is
left out. The times of the hand in progress are kept with the game (``timing``), so that a
batch that ends mid-hand loses none; a rebuild reads the same commits and keeps the same.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import msgspec

from contracts.wire import Commit, commit_seconds
from domain.events import (
    AnyEvent,
    BidPlaced,
    CardDrawn,
    CardPlayed,
    CardsDiscarded,
    CardsPassed,
    GameCreated,
    SeatAway,
    SeatReturned,
    SeatTaken,
    TimedOut,
)
from domain.league import is_table_game
from domain.records import HandRecord
from domain.rules import Rules
from services.integrity.signals import HandFacts, SeatedHand, hand_facts
from services.projections.hands import RECORDED, HandProgress, KeepsHandsSealed
from services.projections.model import PerGameModel
from services.store.database import Statements, fetch, upsert, where_in
from services.store.schema import integrity_games, integrity_hands

MOVES = (BidPlaced, CardsPassed, CardsDiscarded, CardDrawn, CardPlayed)
"""The events that are a seat's decision."""


class Pacing(msgspec.Struct, kw_only=True):
    """Each seat's decision times in the hand in progress, and what reading them needs."""

    last: float | None
    """The time of the game's last commit (seconds since the epoch)."""
    seconds: list[list[float]]
    away: list[bool]

    @classmethod
    def new(cls, seats: int) -> Pacing:
        return cls(last=None, seconds=[[] for _ in range(seats)], away=[False] * seats)

    def fold(self, commit: Commit) -> None:
        """Count the commit's move, if it is a seat's own, as that seat's decision."""
        at = commit_seconds(commit.time)
        seat = _mover(commit.events)
        played_for = any(isinstance(event, TimedOut) for event in commit.events)
        if seat is not None and self.last is not None and not played_for and not self.away[seat]:
            self.seconds[seat].append(round(at - self.last, 3))
        for event in commit.events:
            if isinstance(event, SeatAway | SeatReturned):
                self.away[event.seat] = isinstance(event, SeatAway)
        self.last = at

    def hand_over(self) -> list[list[float]]:
        """The hand's times, and a fresh start for the next hand."""
        done, self.seconds = self.seconds, [[] for _ in self.seconds]
        return done


def _mover(events: Sequence[AnyEvent]) -> int | None:
    return next((event.seat for event in events if isinstance(event, MOVES)), None)


@dataclass(slots=True)
class IntegrityGame:
    """What the model keeps of one game (a league's table; of any other, the version)."""

    game_id: str
    version: int = 0
    league: str | None = None
    rules: Rules | None = None
    players: list[str | None] = field(default_factory=list)
    progress: HandProgress | None = None
    """The hand in progress (a league's table only)."""
    timing: Pacing | None = None
    """The decision times of the hand in progress (a league's table only)."""
    facts: list[HandFacts] = field(default_factory=list)
    """Facts of the hands finished since the game was loaded (rows to write)."""

    def fold(self, commit: Commit) -> None:
        if self.timing is not None:
            self.timing.fold(commit)
        for event in commit.events:
            if isinstance(event, GameCreated):
                self._created(event)
            elif self.progress is None:
                continue
            elif isinstance(event, SeatTaken):
                self.players[event.seat] = event.player
            elif isinstance(event, RECORDED):
                self.progress.feed(event)
                for record in self.progress.records:
                    seconds = self.timing.hand_over() if self.timing is not None else []
                    self.facts.append(hand_facts(self._seated(record), seconds))
                self.progress.records.clear()

    def _created(self, event: GameCreated) -> None:
        league = event.league
        if league is not None and is_table_game(league, event.game_id):
            self.league, self.rules = league, event.rules
            self.players = [None] * event.rules.players
            self.progress = HandProgress(event.game_id, 0)
            self.timing = Pacing.new(event.rules.players)

    def _seated(self, record: HandRecord) -> SeatedHand:
        assert self.rules is not None
        players = tuple(player for player in self.players if player is not None)
        if len(players) != len(self.players):
            raise ValueError(f"game {self.game_id} scored a hand with an empty seat")
        return SeatedHand(game_id=self.game_id, rules=self.rules, players=players, record=record)


class IntegrityModel(KeepsHandsSealed, PerGameModel[IntegrityGame]):
    name = "integrity"
    tables = (integrity_games, integrity_hands)
    sealed_column = integrity_games.c.pending

    async def load(self, conn: Statements, game_ids: Sequence[str]) -> dict[str, IntegrityGame]:
        rows = await fetch(conn, *where_in(integrity_games, "game_id", game_ids))
        games: dict[str, IntegrityGame] = {}
        for game_id, version, league, rules, players, pending, timing in rows:
            game = games[game_id] = IntegrityGame(game_id, version)
            if league is not None:
                game.league, game.players = league, players
                game.rules = msgspec.convert(rules, Rules)
                game.progress = self.opened(game_id, version, pending)
                game.timing = msgspec.convert(timing, Pacing)
        return games

    def fold(self, state: IntegrityGame | None, commit: Commit) -> IntegrityGame:
        if state is None:
            if not commit.events or not isinstance(commit.events[0], GameCreated):
                raise ValueError(f"game {commit.game_id} does not begin with game_created")
            state = IntegrityGame(commit.game_id)
        state.fold(commit)
        return state

    async def save(self, conn: Statements, states: dict[str, IntegrityGame]) -> None:
        progress = []
        for game in states.values():
            if game.progress is not None:
                game.progress.version = game.version
                progress.append(game.progress)
        pending = self.sealed(progress)
        games = [
            {
                "game_id": game.game_id,
                "version": game.version,
                "league": game.league,
                "rules": game.rules,
                "players": game.players,
                "pending": pending.get(game.game_id),
                "timing": game.timing,
            }
            for game in states.values()
        ]
        hands = [
            {"game_id": game.game_id, "hand": facts.hand, "league": game.league, "facts": facts}
            for game in states.values()
            for facts in game.facts
        ]
        await upsert(conn, integrity_games, games, keys=["game_id"])
        await upsert(conn, integrity_hands, hands, keys=["game_id", "hand"])
