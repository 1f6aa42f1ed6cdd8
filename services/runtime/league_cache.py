"""Leagues in memory (see :mod:`services.runtime.aggregate_cache`), as games are kept."""

from __future__ import annotations

from typing import Any

from contracts.wire import LeagueCommit
from domain.league import League, evolve
from services.runtime.aggregate_cache import AggregateCache, Loaded
from services.runtime.league_stream import LeagueStore


class LoadedLeague(Loaded[League, LeagueCommit]):
    """A league as a process holds it."""

    @staticmethod
    def fold(state: League | None, event: Any) -> League:
        return evolve(state, event)

    @property
    def league_id(self) -> str:
        return self.key


class LeagueCache(AggregateCache[LoadedLeague]):
    """Leagues in memory; a cold league is rebuilt by replaying its subject."""

    def __init__(self, stream: LeagueStore, capacity: int = 200) -> None:
        super().__init__(stream, LoadedLeague, capacity)
