"""Games in memory, folded from their commits and caught up from the stream on demand.

The engine decides against these states (optimistic concurrency catches a stale one); the
gateway renders views from them. A cold game is rebuilt by replaying its subject.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field

from contracts.wire import GENESIS
from domain.game import evolve
from domain.state import Game
from services.runtime.game_stream import GameStream, StoredCommit


@dataclass(frozen=True, slots=True)
class Answered:
    """Where a command's first answer is, and which request body got it."""

    sequence: int
    request: str


@dataclass
class LoadedGame:
    """A game as the engine holds it: its state, and where its history ends."""

    game_id: str
    state: Game | None = None
    sequence: int = 0
    digest: str = GENESIS
    answered: dict[str, Answered] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def version(self) -> int:
        return self.state.version if self.state is not None else 0

    def apply(self, stored: StoredCommit) -> None:
        commit = stored.commit
        state = self.state
        for event in commit.events:
            state = evolve(state, event)
        self.state = state
        self.sequence = stored.sequence
        self.digest = stored.digest
        self.answered[commit.command_id] = Answered(stored.sequence, commit.request)


class GameCache:
    """Games in memory, least recently used first out; a cold game is rebuilt by replay."""

    def __init__(self, stream: GameStream, capacity: int = 2000) -> None:
        self._stream = stream
        self._capacity = capacity
        self._games: OrderedDict[str, LoadedGame] = OrderedDict()

    async def get(self, game_id: str) -> LoadedGame:
        """The game, loaded by replay if it is not in memory (not caught up otherwise)."""
        game = self._games.get(game_id)
        if game is None:
            game = LoadedGame(game_id)
            self._games[game_id] = game
            while len(self._games) > self._capacity:
                self._games.popitem(last=False)
            async with game.lock:
                await self.catch_up(game)
        else:
            self._games.move_to_end(game_id)
        return game

    async def catch_up(self, game: LoadedGame) -> None:
        """Apply the commits other engines appended since ``game.sequence``."""
        for stored in await self._stream.read(game.game_id, after=game.sequence):
            game.apply(stored)

    def forget(self, game_id: str) -> None:
        self._games.pop(game_id, None)

    async def latest(self, game_id: str) -> LoadedGame:
        """The game caught up with everything appended so far (for readers)."""
        game = await self.get(game_id)
        async with game.lock:
            await self.catch_up(game)
        return game
