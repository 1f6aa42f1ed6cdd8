"""Leagues in memory, folded from their commits and caught up from the stream on demand, as
:mod:`services.runtime.game_cache` keeps games: the engine decides against these states
(optimistic concurrency catches a stale one) and the gateway reads leagues from them.
"""

from __future__ import annotations

import asyncio
from collections import OrderedDict
from dataclasses import dataclass, field

from contracts.wire import GENESIS
from domain.league import League, evolve
from services.engine.league_stream import LeagueStream, StoredLeagueCommit
from services.runtime.game_cache import Answered


@dataclass
class LoadedLeague:
    """A league as a process holds it: its state, and where its history ends."""

    league_id: str
    state: League | None = None
    sequence: int = 0
    digest: str = GENESIS
    answered: dict[str, Answered] = field(default_factory=dict)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)

    @property
    def version(self) -> int:
        return self.state.version if self.state is not None else 0

    def apply(self, stored: StoredLeagueCommit) -> None:
        commit = stored.commit
        state = self.state
        for event in commit.events:
            state = evolve(state, event)
        self.state = state
        self.sequence = stored.sequence
        self.digest = stored.digest
        self.answered[commit.command_id] = Answered(stored.sequence, commit.request)


class LeagueCache:
    """Leagues in memory, least recently used first out; a cold league is rebuilt by replay."""

    def __init__(self, stream: LeagueStream, capacity: int = 200) -> None:
        self._stream = stream
        self._capacity = capacity
        self._leagues: OrderedDict[str, LoadedLeague] = OrderedDict()

    async def get(self, league_id: str) -> LoadedLeague:
        """The league, loaded by replay if it is not in memory (not caught up otherwise)."""
        league = self._leagues.get(league_id)
        if league is None:
            league = LoadedLeague(league_id)
            self._leagues[league_id] = league
            while len(self._leagues) > self._capacity:
                self._leagues.popitem(last=False)
            async with league.lock:
                await self.catch_up(league)
        else:
            self._leagues.move_to_end(league_id)
        return league

    async def catch_up(self, league: LoadedLeague) -> None:
        """Apply the commits other processes appended since ``league.sequence``."""
        for stored in await self._stream.read(league.league_id, after=league.sequence):
            league.apply(stored)

    def forget(self, league_id: str) -> None:
        self._leagues.pop(league_id, None)

    async def latest(self, league_id: str) -> LoadedLeague:
        """The league caught up with everything appended so far (for readers)."""
        league = await self.get(league_id)
        async with league.lock:
            await self.catch_up(league)
        return league
