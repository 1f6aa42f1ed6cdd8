"""Games in memory (see :mod:`services.runtime.aggregate_cache`)."""

from __future__ import annotations

from typing import Any

from contracts.wire import Commit, commit_seconds
from domain.game import evolve
from domain.state import Game
from domain.timing import stamped
from services.runtime.aggregate_cache import AggregateCache, Answered, Loaded
from services.runtime.event_store import Stored
from services.runtime.game_stream import GameStore

__all__ = ["CAPACITY", "Answered", "GameCache", "LoadedGame"]

CAPACITY = 2000
"""Games a process holds in memory at most (the engine and the gateway each): the least
recently used goes first, and comes back by replaying its stream when it is asked for again.
What it bounds is measured by ``spades bench memory``."""


class LoadedGame(Loaded[Game, Commit]):
    """A game as a process holds it."""

    @staticmethod
    def fold(state: Game | None, event: Any) -> Game:
        return evolve(state, event)

    def apply(self, stored: Stored[Commit]) -> None:
        """Fold the commit, then run a clocked game's clocks to the commit's time."""
        before = self.state
        super().apply(stored)
        after = self.state
        commit = stored.commit
        if after is not None and after.timing is not None and commit.events:
            self.state = stamped(before, commit.events, after, commit_seconds(commit.time))

    @property
    def game_id(self) -> str:
        return self.key


class GameCache(AggregateCache[LoadedGame]):
    """Games in memory; a cold game is rebuilt by replaying its subject."""

    def __init__(self, stream: GameStore, capacity: int = CAPACITY) -> None:
        super().__init__(stream, LoadedGame, capacity)
        self._games = stream

    async def events(self, game_id: str) -> list[Any]:
        """Every event of the game's history, read from its stream (this cache holds states,
        not events): for the rare reader that needs the hands themselves."""
        return [
            event for stored in await self._games.read(game_id) for event in stored.commit.events
        ]
